"""``hl.Float(16)`` against Halide's realize, bit for bit: C's ``_Float16`` with every
operation's result rounded to half precision (gcc keeps the intermediates of an expression
in float unless each is cast back), which is what Halide computes with strict_float (its
default may fuse a multiply-add, as for float32); ``%`` and the transcendental functions
in float32, rounded once, as Halide widens them. Inputs, outputs, a reduction in float16
and conversions, under three schedules; a target without ``_Float16`` refuses by name.
(The square root of a negative half is NaN here, as IEEE says; Halide's float16
emulation gives -inf: not compared.)"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, halide_realize

import middleend as me
from backends.clike.cexpr import ExprPrinter
from frontends.halide import compile_pipeline
from middleend.ir.expr import Const

H = hl.Float(16)


def _pipeline(schedule: str) -> tuple[hl.Func, hl.ImageParam, hl.ImageParam]:
    x, y = hl.Var("x"), hl.Var("y")
    a, b = hl.ImageParam(H, 2, "a"), hl.ImageParam(H, 2, "b")
    va, vb = a[x, y], b[x, y]
    g = hl.Func("g")
    g[x, y] = va * vb + va / vb - vb * hl.cast(H, 0.1)
    r = hl.RDom([(0, 8)], "r")
    acc = hl.Func("acc")  # a sum in float16: rounded after every addition
    acc[x, y] = hl.cast(H, 0)
    acc[x, y] += a[x + r.x, y] * hl.cast(H, 0.25)
    f = hl.Func("half")
    f[x, y] = (g[x, y], acc[x, y], hl.sqrt(hl.abs(va)), va % vb, hl.exp(vb), hl.floor(va / vb),
               hl.max(va, vb), hl.cast(hl.Float(32), va) * 3.3,
               hl.cast(H, hl.cast(hl.Float(32), vb) * 1.7), hl.cast(hl.Int(32), va * vb),
               hl.cast(H, hl.cast(hl.Int(16), va) * 7), hl.select(va > vb, va - vb, -va),
               va * hl.cast(H, 1000))  # past the largest half: inf
    if schedule == "root_vectorized":
        g.compute_root().vectorize(x, 8)
        acc.compute_root().vectorize(x, 8)
        f.vectorize(x, 8)
    elif schedule == "parallel_at":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        f.split(x, xo, xi, 8).parallel(y)
        acc.compute_at(f, xo)
    return f, a, b


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized", "parallel_at"])
def test_float16_matches_halide_bit_for_bit(schedule: str, rng: np.random.Generator) -> None:
    f, a, b = _pipeline(schedule)
    av = (rng.random((9, 40)) * 100 - 20).astype(np.float16)
    bv = (rng.random((9, 32)) * 3 + 0.01).astype(np.float16)
    av[0, :3] = [0, -0.0, 4000]  # a zero of each sign and a large value
    ours = compile_pipeline(f).realize([32, 9], a=av, b=bv)
    ref = halide_realize([f], [32, 9], [(a, av), (b, bv)], STRICT)
    for k, (got, want) in enumerate(zip(ours, ref, strict=True)):
        assert got.dtype == want.dtype, (k, got.dtype, want.dtype)
        bad = np.argwhere(got.view(np.uint8) != want.view(np.uint8)) if got.dtype.kind != "f" \
            else np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
        assert bad.size == 0, (k, len(bad), got.flat[:3], want.flat[:3])


def test_a_target_without_float16_refuses_it() -> None:
    """The shared printer spells a half literal exactly for the cpu target, and refuses a
    float16 value by name where the target's C has no _Float16 (CUDA, OpenCL, HLS)."""
    one_tenth = Const(0.1, me.float16)
    gcc = ExprPrinter({}, set())
    gcc.float16 = True
    assert gcc.value(one_tenth) == f"((_Float16){float(np.float16(0.1)):.9g}f)"
    with pytest.raises(me.TargetError, match="float16 value, which this target does not "
                                             "print"):
        ExprPrinter({}, set()).value(one_tenth)


def test_api_float16_matches_numpy(rng: np.random.Generator) -> None:
    """``me.float16`` in the Python API: numpy's float16 arithmetic rounds every operation
    to half precision too (``//`` and ``%`` in float32, rounded once)."""
    with me.Function("half_api") as fn:
        i = me.Var("i", 0, 64)
        a, b = me.Input("a", [64], me.float16), me.Input("b", [64], me.float16)
        c = me.Computation("c", [i], (a[i] * b[i] - a[i]) / b[i] + a[i] % b[i] + a[i] // b[i])
        c.vectorize(i, 8)
    av = (rng.random(64) * 50 - 10).astype(np.float16)
    bv = (rng.random(64) * 4 + 0.5).astype(np.float16)
    got = fn.compile(outputs=[c])(a=av, b=bv)["c"]
    want = (av * bv - av) / bv + av % bv + av // bv
    assert got.dtype == np.float16 and np.array_equal(got, want)
