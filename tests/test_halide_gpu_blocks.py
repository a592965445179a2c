"""The block size of the loops the front-end maps to the GPU itself (stages Halide runs on
the host: frontends/halide/host_stages.py, gpu_blocks.py), on PoCL (target="gpu",
OpenCL) against Halide's realize on the CPU: the values are Halide's, and each mapped
loop runs in blocks of its extent rounded up to a power of two, at most 256 or the
target's ``max_threads_per_block`` (the gpu target trims a block to its thread loop's
range, so a loop of 3 runs in one block of 3)."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

from frontends.halide import compile_pipeline

pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
from backends.gpu.plan import plan  # noqa: E402 - after the skip: it needs the gpu extra


def _blocks(kernel: object) -> list[int]:
    """Threads per block of each kernel of a built gpu program, in program order."""
    return [k.block[0] * k.block[1] * k.block[2]
            for k in plan(kernel.program).kernels]  # type: ignore[attr-defined]


def _unscheduled(width: int) -> tuple[hl.Func, hl.ImageParam]:
    """An output with no schedule (Halide runs it on the host), reading a 2-D input:
    its outermost loop (y) is the one mapped, over ``width`` rows."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Int(32), 2, "a")
    f = hl.Func("host_out")
    f[x, y] = a[x, y] * 3 + x - 2 * y
    return f, a


@pytest.mark.parametrize("extent, threads", [(1, 1), (3, 3), (64, 64), (1000, 256)])
def test_block_size_follows_the_extent(extent: int, threads: int,
                                       rng: np.random.Generator) -> None:
    f, a = _unscheduled(extent)
    data = rng.integers(-99, 99, (extent, 5), dtype=np.int32)
    k = compile_pipeline(f, target="gpu", dialect="opencl")
    _, kernel = k.build([5, extent], a=data)
    assert _blocks(kernel) == [threads]
    assert_same(k.realize([5, extent], a=data), halide_realize([f], [5, extent], [(a, data)]))


def test_block_size_per_param_value(rng: np.random.Generator) -> None:
    """A histogram whose bin count is a Param, its pure definition and update unscheduled
    (both on the host in Halide): one compiled pipeline, a build per Param value, each
    mapped loop in blocks of its own extent (the bins; the RDom loop is the update's
    outermost, one GPU thread)."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    bins = hl.Param(hl.Int(32), "bins")
    r = hl.RDom([(0, 300)], "r")
    h = hl.Func("hist")
    h[x] = 0
    h[inp[r] % bins] += 1
    data = rng.integers(0, 1000, 300, dtype=np.int32)
    k = compile_pipeline(h, target="gpu", dialect="opencl")
    for n, threads in ((5, 5), (700, 256)):
        _, kernel = k.build([n], inp=data, bins=n)
        assert _blocks(kernel)[0] == threads
        assert_same(k.realize([n], inp=data, bins=n),
                    halide_realize([h], [n], [(inp, data), (bins, n)]))


def test_block_size_keeps_the_targets_limit(rng: np.random.Generator) -> None:
    """``max_threads_per_block=32``: the front-end's blocks stay within it (a fixed 64 was
    refused by the target for a mapping the user never wrote)."""
    f, a = _unscheduled(100)
    data = rng.integers(-99, 99, (100, 5), dtype=np.int32)
    k = compile_pipeline(f, target="gpu", dialect="opencl", max_threads_per_block=32)
    _, kernel = k.build([5, 100], a=data)
    assert _blocks(kernel) == [32]
    assert_same(k.realize([5, 100], a=data), halide_realize([f], [5, 100], [(a, data)]))
