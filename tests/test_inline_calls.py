"""Inlined bodies kept as functions (``middleend/passes/inlining.py``): a deep chain of
inlined stages, whose substituted expression would grow exponentially, lowers to one C
function per large body and computes what numpy computes, under several schedules; small
inlined bodies are still substituted; Halide's inlined pyramids (interpolate, local
Laplacian) deeper than substitution could lower give Halide's values, also where they read
a level computed at a loop (its buffer per iteration passed to the functions)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, halide_realize

import middleend as me
from frontends.halide import apps, compile_pipeline
from middleend.driver.lowering import DEFAULT_MAX_OPS, lower
from middleend.passes import inlining

N = 37
STAGES = 7


def chain(schedule: Callable[[list[me.Computation]], None], stages: int = STAGES,
          computed: tuple[int, ...] = ()) -> me.Function:
    """s0 = inp + 1, then ``stages`` 3-tap means with the edge repeated (clamped reads),
    each inlined but the last and those in ``computed``; ``schedule`` then applies."""
    with me.Function("chain") as f:
        i = me.Var("i", 0, N)
        inp = me.Input("inp", [N], me.float32)
        comps = [me.Computation("s0", [i], inp[i] + 1.0)]
        for k in range(1, stages + 1):
            p = comps[-1]
            comps.append(me.Computation(
                f"s{k}", [i], (p[me.clamp(i - 1, 0, N - 1)] + p[i]
                               + p[me.clamp(i + 1, 0, N - 1)]) / 3.0))
        for k, s in enumerate(comps[:-1]):
            if k not in computed:
                s.inline()
        schedule(comps)
    return f


def chain_ref(a: np.ndarray, stages: int = STAGES) -> np.ndarray:
    s = a + np.float32(1)
    idx = np.arange(N)
    lo, hi = np.clip(idx - 1, 0, N - 1), np.clip(idx + 1, 0, N - 1)
    for _ in range(stages):
        s = (s[lo] + s + s[hi]) / np.float32(3)
    return s


def _as_is(comps: list[me.Computation]) -> None:
    pass


def _vectorized(comps: list[me.Computation]) -> None:
    comps[-1].vectorize("i", 8)


def _parallel(comps: list[me.Computation]) -> None:
    comps[-1].split("i", 8, "i0", "i1")
    comps[-1].parallelize("i0")


def _computed_at(comps: list[me.Computation]) -> None:
    comps[-1].split("i", 8, "i0", "i1")
    comps[1].compute_at(comps[-1], "i0")


@pytest.mark.parametrize(("schedule", "computed", "called"), [
    (_as_is, (), {"s4"}),  # s5 and s6 are small again (calls of s4)
    (_vectorized, (), {"s4"}),
    (_parallel, (), {"s4"}),
    (_as_is, (5,), {"s4"}),  # s4 inlined into a computed stage
    (_as_is, (1,), {"s6"}),  # s6 reads a computed stage's buffer
])
def test_deep_inlined_chain_is_functions_and_equals_numpy(
        schedule: Callable[[list[me.Computation]], None], computed: tuple[int, ...],
        called: set[str]) -> None:
    f = chain(schedule, computed=computed)
    assert {g.name for g in f.lower().program.functions} == called
    a = np.random.default_rng(1).random(N, dtype=np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)[f"s{STAGES}"], chain_ref(a), rtol=1e-6)


def _computed_at_local(comps: list[me.Computation]) -> None:
    _computed_at(comps)
    comps[1].allocate_at(comps[-1], "i0")


def _computed_at_local_parallel(comps: list[me.Computation]) -> None:
    _computed_at_local(comps)
    comps[-1].parallelize("i0")


@pytest.mark.parametrize("schedule", [_as_is, _computed_at, _computed_at_local,
                                      _computed_at_local_parallel])
def test_a_stage_computed_at_a_loop_is_read_by_functions(
        monkeypatch: pytest.MonkeyPatch, schedule: Callable[[list[me.Computation]], None]
        ) -> None:
    """A stage computed inside the output's loops, in its whole buffer or in a buffer per
    iteration (allocate_at: the calls pass its base and offsets), is read by the functions
    (the limit lowered here so that a short chain passes it), computed per iteration for
    what the calls read there (their footprints), and gives numpy's values."""
    monkeypatch.setattr(inlining, "EXPANSION_LIMIT", 40)
    f = chain(schedule, stages=5, computed=(1,))
    low = f.lower()
    assert {g.name for g in low.program.functions} == {"s3"}
    local = {b.name for b in low.program.buffers if b.local}
    assert {b for g in low.program.functions for b in g.locals} == local
    a = np.random.default_rng(5).random(N, dtype=np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["s5"], chain_ref(a, 5), rtol=1e-6)


def test_functions_read_params() -> None:
    """Sizes and a value given as params at call time: the functions take the params."""
    with me.Function("pchain") as f:
        n, g = me.Param("N"), me.Param("g")
        i = me.Var("i", 0, n)
        inp = me.Input("inp", [n], me.float32)
        comps = [me.Computation("s0", [i], inp[i] + me.cast(me.float32, g))]
        for k in range(1, STAGES + 1):
            p = comps[-1]
            comps.append(me.Computation(f"s{k}", [i], (
                p[me.clamp(i - 1, 0, n - 1)] + p[i] + p[me.clamp(i + 1, 0, n - 1)]) / 3.0))
        for s in comps[:-1]:
            s.inline()
    assert f.lower().program.functions
    a = np.random.default_rng(6).random(N, dtype=np.float32)
    out = f.compile()(inp=a, N=N, g=1)[f"s{STAGES}"]
    np.testing.assert_allclose(out, chain_ref(a), rtol=1e-6)


def test_fusing_a_stage_read_through_calls_with_its_reader_is_refused() -> None:
    """s7 reads s1 through s6's function (at i - 6 .. i + 6): fused at ``i``, s7 would read
    values of s1 not yet computed. The read through calls is of every instance of s1."""
    def fused(comps: list[me.Computation]) -> None:
        comps[-1].after(comps[1], "i")

    f = chain(fused, computed=(1,))
    with pytest.raises(me.ScheduleError, match=r"'s7' would not read the value of 's1'"):
        f.lower()


def test_small_inlined_bodies_are_substituted() -> None:
    """Two stages inlined: far under the limit, no function (the code is unchanged)."""
    f = chain(_as_is, stages=2)
    assert f.lower().program.functions == ()
    a = np.random.default_rng(2).random(N, dtype=np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["s2"], chain_ref(a, 2), rtol=1e-6)


@pytest.fixture
def _quiet() -> Iterator[None]:
    """Halide warns that Python float literals are float32 (the apps mean them so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.usefixtures("_quiet")
@pytest.mark.parametrize(("name", "levels"), [("interpolate", 4), ("local_laplacian", 3)])
def test_deep_inlined_pyramids_equal_halide(name: str, levels: int) -> None:
    """No schedule (every Func inlined) at depths that substitution could not lower
    (122 s and 131 s to lower before): Halide's values, its every-stage-at-root pipeline
    being the reference (its own inlined JIT takes minutes here), to the last bit."""
    app = apps.APPS[name](6, 8, levels=levels, schedule="inline")
    k = compile_pipeline(app.output, fp_contract=False)
    ours = k.realize(app.sizes, **app.by_name())
    ref_app = apps.APPS[name](6, 8, levels=levels, schedule="root")
    (ref,) = halide_realize([ref_app.output], ref_app.sizes, ref_app.inputs, STRICT)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.usefixtures("_quiet")
def test_inlined_pyramid_reading_a_computed_stage_equals_halide() -> None:
    """Interpolate with its first level computed at root (stored by store_in, shifted) and
    the rest inlined: the functions read that stage's buffer; Halide's values."""
    def build(all_root: bool) -> tuple[hl.ImageParam, apps.Pyramid]:
        inp = hl.ImageParam(hl.Float(32), 3, "inp")
        p = apps.interpolate_funcs(inp, 3)
        for f in ([*p.down, *p.downx[1:], *p.interp[1:], *p.upx[:-1], *p.up[:-1]]
                  if all_root else [p.down[0]]):
            f.compute_root()
        return inp, p

    img = np.random.default_rng(4).random((4, 6, 8), dtype=np.float32)
    img[3] = 0.1 + 0.9 * img[3]
    inp, p = build(False)
    built = compile_pipeline(p.output).translate([8, 6, 3], inp=img)
    assert lower(built.fn, outputs=built.outputs).program.functions
    ours = compile_pipeline(p.output, fp_contract=False).realize([8, 6, 3], inp=img)
    ref_inp, ref = build(True)
    (want,) = halide_realize([ref.output], [8, 6, 3], [(ref_inp, img)], STRICT)
    np.testing.assert_array_equal(ours, want)


@pytest.mark.usefixtures("_quiet")
@pytest.mark.parametrize(("name", "levels"), [("interpolate", 10), ("local_laplacian", 8)])
def test_halide_apps_deepest_pyramids_lower_inlined_within_a_tenth_of_the_isl_bound(
        name: str, levels: int) -> None:
    """Halide's own depths, inlined: the program grows with the stages, not the paths."""
    app = apps.APPS[name](schedule="inline", levels=levels)
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    low = lower(built.fn, outputs=built.outputs, max_isl_ops=DEFAULT_MAX_OPS // 10)
    assert len(low.program.functions) >= levels // 2


@pytest.mark.usefixtures("_quiet")
def test_local_laplacian_inlined_reading_its_input_computed_per_row_equals_halide() -> None:
    """``apps.INLINE_AT`` at 3 levels: local Laplacian's float input computed per output
    row, read by the inlined levels' functions through clamped, strided and
    data-dependent indices (the footprints bound them all); Halide's values (its
    every-stage-at-root pipeline)."""
    name = "local_laplacian"
    app = apps.APPS[name](6, 8, levels=3, schedule=apps.INLINE_AT)
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    functions = lower(built.fn, outputs=built.outputs).program.functions
    assert functions and any(f.locals for f in functions)
    ours = compile_pipeline(app.output, fp_contract=False).realize(app.sizes, **app.by_name())
    ref_app = apps.APPS[name](6, 8, levels=3, schedule="root")
    (ref,) = halide_realize([ref_app.output], ref_app.sizes, ref_app.inputs, STRICT)
    np.testing.assert_array_equal(ours, ref)


def _gpu(comps: list[me.Computation]) -> None:
    comps[-1].split("i", 8, "i0", "i1")
    comps[-1].gpu("i0", "i1")


def test_targets_without_functions_get_the_bodies_substituted() -> None:
    """The gpu target (OpenCL, on PoCL here) prints no functions: its kernel gets the
    bodies substituted back (``middleend/ir/fncalls.py``), the same values."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    f = chain(_gpu)
    assert f.lower().program.functions
    a = np.random.default_rng(3).random(N, dtype=np.float32)
    out = f.compile(target="gpu", dialect="opencl")(inp=a)[f"s{STAGES}"]
    np.testing.assert_allclose(out, chain_ref(a), rtol=1e-6)


def _at_row(p: apps.Pyramid) -> None:
    p.down[0].compute_at(p.output, p.output.args()[1])


def _at_row_parallel(p: apps.Pyramid) -> None:
    _at_row(p)
    p.output.parallel(p.output.args()[1])


def _at_tile(p: apps.Pyramid) -> None:
    x, y, _ = p.output.args()
    xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")
    p.output.tile(x, y, xo, yo, xi, yi, 8, 4)
    p.down[0].compute_at(p.output, xo)


@pytest.mark.usefixtures("_quiet")
@pytest.mark.parametrize("schedule", [_at_row, _at_row_parallel, _at_tile])
def test_inlined_pyramid_reading_a_stage_computed_at_a_loop_equals_halide(
        monkeypatch: pytest.MonkeyPatch, schedule: Callable[[apps.Pyramid], None]) -> None:
    """Interpolate with its first level computed at a loop of the output (a buffer per
    iteration) and the rest inlined: the functions get that buffer from their callers
    and the level is computed per iteration for what their footprints read (substituted,
    3 levels passed the ISL bound; 3 levels here, the limit lowered so that they are
    functions); Halide's values."""
    monkeypatch.setattr(inlining, "EXPANSION_LIMIT", 60)

    def build(all_root: bool) -> tuple[hl.ImageParam, apps.Pyramid]:
        inp = hl.ImageParam(hl.Float(32), 3, "inp")
        p = apps.interpolate_funcs(inp, 3)
        if all_root:
            for f in [*p.down, *p.downx[1:], *p.interp[1:], *p.upx[:-1], *p.up[:-1]]:
                f.compute_root()
        else:
            schedule(p)
        return inp, p

    img = np.random.default_rng(7).random((4, 6, 8), dtype=np.float32)
    img[3] = 0.1 + 0.9 * img[3]
    inp, p = build(False)
    built = compile_pipeline(p.output).translate([8, 6, 3], inp=img)
    functions = lower(built.fn, outputs=built.outputs).program.functions
    assert functions and all(f.locals for f in functions)
    ours = compile_pipeline(p.output, fp_contract=False).realize([8, 6, 3], inp=img)
    ref_inp, ref = build(True)
    (want,) = halide_realize([ref.output], [8, 6, 3], [(ref_inp, img)], STRICT)
    np.testing.assert_array_equal(ours, want)


def test_targets_without_functions_get_local_buffers_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A function reading a stage computed per GPU block (its buffer allocated there):
    substituted back, its reads are the statement's reads of that buffer, at its
    offsets; the same values."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    monkeypatch.setattr(inlining, "EXPANSION_LIMIT", 40)

    def schedule(comps: list[me.Computation]) -> None:
        _computed_at_local(comps)
        comps[-1].gpu("i0", "i1")
        me.barrier_at(comps[-1], "i0")

    f = chain(schedule, stages=5, computed=(1,))
    assert [g.locals for g in f.lower().program.functions] == [("s1",)]
    a = np.random.default_rng(8).random(N, dtype=np.float32)
    out = f.compile(target="gpu", dialect="opencl")(inp=a)["s5"]
    np.testing.assert_allclose(out, chain_ref(a, 5), rtol=1e-6)
