"""The front-ends' ``schedule="auto"``: Julia ``@acc`` kernels (``compile_source``) against
the numpy references of their PolyBench definitions, Halide pipelines without a schedule
(``compile_pipeline``) against Halide's own output; each at sizes that make the scheduler
choose differently (small ones, and larger odd ones where tiles and their tails appear).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from halide_util import STRICT, assert_same, halide_realize

from frontends.halide import UnsupportedHalideFeature, apps, compile_pipeline
from frontends.halide.paper import ALL
from frontends.julia import JuliaFrontendError, compile_source
from frontends.julia.paper import KERNELS, source
from middleend.ir import commands as cmd

RTOL = ATOL = 1e-9


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """Halide warns that Python float literals are float32 (the apps mean them so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _medium(sizes: dict[str, int]) -> dict[str, int]:
    """Odd sizes a few times the small ones: past the tiles, with tails."""
    return {k: 4 * v + 3 if k != "t" else v for k, v in sizes.items()}


def _checked(name: str, sizes: dict[str, int], seed: int, **options: Any
             ) -> tuple[Any, tuple[Any, ...]]:
    """Kernel ``name`` compiled with ``options``, run on copies of arguments made at
    ``sizes``, its results checked against numpy's; the kernel and the arguments."""
    kd = KERNELS[name]
    args = kd.make(sizes, np.random.default_rng(seed))
    k = compile_source(source(), name, **options)
    x = tuple(v.copy(order="K") if isinstance(v, np.ndarray) else v for v in args)
    k(*x)
    for pos, ref in kd.reference(args).items():
        np.testing.assert_allclose(x[pos], ref, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{name} argument {pos}")
    return k, args


@pytest.mark.parametrize("size", ["small", "medium"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_julia_kernels_auto_scheduled(name: str, size: str) -> None:
    small = KERNELS[name].small
    k, args = _checked(name, small if size == "small" else _medium(small), 0,
                       schedule="auto")
    assert k.auto_schedule(*args).startswith(("f.computation(", "f.buffer("))


def test_covariance_triangle_in_aligned_tiles_reads_panels() -> None:
    """Covariance's product runs over a triangle (``j >= i``): its register tiles come with
    the columns in blocks as wide as the tile's rows, so that the diagonal crosses whole
    blocks and the transposed copy of ``data`` is read in panels of those rows; numpy's
    values at odd sizes past the tiles."""
    k, args = _checked("covariance!", _medium(KERNELS["covariance!"].small), 2,
                       schedule="auto")
    text = k.auto_schedule(*args)
    panel = re.search(r"copy_at\(f\.computation\(\"C\"\).*panel=(\d+)", text)
    block = re.search(r"computation\(\"C\"\)\.split\('j', (\d+), 'j_b', 'j'\)", text)
    assert panel and block and panel.group(1) == block.group(1), text


def test_initializers_and_readers_move_into_the_sums_loops() -> None:
    """At the benchmark's sizes, doitgen's zeroing of its (expanded) sum is computed in
    the sum's loops and its copy-out ordered after the sum inside them, as are 2mm's
    zeroing and scaling of ``tmp`` (middleend/autosched/around.py): numpy's values, and
    the placements in the replayable text."""
    for name, zero, red, reader in (("doitgen!", "Z", "U", "W"), ("mm2!", "S1", "T", "SC")):
        k, args = _checked(name, KERNELS[name].large, 4, schedule="auto")
        text = k.auto_schedule(*args)
        assert re.search(rf'computation\("{zero}"\)\.compute_at\(f\.computation\("{red}"\), '
                         r"'\w+'\)", text), text
        assert re.search(rf'computation\("{reader}"\)\.after\(f\.computation\("{red}"\), '
                         r"'\w+'\)", text), text


@pytest.mark.fpga
@pytest.mark.parametrize("name", ["bicg!", "jacobi1d!", "doitgen!"])
def test_julia_kernels_auto_scheduled_for_fpga(name: str) -> None:
    """The same kernels pipelined for the fpga target, C-simulated."""
    k, args = _checked(name, KERNELS[name].small, 1, target="fpga", schedule="auto")
    assert ".pipeline(" in k.auto_schedule(*args)


@pytest.mark.parametrize("name", list(KERNELS))
def test_julia_kernels_auto_scheduled_for_gpu(name: str) -> None:
    """Every kernel mapped to blocks and threads and run (OpenCL on PoCL here). Julia's
    arrays are updated in place: the device reads what the caller passed (refused, for
    every kernel, until the copy to the device of an in/out buffer carried it)."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    k, args = _checked(name, KERNELS[name].small, 2, target="gpu", schedule="auto")
    assert ".gpu" in k.auto_schedule(*args) or ".tile_gpu(" in k.auto_schedule(*args)


def test_separated_tiles_where_isl_unrolling_them_failed(caplog: pytest.LogCaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """Covariance at its benchmark size with four statements' auto-chosen loops (the
    mean and the centring unrolled by 8 columns, the scaling in 256 x 4 tiles, the
    product as a register tile reading a packed copy). ISL's AST generation of their
    separated full/partial tiles failed on its own assumption ("basic sets in scc are
    assumed to be disjoint") while ISL also unrolled the loops; the unrolled loops are now
    expanded after it (passes/unrolling.py), and every statement is generated separated,
    the register tile's sums in vector variables, with numpy's result."""
    from frontends.julia.api import _arguments, translate
    from middleend.ir import commands as cmd

    kd = KERNELS["covariance!"]
    args = kd.make(kd.large, np.random.default_rng(0))
    k = compile_source(source(), "covariance!", schedule=False)
    spec = k.spec_of(args)
    built = translate(k.function, spec, False, k.target)
    fn = built.fn
    orders = [c for c in fn.commands.items if isinstance(c, cmd.After)]
    fn.commands.items = [c for c in fn.commands.items if not isinstance(c, cmd.After)]
    fn.commands.items += [cmd.After(c.comp, c.other, cmd.ROOT) for c in orders]
    for s in ("MEAN", "S4"):
        fn.commands.items += [cmd.Shift(s, "j", -1), cmd.Shift(s, "i", -1),
                              cmd.Split(s, "j", 8, "j_o", "j_i"),
                              cmd.Interchange(s, "j_i", "i"),
                              cmd.Unroll(s, "j_i", None, "j_i_uo", "j_i_ui"),
                              cmd.Parallelize(s, "j_o")]
    fn.commands.items += [cmd.Shift("S7", "i", -1), cmd.Shift("S7", "j", -1),
                          cmd.Split("S7", "i", 256, "i_o", "i_i"),
                          cmd.Split("S7", "j", 4, "j_o", "j_i"),
                          cmd.Interchange("S7", "i_o", "j_o"),
                          cmd.Interchange("S7", "i_i", "i_o"),
                          cmd.Unroll("S7", "j_i", None, "j_i_uo", "j_i_ui"),
                          cmd.Parallelize("S7", "j_o")]
    fn.commands.items += [cmd.CopyAt("C", cmd.ROOT, "data", "data_p", "copy_data_p", (1, 0)),
                          cmd.Shift("C", "i", -1), cmd.Shift("C", "j", -1),
                          cmd.Shift("C", "k", -1), cmd.Split("C", "i", 8, "i_o", "i_i"),
                          cmd.Split("C", "j", 8, "j_o", "j_i"),
                          cmd.Interchange("C", "i_i", "j_o"),
                          cmd.Interchange("C", "i_i", "j_i"),
                          cmd.Interchange("C", "i_i", "k"),
                          cmd.Interchange("C", "j_i", "k"),
                          cmd.Unroll("C", "j_i", None, "j_i_uo", "j_i_ui"),
                          cmd.Parallelize("C", "j_o")]
    kw = _arguments(built, spec, args, copy=True)
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path))  # lowered here, not cached
    with caplog.at_level("INFO", logger="middleend.lower"):
        kern = fn.compile(outputs=built.outputs)
    kern(**kw)  # the arrays are updated in place
    said = [r.getMessage() for r in caplog.records if "separation" in r.getMessage()
            or "could not generate" in r.getMessage()]
    assert not said, said
    assert "a register tile, its sums in vector variables" in kern.source
    got = {pos: kw[built.buffer_of_arg[pos]].T for pos in kd.reference(args)}
    for pos, ref in kd.reference(args).items():
        np.testing.assert_allclose(got[pos], ref, rtol=RTOL, atol=ATOL,
                                   err_msg=f"covariance argument {pos}")


def test_julia_schedule_mistake() -> None:
    with pytest.raises(JuliaFrontendError, match="schedule must be True, False, 'auto' or"):
        compile_source(source(), "bicg!", schedule="fast")


def test_julia_tuned_on_the_first_call() -> None:
    """schedule="tune": the first call's arguments (copies) time the candidates; the call
    itself then computes what numpy does, and the caller's arrays were not touched
    before it."""
    k, args = _checked("atax!", _medium(KERNELS["atax!"].small), 1, schedule="tune")
    assert k.auto_schedule(*args).startswith("f.computation(")


@pytest.mark.parametrize("shape", [(37, 53), (130, 270)], ids=["37x53", "130x270"])
@pytest.mark.parametrize("name", sorted(ALL))
def test_halide_paper_pipelines_auto_scheduled(name: str, shape: tuple[int, int]) -> None:
    b = ALL[name](*shape, schedule="default")
    refs = b.halide_realize()
    got: list[np.ndarray] = []
    for funcs, sizes in b.groups:
        k = compile_pipeline(funcs, schedule="auto")
        r = k.realize(sizes, **b.inputs)
        got += list(r) if isinstance(r, list | tuple) else [r]
    assert len(got) == len(refs)
    for g, r in zip(got, refs, strict=True):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize(("name", "kw"), [
    ("bilateral_grid", {}),
    ("interpolate", {"levels": 3}),
    ("stencil_chain", {"stages": 4}),
])
def test_halide_apps_auto_scheduled(name: str, kw: dict[str, int]) -> None:
    make = {"bilateral_grid": apps.bilateral_grid, "interpolate": apps.interpolate,
            "stencil_chain": apps.stencil_chain}[name]
    app = make(48, 72, schedule="inline", **kw)
    k = compile_pipeline(app.output, schedule="auto")
    # Halide's reference from the same app with every stage at the root: the same values
    # (test_halide_apps.py), where its JIT of the inlined pyramid takes a minute
    ref = make(48, 72, schedule="root", **kw)
    assert_same(k.realize(app.sizes, **app.by_name()),
                halide_realize([ref.output], ref.sizes, ref.inputs), atol=1e-4)


def test_pyramid_stages_inlined_again_and_downsampling_vectorized() -> None:
    """Interpolate's placement: each stage is first priced with the stages after it still
    inlined, which puts them all at the root; priced again once the others are placed, the
    premultiplied input and the downsamplings' x passes are inlined back into their
    readers, and the downsampling that then reads the input at 2 x - 1, 2 x, 2 x + 1 runs
    in vectors (two dense loads and a shuffle per vector); the values are Halide's."""
    app = apps.interpolate(200, 320, levels=3, schedule="inline")
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    text = str(built.fn.auto_schedule(outputs=built.outputs))
    # Halide makes Func names unique within a process: down0, or down0_2 after other tests
    for p in ("down0", "downx1"):
        assert re.search(rf"placement: {p}(_\d+)* inlined again", text), text
    assert any(isinstance(c, cmd.Vectorize) and re.fullmatch(r"down1(_\d+)*", c.comp)
               for c in built.fn.commands.items), text
    ref = apps.interpolate(200, 320, levels=3, schedule="root")
    k = built.fn.compile(outputs=built.outputs)
    got = k(**{n: np.ascontiguousarray(v) for n, v in app.by_name().items()})
    assert_same(next(iter(got.values())) if isinstance(got, dict) else got,
                halide_realize([ref.output], ref.sizes, ref.inputs), atol=1e-4)


def test_local_laplacian_pyramids_materialized() -> None:
    """The local Laplacian's gray pyramid is priced, stage by stage, while everything after
    it is still inlined into the output (1e12 cycles at full size): the margin a placement
    must win by is taken on what the placement changes, not on that whole, or no stage of
    it would be materialized (they all stayed inlined: 126 against 92 ms at 1760 x 1056;
    61 with the remapping table at the root).
    uint16 values within 1 of Halide's strict build (its ``exp`` is its own polynomial)."""
    app = apps.local_laplacian(48, 72, levels=3, schedule="inline")
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    text = str(built.fn.auto_schedule(outputs=built.outputs))
    assert re.search(r"placement: inGPyramid1(_\d+)* computed at the root", text), text
    # the remapping curve, an exp per entry read at a data-dependent index: a table at the
    # root (its exp priced as the scalar library call it is, not as one vector operation)
    assert re.search(r"placement: remap(_\d+)* computed at the root", text), text
    assert not re.search(r"placement: remap(_\d+)* inlined again", text), text
    # the collapsed pyramid, a single addition of two inlined stages that each of the
    # three color channels reads at its x, y: computed once per output row, not per
    # channel (at 1760 x 1056: 49 -> 34 ms; Halide's expert schedule 32)
    assert re.search(r"placement: outGPyramid0(_\d+)* computed per iteration of "
                     r"local_laplacian(_\d+)*'s loop y", text), text
    ours = compile_pipeline(app.output, schedule="auto").realize(app.sizes, **app.by_name())
    ref = apps.local_laplacian(48, 72, levels=3, schedule="root")
    (want,) = halide_realize([ref.output], ref.sizes, ref.inputs, STRICT)
    diff = np.abs(ours.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01, (diff.max(), (diff > 0).sum())


def test_halide_scheduled_pipeline_refused() -> None:
    """A pipeline with its own schedule would lose it: refused, naming the Func."""
    b = ALL["blurxy"](40, 60, schedule="expert")
    with pytest.raises(UnsupportedHalideFeature, match="schedule='auto'") as e:
        compile_pipeline(b.groups[0][0], schedule="auto")
    assert "by" in str(e.value) or "bx" in str(e.value)
    with pytest.raises(TypeError, match="schedule must be None, 'auto' or 'tune'"):
        compile_pipeline(ALL["blurxy"](40, 60).groups[0][0], schedule="expert")
    with pytest.raises(UnsupportedHalideFeature, match="schedule='tune'"):
        compile_pipeline(b.groups[0][0], schedule="tune")


def test_halide_tuned_on_the_first_call(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    """``schedule="tune"``: the first realize builds and times the model's best plans on
    its inputs; the result is Halide's, the choice is printable, and the same pipeline
    compiled again is tuned from the store (no candidate built: nothing on stderr)."""
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path))
    b = ALL["blurxy"](64, 96, schedule="default")
    (funcs, sizes), = b.groups
    k = compile_pipeline(funcs, schedule="tune")
    got = k.realize(sizes, **b.inputs)
    (ref,) = b.halide_realize()
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-6)
    chosen = k.auto_schedule(sizes, **b.inputs)
    assert 'f.computation("by' in chosen and ".vectorize(" in chosen, chosen
    again = compile_pipeline(funcs, schedule="tune")
    np.testing.assert_allclose(np.asarray(again.realize(sizes, **b.inputs)), ref,
                               rtol=1e-5, atol=1e-6)
    assert again.auto_schedule(sizes, **b.inputs) == chosen
