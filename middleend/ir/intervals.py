"""Integer interval arithmetic over the loop AST's index expressions and Layer I integer
expressions (and float ones, where an index converts a float: :func:`float_interval`).

Why: the bounds of every loop iterator are known when code is printed (constants once a
Halide or Julia kernel is specialized on its sizes), and they decide much of what the
inner loops cost. A clamp ``max(min(x - 1, W - 1), 0)`` (Halide's ``repeat_edge``, a
Julia ``clamp``) is a no-op wherever ``1 <= x <= W``; proving it there lets the printer
drop it, which is what makes the steady-state loop contiguous and vectorizable. Loop
partitioning (:mod:`middleend.passes.partition`) creates the loops where it holds; the
proof itself is here so that every printer applies the same sound rule.

All intervals are closed ``(lo, hi)`` pairs of Python ints; ``None`` means unknown. Index
arithmetic is 64-bit in generated code, so an unknown integer lies in the int64 range, and
an interval that leaves it (the C arithmetic could wrap) becomes unknown.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping

from .expr import Binary, Cast, Const, Expr, Unary
from .loopast import For, IExpr, IInt, IOp, IterRef, IVar

Interval = tuple[int, int]

I64 = (-(2**63), 2**63 - 1)  # what an index expression of unknown value may be


def _fit(r: Interval | None) -> Interval | None:
    """``r``, or None where it leaves the int64 range (the C arithmetic may wrap)."""
    if r is None or r[0] < I64[0] or r[1] > I64[1]:
        return None
    return r


def _mul(a: Interval, b: Interval) -> Interval:
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)


def combine(op: str, a: Interval | None, b: Interval | None) -> Interval | None:
    """``a op b`` (None where it may leave int64); an unknown operand of ``min``/``max``
    still bounds one side (the clamp of an unknown value lies within its other operand's
    bound)."""
    if op in ("min", "max"):
        x, y = a or I64, b or I64
        r = (min(x[0], y[0]), min(x[1], y[1])) if op == "min" else \
            (max(x[0], y[0]), max(x[1], y[1]))
        return None if r == I64 else r
    if a is None or b is None:
        return None
    if op == "add":
        return _fit((a[0] + b[0], a[1] + b[1]))
    if op == "sub":
        return _fit((a[0] - b[1], a[1] - b[0]))
    if op == "mul":
        return _fit(_mul(a, b))
    return None


def iexpr_interval(e: IExpr, env: Mapping[str, Interval]) -> Interval | None:
    """The values ``e`` can take when each variable ranges over ``env`` (None: unknown)."""
    if isinstance(e, IInt):
        return e.value, e.value
    if isinstance(e, IVar):
        return env.get(e.name)
    if not isinstance(e, IOp):
        return None
    args = [iexpr_interval(a, env) for a in e.args]
    if e.op in ("min", "max") and len(args) >= 2:
        out: Interval | None = args[0]
        for b in args[1:]:
            out = combine(e.op, out, b)
        return out
    if any(a is None for a in args):
        return None
    if e.op == "neg":
        lo, hi = args[0]  # type: ignore[misc]
        return _fit((-hi, -lo))
    if e.op in ("fdiv_q", "pdiv_q") and args[1] is not None and args[1][0] == args[1][1] \
            and args[1][0] > 0:
        d = args[1][0]
        lo, hi = args[0]  # type: ignore[misc]
        return lo // d, hi // d
    if e.op in ("add", "sub", "mul") and len(args) == 2:
        return combine(e.op, args[0], args[1])
    return None


def loop_range(f: For, env: Mapping[str, Interval]) -> Interval | None:
    """The values the iterator of ``f`` takes (over every value of the loops around it in
    ``env``), for an increasing loop with a known lower bound and an upper bound ``var <=
    hi`` or ``var < hi``; None otherwise."""
    if f.step <= 0:
        return None
    first = iexpr_interval(f.init, env)
    bound: IExpr | None = f.hi
    strict = False
    if bound is None and isinstance(f.cond, IOp) and f.cond.op in ("le", "lt") \
            and len(f.cond.args) == 2 and f.cond.args[0] == IVar(f.var):
        bound, strict = f.cond.args[1], f.cond.op == "lt"
    last = iexpr_interval(bound, env) if bound is not None else None
    if first is None or last is None:
        return None
    return first[0], last[1] - (1 if strict else 0)


def expr_interval(e: Expr, ranges: Mapping[str, Interval]) -> Interval | None:
    """The values of a Layer I integer expression whose iterators (``IterRef`` names)
    range over ``ranges``; buffer reads, parameters and anything non-affine are unknown."""
    if isinstance(e, Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            return None
        return e.value, e.value
    if isinstance(e, IterRef):
        return ranges.get(e.name)
    if isinstance(e, Unary) and e.op == "neg" and e.a.dtype.is_int:
        a = expr_interval(e.a, ranges)
        return None if a is None else _fit((-a[1], -a[0]))
    if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_int and e.type_.bits >= 32 \
            and e.type_.bits >= e.a.dtype.bits and e.type_.kind == e.a.dtype.kind:
        return expr_interval(e.a, ranges)
    if isinstance(e, Cast) and e.type_.is_int and e.type_.bits >= 32 and e.a.dtype.is_float:
        f = float_interval(e.a, ranges)  # C's conversion truncates toward zero
        if f is None or not -(2.0**31) < f[0] <= f[1] < 2.0**31:
            return None
        return math.trunc(f[0]), math.trunc(f[1])
    if isinstance(e, Binary) and e.type_.is_int and e.a.dtype.is_int and e.b.dtype.is_int:
        a, b = expr_interval(e.a, ranges), expr_interval(e.b, ranges)
        if e.op in ("div", "floordiv") and a is not None and b is not None \
                and b[0] == b[1] and b[0] > 0:
            return a[0] // b[0], a[1] // b[0]
        if e.op == "mod" and b is not None and b[0] == b[1] and b[0] > 0:
            d = b[0]  # the floor modulo (module docstring of expr.py): within [0, d)
            if a is not None and a[0] // d == a[1] // d:
                return a[0] % d, a[1] % d
            return 0, d - 1
        return combine(e.op, a, b)
    return None


FInterval = tuple[float, float]
_ROUNDING = 2.0**-20  # a float32 operation's relative error (2^-24), with room to spare
_FINITE = 1e30  # beyond, a sum or product may overflow float32


def _widened(lo: float, hi: float) -> FInterval | None:
    """``[lo, hi]`` widened by the rounding of the operation that gave it; None where it
    may overflow."""
    slack = max(abs(lo), abs(hi)) * _ROUNDING
    if not -_FINITE < lo <= hi < _FINITE:
        return None
    return lo - slack, hi + slack


def float_interval(e: Expr, ranges: Mapping[str, Interval]) -> FInterval | None:
    """The values of a float expression, never NaN, or None where unknown (a buffer read:
    any float, NaN included).

    Why: a data-dependent index is mostly a clamped value scaled (the bilateral grid's
    ``int(clamp(v, 0, 1) / r + 0.5)``), whose bounds are those of the clamp; proving the
    index in bounds drops the run-time check from the scatter's store. ``min(a, b)`` and
    ``max(a, b)`` are printed as ``a < b ? a : b`` and ``a > b ? a : b`` (``vminps`` and
    ``vmaxps`` vectorized): with ``b`` known, the result is ``b`` wherever ``a`` is NaN,
    so it is bounded by ``b`` on one side whatever ``a`` is."""
    if isinstance(e, Const):
        if isinstance(e.value, bool) or not isinstance(e.value, (int, float)) \
                or e.value != e.value or abs(e.value) >= _FINITE:
            return None
        v = float(e.value)
        if e.type_.bits == 32:  # the constant the code holds: 0.1 is 0.100000001f
            v = struct.unpack("f", struct.pack("f", v))[0]
        return v, v
    if isinstance(e, Cast) and e.type_.is_float:
        if e.a.dtype.is_float:
            return float_interval(e.a, ranges) if e.type_.bits >= e.a.dtype.bits else None
        r = expr_interval(e.a, ranges) if e.a.dtype.is_int else None
        return None if r is None else _widened(float(r[0]), float(r[1]))
    if isinstance(e, Unary) and e.op == "neg" and e.a.dtype.is_float:
        a = float_interval(e.a, ranges)
        return None if a is None else (-a[1], -a[0])
    if not (isinstance(e, Binary) and e.type_.is_float):
        return None
    a, b = float_interval(e.a, ranges), float_interval(e.b, ranges)
    if e.op in ("min", "max"):
        if b is None:
            return None  # a NaN b is the result wherever a is not below (above) it
        if e.op == "min":
            return (min(a[0], b[0]) if a else -math.inf, min(a[1], b[1]) if a else b[1])
        return (max(a[0], b[0]) if a else b[0], max(a[1], b[1]) if a else math.inf)
    if a is None or b is None:
        return None
    if e.op == "add":
        return _widened(a[0] + b[0], a[1] + b[1])
    if e.op == "sub":
        return _widened(a[0] - b[1], a[1] - b[0])
    if e.op == "div":
        if not (b[0] > 0 or b[1] < 0):
            return None  # a divisor that may be 0
        b = (1.0 / b[1], 1.0 / b[0])
    if e.op in ("mul", "div"):
        products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        return _widened(min(products), max(products))
    return None


def within(e: Expr, ranges: Mapping[str, Interval], size: IExpr) -> bool:
    """Whether ``0 <= e < size`` holds over ``ranges`` (``size`` known): a subscript that
    needs no bounds check."""
    r, n = expr_interval(e, ranges), iexpr_interval(size, {})
    return r is not None and n is not None and 0 <= r[0] and r[1] < n[0]


def redundant_operand(e: Binary, ranges: Mapping[str, Interval]) -> Expr | None:
    """For an integer ``min``/``max`` whose result is provably one of its operands over
    ``ranges``, that operand; else None (the node must be evaluated)."""
    if e.op not in ("min", "max") or not e.type_.is_int:
        return None
    a, b = expr_interval(e.a, ranges) or I64, expr_interval(e.b, ranges) or I64
    if a[1] <= b[0]:
        return e.a if e.op == "min" else e.b
    if b[1] <= a[0]:
        return e.b if e.op == "min" else e.a
    return None


def unclamped(e: Expr, ranges: Mapping[str, Interval]) -> Expr:
    """``e`` with every integer ``min``/``max`` that cannot bind over ``ranges`` replaced
    by the operand it always yields (:func:`redundant_operand`), below casts, negations
    and arithmetic: the same value at every point of ``ranges``, in the linear form the
    printers' read plans recognise (a ``repeat_edge`` clamp in a loop that stays inside
    the image)."""
    if isinstance(e, Binary) and e.type_.is_int:
        keep = redundant_operand(e, ranges)
        if keep is not None:
            return unclamped(keep, ranges)
        a, b = unclamped(e.a, ranges), unclamped(e.b, ranges)
        return e if a is e.a and b is e.b else Binary(e.op, a, b, e.type_)
    if isinstance(e, Cast) and e.type_.is_int:
        a = unclamped(e.a, ranges)
        return e if a is e.a else Cast(e.type_, a)
    if isinstance(e, Unary) and e.op == "neg":
        a = unclamped(e.a, ranges)
        return e if a is e.a else Unary("neg", a)
    return e


__all__ = ["Interval", "combine", "expr_interval", "iexpr_interval", "loop_range",
           "redundant_operand", "unclamped", "within"]
