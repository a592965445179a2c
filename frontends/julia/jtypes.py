"""Julia types as the front-end sees them: element types of arrays, scalar argument types,
and Julia's promotion of the results of arithmetic.

The translator follows Julia's types, not C's, so that a kernel computes what the same
Julia code computes: ``0.5 * a[i]`` with ``a::Vector{Float32}`` is a Float64 product
rounded back to Float32 on the store, ``i / j`` of two Ints is a Float64 division, and
integer literals and loop indices are Int (64-bit).
"""

from __future__ import annotations

from dataclasses import dataclass

import middleend as me
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.jast import TypeRef
from middleend.ir.types import DType

ELEMENT: dict[str, DType] = {
    "Float64": me.float64, "Float32": me.float32,
    "Int64": me.int64, "Int": me.int64, "Int32": me.int32, "Int16": me.int16, "Int8": me.int8,
    "UInt64": me.uint64, "UInt": me.uint64, "UInt32": me.uint32, "UInt16": me.uint16,
    "UInt8": me.uint8, "Bool": me.bool_,
}
JULIA_NAME: dict[str, str] = {v.name: k for k, v in ELEMENT.items() if k not in ("Int", "UInt")}
_ARRAY1 = ("Vector", "AbstractVector", "DenseVector", "StridedVector")
_ARRAY2 = ("Matrix", "AbstractMatrix", "DenseMatrix", "StridedMatrix")
_ARRAYN = ("Array", "AbstractArray", "DenseArray", "StridedArray")


@dataclass(frozen=True)
class ArgType:
    """An argument's type: an array (``ndim`` > 0) of ``elem``, or a scalar (``ndim`` 0)."""

    elem: DType
    ndim: int

    @property
    def julia(self) -> str:
        e = JULIA_NAME[self.elem.name]
        if self.ndim == 0:
            return e
        if self.ndim == 1:
            return f"Vector{{{e}}}"
        if self.ndim == 2:
            return f"Matrix{{{e}}}"
        return f"Array{{{e}, {self.ndim}}}"


def arg_type(t: TypeRef, line: int, what: str) -> ArgType:
    """The ArgType of an annotation such as ``Matrix{Float64}`` or ``Array{Float32, 3}``."""
    if not t.params and t.name in ELEMENT:
        return ArgType(ELEMENT[t.name], 0)
    elem = t.params[0] if t.params else None
    if not isinstance(elem, TypeRef) or elem.name not in ELEMENT or elem.params:
        raise UnsupportedJulia(line, f"type {type_text(t)} of {what} (arrays of "
                               f"{', '.join(sorted(ELEMENT))} and those scalars are supported)")
    if t.name in _ARRAY1 and len(t.params) == 1:
        return ArgType(ELEMENT[elem.name], 1)
    if t.name in _ARRAY2 and len(t.params) == 1:
        return ArgType(ELEMENT[elem.name], 2)
    if t.name in _ARRAYN and len(t.params) == 2 and isinstance(t.params[1], int) \
            and 1 <= t.params[1] <= 8:
        return ArgType(ELEMENT[elem.name], t.params[1])
    raise UnsupportedJulia(line, f"type {type_text(t)} of {what}")


def type_text(t: TypeRef | int) -> str:
    if isinstance(t, int):
        return str(t)
    if not t.params:
        return t.name
    return f"{t.name}{{{', '.join(type_text(p) for p in t.params)}}}"


def parse_type_text(text: str) -> TypeRef:
    """``"Matrix{Float64}"`` / ``"Array{Float32, 3}"`` (``string(typeof(x))`` in Julia)
    as a TypeRef; what the juliacall path sends for each argument."""
    pos = 0

    def parse() -> TypeRef | int:
        nonlocal pos
        start = pos
        while pos < len(text) and (text[pos].isalnum() or text[pos] in "_."):
            pos += 1
        word = text[start:pos]
        if not word:
            raise UnsupportedJulia(0, f"argument type {text!r}")
        if word.isdigit():
            return int(word)
        params: list[TypeRef | int] = []
        if pos < len(text) and text[pos] == "{":
            pos += 1
            while True:
                while pos < len(text) and text[pos] == " ":
                    pos += 1
                params.append(parse())
                while pos < len(text) and text[pos] == " ":
                    pos += 1
                if pos < len(text) and text[pos] == ",":
                    pos += 1
                    continue
                if pos < len(text) and text[pos] == "}":
                    pos += 1
                    break
                raise UnsupportedJulia(0, f"argument type {text!r}")
        return TypeRef(word.rsplit(".", 1)[-1], tuple(params))

    t = parse()
    if pos != len(text) or not isinstance(t, TypeRef):
        raise UnsupportedJulia(0, f"argument type {text!r}")
    return t


def promote(a: DType, b: DType) -> DType:
    """Julia's ``promote_type`` on the element types we support: a float beats an int, the
    wider float wins; Int64 (the type of literals and indices) beats narrower ints; Bool
    promotes to the other operand's type."""
    if a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "uint" else b  # Julia: UInt64 + Int64 is UInt64
