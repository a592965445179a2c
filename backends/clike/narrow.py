"""Subscripts of provably in-bounds gathers evaluated in 32-bit arithmetic.

Why: index arithmetic is 64-bit in generated code (:mod:`middleend.ir.expr`), which is
exact but costs the vectorizer dearly in a gather whose index is data-dependent: a
``max(min(int64(floor(u)) + 1, W - 1), 0)`` clamp (Halide's bilinear ``warpAffine``, any
``clamp`` of a computed coordinate) becomes 64-bit compares and blends on 4-lane vectors
(AVX2 has no 64-bit ``vpminsq``), where Halide's int32 code does 8-lane ``vpminsd``. When
interval arithmetic proves that every intermediate value of the subscript fits in int32,
the same value is computed in int32, so the 32-bit text here is exact, not an
approximation.

One rewrite makes the common clamp provable: ``min(a + c, K)`` equals ``min(a, K - c) + c``
(and likewise for ``max``) for every ``a`` in exact arithmetic, and its intermediate values
stay within int32 even where ``a`` spans the whole int32 range (``a + 1`` alone does not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from middleend.ir.expr import Binary, Cast, Const, Expr
from middleend.ir.intervals import Interval, combine, expr_interval, redundant_operand
from middleend.ir.loopast import BufAccess, IterRef

I32 = (-(2**31), 2**31 - 1)
_SPAN_OPS = ("add", "sub", "mul", "min", "max")


def _fits(r: Interval | None) -> bool:
    return r is not None and I32[0] <= r[0] and r[1] <= I32[1]


def _type_range(e: Expr) -> Interval | None:
    """The values of an integer leaf whose 64-bit index text is a conversion of its C value
    (a float-to-int cast, a buffer read): its type's range, for 32-bit and narrower
    types."""
    dt = e.dtype
    if not dt.is_int or dt.bits > 32:
        return None
    if dt.kind == "uint":
        return 0, 2**dt.bits - 1
    return -(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1


def _is_int_binary(e: Expr) -> bool:
    return isinstance(e, Binary) and e.type_.is_int and e.a.dtype.is_int and e.b.dtype.is_int


def _const(e: Expr) -> int | None:
    """The value of a constant integer expression (``3520 - 1`` as well as ``3519``)."""
    if not e.dtype.is_int:
        return None
    r = expr_interval(e, {})
    return r[0] if r is not None and r[0] == r[1] else None


def _offset(e: Expr) -> tuple[Expr, int] | None:
    """``(a, c)`` when ``e`` is ``a + c`` or ``a - c`` with an integer constant ``c``."""
    if _is_int_binary(e) and isinstance(e, Binary) and e.op in ("add", "sub"):
        c = _const(e.b)
        if c is not None:
            return e.a, (c if e.op == "add" else -c)
        c = _const(e.a)
        if c is not None and e.op == "add":
            return e.b, c
    return None


class Int32Subscript:
    """Prints one subscript in int32, or says it cannot (``None``): ``ranges`` bounds the
    statement's iterators, ``value`` prints a Layer I value as C (the leaves' text),
    ``index`` prints an integer expression in the 64-bit index semantics."""

    def __init__(self, ranges: Mapping[str, Interval], value: Callable[[Expr], str],
                 index: Callable[[Expr], str]) -> None:
        self.ranges = ranges
        self.value = value
        self.index = index

    def span(self, e: Expr) -> Interval | None:
        """The values ``e`` takes in the 64-bit index semantics (None: unknown), with the
        type's range for a float-to-int conversion (whose 64-bit text converts it too)."""
        if _is_int_binary(e) and isinstance(e, Binary) and e.op in _SPAN_OPS:
            a, b = self.span(e.a), self.span(e.b)
            return None if a is None or b is None else combine(e.op, a, b)
        if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_int:
            # a no-op in the 64-bit index semantics unless it narrows below 32 bits
            return self.span(e.a) if e.type_.bits >= 32 else None
        if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_float \
                or isinstance(e, BufAccess):
            return _type_range(e)
        return expr_interval(e, self.ranges)

    def rewrite(self, e: Expr) -> Expr:
        """``e`` with clamps of offset values turned into offsets of clamps, and clamps
        that cannot bind over ``ranges`` dropped (the same value, smaller intermediates)."""
        if not _is_int_binary(e) or not isinstance(e, Binary):
            if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_int \
                    and e.type_.bits >= 32:
                return self.rewrite(e.a)
            return e
        keep = redundant_operand(e, self.ranges)
        if keep is not None:
            return self.rewrite(keep)
        a, b = self.rewrite(e.a), self.rewrite(e.b)
        if e.op in ("min", "max"):
            for x, k in ((a, b), (b, a)):
                off, kc = _offset(x), _const(k)
                if off is not None and kc is not None:
                    inner, c = off
                    t = e.type_
                    clamp = Binary(e.op, inner, Const(kc - c, t), t)
                    return Binary("add", self.rewrite(clamp), Const(c, t), t)
        return Binary(e.op, a, b, e.type_)

    def text(self, e: Expr) -> str | None:
        """``e`` as an int32 C expression of the same value, or None."""
        return self._text(self.rewrite(e))

    def _text(self, e: Expr) -> str | None:
        if not _fits(self.span(e)):
            return None
        c = _const(e)
        if c is not None:
            return f"({c})" if c < 0 else str(c)
        if isinstance(e, IterRef):
            return f"((int32_t){self.index(e)})"
        if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_float \
                or isinstance(e, BufAccess):
            return f"((int32_t)({self.value(e)}))"
        if not _is_int_binary(e) or not isinstance(e, Binary):
            return None
        a, b = self._text(e.a), self._text(e.b)
        if a is None or b is None:
            return None
        if e.op in ("add", "sub", "mul"):
            return f"({a} {'+' if e.op == 'add' else '-' if e.op == 'sub' else '*'} {b})"
        if e.op in ("min", "max"):
            return f"me_{e.op}_i32({a}, {b})"
        return None


__all__ = ["Int32Subscript"]
