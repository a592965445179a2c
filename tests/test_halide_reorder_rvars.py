"""Halide's reordering of a reduction's RVars (frontends/halide/rvars.py), against Halide's
realize: an update Halide proves associative and commutative (a sum, a max, a Tuple of
such) under reorders of its RVars (2-D and 3-D, with a split RVar, a where clause, a
parallel pure Var, an atomic parallel RVar); a pure RVar reordered in a non-associative
update and a reordered constant assignment (Halide proves nothing there, and we mark
nothing); and Halide's refusal. Splits off an RDom's min and fused loops split apart:
test_halide_rvar_splits.py."""

from __future__ import annotations

from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import check


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


def test_reordered_rvars(rng: np.random.Generator) -> None:
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = hl.Func("rsum")
    r = hl.RDom([(0, 29), (0, 17)], "r")
    f[x] = hl.f32(0)
    f[x] += a[r.x, r.y] * hl.f32(x + 1)
    f.update(0).reorder(r.y, r.x)
    check(f, [5], [(a, _f32(rng, 17, 29))])


def _sched_3d(f: hl.Func, r: hl.RDom, x: hl.Var) -> None:
    f.update(0).reorder(r.y, r.z, r.x)  # innermost first: r.x outermost, then r.z


def _sched_split(f: hl.Func, r: hl.RDom, x: hl.Var) -> None:
    rxo, rxi = hl.RVar("rxo"), hl.RVar("rxi")  # 11 = 2 * 4 + 3: a partial tile
    f.update(0).split(r.x, rxo, rxi, 4).reorder(rxo, r.z, rxi, r.y)


def _sched_parallel_x(f: hl.Func, r: hl.RDom, x: hl.Var) -> None:
    f.update(0).reorder(r.z, r.y, r.x, x).parallel(x)


def _sched_atomic(f: hl.Func, r: hl.RDom, x: hl.Var) -> None:
    f.update(0).atomic().reorder(r.x, r.z, r.y).parallel(r.y)


@pytest.mark.parametrize("schedule", [_sched_3d, _sched_split, _sched_parallel_x,
                                      _sched_atomic], ids=["3d", "split", "parallel_x",
                                                           "atomic_parallel_rvar"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reordered_3d_reduction(schedule: Callable[[hl.Func, hl.RDom, hl.Var], None],
                                op: str, rng: np.random.Generator) -> None:
    """Integer data: the sums are exact in any order, so any difference is a wrong one."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(32), 3, "a")
    f = hl.Func(f"r3_{op}")
    r = hl.RDom([(0, 11), (0, 5), (0, 3)], "r")
    f[x] = 0 if op == "sum" else -(2 ** 30)
    term = a[r.x, r.y, r.z] * (x + 1)
    f[x] = f[x] + term if op == "sum" else hl.max(f[x], term)
    schedule(f, r, x)
    check(f, [4], [(a, rng.integers(-100, 100, (3, 5, 11)).astype(np.int32))])


def test_reordered_triangular_rdom(rng: np.random.Generator) -> None:
    """``r.where(r.y <= r.x)``: the inner RVar's range depends on the outer one; swapped,
    the other one's does."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = hl.Func("tri")
    r = hl.RDom([(0, 12), (0, 12)], "r")
    r.where(r.y <= r.x)
    f[x] = hl.f32(0)
    f[x] += a[r.x, r.y] * hl.f32(x + 1)
    f.update(0).reorder(r.y, r.x)
    check(f, [4], [(a, _f32(rng, 12, 12))])


def test_reordered_tuple_of_reductions(rng: np.random.Generator) -> None:
    """A Tuple whose elements read only themselves: each element commutes on its own."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = hl.Func("sum_max")
    r = hl.RDom([(0, 6), (0, 5)], "r")
    f[x] = (hl.f32(0), hl.f32(-1e9))
    f[x] = (f[x][0] + a[r.x, r.y] * hl.f32(x + 1), hl.max(f[x][1], a[r.x, r.y] - hl.f32(x)))
    f.update(0).reorder(r.y, r.x)
    check(f, [3], [(a, _f32(rng, 5, 6))])


def test_reorder_follows_halides_rule(rng: np.random.Generator) -> None:
    """Halide refuses to swap the impure RVars of a non-associative update itself, at the
    reorder() call (so no such pipeline reaches the front-end), and accepts swapping a pure
    RVar (no two of its values touch one element): that one compiles as it is, in Layer
    I's order per element, without commute() (whose form check would refuse it)."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    r = hl.RDom([(0, 9), (0, 7)], "r")
    g = hl.Func("twice")
    g[x] = hl.f32(1)
    g[x] = g[x] * 2 + a[r.x, r.y]
    with pytest.raises(hl.HalideError, match="can't reorder RVars .* because it may change "
                                             "the meaning of the algorithm"):
        g.update(0).reorder(r.y, r.x)
    p = hl.Func("pure_rvar")
    p[x] = hl.f32(1)
    p[r.x] = p[r.x] * 0.5 + a[r.x, r.y]
    p.update(0).reorder(r.y, r.x)
    check(p, [9], [(a, _f32(rng, 7, 9))])


def test_reordered_constant_assignment(rng: np.random.Generator) -> None:
    """``f[r.x + r.y] = 7``: Halide reorders a constant assignment without a proof, and so
    do we without commute() (instances writing one element store the same value)."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    f = hl.Func("scatter7")
    r = hl.RDom([(0, 5), (0, 4)], "r")
    f[x] = a[x]
    f[r.x + r.y] = hl.f32(7)
    f.update(0).reorder(r.y, r.x)
    check(f, [10], [(a, _f32(rng, 10))])


def _argext(op: str, lo: int = 0) -> tuple[hl.Func, hl.RDom, hl.Var, hl.ImageParam]:
    """Per row y: (the extremum over a 5 x 4 RDom, its x, its y), in the form Halide
    proves associative and commutative (the value first, the indices following it with a
    select of the old ones while the new value is not better): Tuple elements that read
    each other. Ties take the new index, so the result depends on the order the RDom is
    visited in, and Halide's is the scheduled one."""
    y = hl.Var("y")
    a = hl.ImageParam(hl.Int(32), 2, "a")
    am = hl.Func(f"arg{op}")
    r = hl.RDom([(lo, 8), (0, 4)], "r")
    am[y] = (a[0, y], 0, 0)
    v = a[r.x - lo + 8 * r.y, y]
    keep = v < am[y][0] if op == "max" else am[y][0] < v
    best = hl.max(am[y][0], v) if op == "max" else hl.min(am[y][0], v)
    am[y] = (best, hl.select(keep, am[y][1], r.x), hl.select(keep, am[y][2], r.y))
    return am, r, y, a


@pytest.mark.parametrize("schedule", ["swap", "split", "split_parallel_y", "at_row", "fuse",
                                      "split_fuse", "fuse_split"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_reordered_argmax(op: str, schedule: str, rng: np.random.Generator) -> None:
    """A reordered argmax / argmin Tuple (Halide accepts it): Layer I runs it in the
    scheduled order (rvars.scheduled_order), so the index of a tie is Halide's; few
    distinct values, many ties, exact comparison."""
    am, r, y, a = _argext(op)
    rxo, rxi = hl.RVar("rxo"), hl.RVar("rxi")
    out = am
    if schedule == "swap":
        am.update(0).reorder(r.y, r.x)
    elif schedule.startswith("split"):  # r.x's pieces on either side of r.y
        am.update(0).split(r.x, rxo, rxi, 4).reorder(rxo, r.y, rxi)
        if schedule == "split_parallel_y":
            am.update(0).parallel(y)
    elif schedule == "fuse":  # one loop over the RDom, r.x outermost
        am.update(0).reorder(r.y, r.x).fuse(r.y, r.x, hl.RVar("rf"))
    elif schedule == "split_fuse":  # r.x's outer piece, then (r.y, r.x's inner) fused
        am.update(0).split(r.x, rxo, rxi, 4).reorder(rxi, r.y, rxo) \
            .fuse(rxi, r.y, hl.RVar("rf"))
    elif schedule == "fuse_split":  # the fused loop split again, its pieces in order
        rf = hl.RVar("rf")
        am.update(0).reorder(r.y, r.x).fuse(r.y, r.x, rf).split(rf, rxo, rxi, 8)
    else:  # computed per row of a consumer, the update swapped
        out = hl.Func("at_row_out")
        out[y] = am[y][0] * 100 + am[y][1] * 10 + am[y][2]
        am.compute_at(out, y)
        am.update(0).reorder(r.y, r.x)
    check(out, [6], [(a, rng.integers(0, 3, (6, 32)).astype(np.int32))])
