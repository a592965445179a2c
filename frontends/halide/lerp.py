"""Halide's ``lerp(zero, one, weight)`` for every combination of types Halide builds.

Halide's ``lerp()`` takes values of one type and a weight that is unsigned (``bool``
included: Halide's ``Bool`` is ``UInt(1)``) or float, and refuses 64-bit integer values
when the expression is built ("Lerping between 64-bit integers is not supported"), so no
pipeline holds one. The values, after Halide 21's lowering (its ``lower_lerp``, read, and
measured on the JIT):

* float values, float weight: ``zero + (one - zero) * w`` (what Halide's code computes
  without strict_float; the rewriting of its lowered ``zero * (1 - w) + one * w``);
* float values, unsigned weight: the weight scaled to [0, 1] in the values' type,
  ``t = float(w) / (2^bits - 1)``, then ``zero * (1 - t) + one * t``; a ``bool`` weight is
  ``t = float(w)`` (so exactly ``one`` where it is true, for finite values);
* integer values: :func:`.intrinsics.integer_lerp` (rounding, weight scaling); a ``bool``
  weight scales to the values' largest unsigned value, which picks ``one`` or ``zero``
  exactly;
* ``bool`` values: ``weight > half ? one : zero``, ``half`` being ``0.5`` for a float
  weight and ``max / 2`` in integers for an unsigned one (127 for ``uint8``). With a
  ``bool`` weight Halide fails when it compiles the pipeline (``max / 2`` of ``uint1``:
  "Integer constant 2 will be implicitly coerced to type uint1"), so it is refused here.
"""

from __future__ import annotations

from frontends.halide.intrinsics import integer_lerp
from middleend.ir.expr import Cast, Const, Expr, binop, select

#: Halide's refusal, raised by its lerp() when the expression is built
LERP_64 = "Lerping between 64-bit integers is not supported"


def refusal(zero: Expr, one: Expr, w: Expr) -> str:
    """Why :func:`lerp` gives None for these operands, as Halide says it."""
    if zero.dtype.is_bool and w.dtype.is_bool:
        return ("Halide fails to compile it: Integer constant 2 will be implicitly coerced "
                "to type uint1")
    if zero.dtype.is_int and zero.dtype.bits == 64:
        return LERP_64
    return "Halide's lerp() takes values of one type and an unsigned or float weight"


def lerp(zero: Expr, one: Expr, w: Expr) -> Expr | None:
    """Halide's ``lerp`` with its values; None for a combination Halide refuses."""
    dt, wt = zero.dtype, w.dtype
    if one.dtype != dt or not (wt.kind == "uint" or wt.is_float or wt.is_bool):
        return None
    if dt.is_bool:
        if wt.is_bool:
            return None
        half = Const(0.5, wt) if wt.is_float else Const((2**wt.bits - 1) // 2, wt)
        return select(binop("gt", w, half), one, zero)
    if dt.is_float:
        if wt.is_float:
            return zero + (one - zero) * w
        t = Cast(dt, w)
        if not wt.is_bool:
            t = binop("div", t, Const(float(2**wt.bits - 1), dt))
        return zero * (Const(1.0, dt) - t) + one * t
    if dt.bits == 64:
        return None
    if wt.is_bool:
        return select(w, one, zero)
    return integer_lerp(zero, one, w)
