"""A candidate loop nest for one statement, and the scheduling commands that build it.

A :class:`Plan` is the statement's loops as two bands, the shape every schedule in the
seeds' and Halide's apps takes: an outer band with one loop per variable, in ``order``
(the outer loop of a tiled variable), then an inner band with the inner loops of the tiled
variables in the same order, the vectorized variable's last. With no tile it is a plain
loop permutation; with ``k, j, i`` tiled by ``128, 8, 24`` it is a BLAS micro-kernel
(``k0 j0 i0 k1 j1 i1``, ``j1`` unrolled: a register tile). The commands are the ones a
user would write (shift, split, interchange, unroll, vectorize, parallelize), so what the
scheduler chose can be printed, replayed and edited like any schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..driver.summary import Stmt
from ..ir import commands as cmd


@dataclass(frozen=True)
class Loop:
    """One loop of a plan: its name, the statement variable it runs over, its trip count,
    and its part: ``"full"`` (an untiled variable), ``"outer"`` or ``"inner"``."""

    name: str
    var: str
    trip: int
    part: str
    tag: str | None = None  # "parallel", "vector", "unroll"


@dataclass(frozen=True)
class Plan:
    """``order``: the free variables (those not shared with a neighbour's loops), outermost
    first; ``tiles``: variable -> inner size; ``vector``: the variable whose innermost loop
    is vectorized by a ``vectorize`` command (``lanes`` wide); ``unroll``: a tiled variable
    whose inner loop is unrolled completely; ``parallel``: the variable whose outer (or
    only) loop runs over the cores; ``contiguous``: the variable whose loop ends the inner
    band without a vector tag (a register tile's rows, printed as vectors by the cpu
    target)."""

    order: tuple[str, ...]
    tiles: tuple[tuple[str, int], ...] = ()
    vector: str | None = None
    lanes: int = 0
    unroll: str | None = None
    parallel: str | None = None
    contiguous: str | None = None

    def tile_of(self, v: str) -> int | None:
        return next((s for x, s in self.tiles if x == v), None)

    def describe(self) -> str:
        parts = [" ".join(self.order)]
        if self.tiles:
            parts.append("tiles " + ", ".join(f"{v}:{s}" for v, s in self.tiles))
        for what in ("vector", "unroll", "parallel"):
            if getattr(self, what):
                parts.append(f"{what} {getattr(self, what)}")
        return "; ".join(parts)


def _names(stmt: Stmt, taken: set[str]) -> dict[str, tuple[str, str]]:
    """Each variable's (outer, inner) loop names, unique among ``taken``."""
    out: dict[str, tuple[str, str]] = {}
    for v in stmt.vars:
        pair = []
        for suffix in ("o", "i"):
            n, k = f"{v}_{suffix}", 0
            while n in taken:
                k += 1
                n = f"{v}_{suffix}{k}"
            taken.add(n)
            pair.append(n)
        out[v] = (pair[0], pair[1])
    return out


def loops(stmt: Stmt, shared: Sequence[str], plan: Plan) -> list[Loop]:
    """The loops ``plan`` gives ``stmt`` (after its ``shared`` outer loops, which stay as
    they are), outermost first."""
    ext = dict(zip(stmt.vars, stmt.extents, strict=True))
    names = _names(stmt, set(stmt.vars))
    outer: list[Loop] = []
    inner: list[Loop] = []
    last = plan.vector or plan.contiguous
    for v in plan.order:
        size = plan.tile_of(v)
        if size is None:
            full = Loop(v, v, ext[v], "full")
            (inner if v == last else outer).append(full)
            continue
        on, inn = names[v]
        outer.append(Loop(on, v, -(-ext[v] // size), "outer"))
        inner.append(Loop(inn, v, min(size, ext[v]), "inner"))
    inner.sort(key=lambda lp: lp.var == last)  # stable: the vector/contiguous loop last
    out = [Loop(v, v, ext[v], "full") for v in shared] + outer + inner
    tagged: list[Loop] = []
    for lp in out:
        tag = None
        if lp.var == plan.parallel and lp.part in ("full", "outer") and lp.var not in shared:
            tag = "parallel"
        elif lp.var == plan.vector and lp.part in ("full", "inner") and lp is out[-1]:
            tag = "vector"
        elif lp.var == plan.unroll and lp.part == "inner":
            tag = "unroll"
        tagged.append(Loop(lp.name, lp.var, lp.trip, lp.part, tag))
    return tagged


def commands(stmt: Stmt, shared: Sequence[str], plan: Plan, shift: bool = True
             ) -> list[cmd.Command]:
    """The commands that give ``stmt`` the loops of :func:`loops`: shifts to 0-based
    loops (so that tiles start at the domain's edge and need no guard inside), splits,
    the interchanges that sort the loops, then the tags."""
    c = stmt.name
    out: list[cmd.Command] = []
    if shift:
        for v, lo in zip(stmt.vars, stmt.lows, strict=True):
            if v not in shared and lo:
                out.append(cmd.Shift(c, v, -lo))
    names = _names(stmt, set(stmt.vars))
    current = list(stmt.vars)
    for v, size in plan.tiles:
        on, inn = names[v]
        out.append(cmd.Split(c, v, size, on, inn))
        k = current.index(v)
        current[k:k + 1] = [on, inn]
    want = [lp.name for lp in loops(stmt, shared, plan)]
    for k, name in enumerate(want):  # selection sort by interchanges
        j = current.index(name)
        if j != k:
            out.append(cmd.Interchange(c, current[k], name))
            current[k], current[j] = current[j], current[k]
    for lp in loops(stmt, shared, plan):
        if lp.tag == "unroll":
            out.append(cmd.Unroll(c, lp.name, None, f"{lp.name}_uo", f"{lp.name}_ui"))
        elif lp.tag == "vector":
            out.append(cmd.Vectorize(c, lp.name, plan.lanes, f"{lp.name}_vo",
                                     f"{lp.name}_vi"))
    for lp in loops(stmt, shared, plan):
        if lp.tag == "parallel":
            out.append(cmd.Parallelize(c, lp.name))
    return out
