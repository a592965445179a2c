"""Julia expressions (:mod:`.jast`) to middle-end expressions, with Julia's semantics.

Two modes. ``index`` builds the Int arithmetic of array indices, loop bounds and integer
conditions from the middle-end's int32 iterators, so that affine ones stay affine for ISL.
``value`` builds element computations and follows Julia's types (:mod:`.jtypes`):
literals and loop indices are Int64, ``/`` of Ints is a Float64 division, ``÷``/``%`` and
``div``/``rem`` truncate (``fld``/``mod`` floor), ``x^2`` is ``x*x``, and the math functions
of Ints compute in Float64. What has no exact counterpart raises ``UnsupportedJulia`` with
the line, rather than computing something close.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import middleend as me
from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.jtypes import ELEMENT, promote
from middleend.ir.expr import Cast, Const, Expr
from middleend.ir.types import DType


@dataclass
class Array:
    """A Julia array argument: its middle-end buffer (dims reversed: column-major Julia
    ``A[i, j]`` is row-major ``A[j-1, i-1]``) and its Julia sizes."""

    name: str
    buffer: me.Buffer
    sizes: tuple[int, ...]
    elem: DType
    prefix: tuple[Expr, ...] = ()  # leading indices of an expanded array (``store_in``)
    perm: tuple[int, ...] = ()  # a packed copy's index k is the source's index perm[k]
    split: tuple[int, ...] = ()  # per packed index: 0 whole, b > 0 modulo b, -b quotient
    # a pack with a loop name: only the reads with that variable as their index in the
    # copy's first dim read the copy; the others read ``source`` (frontends/julia/pack.py)
    along: str = ""
    source: Array | None = None


def blocked(x: Expr | int, b: int) -> Expr | int:
    """A 0-based index as a blocked copy holds it (``Pack.split``): itself (0), modulo
    ``b`` (b > 0) or the quotient by ``-b`` (b < 0), floored as ISL floors."""
    return x if not b else x % b if b > 0 else x // -b


def runs_along(indices: tuple[J.Expr, ...], dim: int, var: str) -> bool:
    """Whether the index in ``dim`` (0-based) is the bare variable ``var``."""
    return dim < len(indices) and isinstance(indices[dim], J.Name) and \
        indices[dim].id == var  # type: ignore[union-attr]


ScalarRead = Callable[[str, int], Expr]


_MATH = ("sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "tanh", "floor", "ceil", "round", "trunc", "erf")
_BOOL_OPS = ("&", "|", "⊻", "xor")
CALLS = frozenset({
    "size", "length", "+", "-", "*", "/", "÷", "div", "%", "rem", "fld", "mod", "cld", "^",
    "min", "max", "abs", "abs2", *_MATH, "muladd", "fma", "zero", "one", *ELEMENT, "ifelse",
    "!", *_BOOL_OPS})
"""Every function (and operator) a value or an index may call: what ``Exprs`` translates,
and what the up-front check (:mod:`.check`) lets through."""
_CMP = {"<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__", "==": "__eq__",
        "!=": "__ne__"}


def _const(v: int | float | bool, dt: DType) -> Expr:
    return Const(v, dt)


def _cast(dt: DType, e: Expr) -> Expr:
    return e if e.dtype == dt else Cast(dt, e)


class Exprs:
    """Translates the expressions of one statement. ``loops`` maps a Julia loop variable to
    its (int32, affine) value, ``consts`` the compile-time Ints (sizes, specialized Int
    arguments, locals assigned once from them), ``arrays`` the array arguments,
    ``fscalars`` the non-Int scalar arguments (one-element input buffers) and
    ``scalar`` reads a local scalar variable (the translator decides how)."""

    def __init__(self, loops: dict[str, Expr], consts: dict[str, int],
                 arrays: dict[str, Array], fscalars: dict[str, me.Buffer],
                 scalar: ScalarRead, scalars: set[str], function: str) -> None:
        self.loops, self.consts, self.arrays = loops, consts, arrays
        self.fscalars, self.scalar, self.scalars = fscalars, scalar, scalars
        self.function = function
        self.inlined: dict[str, int] = {}  # locals read as their expression: name -> line
        self.globals: dict[str, J.Expr] = {}  # module-level consts that are not Ints

    def fail(self, line: int, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(line, what, self.function)

    # ------------------------------------------------------------------ shared pieces
    def const_int(self, e: J.Expr) -> int | None:
        """The value of ``e`` if it is a compile-time Int (literal, size, constant local)."""
        if isinstance(e, J.Num) and e.type == "Int64":
            return int(e.value)
        if isinstance(e, J.Name) and e.id in self.consts:
            return self.consts[e.id]
        if isinstance(e, J.Call) and e.fn in ("size", "length") and e.args and \
                isinstance(e.args[0], J.Name) and e.args[0].id in self.arrays:
            return self.size_of(e)
        if isinstance(e, J.Call) and e.fn in ("+", "-", "*", "÷", "%", "div", "rem",
                                                "fld", "mod", "cld", "max", "min"):
            vals = [self.const_int(a) for a in e.args]
            if any(v is None for v in vals):
                return None
            return _fold_int(e.fn, [int(v) for v in vals if v is not None], e.line, self)
        return None

    def size_of(self, e: J.Call) -> int:
        arr = self.arrays[e.args[0].id]  # type: ignore[union-attr]
        if e.fn == "length" and len(e.args) == 1:
            n = 1
            for s in arr.sizes:
                n *= s
            return n
        if e.fn == "size" and len(e.args) == 2:
            d = self.const_int(e.args[1])
            if d is None or d < 1:
                raise self.fail(e.line, "size(A, d) needs a constant dimension d >= 1")
            return arr.sizes[d - 1] if d <= len(arr.sizes) else 1
        raise self.fail(e.line, f"{e.fn} with {len(e.args)} arguments in an expression")

    # ------------------------------------------------------------------ index mode
    def index(self, e: J.Expr) -> Expr | int:
        """An Int expression (an index, a bound, an integer condition's operand)."""
        c = self.const_int(e)
        if c is not None:
            return c
        if isinstance(e, J.Name) and e.id in self.loops:
            return self.loops[e.id]
        if isinstance(e, J.Call) and e.fn in ("+", "-", "*") and len(e.args) == 2:
            a, b = self.index(e.args[0]), self.index(e.args[1])
            return a + b if e.fn == "+" else a - b if e.fn == "-" else a * b  # type: ignore
        if isinstance(e, J.Call) and e.fn == "-" and len(e.args) == 1:
            return -self.index(e.args[0])  # type: ignore[operator]
        if isinstance(e, J.Call) and e.fn == "+" and len(e.args) == 1:
            return self.index(e.args[0])
        if isinstance(e, J.Call) and e.fn in ("÷", "div", "%", "rem", "fld", "mod", "cld") \
                and len(e.args) == 2:
            return _int_div(e.fn, _ex(self.index(e.args[0])), _ex(self.index(e.args[1])))
        if isinstance(e, J.Call) and e.fn in ("min", "max") and len(e.args) >= 2:
            out = _ex(self.index(e.args[0]))
            for a in e.args[1:]:
                f = me.min if e.fn == "min" else me.max
                out = f(out, _ex(self.index(a)))
            return out
        v = self.value(e)
        if not v.dtype.is_int:
            raise self.fail(getattr(e, "line", 0), f"non-integer index {_show(e)}")
        return _cast(me.int32, v)

    # ------------------------------------------------------------------ value mode
    def value(self, e: J.Expr) -> Expr:
        line = getattr(e, "line", 0)
        if isinstance(e, J.Num):
            if e.type not in ELEMENT:
                raise self.fail(line, f"literal of type {e.type}")
            return _const(e.value, ELEMENT[e.type])
        if isinstance(e, J.Name):
            return self._name(e)
        if isinstance(e, J.Ref):
            return self.read(e)
        if isinstance(e, J.Compare):
            return self.cond(e)
        if isinstance(e, J.Logic):
            return self.cond(e)
        if isinstance(e, J.Ternary):
            a, b = self.value(e.a), self.value(e.b)
            t = promote(a.dtype, b.dtype)
            return me.select(self.cond(e.cond), _cast(t, a), _cast(t, b))
        if isinstance(e, J.Call):
            return self._call(e)
        raise self.fail(line, f"expression {_show(e)}")

    def _name(self, e: J.Name) -> Expr:
        if e.id in self.consts:
            return _const(self.consts[e.id], me.int64)
        if e.id in self.loops:
            return _cast(me.int64, self.loops[e.id])
        if e.id in self.fscalars:
            return self.fscalars[e.id][0]
        if e.id in self.scalars:
            return self.scalar(e.id, e.line)
        if e.id in ("true", "false"):
            return _const(e.id == "true", me.bool_)
        if e.id in ("pi", "π"):
            return _const(3.141592653589793, me.float64)
        if e.id in self.globals:
            return self.value(self.globals[e.id])
        if e.id in self.arrays:
            raise self.fail(e.line, f"array {e.id!r} used as a value (index it: {e.id}[...])")
        if e.id in self.inlined:
            raise self.fail(e.line, f"local {e.id!r} read where its assignment (line "
                            f"{self.inlined[e.id]}) does not reach: before it, or outside "
                            "the loop that assigns it (Julia raises UndefVarError)")
        raise self.fail(e.line, f"unknown name {e.id!r}")

    def read(self, e: J.Ref) -> Expr:
        arr = self.arrays.get(e.array)
        if arr is None:
            raise self.fail(e.line, f"indexing {e.array!r}, which is not an array argument")
        if arr.along and arr.source is not None and \
                not runs_along(e.indices, arr.perm[0], arr.along):
            arr = arr.source
        return arr.buffer[self.subscript(arr, e)]

    def subscript(self, arr: Array, e: J.Ref) -> tuple[Expr | int, ...]:
        """Julia's 1-based column-major ``A[i, j]`` as the buffer's ``[j - 1, i - 1]``."""
        if len(e.indices) != len(arr.sizes):
            raise self.fail(e.line, f"{e.array}[...] with {len(e.indices)} indices on a "
                            f"{len(arr.sizes)}-d array (linear or partial indexing)")
        idx = [self.index(i) - 1 for i in e.indices]  # type: ignore[operator]
        if arr.perm:
            idx = [blocked(idx[p], b) for p, b in
                   zip(arr.perm, arr.split or (0,) * len(arr.perm), strict=True)]
        return arr.prefix + tuple(reversed(idx))

    def cond(self, e: J.Expr) -> Expr:
        """A Bool condition; comparisons of Ints compare in index mode (exact, affine)."""
        line = getattr(e, "line", 0)
        if isinstance(e, J.Logic):
            a, b = self.cond(e.a), self.cond(e.b)
            return (a & b) if e.op == "&&" else (a | b)
        if isinstance(e, J.Call) and e.fn == "!" and len(e.args) == 1:
            return ~self.cond(e.args[0])
        if isinstance(e, J.Compare):
            out: Expr | None = None
            for k, op in enumerate(e.ops):
                if op not in _CMP:
                    raise self.fail(line, f"comparison {op}")
                x, y = e.operands[k], e.operands[k + 1]
                if self.is_int(x) and self.is_int(y):
                    a, b = _ex(self.index(x)), _ex(self.index(y))
                else:
                    a, b = self.value(x), self.value(y)
                    t = promote(a.dtype, b.dtype)
                    a, b = _cast(t, a), _cast(t, b)
                c = getattr(a, _CMP[op])(b)
                out = c if out is None else out & c
            assert out is not None
            return out
        v = self.value(e)
        if not v.dtype.is_bool:
            raise self.fail(line, f"condition {_show(e)} is not a Bool")
        return v

    def is_int(self, e: J.Expr) -> bool:
        """Whether ``e`` is Int arithmetic on indices and constants (no element reads)."""
        if self.const_int(e) is not None:
            return True
        if isinstance(e, J.Name):
            return e.id in self.loops
        if isinstance(e, J.Call) and e.fn in ("+", "-", "*", "÷", "div", "%", "rem", "fld",
                                                "mod", "cld", "min", "max"):
            return all(self.is_int(a) for a in e.args)
        return False

    def _call(self, e: J.Call) -> Expr:
        fn, args, line = e.fn, e.args, e.line
        if self.is_int(e):
            return _cast(me.int64, _ex(self.index(e)))
        if fn in ("size", "length"):
            return _const(self.size_of(e), me.int64)
        if fn in ("+", "-", "*") and len(args) == 2:
            a, b = self.value(args[0]), self.value(args[1])
            t = promote(a.dtype, b.dtype)
            a, b = _cast(t, a), _cast(t, b)
            if t.is_bool:
                a, b, t = _cast(me.int64, a), _cast(me.int64, b), me.int64
            return a + b if fn == "+" else a - b if fn == "-" else a * b
        if fn in ("-", "+") and len(args) == 1:
            a = self.value(args[0])
            return -a if fn == "-" else a
        if fn == "/" and len(args) == 2:
            a, b = self.value(args[0]), self.value(args[1])
            t = promote(a.dtype, b.dtype)
            t = t if t.is_float else me.float64
            return _cast(t, a) / _cast(t, b)
        if fn in ("÷", "div", "%", "rem", "fld", "mod", "cld") and len(args) == 2:
            a, b = self.value(args[0]), self.value(args[1])
            t = promote(a.dtype, b.dtype)
            if not t.is_int:
                raise self.fail(line, f"{fn} of non-integers")
            return _int_div(fn, _cast(t, a), _cast(t, b))
        if fn == "^" and len(args) == 2:
            return self._pow(args[0], args[1], line)
        if fn in ("min", "max") and len(args) >= 2:
            vals = [self.value(a) for a in args]
            t = vals[0].dtype
            for v in vals[1:]:
                t = promote(t, v.dtype)
            out = _cast(t, vals[0])
            for v in vals[1:]:
                out = (me.min if fn == "min" else me.max)(out, _cast(t, v))
            return out
        if fn in ("abs", "abs2") and len(args) == 1:
            a = self.value(args[0])
            return a * a if fn == "abs2" else me.abs(a)
        if fn in _MATH and len(args) == 1:
            a = self.value(args[0])
            if not a.dtype.is_float:
                if fn in ("floor", "ceil", "round", "trunc"):
                    return a
                a = _cast(me.float64, a)
            return getattr(me, fn)(a)
        if fn in ("muladd", "fma") and len(args) == 3:
            # Julia's fma rounds once; muladd lets the compiler fuse, and Julia does on
            # machines with FMA instructions: both are the fused operation here (an
            # integer one is exact either way)
            x, y, z = (self.value(a) for a in args)
            t = promote(promote(x.dtype, y.dtype), z.dtype)
            if t.is_float:
                return me.fma(_cast(t, x), _cast(t, y), _cast(t, z))
            return _cast(t, x) * _cast(t, y) + _cast(t, z)
        if fn in ("zero", "one") and len(args) == 1:
            t = self._type_arg(args[0])
            return _const(0 if fn == "zero" else 1, t)
        if fn in ELEMENT and len(args) == 1:
            a = self.value(args[0])
            t = ELEMENT[fn]
            if t.is_int and a.dtype.is_float:
                raise self.fail(line, f"{fn}({_show(args[0])}) of a float (Julia raises "
                                "InexactError unless it is integral; use floor/round first)")
            return _cast(t, a)
        if fn == "ifelse" and len(args) == 3:
            return self.value(J.Ternary(args[0], args[1], args[2], line))
        if fn == "!" and len(args) == 1:
            return ~self.cond(args[0])
        if fn in _BOOL_OPS and len(args) == 2:
            a, b = self.value(args[0]), self.value(args[1])
            if not (a.dtype.is_bool and b.dtype.is_bool):
                raise self.fail(line, f"bitwise {fn} of {a.dtype.name} and {b.dtype.name} "
                                f"in {_show(e)} (& | ⊻ xor are translated on Bools only)")
            # both sides evaluated, as Julia's & does (unlike &&): they are pure here
            return a & b if fn == "&" else a | b if fn == "|" else a != b
        raise self.fail(line, f"call to {fn}({', '.join(_show(a) for a in args)})")

    def _type_arg(self, e: J.Expr) -> DType:
        if isinstance(e, J.Name) and e.id in ELEMENT:
            return ELEMENT[e.id]
        if isinstance(e, J.Call) and e.fn == "eltype" and len(e.args) == 1 and \
                isinstance(e.args[0], J.Name) and e.args[0].id in self.arrays:
            return self.arrays[e.args[0].id].elem
        return self.value(e).dtype

    def _pow(self, base: J.Expr, exp: J.Expr, line: int) -> Expr:
        b = self.value(base)
        k = self.const_int(exp)
        if k is not None and 0 <= k <= 4:
            if k == 0:
                return _const(1, b.dtype)
            out = b
            for _ in range(k - 1):
                out = out * b
            return out
        if b.dtype.is_int and (k is None or k < 0):
            raise self.fail(line, f"integer power {_show(base)}^{_show(exp)}")
        x = self.value(exp)
        t = promote(b.dtype, x.dtype)
        t = t if t.is_float else me.float64
        return me.pow(_cast(t, b), _cast(t, x))


def _ex(v: Expr | int) -> Expr:
    return v if isinstance(v, Expr) else Const(v, me.int32)


def _int_div(fn: str, a: Expr, b: Expr) -> Expr:
    """Julia's integer division family on the middle-end's floor division/modulo:
    ``÷``/``div``/``%``/``rem`` truncate toward zero, ``fld``/``mod`` floor, ``cld`` ceils."""
    a, b = _ex(a), _ex(b)
    if fn in ("fld",):
        return a // b
    if fn == "mod":
        return a % b
    if fn == "cld":
        return -((-a) // b)
    q = a // b
    # floor and truncation differ when the signs differ and the division is inexact
    tq = me.select(((a % b) != 0) & ((a < 0) != (b < 0)), q + 1, q)
    if fn in ("÷", "div"):
        return tq
    return a - b * tq


def _fold_int(fn: str, v: list[int], line: int, ex: Exprs) -> int:
    if fn == "-" and len(v) == 1:
        return -v[0]
    if fn == "+" and len(v) == 1:
        return v[0]
    if fn in ("max", "min"):
        return max(v) if fn == "max" else min(v)
    if len(v) != 2:
        raise ex.fail(line, f"{fn} with {len(v)} arguments")
    a, b = v
    if fn == "+":
        return a + b
    if fn == "-":
        return a - b
    if fn == "*":
        return a * b
    if b == 0:
        raise ex.fail(line, f"integer division by zero ({a} {fn} 0)")
    if fn in ("fld", "mod", "cld"):  # floor (mod: the divisor's sign) and ceiling
        return a // b if fn == "fld" else a % b if fn == "mod" else -(-a // b)
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    return q if fn in ("÷", "div") else a - b * q


def _show(e: J.Expr) -> str:
    if isinstance(e, J.Num):
        return repr(e.value)
    if isinstance(e, J.Name):
        return e.id
    if isinstance(e, J.Ref):
        return f"{e.array}[{', '.join(_show(i) for i in e.indices)}]"
    if isinstance(e, J.Call):
        if len(e.args) == 2 and not e.fn.isidentifier():
            return f"{_show(e.args[0])} {e.fn} {_show(e.args[1])}"
        return f"{e.fn}({', '.join(_show(a) for a in e.args)})"
    return type(e).__name__
