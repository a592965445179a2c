"""``update().atomic()`` against Halide's realize: Halide's histogram with ``atomic()`` and
``parallel(r.y)`` (each update one atomic read-modify-write, so iterations that count the
same bin run in parallel), float sums and maxima (a compare-and-swap loop; the values are
exact in float32, so any order of the sum gives Halide's), counts that wrap around, a
vectorized reduction loop (its atomic updates run one lane at a time), and the refusal of a
value that is not ``f[i] op e``."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

import middleend as me
from frontends.halide import compile_pipeline


def _histogram(kind: hl.Type, schedule: str) -> tuple[hl.Func, hl.ImageParam]:
    x = hl.Var("x")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    bright = hl.Func("bright")
    y = hl.Var("y")
    bright[x, y] = im[x, y] // 4  # a store index read from a computed Func
    hist = hl.Func("hist")
    hist[x] = hl.cast(kind, 0)
    hist[hl.i32(bright[r.x, r.y])] += hl.cast(kind, 1)
    bright.compute_root()
    upd = hist.update().atomic()
    if schedule == "parallel":
        upd.parallel(r.y)
    elif schedule == "split_parallel":
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        upd.split(r.y, ro, ri, 4).parallel(ro)
    elif schedule in ("vector", "parallel_vector"):
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        upd.split(r.x, ro, ri, 8).vectorize(ri)
        if schedule == "parallel_vector":
            upd.parallel(r.y)
    return hist, im


@pytest.mark.parametrize("schedule", ["serial", "parallel", "split_parallel", "vector",
                                      "parallel_vector"])
def test_histogram_atomic_parallel(schedule: str, rng: np.random.Generator) -> None:
    hist, im = _histogram(hl.Int(32), schedule)
    data = rng.integers(0, 256, (37, 53), dtype=np.uint8)
    data[:8, :] = 17  # a popular bin: many iterations update it at once
    k = check(hist, [256], [(im, data)])
    if schedule != "serial":
        built, kernel = k.build([256], im=data)
        assert "__atomic_fetch_add(&b_hist" in kernel.source


def test_narrow_counts_wrap_around(rng: np.random.Generator) -> None:
    """uint8 bins past 255 wrap, in the atomic add as in Halide."""
    hist, im = _histogram(hl.UInt(8), "parallel")
    data = rng.integers(0, 8, (40, 64), dtype=np.uint8)
    check(hist, [256], [(im, data)])


@pytest.mark.parametrize("schedule", ["parallel", "split_parallel"])
def test_float_sum_and_max_per_bin(schedule: str, rng: np.random.Generator) -> None:
    """A compare-and-swap loop for float + and for max (the values are multiples of 1/2
    below 2^10, so every order of the sum is exact)."""
    x = hl.Var("x")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    w = hl.ImageParam(hl.Float(32), 2, "w")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    total, top = hl.Func("total"), hl.Func("top")
    total[x] = hl.f32(0)
    total[hl.i32(im[r.x, r.y] % 16)] += w[r.x, r.y]
    top[x] = hl.f32(-1)
    top[hl.i32(im[r.x, r.y] % 16)] = hl.max(top[hl.i32(im[r.x, r.y] % 16)], w[r.x, r.y])
    for f in (total, top):
        upd = f.update().atomic()
        if schedule == "parallel":
            upd.parallel(r.y)
        else:
            ro, ri = hl.RVar("ro"), hl.RVar("ri")
            upd.split(r.y, ro, ri, 3).parallel(ro)
    data = rng.integers(0, 256, (31, 29), dtype=np.uint8)
    weights = (rng.integers(0, 16, (31, 29)) / 2).astype(np.float32)
    for f in (total, top):
        k = check(f, [16], [(im, data), (w, weights)])
        assert "__atomic_compare_exchange(&b_" in k.build([16], im=data, w=weights)[1].source


def test_an_update_of_another_form_is_refused(rng: np.random.Generator) -> None:
    """``f[i] = 2 * f[i] + 1`` is not ``f[i] op e``: refused by name, before any code
    (Halide refuses it too, unless told to skip its associativity test, as here)."""
    x = hl.Var("x")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    f = hl.Func("twice")
    f[x] = 0
    i = hl.i32(im[r.x, r.y] % 8)
    f[i] = f[i] * 2 + 1
    f.update().atomic(True).parallel(r.y)
    with pytest.raises(me.ScheduleError, match="cannot be an atomic update"):
        compile_pipeline(f).realize([8], im=rng.integers(0, 256, (5, 7), dtype=np.uint8))
