"""Matrix multiplication as an initialisation plus an update (a reduction over k), written
out with ``set_expression`` + ``store_in`` and with the ``update`` helper, under several
schedules and on square (N = 67) and rectangular (N x K times K x M) sizes."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me


def matmul(schedule=None, helper: bool = False, rect: bool = False) -> tuple[me.Function, str]:
    """Returns the function and the name of the update computation.
    ``schedule(c0, c1)`` where c0 initialises C and c1 accumulates into it."""
    with me.Function("mm") as f:
        if rect:
            N, K, M = me.Param("N"), me.Param("K"), me.Param("M")
        else:
            N = K = M = me.Param("N")
        i, j, k = me.Var("i", 0, N), me.Var("j", 0, M), me.Var("k", 0, K)
        A = me.Input("A", [N, K], me.float32)
        B = me.Input("B", [K, M], me.float32)
        c0 = me.Computation("C", [i, j], 0.0)
        if helper:
            c1 = c0.update([i, j, k], A[i, k] * B[k, j])
        else:
            c1 = me.Computation("c1", [i, j, k], dtype=me.float32)
            c1.set_expression(c1[i, j, k - 1] + A[i, k] * B[k, j])
            c1.store_in(c0, [i, j])
        if schedule is not None:
            schedule(c0, c1)
    return f, c1.name


def int_valued(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Small integers as float32: every product and partial sum is exact, so the result
    does not depend on summation order or FMA contraction."""
    return rng.integers(-4, 5, shape).astype(np.float32)


# ----------------------------------------------------------------- schedules
def s_none(c0, c1):
    pass


def s_tiled_vectorized(c0, c1):
    c0.tile("i", "j", 32, 32, "i0", "j0", "i1", "j1")
    c1.tile("i", "j", 32, 32, "i0", "j0", "i1", "j1")
    c1.interchange("j1", "k")  # i0 j0 i1 k j1
    c1.interchange("i1", "k")  # i0 j0 k i1 j1
    c1.vectorize("j1", 8)
    c1.after(c0, "j0")


def s_unroll(c0, c1):
    c1.unroll("k", 4)


def s_parallel(c0, c1):
    c1.after(c0, "i")
    c0.parallelize("i")
    c1.parallelize("i")


def s_k_outermost(c0, c1):
    c1.interchange("i", "k")


def check_none(k, upd, nest, outer, counts):
    assert nest(k) == {"C": {("i", "j")}, upd: {("i", "j", "k")}}
    assert outer(k) == ["i", "i"]


def check_tiled(k, upd, nest, outer, counts):
    n = nest(k)
    assert n["C"] == {("i0", "j0", "i1", "j1")}
    assert ("i0", "j0", "k", "i1", "j1_vo", "j1_vi[vector]") in n[upd], n
    assert all(p[:4] == ("i0", "j0", "k", "i1") and p[-1] == "j1_vi[vector]"
               for p in n[upd]), n
    assert outer(k) == ["i0"], "C and the update must share the (i0, j0) tile loops"
    assert "omp simd" in k.source


def check_unroll(k, upd, nest, outer, counts):
    # the full groups of 4 in the k_uo loop; the partial last group (67 and 23 are not
    # multiples of 4) generated apart, after it, without a guard in the unrolled body
    assert nest(k)[upd] == {("i", "j", "k_uo"), ("i", "j")}
    assert counts(k)[upd] >= 4


def check_parallel(k, upd, nest, outer, counts):
    assert nest(k) == {"C": {("i[parallel]", "j")}, upd: {("i[parallel]", "j", "k")}}
    assert outer(k) == ["i"]
    assert "me_parallel_for(" in k.source


def check_k_outermost(k, upd, nest, outer, counts):
    assert nest(k)[upd] == {("k", "j", "i")}


SCHEDULES = [
    pytest.param(s_none, check_none, id="none"),
    pytest.param(s_tiled_vectorized, check_tiled, id="tile32_k_out_vectorize"),
    pytest.param(s_unroll, check_unroll, id="unroll_k4"),
    pytest.param(s_parallel, check_parallel, id="parallel_i"),
    pytest.param(s_k_outermost, check_k_outermost, id="k_outermost"),
]
SIZES = [
    pytest.param(False, (67, 67, 67), id="square67"),
    pytest.param(True, (37, 23, 29), id="rect37x23x29"),
]


@pytest.mark.parametrize("helper", [False, True], ids=["store_in", "update_helper"])
@pytest.mark.parametrize("rect,dims", SIZES)
@pytest.mark.parametrize("schedule,check", SCHEDULES)
def test_matmul_matches_numpy(schedule, check, rect, dims, helper, rng, assert_close_f32,
                              loop_nest, outer_loops, stmt_counts):
    f, upd = matmul(schedule, helper=helper, rect=rect)
    assert upd == ("C_update1" if helper else "c1")
    kern = f.compile(target="cpu")
    n, kk, m = dims
    a, b = int_valued(rng, (n, kk)), int_valued(rng, (kk, m))
    out = kern(A=a, B=b)
    assert list(out) == ["C"]
    assert_close_f32(out["C"], a @ b)
    check(kern, upd, loop_nest, outer_loops, stmt_counts)


@pytest.mark.parametrize("schedule", [s_none, s_tiled_vectorized, s_parallel],
                         ids=["none", "tiled", "parallel"])
def test_matmul_random_floats(schedule, rng):
    kern = matmul(schedule, rect=True)[0].compile()
    a = rng.standard_normal((33, 31), dtype=np.float32)
    b = rng.standard_normal((31, 40), dtype=np.float32)
    c = kern(A=a, B=b)["C"]
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_matmul_is_reentrant_with_different_sizes(rng, assert_close_f32):
    kern = matmul(s_tiled_vectorized, rect=True)[0].compile()
    for n, kk, m in [(1, 1, 1), (5, 3, 9), (64, 32, 40), (33, 65, 31)]:
        a, b = int_valued(rng, (n, kk)), int_valued(rng, (kk, m))
        assert_close_f32(kern(A=a, B=b)["C"], a @ b)


def test_k_of_size_one_reads_the_initialisation(rng, assert_close_f32):
    # at k = 0 the update reads what C stored: with K = 1, C = A[:, 0] * B[0, :]
    kern = matmul(rect=True)[0].compile()
    a, b = int_valued(rng, (7, 1)), int_valued(rng, (1, 5))
    assert_close_f32(kern(A=a, B=b)["C"], a * b)


def test_update_helper_with_a_callable_max_reduction(rng, assert_close_f32):
    """(max, +) product: C[i, j] = max_k A[i, k] + B[k, j]."""
    with me.Function("maxplus") as f:
        N, K, M = me.Param("N"), me.Param("K"), me.Param("M")
        i, j, k = me.Var("i", 0, N), me.Var("j", 0, M), me.Var("k", 0, K)
        A = me.Input("A", [N, K], me.float32)
        B = me.Input("B", [K, M], me.float32)
        c0 = me.Computation("C", [i, j], -1.0e30)
        upd = c0.update([i, j, k], lambda prev: me.max(prev, A[i, k] + B[k, j]))
        upd.after(c0, "j")
        c0.parallelize("i")
    a = rng.standard_normal((13, 17), dtype=np.float32)
    b = rng.standard_normal((17, 11), dtype=np.float32)
    out = f.compile()(A=a, B=b)["C"]
    assert_close_f32(out, (a[:, :, None] + b[None, :, :]).max(axis=1))


@pytest.mark.parametrize("helper", [False, True], ids=["store_in", "update_helper"])
def test_parallelizing_k_is_refused(helper):
    f, upd = matmul(lambda c0, c1: c1.parallelize("k"), helper=helper)
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert upd in e.computations
    assert e.dependence is not None and f"{upd}[" in e.dependence
    assert e.command == f"{upd}.parallelize(dim='k')"
    # the index is the position in the whole command log (store_in is logged too)
    assert e.command_index == len(f.commands.items) - 1
    assert e.level == "k"
    assert e.command in str(e) and e.dependence in str(e)


def test_parallelizing_k_is_refused_after_fusion_too():
    f, upd = matmul(lambda c0, c1: (c1.after(c0, "j"), c1.parallelize("k")))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    assert ei.value.command == "c1.parallelize(dim='k')"
    assert len(f.commands.items) == 3  # store_in, after, parallelize
    assert ei.value.command_index == 2


def test_reversing_k_is_refused():
    # exact dataflow: c1[k] must read c1[k - 1] (and C at k = 0), whatever the schedule
    f, _ = matmul(lambda c0, c1: c1.reverse("k"))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    assert "c1" in ei.value.computations
    assert ei.value.command == "c1.reverse(dim='k')"


def test_update_before_init_is_refused():
    f, _ = matmul(lambda c0, c1: c0.after(c1, me.ROOT))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    assert set(ei.value.computations) == {"C", "c1"}
