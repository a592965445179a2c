"""The analytical cost model on small statements: what it reads from the summary and the
three rules that decided interpolate's, nb's and cvtColor's plans on an AVX2 machine.

- an index through a floor division of the loop counter other than a float upsampling
  (``in[2 (x / 2)]``, where a downsampling reads an upsampling) is no vector load: its
  stride averages 1, but gcc leaves the loop scalar (the plan must not count lanes);
- a statement without a reduction holds no sums in registers: a vector loop in blocks
  of 256 costs what the plain vector loop costs (a spill penalty doubled it);
- unroll-and-jam over a stencil's rows loads each row once for all the copies that read
  it (3 taps over 4 rows: 6 row loads, not 12).
"""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from middleend.autosched import cost, search, space
from middleend.autosched.api import machine_model
from middleend.autosched.plan import Loop, Plan, loops
from middleend.driver.summary import summarize

EST = {"N": 600, "M": 1000}


def _pairs(name: str) -> me.Function:
    """``d[y, x] = a[y, 2 (x / 2)] + a[y, 2 (x / 2) + 1]`` and ``u[y, x] = a[y, x / 2]``."""
    with me.Function(name) as f:
        n, m = me.Param("N"), me.Param("M")
        y, x = me.Var("y", 0, n), me.Var("x", 0, m)
        a = me.Input("a", [n, m + 1], me.float32)
        me.Computation("d", [y, x], a[y, (x // 2) * 2] + a[y, (x // 2) * 2 + 1])
        me.Computation("u", [y, x], a[y, x // 2] * 2.0)
    return f


def test_a_read_through_a_floor_division_is_no_vector_load() -> None:
    """Both reads of ``d`` move by 1 per step of ``x`` on average and are marked uneven
    along it: ``x`` is not a vector loop of ``d``; ``u``'s upsampled read is (a dense
    load and a shuffle). The auto schedule computes numpy's values either way."""
    f = _pairs("pairs")
    s = summarize(f, EST, None, list(f.commands.items))
    d, u = s.stmt("d"), s.stmt("u")
    kx = d.vars.index("x")
    reads = [a for a in d.accesses if not a.write]
    assert all(a.strides[kx] == 1.0 and kx in a.uneven for a in reads)
    assert not cost.vectorizable(d.accesses, kx)
    assert cost.vectorizable(u.accesses, u.vars.index("x"))
    f.auto_schedule(estimates=EST)
    a = np.random.default_rng(0).random((9, 14)).astype(np.float32)
    got = f.compile()(a=a)
    xs = np.arange(13)
    np.testing.assert_array_equal(got["d"], a[:, 2 * (xs // 2)] + a[:, 2 * (xs // 2) + 1])
    np.testing.assert_array_equal(got["u"], a[:, xs // 2] * np.float32(2))


def _blur(name: str) -> me.Function:
    """A vertical 3-tap blur of a 2-D input."""
    with me.Function(name) as f:
        n, m = me.Param("N"), me.Param("M")
        y, x = me.Var("y", 0, n), me.Var("x", 0, m)
        a = me.Input("a", [n + 2, m], me.float32)
        me.Computation("b", [y, x], a[y, x] + a[y + 1, x] + a[y + 2, x])
    return f


def test_a_statement_without_a_sum_pays_no_spill_for_its_vector_blocks() -> None:
    """Its 3 loads and its store per vector, and its operations, over the lanes: the
    same in blocks of 256 as along the whole row, and not doubled."""
    f = _blur("vblk")
    st = summarize(f, EST, None, list(f.commands.items)).stmt("b")
    m = machine_model("cpu")
    lanes = m.lanes(4)
    flat = loops(st, (), Plan(("y", "x"), (), vector="x", lanes=lanes))
    blocks = loops(st, (), Plan(("y", "x"), (("x", 256),), vector="x", lanes=lanes))
    want = (st.ops + 4.0) / lanes
    assert cost._per_point(st, blocks, m) == pytest.approx(want)
    assert cost._per_point(st, flat, m) == pytest.approx(want)


def test_unrolled_rows_share_the_rows_they_read() -> None:
    """Jammed over 4 rows, the 3 taps load 6 rows, not 12: 1.5 row loads per point
    and the store, against 3 loads and the store with the rows' copies apart."""
    f = _blur("vjam")
    st = summarize(f, EST, None, list(f.commands.items)).stmt("b")
    m = machine_model("cpu")
    lanes = m.lanes(4)
    index = {v: k for k, v in enumerate(st.vars)}
    vl = Loop("x", "x", 8 * lanes, "full")
    got = cost._jam_per_point(st, Loop("y_i", "y", 4, "inner", "unroll"), vl, index, m)
    assert got == pytest.approx((st.ops + 1.5 + 1.0) / lanes)
    one = cost._jam_per_point(st, Loop("y_i", "y", 1, "inner", "unroll"), vl, index, m)
    assert one == pytest.approx((st.ops + 3.0 + 1.0) / lanes)


def _ab(name: str) -> me.Function:
    """``C = A B`` with ``A[i, k]`` contiguous along ``i`` (a column-major product)."""
    with me.Function(name) as f:
        n, m, kk = me.Param("N", min=1), me.Param("M", min=1), me.Param("K", min=1)
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("k", 0, kk)
        a, b = me.Input("A", [kk, n], me.float64), me.Input("B", [m, kk], me.float64)
        c = me.Computation("C", [j, i], me.cast(me.float64, 0))
        c.update([i, j, k], a[k, i] * b[j, k], name="U", at=[j, i])
    return f


def _tiles(m: cost.MachineModel) -> set[tuple[int, int]]:
    """The register tiles (rows in vectors, columns) of ``_ab``'s update on ``m``."""
    f = _ab("tiles")
    st = summarize(f, {"N": 512, "M": 512, "K": 512}, None,
                   list(f.commands.items)).stmt("U")
    lanes = m.lanes(8)
    return {(dict(p.tiles)["i"] // lanes, dict(p.tiles)["j"])
            for p in space.plans(st, list(st.vars), m) if p.contiguous == "i"}


def test_a_register_tile_leaves_a_register_beside_its_sums_and_operands() -> None:
    """Sums, a row of operand vectors and a broadcast must leave one vector register
    spare: on AVX2's 16, 2 x 6 (12 + 2 + 1) is a candidate and 3 x 4 (12 + 3 + 1) is not
    (gcc spilled a sum of it); with AVX-512's 32 registers both are."""
    caches = (32 << 10, 512 << 10, 32 << 20)
    avx2 = _tiles(cost.MachineModel(32, 16, caches, 2))
    assert (2, 6) in avx2 and (1, 12) in avx2 and (3, 4) not in avx2
    avx512 = _tiles(cost.MachineModel(64, 32, caches, 2))
    assert {(3, 4), (3, 8), (2, 12)} <= avx512 and (3, 12) not in avx512


def test_short_runs_of_a_product_operand_do_not_win_over_whole_panels() -> None:
    """mm2's first product at its benchmark sizes on an AVX2 machine of 16 registers:
    the plan reads ``A`` through panels of the tile's 8 rows along the whole of ``k``
    (8.8 KB runs of ``B``), not ``B`` in 1 KB runs of 128 ``k`` per tile (1.5x the
    time of the expert schedule: each run a new stream the prefetcher learns first)."""
    f = _ab("runs")
    st = summarize(f, {"N": 800, "M": 900, "K": 1100}, None,
                   list(f.commands.items)).stmt("U")
    m = cost.MachineModel(32, 16, (32 << 10, 512 << 10, 32 << 20), 2)
    _, plan, pk = search._tries(st, (), m, set(), packs=True)[0]
    assert pk is not None and pk.buffer == "A" and pk.panel == dict(plan.tiles)["i"], \
        plan.describe()
    assert "k" not in dict(plan.tiles), plan.describe()



def _planes(name: str, dependent: bool) -> me.Function:
    """``out`` reads two of eight planes of ``g``: around each pixel's own level ``li(y,
    x)`` (``dependent``: a data-dependent index along the planes, affine along ``y, x``,
    as the local Laplacian reads its Laplacian levels) or planes 3 and 4."""
    with me.Function(name) as f:
        n, m = me.Param("N"), me.Param("M")
        y, x = me.Var("y", 0, n), me.Var("x", 0, m)
        a = me.Input("a", [n, m], me.float32)
        g = me.Input("g", [8, n, m], me.float32)
        li = me.clamp(me.cast(me.int32, a[y, x] * 7.0), 0, 6) if dependent else 3
        me.Computation("out", [y, x], g[li, y, x] * 0.25 + g[li + 1, y, x] * 0.75)
    return f


def test_a_read_at_a_data_dependent_plane_streams_along_its_planes() -> None:
    """The summary keeps the affine rows of such a read (``y`` and ``x``) and leaves only
    the plane unknown: the model prices the lines of eight planes walked along ``x``, not
    a random line of the whole buffer per read. Its strides stay unknown (a gather: no
    vector loop). Measured at 1100 x 1000 on 2 cores (AVX2 Zen 3): 2.4 ms against 0.25
    for the fixed planes, 10x; the model says 16x (30x when every read was random).
    Numpy's values at a small size."""
    big = {"N": 1100, "M": 1000}
    m = cost.MachineModel(32, 16, (32 << 10, 512 << 10, 32 << 20), 2)
    best = {}
    for dependent in (False, True):
        f = _planes(f"planes{int(dependent)}", dependent)
        st = summarize(f, big, None, list(f.commands.items)).stmt("out")
        best[dependent] = space.ranked(st, (), m)[0][0]
    unknown = float(1 << 20)
    reads = [a for a in st.accesses if a.buffer == "g"]
    assert reads and all(a.strides == (unknown, unknown) for a in reads)
    assert all(a.spans == ((unknown, unknown), (1.0, 0.0), (0.0, 1.0)) for a in reads)
    assert 4 < best[True] / best[False] < 20, best
    rng = np.random.default_rng(4)
    a = rng.random((9, 13)).astype(np.float32)
    g = rng.random((8, 9, 13)).astype(np.float32)
    f.auto_schedule(estimates=big)
    li = np.clip((a * np.float32(7)).astype(np.int32), 0, 6)
    yy, xx = np.indices(a.shape)
    ref = g[li, yy, xx] * np.float32(0.25) + g[li + 1, yy, xx] * np.float32(0.75)
    np.testing.assert_allclose(f.compile()(a=a, g=g)["out"], ref, rtol=1e-6)


def test_a_buffer_of_fresh_memory_pays_the_zeroing_of_its_pages() -> None:
    """A buffer the kernel allocates at 32 MB or more is mapped afresh at every call and
    its pages zeroed at first touch: the model adds a pass over its bytes at memory
    bandwidth (over the cores as a memory-bound loop spreads), nothing below that size."""
    m = cost.MachineModel(32, 16, (32 << 10, 512 << 10, 32 << 20), 2)
    with me.Function("fresh") as f:
        n, w = me.Param("N"), me.Param("M")
        k, y, x = me.Var("k", 0, 8), me.Var("y", 0, n), me.Var("x", 0, w)
        g = me.Input("g", [8, n, w], me.float32)
        me.Computation("p", [k, y, x], g[k, y, x] * 2.0)
    for rows, fresh in ((1100, True), (400, False)):  # 35.2 and 12.8 MB
        st = summarize(f, {"N": rows, "M": 1000}, None, list(f.commands.items)).stmt("p")
        want = 8 * rows * 1000 * 4 / cost.BANDWIDTH[4] / 1.6 if fresh else 0.0
        assert cost.first_touch(st, m) == pytest.approx(want)
