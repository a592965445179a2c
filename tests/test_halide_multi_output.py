"""Pipelines whose outputs read each other beyond the realized region, against Halide's
realize: Halide's bounds query sizes each output buffer by the realized region and what the
other outputs read of it (``u(x) = t(x + 1) + 1`` realized over 10 gives ``t`` 11
elements), so every output comes back over its own region: the values, the shapes, and
the regions' mins (also below 0) must be Halide's. With ``out=``, an output array that
does not cover its region is refused in one line, where Halide refuses the buffer too."""

from __future__ import annotations

import itertools

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, assert_same, halide_realize

from frontends.halide import compile_pipeline
from middleend.ir.errors import KernelArgumentError


def _regions(bufs: list[hl.Buffer]) -> list[list[tuple[int, int]]]:
    return [[(b.dim(d).min(), b.dim(d).extent()) for d in range(b.dimensions())]
            for b in bufs]


def _vs_halide(outs: list[hl.Func], sizes: list[int], **compile_kw: object) -> None:
    """Values, shapes and regions of every output, ours against Halide's realize."""
    k = compile_pipeline(outs, **compile_kw)
    ref = hl.Pipeline(outs).realize(sizes, STRICT)
    bufs = [ref] if isinstance(ref, hl.Buffer) else list(ref)
    assert_same(k.realize(sizes), [np.asarray(b) for b in bufs])
    assert k.output_regions(sizes) == _regions(bufs)


def _t_u(shift: int) -> tuple[hl.Func, hl.Func]:
    x = hl.Var("x")
    t, u = hl.Func("t"), hl.Func("u")
    t[x] = x * 2
    u[x] = t[x + shift] + 1
    return t, u


@pytest.mark.parametrize("schedule", ["inline", "root", "at_u"])
def test_output_read_beyond_the_realized_region(schedule: str) -> None:
    """The brief's pipeline: t comes back with 11 elements (min 0)."""
    t, u = _t_u(1)
    if schedule == "root":
        t.compute_root()
    elif schedule == "at_u":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        u.split(hl.Var("x"), xo, xi, 4)
    _vs_halide([u, t], [10])
    _vs_halide([t, u], [10])


@pytest.mark.parametrize("order", [''.join(p) for p in itertools.permutations("tuw")])
def test_every_order_of_three_outputs(order: str) -> None:
    """u reads t, w reads u and t (below 0): Halide returns the grown regions only when
    the first output is read by no other one; ours must match in every order."""
    x = hl.Var("x")
    t, u, w = hl.Func("t"), hl.Func("u"), hl.Func("w")
    t[x] = x * 2
    u[x] = t[x + 1] + 1
    w[x] = u[x + 2] + t[x - 3]
    fs = {"t": t, "u": u, "w": w}
    _vs_halide([fs[c] for c in order], [10])


def test_region_below_zero_and_both_sides() -> None:
    """u reads t at x - 1 and x + 12: t over [-1, 21] (element 0 of our array is t(-1))."""
    x = hl.Var("x")
    t, u = hl.Func("t"), hl.Func("u")
    t[x] = x * 2
    u[x] = t[x - 1] + t[x + 12]
    _vs_halide([u, t], [10])


def test_2d_and_tuple_outputs() -> None:
    """A 2-D output read at an offset, and a Tuple output read by another output."""
    x, y = hl.Var("x"), hl.Var("y")
    t, u, v = hl.Func("t"), hl.Func("u"), hl.Func("v")
    t[x, y] = x + 10 * y
    u[x, y] = t[x - 1, y + 2] * 3
    v[x, y] = (t[x, y] + 1, hl.f32(x - y))
    w = hl.Func("w")
    w[x, y] = v[x + 2, y][0] + hl.i32(v[x, y - 1][1])
    _vs_halide([u, t], [4, 3])
    _vs_halide([w, v], [5, 2])


def test_output_with_update_read_beyond(rng: np.random.Generator) -> None:
    """An output with an update (a running count) read beyond its region by another."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(32), 1, "a")
    data = rng.integers(0, 100, 40, dtype=np.int32)
    r = hl.RDom([(0, 3)], "r")
    t, u = hl.Func("t"), hl.Func("u")
    t[x] = a[x]
    t[x] += a[x + r]
    u[x] = t[x + 2] - t[x]
    k = compile_pipeline([u, t])
    ref = halide_realize([u, t], [30], [(a, data)])
    assert_same(k.realize([30], a=data), ref)
    assert [x.shape for x in ref] == [(30,), (32,)]


def test_out_arrays_cover_each_region() -> None:
    """out=: the arrays given must have each output's region; one that is the realized
    region only is refused in one line, as Halide refuses such a buffer."""
    t, u = _t_u(1)
    k = compile_pipeline([u, t])
    bu, bt = np.zeros(10, np.int32), np.zeros(11, np.int32)
    got = k.realize([10], out=[bu, bt])
    assert got[0] is bu and got[1] is bt
    ref = hl.Pipeline([u, t]).realize([10])
    assert_same([bu, bt], [np.asarray(b) for b in ref])
    with pytest.raises(hl.HalideError, match=r"Output buffer t\S* is accessed at 10"):
        hl.Pipeline([u, t]).realize([hl.Buffer(hl.Int(32), [10]),
                                     hl.Buffer(hl.Int(32), [10])])
    with pytest.raises(KernelArgumentError, match=(
            r"^realize out= for output 't\S*' \(out\[1\]\): expected int32 with shape "
            r"\(11,\) \(Halide's bounds query: the pipeline computes 't\S*' over "
            r"\[\(0, 10\)\]")):
        k.realize([10], out=[bu, np.zeros(10, np.int32)])


def test_gpu_target(rng: np.random.Generator) -> None:
    """The same on the gpu target (OpenCL on PoCL), outputs unscheduled (host stages)."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    t, u = _t_u(3)
    _vs_halide([u, t], [20], target="gpu", dialect="opencl")
