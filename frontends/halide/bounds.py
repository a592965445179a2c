"""Bounds inference: which region of every Func a realization needs.

Halide computes a box per Func from its consumers' calls. We do the same, with ISL for the
affine index expressions (exact images of each stage's iteration domain, triangular ``where``
domains included) and interval arithmetic for the non-affine ones (clamps of data-dependent
values, reads of narrow-typed images), which is what bounds a histogram or a table lookup.
Sizes are constants here: the front-end specializes a pipeline on its output and input sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from frontends.halide.exprs import type_range
from middleend.ir.affine import AffineContext, NonAffine, to_pw_aff, to_set
from middleend.ir.expr import Access, Binary, Call, Cast, Const, Expr, Select, Unary
from middleend.ir.function import Var
from middleend.ir.types import DType

Interval = tuple[float | None, float | None]
Box = list[tuple[int, int]]


@dataclass(frozen=True, eq=False, repr=False)
class Opaque(Expr):
    """A value the bounds pass does not look into (a call's result during bounds
    inference): its type's range is known, and ``values(ranges)`` (when given) bounds it
    further (a Func's value range, computed only if an index needs it)."""

    type_: DType
    values: Callable[[dict[str, tuple[int, int]]], Interval] | None = None

    @property
    def dtype(self) -> DType:
        return self.type_


class Unbounded(Exception):
    """An index whose range cannot be bounded (the message says which)."""


def stage_domain(names: list[str], ranges: dict[str, tuple[int, int]],
                 predicate: Expr | None) -> tuple[isl.Set, AffineContext, bool]:
    """The ISL set of a stage's iterators (inclusive ranges) intersected with the affine part
    of its predicate; the flag says whether the predicate was fully represented."""
    ctx = isl.DEFAULT_CONTEXT
    space = isl.Space.create_from_names(ctx, set=names)
    ac = AffineContext(space)
    dom = isl.Set.universe(space)
    for k, n in enumerate(names):
        lo, hi = ranges[n]
        dom = dom.lower_bound_val(isl.dim_type.set, k, isl.Val.int_from_si(ctx, lo))
        dom = dom.upper_bound_val(isl.dim_type.set, k, isl.Val.int_from_si(ctx, hi))
    exact = True
    if predicate is not None:
        try:
            dom = dom.intersect(to_set(predicate, ac))
        except NonAffine:
            exact = False
    return dom, ac, exact


def index_range(e: Expr, dom: isl.Set, ac: AffineContext,
                ranges: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    """Inclusive [lo, hi] of an integer index over ``dom``; None when ``dom`` is empty.
    Raises :class:`Unbounded` when neither ISL nor interval arithmetic can bound it."""
    if dom.is_empty():
        return None
    try:
        pa = to_pw_aff(e, ac)
    except NonAffine:
        lo, hi = interval(e, ranges)
        if lo is None or hi is None or math.isinf(lo) or math.isinf(hi):
            lo, hi = interval(e, ranges, deep=True)
        if lo is None or hi is None or math.isinf(lo) or math.isinf(hi):
            raise Unbounded(f"cannot bound the index {e!r}") from None
        return (math.floor(lo), math.ceil(hi))
    img = isl.Map.from_pw_aff(pa).intersect_domain(dom).range()
    lo_v, hi_v = img.dim_min_val(0), img.dim_max_val(0)
    if not (lo_v.is_int() and hi_v.is_int()):
        raise Unbounded(f"the index {e!r} is unbounded")
    return (lo_v.to_python(), hi_v.to_python())


def interval(e: Expr, ranges: dict[str, tuple[int, int]], deep: bool = False) -> Interval:
    """Interval arithmetic over Layer I expressions (None: no bound on that side);
    ``deep``: calls bounded by the range of the called Func's values too (costly in a
    large inlined pipeline, so only where the types alone do not bound an index)."""
    if isinstance(e, Const):
        v = float(e.value) if e.type_.is_float else int(e.value)
        return (v, v)
    if isinstance(e, Var):
        r = ranges.get(e.name)
        return (None, None) if r is None else r
    if isinstance(e, Opaque | Access):
        r = type_range(e.dtype)
        t = (None, None) if r is None or e.dtype.bits > 16 else r
        if deep and isinstance(e, Opaque) and e.values is not None:
            v = e.values(ranges)
            return (t[0] if v[0] is None else v[0] if t[0] is None else max(v[0], t[0]),
                    t[1] if v[1] is None else v[1] if t[1] is None else min(v[1], t[1]))
        return t
    if isinstance(e, Cast):
        a = interval(e.a, ranges, deep)
        r = type_range(e.type_)
        if r is None:
            return a
        if e.a.dtype.is_float:
            a = (None if a[0] is None else math.trunc(a[0]) - (a[0] < 0),
                 None if a[1] is None else math.trunc(a[1]))
        if a[0] is not None and a[1] is not None and r[0] <= a[0] and a[1] <= r[1]:
            return a
        return r if e.type_.bits <= 16 else (None, None)
    if isinstance(e, Select):
        a, b = interval(e.a, ranges, deep), interval(e.b, ranges, deep)
        known = _truth(e.cond, ranges, deep)
        if known is not None:
            return a if known else b
        return (_opt(min, a[0], b[0]), _opt(max, a[1], b[1]))
    if isinstance(e, Call) and e.fn == "abs":
        a = interval(e.args[0], ranges, deep)
        if a[0] is not None and a[0] >= 0:
            return a
        if a[0] is None or a[1] is None:
            return (0, None)
        return (0 if a[1] >= 0 else -a[1], max(-a[0], a[1]))
    if isinstance(e, Unary) and e.op == "neg":
        a = interval(e.a, ranges, deep)
        return (None if a[1] is None else -a[1], None if a[0] is None else -a[0])
    if isinstance(e, Call) and e.fn in ("floor", "ceil", "round", "trunc"):
        a = interval(e.args[0], ranges, deep)
        return (None if a[0] is None else math.floor(a[0]),
                None if a[1] is None else math.ceil(a[1]))
    if isinstance(e, Binary):
        return _binary(e, interval(e.a, ranges, deep), interval(e.b, ranges, deep))
    if isinstance(e, Call) and e.fn in _BIT_OPS:
        return _bits(e, [interval(a, ranges, deep) for a in e.args])
    if isinstance(e, Call) and e.fn in ("popcount", "clz", "ctz"):
        return (0, e.dtype.bits)  # a count of the operand's bits, as Halide bounds it
    return (None, None)


_CMP = {"lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
        "ge": lambda x, y: x >= y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y}


def _truth(c: Expr, ranges: dict[str, tuple[int, int]], deep: bool) -> bool | None:
    """The value of a comparison of two constants (Halide's boundary conditions select on
    such conditions, e.g. the sign of a constant modulus); None when not constant."""
    if isinstance(c, Const) and c.type_.is_bool:
        return bool(c.value)
    if isinstance(c, Binary) and c.op in _CMP:
        a, b = interval(c.a, ranges, deep), interval(c.b, ranges, deep)
        if None not in a and None not in b and a[0] == a[1] and b[0] == b[1]:
            return bool(_CMP[c.op](a[0], b[0]))
    return None


def _opt(f: object, a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else f(a, b)  # type: ignore[operator]


def _binary(e: Binary, a: Interval, b: Interval) -> Interval:
    op = e.op
    if op == "add":
        return (_opt(lambda x, y: x + y, a[0], b[0]), _opt(lambda x, y: x + y, a[1], b[1]))
    if op == "sub":
        return (_opt(lambda x, y: x - y, a[0], b[1]), _opt(lambda x, y: x - y, a[1], b[0]))
    if op == "min":
        lo = _opt(min, a[0], b[0])
        hi = b[1] if a[1] is None else a[1] if b[1] is None else min(a[1], b[1])
        return (lo, hi)
    if op == "max":
        lo = b[0] if a[0] is None else a[0] if b[0] is None else max(a[0], b[0])
        return (lo, _opt(max, a[1], b[1]))
    if op == "mod" and b[0] is not None and b[1] is not None and b[0] > 0 \
            and not e.type_.is_float:  # whatever a is: the remainder is in [0, b)
        return (0, b[1] - 1)
    if None in a or None in b:
        return (None, None)
    assert a[0] is not None and a[1] is not None and b[0] is not None and b[1] is not None
    if op == "mul":
        ps = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
        return (min(ps), max(ps))
    if op in ("div", "floordiv") and b[0] == b[1] and b[0] > 0:
        if e.type_.is_float:
            return (a[0] / b[0], a[1] / b[0])
        return (a[0] // b[0], a[1] // b[0])
    return (None, None)


_BIT_OPS = frozenset({"bitand", "bitor", "bitxor", "bitnot", "shl", "shr"})


def _bits(e: Call, args: list[Interval]) -> Interval:
    """Bounds of a bit operation (``x ^ k`` in an index): values in [-2^w, 2^w) stay there
    under ``&``, ``|``, ``^`` and ``~`` (two's complement), ``a & b`` of a non-negative
    ``b`` is in [0, b], and shifts of a non-negative value by a non-negative amount scale
    it (when the result still fits the type); anything else is the type's range."""
    r = type_range(e.type_)
    assert r is not None
    whole: Interval = r if e.type_.bits <= 16 else (None, None)
    if any(None in a for a in args):
        if e.fn == "bitand" and any(a[0] is not None and a[0] >= 0 and a[1] is not None
                                    for a in args):
            return (0, min(a[1] for a in args if a[0] is not None and a[0] >= 0
                           and a[1] is not None))
        return whole
    ivs = [(int(a[0]), int(a[1])) for a in args]  # type: ignore[arg-type]
    if e.fn in ("shl", "shr"):
        (lo, hi), (slo, shi) = ivs
        if lo < 0 or slo < 0 or shi >= e.type_.bits:
            return whole
        out = (lo >> shi, hi >> slo) if e.fn == "shr" else (lo << slo, hi << shi)
        return out if out[1] <= r[1] else whole
    if e.fn == "bitand" and any(lo >= 0 for lo, _ in ivs):
        return (0, min(hi for lo, hi in ivs if lo >= 0))
    if e.fn == "bitnot":
        lo, hi = ivs[0]
        if e.type_.kind == "int":
            return (-hi - 1, -lo - 1)
        return (r[1] - hi, r[1] - lo) if lo >= 0 else whole
    w = max(max(hi.bit_length(), (-lo - 1).bit_length() if lo < 0 else 0) for lo, hi in ivs)
    if all(lo >= 0 for lo, _ in ivs):
        return (0, 2 ** w - 1)
    return (-(2 ** w), 2 ** w - 1) if e.type_.kind == "int" else whole


def hull(a: Box | None, b: Box) -> Box:
    """The smallest box holding ``a`` and ``b``; an empty box (a dimension with max <
    min: a Func read only by stages with no point) holds nothing, so adds nothing."""
    if a is None or is_empty(a):
        return list(b)
    if is_empty(b):
        return list(a)
    return [(min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b, strict=True)]


def is_empty(box: Box) -> bool:
    """Whether ``box`` holds no point (some dimension's max below its min)."""
    return any(hi < lo for lo, hi in box)
