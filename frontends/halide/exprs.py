"""Halide expressions (:class:`~.hir.HExpr`) to Layer I expressions, with Halide's semantics.

Semantics that differ from the middle-end's defaults are spelled out here, once:

* integer ``/`` and ``%`` are Euclidean (the remainder is never negative) and a division or
  modulo by zero gives 0 (measured on Halide 21: ``7 / -2 == -3``, ``7 % -2 == 1``,
  ``7 / 0 == 0``, ``7 % 0 == 0``); the middle-end's floor division agrees for positive
  divisors, so only other divisors need the longer form;
* ``abs`` of a signed integer has the unsigned type of the same width, ``absd`` too;
* ``saturating_cast`` clamps to the target's range in a type wide enough for both, then
  converts;
* ``likely``, ``promise_clamped`` and ``strict_float`` are hints: their value is the first
  argument (Halide 21 writes ``strict_float`` as ``strict_add``, ...: see
  :mod:`.intrinsics`);
* integer shifts by a constant are ``a * 2^c`` / ``a / 2^c`` (Halide's simplifier rewrites
  them so), ``a & (2^k - 1)`` is ``a % 2^k`` and ``a & ~(2^k - 1)`` is ``a - a % 2^k``
  (two's complement agrees for negative values): an index stays affine; other ``&``,
  ``|``, ``^``, ``~`` and shifts by a computed amount are the middle-end's bit
  intrinsics (``bitand``... ``shl``, ``shr``), whose shifts go the other way for a
  negative amount, as Halide's do.

Anything else unknown raises :class:`~.errors.UnsupportedHalideFeature`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import middleend as me
from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.fixedpoint import FIXED_POINT, fixed_point
from frontends.halide.hir import HExpr, HFunc, HType
from frontends.halide.intrinsics import HYPERBOLIC, bit_intrinsic, fast_extern
from frontends.halide.lerp import lerp
from frontends.halide.lerp import refusal as lerp_refusal
from frontends.halide.minmax import float_min_max
from frontends.halide.noops import is_print
from middleend.ir import types as t
from middleend.ir.expr import Cast, Const, Expr, binop, reinterpret, select
from middleend.ir.expr import call as intrinsic
from middleend.ir.types import DType

MAX_DEPTH = 400  # the middle-end's own passes recurse over expressions too

_TYPES: dict[tuple[str, int], DType] = {
    ("int", 8): t.int8,
    ("int", 16): t.int16,
    ("int", 32): t.int32,
    ("int", 64): t.int64,
    ("uint", 8): t.uint8,
    ("uint", 16): t.uint16,
    ("uint", 32): t.uint32,
    ("uint", 64): t.uint64,
    ("uint", 1): t.bool_,
    ("float", 16): t.float16,
    ("float", 32): t.float32,
    ("float", 64): t.float64,
}

_BINARY = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Min": "min",
    "Max": "max",
    "EQ": "eq",
    "NE": "ne",
    "LT": "lt",
    "LE": "le",
    "GT": "gt",
    "GE": "ge",
    "And": "and",
    "Or": "or",
}

# PureExtern math functions: Halide name stem -> middle-end intrinsic
_MATH = {
    "sqrt": "sqrt",
    "exp": "exp",
    "log": "log",
    "pow": "pow",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "atan2": "atan2",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "round",
    "abs": "abs",
    "erf": "erf",
    **HYPERBOLIC,
}
_HINTS = frozenset(
    {"likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped", "strict_float"}
)


def dtype_of(ht: HType | None, func: str | None, stage: int | None) -> DType:
    """The middle-end element type of a Halide scalar type (vectors and bfloat refused)."""
    if ht is None:
        raise UnsupportedHalideFeature(func, stage, "an expression without a type")
    dt = _TYPES.get((ht.code, ht.bits))
    if dt is None or ht.lanes != 1:
        raise UnsupportedHalideFeature(func, stage, f"the type {ht}")
    return dt


def type_range(dt: DType) -> tuple[int, int] | None:
    """The values an integer type can hold (None for floats)."""
    if dt.is_bool:
        return (0, 1)
    if dt.kind == "int":
        return (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1)
    if dt.kind == "uint":
        return (0, 2**dt.bits - 1)
    return None


@dataclass
class Scope:
    """What names mean while translating one stage of one Func.

    ``call`` resolves a Func call (name, value index, translated args) and ``image`` an
    image read (parameter or buffer name, args); ``variable`` resolves a Variable carrying a
    parameter name (scalar Params, ``inp.extent.0``...)."""

    func: str
    stage: int
    vars: dict[str, Expr]
    call: Callable[[str, int, tuple[Expr, ...]], Expr]
    image: Callable[[str, tuple[Expr, ...]], Expr]
    variable: Callable[[HExpr], Expr]
    lets: dict[str, Expr] = field(default_factory=dict)
    funcs: Callable[[str], HFunc] | None = None  # the pipeline's Funcs by name

    def unsupported(self, construct: str) -> UnsupportedHalideFeature:
        return UnsupportedHalideFeature(self.func, self.stage, construct)


def _is_zero(e: Expr) -> bool:
    return isinstance(e, Const) and not e.dtype.is_bool and e.value == 0


def const(value: int | float | bool, dt: DType) -> Expr:
    if dt.is_bool:
        return Const(bool(value), dt)
    return Const(float(value) if dt.is_float else int(value), dt)


def translate(e: HExpr, scope: Scope, depth: int = 0) -> Expr:
    """The Layer I expression of ``e`` in ``scope``."""
    if depth > MAX_DEPTH:
        raise scope.unsupported(f"an expression nested deeper than {MAX_DEPTH} levels")
    k = e.kind

    def sub(x: HExpr) -> Expr:
        return translate(x, scope, depth + 1)

    if k in ("IntImm", "UIntImm", "FloatImm"):
        assert e.value is not None and not isinstance(e.value, str)
        return const(e.value, dtype_of(e.type, scope.func, scope.stage))
    if k == "Variable":
        return _variable(e, scope)
    if k == "Cast":
        dt = dtype_of(e.type, scope.func, scope.stage)
        a = sub(e.args[0])
        return a if a.dtype == dt else Cast(dt, a)
    if k == "Reinterpret":  # the same bits as another type of the same width
        return reinterpret(dtype_of(e.type, scope.func, scope.stage), sub(e.args[0]))
    if k in _BINARY:
        a, b = sub(e.args[0]), sub(e.args[1])
        if k == "Add" and a.dtype == b.dtype:
            # as Halide's simplifier does (x + 0 is x, floats included: Halide does not
            # keep -0.0 + 0.0 == +0.0), so ``f32(0) + sum`` costs no extra addition
            if _is_zero(a):
                return b
            if _is_zero(b):
                return a
        if k in ("Min", "Max") and a.dtype.is_float and a.dtype == b.dtype:
            return float_min_max(k, e.args[0], e.args[1], a, b, scope.funcs)
        return binop(_BINARY[k], a, b)
    if k == "Div":
        return _div(sub(e.args[0]), sub(e.args[1]))
    if k == "Mod":
        return _mod(sub(e.args[0]), sub(e.args[1]))
    if k == "Not":
        return ~sub(e.args[0])
    if k == "Select":
        return select(sub(e.args[0]), sub(e.args[1]), sub(e.args[2]))
    if k == "Let":
        value = sub(e.args[0])
        saved = scope.lets.get(e.name)
        scope.lets[e.name] = value
        try:
            return sub(e.args[1])
        finally:
            if saved is None:
                del scope.lets[e.name]
            else:
                scope.lets[e.name] = saved
    if k == "Call":
        if is_print(e):  # a no-op (noops.py warns)
            return sub(e.args[1])
        return _call(e, scope, [sub(a) for a in e.args])
    raise scope.unsupported(f"the expression node {k}")


def _variable(e: HExpr, scope: Scope) -> Expr:
    if e.name in scope.lets:
        return scope.lets[e.name]
    if e.param_name or e.image_name:
        return scope.variable(e)
    v = scope.vars.get(e.name)
    if v is None:
        raise scope.unsupported(
            f"the variable {e.name!r}, which is not a Var, RVar or Param of this stage"
        )
    dt = dtype_of(e.type, scope.func, scope.stage)
    return v if v.dtype == dt else Cast(dt, v)


def _int_const(e: Expr) -> int | None:
    while isinstance(e, Cast) and e.a.dtype.is_int:
        e = e.a
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _div(a: Expr, b: Expr) -> Expr:
    """Halide's division: true division of floats, Euclidean of integers, x / 0 == 0."""
    dt = t.promote(a.dtype, b.dtype)
    if dt.is_float:
        return binop("div", a, b)
    c = _int_const(b)
    zero = const(0, dt)
    if c is not None:
        if c == 0:
            return zero
        if c > 0 or dt.kind == "uint":
            return binop("floordiv", a, b)
        return -binop("floordiv", a, const(-c, dt))
    if dt.kind == "uint":
        return select(b == 0, zero, binop("floordiv", a, b))
    return select(b == 0, zero, select(b < 0, -binop("floordiv", a, -b), binop("floordiv", a, b)))


def _mod(a: Expr, b: Expr) -> Expr:
    """Halide's modulo: ``a - b * floor(a / b)`` for floats; for integers the Euclidean
    remainder, in [0, |b|), and x % 0 == 0."""
    dt = t.promote(a.dtype, b.dtype)
    if dt.is_float:
        return binop("mod", a, b)
    c = _int_const(b)
    if c is not None:
        if c == 0:
            return const(0, dt)
        return (
            binop("mod", a, const(abs(c), dt)) if c < 0 and dt.kind == "int" else binop("mod", a, b)
        )
    if dt.kind == "uint":
        return select(b == 0, const(0, dt), binop("mod", a, b))
    return select(b == 0, const(0, dt), binop("mod", a, select(b < 0, -b, b)))


def _unsigned(dt: DType) -> DType:
    return {8: t.uint8, 16: t.uint16, 32: t.uint32, 64: t.uint64}[dt.bits]


def saturating_cast(dt: DType, a: Expr) -> Expr:
    """Clamp ``a`` to ``dt``'s range (computing in a type that holds both), then convert."""
    src = a.dtype
    if dt.is_float or src == dt:
        return a if src == dt else Cast(dt, a)
    lo, hi = type_range(dt)  # type: ignore[misc]
    if src.is_float:
        # float32 cannot hold every int32 bound exactly: compare in float64
        wide = t.float64
        x = Cast(wide, a) if src != wide else a
        x = me.min(me.max(x, const(lo, wide)), const(hi, wide))
        return Cast(dt, x)
    slo, shi = type_range(src)  # type: ignore[misc]
    x = a
    if lo > slo:
        x = me.max(x, const(lo, src))
    if hi < shi:
        x = me.min(x, const(hi, src))
    return x if x.dtype == dt else Cast(dt, x)


def _call(e: HExpr, scope: Scope, args: Sequence[Expr]) -> Expr:
    ct, name = e.call_type, e.name
    if ct == "Halide":
        return scope.call(name, e.value_index, tuple(args))
    if ct == "Image":
        return scope.image(e.param_name or e.image_name or name, tuple(args))
    dt = dtype_of(e.type, scope.func, scope.stage)
    if ct == "PureIntrinsic" or ct == "Intrinsic":
        return _intrinsic(name, dt, list(args), scope)
    if ct == "PureExtern":
        stem, _, suffix = name.rpartition("_")
        if suffix in ("f16", "f32", "f64") and stem in _MATH:
            out = intrinsic(_MATH[stem], *args)
            return out if out.dtype == dt else Cast(dt, out)
        if name in ("is_nan_f16", "is_nan_f32", "is_nan_f64"):
            x = args[0]
            return x != x
        if stem in ("is_inf", "is_finite") and suffix in ("f16", "f32", "f64"):
            x = args[0]  # x - x is 0 for a finite x, NaN for an infinite or NaN one
            finite = (x - x) == const(0, x.dtype)
            return finite if stem == "is_finite" else (x == x) & ~finite
        if suffix in ("f16", "f32", "f64") and \
                (got := fast_extern(stem, dt, list(args))) is not None:
            return got
    raise scope.unsupported(f"the call {name!r} ({ct})")


def _intrinsic(name: str, dt: DType, args: list[Expr], scope: Scope) -> Expr:
    if name in _HINTS:
        return args[0]
    if name == "abs":
        x = args[0]
        out = intrinsic("abs", x)
        return out if out.dtype == dt else Cast(dt, out)
    if name == "absd":
        a, b = args
        if a.dtype.is_float:
            return intrinsic("abs", a - b)
        # |a - b| without overflow: max - min in the unsigned type of the same width
        u = _unsigned(a.dtype) if a.dtype.kind == "int" else a.dtype
        return Cast(u, me.max(a, b)) - Cast(u, me.min(a, b))
    if name == "saturating_cast":
        return saturating_cast(dt, args[0])
    if name == "lerp":
        zero, one, w = args
        if (got := lerp(zero, one, w)) is not None:
            return got
        raise scope.unsupported(f"lerp of {zero.dtype.name} and {one.dtype.name} values by a "
                                f"{w.dtype.name} weight ({lerp_refusal(zero, one, w)})")
    if name == "mux":
        idx, *vals = args
        out = vals[-1]
        for k in range(len(vals) - 2, -1, -1):
            out = select(idx == k, vals[k], out)
        return out
    if name == "round":
        return intrinsic("round", args[0])
    if name == "return_second":
        return args[1]
    if name == "if_then_else" and len(args) == 3:
        return select(args[0], args[1], args[2])
    if name in ("bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor") and dt.is_bool:
        # Python's ~, &, | and ^ on Halide booleans
        if name == "bitwise_not":
            return ~args[0]
        if name == "bitwise_xor":
            return args[0] != args[1]
        return args[0] & args[1] if name == "bitwise_and" else args[0] | args[1]
    if name in ("shift_left", "shift_right") and dt.is_int:
        return _shift(name, dt, args)
    if name == "bitwise_not" and dt.is_int and (c := _int_const(args[0])) is not None:
        c = ~c % 2 ** dt.bits  # a constant mask's complement, ~(2^k - 1)
        lo, hi = type_range(dt)  # type: ignore[misc]
        return const(c - 2 ** dt.bits if c > hi else c, dt)
    if name in _BITWISE and dt.is_int:
        args = [a if a.dtype == dt else Cast(dt, a) for a in args]
        if name == "bitwise_and" and (masked := _mask(dt, args)) is not None:
            return masked
        return intrinsic(_BITWISE[name], *args)
    if name in FIXED_POINT and (got := fixed_point(name, dt, args)) is not None:
        return got
    if (got := bit_intrinsic(name, dt, args)) is not None:
        return got
    raise scope.unsupported(f"the intrinsic {name!r}")


_BITWISE = {"bitwise_and": "bitand", "bitwise_or": "bitor", "bitwise_xor": "bitxor",
            "bitwise_not": "bitnot"}


def _shift(name: str, dt: DType, args: list[Expr]) -> Expr:
    """``a << b`` and ``a >> b``. By a constant: ``a * 2^c`` and ``a / 2^c``, Halide's own
    rewrite of them (its ``/`` of integers rounds down, as an arithmetic shift does; a
    negative ``c`` shifts the other way, as in Halide), which keeps an index affine. By a
    computed amount (or a constant past what a product holds): the middle-end's ``shl`` /
    ``shr``, in ``a``'s type. Halide gives ``b`` the width of ``a`` but may leave it of the
    other signedness (``u8 << i32`` is ``u32 << i32``): the amount is clamped to
    [-width, width], which every integer type of that width holds when ``a`` is signed, and
    a negative amount of an unsigned ``a`` becomes the other shift. Halide leaves a shift by
    the width or more undefined (its scalar and vector code differ); ours gives 0, or the
    sign's fill for a right shift."""
    a, b = args
    a = a if a.dtype == dt else Cast(dt, a)
    c = _int_const(b)
    lo, hi = type_range(dt)  # type: ignore[misc]
    if c is not None and abs(c) < dt.bits and 2 ** abs(c) <= hi:
        left = (name == "shift_left") == (c >= 0)
        p = const(2 ** abs(c), dt)
        return binop("mul", a, p) if left else _div(a, p)
    fn, other = ("shl", "shr") if name == "shift_left" else ("shr", "shl")
    if b.dtype == dt:
        return intrinsic(fn, a, b)
    n = dt.bits
    if b.dtype.kind == "uint":  # a is signed: [0, width] is one of its values
        return intrinsic(fn, a, Cast(dt, me.min(b, const(n, b.dtype))))
    amount = me.max(me.min(b, const(n, b.dtype)), const(-n, b.dtype))
    if dt.kind == "int":
        return intrinsic(fn, a, Cast(dt, amount))
    return select(amount < const(0, b.dtype), intrinsic(other, a, Cast(dt, -amount)),
                  intrinsic(fn, a, Cast(dt, amount)))


def _mask(dt: DType, args: list[Expr]) -> Expr | None:
    """``a & m`` with a constant mask of low bits (``2^k - 1``: ``a`` modulo ``2^k``, in
    [0, 2^k) for signed values too, as two's complement gives) or of high bits (its
    complement: ``a`` minus that), which keep an index affine; None for any other mask
    (the middle-end's ``bitand``)."""
    a, b = args
    m = _int_const(b)
    if m is None:
        a, b = b, a
        m = _int_const(b)
    if m is None:
        return None
    m %= 2 ** dt.bits  # the mask's bits
    low = (m + 1) & m == 0  # 0...01...1
    inv = 2 ** dt.bits - 1 - m
    if not low and (inv + 1) & inv != 0:
        return None
    k = (m if low else inv).bit_length()
    if k == dt.bits:
        return a if low else const(0, dt)
    if k == 0:
        return const(0, dt) if low else a
    lo, hi = type_range(dt)  # type: ignore[misc]
    if 2 ** k > hi:  # the sign bit alone: 2^k is not a value of the (signed) type
        neg = a < const(0, dt)
        return select(neg, a - const(lo, dt), a) if low else select(neg, const(lo, dt),
                                                                   const(0, dt))
    rem = _mod(a, const(2 ** k, dt))
    return rem if low else a - rem
