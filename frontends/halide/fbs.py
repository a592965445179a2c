"""A tiny, bounds-checked FlatBuffers table accessor on top of the ``flatbuffers`` runtime.

``flatc`` cannot generate Python for Halide's schema (it has vectors of unions), and the
runtime's own ``Table`` trusts every offset: on corrupt bytes it silently wraps negative
positions or reads past the end. This accessor knows nothing about Halide; it checks each
position against the buffer before reading so that damaged input becomes one
:class:`FlatBufferError` naming the position, which :mod:`.reader` turns into a
``HalideFormatError`` with the pipeline context.

Fields are addressed by *slot*: the field's index in the schema's declaration order, where a
union (or a vector of unions) ``f`` takes two slots, ``f_type`` then ``f``. Slot ``i`` sits at
vtable offset ``4 + 2 * i``.
"""

from __future__ import annotations

import struct

from flatbuffers import encode, packer

_UOFFSET = packer.uoffset
_SOFFSET = packer.soffset
_VOFFSET = packer.voffset

#: The scalar kinds a schema uses, by FlatBuffers type name.
SCALARS: dict[str, struct.Struct] = {
    "bool": packer.boolean,
    "byte": packer.int8,
    "ubyte": packer.uint8,
    "int16": packer.int16,
    "uint16": packer.uint16,
    "int32": packer.int32,
    "uint32": packer.uint32,
    "int64": packer.int64,
    "uint64": packer.uint64,
    "float32": packer.float32,
    "float64": packer.float64,
}


class FlatBufferError(ValueError):
    """The bytes do not hold a well-formed FlatBuffer where the reader looked."""


def _get(fmt: struct.Struct, buf: bytes, pos: int) -> int | float | bool:
    """Read one value; checked here because ``unpack_from`` accepts negative offsets."""
    if pos < 0 or pos + fmt.size > len(buf):
        raise FlatBufferError(
            f"a {fmt.size}-byte read at offset {pos} is outside the {len(buf)}-byte buffer"
        )
    return encode.Get(fmt, buf, pos)


class FbTable:
    """One table of a FlatBuffer: its position and its vtable, read once."""

    __slots__ = ("buf", "pos", "_vtable", "_vtable_len")

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos
        vtable = pos - int(_get(_SOFFSET, buf, pos))
        vtable_len = int(_get(_VOFFSET, buf, vtable))
        if vtable_len < 4 or vtable_len % 2 or vtable + vtable_len > len(buf):
            raise FlatBufferError(f"the table at offset {pos} has a malformed vtable")
        self._vtable = vtable
        self._vtable_len = vtable_len

    def _field(self, slot: int) -> int:
        """Absolute position of the field in ``slot``, 0 when the field is absent."""
        voff = 4 + 2 * slot
        if voff >= self._vtable_len:
            return 0  # written by an older schema: the field takes its default
        rel = int(_get(_VOFFSET, self.buf, self._vtable + voff))
        return self.pos + rel if rel else 0

    def _deref(self, at: int) -> int:
        """Follow the unsigned offset stored at ``at`` (always forward, so no cycles)."""
        return at + int(_get(_UOFFSET, self.buf, at))

    def has(self, slot: int) -> bool:
        return self._field(slot) != 0

    def scalar(self, slot: int, kind: str, default: int | float | bool = 0) -> int | float | bool:
        """A scalar field; absent means the schema default (FlatBuffers omits defaults)."""
        at = self._field(slot)
        return default if not at else _get(SCALARS[kind], self.buf, at)

    def get_int(self, slot: int, kind: str = "int32", default: int = 0) -> int:
        return int(self.scalar(slot, kind, default))

    def get_bool(self, slot: int, default: bool = False) -> bool:
        return bool(self.scalar(slot, "bool", default))

    def _string_at(self, at: int) -> str:
        start = self._deref(at)
        length = int(_get(_UOFFSET, self.buf, start))
        if start + 4 + length > len(self.buf):
            raise FlatBufferError(f"the string at offset {start} runs past the buffer")
        try:
            return self.buf[start + 4 : start + 4 + length].decode("utf-8")
        except UnicodeDecodeError as e:
            raise FlatBufferError(f"the string at offset {start} is not UTF-8: {e}") from None

    def string(self, slot: int, default: str = "") -> str:
        at = self._field(slot)
        return default if not at else self._string_at(at)

    def table(self, slot: int) -> FbTable | None:
        at = self._field(slot)
        return FbTable(self.buf, self._deref(at)) if at else None

    def _vector(self, slot: int, elem_size: int) -> tuple[int, int]:
        """(position of the first element, length); (0, 0) when the vector is absent."""
        at = self._field(slot)
        if not at:
            return 0, 0
        start = self._deref(at)
        length = int(_get(_UOFFSET, self.buf, start))
        if start + 4 + length * elem_size > len(self.buf):
            raise FlatBufferError(f"the vector at offset {start} runs past the buffer")
        return start + 4, length

    def vector_len(self, slot: int) -> int:
        """Length of a vector of offsets (tables, strings, union values)."""
        return self._vector(slot, 4)[1]

    def tables(self, slot: int) -> list[FbTable]:
        first, n = self._vector(slot, 4)
        return [FbTable(self.buf, self._deref(first + 4 * i)) for i in range(n)]

    def strings(self, slot: int) -> list[str]:
        first, n = self._vector(slot, 4)
        return [self._string_at(first + 4 * i) for i in range(n)]

    def scalars(self, slot: int, kind: str) -> list[int | float | bool]:
        fmt = SCALARS[kind]
        first, n = self._vector(slot, fmt.size)
        return [_get(fmt, self.buf, first + fmt.size * i) for i in range(n)]

    def get_bytes(self, slot: int) -> bytes:
        """A ``[ubyte]`` vector as one copy (e.g. a constant buffer's data)."""
        first, n = self._vector(slot, 1)
        return bytes(self.buf[first : first + n])

    def union(self, slot: int) -> tuple[int, FbTable | None]:
        """The union whose ``_type`` tag is in ``slot`` (its value is in ``slot + 1``):
        ``(tag, table)``, with tag 0 (NONE) and None when absent."""
        tag = self.get_int(slot, "ubyte")
        at = self._field(slot + 1)
        if tag == 0 or not at:
            return 0, None
        return tag, FbTable(self.buf, self._deref(at))

    def unions(self, slot: int) -> list[tuple[int, FbTable | None]]:
        """A vector of unions: tags in ``slot``, values in ``slot + 1``."""
        tags = self.scalars(slot, "ubyte")
        first, n = self._vector(slot + 1, 4)
        if n != len(tags):
            raise FlatBufferError(
                f"a vector of unions has {len(tags)} tags but {n} values (table at {self.pos})"
            )
        return [
            (int(t), FbTable(self.buf, self._deref(first + 4 * i)) if t else None)
            for i, t in enumerate(tags)
        ]


def root(buf: bytes) -> FbTable:
    """The root table; Halide writes no file identifier, so the root offset is all."""
    if len(buf) < 8:
        raise FlatBufferError(f"{len(buf)} bytes are too few for a FlatBuffer")
    return FbTable(buf, int(_get(_UOFFSET, buf, 0)))
