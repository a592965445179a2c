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
