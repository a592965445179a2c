"""Loop partitioning and the clamps it removes: a repeat-edge 3x3 box filter against numpy
under several schedules and sizes (including images smaller than the stencil, where no
steady state exists), the interval rules on their own, a data-dependent read whose clamp
makes its run-time bounds check unnecessary, and an unclamped gather that keeps its check.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import middleend as me
from middleend.ir.expr import Binary, Const
from middleend.ir.intervals import (
    expr_interval,
    iexpr_interval,
    redundant_operand,
    unclamped,
    within,
)
from middleend.ir.loopast import For, IInt, IOp, IterRef, IVar, walk_nodes
from middleend.ir.types import int32

Sched = Callable[[me.Computation], object]


def box3(rows: int, cols: int, sched: Sched) -> me.Function:
    """out(y, x) = sum of the 3x3 neighbourhood with edges repeated (Halide's
    repeat_edge), sizes fixed as the front-ends specialize them."""
    with me.Function(f"box_{rows}x{cols}") as f:
        y, x = me.Var("y", 0, rows), me.Var("x", 0, cols)
        inp = me.Input("inp", [rows, cols], me.float32)
        e = None
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                term = inp[me.clamp(y + dy, 0, rows - 1), me.clamp(x + dx, 0, cols - 1)]
                e = term if e is None else e + term
        out = me.Computation("out", [y, x], e)
        sched(out)
    return f


def box3_ref(a: np.ndarray) -> np.ndarray:
    p = np.pad(a, 1, mode="edge")
    rows, cols = a.shape
    out = np.zeros_like(a)
    for dy in range(3):
        for dx in range(3):
            out = out + p[dy:dy + rows, dx:dx + cols]
    return out


SCHEDULES: dict[str, Sched] = {
    "default": lambda c: None,
    "parallel_vector": lambda c: (c.parallelize("y"), c.vectorize("x", 8, "xo", "xi")),
    "tiled": lambda c: (c.tile("y", "x", 4, 16, "yo", "xo", "yi", "xi"),
                        c.parallelize("yo")),
    "split_unroll": lambda c: (c.split("x", 4, "xo", "xi"), c.unroll("xi")),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (3, 9), (13, 37), (40, 64)])
def test_box_filter_matches_numpy(name: str, shape: tuple[int, int]) -> None:
    a = np.random.default_rng(shape[0] * 100 + shape[1]).random(shape, dtype=np.float32)
    k = box3(*shape, SCHEDULES[name]).compile()
    np.testing.assert_allclose(k(inp=a)["out"], box3_ref(a), rtol=1e-6)


def _loops(k: object) -> list[For]:
    return [n for n, _ in walk_nodes(k.program.body) if isinstance(n, For)]  # type: ignore


def test_steady_state_has_no_clamps() -> None:
    """Rows and columns are each split in three; the middle piece reads without min/max
    and the vector loop over it is contiguous."""
    k = box3(40, 64, SCHEDULES["parallel_vector"]).compile()
    loops = _loops(k)
    assert sum(1 for f in loops if f.name == "y") == 3
    bodies = [line for line in k.source.splitlines() if "b_out[" in line]
    assert len(bodies) == 9
    # the x steady state of each row piece: in the first and last row the row clamps
    # are constants, in the middle rows they cannot bind
    assert sum(1 for line in bodies if "me_min_i64" not in line and "me_max_i64" not in line) \
        == 3
    calls = [line for line in k.source.splitlines() if "me_parallel_for(" in line
             and "&me_c" in line]
    assert len(calls) == 3  # each row piece stays parallel


def test_no_split_without_clamps_or_steady_state() -> None:
    plain = box3(1, 1, SCHEDULES["default"]).compile()
    assert len(_loops(plain)) <= 2  # a 1x1 image has no iteration where no clamp binds
    with me.Function("noclamp") as f:
        i = me.Var("i", 0, 50)
        a = me.Input("a", [52], me.float32)
        me.Computation("o", [i], a[i] + a[i + 2])
    assert len(_loops(f.compile())) == 1


def test_parametric_sizes_stay_correct() -> None:
    """Clamps against a parameter are not proven here (no constant bound): the code keeps
    them and stays right for every size."""
    with me.Function("pbox") as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        a = me.Input("a", [n], me.float32)
        me.Computation("o", [i], a[me.clamp(i - 1, 0, n - 1)] + a[me.clamp(i + 1, 0, n - 1)])
    k = f.compile()
    for size in (1, 2, 7):
        v = np.arange(size, dtype=np.float32)
        p = np.pad(v, 1, mode="edge")
        np.testing.assert_array_equal(k(a=v)["o"], p[:-2] + p[2:])


def test_clamped_gather_needs_no_check_unclamped_keeps_it() -> None:
    with me.Function("cg") as f:
        i = me.Var("i", 0, 16)
        idx = me.Input("idx", [16], me.int32)
        tab = me.Input("tab", [10], me.float32)
        me.Computation("g", [i], tab[me.clamp(idx[i], 0, 9)])
        me.Computation("h", [i], tab[idx[i] % 10] + tab[idx[i]])
    k = f.compile()
    lines = k.source.splitlines()
    g_line = next(line for line in lines if "b_g[" in line)
    h_line = next(line for line in lines if "b_h[" in line)
    assert "me_chk" not in g_line
    assert "me_chk" in h_line  # tab[idx[i]] is not provably in bounds
    ids = np.arange(-3, 13, dtype=np.int32)
    tab = np.arange(10, dtype=np.float32) * 2
    with pytest.raises(me.KernelRuntimeError, match="out of bounds"):
        k(idx=ids, tab=tab)
    ok = np.arange(16, dtype=np.int32) % 10
    res = k(idx=ok, tab=tab)
    np.testing.assert_array_equal(res["g"], tab[np.clip(ok, 0, 9)])
    np.testing.assert_array_equal(res["h"], tab[ok % 10] + tab[ok])


def test_interval_rules() -> None:
    env = {"t": (1, 10), "u": (0, 7)}
    e = IOp("add", (IOp("mul", (IInt(8), IVar("t"))), IVar("u")))
    assert iexpr_interval(e, env) == (8, 87)
    assert iexpr_interval(IVar("p_N"), env) is None
    # the clamp of an unknown value is bounded by its constant side
    assert iexpr_interval(IOp("max", (IOp("min", (IVar("q"), IInt(9))), IInt(0))), env) \
        == (0, 9)
    x = IterRef("x")
    low = Binary("max", Binary("sub", x, Const(1, int32), int32), Const(0, int32), int32)
    assert redundant_operand(low, {"x": (1, 50)}) is low.a
    assert redundant_operand(low, {"x": (0, 50)}) is None
    assert expr_interval(low, {"x": (0, 50)}) == (0, 49)
    assert within(low, {"x": (0, 50)}, IInt(50))
    assert not within(low, {"x": (0, 51)}, IInt(50))
    # a floor modulo by a positive constant lies in [0, d), exactly within one period (the
    # local Laplacian's upsampling reads x / 2 - 1 + 2 (x % 2), checked before this)
    two, three = Const(2, int32), Const(3, int32)
    up = Binary("add", Binary("sub", Binary("floordiv", x, two, int32), Const(1, int32), int32),
                Binary("mul", two, Binary("mod", x, two, int32), int32), int32)
    assert expr_interval(up, {"x": (0, 1055)}) == (-1, 528)
    assert expr_interval(Binary("mod", x, three, int32), {"x": (7, 8)}) == (1, 2)
    assert expr_interval(Binary("mod", x, three, int32), {"x": (-4, 9)}) == (0, 2)
    assert expr_interval(Binary("mod", IterRef("q"), three, int32), {}) == (0, 2)
    assert expr_interval(Binary("mod", x, Const(-3, int32), int32), {"x": (0, 9)}) is None
    # clamps that cannot bind are seen through, below arithmetic; the others are kept
    edge = Binary("max", Binary("min", Binary("sub", Binary("mul", two, x, int32),
                                              Const(1, int32), int32),
                                Const(99, int32), int32), Const(0, int32), int32)
    inner = Binary("add", edge, Const(4, int32), int32)
    assert repr(unclamped(inner, {"x": (1, 50)})) == repr(
        Binary("add", Binary("sub", Binary("mul", two, x, int32), Const(1, int32), int32),
               Const(4, int32), int32))
    assert unclamped(inner, {"x": (0, 50)}).b is inner.b  # max(.., 0) may bind at x = 0
    assert repr(unclamped(inner, {"x": (0, 50)}).a.a) == repr(edge.a.a)  # min(.., 99) gone
    # index arithmetic that could leave int64 is unknown, never wrapped into a range
    big = IOp("mul", (IVar("t"), IInt(2**62)))
    assert iexpr_interval(big, env) is None
