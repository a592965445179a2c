"""Halide's fixed-point intrinsics (widening, saturating, halving and rounding-halving
add / sub / mul), rounding shifts and ``is_inf`` / ``is_finite`` against Halide's realize,
on values that span each type's whole range (so every saturation and every wrap is taken),
inlined and computed at root with a vector loop."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

_TYPES = [(hl.UInt(8), np.uint8), (hl.Int(8), np.int8), (hl.UInt(16), np.uint16),
          (hl.Int(16), np.int16), (hl.Int(32), np.int32), (hl.UInt(32), np.uint32)]
_OPS = ["saturating_add", "saturating_sub", "halving_add", "halving_sub",
        "rounding_halving_add", "widening_add", "widening_sub", "widening_mul"]


def _schedule(schedule: str, g: hl.Func, f: hl.Func, x: hl.Var, y: hl.Var) -> None:
    """The producer ``g`` and consumer ``f`` of a test under one of its schedules (the
    default leaves ``g`` inlined)."""
    if schedule == "root_vectorized":
        g.compute_root().vectorize(x, 8)
        f.vectorize(x, 8)
    elif schedule == "parallel":
        g.compute_at(f, y)
        f.parallel(y)


def _full_range(rng: np.random.Generator, ntype: type, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(ntype)
    a = rng.integers(info.min, info.max, size=shape, dtype=ntype, endpoint=True)
    a.flat[:4] = [info.min, info.max, 0, 1]  # the extremes, always
    return a


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized"])
@pytest.mark.parametrize(("htype", "ntype"), _TYPES, ids=lambda t: str(t))
def test_fixed_point_intrinsics(htype: hl.Type, ntype: type, schedule: str,
                                rng: np.random.Generator) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    a, b = hl.ImageParam(htype, 1, "a"), hl.ImageParam(htype, 1, "b")
    ops = [op for op in _OPS if not (op.startswith("widening") and htype.bits() == 32)]
    parts = []
    for k, op in enumerate(ops):
        g = hl.Func(f"g{k}")
        g[x] = getattr(hl, op)(a[x], b[(x + k) % 24])
        parts.append(g)
    out = hl.Func("out")
    out[x, y] = hl.mux(y, [hl.i64(g[x]) for g in parts])
    if schedule == "root_vectorized":
        for g in parts:
            g.compute_root().vectorize(x, 8)
    check(out, [24, len(ops)], [(a, _full_range(rng, ntype, (24,))),
                                (b, _full_range(rng, ntype, (24,))[::-1].copy())])


@pytest.mark.parametrize(("htype", "ntype"), _TYPES, ids=lambda t: str(t))
def test_rounding_shift_right_by_a_constant(htype: hl.Type, ntype: type,
                                            rng: np.random.Generator) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(htype, 1, "a")
    out = hl.Func("out")
    shifts = [0, 1, 3, htype.bits() - 1]
    out[x, y] = hl.mux(y, [hl.rounding_shift_right(a[x], hl.cast(htype, n)) for n in shifts])
    check(out, [24, len(shifts)], [(a, _full_range(rng, ntype, (24,)))])


@pytest.mark.parametrize(("htype", "ntype"), _TYPES, ids=lambda t: str(t))
def test_division_rounding_to_zero(htype: hl.Type, ntype: type,
                                   rng: np.random.Generator) -> None:
    """``div_round_to_zero`` / ``mod_round_to_zero`` (C's ``/`` and ``%``) for divisors of
    both signs, small and large (not 0, and not MIN / -1, which Halide leaves undefined)."""
    x, y = hl.Var("x"), hl.Var("y")
    a, b = hl.ImageParam(htype, 1, "a"), hl.ImageParam(htype, 1, "b")
    out = hl.Func("out")
    out[x, y] = hl.select(y == 0, hl.div_round_to_zero(a[x], b[x]),
                          hl.mod_round_to_zero(a[x], b[x]))
    av = _full_range(rng, ntype, (48,))
    av[av == np.iinfo(ntype).min] = np.iinfo(ntype).min + 1
    bv = _full_range(rng, ntype, (48,))
    bv[:24] = rng.integers(1, 9, 24) * rng.choice([1, -1] if np.iinfo(ntype).min < 0 else [1], 24)
    bv[bv == 0] = 3
    check(out, [48, 2], [(a, av), (b, bv)])


def test_is_inf_and_is_finite(rng: np.random.Generator) -> None:
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    f = hl.Func("f")
    f[x] = hl.select(hl.is_inf(a[x]), 1, 0) + hl.select(hl.is_finite(a[x]), 10, 0) + \
        hl.select(hl.is_nan(a[x]), 100, 0)
    v = rng.random(12, dtype=np.float32) * 1e38
    v[:5] = [np.inf, -np.inf, np.nan, 0.0, -np.float32(3.4e38)]
    check(f, [12], [(a, v)])


_SHIFT_TYPES = [*_TYPES, (hl.Int(64), np.int64), (hl.UInt(64), np.uint64)]


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized", "parallel"])
@pytest.mark.parametrize(("htype", "ntype"), _SHIFT_TYPES, ids=lambda t: str(t))
def test_rounding_shifts_by_a_computed_amount(htype: hl.Type, ntype: type, schedule: str,
                                              rng: np.random.Generator) -> None:
    """``rounding_shift_right`` / ``rounding_shift_left`` by amounts read from an input, of
    both signednesses, in (-width, width) (a negative one shifts the other way; past the
    width Halide's result is undefined), and by a negative constant, for every width."""
    x, y = hl.Var("x"), hl.Var("y")
    bits = htype.bits()
    # (Halide's Python Buffer has no uint64: those values come in as int64, same bits)
    a = hl.ImageParam(hl.Int(64) if ntype is np.uint64 else htype, 1, "a")
    s = hl.ImageParam(hl.Int(8), 1, "s")
    v = hl.cast(htype, a[x])
    signed_amt, unsigned_amt = hl.cast(hl.Int(bits), s[x]), hl.cast(hl.UInt(bits), hl.abs(s[x]))
    g = hl.Func("g")
    g[x, y] = hl.rounding_shift_right(v, signed_amt)
    f = hl.Func("rshifts")
    f[x, y] = (g[x, y], hl.rounding_shift_left(v, signed_amt),
               hl.rounding_shift_right(v, unsigned_amt), hl.rounding_shift_left(v, unsigned_amt),
               hl.rounding_shift_right(v, hl.cast(hl.Int(bits), -3)))
    _schedule(schedule, g, f, x, y)
    info = np.iinfo(ntype)
    av = rng.integers(info.min, info.max, 48, dtype=ntype, endpoint=True)
    av[:6] = [info.min, info.max, 0, 1, 3, info.max - 1]
    av = av.view(np.int64) if ntype is np.uint64 else av
    sv = rng.integers(-(bits - 1), bits, 48, dtype=np.int8)
    sv[:12] = [0, 1, -1, bits - 1, -(bits - 1), 2, 0, 1, 1, bits - 1, 1, 1]
    check(f, [48, 2], [(a, av), (s, sv)])


_WIDE = {8: (hl.Int(16), hl.UInt(16)), 16: (hl.Int(32), hl.UInt(32)), 32: (hl.Int(64), hl.UInt(64))}


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized", "parallel"])
@pytest.mark.parametrize(("htype", "ntype"), _TYPES, ids=lambda t: str(t))
def test_widening_shifts_and_mul_shift_right(htype: hl.Type, ntype: type, schedule: str,
                                             rng: np.random.Generator) -> None:
    """``widening_shift_left/right`` (in the type twice as wide, by amounts in
    (-width, width)), ``mul_shift_right`` / ``rounding_mul_shift_right`` (the exact
    product shifted by constant and computed amounts, saturated) and
    ``widen_right_add/sub/mul`` (a wide value and a narrow one, wrapping), on values
    spanning the type's range."""
    x, y = hl.Var("x"), hl.Var("y")
    bits = htype.bits()
    a, b = hl.ImageParam(htype, 1, "a"), hl.ImageParam(htype, 1, "b")
    s = hl.ImageParam(hl.Int(8), 1, "s")
    amt = hl.cast(hl.Int(bits) if htype.is_int() else hl.UInt(bits),
                  s[x] if htype.is_int() else hl.abs(s[x]))
    q = hl.cast(hl.UInt(bits), hl.abs(s[x]) * 2)  # in [0, 2 * width)
    wide = _WIDE[bits][0 if htype.is_int() else 1]
    w = hl.cast(wide, a[x]) * 77 + hl.cast(wide, b[x])
    g = hl.Func("g")
    g[x, y] = hl.mul_shift_right(a[x], b[x], q)
    f = hl.Func("wide")
    parts = [hl.widening_shift_left(a[x], amt), hl.widening_shift_right(a[x], amt), g[x, y],
             hl.rounding_mul_shift_right(a[x], b[x], q),
             hl.widen_right_add(w, b[x]), hl.widen_right_sub(w, b[x]), hl.widen_right_mul(w, b[x])]
    parts += [op(a[x], b[x], hl.cast(hl.UInt(bits), c))
              for c in (0, 1, bits - 1, bits, 2 * bits - 1)
              for op in (hl.mul_shift_right, hl.rounding_mul_shift_right)]
    f[x, y] = hl.mux(y, [hl.cast(hl.Int(64), p) for p in parts])
    _schedule(schedule, g, f, x, y)
    av, bv = _full_range(rng, ntype, (32,)), _full_range(rng, ntype, (32,))[::-1].copy()
    sv = rng.integers(-(bits - 1), bits, 32, dtype=np.int8)
    sv[:6] = [0, 1, -1, bits - 1, -(bits - 1), 2]
    check(f, [32, len(parts)], [(a, av), (b, bv), (s, sv)])
