"""Halide's fixed-point intrinsics (``hl.widening_mul``, ``hl.saturating_add``,
``hl.halving_add``, ...), written with the operations the middle-end has: each is defined
by Halide as the operation computed in a type twice as wide (where nothing overflows),
then narrowed (saturated, or wrapped, as Halide's definition says). Halide's own code
uses them for the fixed-point arithmetic of its camera and audio pipelines; the values
are the same whatever instruction Halide picks for them.
"""

from __future__ import annotations

from middleend.ir import types as t
from middleend.ir.expr import Cast, Expr, binop
from middleend.ir.types import DType

# a signed type twice as wide holds the sum and difference of two values of either
# signedness of the narrow width
_SIGNED_WIDER = {8: t.int16, 16: t.int32, 32: t.int64}

FIXED_POINT = frozenset({"widening_add", "widening_sub", "widening_mul", "saturating_add",
                         "saturating_sub", "halving_add", "halving_sub",
                         "rounding_halving_add", "rounding_shift_right",
                         "rounding_shift_left", "div_round_to_zero", "mod_round_to_zero",
                         "widening_shift_left", "widening_shift_right", "mul_shift_right",
                         "rounding_mul_shift_right", "widen_right_add", "widen_right_sub",
                         "widen_right_mul"})


def _as(dt: DType, e: Expr) -> Expr:
    return e if e.dtype == dt else Cast(dt, e)


def fixed_point(name: str, dt: DType, args: list[Expr]) -> Expr | None:
    """``name(args)`` of result type ``dt``; None where it cannot be written exactly (a
    64-bit operand, which has no wider type, or a float one)."""
    from frontends.halide.exprs import _shift, const, saturating_cast

    if not all(x.dtype.is_int for x in args):
        return None
    if name in ("mul_shift_right", "rounding_mul_shift_right"):
        return _mul_shift_right(name, dt, *args)
    a, b = args
    if name.startswith("widen_right_"):  # a (wide) op b widened to a's type, wrapping
        return binop(name.removeprefix("widen_right_"), a, _as(a.dtype, b))
    if name.startswith("widening_shift_"):  # dt is the wide type: nothing shifted out
        return _shift(name.removeprefix("widening_"), dt, [_as(dt, a), b])
    if name.startswith("rounding_shift_"):
        n = _int(b)
        if name == "rounding_shift_left" or n is None or not 0 <= n < a.dtype.bits or \
                a.dtype.bits == 64:
            return _rounding_shift(name, dt, a, b)
    if a.dtype.bits == 64:
        return None
    if name in ("div_round_to_zero", "mod_round_to_zero"):
        return _round_to_zero(name, a, b)
    if name == "rounding_shift_right":
        # a >> n rounded half up, for a constant 0 <= n < width (else _rounding_shift)
        assert n is not None
        if n == 0:
            return _as(dt, a)
        wide = _SIGNED_WIDER[a.dtype.bits]
        total = _as(wide, a) + const(1 << (n - 1), wide)
        return _as(dt, binop("floordiv", total, const(1 << n, wide)))
    if name.startswith("widening_"):  # dt is the wide type itself
        op = {"widening_add": "+", "widening_sub": "-", "widening_mul": "*"}[name]
        x, y = _as(dt, a), _as(dt, b)
        return x + y if op == "+" else x - y if op == "-" else x * y
    # the other operations keep the operands' type
    wide = _SIGNED_WIDER[a.dtype.bits]
    x, y = _as(wide, a), _as(wide, b)
    if name == "saturating_add":
        return saturating_cast(dt, x + y)
    if name == "saturating_sub":
        return saturating_cast(dt, x - y)
    total = x + y if name != "halving_sub" else x - y
    if name == "rounding_halving_add":
        total = total + const(1, wide)
    return _as(dt, binop("floordiv", total, const(2, wide)))  # floor(total / 2): >> 1


def _rounding_shift(name: str, dt: DType, a: Expr, b: Expr) -> Expr:
    """``rounding_shift_right(a, b)`` by any amount, as Halide lowers it (measured on
    Halide 21 for every int8 / uint8 value and amount in (-width, width), amounts of either
    signedness): for ``b > 0``, ``(a >> b)`` plus the last bit shifted out,
    ``(a >> (b - 1)) & 1`` (rounding half up, never overflowing); for ``b <= 0`` the left
    shift ``a << -b``, wrapping. ``rounding_shift_left(a, b)`` is
    ``rounding_shift_right(a, -b)``; an unsigned amount shifts it left only. The shifts
    are :func:`.exprs._shift`'s (an amount past the width gives 0 or the sign)."""
    from frontends.halide.exprs import _shift, const
    from middleend.ir.expr import call, select

    a = _as(dt, a)
    if name == "rounding_shift_left":
        if b.dtype.kind == "uint":
            return _shift("shift_left", dt, [a, b])
        b = -b
    plain = _shift("shift_right", dt, [a, b])
    last = _shift("shift_right", dt, [a, b - const(1, b.dtype)])  # the last bit shifted out
    return select(b > const(0, b.dtype), plain + call("bitand", last, const(1, dt)), plain)


def _mul_shift_right(name: str, dt: DType, a: Expr, b: Expr, q: Expr) -> Expr | None:
    """``mul_shift_right(a, b, q)``: the product in the type twice as wide (exact), shifted
    right by ``q`` (rounded half up for ``rounding_mul_shift_right``, as
    :func:`_rounding_shift`), saturated to ``a``'s type, as Halide defines them (measured on
    Halide 21 for every pair of 8-bit values and several ``q``)."""
    from frontends.halide.exprs import _shift, saturating_cast

    wide = _WIDER.get((a.dtype.kind, a.dtype.bits))
    if wide is None:
        return None
    prod = _as(wide, a) * _as(wide, b)
    shifted = (_rounding_shift("rounding_shift_right", wide, prod, q)
               if name.startswith("rounding_") else _shift("shift_right", wide, [prod, q]))
    return saturating_cast(dt, shifted)


_WIDER = {("int", 8): t.int16, ("int", 16): t.int32, ("int", 32): t.int64,
          ("uint", 8): t.uint16, ("uint", 16): t.uint32, ("uint", 32): t.uint64}


def _int(e: Expr) -> int | None:
    from frontends.halide.exprs import _int_const

    return _int_const(e)


def _round_to_zero(name: str, a: Expr, b: Expr) -> Expr:
    """C's ``/`` and ``%`` (the quotient rounded toward zero) from Halide's Euclidean ones:
    they differ only for a negative ``a`` that ``b`` does not divide, where the quotient is
    one closer to zero and the remainder ``|b|`` lower (x / 0 and x % 0 stay 0)."""
    from frontends.halide.exprs import _div, _mod, const
    from middleend.ir.expr import select

    q, r = _div(a, b), _mod(a, b)
    if a.dtype.kind == "uint":
        return q if name == "div_round_to_zero" else r
    zero, one = const(0, a.dtype), const(1, a.dtype)
    off = (a < zero) & (r != zero)
    if name == "div_round_to_zero":
        return select(off, q + select(b > zero, one, -one), q)
    return select(off, r - select(b > zero, b, -b), r)
