"""Halide pipelines with GPU schedules (gpu_tile, gpu_blocks/gpu_threads, a producer
computed per block) compiled by the front-end for the gpu target, against Halide's own
realize of the same algorithm on the CPU (Halide itself needs a GPU to run a GPU schedule;
the algorithm, not the schedule, defines the result)."""

from __future__ import annotations

from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

from frontends.halide import compile_pipeline

pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")

Schedule = Callable[[dict[str, hl.Func], dict[str, hl.Var]], None]


def blur(a: hl.ImageParam) -> tuple[dict[str, hl.Func], dict[str, hl.Var]]:
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    clamped = hl.BoundaryConditions.repeat_edge(a)
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return {"bx": bx, "by": by}, {"x": x, "y": y, "xo": xo, "yo": yo, "xi": xi, "yi": yi}


def tiles_both(f: dict[str, hl.Func], v: dict[str, hl.Var]) -> None:
    f["by"].gpu_tile(v["x"], v["y"], v["xo"], v["yo"], v["xi"], v["yi"], 16, 8)
    f["bx"].compute_root().gpu_tile(v["x"], v["y"], v["xo"], v["yo"], v["xi"], v["yi"], 16, 8)


def producer_per_block(f: dict[str, hl.Func], v: dict[str, hl.Var]) -> None:
    """bx computed in each block of by (shared memory), by the block's threads."""
    f["by"].gpu_tile(v["x"], v["y"], v["xo"], v["yo"], v["xi"], v["yi"], 16, 8)
    f["bx"].compute_at(f["by"], v["xo"]).gpu_threads(v["x"], v["y"])


def blocks_and_threads(f: dict[str, hl.Func], v: dict[str, hl.Var]) -> None:
    f["by"].split(v["y"], v["yo"], v["yi"], 4).gpu_blocks(v["yo"]).gpu_threads(v["yi"])
    f["bx"].compute_root().gpu_tile(v["x"], v["xo"], v["xi"], 32)
    f["bx"].gpu_blocks(v["y"])


@pytest.mark.parametrize("schedule", [tiles_both, producer_per_block, blocks_and_threads],
                         ids=lambda s: s.__name__)
@pytest.mark.parametrize("size", [(37, 21), (16, 8)])
def test_blur_with_gpu_schedules_equals_halide(schedule: Schedule, size, rng) -> None:
    a = hl.ImageParam(hl.Float(32), 2, "a")
    w, h = size
    img = rng.random((h + 3, w + 5), dtype=np.float32)
    ours_funcs, v = blur(a)
    schedule(ours_funcs, v)
    k = compile_pipeline(ours_funcs["by"], target="gpu", dialect="opencl")
    ref_funcs, _ = blur(a)  # the same algorithm with Halide's default schedule
    assert_same(k.realize([w, h], a=img), halide_realize([ref_funcs["by"]], [w, h],
                                                         [(a, img)]))


def test_producer_per_block_lives_in_shared_memory_behind_a_barrier() -> None:
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, v = blur(a)
    producer_per_block(f, v)
    k = compile_pipeline(f["by"], target="gpu", dialect="opencl")
    img = np.ones((11, 20), np.float32)
    k.realize([16, 8], a=img)
    (_, kernel), = k._builds.values()
    assert "__local float b_bx" in kernel.source
    assert kernel.source.count("barrier(CLK_LOCAL_MEM_FENCE") == 1


def conv2d(a: hl.ImageParam, kern: hl.ImageParam) -> tuple[hl.Func, list[hl.Var]]:
    """A 3x3 convolution over an RDom, the reduction in each thread."""
    x, y = hl.Var("x"), hl.Var("y")
    r = hl.RDom([(0, 3), (0, 3)])
    out = hl.Func("conv")
    out[x, y] = 0.0
    out[x, y] += a[x + r.x, y + r.y] * kern[r.x, r.y]
    return out, [x, y]


def test_a_reduction_per_thread_equals_halide(rng) -> None:
    a = hl.ImageParam(hl.Float(32), 2, "a")
    kern = hl.ImageParam(hl.Float(32), 2, "kern")
    out, (x, y) = conv2d(a, kern)
    xo, yo, xi, yi = (hl.Var(n) for n in ("xo", "yo", "xi", "yi"))
    out.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    out.update(0).gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    img = rng.random((22, 27), dtype=np.float32)
    kv = rng.random((3, 3), dtype=np.float32)
    k = compile_pipeline(out, target="gpu", dialect="opencl")
    ref, _ = conv2d(a, kern)
    assert_same(k.realize([25, 20], a=img, kern=kv),
                halide_realize([ref], [25, 20], [(a, img), (kern, kv)]))


def test_scalar_params_of_every_kind_on_the_gpu(rng) -> None:
    """Float, double, bool and uint8 Params (scalar inputs, copied to the device like any
    input) and a zero-dimensional ImageParam in a gpu_tile'd Func: one build, Halide's
    values for two sets of values."""
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    a = hl.ImageParam(hl.Float(32), 2, "a")
    s = hl.ImageParam(hl.Float(32), 0, "s")
    g, d = hl.Param(hl.Float(32), "gain"), hl.Param(hl.Float(64), "d")
    b, u = hl.Param(hl.Bool(), "b"), hl.Param(hl.UInt(8), "u")

    def alg() -> hl.Func:
        f = hl.Func("gains")
        f[x, y] = hl.select(b, hl.floor(a[x, y] * g), hl.f32(d)) + hl.f32(u) * s[()]
        return f

    f = alg()
    f.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    k = compile_pipeline(f, target="gpu", dialect="opencl")
    img = rng.random((9, 13), dtype=np.float32) * np.float32(10)
    for gv, dv, bv, uv, sv in [(1.5, 0.25, True, 7, 0.5), (-0.5, 3.0, False, 255, 2.0)]:
        sa = np.array(sv, np.float32)
        inputs = [(a, img), (s, sa), (g, gv), (d, dv), (b, bv), (u, uv)]
        assert_same(k.realize([13, 9], a=img, s=sa, gain=gv, d=dv, b=bv, u=uv),
                    halide_realize([alg()], [13, 9], inputs))
    assert k.compiles == 1
