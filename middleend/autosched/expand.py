"""Array expansion as a scheduling choice (the mechanism: :mod:`middleend.passes.expansion`).

A buffer that a statement accumulates into while outer loops reuse it (doitgen's
``sum[p]``: reset, summed over ``s`` and read back in every ``(r, q)``) makes those loops
carry a dependence through it: they can neither run over the cores nor be tiled, and the
search is left with one vector of sums at a time (30.8 ms against numpy's 8.5 there).
With one copy per iteration of them (``sum.expand("r", "q")``) each ``(r, q)`` owns its
sums, the statements can run in loop nests of their own, and the accumulation is a GEMM
that the register tiles of :mod:`.space` cover (8.2 ms).

The candidates: per buffer the program declares (not an input), the loops that every
statement accessing it has, along which none of its writes moves, and along which some
writer accumulates (a loop of its ``reductions``), in the first user's loop order; only
while the copies take no more memory than the program's largest buffer (dropping the
innermost such loops until they do). Whether an expansion keeps the program's meaning is
the middle-end's exact check, and whether it pays is the cost model's: the search runs
with and without it and the lower estimate wins (:func:`.api.auto_schedule`).
"""

from __future__ import annotations

import math

from ..driver.summary import Stmt, Summary
from ..ir import commands as cmd
from ..ir.function import INPUT, Function


def _writes(st: Stmt, buf: str) -> list[tuple[float, ...]]:
    return [a.strides for a in st.accesses if a.write and a.buffer == buf]


def candidates(fn: Function, summary: Summary, taken: set[str]) -> list[cmd.Expand]:
    """The expansions worth ranking, one per buffer (see the module's docstring); their
    names new among ``taken``."""
    largest = max((math.prod(a.dim_sizes) * a.elem_bytes
                   for st in summary.stmts for a in st.accesses), default=0)
    out: list[cmd.Expand] = []
    for b in fn.buffers:
        if b.kind == INPUT:
            continue
        users = [st for st in summary.stmts if any(a.buffer == b.name for a in st.accesses)]
        writers = [st for st in users if _writes(st, b.name)]
        if not writers or any(st.name not in {c.name for c in fn.computations}
                              for st in users):
            continue
        loops: list[str] = []
        for v in users[0].vars:
            if not all(v in st.vars for st in users):
                continue
            if any(s[st.vars.index(v)] != 0 for st in writers for s in _writes(st, b.name)):
                continue  # a write moves along it: the loop already has its own elements
            if any(v in st.reductions for st in writers):
                loops.append(v)
        if not loops:
            continue
        first = users[0]
        acc = next(a for st in users for a in st.accesses if a.buffer == b.name)
        size = math.prod(acc.dim_sizes) * acc.elem_bytes
        while loops and size * math.prod(first.extents[first.vars.index(v)]
                                         for v in loops) > largest:
            loops.pop()
        if not loops:
            continue
        name = f"{b.name}_{'_'.join(loops)}"
        k = 1
        while name in taken or f"{name}_back" in taken:
            name, k = f"{b.name}_{'_'.join(loops)}_{k}", k + 1
        out.append(cmd.Expand(b.name, tuple(loops), (0,) * len(loops), name))
    return out
