"""Float interval arithmetic for data-dependent indices (``middleend/ir/intervals.py::
float_interval``): a histogram's bin ``int(clamp(v, 0, 1) / r + 0.5)`` is proved within
its buffer, so its scatter stores without a run-time check (the bilateral grid's
histogram); a clamp bounds its value on one side even where the clamped value is NaN (as
the printed ``a < b ? a : b`` does), and an index not provably in bounds keeps its check.
Results equal a numpy model of the same semantics, NaN inputs included."""

from __future__ import annotations

import math

import numpy as np
import pytest

import middleend as me
from middleend.ir.expr import Access, Binary, Cast, Const
from middleend.ir.intervals import expr_interval, float_interval
from middleend.ir.types import float32, int32

with me.Function("float_interval_reads"):
    V = Access(me.Input("v", [4], me.float32), (Const(0, int32),))  # any float, NaN too


def _f(x: float) -> Const:
    return Const(x, float32)


def test_a_clamp_bounds_any_value_and_arithmetic_follows() -> None:
    clamped = Binary("max", Binary("min", V, _f(1.0), float32), _f(0.0), float32)
    assert float_interval(V, {}) is None
    assert float_interval(Binary("min", V, _f(1.0), float32), {}) == (-math.inf, 1.0)
    assert float_interval(clamped, {}) == (0.0, 1.0)
    scaled = Binary("add", Binary("mul", clamped, Binary("div", _f(1.0), _f(0.1), float32),
                                  float32), _f(0.5), float32)
    lo, hi = float_interval(scaled, {})
    assert lo <= 0.5 and 10.5 <= hi < 10.6
    assert expr_interval(Cast(int32, scaled), {}) == (0, 10)
    # a constant is the float32 the code holds: 2.9999999999 is 3.0f, which converts to 3
    assert expr_interval(Cast(int32, _f(2.9999999999)), {}) == (3, 3)


@pytest.mark.parametrize("expr", [
    Binary("min", _f(1.0), V, float32),  # a NaN second operand is the result
    Binary("div", _f(1.0), Binary("max", V, _f(0.0), float32), float32),  # may divide by 0
    Binary("div", _f(1.0), Binary("min", Binary("max", V, _f(-1.0), float32), _f(1.0),
                                  float32), float32),  # a divisor in [-1, 1]
    Binary("mul", Binary("max", V, _f(0.0), float32), _f(2.0), float32),  # unbounded above
])
def test_what_is_not_bounded_stays_unknown(expr: Binary) -> None:
    assert expr_interval(Cast(int32, expr), {}) is None


def _histogram(name: str, clamp: bool) -> me.Function:
    """``h[bin(v)] += 1`` over a 2-D image, ``bin(v) = int(c(v) * 10 + 0.5)`` with ``c``
    the clamp to [0, 1] (or the identity)."""
    with me.Function(name) as f:
        inp = me.Input("inp", [24, 32], me.float32)
        b = me.Var("b", 0, 11)
        h = me.Computation("h", [b], 0.0)
        y, x = me.Var("y", 0, 24), me.Var("x", 0, 32)
        v = me.clamp(inp[y, x], 0.0, 1.0) if clamp else inp[y, x]
        h.update([y, x], 1.0, at=[me.cast(me.int32, v * 10.0 + 0.5)])
    return f


def _bins(a: np.ndarray) -> np.ndarray:
    """The bins as the generated code computes them: ``max(a, 0)`` is ``a > 0 ? a : 0``
    (NaN gives 0), then ``min(., 1)``."""
    c = np.where(a > 0, a, np.float32(0))
    c = np.where(c < 1, c, np.float32(1))
    return (c * np.float32(10) + np.float32(0.5)).astype(np.int32)


def test_a_clamped_histogram_stores_unchecked_and_counts_like_numpy() -> None:
    f = _histogram("fhist", clamp=True)
    k = f.compile()
    assert "me_s0 >= 0" not in k.source  # the scatter's store is not checked
    a = np.random.default_rng(0).normal(0.5, 0.6, (24, 32)).astype(np.float32)
    a[3, 4], a[5, 6] = np.nan, -np.inf
    want = np.bincount(_bins(a).ravel(), minlength=11).astype(np.float32)
    np.testing.assert_array_equal(k(inp=a)["h"], want)


def test_an_unclamped_histogram_keeps_its_check() -> None:
    f = _histogram("fhist_raw", clamp=False)
    k = f.compile()
    assert "me_s0 >= 0" in k.source
    a = np.random.default_rng(1).random((24, 32)).astype(np.float32)
    want = np.bincount((a * np.float32(10) + np.float32(0.5)).astype(np.int32).ravel(),
                       minlength=11).astype(np.float32)
    np.testing.assert_array_equal(k(inp=a)["h"], want)
