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


@pytest.mark.parametrize("schedule", ["parallel", "split_parallel_vector"])
def test_tuple_of_independent_updates(schedule: str, rng: np.random.Generator) -> None:
    """A count and a sum per bin, one Tuple: Halide locks a mutex per update; here each
    element is its own atomic read-modify-write (neither reads the other, so each ends with
    its own reduction, as under the lock); the weights are multiples of 1/2 below 2^10, so
    every order of the float sum is exact."""
    x = hl.Var("x")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    w = hl.ImageParam(hl.Float(32), 2, "w")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    s = hl.Func("count_sum")
    s[x] = (0, hl.f32(0))
    b = hl.i32(im[r.x, r.y] % 16)
    s[b] = (s[b][0] + 1, s[b][1] + w[r.x, r.y])
    upd = s.update().atomic()
    if schedule == "parallel":
        upd.parallel(r.y)
    else:
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        upd.split(r.x, ro, ri, 4).vectorize(ri).parallel(r.y)
    data = rng.integers(0, 256, (23, 31), dtype=np.uint8)
    data[:6, :] = 5  # a popular bin
    weights = (rng.integers(0, 16, (23, 31)) / 2).astype(np.float32)
    k = check(s, [16], [(im, data), (w, weights)])
    source = k.build([16], im=data, w=weights)[1].source
    assert "__atomic_fetch_add(&b_" in source and "__atomic_compare_exchange(&b_" in source


def _argmax(schedule: str) -> tuple[hl.Func, hl.ImageParam]:
    """Per row, the first column of the largest value: the index follows the value (the
    Tuple's elements read each other)."""
    y = hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    r = hl.RDom([(0, im.width())], "r")
    am = hl.Func("argmax_row")
    am[y] = (hl.i32(0), hl.f32(-1))
    better = am[y][1] < im[r.x, y]
    am[y] = (hl.select(better, r.x, am[y][0]), hl.max(am[y][1], im[r.x, y]))
    upd = am.update()
    if schedule == "serial":
        upd.atomic()
    elif schedule == "parallel_y":  # a pure Var: no two threads update one row
        upd.atomic().parallel(y)
    elif schedule == "parallel_r":  # Halide runs it under a mutex (its associativity
        upd.atomic(True).parallel(r.x)  # test skipped)
    else:
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        upd.atomic(True).split(r.x, ro, ri, 4 if schedule == "split_parallel_r" else 8)
        if schedule == "split_parallel_r":
            upd.parallel(ro)
        else:
            upd.vectorize(ri)
    return am, im


@pytest.mark.parametrize("schedule", ["serial", "parallel_y"])
def test_tuple_reading_each_other_without_a_race(schedule: str,
                                                 rng: np.random.Generator) -> None:
    """No loop over the RDom is parallel: atomicity changes nothing, compiled as is (the
    legality check proves the parallel row loop)."""
    am, im = _argmax(schedule)
    data = rng.integers(0, 8, (9, 13)).astype(np.float32)  # ties: the first one wins
    check(am, [9], [(im, data)])


@pytest.mark.parametrize("schedule", ["parallel_r", "split_parallel_r", "vector_r"])
def test_argmax_over_a_parallel_or_vector_rdom(schedule: str,
                                               rng: np.random.Generator) -> None:
    """The index and the value change together: each instance's new values and stores are
    one critical section under a lock (Halide's mutex), so the loop over the RDom runs in
    parallel or as a vector loop (one lane at a time); the values are distinct, so the
    order of the instances does not change the result."""
    am, im = _argmax(schedule)
    data = rng.random((9, 37), dtype=np.float32)
    k = check(am, [9], [(im, data)])
    source = k.build([9], im=data)[1].source
    assert "me_lock(" in source and "me_unlock(" in source
    assert ("simd" not in source) if schedule == "vector_r" else "me_parallel_for(" in source


def _arg_reduce(kind: str, schedule: str) -> tuple[hl.Func, hl.ImageParam]:
    """Over a whole 1-D input, one Tuple: the extreme value and its index (``min``,
    ``max``), or a sum with an element kept as it is (``keep``: ``{f[0] + a[r], f[1]}``)."""
    im = hl.ImageParam(hl.Float(32), 1, "im")
    r = hl.RDom([(0, im.width())], "r")
    f = hl.Func(f"arg{kind}")
    if kind == "keep":
        f[()] = (hl.f32(0), hl.i32(7))
        f[()] = (f[()][0] + im[r], f[()][1])
    else:
        f[()] = (hl.f32(1e30 if kind == "min" else -1e30), hl.i32(-1))
        better = im[r] < f[()][0] if kind == "min" else im[r] > f[()][0]
        f[()] = (hl.select(better, im[r], f[()][0]), hl.select(better, r, f[()][1]))
    upd = f.update().atomic(True)
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    if schedule == "split_parallel":
        upd.split(r, ro, ri, 16).parallel(ro)
    elif schedule == "vector":
        upd.split(r, ro, ri, 8).vectorize(ri)
    elif schedule == "parallel_vector":
        upd.split(r, ro, ri, 8).vectorize(ri).parallel(ro)
    return f, im


@pytest.mark.parametrize("schedule", ["serial", "split_parallel", "vector",
                                      "parallel_vector"])
@pytest.mark.parametrize("kind", ["min", "max", "keep"])
def test_tuple_atomic_over_a_whole_input(kind: str, schedule: str,
                                         rng: np.random.Generator) -> None:
    """argmin / argmax of 1000 distinct values, and a sum whose other element is kept
    (multiples of 1/2 below 8: every order of the sum is exact), against Halide's."""
    f, im = _arg_reduce(kind, schedule)
    data = rng.random(1000, dtype=np.float32)
    if kind == "keep":
        data = (rng.integers(0, 16, 1000) / 2).astype(np.float32)
    k = check(f, [], [(im, data)])
    if schedule != "serial":
        assert "me_lock(me_lockp_0);" in k.build([], im=data)[1].source


def test_the_lock_keeps_every_update(rng: np.random.Generator) -> None:
    """200000 instances on the thread pool: without the lock around each instance, the
    concurrent read-modify-writes of the sum lose updates (a quarter of the sum was lost
    with the lock left out of the printed code)."""
    f, im = _arg_reduce("keep", "split_parallel")
    data = (rng.integers(0, 16, 200_000) / 2).astype(np.float32)  # every sum exact
    check(f, [], [(im, data)])
