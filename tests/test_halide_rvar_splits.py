"""Splits of RDom loops as Halide makes them (frontends/halide/rloops.py), against Halide's
realize: an RVar split from an RDom min that is not a multiple of the factor (Halide's
tiles start at the min, the middle-end's at multiples of the factor: the front-end shifts
the loop first), and a fused RDom loop split and its pieces reordered apart, in a Tuple
update whose elements read each other (argmax / argmin: the index of a tie is the one
visited last, so another order gives another index) and in plain reductions (the same
schedules, as regressions). Few distinct values, many ties, exact comparison."""

from __future__ import annotations

from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, check, halide_realize

from frontends.halide import UnsupportedHalideFeature, compile_pipeline


def _argext(op: str, rdom: list[tuple[int, int]], where: bool = False
            ) -> tuple[hl.Func, hl.RDom, hl.ImageParam]:
    """Per row y: (the extremum of ``a`` over ``rdom``, each RVar's value there), in the
    form Halide proves associative and commutative (value first, the indices kept by a
    select while the new value is not better); ``a`` is read at ``(rx - lo_x) + (ry -
    lo_y) * ext_x``, from 0 whatever the mins."""
    y = hl.Var("y")
    a = hl.ImageParam(hl.Int(32), 2, "a")
    am = hl.Func(f"arg{op}")
    r = hl.RDom(rdom, "r")
    rv = [r[i] for i in range(len(rdom))]
    if where:  # r.x in [0, 4]: Halide still loops over the box, the predicate inside
        r.where(r.x < 5)
    at = rv[0] - rdom[0][0] + (rdom[0][1] * (rv[1] - rdom[1][0]) if len(rv) > 1 else 0)
    am[y] = (a[0, y], *([0] * len(rv)))
    v = a[at, y]
    keep = v < am[y][0] if op == "max" else am[y][0] < v
    best = hl.max(am[y][0], v) if op == "max" else hl.min(am[y][0], v)
    am[y] = (best, *[hl.select(keep, am[y][1 + i], w) for i, w in enumerate(rv)])
    return am, r, a


def _sum(rdom: list[tuple[int, int]], dtype: str) -> tuple[hl.Func, hl.RDom, hl.ImageParam]:
    """The plain reduction over the same RDom: ``f[y] += a[...] * (rx + 1)``."""
    y = hl.Var("y")
    t = hl.Int(32) if dtype == "int" else hl.Float(32)
    a = hl.ImageParam(t, 2, "a")
    f = hl.Func(f"sum_{dtype}")
    r = hl.RDom(rdom, "r")
    rv = [r[i] for i in range(len(rdom))]
    at = rv[0] - rdom[0][0] + (rdom[0][1] * (rv[1] - rdom[1][0]) if len(rv) > 1 else 0)
    f[y] = hl.cast(t, 0)
    f[y] += a[at, y] * hl.cast(t, rv[0] + 1)
    return f, r, a


def _data(rng: np.random.Generator, width: int, dtype: str = "int") -> np.ndarray:
    """Integers with many ties, or floats over nine decades (a sum's rounding then
    depends on its order)."""
    if dtype == "int":
        return rng.integers(0, 3, (5, width)).astype(np.int32)
    scale = 10.0 ** rng.integers(-4, 5, (5, width))
    return (rng.random((5, width)) * scale).astype(np.float32)


def _check_sum(f: hl.Func, a: hl.ImageParam, data: np.ndarray) -> None:
    """Integers with check(); floats bit for bit, against Halide with strict_float and
    without contraction on our side: the same additions in the same order."""
    if data.dtype == np.int32:
        check(f, [5], [(a, data)])
        return
    ours = compile_pipeline(f, fp_contract=False).realize([5], a=data)
    (ref,) = halide_realize([f], [5], [(a, data)], STRICT)
    np.testing.assert_array_equal(ours, ref)


def _split_swapped(tail: str) -> Callable[[hl.Func, hl.RDom], None]:
    def sched(f: hl.Func, r: hl.RDom) -> None:
        rxo, rxi = hl.RVar("rxo"), hl.RVar("rxi")
        f.update(0).split(r.x, rxo, rxi, 8, getattr(hl.TailStrategy, tail)).reorder(rxo, rxi)
    return sched


@pytest.mark.parametrize("tail", ["GuardWithIf", "Auto"])
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("lo", [3, -5, 1])
def test_argext_split_off_the_min(lo: int, op: str, tail: str,
                                  rng: np.random.Generator) -> None:
    """``RDom(lo, 100)`` split by 8 and the two loops swapped (``reorder(rxo, rxi)``:
    ``rxo`` innermost): Halide visits ``lo + 8 * rxo + rxi``, rxi outermost."""
    am, r, a = _argext(op, [(lo, 100)])
    _split_swapped(tail)(am, r)
    check(am, [5], [(a, _data(rng, 100))])


@pytest.mark.parametrize("dtype", ["int", "float"])
@pytest.mark.parametrize("tail", ["GuardWithIf", "Auto"])
def test_sum_split_off_the_min(tail: str, dtype: str, rng: np.random.Generator) -> None:
    """The plain reduction under the same schedule (Halide proves a sum commutative): the
    float sum's rounding is Halide's."""
    f, r, a = _sum([(3, 100)], dtype)
    _split_swapped(tail)(f, r)
    _check_sum(f, a, _data(rng, 100, dtype))


def test_argext_2d_split_off_the_min(rng: np.random.Generator) -> None:
    """2-D, ``r.x`` from 1 split by 4, its pieces on either side of ``r.y``."""
    am, r, a = _argext("max", [(1, 7), (2, 4)])
    rxo, rxi = hl.RVar("rxo"), hl.RVar("rxi")
    am.update(0).split(r.x, rxo, rxi, 4).reorder(rxo, r.y, rxi)
    check(am, [5], [(a, _data(rng, 32))])


def _fuse_split_apart(f: hl.Func, r: hl.RDom) -> None:
    rf, rfo, rfi = hl.RVar("rf"), hl.RVar("rfo"), hl.RVar("rfi")
    f.update(0).reorder(r.y, r.x).fuse(r.y, r.x, rf).split(rf, rfo, rfi, 4) \
        .reorder(rfo, rfi)


def _fuse_split_apart_3(f: hl.Func, r: hl.RDom) -> None:
    """The fused loop (r.x outer) split by 3, its pieces swapped, then the inner piece
    split again and the result reordered: loops of loops made from RVars."""
    rf, rfo, rfi, ro2, ri2 = (hl.RVar(n) for n in ("rf", "rfo", "rfi", "ro2", "ri2"))
    f.update(0).fuse(r.x, r.y, rf).split(rf, rfo, rfi, 3).split(rfo, ro2, ri2, 2) \
        .reorder(ro2, rfi, ri2)


def _split_fuse_split(f: hl.Func, r: hl.RDom) -> None:
    """r.x (from 3) split by 2, its inner piece fused with r.y, that split by 3, apart."""
    rxo, rxi, rf, rfo, rfi = (hl.RVar(n) for n in ("rxo", "rxi", "rf", "rfo", "rfi"))
    f.update(0).split(r.x, rxo, rxi, 2).reorder(r.y, rxi, rxo).fuse(r.y, rxi, rf) \
        .split(rf, rfo, rfi, 3).reorder(rfo, rxo, rfi)


_FUSED = [_fuse_split_apart, _fuse_split_apart_3, _split_fuse_split]
_FUSED_IDS = ["fuse_split_swap", "fuse_split_split", "split_fuse_split"]


@pytest.mark.parametrize("schedule", _FUSED, ids=_FUSED_IDS)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("rdom", [[(0, 8), (0, 4)], [(3, 5), (1, 7)]], ids=["at0", "off"])
def test_argext_fused_split_apart(rdom: list[tuple[int, int]], op: str,
                                  schedule: Callable[[hl.Func, hl.RDom], None],
                                  rng: np.random.Generator) -> None:
    """A fused RDom loop split and its pieces reordered apart: Halide's fused loop runs
    from 0 over the inner loop's extent; so does ours, and the tiles are Halide's."""
    am, r, a = _argext(op, rdom)
    schedule(am, r)
    check(am, [5], [(a, _data(rng, rdom[0][1] * rdom[1][1]))])


@pytest.mark.parametrize("schedule", _FUSED, ids=_FUSED_IDS)
@pytest.mark.parametrize("dtype", ["int", "float"])
def test_sum_fused_split_apart(dtype: str, schedule: Callable[[hl.Func, hl.RDom], None],
                               rng: np.random.Generator) -> None:
    f, r, a = _sum([(3, 5), (1, 7)], dtype)
    schedule(f, r)
    _check_sum(f, a, _data(rng, 35, dtype))


def test_halide_refuses_tails_that_revisit() -> None:
    """RoundUp and ShiftInwards would run an update's instance twice (or past its
    RDom): Halide refuses them for an RVar, so no such pipeline reaches the front-end."""
    for tail in (hl.TailStrategy.RoundUp, hl.TailStrategy.ShiftInwards):
        am, r, _ = _argext("max", [(3, 100)])
        with pytest.raises(hl.HalideError, match="may change the meaning"):
            am.update(0).split(r.x, hl.RVar("o"), hl.RVar("i"), 8, tail)


def test_fused_split_apart_with_a_where_clause_is_refused(rng: np.random.Generator) -> None:
    """With a where clause the middle-end's fused loop spans the values the domain
    takes, not the RDom's box: its tiles are not Halide's. Refused in one line naming the
    Func and the stage, where Halide runs it."""
    am, r, a = _argext("max", [(0, 8), (0, 4)], where=True)
    _fuse_split_apart(am, r)
    data = _data(rng, 32)
    a.set(hl.Buffer(data))
    am.realize([5])  # Halide runs it
    with pytest.raises(UnsupportedHalideFeature) as e:
        compile_pipeline(am).realize([5], a=data)
    assert e.value.func == am.name() and e.value.stage == 1
    assert "\n" not in str(e.value) and "pieces reordered apart" in str(e.value)


@pytest.mark.parametrize("at", ["rxo", "rxi"])
def test_argext_split_off_the_min_with_a_producer_at_its_loops(
        at: str, rng: np.random.Generator) -> None:
    """A producer computed at either piece of the shifted split (the placement follows
    the middle-end's loops, shifted or not)."""
    y, x = hl.Var("y"), hl.Var("x")
    a = hl.ImageParam(hl.Int(32), 2, "a")
    p = hl.Func("p")
    p[x, y] = a[x, y] * 2 + 1
    r = hl.RDom([(3, 21)], "r")
    f = hl.Func("argmax_at")
    f[y] = (-1, 0)
    v = p[r.x, y]
    f[y] = (hl.max(f[y][0], v), hl.select(v < f[y][0], f[y][1], r.x))
    rxo, rxi = hl.RVar("rxo"), hl.RVar("rxi")
    f.update(0).split(r.x, rxo, rxi, 4).reorder(rxo, rxi)
    p.compute_at(f, rxo if at == "rxo" else rxi)
    check(f, [5], [(a, _data(rng, 30))])
