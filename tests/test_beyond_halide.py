"""The three paper benchmarks Halide cannot express (middleend.examples_beyond): each under
its default schedule, its tuned schedule and other schedules, against numpy on small odd
sizes; the schedules that break the cyclic dataflow are refused with me.ScheduleError.
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl
import numpy as np
import pytest

import middleend as me
from middleend.api import examples_beyond as eb


def _pragmas(kernel: object) -> str:
    source: str = kernel.source  # type: ignore[attr-defined]
    return "\n".join(ln for ln in source.splitlines()
                     if "#pragma" in ln or "me_parallel_for(" in ln)


# --------------------------------------------------------------------------- ticket #2373

TicketSched = Callable[[eb.Ticket2373], object]


def _ticket_blocked(p: eb.Ticket2373) -> None:
    """r between the vector blocks of x and the vector lanes: (y, x_vo, r, x_vi)."""
    p.acc.vectorize("x", 4)
    p.acc.interchange("x_vi", "r")
    p.acc.after(p.out, "y")
    p.acc.parallelize("y")


def _ticket_tiled(p: eb.Ticket2373) -> None:
    for c in (p.out, p.acc):
        c.tile("y", "x", 4, 8, "y0", "x0", "y1", "x1")
        c.parallelize("y0")


TICKET: dict[str, tuple[TicketSched, str | None]] = {
    "default": (lambda p: None, None),
    "tuned": (lambda p: eb.schedule_ticket2373(p, vf=4), "omp simd"),
    "blocked": (_ticket_blocked, "omp simd"),
    "tiled": (_ticket_tiled, "me_parallel_for"),
}


@pytest.mark.parametrize("params", [True, False], ids=["params", "const"])
@pytest.mark.parametrize("name", list(TICKET))
def test_ticket2373_matches_numpy(name: str, params: bool) -> None:
    sched, pragma = TICKET[name]
    rng = np.random.default_rng(1)
    for (h, w), window in (((13, 17), 5), ((5, 9), 32)):  # a window wider than the image too
        if window != 5 and not (params and name == "tuned"):
            continue
        p = eb.ticket2373(None if params else (h, w), window)
        sched(p)
        k = p.fn.compile()
        a = rng.uniform(-1, 1, (h, w)).astype(np.float32)
        out = k(inp=a)["out"]
        np.testing.assert_array_equal(out, eb.ticket2373_ref(a, window))
        if pragma is not None:
            assert pragma in _pragmas(k)


def test_ticket2373_domain_is_the_exact_triangle() -> None:
    """The update's domain is the non-rectangular set r <= x (what Halide's intervals
    over-approximate), and no read of inp[y, x - r] leaves the image."""
    low = eb.ticket2373(window=5).fn.lower()
    dom = low.l1.comps["acc"].domain
    ctx = dom.get_ctx()
    want = isl.Set.read_from_str(
        ctx, "[H, W] -> { acc[y, x, r] : 0 <= y < H and 0 <= r < 5 and r <= x < W }")
    assert dom.is_equal(want)
    box = isl.Set.read_from_str(
        ctx, "[H, W] -> { acc[y, x, r] : 0 <= y < H and 0 <= x < W and 0 <= r < 5 }")
    assert not box.is_subset(dom)


def test_ticket2373_vectorizing_r_is_refused() -> None:
    """r carries the accumulation into out[y, x]: a vector r loop is illegal."""
    p = eb.ticket2373((13, 17), 5)
    p.acc.vectorize("r", 4)
    with pytest.raises(me.ScheduleError) as ei:
        p.fn.compile()
    assert ei.value.command is not None and ei.value.command.startswith("acc.vectorize(")


# --------------------------------------------------------------------------- heat3d

HeatSched = Callable[[eb.Heat3D], object]


def _heat_tiled(p: eb.Heat3D) -> None:
    for c in (p.h0, p.h):
        c.tile("y", "z", 4, 8, "y0", "z0", "y1", "z1")
        c.parallelize("x")


HEAT: dict[str, HeatSched] = {
    "default": lambda p: None,
    "tuned": lambda p: eb.schedule_heat3d(p, vf=4),
    "tuned_y_strips": lambda p: eb.schedule_heat3d(p, vf=8, ty=3),
    "tiled_yz": _heat_tiled,
}
HEAT_SHAPE = (7, 9, 11)


def _check_heat(buf: np.ndarray, a: np.ndarray, steps: int) -> None:
    assert buf.shape == (2, *a.shape)
    np.testing.assert_allclose(buf[(steps - 1) % 2], eb.heat3d_ref(a, steps),
                               rtol=1e-5, atol=1e-6)
    # the other plane holds the step before (its border is the input's)
    np.testing.assert_allclose(buf[steps % 2], eb.heat3d_ref(a, steps - 1),
                               rtol=1e-5, atol=1e-6)


# the tuned schedule with Param sizes (constant: test_heat3d_all_constant_tuned), the
# others with constant X, Y, Z (heat3d's exact check costs ~1 s per compile with Params)
HEAT_CASES = [(n, "params" if n == "tuned" else "const_xyz") for n in HEAT]


@pytest.mark.parametrize("name,sizes", HEAT_CASES)
def test_heat3d_matches_numpy(name: str, sizes: str) -> None:
    """X, Y, Z Params or constants; T a Param (one kernel for both parities of T)."""
    p = eb.heat3d(None if sizes == "params" else HEAT_SHAPE)
    HEAT[name](p)
    kernel = p.fn.compile()
    a = np.random.default_rng(2).random(HEAT_SHAPE).astype(np.float32)
    for steps in (4, 5):  # the last step lands in either plane
        _check_heat(kernel(inp=a, T=steps)["buf"], a, steps)
    if name == "tuned":
        assert "me_parallel_for" in _pragmas(kernel) and "omp simd" in _pragmas(kernel)


def test_heat3d_all_constant_tuned() -> None:
    """The benchmark's form: every size and the number of steps are constants."""
    kernel = eb.schedule_heat3d(eb.heat3d(HEAT_SHAPE, 5), vf=4).fn.compile()
    a = np.random.default_rng(5).random(HEAT_SHAPE).astype(np.float32)
    _check_heat(kernel(inp=a)["buf"], a, 5)


@pytest.mark.parametrize("name,command", [
    ("parallel_t", "h.parallelize(dim='t')"),
    ("interchange_t_x", "h.interchange(a='t', b='x')"),
])
def test_heat3d_illegal_schedules_refused(name: str, command: str) -> None:
    """t carries the time dependence (and the two-plane storage reuse)."""
    p = eb.schedule_heat3d(eb.heat3d(HEAT_SHAPE, 4), vf=4)
    if name == "parallel_t":
        p.h.parallelize("t")
    else:
        p.h.interchange("t", "x")
    with pytest.raises(me.ScheduleError) as ei:
        p.fn.compile()
    assert ei.value.command == command
    assert "h" in ei.value.computations


# --------------------------------------------------------------------------- edgeDetector

EdgeSched = Callable[[eb.EdgeDetector], object]


def _edge_tiled_parallel(p: eb.EdgeDetector) -> None:
    for c in (p.load, p.R, p.out):
        c.tile("i", "j", 4, 5, "i0", "j0", "i1", "j1")
        c.parallelize("i0")


EDGE: dict[str, tuple[EdgeSched, str | None]] = {
    "default": (lambda p: None, None),
    "tuned": (lambda p: eb.schedule_edge_detector(p, vf=4), "omp simd"),
    "parallel": (lambda p: eb.schedule_edge_parallel(p, vf=4), "me_parallel_for"),
    "tiled_parallel": (_edge_tiled_parallel, "me_parallel_for"),
}
EDGE_SHAPES = [(13, 17), (9, 10)]


EDGE_CASES = [pytest.param(n, params, id=f"{n}-{'params' if params else 'const'}")
              for n in EDGE for params in (False, True)
              if not params or n in ("default", "tuned")]


@pytest.mark.parametrize("name,params", EDGE_CASES)
def test_edge_detector_matches_numpy(name: str, params: bool) -> None:
    """Constant sizes for every schedule; Param sizes (two shapes, one kernel) for the
    default and tuned ones."""
    sched, pragma = EDGE[name]
    rng = np.random.default_rng(3)
    shapes = EDGE_SHAPES if params else EDGE_SHAPES[:1]
    kernel = None
    for shape in shapes:
        if kernel is None or not params:
            p = eb.edge_detector(None if params else shape)
            sched(p)
            kernel = p.fn.compile()
        a = rng.uniform(0, 1, (*shape, 3)).astype(np.float32)
        out = kernel(inp=a)
        assert list(out) == ["Img"]
        np.testing.assert_array_equal(out["Img"], eb.edge_detector_ref(a))
    if pragma is not None:
        assert pragma in _pragmas(kernel)


def test_edge_detector_tuned_keeps_two_rows_of_r() -> None:
    """The fused pass folds R to 2 rows; the parallel passes need all of R."""
    k = eb.schedule_edge_detector(eb.edge_detector((13, 17))).fn.compile()
    assert "(v_i & 1LL)" in k.source  # R indexed modulo 2
    assert "me_parallel_for(" not in k.source


def _fused_without_shift(p: eb.EdgeDetector) -> None:
    p.R.after(p.load, "i")  # R row i reads Img row i + 1 before it is loaded
    p.out.after(p.R, "i")


def _fused_parallel(p: eb.EdgeDetector) -> None:
    eb.schedule_edge_detector(p, vf=4)
    p.out.parallelize("i")


def _out_without_shift(p: eb.EdgeDetector) -> None:
    p.load.shift("i", -1)
    p.R.after(p.load, "i")
    # out row i in iteration i: it overwrites Img row i before R row i + 1 (next iteration)
    # has read it, and reads R row i + 1 before it is computed
    p.out.after(p.R, "i")


@pytest.mark.parametrize("sched,command", [
    (_fused_without_shift, "R.after("),
    (_fused_parallel, "out.parallelize("),
    (_out_without_shift, "out.after("),
], ids=["load_not_shifted", "parallel_fused_rows", "out_not_shifted"])
def test_edge_detector_illegal_schedules_refused(sched: EdgeSched, command: str) -> None:
    """The cycle R -> out -> Img -> R: fusing needs the shifts, and the fused row loop
    carries an anti-dependence through Img (out row i overwrites what R row i + 1 reads),
    so its rows cannot run in parallel."""
    p = eb.edge_detector((13, 17))
    sched(p)
    with pytest.raises(me.ScheduleError) as ei:
        p.fn.compile()
    e = ei.value
    assert e.command is not None and e.command.startswith(command), e.command
    assert e.dependence


def test_edge_detector_unchecked_illegal_fusion_is_wrong() -> None:
    """What the check prevents: compiled without it, the unshifted fusion blurs rows of Img
    that are not loaded yet (here: still the zeros passed in)."""
    a = np.random.default_rng(4).random((13, 17, 3)).astype(np.float32)
    p = eb.edge_detector((13, 17))
    _fused_without_shift(p)
    k = p.fn.compile(check_legality=False)
    got = k(inp=a, Img=np.zeros_like(a))["Img"]
    assert not np.array_equal(got, eb.edge_detector_ref(a))
