"""Distributed example programs for the mpi target, shared by its tests and benchmark."""

from __future__ import annotations

from ..ir.commands import ROOT
from ..ir.function import OUTPUT, Buffer, Computation, Input, Var
from ..ir.operations import exchange
from ..ir.types import float32
from .function import Function


def heat2d(rows: int, cols: int, steps: int, ranks: int, name: str = "heat") -> Function:
    """Heat-2D: ``u[t]`` is the 5-point mean of ``u[t-1]`` inside the grid, the boundary
    kept; rows are distributed in blocks over ``ranks`` and each time step exchanges the
    row next to each block boundary (``u`` keeps every time plane)."""
    B = -(-rows // ranks)
    with Function(name) as f:
        t, t0 = Var("t", 1, steps + 1), Var("t", 0, 1)
        i, j = Var("i", 1, rows - 1), Var("j", 1, cols - 1)
        bi, bj = Var("i", 0, rows), Var("j", 0, cols)
        u0 = Input("u0", [rows, cols], float32)
        u = Buffer("u", [steps + 1, rows, cols], float32, OUTPUT)
        init = Computation("init", [t0, bi, bj], u0[bi, bj])
        edge = Computation("edge", [t, bi, bj], u0[bi, bj],
                           predicate=(bi == 0) | (bi == rows - 1) | (bj == 0)
                           | (bj == cols - 1))
        step = Computation("step", [t, i, j], dtype=float32)
        step.set_expression((u[t - 1, i, j] + u[t - 1, i - 1, j] + u[t - 1, i + 1, j]
                             + u[t - 1, i, j - 1] + u[t - 1, i, j + 1]) * 0.2)
        for comp, iv in ((init, bi), (edge, bi), (step, i)):
            comp.store_in(u, [comp.vars[0], comp.vars[1], comp.vars[2]])
            comp.split(iv, B, "i0", "i1")
            comp.distribute("i0")
    u.distribute(1)
    edge.after(init, ROOT)
    step.after(edge, "t")
    exchange(step, u, "t")
    return f
