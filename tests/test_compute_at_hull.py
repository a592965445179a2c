"""compute_at's per-iteration footprint written as one convex piece (``islutil.exact_hull``)
only where that is the same set: the tiled stencil chain's footprints are compared point by
point with a footprint numpy computes by dilating each tile (a hull that added or lost a
point fails), a footprint with a hole keeps its hole, values match numpy under several
schedules, and an illegal order inside the tile is still refused by the dataflow check.
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl
import numpy as np
import pytest

import middleend as me
from middleend.driver.lowering import DEFAULT_MAX_OPS, lower
from middleend.ir.islutil import bounded_convex_hull, exact_hull
from middleend.passes import flow

CROSS = [(1, 0), (0, 1), (1, 1), (2, 1), (1, 2)]
BOX = [(a, b) for a in range(3) for b in range(3)]
# rows, cols (neither a multiple of the tile: clipped last tiles), tile, stages
H, W, T, K = 23, 29, 8, 4


def _offsets(k: int) -> list[tuple[int, int]]:
    return CROSS if k % 2 == 0 else BOX


Sched = Callable[[list[me.Computation]], object]


def chain(sched: Sched, gap: bool = False, stages: int = K
          ) -> tuple[me.Function, list[me.Computation]]:
    """``stages`` stencils, each the mean of a cross or a box of the one before over the
    shrinking valid region; ``gap``: the last one reads its producer at ``j`` and ``j + 6``
    only (its clipped last tile then needs two strips of it with a hole between)."""
    with me.Function("chain") as f:
        inp = me.Input("inp", [H, W], me.float32)
        prev, out = inp, []
        for k in range(stages):
            offs, shrink = _stage(k, gap and k == stages - 1)
            i, j = me.Var("i", 0, H - 2 * (k + 1)), me.Var("j", 0, W - shrink)
            total = prev[i + offs[0][0], j + offs[0][1]]
            for a, b in offs[1:]:
                total = total + prev[i + a, j + b]
            s = me.Computation(f"s{k}", [i, j], total / float(len(offs)))
            out.append(s)
            prev = s
        sched(out)
    return f, out


def _stage(k: int, strips: bool) -> tuple[list[tuple[int, int]], int]:
    """Stage ``k``'s offsets and how many columns shorter than the input it is."""
    return ([(1, 0), (1, 6)], 2 * (k + 1) + 4) if strips else (_offsets(k), 2 * (k + 1))


def chain_ref(a: np.ndarray, gap: bool = False, stages: int = K) -> np.ndarray:
    prev = a
    for k in range(stages):
        offs, shrink = _stage(k, gap and k == stages - 1)
        h, w = H - 2 * (k + 1), W - shrink
        total = prev[offs[0][0]:offs[0][0] + h, offs[0][1]:offs[0][1] + w]
        for x, y in offs[1:]:
            total = total + prev[x:x + h, y:y + w]
        prev = total / np.float32(len(offs))
    return prev


def footprints() -> list[set[tuple[int, int, int, int]]]:
    """Per stage but the last, the points ``(tile row, tile col, i, j)`` the tiles of the
    last stage need of it: each tile's mask dilated backwards through the stencils."""
    out: list[set[tuple[int, int, int, int]]] = [set() for _ in range(K - 1)]
    h, w = H - 2 * K, W - 2 * K
    for t0 in range(-(-h // T)):
        for t1 in range(-(-w // T)):
            need = {(i, j) for i in range(t0 * T, min(t0 * T + T, h))
                    for j in range(t1 * T, min(t1 * T + T, w))}
            for k in range(K - 1, 0, -1):
                need = {(i + a, j + b) for i, j in need for a, b in _offsets(k)}
                out[k - 1] |= {(t0, t1, i, j) for i, j in need}
    return out


def _tiled(st: list[me.Computation]) -> None:
    st[-1].tile("i", "j", T, T, "i0", "j0", "i1", "j1")
    for s in st[:-1]:
        s.compute_at(st[-1], "j0")


def _tiled_vectorized(st: list[me.Computation]) -> None:
    _tiled(st)
    st[-1].vectorize("j1", 4)
    for s in st[:-1]:
        s.vectorize("j", 4)


def _tiled_parallel(st: list[me.Computation]) -> None:
    """Parallel tile rows, each stage's buffer private to a tile (allocate_at)."""
    _tiled(st)
    for s in st[:-1]:
        s.allocate_at(st[-1], "j0")
    st[-1].parallelize("i0")


def _points(s: isl.Set) -> set[tuple[int, ...]]:
    out: set[tuple[int, ...]] = set()
    n = s.dim(isl.dim_type.set)
    s.foreach_point(lambda p: out.add(tuple(
        p.get_coordinate_val(isl.dim_type.set, q).to_python() for q in range(n))))
    return out


def test_footprints_are_the_exact_sets() -> None:
    """Every stage's per-tile region holds exactly the points numpy's dilation needs, in
    one piece (a tile grown by crosses and boxes, clipped at the image's edge)."""
    f, _ = chain(_tiled)
    ts = f.lower().ts
    for k, ref in enumerate(footprints()):
        dom = ts.comps[f"s{k}"].ext_domain
        assert _points(dom) == ref, f"s{k}"
        assert dom.n_basic_set() == 1, (f"s{k}", dom)


def strips() -> me.Function:
    """``c`` reads ``p`` at ``j`` and ``j + 6``, tiled by 8 columns of 17: the last tile
    (one column) needs two columns of ``p`` with a hole between (a hull would fill it)."""
    with me.Function("strips") as f:
        inp = me.Input("inp", [5, 23], me.float32)
        i, j = me.Var("i", 0, 5), me.Var("j", 0, 23)
        p = me.Computation("p", [i, j], inp[i, j] * 2.0)
        i, j = me.Var("i", 0, 5), me.Var("j", 0, 17)
        c = me.Computation("c", [i, j], p[i, j] + p[i, j + 6])
        c.tile("i", "j", 4, 8, "i0", "j0", "i1", "j1")
        p.compute_at(c, "j0")
    return f


def test_a_footprint_with_a_hole_keeps_it() -> None:
    f = strips()
    dom = f.lower().ts.comps["p"].ext_domain
    ref = {(t0, t1, i, j) for t0 in range(2) for t1 in range(3)
           for i in range(4 * t0, min(4 * t0 + 4, 5))
           for jj in range(8 * t1, min(8 * t1 + 8, 17)) for j in (jj, jj + 6)}
    assert _points(dom) == ref
    assert {j for (t0, t1, i, j) in ref if (t0, t1, i) == (0, 2, 0)} == {16, 22}
    a = np.random.default_rng(5).random((5, 23)).astype(np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["c"], 2 * a[:, :17] + 2 * a[:, 6:],
                               rtol=1e-6)


@pytest.mark.parametrize("sched", [_tiled, _tiled_vectorized, _tiled_parallel],
                         ids=["tiled", "vectorized", "parallel"])
def test_tiled_chain_matches_numpy(sched: Sched) -> None:
    a = np.random.default_rng(3).random((H, W)).astype(np.float32)
    f, _ = chain(sched)
    out = f.compile()(inp=a)[f"s{K - 1}"]
    np.testing.assert_allclose(out, chain_ref(a), rtol=1e-5)


def test_producer_after_its_consumer_in_the_tile_refused() -> None:
    """A stage moved after the one reading it, inside the same tile: the dataflow check
    over the convex footprints still sees the reads without their values."""
    def late(st: list[me.Computation]) -> None:
        _tiled(st)
        st[1].after(st[2], "j0")

    f, _ = chain(late)
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert e.command is not None and "s1.after" in e.command, str(e)
    assert e.dependence and "s1[" in e.dependence and "s2[" in e.dependence, str(e)


@pytest.mark.parametrize("sched", [_tiled, _tiled_parallel], ids=["shared", "private"])
def test_a_chain_through_a_hole_lowers_within_a_tenth_of_the_isl_bound(
        sched: Sched) -> None:
    """The stages before a footprint with a hole have regions of several pieces: the
    check's dataflow joins and its compared relations coalesced keep them cheap (21 s and
    5 s before; with one more stage, ISL's dataflow ran out of memory)."""
    f, _ = chain(sched, gap=True, stages=3)
    lower(f, max_isl_ops=DEFAULT_MAX_OPS // 10)
    a = np.random.default_rng(6).random((H, W)).astype(np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["s2"], chain_ref(a, True, 3), rtol=1e-5)


def test_parallel_tiles_sharing_the_buffers_refused() -> None:
    """Without allocate_at, the tiles of a row write the stages' shared buffers where the
    other tiles read them (their borders overlap): a parallel tile loop is refused."""
    def shared(st: list[me.Computation]) -> None:
        _tiled(st)
        st[-1].parallelize("i0")

    f, _ = chain(shared)
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    assert ei.value.command is not None and "s3.parallelize" in ei.value.command


def sums(sched: Callable[[me.Computation, me.Computation], object]) -> me.Function:
    """``acc[i]`` = sum over ``r`` of ``a[i, r]``, an update chain on one element, and
    ``b[i] = acc[i] + acc[i + 1]``: each element written once per ``r``."""
    with me.Function("sums") as f:
        a = me.Input("a", [9, 5], me.float32)
        i, r = me.Var("i", 0, 9), me.Var("r", 0, 5)
        acc = me.Computation("acc", [i], 0.0)
        upd = me.Computation("upd", [i, r], acc.memory[i] + a[i, r])
        upd.store_in(acc, [i])
        i = me.Var("i", 0, 8)
        b = me.Computation("b", [i], acc[i] + acc[i + 1])
        sched(upd, b)
    return f


def _late(st: list[me.Computation]) -> None:
    _tiled(st)
    st[1].after(st[2], "j0")


@pytest.mark.parametrize("make", [
    lambda: chain(_tiled)[0], lambda: chain(_tiled_parallel)[0], lambda: chain(_late)[0],
    strips, lambda: sums(lambda u, b: None), lambda: sums(lambda u, b: u.interchange("i", "r"))],
    ids=["shared", "private", "illegal", "hole", "reduction", "reduction-interchanged"])
def test_group_flow_is_isl_flow(make: Callable[[], me.Function],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The dataflow found by joins where writes are unique per prefix (``group_flow``) is
    ISL's (``isl_flow``), problem by problem, in legal and illegal programs."""
    mine, isl_flow, equal = flow.group_flow, flow.isl_flow, []

    def both(sinks: isl.UnionMap, must: isl.UnionMap, may: isl.UnionMap,
             sched: isl.UnionMap) -> isl.UnionMap:
        got = mine(sinks, must, may, sched)
        equal.append(got.is_equal(isl_flow(sinks, must, may, sched)))
        return got

    monkeypatch.setattr(flow, "group_flow", both)
    try:
        make().lower()
    except me.ScheduleError:
        pass
    assert equal and all(equal), equal


def test_exact_hull_keeps_the_set() -> None:
    ctx = isl.Context()
    # a 4x4 square grown by a cross: five overlapping rectangles, an octagon's points
    plus = isl.Map.read_from_str(ctx, "[n] -> { [t] -> [x, y] : (4t - 1 <= x <= 4t + 4 and "
                                 "0 <= y <= 3) or (4t <= x <= 4t + 3 and -1 <= y <= 4) }")
    one = exact_hull(plus)
    assert one.n_basic_map() == 1 and one.is_equal(plus)
    for text in ("{ [t] -> [x] : 4t <= x <= 4t + 1 or 4t + 3 <= x <= 4t + 4 }",  # a hole
                 "{ [t] -> [x, y] : (0 <= x <= 3 and 0 <= y <= 1) or "  # an L
                 "(0 <= x <= 1 and 0 <= y <= 3) }",
                 "{ [x] : exists (e : x = 2e and 0 <= x <= 8) }"):  # even points only
        m = isl.Map.read_from_str(ctx, text) if "->" in text else \
            isl.Map.from_range(isl.Set.read_from_str(ctx, text))
        m = m.union(m)  # several pieces where ISL keeps them
        kept = exact_hull(m)
        assert kept.is_equal(m), text


def test_exact_hull_bounded_on_pieces_of_many_dimensions() -> None:
    """nl_means's per-row footprint: {c = 3} beside {c = i0} in 11 dimensions, whose
    convex hull ISL could not find within 2e8 operations. exact_hull keeps the two pieces
    within a small bound of the caller's context, and a convex hull past its own budget
    gives up the rewrite instead of failing the caller's context."""
    ctx = isl.Context()
    ctx.set_max_operations(200_000)
    box = ("0 <= i0 <= 2 and 0 <= i1 <= 2 and 0 <= i2 <= 3 and x >= 4o and 0 <= x <= 15 "
           "and x <= 3 + 4o and -2 <= ry <= 2 and -2 <= rx <= 2")
    two = isl.Map.read_from_str(ctx, (
        f"{{ [i0, i1, i2, 3, 4i1 + i2, o] -> s[3, 4i1 + i2, x, ry, rx] : {box}; "
        f"[i0, i1, i2, i0, 4i1 + i2, o] -> s[i0, 4i1 + i2, x, ry, rx] : {box} }}"))
    kept = exact_hull(two)
    assert kept.n_basic_map() == 2 and kept.is_equal(two)
    # the octagon of the test above needs some 10^4 operations: a budget of 100 gives up
    plus = isl.Map.read_from_str(ctx, "{ [t] -> [x, y] : (4t - 1 <= x <= 4t + 4 and "
                                 "0 <= y <= 3) or (4t <= x <= 4t + 3 and -1 <= y <= 4) }")
    assert bounded_convex_hull(plus, 100).n_basic_map() == 2
    assert bounded_convex_hull(plus).n_basic_map() == 1
