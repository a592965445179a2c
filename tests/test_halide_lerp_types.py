"""``lerp`` of every pairing of types Halide 21 builds that the front-end used to refuse,
against Halide's realize under three schedules: bool values (any weight: ``w > half``),
bool weights (any values), float values by unsigned weights (scaled to [0, 1]); and
64-bit integer values, which Halide's ``lerp()`` refuses when the expression is built,
so no pipeline can hold one (the front-end's refusal keeps Halide's words)."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import UnsupportedHalideFeature, compile_pipeline
from frontends.halide.lerp import LERP_64, lerp
from middleend.ir import types as t
from middleend.ir.expr import Const

_SCHEDULES = ["inline", "root_vectorized", "parallel_split"]
_WEIGHTS = [(hl.UInt(8), np.uint8), (hl.UInt(16), np.uint16), (hl.UInt(32), np.uint32),
            (hl.Float(32), np.float32), (hl.Float(64), np.float64)]


def _schedule(schedule: str, g: hl.Func, out: hl.Func) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    if schedule == "root_vectorized":
        g.compute_root().vectorize(x, 8)
        out.vectorize(x, 8)
    elif schedule == "parallel_split":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        g.compute_at(out, y)
        out.split(x, xo, xi, 4).parallel(y).reorder(xi, y, xo)


def _weights(ntype: type, n: int, rng: np.random.Generator) -> np.ndarray:
    """Weights over the whole range, with the ends and both sides of the middle."""
    if np.issubdtype(ntype, np.floating):
        w = rng.uniform(-0.25, 1.25, n).astype(ntype)
        w[:6] = [0.0, 1.0, 0.5, np.nextafter(ntype(0.5), ntype(1)), -0.5, 1.5]
        return w
    top = np.iinfo(ntype).max
    w = rng.integers(0, top, n, dtype=ntype, endpoint=True)
    w[:6] = [0, top, top // 2, top // 2 + 1, 1, top - 1]
    return w


@pytest.mark.parametrize("schedule", _SCHEDULES)
@pytest.mark.parametrize(("wtype", "wn"), _WEIGHTS, ids=lambda v: str(v))
def test_bool_values(wtype: hl.Type, wn: type, schedule: str,
                     rng: np.random.Generator) -> None:
    """Bool values by every weight type: each of the four (zero, one) pairs, on both sides
    of the weight's middle, where Halide switches at ``w > half``."""
    x, y = hl.Var("x"), hl.Var("y")
    w = hl.ImageParam(wtype, 1, "w")
    g = hl.Func("g")
    g[x, y] = hl.lerp(y % 2 == 1, y / 2 == 1, w[x])
    f = hl.Func("blerp")
    f[x, y] = (g[x, y], hl.lerp(y / 2 == 1, x % 3 == 0, w[x]))
    _schedule(schedule, g, f)
    n = 40
    check(f, [n, 4], [(w, _weights(wn, n, rng))])


def test_bool_values_by_a_bool_weight_refused_as_halide_does() -> None:
    """Halide fails to compile ``lerp`` of bools by a bool weight; so do we, in one line."""
    x = hl.Var("x")
    f = hl.Func("bb")
    f[x] = hl.lerp(x % 2 == 1, x % 3 == 0, x % 5 == 0)
    with pytest.raises(hl.HalideError, match="Integer constant 2 will be implicitly"):
        f.realize([4])
    with pytest.raises(UnsupportedHalideFeature) as e:
        compile_pipeline(f).realize([4])
    assert "\n" not in str(e.value)
    assert "lerp of bool and bool values by a bool weight (Halide fails" in str(e.value)


@pytest.mark.parametrize("schedule", _SCHEDULES)
@pytest.mark.parametrize(("htype", "ntype"), [
    (hl.UInt(8), np.uint8), (hl.Int(8), np.int8), (hl.Int(16), np.int16),
    (hl.UInt(32), np.uint32), (hl.Int(32), np.int32), (hl.Float(32), np.float32),
    (hl.Float(64), np.float64)], ids=lambda v: str(v))
def test_bool_weight(htype: hl.Type, ntype: type, schedule: str,
                     rng: np.random.Generator) -> None:
    """A bool weight picks ``zero`` or ``one`` (exactly, also for floats)."""
    x, y = hl.Var("x"), hl.Var("y")
    a, b = hl.ImageParam(htype, 1, "a"), hl.ImageParam(htype, 1, "b")
    bw = hl.ImageParam(hl.Bool(), 1, "bw")
    g = hl.Func("g")
    g[x, y] = hl.lerp(a[x], b[x], bw[x])
    f = hl.Func("wlerp")
    f[x, y] = g[x, y] + hl.lerp(b[x], a[x], (x + y) % 3 == 0)
    _schedule(schedule, g, f)
    n = 48
    if np.issubdtype(ntype, np.floating):
        av, bv = (rng.uniform(-1e3, 1e3, n).astype(ntype) for _ in range(2))
    else:
        info = np.iinfo(ntype)
        lo, hi = int(info.min) // 2, int(info.max) // 2  # g + lerp does not overflow
        av, bv = (rng.integers(lo, hi, n, dtype=ntype, endpoint=True) for _ in range(2))
    check(f, [n, 3], [(a, av), (b, bv), (bw, rng.integers(0, 2, n).astype(bool))])


@pytest.mark.parametrize("schedule", _SCHEDULES)
@pytest.mark.parametrize(("htype", "ntype"), [(hl.Float(32), np.float32),
                                              (hl.Float(64), np.float64)], ids=str)
def test_float_values_by_unsigned_weights(htype: hl.Type, ntype: type, schedule: str,
                                          rng: np.random.Generator) -> None:
    """Float values by uint8/16/32 weights, scaled to [0, 1] (Halide's LLVM code computes
    the lowered ``zero * (1 - t) + one * t`` with fast-math rewrites even under
    strict_float, so the values agree within 1e-5, not bit for bit)."""
    x, y = hl.Var("x"), hl.Var("y")
    a, b = hl.ImageParam(htype, 1, "a"), hl.ImageParam(htype, 1, "b")
    ws = [hl.ImageParam(hl.UInt(n), 1, f"w{n}") for n in (8, 16, 32)]
    g = hl.Func("g")
    g[x, y] = hl.lerp(a[x], b[x], ws[0][x])
    f = hl.Func("flerp")
    f[x, y] = (g[x, y], hl.lerp(a[x], b[x], ws[1][x]), hl.lerp(b[x], a[x], ws[2][x]))
    _schedule(schedule, g, f)
    n = 48
    inputs: list = [(a, rng.uniform(-100, 100, n).astype(ntype)),
                    (b, rng.uniform(-100, 100, n).astype(ntype))]
    inputs += [(p, _weights(nt, n, rng)) for p, nt in
               zip(ws, (np.uint8, np.uint16, np.uint32), strict=True)]
    check(f, [n, 2], inputs)


@pytest.mark.parametrize("htype", [hl.Int(64), hl.UInt(64)], ids=str)
def test_64_bit_values_refused_as_halide_does(htype: hl.Type) -> None:
    """Halide refuses a 64-bit integer lerp when the expression is built, for every weight
    type, so no pipeline holds one; the front-end's translation refuses it too (in
    Halide's words, :func:`frontends.halide.exprs._intrinsic`)."""
    x = hl.Var("x")
    for wt in (hl.UInt(8), hl.UInt(64), hl.Float(32), hl.Bool()):
        with pytest.raises(hl.HalideError, match=LERP_64):
            hl.lerp(hl.cast(htype, x), hl.cast(htype, x + 1), hl.cast(wt, x))
    dt = t.int64 if htype.is_int() else t.uint64
    for w in (Const(3, t.uint8), Const(0.5, t.float32), Const(True, t.bool_)):
        assert lerp(Const(1, dt), Const(2, dt), w) is None
