"""Time-iterated stencils: heat-2D and 1-D Jacobi (double buffered with ``t % 2``) and an
in-place Gauss-Seidel sweep, under the default schedule and wavefront (skewed) parallel
schedules, against numpy; illegal parallelizations are refused with the dependence and the
command that broke it.
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl
import numpy as np
import pytest

import middleend as me
from middleend.api import examples

Sched = Callable[[me.Computation], object]


def _has_parallel_for(k: object) -> bool:
    return "me_parallel_for(" in k.source  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- heat-2D


def heat2d(sched: Sched) -> me.Function:
    """middleend.api.examples.heat2d with ``sched(h)`` applied."""
    b = examples.heat2d()
    with b.fn:
        sched(b.h)
    return b.fn


def heat2d_ref(a: np.ndarray, steps: int) -> np.ndarray:
    u = a.astype(np.float32).copy()
    c = np.float32(0.2)
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = c * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2]
                             + u[1:-1, 2:])
        u = v
    return u


def _wavefront(factor: int) -> Sched:
    def sched(h: me.Computation) -> None:
        h.skew("t", "i", factor, "t1", "i1")
        h.interchange("t1", "i1")
        h.parallelize("t1")

    return sched


HEAT_LEGAL: dict[str, tuple[Sched, bool]] = {
    "default": (lambda h: None, False),
    "wavefront": (_wavefront(2), True),
    "wavefront_tiled": (lambda h: (_wavefront(2)(h),
                                   h.tile("t1", "j", 2, 4, "t0", "j0", "tt", "jj"),
                                   h.parallelize("t0")), True),
    "set_schedule_wavefront": (lambda h: (h.set_schedule("{ h[t, i, j] -> [i + 2t, t, j] }"),
                                          h.parallelize("s1")), True),
    "skew_only": (lambda h: h.skew("t", "i", 1, "t1", "i1"), False),
    "parallel_j": (lambda h: h.parallelize("j"), True),
    "parallel_i": (lambda h: h.parallelize("i"), True),
    "vectorize_j": (lambda h: h.vectorize("j", 4), False),
    "reverse_i": (lambda h: h.reverse("i"), False),
}


@pytest.mark.parametrize("T", [5, 6])
@pytest.mark.parametrize("name", list(HEAT_LEGAL))
def test_heat2d_matches_numpy(name: str, T: int) -> None:
    sched, parallel = HEAT_LEGAL[name]
    k = heat2d(sched).compile(target="cpu")
    a = np.random.default_rng(T).random((11, 13)).astype(np.float32)
    buf = k(inp=a, T=T)["buf"]
    assert buf.shape == (2, 11, 13)
    np.testing.assert_allclose(buf[T % 2], heat2d_ref(a, T), rtol=1e-6, atol=1e-7)
    # the other half of the double buffer holds step T - 1
    np.testing.assert_allclose(buf[(T - 1) % 2], heat2d_ref(a, T - 1), rtol=1e-6, atol=1e-7)
    if parallel:
        assert _has_parallel_for(k)


def test_heat2d_params_inferred_and_explicit_agree() -> None:
    k = heat2d(_wavefront(2)).compile()
    a = np.random.default_rng(1).random((7, 9)).astype(np.float32)
    out1 = k(inp=a, T=3)["buf"][1]
    out2 = k(inp=a, T=3, N=7, M=9)["buf"][1]
    np.testing.assert_array_equal(out1, out2)
    np.testing.assert_allclose(out1, heat2d_ref(a, 3), rtol=1e-6)


HEAT_ILLEGAL: dict[str, tuple[Sched, str, int]] = {
    # (schedule, substring of the blamed command, its index among all commands; the two
    # store_in commands come first)
    "parallel_t": (lambda h: h.parallelize("t"), "parallelize", 2),
    "wavefront_factor_1": (_wavefront(1), "parallelize", 4),
    "interchange_t_i": (lambda h: h.interchange("t", "i"), "interchange", 2),
    "reverse_t": (lambda h: h.reverse("t"), "reverse", 2),
}


@pytest.mark.parametrize("name", list(HEAT_ILLEGAL))
def test_heat2d_illegal_schedules_refused(name: str) -> None:
    sched, command, index = HEAT_ILLEGAL[name]
    f = heat2d(sched)
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert e.dependence and "h[" in e.dependence
    assert "h" in e.computations
    assert e.command is not None and command in e.command and e.command.startswith("h.")
    assert e.command_index == index
    assert e.dependence in str(e) and e.command in str(e)


def test_heat2d_parallel_t_error_details() -> None:
    f = heat2d(lambda h: h.parallelize("t"))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert e.command == "h.parallelize(dim='t')"
    assert e.level == "t"
    assert e.computations == ("h",)
    assert "h[" in e.dependence and "T" in e.dependence  # parametric relation
    assert "parallel" in str(e)


def test_heat2d_unchecked_compile_of_illegal_schedule() -> None:
    """The expert switch skips the check: the illegal parallel t compiles."""
    k = heat2d(lambda h: h.parallelize("t")).compile(check_legality=False)
    assert _has_parallel_for(k)


# --------------------------------------------------------------------------- 1-D Jacobi


def jacobi1d(sched: Sched) -> me.Function:
    with me.Function("jacobi1d") as f:
        T, N = me.Param("T"), me.Param("N")
        s, ii = me.Var("s", 0, 2), me.Var("i", 0, N)
        t, i = me.Var("t", 1, T + 1), me.Var("i", 1, N - 1)
        inp = me.Input("inp", [N], me.float64)
        buf = me.Buffer("buf", [2, N], me.float64, kind=me.OUTPUT)
        init = me.Computation("init", [s, ii], inp[ii])
        init.store_in(buf, [s, ii])
        h = me.Computation("h", [t, i], dtype=me.float64)
        h.set_expression((h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3.0)
        h.store_in(buf, [t % 2, i])
        sched(h)
    return f


def jacobi1d_ref(a: np.ndarray, steps: int) -> np.ndarray:
    u = a.copy()
    for _ in range(steps):
        v = u.copy()
        v[1:-1] = (u[:-2] + u[1:-1] + u[2:]) / 3.0
        u = v
    return u


@pytest.mark.parametrize("T", [5, 6])
@pytest.mark.parametrize("name", ["default", "wavefront", "parallel_i", "split_i"])
def test_jacobi1d_matches_numpy(name: str, T: int) -> None:
    sched: Sched = {
        "default": lambda h: None,
        "wavefront": _wavefront(2),
        "parallel_i": lambda h: h.parallelize("i"),
        "split_i": lambda h: h.split("i", 4, "i0", "i1"),
    }[name]
    k = jacobi1d(sched).compile()
    a = np.random.default_rng(10 + T).random(17)
    buf = k(inp=a, T=T)["buf"]
    np.testing.assert_allclose(buf[T % 2], jacobi1d_ref(a, T), rtol=1e-12)
    np.testing.assert_allclose(buf[(T - 1) % 2], jacobi1d_ref(a, T - 1), rtol=1e-12)
    if name in ("wavefront", "parallel_i"):
        assert _has_parallel_for(k)


@pytest.mark.parametrize("name,command,index", [
    ("parallel_t", "h.parallelize(dim='t')", 2),
    ("wavefront_factor_1", "h.parallelize(dim='t1')", 4),
])
def test_jacobi1d_illegal(name: str, command: str, index: int) -> None:
    sched = h_par_t if name == "parallel_t" else _wavefront(1)
    with pytest.raises(me.ScheduleError) as ei:
        jacobi1d(sched).compile()
    e = ei.value
    assert e.command == command and e.command_index == index
    assert e.dependence and "h[" in e.dependence


def h_par_t(h: me.Computation) -> None:
    h.parallelize("t")


# --------------------------------------------------------------------------- Gauss-Seidel


def gauss_seidel(sched: Sched) -> me.Function:
    """In place: h[t, i] = (h[t, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3 in one buffer."""
    with me.Function("gs") as f:
        T, N = me.Param("T"), me.Param("N")
        ii = me.Var("i", 0, N)
        t, i = me.Var("t", 1, T + 1), me.Var("i", 1, N - 1)
        inp = me.Input("inp", [N], me.float64)
        buf = me.Buffer("buf", [N], me.float64, kind=me.OUTPUT)
        init = me.Computation("init", [ii], inp[ii])
        init.store_in(buf, [ii])
        h = me.Computation("h", [t, i], dtype=me.float64)
        h.set_expression((h[t, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3.0)
        h.store_in(buf, [i])
        sched(h)
    return f


def gauss_seidel_ref(a: np.ndarray, steps: int) -> np.ndarray:
    u = a.copy()
    for _ in range(steps):
        for i in range(1, len(u) - 1):
            u[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0
    return u


@pytest.mark.parametrize("T", [5, 6])
@pytest.mark.parametrize("name", ["default", "wavefront"])
def test_gauss_seidel_matches_numpy(name: str, T: int) -> None:
    sched = (lambda h: None) if name == "default" else _wavefront(2)
    k = gauss_seidel(sched).compile()
    a = np.random.default_rng(20 + T).random(19)
    out = k(inp=a, T=T)["buf"]
    np.testing.assert_allclose(out, gauss_seidel_ref(a, T), rtol=1e-12)
    # in place really differs from Jacobi
    assert not np.allclose(out, jacobi1d_ref(a, T))


@pytest.mark.parametrize("name,command", [
    ("parallel_i", "h.parallelize(dim='i')"),
    ("parallel_t", "h.parallelize(dim='t')"),
    ("vectorize_i", "h.vectorize(dim='i', factor=4, outer='i_vo', inner='i_vi')"),
    ("reverse_i", "h.reverse(dim='i')"),
    ("wavefront_factor_1", "h.parallelize(dim='t1')"),
])
def test_gauss_seidel_illegal(name: str, command: str) -> None:
    sched: Sched = {
        "parallel_i": lambda h: h.parallelize("i"),
        "parallel_t": lambda h: h.parallelize("t"),
        "vectorize_i": lambda h: h.vectorize("i", 4),
        "reverse_i": lambda h: h.reverse("i"),
        "wavefront_factor_1": _wavefront(1),
    }[name]
    f = gauss_seidel(sched)
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert e.command == command
    assert e.command_index == len(f.commands.items) - 1
    assert e.dependence and "h[" in e.dependence
    assert "h" in e.computations


def test_gauss_seidel_parallel_i_dependence_is_the_in_row_flow() -> None:
    """parallelize(i) is refused because of h[t, i] -> h[t, i + 1] (same t)."""
    with pytest.raises(me.ScheduleError) as ei:
        gauss_seidel(lambda h: h.parallelize("i")).compile()
    e = ei.value
    assert e.level == "i"
    dep = isl.UnionMap.read_from_str(isl.DEFAULT_CONTEXT, e.dependence)
    same_t = isl.UnionMap.read_from_str(
        isl.DEFAULT_CONTEXT, "[T, N] -> { h[t, i] -> h[t, i2] : i2 > i }")
    assert dep.is_subset(same_t)
    one = isl.UnionMap.read_from_str(
        isl.DEFAULT_CONTEXT, "[T, N] -> { h[1, 1] -> h[1, 2] : T = 5 and N = 19 }")
    assert one.is_subset(dep)


# --------------------------------------------------------------------------- folded heat-2D


@pytest.mark.parametrize("planes,by_value", [(2, False), (3, True)])
def test_heat2d_time_folded_with_boundary_copies_matches_numpy(planes: int,
                                                              by_value: bool) -> None:
    """``u[t % planes]`` with ``edge`` (the boundary copied from the input) before ``step``
    in each ``t``: a read of the boundary sees another step's copy than in the sequential
    order (declaration order runs every edge first); both store the same input element,
    so the legality check accepts it."""
    from middleend.api.examples_mpi import heat2d as heat2d_edges

    N, T = 11, 5
    k = heat2d_edges(N, N, T, None, planes=planes, by_value=by_value).compile(target="cpu")
    a = np.random.default_rng(planes).random((N, N)).astype(np.float32)
    got = k(u0=a)["u"]
    for t in range(T - planes + 1, T + 1):
        np.testing.assert_allclose(got[t % planes], heat2d_ref(a, t), rtol=1e-6, atol=1e-7)


def test_heat2d_folded_too_tightly_or_with_a_time_dependent_boundary_is_refused() -> None:
    from middleend.api.examples_mpi import heat2d as heat2d_edges

    # one plane where step t reads step t-1's values: overwritten before they are read
    with pytest.raises(me.ScheduleError, match="would not read the value of 'step'"):
        heat2d_edges(10, 10, 3, None, planes=1, by_value=True).compile(target="cpu")
    # a boundary that changes with t: the copies are not interchangeable any more, and in
    # the sequential order step 1 reads edge 2's boundary (declaration order), not init's
    f = heat2d_edges(10, 10, 3, None, planes=2)
    edge = next(c for c in f.computations if c.name == "edge")
    u0 = next(b for b in f.buffers if b.name == "u0")
    t, i, j = edge.vars
    edge.set_expression(u0[i, j] * t)
    with pytest.raises(me.ScheduleError, match="would not read the value of 'u'") as ei:
        f.compile(target="cpu")
    assert "edge[" in str(ei.value)
