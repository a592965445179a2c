"""Stages Halide runs on the host, in pipelines compiled for the gpu target, against
Halide's own realize on the CPU: the unscheduled pure definition of a histogram whose
update is atomic on the GPU (int and float bins, 1-D and 2-D), a compute_root Func with no
GPU schedule, a serial update, 0-d Funcs with ``gpu_single_thread()`` (a sum, an argmax's
Tuple) or left unscheduled. Halide runs those stages on the host and copies; the front-end
gives each a device mapping of its own (``frontends/halide/host_stages.py``), so the values
must be Halide's. A host stage the front-end does not map (parallel on the host) is refused
in one line. Halide needs a GPU to run the GPU schedules, so its reference is the same
algorithm with no schedule."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

import middleend as me
from frontends.halide import compile_pipeline

pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")

Build = Callable[[bool], tuple[list[hl.Func], list[tuple[object, object]]]]


def _gpu_vs_halide(build: Build, sizes: list[int], dialect: str = "opencl") -> None:
    """``build(True)`` scheduled, compiled for the gpu target (OpenCL on PoCL; CUDA built
    by nvcc, and run where there is a GPU), against ``build(False)`` realized by Halide on
    the CPU."""
    outs, inputs = build(True)
    k = compile_pipeline(outs, target="gpu", dialect=dialect)
    args = {p.name(): v for p, v in inputs}
    if dialect == "cuda":
        _, kernel = k.build(sizes, **args)
        assert kernel.library_path.exists() and "__global__ void me_" in kernel.source
        if shutil.which("nvidia-smi") is None:
            return  # compiled, not run
    ours = k.realize(sizes, **args)
    ref_outs, ref_inputs = build(False)
    assert_same(ours, halide_realize(ref_outs, sizes, ref_inputs))


def _rvars() -> tuple[hl.RVar, hl.RVar]:
    return hl.RVar("ro"), hl.RVar("ri")


_DIALECTS = ["opencl", pytest.param("cuda", marks=pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="nvcc is not installed"))]


@pytest.mark.parametrize("dialect", _DIALECTS)
@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("bins", [10, 100])
def test_histogram_with_host_pure_definition(kind: str, bins: int, dialect: str,
                                             rng: np.random.Generator) -> None:
    """The histogram of issue 17: ``h[x] = 0`` unscheduled, the update atomic on the
    GPU."""
    data = rng.integers(0, 1000, 300, dtype=np.int32)
    data[:40] = 7  # many threads update one bin

    def build(scheduled: bool):
        x = hl.Var("x")
        inp = hl.ImageParam(hl.Int(32), 1, "inp")
        r = hl.RDom([(0, 300)], "r")
        t = hl.Int(32) if kind == "int" else hl.Float(32)
        h = hl.Func("h")
        h[x] = hl.cast(t, 0)
        h[inp[r] % bins] += hl.cast(t, 1) if kind == "int" else hl.cast(t, inp[r]) * 0.5
        if scheduled:
            ro, ri = _rvars()
            h.update().atomic().split(r, ro, ri, 16).gpu_blocks(ro).gpu_threads(ri)
        return [h], [(inp, data)]

    _gpu_vs_halide(build, [bins], dialect)


@pytest.mark.parametrize("kind", ["int", "float"])
def test_2d_histogram_with_host_pure_definition(kind: str, rng: np.random.Generator) -> None:
    """A 2-D histogram (a joint histogram of two images' bins) over a 2-D RDom; its pure
    definition is 2-D and on the host in Halide."""
    a = rng.integers(0, 256, (23, 37), dtype=np.uint8)
    b = rng.integers(0, 256, (23, 37), dtype=np.uint8)

    def build(scheduled: bool):
        x, y = hl.Var("x"), hl.Var("y")
        ia = hl.ImageParam(hl.UInt(8), 2, "ia")
        ib = hl.ImageParam(hl.UInt(8), 2, "ib")
        r = hl.RDom([(0, 37), (0, 23)], "r")
        t = hl.Int(32) if kind == "int" else hl.Float(32)
        h = hl.Func("h2")
        h[x, y] = hl.cast(t, 0)
        h[hl.i32(ia[r.x, r.y]) // 32, hl.i32(ib[r.x, r.y]) // 64] += hl.cast(t, 1)
        if scheduled:
            h.update().atomic().gpu_blocks(r.y).gpu_threads(r.x)
        return [h], [(ia, a), (ib, b)]

    _gpu_vs_halide(build, [8, 4])


def test_compute_root_producer_without_gpu_schedule(rng: np.random.Generator) -> None:
    """A compute_root Func with no GPU schedule (2-D) and a serial update, read by a GPU
    output: Halide runs both stages on the host."""
    img = rng.random((19, 33), dtype=np.float32)

    def build(scheduled: bool):
        x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
        a = hl.ImageParam(hl.Float(32), 2, "a")
        r = hl.RDom([(0, 3)], "r")
        g = hl.Func("g")
        g[x, y] = a[x, y] * 2.0
        g[x, y] += a[x, y] * hl.f32(r)  # a serial update over an RDom
        out = hl.Func("out")
        out[x, y] = g[x, y] + g[x, y] * 0.25
        if scheduled:
            g.compute_root()
            out.gpu_tile(x, y, xo, yo, xi, yi, 8, 4)
        return [out], [(a, img)]

    _gpu_vs_halide(build, [33, 19])


@pytest.mark.parametrize("dialect", _DIALECTS)
@pytest.mark.parametrize("schedule", ["single_thread", "unscheduled"])
def test_zero_d_sum(schedule: str, dialect: str, rng: np.random.Generator) -> None:
    """``s[()] = 0; s[()] += inp[r]``: gpu_single_thread() on both stages (it crashed with
    KeyError '__outermost'), or no schedule at all (both stages on the host in Halide)."""
    data = rng.integers(-50, 50, 77, dtype=np.int32)

    def build(scheduled: bool):
        inp = hl.ImageParam(hl.Int(32), 1, "inp")
        r = hl.RDom([(0, 77)], "r")
        s = hl.Func("s")
        s[()] = 3
        s[()] += inp[r]
        if scheduled and schedule == "single_thread":
            s.gpu_single_thread()
            s.update().gpu_single_thread()
        return [s], [(inp, data)]

    _gpu_vs_halide(build, [], dialect)


def test_zero_d_argmax_tuple(rng: np.random.Generator) -> None:
    """An argmax: ``am[()] = (0, a[0])`` then a Tuple update, each stage one GPU thread."""
    data = rng.integers(-1000, 1000, 64, dtype=np.int32)

    def build(scheduled: bool):
        a = hl.ImageParam(hl.Int(32), 1, "a")
        r = hl.RDom([(0, 64)], "r")
        am = hl.Func("am")
        am[()] = (0, a[0])
        better = a[r] > am[()][1]
        am[()] = (hl.select(better, r, am[()][0]), hl.select(better, a[r], am[()][1]))
        if scheduled:
            am.gpu_single_thread()
            am.update().gpu_single_thread()
        return [am], [(a, data)]

    _gpu_vs_halide(build, [])


def test_host_parallel_and_vector_stages(rng: np.random.Generator) -> None:
    """A compute_root Func parallel and vectorized on the host: mapped to the device, its
    parallel and vector loops run serially in each GPU thread."""
    img = rng.integers(-100, 100, (12, 50), dtype=np.int32)

    def build(scheduled: bool):
        x, y, xo, xi = (hl.Var(n) for n in ("x", "y", "xo", "xi"))
        a = hl.ImageParam(hl.Int(32), 2, "a")
        g, out = hl.Func("g"), hl.Func("out")
        g[x, y] = a[x, y] * 3 - y
        out[x, y] = g[x, y] + g[x, 11 - y]
        if scheduled:
            g.compute_root().parallel(y).vectorize(x, 8)
            out.gpu_tile(x, xo, xi, 16)
        return [out], [(a, img)]

    _gpu_vs_halide(build, [50, 12])


def test_host_stage_with_a_func_computed_at_its_loops(rng: np.random.Generator) -> None:
    """A host Func at whose loop another Func is computed: it runs in one GPU thread, its
    loops (and the producer placed in them) as scheduled."""
    data = rng.integers(-9, 9, 60, dtype=np.int32)

    def build(scheduled: bool):
        x, xo, xi = hl.Var("x"), hl.Var("xo"), hl.Var("xi")
        a = hl.ImageParam(hl.Int(32), 1, "a")
        p, g, out = hl.Func("p"), hl.Func("g"), hl.Func("out")
        p[x] = a[x] * 5
        g[x] = p[x] + p[x + 1]
        out[x] = g[x] + g[x + 2]
        if scheduled:
            p.compute_at(g, x)
            g.compute_root()
            out.gpu_tile(x, xo, xi, 16)
        return [out], [(a, data)]

    _gpu_vs_halide(build, [40])


def test_gpu_schedule_on_the_cpu_target_is_refused_in_one_line() -> None:
    """A user mistake: gpu_single_thread() compiled for the cpu target."""
    s = hl.Func("s")
    s[()] = 1
    s.gpu_single_thread()
    k = compile_pipeline(s)
    with pytest.raises(me.TargetError, match=r"^target 'cpu' cannot honour tag 'gpu_"):
        k.realize([])


def test_gpu_single_thread_of_2d_funcs(rng: np.random.Generator) -> None:
    """gpu_single_thread() of a 2-D output and of its compute_root producer (read at an
    offset, so the producer's region does not start where the output's does)."""
    data = rng.integers(-50, 50, (4, 9), dtype=np.int32)

    def build(scheduled: bool):
        x, y = hl.Var("x"), hl.Var("y")
        a = hl.ImageParam(hl.Int(32), 2, "a")
        f, g = hl.Func("f"), hl.Func("g")
        f[x, y] = a[x, y] + 10 * y
        g[x, y] = f[x + 1, y] * 2 - f[x, y + 1]
        if scheduled:
            f.compute_root().gpu_single_thread()
            g.gpu_single_thread()
        return [g], [(a, data)]

    _gpu_vs_halide(build, [8, 3])
