"""Tuple updates whose elements read each other (argmin / argmax, complex iterations).

Halide evaluates every right-hand side of a Tuple update with the values from before the
update, then stores them all; the front-end computes the new values first, then stores.
Each pipeline is compared with Halide's own realize, and the argmin / argmax with numpy too
(first index of the extremum, as a strict ``<`` keeps the first one).
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, check

from frontends.halide import UnsupportedHalideFeature, compile_pipeline


def _argext(a: hl.ImageParam, op: str, schedule: str) -> hl.Func:
    """Per row y: (index of the first extremum along x, the extremum)."""
    y, = (hl.Var("y"),)
    f = hl.Func(f"arg{op}")
    r = hl.RDom([(0, a.width())], "r")
    f[y] = (0, a[0, y])
    better = a[r.x, y] < f[y][1] if op == "min" else a[r.x, y] > f[y][1]
    f[y] = (hl.select(better, r.x, f[y][0]), hl.select(better, a[r.x, y], f[y][1]))
    if schedule == "parallel":
        f.parallel(y)
        f.update(0).parallel(y)
    elif schedule == "split":
        yo, yi = hl.Var("yo"), hl.Var("yi")
        f.update(0).split(y, yo, yi, 4, hl.TailStrategy.GuardWithIf).reorder(yi, r.x, yo) \
            .vectorize(yi)
    return f


@pytest.mark.parametrize("schedule", ["default", "parallel", "split"])
@pytest.mark.parametrize("op", ["min", "max"])
def test_argmin_argmax(op: str, schedule: str, rng: np.random.Generator) -> None:
    a = hl.ImageParam(hl.Float(32), 2, "a")
    data = rng.integers(0, 9, (17, 29)).astype(np.float32)  # ties: the first index wins
    f = _argext(a, op, schedule)
    k = check(f, [17], [(a, data)])
    idx, val = k.realize([17], a=data)
    ref = np.argmin(data, axis=1) if op == "min" else np.argmax(data, axis=1)
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_array_equal(val, data[np.arange(17), ref])


@pytest.mark.parametrize("schedule", ["default", "split_rx"])
def test_argmin_of_an_image_into_a_scalar(schedule: str, rng: np.random.Generator) -> None:
    """A zero-dimensional Tuple (x, y, value) reduced over a 2-D RDom."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = hl.Func("argmin2")
    r = hl.RDom([(0, a.width()), (0, a.height())], "r")
    f[()] = (0, 0, a[0, 0])
    better = a[r.x, r.y] < f[()][2]
    f[()] = (hl.select(better, r.x, f[()][0]), hl.select(better, r.y, f[()][1]),
             hl.min(a[r.x, r.y], f[()][2]))
    if schedule == "split_rx":
        f.update(0).split(r.x, hl.RVar("rxo"), hl.RVar("rxi"), 4, hl.TailStrategy.GuardWithIf)
    data = rng.random((13, 19), dtype=np.float32)
    k = check(f, [], [(a, data)])
    ix, iy, v = k.realize([], a=data)
    assert (int(iy), int(ix)) == np.unravel_index(np.argmin(data), data.shape)
    assert v == data.min()


def _mandelbrot(schedule: str) -> hl.Func:
    """z <- z^2 + c in (re, im), frozen once |z| > 2, with the escape iteration."""
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("mandelbrot")
    t = hl.RDom([(0, 12)], "t")
    cx = hl.f32(x) / 20 - 1.5
    cy = hl.f32(y) / 15 - 1.0
    f[x, y] = (hl.f32(0), hl.f32(0), 0)
    re, im, n = f[x, y][0], f[x, y][1], f[x, y][2]
    out = re * re + im * im > 4
    f[x, y] = (hl.select(out, re, re * re - im * im + cx),
               hl.select(out, im, 2 * re * im + cy), hl.select(out, n, t.x + 1))
    if schedule == "vectorized":
        f.vectorize(x, 8)
        f.update(0).reorder(x, t.x, y).vectorize(x, 8).parallel(y)
    elif schedule == "parallel":
        f.update(0).parallel(y)
    return f


@pytest.mark.parametrize("schedule", ["default", "parallel", "vectorized"])
def test_mandelbrot_in_place(schedule: str) -> None:
    check(_mandelbrot(schedule), [40, 30], [], target=STRICT, fp_contract=False)


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_mandelbrot_over_iterations(schedule: str) -> None:
    """Halide's app style: z(x, y, t) from z(x, y, t - 1), the elements from each other."""
    x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
    f = hl.Func("mandel_t")
    t = hl.RDom([(1, 10)], "t")
    cx = hl.f32(x) / 20 - 1.5
    cy = hl.f32(y) / 15 - 1.0
    f[x, y, z] = (cx, cy)
    re, im = f[x, y, t.x - 1][0], f[x, y, t.x - 1][1]
    f[x, y, t.x] = (re * re - im * im + cx, 2 * re * im + cy)
    if schedule == "vectorized":
        f.parallel(y)
        f.update(0).parallel(y).vectorize(x, 4)
    check(f, [20, 15, 11], [], target=STRICT, fp_contract=False)


def test_swap_and_fibonacci(rng: np.random.Generator) -> None:
    """(a, b) <- (a + b, b + r): element 0 reads element 1 and the reverse order too."""
    x = hl.Var("x")
    f = hl.Func("fib")
    r = hl.RDom([(0, 6)], "r")
    f[x] = (x, hl.i32(1))
    f[x] = (f[x][1], f[x][0] + f[x][1] + r.x)
    k = check(f, [5])
    a, b = np.arange(5), np.ones(5, dtype=np.int64)
    for i in range(6):
        a, b = b, a + b + i
    got = k.realize([5])
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(got[1], b)


@pytest.mark.parametrize("schedule", ["default", "root", "at_y"])
def test_argmax_over_an_rdom_from_a_negative_min(schedule: str,
                                                 rng: np.random.Generator) -> None:
    """``hl.argmax(a[x + r.x, y + r.y])`` over a window centred on the point (RDom mins
    -2): the new values of each step are stored from index 0 (they were refused as writes
    at negative indices)."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    cl = hl.BoundaryConditions.constant_exterior(a, 0.0)
    r = hl.RDom([(-2, 5), (-1, 3)], "r")
    am = hl.Func("am")
    am[x, y] = hl.argmax(cl[x + r.x, y + r.y])
    out = hl.Func("out")
    out[x, y] = hl.f32(am[x, y][0] * 10 + am[x, y][1]) + am[x, y][2]
    if schedule == "root":
        am.compute_root()
    elif schedule == "at_y":
        am.compute_at(out, y)
        out.parallel(y)
    check(out, [12, 7], [(a, rng.random((7, 12), dtype=np.float32))])


def test_a_store_index_reading_the_tuple_is_refused() -> None:
    """The elements' stores would move each other's index: refused by name."""
    x = hl.Var("x")
    f = hl.Func("self_index")
    r = hl.RDom([(0, 4)], "r")
    f[x] = (hl.clamp(x, 0, 3), x)
    f[hl.clamp(f[r.x][0], 0, 3)] = (f[r.x][1], r.x)
    with pytest.raises(UnsupportedHalideFeature, match="store index or predicate"):
        compile_pipeline(f).realize([4])


def _argmin(a: hl.ImageParam, name: str) -> tuple[hl.Func, hl.Var, hl.Var]:
    """Per point, the argmin over a window of 7: a Tuple update whose elements read each
    other (index, value)."""
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func(name)
    r = hl.RDom([(0, 7)], "r")
    f[x, y] = (0, a[x, y])
    better = a[x + r.x, y] < f[x, y][1]
    f[x, y] = (hl.select(better, r.x, f[x, y][0]), hl.select(better, a[x + r.x, y],
                                                              f[x, y][1]))
    return f, x, y


def _window_argmin(a: hl.ImageParam, both: bool) -> tuple[hl.Func, hl.Func]:
    """:func:`_argmin` read by a consumer at x and x + 1 (both elements there, or only
    one)."""
    f, x, y = _argmin(a, "win_argmin")
    out = hl.Func("win_out")
    nxt = hl.f32(f[x + 1, y][0]) + (f[x + 1, y][1] if both else 0)
    out[x, y] = hl.f32(f[x, y][0]) + f[x, y][1] * 2 + nxt
    return f, out


@pytest.mark.parametrize("both", [True, False])
@pytest.mark.parametrize("schedule", ["at_y", "at_x", "tiled"])
def test_tuple_update_computed_at_a_loop(schedule: str, both: bool,
                                         rng: np.random.Generator) -> None:
    """compute_at of a Func whose Tuple update elements read each other: per iteration of
    the consumer's loop, every new value of a point before any store, as at root; where
    the consumer reads one element at a point where it does not read the other
    (``both=False``), every element is computed over the union, as Halide does (each one's
    update reads the other's previous value there)."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, out = _window_argmin(a, both=both)
    x, y = out.args()
    if schedule == "at_y":
        f.compute_at(out, y)
    elif schedule == "at_x":
        f.compute_at(out, x)
    else:
        xo, yo, xi, yi = (hl.Var(n) for n in ("xo", "yo", "xi", "yi"))
        out.tile(x, y, xo, yo, xi, yi, 8, 4).parallel(yo)
        f.compute_at(out, xo)
        f.update(0).vectorize(x, 4, hl.TailStrategy.GuardWithIf)
    data = rng.integers(0, 9, (12, 30)).astype(np.float32)  # ties: the first index wins
    check(out, [20, 12], [(a, data)])


@pytest.mark.parametrize("schedule", ["at_y", "at_x"])
def test_argmin_index_computed_at_a_loop(schedule: str, rng: np.random.Generator) -> None:
    """The usual argmin: the consumer reads only the index element (at x and x + 1); the
    value element is read only by the index element's update, and is computed where that
    update reads it (a later round of the compute_at fixpoint)."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, x, y = _argmin(a, "idx_argmin")
    out = hl.Func("idx_out")
    out[x, y] = f[x, y][0] + f[x + 1, y][0] * 10
    f.compute_at(out, y if schedule == "at_y" else x)
    data = rng.integers(0, 9, (12, 30)).astype(np.float32)  # ties: the first index wins
    check(out, [20, 12], [(a, data)])


@pytest.mark.parametrize("schedule", ["at_y", "at_x", "tiled"])
def test_tuple_update_computed_in_two_consumer_stages(schedule: str,
                                                      rng: np.random.Generator) -> None:
    """Realized in both stages of its consumer (a copy of every stage per realization,
    tutorial lesson 9): each realization's update computes its new values from its own
    previous ones, then stores them; Halide's values at y, at x and at a parallel tile's
    outer loop (the consumer's update vectorized)."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, out = _window_argmin(a, both=True)
    x, y = out.args()
    out[x, y] += hl.f32(f[x, y][0]) * f[x + 1, y][1]
    if schedule == "tiled":
        xo, yo, xi, yi = (hl.Var(n) for n in ("xo", "yo", "xi", "yi"))
        out.tile(x, y, xo, yo, xi, yi, 8, 4).parallel(yo)
        out.update(0).tile(x, y, xo, yo, xi, yi, 8, 4).parallel(yo).vectorize(xi, 4)
        f.compute_at(out, xo)
    else:
        f.compute_at(out, y if schedule == "at_y" else x)
    # ties: the first index wins; 4 columns more for the update's tiles, rounded up
    data = rng.integers(0, 9, (12, 34)).astype(np.float32)
    check(out, [20, 12], [(a, data)])


@pytest.mark.parametrize("schedule", ["at_y", "at_xo"])
@pytest.mark.parametrize("form", ["own", "each_other"])
def test_tuple_update_elements_read_a_producer_apart(form: str, schedule: str,
                                                     rng: np.random.Generator) -> None:
    """A Tuple update whose elements read ``g`` (computed at a loop of the update) at
    points the other does not (``x + r`` and ``x + 4``), the elements reading their own
    previous values or each other's (then the new values are computed first): ``g`` is
    computed for all of them, as Halide computes the region of the Tuple (refused before:
    "would not read the value of 'g'", or "'f_0_s1' does not read 'g'" where the store
    reads the new value, not ``g``)."""
    x, y, xo, xi = (hl.Var(n) for n in ("x", "y", "xo", "xi"))
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g, f = hl.Func("g_apart"), hl.Func("f_apart")
    g[x, y] = a[x, y] * 2
    f[x, y] = (hl.f32(0), hl.f32(1))
    r = hl.RDom([(0, 3)], "r")
    old = (f[x, y][0], f[x, y][1]) if form == "own" else (f[x, y][1], f[x, y][0])
    f[x, y] = (old[0] + g[x + r, y], old[1] * g[x + 4, y])
    if schedule == "at_y":
        g.compute_at(f, y)
    else:
        f.update(0).split(x, xo, xi, 4).reorder(xi, r, y, xo)
        g.compute_at(f, xo)
    check(f, [16, 8], [(a, rng.random((10, 24), dtype=np.float32))])
