"""Distributed example programs for the mpi target, shared by its tests and benchmark."""

from __future__ import annotations

from ..ir.commands import ROOT
from ..ir.expr import Expr
from ..ir.function import OUTPUT, Buffer, Computation, Input, Var
from ..ir.operations import exchange
from ..ir.types import float32, float64
from .function import Function


def heat2d(rows: int, cols: int, steps: int, ranks: int | str | None, name: str = "heat",
           planes: int | None = None, by_value: bool = False, exchange_at: str = "t"
           ) -> Function:
    """Heat-2D: ``u[t]`` is the 5-point mean of ``u[t-1]`` inside the grid, the boundary
    copied from ``u0`` at every step (``edge``, ordered before ``step`` within each ``t``).

    ``planes=None`` keeps every time plane (``u`` has ``steps + 1``); ``planes=P`` folds
    the time dimension into ``P`` planes (``u[t % P]``), so ``u[t % P]`` holds step ``t``'s
    grid where the last ``t`` with that remainder left it. ``step`` reads ``u`` as memory,
    or by value (``step[t-1, ...]``, memory only where that is outside ``step``'s domain)
    when ``by_value``. With ``ranks``, rows are distributed in blocks over the ranks and
    each time step (``exchange_at``: the loop the exchange sits in) exchanges the row next
    to each block boundary; ``ranks="runtime"`` distributes the row loops themselves (for
    a number of ranks read at run time: no split by a block size); ``ranks=None`` leaves
    the program undistributed (for the cpu target)."""
    P = planes
    with Function(name) as f:
        t, t0 = Var("t", 1, steps + 1), Var("t", 0, 1)
        i, j = Var("i", 1, rows - 1), Var("j", 1, cols - 1)
        bi, bj = Var("i", 0, rows), Var("j", 0, cols)
        u0 = Input("u0", [rows, cols], float32)
        u = Buffer("u", [steps + 1 if P is None else P, rows, cols], float32, OUTPUT)
        init = Computation("init", [t0, bi, bj], u0[bi, bj])
        edge = Computation("edge", [t, bi, bj], u0[bi, bj],
                           predicate=(bi == 0) | (bi == rows - 1) | (bj == 0)
                           | (bj == cols - 1))
        step = Computation("step", [t, i, j], dtype=float32)
        prev: Expr = t - 1 if P is None else (t - 1) % P

        def at(di: int, dj: int) -> Expr:
            return step[t - 1, i + di, j + dj] if by_value else u[prev, i + di, j + dj]

        step.set_expression((at(0, 0) + at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1)) * 0.2)
        for comp, iv in ((init, bi), (edge, bi), (step, i)):
            tv = comp.vars[0]
            comp.store_in(u, [tv if P is None else tv % P, comp.vars[1], comp.vars[2]])
            if isinstance(ranks, int):
                comp.split(iv, -(-rows // ranks), "i0", "i1")
                comp.distribute("i0")
            elif ranks is not None:
                comp.distribute(iv)
    edge.after(init, ROOT)
    step.after(edge, "t")
    if ranks is not None:
        u.distribute(1)
        exchange(step, u, exchange_at)
    return f


def matmul_rows(n: int, m: int, p: int, ranks: int, name: str = "dmm") -> Function:
    """C = A @ B (float64, A n x m, B m x p) distributed by row blocks of A and C, B whole
    on every rank (broadcast from the root): the papers' distributed matmul."""
    with Function(name) as f:
        i, j, kk = Var("i", 0, n), Var("j", 0, p), Var("k", 0, m)
        a = Input("A", [n, m], float64)
        b = Input("B", [m, p], float64)
        c0 = Computation("C", [i, j], 0.0, dtype=float64)
        c1 = c0.update([i, j, kk], a[i, kk] * b[kk, j])
    a.distribute(0)
    c0.buffer().distribute(0)
    for comp in (c0, c1):
        comp.split(i, -(-n // ranks), "i0", "i1")
        comp.distribute("i0")
    c1.after(c0, "i1")
    return f
