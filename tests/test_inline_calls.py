"""Inlined bodies kept as functions (``middleend/passes/inlining.py``): a deep chain of
inlined stages, whose substituted expression would grow exponentially, lowers to one C
function per large body and computes what numpy computes, under several schedules; small
inlined bodies are still substituted; Halide's inlined pyramids (interpolate, local
Laplacian) deeper than substitution could lower give Halide's values."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from halide_util import STRICT, halide_realize

import middleend as me
from frontends.halide import apps, compile_pipeline
from middleend.driver.lowering import DEFAULT_MAX_OPS, lower

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


@pytest.mark.parametrize(("schedule", "computed", "called"), [
    (_as_is, (), {"s4"}),  # s5 and s6 are small again (calls of s4)
    (_vectorized, (), {"s4"}),
    (_parallel, (), {"s4"}),
    (_as_is, (5,), {"s4"}),  # s4 inlined into a computed stage
    # as large, but reading a computed stage: substituted (a function reads only inputs)
    (_as_is, (1,), set()),
])
def test_deep_inlined_chain_is_functions_and_equals_numpy(
        schedule: Callable[[list[me.Computation]], None], computed: tuple[int, ...],
        called: set[str]) -> None:
    f = chain(schedule, computed=computed)
    assert {g.name for g in f.lower().program.functions} == called
    a = np.random.default_rng(1).random(N, dtype=np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)[f"s{STAGES}"], chain_ref(a), rtol=1e-6)


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
@pytest.mark.parametrize(("name", "levels"), [("interpolate", 5), ("local_laplacian", 4)])
def test_deep_inlined_pyramids_equal_halide(name: str, levels: int) -> None:
    """No schedule (every Func inlined) at depths that substitution could not lower
    (interpolate 4 levels took 167 s): Halide's values, its every-stage-at-root pipeline
    being the reference (its own inlined JIT takes minutes here), to the last bit."""
    app = apps.APPS[name](6, 8, levels=levels, schedule="inline")
    k = compile_pipeline(app.output, fp_contract=False)
    ours = k.realize(app.sizes, **app.by_name())
    ref_app = apps.APPS[name](6, 8, levels=levels, schedule="root")
    (ref,) = halide_realize([ref_app.output], ref_app.sizes, ref_app.inputs, STRICT)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.usefixtures("_quiet")
@pytest.mark.parametrize(("name", "levels"), [("interpolate", 10), ("local_laplacian", 8)])
def test_halide_apps_deepest_pyramids_lower_inlined_within_a_tenth_of_the_isl_bound(
        name: str, levels: int) -> None:
    """Halide's own depths, inlined: the program grows with the stages, not the paths."""
    app = apps.APPS[name](schedule="inline", levels=levels)
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    low = lower(built.fn, outputs=built.outputs, max_isl_ops=DEFAULT_MAX_OPS // 10)
    assert len(low.program.functions) >= levels // 2


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
