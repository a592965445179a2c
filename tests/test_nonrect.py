"""Non-rectangular (triangular, parametric) iteration domains through the whole pipeline.

Every test compares the compiled kernel with an independent numpy reference, under the
default schedule and under loop transformations (tile, split, parallelize, vectorize,
interchange) and a non-rectangular compute_at (Halide issue #2373).
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl
import numpy as np
import pytest

import middleend as me

N_ODD = 13


def _rand(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape).astype(np.float32)


def _pragmas(kernel: object) -> list[str]:
    """The pragma lines and the parallel loop calls of the generated C."""
    lines = kernel.source.splitlines()  # type: ignore[attr-defined]
    return [ln.strip() for ln in lines if "#pragma" in ln or "me_parallel_for(" in ln]


# --------------------------------------------------------------------------- triangular copy

Sched = Callable[[me.Computation], object]


def _tri_scale(sched: Sched) -> me.Function:
    """L[i, j] = 2 a[i, j] + 1 on the lower triangle j <= i."""
    with me.Function("tri") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 0, i + 1)
        a = me.Input("a", [N, N], me.float32)
        L = me.Computation("L", [i, j], a[i, j] * 2.0 + 1.0)
        sched(L)
    return f


TRI_SCHEDULES: dict[str, tuple[Sched, str | None]] = {
    "default": (lambda L: None, None),
    "tiled": (lambda L: L.tile("i", "j", 4, 4, "i0", "j0", "i1", "j1"), None),
    "tiled_odd": (lambda L: L.tile("i", "j", 3, 5, "i0", "j0", "i1", "j1"), None),
    "parallel_rows": (lambda L: L.parallelize("i"), "me_parallel_for"),
    "vectorized": (lambda L: L.vectorize("j", 4), "omp simd"),
    "split_j": (lambda L: L.split("j", 3, "j0", "j1"), None),
    "split_i_parallel": (lambda L: L.split("i", 4, "i0", "i1").parallelize("i0"),
                         "me_parallel_for"),
    "interchanged": (lambda L: L.interchange("i", "j"), None),
}


@pytest.mark.parametrize("name", list(TRI_SCHEDULES))
def test_lower_triangular_scale(name: str) -> None:
    sched, pragma = TRI_SCHEDULES[name]
    k = _tri_scale(sched).compile(target="cpu")
    a = _rand((N_ODD, N_ODD))
    sentinel = np.full((N_ODD, N_ODD), -7.0, np.float32)
    out = k(a=a, L=sentinel.copy())["L"]
    lower = np.tril(np.ones((N_ODD, N_ODD), bool))
    np.testing.assert_array_equal(out[lower], (a * np.float32(2) + np.float32(1))[lower])
    # nothing above the diagonal is written
    np.testing.assert_array_equal(out[~lower], sentinel[~lower])
    if pragma is not None:
        assert any(pragma in p for p in _pragmas(k)), _pragmas(k)


def test_triangular_buffer_sized_by_exact_bounds() -> None:
    """The default buffer of a triangle j <= i < N is N x N (exact dim_max of each dim)."""
    k = _tri_scale(lambda L: None).compile()
    a = _rand((7, 7))
    out = k(a=a)["L"]
    assert out.shape == (7, 7)
    with pytest.raises(me.KernelArgumentError):
        k(a=a, L=np.zeros((7, 6), np.float32))


def test_strictly_upper_triangle_with_offset_bounds() -> None:
    """j in [i + 1, N): the strictly upper triangle, with a lower bound depending on i.
    Row N - 1 is empty, so the exact bounds size the buffer (N - 1) x N."""
    with me.Function("upper") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", i + 1, N)
        a = me.Input("a", [N, N], me.float32)
        me.Computation("U", [i, j], a[j, i] - a[i, j])
    k = f.compile()
    a = _rand((9, 9), 3)
    out = k(a=a, U=np.zeros((8, 9), np.float32))["U"]
    assert out.shape == (8, 9)
    upper = np.triu(np.ones((9, 9), bool), 1)[:8]
    np.testing.assert_array_equal(out[upper], (a.T - a)[:8][upper])
    assert not out[~upper].any()


# --------------------------------------------------------------------------- triangular reduction

RSched = Callable[[me.Computation, me.Computation], object]


def _row_prefix(sched: RSched) -> me.Function:
    """s[i] = sum_{j <= i} a[i, j] as an init plus an update over the triangle."""
    with me.Function("rowsum") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 0, i + 1)
        a = me.Input("a", [N, N], me.float32)
        s = me.Computation("s", [i], me.cast(me.float32, 0))
        u = s.update([i, j], a[i, j])
        sched(s, u)
    return f


RED_SCHEDULES: dict[str, tuple[RSched, str | None]] = {
    "default": (lambda s, u: None, None),
    "tiled": (lambda s, u: u.tile("i", "j", 4, 4, "i0", "j0", "i1", "j1"), None),
    "tiled_parallel": (lambda s, u: (u.tile("i", "j", 4, 4, "i0", "j0", "i1", "j1"),
                                     u.parallelize("i0")), "me_parallel_for"),
    "parallel_rows": (lambda s, u: (s.parallelize("i"), u.parallelize("i")), "me_parallel_for"),
    "fused_parallel": (lambda s, u: (u.after(s, "i"), u.parallelize("i")), "me_parallel_for"),
    # j outer, i inner: every i writes its own s[i], so the inner loop vectorizes
    "interchanged_vectorized": (lambda s, u: (u.interchange("i", "j"), u.vectorize("i", 4)),
                                "omp simd"),
    "split_j": (lambda s, u: u.split("j", 3, "j0", "j1"), None),
}


@pytest.mark.parametrize("name", list(RED_SCHEDULES))
@pytest.mark.parametrize("n", [1, 6, N_ODD])
def test_triangular_row_sums(name: str, n: int) -> None:
    sched, pragma = RED_SCHEDULES[name]
    k = _row_prefix(sched).compile()
    a = _rand((n, n), n)
    out = k(a=a)["s"]
    ref = np.tril(a.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    if pragma is not None:
        assert any(pragma in p for p in _pragmas(k)), _pragmas(k)


def test_triangular_reduction_vectorized_over_j_is_refused() -> None:
    """Vectorizing the reduction loop j carries the accumulation dependence."""
    f = _row_prefix(lambda s, u: u.vectorize("j", 4))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert e.command is not None and "vectorize" in e.command
    assert e.dependence and "s_update1[" in e.dependence
    assert e.level == "j_vi"


def test_triangular_row_prefix_scan() -> None:
    """P[i, j] = sum_{k <= j} a[i, k] for j <= i: P0 writes column 0 into P's buffer, P
    (j >= 1) reads P[i, j - 1], which at j = 1 is what P0 stored (memory dataflow).
    Rows are independent: split j and parallel rows keep it correct."""
    with me.Function("scan") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 1, i + 1)
        a = me.Input("a", [N, N], me.float32)
        P0 = me.Computation("P0", [i], a[i, 0])
        P = me.Computation("P", [i, j], dtype=me.float32)
        P.set_expression(P[i, j - 1] + a[i, j])
        P0.store_in(P, [i, 0])
        P.split("j", 3, "j0", "j1")
        P.parallelize("i")
        P0.parallelize("i")
    k = f.compile()
    a = _rand((N_ODD, N_ODD), 5)
    out = k(a=a, P=np.zeros((N_ODD, N_ODD), np.float32))["P"]
    ref = np.tril(np.cumsum(np.tril(a).astype(np.float64), axis=1))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- Halide #2373


def _h2373(level: str | None, use_predicate: bool, sched: RSched | None = None) -> me.Function:
    """g(r, x) exists only for x >= r; f(x) = sum_{r <= x, r < R} g(r, x)."""
    with me.Function("h2373") as f:
        R, X = me.Param("R"), me.Param("X")
        a = me.Input("a", [X], me.float32)
        b = me.Input("b", [R], me.float32)
        if use_predicate:
            r, x = me.Var("r", 0, R), me.Var("x", 0, X)
            g = me.Computation("g", [r, x], a[x] * me.cast(me.float32, r + 1) + b[r],
                               predicate=x >= r)
        else:
            r = me.Var("r", 0, R)
            x = me.Var("x", r, X)
            g = me.Computation("g", [r, x], a[x] * me.cast(me.float32, r + 1) + b[r])
        xo = me.Var("x", 0, X)
        ro = me.Var("r", 0, me.min(R, xo + 1))
        f0 = me.Computation("f", [xo], me.cast(me.float32, 0))
        fu = f0.update([xo, ro], g[ro, xo])
        if sched is not None:
            sched(f0, fu)
        if level is not None:
            g.compute_at(fu, level)
    return f


def _h2373_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    X, R = len(a), len(b)
    out = np.zeros(X)
    for x in range(X):
        for r in range(min(R, x + 1)):
            out[x] += float(a[x]) * (r + 1) + float(b[r])
    return out


H2373_CASES: dict[str, tuple[str | None, RSched | None]] = {
    "root": (None, None),
    "at_x": ("x", None),
    "at_r": ("r", None),
    "at_x_parallel": ("x", lambda f0, fu: fu.parallelize("x")),
    "at_x0_split": ("x0", lambda f0, fu: fu.split("x", 4, "x0", "x1")),
    "at_x0_split_parallel": ("x0", lambda f0, fu: (fu.split("x", 4, "x0", "x1"),
                                                   fu.parallelize("x0"))),
}


@pytest.mark.parametrize("use_predicate", [False, True], ids=["bounds", "predicate"])
@pytest.mark.parametrize("case", list(H2373_CASES))
@pytest.mark.parametrize("R,X", [(5, 11), (13, 7)])
def test_halide_2373_non_rectangular_compute_at(case: str, use_predicate: bool, R: int,
                                                X: int) -> None:
    level, sched = H2373_CASES[case]
    f = _h2373(level, use_predicate, sched)
    k = f.compile()
    rng = np.random.default_rng(R * 100 + X)
    a = rng.random(X).astype(np.float32)
    b = rng.random(R).astype(np.float32)
    res = k(a=a, b=b)
    assert set(res) == {"f"}
    np.testing.assert_allclose(res["f"], _h2373_ref(a, b), rtol=1e-5)


def test_halide_2373_compute_at_places_g_inside_consumer_loop() -> None:
    """After compute_at(f_update, x), g is extended by the consumer's x loop and runs
    right before f_update in the same x iteration, only on the footprint r <= x."""
    low = _h2373("x", False).lower()
    ts = low.ts
    assert ts.order.index("g") == ts.order.index("f_update1") - 1
    g, fu = ts.comps["g"], ts.comps["f_update1"]
    assert g.n_outer == 1
    assert g.betas[0] == fu.betas[0]  # same outer x loop
    # the extended domain is exactly {g[x_o, r, x] : x = x_o, 0 <= r <= x_o, r < R}
    dom = g.ext_domain
    assert dom.dim(isl.dim_type.set) == 3
    pts = _points(dom, {"R": 3, "X": 5})
    assert pts == {(xo, r, xo) for xo in range(5) for r in range(min(3, xo + 1))}


def _points(s: isl.Set, params: dict[str, int]) -> set[tuple[int, ...]]:
    for name, v in params.items():
        k = s.find_dim_by_name(isl.dim_type.param, name)
        s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), v))
    out: set[tuple[int, ...]] = set()
    n = s.dim(isl.dim_type.set)
    s.foreach_point(lambda p: out.add(tuple(
        p.get_coordinate_val(isl.dim_type.set, q).to_python() for q in range(n))))
    return out


def test_predicate_and_bounds_give_the_same_domain() -> None:
    """x >= r as a predicate is affine: it becomes part of the ISL domain, with no guard."""
    low_b = _h2373(None, False).lower()
    low_p = _h2373(None, True).lower()
    gb, gp = low_b.l1.comps["g"], low_p.l1.comps["g"]
    assert gp.guard is None
    assert _points(gb.domain, {"R": 4, "X": 6}) == _points(gp.domain, {"R": 4, "X": 6})
    assert _points(gp.domain, {"R": 4, "X": 6}) == {
        (r, x) for r in range(4) for x in range(r, 6)}


def test_non_affine_predicate_is_a_runtime_guard() -> None:
    """A data-dependent predicate on a triangle becomes a guard: only rows/cols where the
    input is positive are written."""
    with me.Function("guarded") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 0, i + 1)
        a = me.Input("a", [N, N], me.float32)
        me.Computation("G", [i, j], a[i, j] * 3.0, predicate=a[i, j] > 0.5)
    low = f.lower()
    assert low.l1.comps["G"].guard is not None
    k = f.compile()
    a = _rand((N_ODD, N_ODD), 9)
    out = k(a=a, G=np.zeros((N_ODD, N_ODD), np.float32))["G"]
    mask = np.tril(np.ones((N_ODD, N_ODD), bool)) & (a > 0.5)
    np.testing.assert_array_equal(out, np.where(mask, a * np.float32(3), 0))
