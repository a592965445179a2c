"""Shifts by a constant and masks of low or high bits, against Halide's realize for every
integer width and signedness, on values spanning each type's whole range (negative ones
shift and mask as two's complement does): ``a << c`` is ``a * 2^c`` and ``a >> c`` is
``a / 2^c`` (rounding down), as Halide's simplifier rewrites them, ``a & (2^k - 1)`` is
``a`` modulo ``2^k`` and ``a & ~(2^k - 1)`` is ``a`` minus that."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

import middleend as me

_TYPES = [(hl.UInt(8), np.uint8), (hl.Int(8), np.int8), (hl.Int(16), np.int16),
          (hl.Int(32), np.int32), (hl.UInt(32), np.uint32)]


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized"])
@pytest.mark.parametrize(("htype", "ntype"), _TYPES, ids=lambda t: str(t))
def test_shifts_and_masks(htype: hl.Type, ntype: type, schedule: str,
                          rng: np.random.Generator) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(htype, 2, "a")
    v, w = a[x, y], a[x + 1, y]
    sign = hl.cast(htype, -2 ** (htype.bits() - 1) if htype.is_int() else 1)
    half = hl.Func("half")
    half[x, y] = a[x >> 1, y] & 0x7f  # a shift in an index
    f = hl.Func("bits")
    # (Halide leaves signed overflow undefined: no sum here overflows)
    f[x, y] = (v << 3, v >> 2, v & 7, v & ~hl.cast(htype, 7), ((v >> 2) + (w >> 2) + 1) >> 1,
               v << -1,
               v >> 1 << 1, v & sign, half[x, y] + (v & 0), v >> (htype.bits() - 2))
    if schedule == "root_vectorized":
        half.compute_root().vectorize(x, 8)
        f.vectorize(x, 8)
    info = np.iinfo(ntype)
    data = rng.integers(info.min, info.max, (6, 21), dtype=ntype, endpoint=True)
    data[0, :4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    check(f, [16, 6], [(a, data)])


_ALL = [(hl.UInt(8), np.uint8), (hl.Int(8), np.int8), (hl.UInt(16), np.uint16),
        (hl.Int(16), np.int16), (hl.UInt(32), np.uint32), (hl.Int(32), np.int32),
        (hl.UInt(64), np.uint64), (hl.Int(64), np.int64)]


def _full_range(ntype: type, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(ntype)
    data = rng.integers(info.min, info.max, shape, dtype=ntype, endpoint=True)
    data[0, :4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    return data


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized", "parallel_split"])
@pytest.mark.parametrize(("htype", "ntype"), _ALL, ids=lambda t: str(t))
def test_computed_bit_operations(htype: hl.Type, ntype: type, schedule: str,
                                 rng: np.random.Generator) -> None:
    """``|``, ``^``, ``~``, ``&`` of two computed values and shifts by a computed amount
    (negative ones shift the other way, as in Halide; amounts stay inside the width, past
    which Halide's result is undefined), left shifts wrapping around, for every integer
    width and signedness; also amounts of the other signedness (``u8 << i32`` is
    ``u32 << i32`` in Halide, ``i16 << u8`` is ``i16 << u16``) and a computed constant."""
    x, y = hl.Var("x"), hl.Var("y")
    bits = htype.bits()
    # (Halide's Python Buffer has no uint64: those values come in as int64, same bits)
    a = hl.ImageParam(hl.Int(64) if ntype is np.uint64 else htype, 2, "a")
    s = hl.ImageParam(hl.Int(8), 2, "s")  # amounts in (-bits, bits)
    v, w = hl.cast(htype, a[x, y]), hl.cast(htype, a[x + 1, y])
    amt = hl.cast(hl.Int(bits), s[x, y])
    uamt = hl.cast(hl.UInt(bits), hl.abs(s[x, y]))
    g = hl.Func("g")
    g[x, y] = (v | w) ^ (~v & w)
    f = hl.Func("bits")
    f[x, y] = (v | w, v ^ w, ~v, v & w, g[x, y], v << amt, v >> amt, v << uamt, v >> uamt,
               v << s[x, y], v >> hl.cast(hl.UInt(8), hl.abs(s[x, y])),
               (v ^ hl.cast(htype, 0x55)) | hl.cast(htype, 0x0f), v << (bits - 1))
    if schedule == "root_vectorized":
        g.compute_root().vectorize(x, 8)
        f.vectorize(x, 8)
    elif schedule == "parallel_split":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        g.compute_at(f, y)
        f.split(x, xo, xi, 4).parallel(y).reorder(xi, y, xo)
    data = _full_range(ntype, (6, 21), rng)
    data = data.view(np.int64) if ntype is np.uint64 else data
    shifts = rng.integers(-(bits - 1), bits, (6, 20), dtype=np.int8)
    shifts[0, :4] = [0, bits - 1, -(bits - 1), 1]
    check(f, [16, 6], [(a, data), (s, shifts)])


@pytest.mark.parametrize("schedule", ["inline", "root"])
def test_bit_operations_in_an_index_and_a_reduction(schedule: str,
                                                    rng: np.random.Generator) -> None:
    """A computed bit operation in an index (a butterfly ``x ^ k`` read) and in an update
    (an xor checksum over an RDom)."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.UInt(16), 2, "a")
    k = hl.ImageParam(hl.Int(32), 1, "k")
    r = hl.RDom([(0, 16)])
    swap = hl.Func("swap")
    # (Halide bounds ``x ^ k`` by its type only: u8, so ``a`` is 256 + 8 wide)
    swap[x, y] = a[hl.i32(hl.u8(x) ^ hl.u8(k[y] & 7)) + 8, y] >> (k[y] & 3)
    h = hl.Func("h")
    h[y] = hl.u32(0)  # (u16 >> i32 is u32 in Halide)
    h[y] = h[y] ^ (swap[r.x, y] << hl.u32(r.x % 5))
    if schedule == "root":
        swap.compute_root()
    data = rng.integers(0, 2 ** 16, (5, 264), dtype=np.uint16)
    check(h, [5], [(a, data), (k, rng.integers(-50, 50, 5, dtype=np.int32))])


@pytest.mark.parametrize("dtype", ["int16", "uint32", "int64"])
def test_api_bit_operations(dtype: str, rng: np.random.Generator) -> None:
    """``me.shl``... in the Python API against Python's own integers (two's complement,
    wrapped to the type): a negative amount shifts the other way, the width or more gives
    0 (or the sign's fill for a right shift)."""
    dt = getattr(me, dtype)
    bits = dt.bits
    with me.Function(f"bits_{dtype}") as f:
        i = me.Var("i", 0, 64)
        a, b = me.Input("a", [64], dt), me.Input("b", [64], dt)
        s = me.Input("s", [64], dt)
        outs = [me.Computation(n, [i], e) for n, e in [
            ("o_shl", me.shl(a[i], s[i])), ("o_shr", me.shr(a[i], s[i])),
            ("o_and", me.bitand(a[i], b[i])), ("o_or", me.bitor(a[i], b[i])),
            ("o_xor", me.bitxor(a[i], b[i])), ("o_not", me.bitnot(a[i]))]]
    info = np.iinfo(dt.numpy)
    av = rng.integers(info.min, info.max, 64, dtype=dt.numpy, endpoint=True)
    bv = rng.integers(info.min, info.max, 64, dtype=dt.numpy, endpoint=True)
    lo = -bits - 2 if info.min < 0 else 0
    sv = rng.integers(lo, bits + 3, 64).astype(dt.numpy)
    got = f.compile(outputs=outs)(a=av, b=bv, s=sv)

    def wrap(v: int) -> int:
        v %= 2 ** bits
        return v - 2 ** bits if info.min < 0 and v > info.max else v

    def shift(x: int, n: int, left: bool) -> int:
        if n < 0:
            n, left = -n, not left
        if n >= bits:
            return 0 if left else (-1 if x < 0 else 0)
        return wrap(x << n) if left else x >> n

    ref = {"o_shl": [shift(int(x), int(n), True) for x, n in zip(av, sv, strict=True)],
           "o_shr": [shift(int(x), int(n), False) for x, n in zip(av, sv, strict=True)],
           "o_and": [wrap(int(x) & int(y)) for x, y in zip(av, bv, strict=True)],
           "o_or": [wrap(int(x) | int(y)) for x, y in zip(av, bv, strict=True)],
           "o_xor": [wrap(int(x) ^ int(y)) for x, y in zip(av, bv, strict=True)],
           "o_not": [wrap(~int(x)) for x in av]}
    for name, want in ref.items():
        assert got[name].tolist() == want, name
