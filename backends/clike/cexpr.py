"""Printing of index expressions (IExpr), Layer I values and buffer accesses as C.

Kept apart from the loop printer so that the semantic rules of :mod:`middleend.expr`
(floor division, wrap-around of narrow integers, typed constants, 64-bit index arithmetic)
live in one place that can be reviewed against that docstring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import numpy as np

from middleend.ir.errors import TargetError
from middleend.ir.expr import Access, Binary, Call, Cast, Const, Expr, Select, Unary
from middleend.ir.intervals import Interval, iexpr_interval, redundant_operand, within
from middleend.ir.loopast import (
    BufAccess,
    BufferDecl,
    FnCall,
    IExpr,
    IInt,
    IOp,
    IterRef,
    IVar,
    LocalArg,
    LocalElement,
    ParamRef,
)
from middleend.ir.types import DType, float32, int64

from .cbits import reinterpret_name
from .cruntime import suffix
from .divmod import div_mod
from .narrow import Int32Subscript

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: `$` accepts a trailing newline

_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_BITS = {"bitand": "&", "bitor": "|", "bitxor": "^"}
_FLOAT_FNS = frozenset("sin cos tan asin acos atan atan2 sinh cosh tanh exp log sqrt floor "
                       "ceil trunc pow erf asinh acosh atanh fma".split())


def ident(name: str, what: str = "identifier") -> str:
    """Return ``name`` if it is a valid C identifier; printing anything else could inject
    arbitrary text into the generated source, so it is a hard error."""
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise TargetError(f"invalid C {what} {name!r}: expected [A-Za-z_][A-Za-z0-9_]*")
    return name


def _narrow(dt: DType) -> bool:
    """Types C promotes to int: their results must be cast back to wrap like numpy."""
    return dt.kind in ("int", "uint", "bool") and dt.bits < 32


def _int_literal(v: int, dt: DType) -> str:
    lo, hi = ((-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1) if dt.kind == "int"
              else (0, 2 ** dt.bits - 1))
    if not lo <= v <= hi:
        raise TargetError(f"constant {v} does not fit the element type {dt.name}")
    if dt.bits == 64:
        if dt.kind == "uint":
            return f"{v}ULL"
        if v == lo:
            return "(-9223372036854775807LL - 1LL)"
        return f"({v}LL)" if v < 0 else f"{v}LL"
    if dt.bits == 32:
        if dt.kind == "uint":
            return f"{v}U"
        if v == lo:
            return "(-2147483647 - 1)"
        return f"({v})" if v < 0 else str(v)
    return f"(({dt.c_name}){v})"


def _float_literal(v: float, dt: DType) -> str:
    if dt.bits == 16:  # a half value, exact as a float literal
        with np.errstate(over="ignore"):
            h = float(np.float16(v))
        return f"(({dt.c_name}){_float_literal(h, float32)})"
    if dt.bits == 32:
        with np.errstate(over="ignore"):
            v = float(np.float32(v))  # out of float32 range: inf, as the conversion gives
    if math.isnan(v):
        return "NAN" if dt.bits == 32 else "((double)NAN)"
    if math.isinf(v):
        inf = "INFINITY" if dt.bits == 32 else "((double)INFINITY)"
        return f"(-{inf})" if v < 0 else inf
    if dt.bits == 32:
        text = f"{float(np.float32(v)):.9g}"
    else:
        text = f"{float(v):.17g}"
    if not any(ch in text for ch in ".e"):
        text += ".0"
    text += "f" if dt.bits == 32 else ""
    return f"({text})" if text.startswith("-") else text


def const_c(value: int | float | bool, dt: DType) -> str:
    """A C literal of exactly type ``dt`` holding ``value``."""
    if dt.is_bool:
        return "1" if value else "0"
    if dt.is_float:
        return _float_literal(float(value), dt)
    if isinstance(value, float) and not value.is_integer():
        raise TargetError(f"non-integral constant {value!r} of integer type {dt.name}")
    return _int_literal(int(value), dt)


def _pow2(e: object) -> int | None:
    """k when ``e`` is the integer constant 2**k (k >= 1), else None."""
    while isinstance(e, Cast):
        e = e.a
    v = e.value if isinstance(e, Const) else e.value if isinstance(e, IInt) else None
    if isinstance(v, bool) or not isinstance(v, int) or v < 2 or v & (v - 1):
        return None
    return v.bit_length() - 1


def floor_div_c(a: str, b: IExpr) -> str:
    """Floor division of an int64 by an ISL divisor (a positive constant in practice)."""
    k = _pow2(b)
    return f"({a} >> {k})" if k is not None else f"me_fdiv_i64({a}, {iexpr_c(b)})"


def iexpr_c(e: IExpr) -> str:
    """An IExpr as a 64-bit C expression (loop bounds, bindings, allocation sizes)."""
    if isinstance(e, IInt):
        return _int_literal(int(e.value), int64)
    if isinstance(e, IVar):
        return ident(e.name, "index variable")
    if not isinstance(e, IOp):
        raise TargetError(f"unknown index expression node {type(e).__name__}")
    a = [iexpr_c(x) for x in e.args]
    op = e.op
    if op in _ARITH:
        return f"({a[0]} {_ARITH[op]} {a[1]})"
    if op == "neg":
        return f"(-{a[0]})"
    if op == "fdiv_q":
        return floor_div_c(a[0], e.args[1])
    if op == "pdiv_q":
        return f"({a[0]} / {a[1]})"
    if op in ("pdiv_r", "zdiv_r"):
        return f"({a[0]} % {a[1]})"
    if op in ("min", "max"):
        out = a[0]
        for x in a[1:]:
            out = f"me_{op}_i64({out}, {x})"
        return out
    if op == "select":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if op in _CMP:
        return f"({a[0]} {_CMP[op]} {a[-1]})"
    if op in ("and", "or"):
        return "(" + (" && " if op == "and" else " || ").join(a) + ")"
    if op == "not":
        return f"(!{a[0]})"
    raise TargetError(f"unknown index operator {op!r}")


class ExprPrinter:
    """Prints Layer I statement bodies. ``buffers`` gives the declaration of each buffer
    (for strides and dimension sizes), ``in_scope`` the names whose storage is visible at
    the point of printing (local buffers exist only inside their Alloc)."""

    def __init__(self, buffers: Mapping[str, BufferDecl], in_scope: set[str],
                 err: str = "&me_err") -> None:
        """``err``: the C expression of the pointer to the error flag (a local's address
        on the CPU, a kernel argument on a GPU)."""
        self.buffers = buffers
        self.in_scope = in_scope
        self.err = err
        # whether the target prints an atomic update (StmtInfo.atomic); a target that
        # cannot is refused by name. ``atomic_rmw`` prints it (computation, op, element,
        # operand, element type, buffer -> C); None: gcc's __atomic builtins (host code)
        self.atomics = False
        self.atomic_rmw: Callable[[str, str, str, str, DType, str], str] | None = None
        # whether the target's C has _Float16 (gcc on the host); float16 values are
        # refused by name elsewhere
        self.float16 = False
        # the statement being printed: the range of each of its iterators (by name) over
        # the loops around it, so that clamps that cannot bind there are not printed
        self.ranges: dict[str, Interval] = {}
        # the statement being printed: each iterator's binding (a linear function of the
        # loop counters, by iterator name) and the loop counters' ranges, so that a
        # subscript's ``// d`` and ``% d`` can be worked out without a division
        self.bindings: dict[str, IExpr] = {}
        self.loops: Mapping[str, Interval] = {}
        # the statement being printed: its shared float subexpressions, printed once into
        # locals (see ``hoist``), by node identity
        self.temps: dict[int, str] = {}
        # the leading arguments of a call of an inlined function (``FnCall``): what its C
        # function takes from the kernel (params, buffers, the error flag); None where the
        # target prints no such functions
        self.call_context: str | None = None
        # a target's replacement of some reads (the cpu target's deinterleaved stride-2
        # reads in a vector loop): the C text to print instead of the element, or None
        self.element_hook: Callable[[BufAccess, Mapping[str, IExpr]], str | None] | None = None

    def hoist(self, e: Expr) -> list[str]:
        """Declarations ``const T me_t<k> = ...;`` of the float subexpressions that ``e``
        shares (a node with several parents: an inlined pipeline repeats its producers'
        values, and printed as a tree the C grows with the number of paths, Halide's
        bilateral grid inlined to 400 KB for one statement); ``value`` then prints their
        names. Only nodes evaluated on every path are hoisted (not inside a select's
        branches or the right operand of ``&&`` / ``||``), so nothing is evaluated that
        the expression would not evaluate; floats only, so no integer index arithmetic
        changes width (``index`` computes in int64)."""
        parents: dict[int, int] = {}
        nodes: dict[int, Expr] = {}
        stack = [e]
        while stack:
            n = stack.pop()
            if id(n) in nodes:
                continue
            nodes[id(n)] = n
            for c in n.children():
                parents[id(c)] = parents.get(id(c), 0) + 1
                stack.append(c)
        always: set[int] = set()
        stack = [e]
        while stack:
            n = stack.pop()
            if id(n) in always:
                continue
            always.add(id(n))
            if isinstance(n, Select):
                stack.append(n.cond)
            elif isinstance(n, Binary) and n.op in ("and", "or"):
                stack.append(n.a)
            else:
                stack.extend(n.children())
        hoisted = {k for k in always if parents.get(k, 0) > 1 and nodes[k].dtype.is_float
                   and not isinstance(nodes[k], Const | IterRef | ParamRef)}
        lines: list[str] = []
        done: set[int] = set()

        def define(n: Expr) -> None:  # children first, iteratively (deep expressions)
            todo: list[tuple[Expr, bool]] = [(n, False)]
            while todo:
                x, ready = todo.pop()
                if id(x) in done:
                    continue
                if not ready:
                    todo.append((x, True))
                    todo.extend((c, False) for c in x.children())
                    continue
                done.add(id(x))
                if id(x) in hoisted:
                    name = f"me_t{len(self.temps)}"
                    lines.append(f"const {x.dtype.c_name} {name} = {self.value(x)};")
                    self.temps[id(x)] = name

        define(e)
        return lines

    # ------------------------------------------------------------------ buffer elements
    def element(self, acc: BufAccess) -> str:
        """``b_<buf>[linear index]``, with offsets subtracted and checked indices clamped."""
        if self.element_hook is not None:
            replaced = self.element_hook(acc, self.bindings)
            if replaced is not None:
                return replaced
        decl = self.buffers.get(acc.buffer)
        if decl is None:
            raise TargetError(f"access to undeclared buffer {acc.buffer!r}")
        if acc.buffer not in self.in_scope:
            raise TargetError(f"access to local buffer {acc.buffer!r} outside its Alloc node")
        if acc.type_ != decl.dtype:
            raise TargetError(f"access to buffer {acc.buffer!r} as {acc.type_.name}, but it is "
                              f"declared {decl.dtype.name}")
        rank = len(decl.sizes)
        if len(acc.indices) != rank:
            raise TargetError(f"access to buffer {acc.buffer!r} with {len(acc.indices)} "
                              f"indices; it has {rank} dimensions")
        if acc.offset_names is not None and len(acc.offset_names) != rank:
            raise TargetError(f"access to buffer {acc.buffer!r}: {len(acc.offset_names)} "
                              f"offsets for {rank} dimensions")
        buf = ident(acc.buffer, "buffer name")
        if acc.checked and acc.offset_names is None and self._fits_int32(acc, decl):
            # a gather whose every subscript is provably in bounds: a 32-bit offset lets
            # the vectorizer use 8-lane gathers instead of two 4-lane ones, and 32-bit
            # subscripts (where every intermediate value provably fits) 8-lane clamps
            narrow = Int32Subscript(self.ranges, self.value, self.index)
            return _linear(buf, [narrow.text(x) or self._subscript(acc, k)
                                 for k, x in enumerate(acc.indices)], "int32_t")
        subs = []
        for k in range(rank):
            text = self._subscript(acc, k)
            subs.append(f"me_chk({text}, d_{buf}_{k}, {self.err})"
                        if self._needs_check(acc, k) else text)
        return _linear(buf, subs)

    def _fits_int32(self, acc: BufAccess, decl: BufferDecl) -> bool:
        """Whether every subscript of ``acc`` is provably in bounds and the buffer has
        fewer than 2**31 elements (its linear index then fits in an int32)."""
        count = 1
        for k, size in enumerate(decl.sizes):
            n = iexpr_interval(size, {})
            if n is None or not within(acc.indices[k], self.ranges, size):
                return False
            count *= max(n[0], 1)
        return count < 2**31

    def _needs_check(self, acc: BufAccess, k: int) -> bool:
        """Whether subscript ``k`` of a data-dependent access must be checked at run time:
        not when it is provably in bounds (a clamped index, as boundary conditions give)."""
        if not acc.checked:
            return False
        if acc.offset_names is not None:
            return True
        return not within(acc.indices[k], self.ranges, self.buffers[acc.buffer].sizes[k])

    def _subscript(self, acc: BufAccess, k: int) -> str:
        """Subscript ``k`` of ``acc`` in int64, relative to a local buffer's offset."""
        text = self.index(acc.indices[k])
        if acc.offset_names is not None:
            text = f"({text} - {ident(acc.offset_names[k], 'offset name')})"
        return text

    def store_target(self, acc: BufAccess) -> tuple[list[str], str | None, str]:
        """What a statement needs to store into ``acc``: declarations, a bounds condition
        and the element. A checked (data-dependent) store evaluates its subscripts once
        into ``me_s<k>`` and stores only when they are in bounds; unlike a checked read,
        which reads element 0 after flagging, it must not write a wrong element."""
        target = self.element(BufAccess(acc.buffer, acc.indices, acc.type_,
                                        acc.offset_names))  # validates the access
        if not any(self._needs_check(acc, k) for k in range(len(acc.indices))):
            return [], None, target
        buf = ident(acc.buffer, "buffer name")
        lets, conds, subs = [], [], []
        for k in range(len(acc.indices)):
            name = f"me_s{k}"
            lets.append(f"const int64_t {name} = {self._subscript(acc, k)};")
            conds.append(f"{name} >= 0 && {name} < d_{buf}_{k}")
            subs.append(name)
        return lets, " && ".join(conds) or "1", _linear(buf, subs)

    def local_element(self, e: LocalElement) -> str:
        """An element of a loop-local buffer that a called function gets from its caller
        (the iteration's buffer, a ``const T*`` parameter named as the statement names it,
        and its offsets, 64-bit parameters: ``LocalArg``), every subscript checked against
        the buffer's per-iteration size (``d_<buf>_<k>``, defined in the function from the
        params as the statement's code defines them)."""
        decl = self.buffers.get(e.buffer)
        if decl is None or not decl.local:
            raise TargetError(f"a function reads {e.buffer!r} as a loop-local buffer, which "
                              "it is not")
        if e.buffer not in self.in_scope:
            raise TargetError(f"a function reads local buffer {e.buffer!r}, which its "
                              "caller does not pass")
        if e.type_ != decl.dtype or len(e.indices) != len(decl.sizes) or \
                len(e.offsets) != len(decl.sizes):
            raise TargetError(f"access to local buffer {e.buffer!r} as {e.type_.name} with "
                              f"{len(e.indices)} indices; it is declared {decl.dtype.name} "
                              f"with {len(decl.sizes)} dimensions")
        buf = ident(e.buffer, "buffer name")
        return _linear(buf, [f"me_chk(({self.index(i)} - {self.index(o)}), d_{buf}_{k}, "
                             f"{self.err})" for k, (i, o) in
                             enumerate(zip(e.indices, e.offsets, strict=True))])

    # ------------------------------------------------------------------ 64-bit indices
    def index(self, e: Expr) -> str:
        """A Layer I integer expression evaluated in int64 (buffer subscripts)."""
        if isinstance(e, LocalArg):  # a call's argument: a local buffer's offset
            if e.buffer not in self.in_scope:
                raise TargetError(f"a call passes local buffer {e.buffer!r} outside its "
                                  "Alloc node")
            return ident(e.offset_name, "offset name")
        if isinstance(e, IterRef):
            return ident(f"v_{e.name}", "iterator name")
        if isinstance(e, ParamRef):
            return ident(f"p_{e.name}", "parameter name")
        if isinstance(e, Const):
            if e.type_.is_float:
                return f"((int64_t){const_c(e.value, e.type_)})"
            return _int_literal(int(e.value), int64)
        if isinstance(e, BufAccess):
            return f"((int64_t){self.element(e)})"
        if isinstance(e, Binary) and e.type_.is_int and e.a.dtype.is_int and e.b.dtype.is_int:
            keep = redundant_operand(e, self.ranges) if self.ranges else None
            if keep is not None:  # a clamp that cannot bind in these loops
                return self.index(keep)
            a, b = self.index(e.a), self.index(e.b)
            if e.op in _ARITH:
                return f"({a} {_ARITH[e.op]} {b})"
            k = _pow2(e.b)
            if e.op in ("div", "floordiv", "mod") and self.bindings and isinstance(e.b, Const) \
                    and (qr := div_mod(e.a, int(e.b.value), self.bindings, self.loops)):
                return qr[0] if e.op != "mod" else qr[1]
            if e.op in ("div", "floordiv"):
                # arithmetic shift is floor division by 2^k (gcc defines >> on negatives)
                return f"({a} >> {k})" if k is not None else f"me_fdiv_i64({a}, {b})"
            if e.op == "mod":
                return (f"({a} & {(1 << k) - 1}LL)" if k is not None
                        else f"me_fmod_i64({a}, {b})")
            if e.op in ("min", "max"):
                return f"me_{e.op}_i64({a}, {b})"
        if isinstance(e, Binary) and e.op in _CMP and e.a.dtype.is_int and e.b.dtype.is_int:
            return f"({self.index(e.a)} {_CMP[e.op]} {self.index(e.b)})"
        if isinstance(e, Unary) and e.op == "neg" and e.a.dtype.is_int:
            return f"(-{self.index(e.a)})"
        if isinstance(e, Select) and e.dtype.is_int:
            return f"({self.value(e.cond)} ? {self.index(e.a)} : {self.index(e.b)})"
        if isinstance(e, Cast) and e.type_.is_int and (e.a.dtype.is_int or e.a.dtype.is_bool):
            inner = self.index(e.a)
            # Widening (or 32-bit) casts are no-ops in 64-bit index arithmetic; narrow
            # ones keep their wrap-around.
            return inner if e.type_.bits >= 32 else f"((int64_t)({e.type_.c_name})({inner}))"
        return f"((int64_t)({self.value(e)}))"

    # ------------------------------------------------------------------ values
    def value(self, e: Expr) -> str:
        """A Layer I expression as a C expression of C type ``e.dtype``."""
        temp = self.temps.get(id(e))
        if temp is not None:
            return temp
        half = e.dtype.is_float and e.dtype.bits == 16
        if half and not self.float16:
            raise TargetError("a float16 value, which this target does not print (C's "
                              "_Float16 is gcc's, on the host): use the cpu target")
        text = self._value(e)
        if half and isinstance(e, Binary | Unary | Call | Select) and not (
                isinstance(e, Binary) and e.op in (*_CMP, "and", "or")):
            # gcc keeps _Float16 intermediates in float: the cast rounds each result
            return f"(({e.dtype.c_name})({text}))"
        if _narrow(e.dtype) and isinstance(e, Binary | Unary | Call | Select) \
                and not (isinstance(e, Binary) and e.op in (*_CMP, "and", "or")) \
                and not (isinstance(e, Unary) and e.op == "not"):
            return f"(({e.dtype.c_name})({text}))"
        return text

    def _value(self, e: Expr) -> str:
        if isinstance(e, Const):
            return const_c(e.value, e.type_)
        if isinstance(e, IterRef | ParamRef):
            return f"((int32_t){self.index(e)})"
        if isinstance(e, BufAccess):
            return self.element(e)
        if isinstance(e, LocalElement):
            return self.local_element(e)
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Unary):
            if e.op == "neg":
                return f"(-{self.value(e.a)})"
            if e.op == "not":
                return f"(!{self.value(e.a)})"
            raise TargetError(f"unknown unary operator {e.op!r}")
        if isinstance(e, Select):
            return f"({self.value(e.cond)} ? {self.value(e.a)} : {self.value(e.b)})"
        if isinstance(e, Cast):
            return f"(({e.type_.c_name})({self.value(e.a)}))"
        if isinstance(e, Call):
            return self._call(e)
        if isinstance(e, FnCall):
            if self.call_context is None:
                raise TargetError(f"inlined computation {e.fn!r} is kept as a function (its "
                                  "body would be too large substituted), which this target "
                                  "does not print; use the cpu target, or compute_root "
                                  "some of the inlined stages")
            for b in e.locals:
                if b not in self.in_scope:
                    raise TargetError(f"a call of {e.fn!r} passes local buffer {b!r} "
                                      "outside its Alloc node")
            args = [self.call_context, *(f"b_{ident(b, 'buffer name')}" for b in e.locals),
                    *(self.index(a) for a in e.args)]
            return f"{fn_name(e.fn)}({', '.join(a for a in args if a)})"
        if isinstance(e, Access):
            raise TargetError("an unresolved Access reached the CPU backend; the lowering "
                              "must turn every read into a BufAccess")
        raise TargetError(f"unknown expression node {type(e).__name__}")

    def _binary(self, e: Binary) -> str:
        a, b, op, dt = self.value(e.a), self.value(e.b), e.op, e.type_
        if op in _CMP:
            return f"({a} {_CMP[op]} {b})"
        if op in ("and", "or"):
            return f"({a} {'&&' if op == 'and' else '||'} {b})"
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        if op == "div" and dt.is_float:
            return f"({a} / {b})"
        if op in ("div", "floordiv") and not dt.is_bool:
            return f"me_fdiv_{suffix(dt)}({a}, {b})"
        if op == "mod" and not dt.is_bool:
            return f"me_fmod_{suffix(dt)}({a}, {b})"
        if op in ("min", "max"):
            return f"me_{op}_{suffix(dt)}({a}, {b})"
        raise TargetError(f"binary operator {op!r} is not defined on {dt.name}")

    def _call(self, e: Call) -> str:
        vals = [self.value(x) for x in e.args]
        args = ", ".join(vals)
        dt, fn = e.type_, e.fn
        if fn == "abs":
            if dt.is_float:
                return f"{'fabsf' if dt.bits <= 32 else 'fabs'}({args})"
            return f"me_abs_{suffix(dt)}({args})"
        if fn in _BITS or fn in ("bitnot", "shl", "shr"):
            if not dt.is_int:
                raise TargetError(f"intrinsic {fn!r} needs an integer type, got {dt.name}")
            if fn == "bitnot":
                return f"(~{args})"
            if fn in _BITS:
                return f"({vals[0]} {_BITS[fn]} {vals[1]})"
            return f"me_{fn}_{suffix(dt)}({args})"
        if fn in ("popcount", "clz", "ctz") and dt.is_int:
            return f"me_{fn}_{suffix(dt)}({args})"
        if fn == "reinterpret":
            src = e.args[0].dtype
            if src.is_int and dt.is_int:  # the same width: a conversion keeps the bits
                return f"(({dt.c_name})({args}))"
            return f"{reinterpret_name(src, dt)}({args})"
        if fn not in _FLOAT_FNS and fn != "round":
            raise TargetError(f"unknown intrinsic {fn!r}")
        if not dt.is_float:
            raise TargetError(f"intrinsic {fn!r} needs a float type, got {dt.name}")
        if fn == "fma" and dt.bits == 16:
            # computed in float and rounded to half, it would round twice
            raise TargetError("fma of float16 values (no target rounds it once): cast the "
                              "operands to float32")
        name = "nearbyint" if fn == "round" else fn
        return f"{name}{'f' if dt.bits <= 32 else ''}({args})"


def fn_name(comp: str) -> str:
    """The C name of the function of an inlined computation (see ``FnCall``)."""
    return ident(f"me_fn_{comp}", "inlined computation name")


def _linear(buf: str, subs: list[str], narrow: str | None = None) -> str:
    """``b_<buf>[...]`` at row-major subscripts ``subs`` (already int64 C text); with
    ``narrow``, the linear index is converted to that C type (it must fit)."""
    n = len(subs)
    terms = [t if k == n - 1 else f"{t} * s_{buf}_{k}" for k, t in enumerate(subs)]
    index = " + ".join(terms) if terms else "0"
    return f"b_{buf}[({narrow})({index})]" if narrow else f"b_{buf}[{index}]"


def store_value(printer: ExprPrinter, value: Expr, target: DType) -> str:
    """The stored value, converted to the buffer's type when the body's type differs."""
    text = printer.value(value)
    if value.dtype != target:
        return f"(({target.c_name})({text}))"
    return text


__all__ = ["ExprPrinter", "const_c", "fn_name", "iexpr_c", "ident", "store_value"]
