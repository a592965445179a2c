"""Layer I expressions: a small typed tree built by Python operator overloading.

Semantics are fixed here, once, for every front-end and backend:

* integer ``/`` and ``//`` are *floor* division and integer ``%`` is the floor modulo (the
  result has the sign of the divisor), as in Python and numpy; float ``/`` is true division,
  float ``%`` is ``a - floor(a / b) * b``;
* mixed types promote as in :func:`middleend.types.promote`; a Python ``int`` literal takes
  the type of the other operand, a Python ``float`` literal takes the other operand's type if
  it is a float, else float32 (as Halide does);
* iterators and parameters read as values are int32 (index arithmetic in generated code is
  done in 64 bits regardless).

Expressions compare with ``==`` *symbolically* (it builds an EQ node), so the compiler itself
compares nodes by identity only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import types as t
from .types import DType


class Expr:
    """Base of every expression node. ``dtype`` is the value's element type."""

    __slots__ = ()
    __hash__ = object.__hash__

    @property
    def dtype(self) -> DType:  # pragma: no cover - every subclass defines it
        raise TypeError(f"{type(self).__name__} does not define its element type")

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __bool__(self) -> bool:
        raise TypeError(
            "a middle-end expression has no truth value: use me.select(...) or a predicate, "
            "and compare names rather than expressions"
        )

    # arithmetic -------------------------------------------------------------------------
    def __add__(self, o: Any) -> Expr: return binop("add", self, o)
    def __radd__(self, o: Any) -> Expr: return binop("add", o, self)
    def __sub__(self, o: Any) -> Expr: return binop("sub", self, o)
    def __rsub__(self, o: Any) -> Expr: return binop("sub", o, self)
    def __mul__(self, o: Any) -> Expr: return binop("mul", self, o)
    def __rmul__(self, o: Any) -> Expr: return binop("mul", o, self)
    def __truediv__(self, o: Any) -> Expr: return binop("div", self, o)
    def __rtruediv__(self, o: Any) -> Expr: return binop("div", o, self)
    def __floordiv__(self, o: Any) -> Expr: return binop("floordiv", self, o)
    def __rfloordiv__(self, o: Any) -> Expr: return binop("floordiv", o, self)
    def __mod__(self, o: Any) -> Expr: return binop("mod", self, o)
    def __rmod__(self, o: Any) -> Expr: return binop("mod", o, self)
    def __pow__(self, o: Any) -> Expr: return call("pow", self, o)
    def __neg__(self) -> Expr: return Unary("neg", self)
    def __pos__(self) -> Expr: return self
    def __abs__(self) -> Expr: return call("abs", self)
    def __invert__(self) -> Expr: return Unary("not", _as_bool(self))
    def __and__(self, o: Any) -> Expr: return binop("and", _as_bool(self), _as_bool(wrap(o)))
    def __rand__(self, o: Any) -> Expr: return binop("and", _as_bool(wrap(o)), _as_bool(self))
    def __or__(self, o: Any) -> Expr: return binop("or", _as_bool(self), _as_bool(wrap(o)))
    def __ror__(self, o: Any) -> Expr: return binop("or", _as_bool(wrap(o)), _as_bool(self))

    # comparisons build nodes --------------------------------------------------------------
    def __lt__(self, o: Any) -> Expr: return binop("lt", self, o)
    def __le__(self, o: Any) -> Expr: return binop("le", self, o)
    def __gt__(self, o: Any) -> Expr: return binop("gt", self, o)
    def __ge__(self, o: Any) -> Expr: return binop("ge", self, o)
    def __eq__(self, o: Any) -> Expr: return binop("eq", self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Expr: return binop("ne", self, o)  # type: ignore[override]

    def __repr__(self) -> str:
        from .printing import expr_str

        return expr_str(self)


@dataclass(frozen=True, eq=False, repr=False)
class Const(Expr):
    value: int | float | bool
    type_: DType

    @property
    def dtype(self) -> DType:
        return self.type_


@dataclass(frozen=True, eq=False, repr=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    type_: DType

    @property
    def dtype(self) -> DType:
        return self.type_

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True, eq=False, repr=False)
class Unary(Expr):
    op: str  # 'neg' | 'not'
    a: Expr

    @property
    def dtype(self) -> DType:
        return t.bool_ if self.op == "not" else self.a.dtype

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)


@dataclass(frozen=True, eq=False, repr=False)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr

    @property
    def dtype(self) -> DType:
        return self.a.dtype

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.a, self.b)


@dataclass(frozen=True, eq=False, repr=False)
class Cast(Expr):
    type_: DType
    a: Expr

    @property
    def dtype(self) -> DType:
        return self.type_

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)


@dataclass(frozen=True, eq=False, repr=False)
class Call(Expr):
    """A math intrinsic (``fn`` is one of :data:`INTRINSICS`)."""

    fn: str
    args: tuple[Expr, ...]
    type_: DType

    @property
    def dtype(self) -> DType:
        return self.type_

    def children(self) -> tuple[Expr, ...]:
        return self.args


@dataclass(frozen=True, eq=False, repr=False)
class Access(Expr):
    """A read of a computation's value, an input's element, or a buffer's current content.

    ``target`` is a Computation (a value read: the instance named by the indices), an Input,
    or a Buffer (a memory read: whatever the buffer holds at that point of the sequential
    order, resolved by exact dataflow).
    """

    target: Any
    indices: tuple[Expr, ...]

    @property
    def dtype(self) -> DType:
        return self.target.dtype

    def children(self) -> tuple[Expr, ...]:
        return self.indices


ARITH = ("add", "sub", "mul", "div", "floordiv", "mod", "min", "max")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
LOGIC = ("and", "or")

# name -> (number of args, result rule): 'float' = float result (ints become float32),
# 'same' = type of the (promoted) arguments, 'int' = the same, and only integer types.
# The bit operations are two's complement on the operands' type; ``shl(a, n)`` /
# ``shr(a, n)`` shift ``a`` by ``n`` bits (left wraps around, right is arithmetic for signed
# types), the other way for a negative ``n``; a shift by the type's width or more gives 0
# (the sign's fill, -1 or 0, for a right shift of a signed value), where C leaves it
# undefined, so every value of ``n`` has one result on every target. ``popcount``, ``clz``
# and ``ctz`` count the set, leading zero and trailing zero bits of the operand's two's
# complement bits, in the operand's type (``clz(0) == ctz(0) ==`` the width, where C's
# builtins are undefined), as Halide defines them. ``reinterpret`` ('bits': built by
# :func:`reinterpret`, not :func:`call`) is the same bits read as another type of the same
# width (a float's IEEE bits as an integer and back). ``fma(a, b, c)`` is ``a * b + c``
# rounded once (C99's ``fma``, IEEE 754's fusedMultiplyAdd): what a user asks for where the
# single rounding is the point (compensated sums, Julia's ``fma``) or to have the fused
# instruction in one expression while ``fp_contract`` stays off everywhere else.
INTRINSICS: dict[str, tuple[int, str]] = {
    "sin": (1, "float"), "cos": (1, "float"), "tan": (1, "float"), "asin": (1, "float"),
    "acos": (1, "float"), "atan": (1, "float"), "atan2": (2, "float"), "sinh": (1, "float"),
    "cosh": (1, "float"), "tanh": (1, "float"), "exp": (1, "float"), "log": (1, "float"),
    "sqrt": (1, "float"), "floor": (1, "float"), "ceil": (1, "float"), "round": (1, "float"),
    "trunc": (1, "float"), "pow": (2, "float"), "erf": (1, "float"), "abs": (1, "same"),
    "bitand": (2, "int"), "bitor": (2, "int"), "bitxor": (2, "int"), "bitnot": (1, "int"),
    "shl": (2, "int"), "shr": (2, "int"), "asinh": (1, "float"), "acosh": (1, "float"),
    "atanh": (1, "float"), "popcount": (1, "int"), "clz": (1, "int"), "ctz": (1, "int"),
    "reinterpret": (1, "bits"), "fma": (3, "float"),
}


def wrap(x: Any, like: DType | None = None) -> Expr:
    """Turn a Python number into a typed constant (see the module docstring for the rule)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(bool(x), t.bool_)
    if isinstance(x, int):
        if like is not None and not like.is_bool:
            return Const(float(x) if like.is_float else int(x), like)
        return Const(int(x), t.int32 if -(2**31) <= x < 2**31 else t.int64)
    if isinstance(x, float):
        return Const(float(x), like if like is not None and like.is_float else t.float32)
    raise TypeError(f"cannot use {type(x).__name__} {x!r} in a middle-end expression")


def _as_bool(e: Expr) -> Expr:
    return e if e.dtype.is_bool else binop("ne", e, 0)


def binop(op: str, a: Any, b: Any) -> Expr:
    """Build a binary node, coercing literals and promoting types."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise TypeError(f"{op} needs at least one middle-end expression")
    ea = wrap(a, b.dtype if isinstance(b, Expr) else None)
    eb = wrap(b, ea.dtype)
    if op in LOGIC:
        return Binary(op, _as_bool(ea), _as_bool(eb), t.bool_)
    rt = t.promote(ea.dtype, eb.dtype)
    if ea.dtype != rt:
        ea = Cast(rt, ea)
    if eb.dtype != rt:
        eb = Cast(rt, eb)
    if op in COMPARE:
        return Binary(op, ea, eb, t.bool_)
    if op not in ARITH:
        raise ValueError(f"unknown binary operator {op!r}")
    if rt.is_bool:
        ea, eb, rt = Cast(t.uint8, ea), Cast(t.uint8, eb), t.uint8
    return Binary(op, ea, eb, rt)


def call(fn: str, *args: Any) -> Expr:
    """Build an intrinsic call; float intrinsics of integer arguments compute in float32."""
    if fn not in INTRINSICS:
        raise ValueError(f"unknown intrinsic {fn!r}; known: {sorted(INTRINSICS)}")
    n, rule = INTRINSICS[fn]
    if rule == "bits":
        raise TypeError(f"{fn} needs its result type: use reinterpret(dtype, e)")
    if len(args) != n:
        raise TypeError(f"{fn} takes {n} argument(s), got {len(args)}")
    exprs = [wrap(a) for a in args]
    if not any(isinstance(a, Expr) for a in args):
        raise TypeError(f"{fn} needs a middle-end expression argument")
    rt = exprs[0].dtype
    for e in exprs[1:]:
        rt = t.promote(rt, e.dtype)
    if rule == "float" and not rt.is_float:
        rt = t.float32
    if rule == "int" and not rt.is_int:
        raise TypeError(f"{fn} needs integer arguments, got {rt.name}")
    exprs = [e if e.dtype == rt else Cast(rt, e) for e in exprs]
    return Call(fn, tuple(exprs), rt)


def reinterpret(dtype: DType, e: Any) -> Expr:
    """The bits of ``e`` read as ``dtype``, a type of the same width (no conversion: the
    float 1.0 is the uint32 0x3f800000); booleans have no bits to reinterpret."""
    ex = wrap(e)
    if ex.dtype.bits != dtype.bits or ex.dtype.is_bool or dtype.is_bool:
        raise TypeError(f"reinterpret needs two types of one width (not bool), got "
                        f"{ex.dtype.name} as {dtype.name}")
    return ex if ex.dtype == dtype else Call("reinterpret", (ex,), dtype)


def select(cond: Any, a: Any, b: Any) -> Expr:
    """``cond ? a : b`` with ``a`` and ``b`` promoted to one type."""
    c = _as_bool(wrap(cond))
    ea = wrap(a, b.dtype if isinstance(b, Expr) else None)
    eb = wrap(b, ea.dtype)
    rt = t.promote(ea.dtype, eb.dtype)
    return Select(c, ea if ea.dtype == rt else Cast(rt, ea), eb if eb.dtype == rt else Cast(rt, eb))


def minimum(a: Any, b: Any) -> Expr:
    return binop("min", a, b)


def maximum(a: Any, b: Any) -> Expr:
    return binop("max", a, b)


def clamp(x: Any, lo: Any, hi: Any) -> Expr:
    return minimum(maximum(x, lo), hi)


def cast(dtype: DType, e: Any) -> Expr:
    ex = wrap(e)
    return ex if ex.dtype == dtype else Cast(dtype, ex)


def walk(e: Expr) -> Iterator[Expr]:
    """All nodes of ``e``, parents before children."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children()))


def _shallow_key(e: Expr) -> object:
    """A key equal for nodes of the same kind and attributes whose children are the same
    objects (children already shared by :func:`share_common`: a flat tuple, hashed in
    constant time however deep the expression)."""
    if isinstance(e, Const):
        return ("const", repr(e.value), e.type_.name)
    if isinstance(e, Binary):
        return (e.op, e.type_.name, id(e.a), id(e.b))
    if isinstance(e, Unary):
        return (e.op, id(e.a))
    if isinstance(e, Select):
        return ("select", id(e.cond), id(e.a), id(e.b))
    if isinstance(e, Cast):
        return ("cast", e.type_.name, id(e.a))
    if isinstance(e, Call):
        return ("call", e.fn, e.type_.name, *map(id, e.args))
    if isinstance(e, Access):
        # a Computation, Input, Buffer or a computation's buffer (``c.memory``), by name
        return ("access", type(e.target).__name__, e.target.name, *map(id, e.indices))
    if not e.children() and isinstance(getattr(e, "name", None), str):
        return (type(e).__name__, e.name, e.dtype.name)  # Var, Param
    return ("node", id(e))  # another kind: equal to itself only


def walk_shared(e: Expr) -> Iterator[Expr]:
    """Each distinct node of ``e`` once (by identity), parents before children: an
    expression with shared subtrees (an inlined pipeline's) costs its number of distinct
    nodes, not the size of the tree it stands for."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(reversed(n.children()))


def _with_children(e: Expr, kids: Sequence[Expr]) -> Expr:
    """``e`` with its children replaced (same node kind and attributes)."""
    if isinstance(e, Binary):
        return Binary(e.op, kids[0], kids[1], e.type_)
    if isinstance(e, Unary):
        return Unary(e.op, kids[0])
    if isinstance(e, Select):
        return Select(kids[0], kids[1], kids[2])
    if isinstance(e, Cast):
        return Cast(e.type_, kids[0])
    if isinstance(e, Call):
        return Call(e.fn, tuple(kids), e.type_)
    if isinstance(e, Access):
        return Access(e.target, tuple(kids))
    raise TypeError(f"cannot rebuild a {type(e).__name__} node")  # pragma: no cover


def share_common(e: Expr, table: dict[object, Expr]) -> Expr:
    """``e`` with structurally identical subexpressions as one object (hash-consing over
    ``table``; the table keeps its nodes alive). The program is
    the same; what changes is that a repeated subexpression is one node however the
    front-end built it (a Python variable used twice, the same text written twice, or an
    expression rebuilt by the wire format), so passes that visit each node once and
    printers that compute a shared value once give the same result for all."""
    # by identity, for this call only (``e``'s nodes are alive until it returns); the
    # table's keys name children by identity, which its own nodes keep alive
    memo: dict[int, Expr] = {}

    def go(n: Expr) -> Expr:
        got = memo.get(id(n))
        if got is not None:
            return got
        kids = n.children()
        new = [go(c) for c in kids]
        m = _with_children(n, new) if any(a is not b for a, b in zip(new, kids,
                                                                     strict=True)) else n
        r = table.setdefault(_shallow_key(m), m)
        memo[id(n)] = r
        return r

    return go(e)


def rebuild(e: Expr, f: Callable[[Expr], Expr | None],
            memo: dict[int, Expr] | None = None) -> Expr:
    """Bottom-up rewrite: ``f`` returns a replacement for a node or None to keep it.

    ``memo`` (an empty dict, for a ``f`` that depends on the node only): a subtree shared
    by several parents is rewritten once and stays shared in the result, so rewriting an
    inlined pipeline costs its distinct nodes, not its tree size."""
    if memo is not None:
        got = memo.get(id(e))
        if got is not None:
            return got
    r = f(e)
    if r is None:
        if isinstance(e, Binary):
            r = Binary(e.op, rebuild(e.a, f, memo), rebuild(e.b, f, memo), e.type_)
        elif isinstance(e, Unary):
            r = Unary(e.op, rebuild(e.a, f, memo))
        elif isinstance(e, Select):
            r = Select(rebuild(e.cond, f, memo), rebuild(e.a, f, memo), rebuild(e.b, f, memo))
        elif isinstance(e, Cast):
            r = Cast(e.type_, rebuild(e.a, f, memo))
        elif isinstance(e, Call):
            r = Call(e.fn, tuple(rebuild(a, f, memo) for a in e.args), e.type_)
        elif isinstance(e, Access):
            r = Access(e.target, tuple(rebuild(a, f, memo) for a in e.indices))
        else:
            r = e
    if memo is not None:
        memo[id(e)] = r
    return r


def as_index_tuple(idx: Any) -> tuple[Expr, ...]:
    """Normalise ``x[i]`` / ``x[i, j]`` subscripts into a tuple of expressions."""
    items: Sequence[Any] = idx if isinstance(idx, tuple) else (idx,)
    return tuple(wrap(i) for i in items)
