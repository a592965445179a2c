"""Element types of the IR.

One small immutable record per type: the name users see, the C spelling the backends print,
the numpy dtype the runtime checks arrays against. Promotion rules live here so that the
expression builder, the printers and the runtime agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """An element type: ``kind`` is 'int', 'uint', 'float' or 'bool'; ``bits`` its width."""

    name: str
    kind: str
    bits: int
    c_name: str

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(NUMPY_NAMES[self.name])

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    def __repr__(self) -> str:
        return f"me.{self.name}"


int8 = DType("int8", "int", 8, "int8_t")
int16 = DType("int16", "int", 16, "int16_t")
int32 = DType("int32", "int", 32, "int32_t")
int64 = DType("int64", "int", 64, "int64_t")
uint8 = DType("uint8", "uint", 8, "uint8_t")
uint16 = DType("uint16", "uint", 16, "uint16_t")
uint32 = DType("uint32", "uint", 32, "uint32_t")
uint64 = DType("uint64", "uint", 64, "uint64_t")
# IEEE half precision: C's _Float16 (gcc on x86-64; the cpu target only). Each operation's
# result is rounded to half precision (the printers cast every result back, as gcc keeps
# the intermediates of an expression in float otherwise), which is what numpy's float16 and
# Halide's Float(16) (with strict_float) compute.
float16 = DType("float16", "float", 16, "_Float16")
float32 = DType("float32", "float", 32, "float")
float64 = DType("float64", "float", 64, "double")
bool_ = DType("bool", "bool", 8, "bool")

ALL_TYPES: tuple[DType, ...] = (
    int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, bool_,
    float16,
)
BY_NAME: dict[str, DType] = {t.name: t for t in ALL_TYPES}
NUMPY_NAMES: dict[str, str] = {t.name: ("bool" if t is bool_ else t.name) for t in ALL_TYPES}


def from_numpy(dtype: np.dtype) -> DType:
    """The IR type of a numpy dtype; raises TypeError for types the IR has no name for."""
    name = np.dtype(dtype).name
    if name == "bool":
        return bool_
    if name not in BY_NAME:
        raise TypeError(f"numpy dtype {name!r} has no middle-end element type")
    return BY_NAME[name]


def promote(a: DType, b: DType) -> DType:
    """The type of a binary arithmetic result (float beats int, wider beats narrower,
    signed beats unsigned at equal width as in Halide; bool behaves like uint8)."""
    if a == b:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "int" else b
