"""Scalar Halide expressions evaluated in Python, with Halide's arithmetic: the checks of
:mod:`.checks` (requirements, constraints, ranges) read only Params and the sizes of the
inputs, so they are computed here, before any kernel runs, not compiled into it.

Values are numpy scalars of the expression's type: integers wrap at their width (computed
exactly as Python ints, then wrapped), ``/`` and ``%`` of integers are Euclidean with
``x / 0 == x % 0 == 0`` (as :mod:`.exprs` translates them), floats round to their width.
Only what a check can hold is evaluated: constants, Params, buffer sizes and strides,
arithmetic, comparisons, ``select``, casts, ``let``, ``abs`` and a few math calls;
:func:`unsupported_node` names anything else, so the front-end refuses it when the pipeline
is compiled instead of skipping the check.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frontends.halide.errors import HalideCheckError
from frontends.halide.exprs import dtype_of
from frontends.halide.graph import walk
from frontends.halide.hir import HExpr, HParameter, HType

MAX_DEPTH = 200

_ARITH = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b}
_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}
_SYMBOLS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "EQ": "==",
            "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "And": "&&", "Or": "||"}
_HINTS = frozenset({"likely", "likely_if_innermost", "promise_clamped",
                    "unsafe_promise_clamped", "strict_float"})
_MATH: dict[str, Callable[..., Any]] = {
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "pow": np.power, "floor": np.floor,
    "ceil": np.ceil, "round": np.round, "trunc": np.trunc, "sin": np.sin, "cos": np.cos}
_MESSAGE_CALLS = frozenset({"stringify", "halide_error_requirement_failed"})


@dataclass(frozen=True)
class Image:
    """What a check can read of an input: its extents and strides (in elements), dimension
    0 first as Halide numbers them; mins are 0 (inputs are numpy arrays)."""

    shape: tuple[int, ...]
    strides: tuple[int | None, ...]  # None: not a whole number of elements

    @classmethod
    def of(cls, a: np.ndarray) -> Image:
        size = a.dtype.itemsize
        strides = tuple(s // size if s % size == 0 else None for s in a.strides)
        return cls(tuple(reversed(a.shape)), tuple(reversed(strides)))

    def prop(self, what: str, dim: int) -> int | None:
        if what == "min":
            return 0
        if what == "extent":
            return self.shape[dim]
        return self.strides[dim]


@dataclass
class Env:
    images: dict[str, Image]
    scalars: dict[str, np.generic]
    lets: dict[str, np.generic] = field(default_factory=dict)
    named: dict[str, np.generic] = field(default_factory=dict)  # e.g. "out.extent.0"


def np_type(t: HType | None) -> np.dtype:
    return dtype_of(t, None, None).numpy


def _wrap(v: int, dt: np.dtype) -> np.generic:
    """``v`` wrapped to the integer type ``dt`` (two's complement)."""
    if dt.kind == "b":
        return np.bool_(v != 0)
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return dt.type(v)


def _cast(v: np.generic, dt: np.dtype) -> np.generic:
    if dt.kind == "b":
        return np.bool_(bool(v != 0))
    if dt.kind == "f":
        with np.errstate(all="ignore"):
            return dt.type(v)
    if isinstance(v, np.floating):
        if not math.isfinite(float(v)):
            return dt.type(0)  # undefined in Halide too
        return _wrap(math.trunc(float(v)), dt)
    return _wrap(int(v), dt)


def evaluate(e: HExpr, env: Env, depth: int = 0) -> np.generic:
    """The value of ``e`` (see the module's docstring for what is evaluated)."""
    if depth > MAX_DEPTH:
        raise HalideCheckError(f"a check nested deeper than {MAX_DEPTH} levels")
    k = e.kind

    def sub(x: HExpr) -> np.generic:
        return evaluate(x, env, depth + 1)

    if k == "FloatImm":
        return _cast(np.float64(e.value), np_type(e.type))
    if k in ("IntImm", "UIntImm"):
        return _wrap(int(e.value), np_type(e.type))  # type: ignore[arg-type]
    if k == "Variable":
        return _variable(e, env)
    if k == "Cast":
        return _cast(sub(e.args[0]), np_type(e.type))
    if k in _ARITH or k in ("Div", "Mod", "Min", "Max"):
        return _binary(k, sub(e.args[0]), sub(e.args[1]))
    if k in _CMP:
        return np.bool_(_CMP[k](sub(e.args[0]), sub(e.args[1])))
    if k == "And":
        return np.bool_(bool(sub(e.args[0])) and bool(sub(e.args[1])))
    if k == "Or":
        return np.bool_(bool(sub(e.args[0])) or bool(sub(e.args[1])))
    if k == "Not":
        return np.bool_(not bool(sub(e.args[0])))
    if k == "Select":
        return sub(e.args[1]) if bool(sub(e.args[0])) else sub(e.args[2])
    if k == "Let":
        saved = env.lets.get(e.name)
        env.lets[e.name] = sub(e.args[0])
        try:
            return sub(e.args[1])
        finally:
            if saved is None:
                del env.lets[e.name]
            else:
                env.lets[e.name] = saved
    if k == "Call":
        return _call(e, [sub(a) for a in e.args])
    raise HalideCheckError(f"cannot evaluate the expression node {k} in a check")


def _variable(e: HExpr, env: Env) -> np.generic:
    if e.name in env.lets:
        return env.lets[e.name]
    if e.name in env.named:
        return env.named[e.name]
    if e.param_name and e.name == e.param_name:
        return env.scalars[e.name]
    base, _, rest = e.name.partition(".")
    what, _, dim = rest.partition(".")
    img = env.images.get(base)
    if img is not None and dim.isdigit() and int(dim) < len(img.shape):
        v = img.prop(what, int(dim))
        if v is None:
            raise HalideCheckError(f"{e.name}: the input's stride is not a whole number of "
                                   "elements")
        return np.int32(v)
    raise HalideCheckError(f"cannot evaluate {e.name!r} in a check")


def _binary(k: str, a: np.generic, b: np.generic) -> np.generic:
    if k == "Min":
        return b if b < a else a
    if k == "Max":
        return b if b > a else a
    if isinstance(a, np.floating):
        with np.errstate(all="ignore"):
            if k == "Div":
                return a / b
            if k == "Mod":
                return a - b * np.floor(a / b)
            return _ARITH[k](a, b)
    dt, x, y = a.dtype, int(a), int(b)
    if k in _ARITH:
        return _wrap(_ARITH[k](x, y), dt)
    if y == 0:
        return _wrap(0, dt)
    if k == "Div":  # Euclidean: the remainder is never negative
        return _wrap(x // y if y > 0 else -(x // -y), dt)
    return _wrap(x % abs(y), dt)


def _call(e: HExpr, args: list[np.generic]) -> np.generic:
    name = e.name
    if name in _HINTS:
        return args[0]
    dt = np_type(e.type)
    if name == "abs":
        x = args[0]
        return np.abs(x) if isinstance(x, np.floating) else _wrap(abs(int(x)), dt)
    stem, _, suffix = name.rpartition("_")
    if e.call_type == "PureExtern" and suffix in ("f32", "f64") and stem in _MATH:
        with np.errstate(all="ignore"):
            return _cast(_MATH[stem](*args), dt)
    raise HalideCheckError(f"cannot evaluate the call {name!r} in a check")


def unsupported_node(e: HExpr, params: Mapping[str, HParameter],
                     named: frozenset[str] = frozenset()) -> str | None:
    """What in ``e`` :func:`evaluate` cannot evaluate (None: all of it); ``named``: the
    Variables an :class:`Env`'s ``named`` will give (an output's sizes)."""
    lets = {n.name for n in walk(e) if n.kind == "Let"} | named
    for n in walk(e):
        k = n.kind
        if k == "Variable":
            if n.name in lets:
                continue
            if n.param_name and n.name == n.param_name:
                p = params.get(n.name)
                if p is None or p.is_buffer:
                    return f"the unknown Param {n.name!r}"
                continue
            base, _, rest = n.name.partition(".")
            what, _, dim = rest.partition(".")
            p = params.get(base)
            if p is None or not p.is_buffer or what not in ("min", "extent", "stride") or \
                    not dim.isdigit():
                return f"{n.name!r}"
        elif k == "Call":
            stem, _, suffix = n.name.rpartition("_")
            ok = (n.name in _HINTS or n.name == "abs" or n.name in _MESSAGE_CALLS
                  or (n.call_type == "PureExtern" and suffix in ("f32", "f64") and stem in _MATH))
            if not ok:
                return f"the call {n.name!r}"
        elif k not in ("IntImm", "UIntImm", "FloatImm", "StringImm", "Cast", "Not", "Select",
                       "Let", "Min", "Max", "Div", "Mod", "And", "Or", *_ARITH, *_CMP):
            return f"a {k} node"
    return None


def value_text(v: np.generic) -> str:
    """A value as Halide prints it in an error message (floats with six decimals)."""
    if isinstance(v, np.bool_):
        return "true" if v else "false"
    if isinstance(v, np.floating):
        return f"{float(v):f}"
    return str(int(v))


def message_text(msg: HExpr, env: Env) -> str:
    """The user's part of a requirement's message (``add_requirement(cond, *args)``'s
    args, evaluated and joined as Halide joins them)."""
    if msg.kind == "Call" and msg.name == "halide_error_requirement_failed" and msg.args:
        msg = msg.args[-1]
    parts = msg.args if msg.kind == "Call" and msg.name == "stringify" else (msg,)
    out = []
    for p in parts:
        if p.kind == "StringImm":
            out.append(str(p.value))
        else:
            out.append(value_text(evaluate(p, env)))
    return "".join(out).strip()


def expr_text(e: HExpr, top: bool = True) -> str:
    """``e`` as readable source (``p > 1``, ``a.extent.0 * 2``)."""
    k = e.kind
    if k in ("IntImm", "UIntImm"):
        return str(e.value)
    if k == "FloatImm":
        return repr(float(e.value))  # type: ignore[arg-type]
    if k == "StringImm":
        return repr(e.value)
    if k == "Variable":
        return e.name
    if k in _SYMBOLS:
        s = f"{expr_text(e.args[0], False)} {_SYMBOLS[k]} {expr_text(e.args[1], False)}"
        return s if top else f"({s})"
    if k == "Not":
        return f"!{expr_text(e.args[0], False)}"
    if k == "Cast":
        return f"{e.type}({expr_text(e.args[0])})"
    if k == "Let":
        return f"(let {e.name} = {expr_text(e.args[0])} in {expr_text(e.args[1])})"
    name = {"Min": "min", "Max": "max", "Select": "select"}.get(k, e.name or k)
    return f"{name}({', '.join(expr_text(a) for a in e.args)})"


@dataclass(frozen=True)
class ScalarKind:
    """What a value given for a Param must be, worked out once per Param (a call only
    checks and converts): its numpy type and, for an integer type, its range."""

    name: str
    htype: str
    dtype: np.dtype
    lo: int = 0
    hi: int = 0

    @classmethod
    def of(cls, p: HParameter) -> ScalarKind:
        dt = np_type(p.type)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return cls(p.name, str(p.type), dt, int(info.min), int(info.max))
        return cls(p.name, str(p.type), dt)

    def value(self, v: Any, label: str) -> np.generic:
        """``v`` as a numpy scalar of the type, or an error naming the Param: integers must
        be ints in the type's range, bools bools (or 0/1), floats any real number (rounded
        to the type, as ``Param.set`` does)."""
        dt = self.dtype
        is_int = isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
        if dt.kind in "iu" and is_int and self.lo <= int(v) <= self.hi:
            return dt.type(int(v))
        if dt.kind == "f" and (is_int or isinstance(v, float | np.floating)):
            with np.errstate(all="ignore"):
                return dt.type(v)
        if dt.kind == "b" and (isinstance(v, bool | np.bool_) or (is_int and int(v) in (0, 1))):
            return np.bool_(bool(v))
        where = f"Halide pipeline {label}: Param {self.name!r} ({self.htype})"
        got = f"{type(v).__name__} {v!r}"
        if dt.kind == "b":
            raise HalideCheckError(f"{where}: expected a bool, got {got}")
        if dt.kind == "f":
            raise HalideCheckError(f"{where}: expected a number, got {got}")
        if not is_int:
            raise HalideCheckError(f"{where}: expected an int, got {got}")
        raise HalideCheckError(f"{where}: {v} is outside the type's range "
                               f"[{self.lo}, {self.hi}]")
