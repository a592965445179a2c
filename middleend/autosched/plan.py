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
    part: str  # "full", "outer", "inner", or "block" (a blocked variable's block loop)
    tag: str | None = None  # "parallel", "vector", "unroll"
    within: int = 0  # a blocked variable's loop inside its block: the block's size


@dataclass(frozen=True)
class Plan:
    """``order``: the free variables (those not shared with a neighbour's loops), outermost
    first; ``tiles``: variable -> inner size; ``vector``: the variable whose innermost loop
    is vectorized by a ``vectorize`` command (``lanes`` wide); ``unroll``: a tiled variable
    whose inner loop is unrolled completely; ``parallel``: the variable whose outer (or
    only) loop runs over the cores; ``contiguous``: the variable whose loop ends the inner
    band without a vector tag (a register tile's rows, printed as vectors by the cpu
    target); ``block``: a variable split first in blocks of a size (its block loop
    ``<v>_b`` outermost, the rest of the plan inside one block, the block loop over the
    cores): the blocks of an index ``fld(v, size)`` (a partial sum per block, where the
    variable itself carries the sum), or a triangle's register-tile columns in blocks as
    wide as its rows (:func:`.space._aligned`); ``jam``: the ``unroll`` variable's inner loop ends
    the inner band, inside the loop of the contiguous variable before it, which has no
    vectorize command: the C compiler vectorizes that loop with the unrolled copies in
    its body, which share the loads and stores of what does not move with the unrolled
    variable (unroll-and-jam: an axpy's sums loaded and stored once for 8 columns)."""

    order: tuple[str, ...]
    tiles: tuple[tuple[str, int], ...] = ()
    vector: str | None = None
    lanes: int = 0
    unroll: str | None = None
    parallel: str | None = None
    contiguous: str | None = None
    block: tuple[str, int] | None = None
    jam: bool = False

    def tile_of(self, v: str) -> int | None:
        return next((s for x, s in self.tiles if x == v), None)

    def describe(self) -> str:
        parts = [" ".join(self.order)]
        if self.block:
            parts.insert(0, f"blocks {self.block[0]}:{self.block[1]}")
        if self.tiles:
            parts.append("tiles " + ", ".join(f"{v}:{s}" for v, s in self.tiles))
        for what in ("vector", "unroll", "parallel"):
            if getattr(self, what):
                parts.append(f"{what} {getattr(self, what)}"
                             + (" (jammed)" if what == "unroll" and self.jam else ""))
        return "; ".join(parts)


def fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with the first number that makes it unique among ``taken``
    (added to it)."""
    n, k = name, 0
    while n in taken:
        k += 1
        n = f"{name}{k}"
    taken.add(n)
    return n


def _names(stmt: Stmt, taken: set[str]) -> dict[str, tuple[str, str]]:
    """Each variable's (outer, inner) loop names, unique among ``taken``."""
    return {v: (fresh(f"{v}_o", taken), fresh(f"{v}_i", taken)) for v in stmt.vars}


def _block_name(stmt: Stmt, plan: Plan) -> str:
    """The block loop's name (the names :func:`_names` gives come after it)."""
    assert plan.block is not None
    return fresh(f"{plan.block[0]}_b", set(stmt.vars))


def _taken(stmt: Stmt, plan: Plan) -> set[str]:
    return set(stmt.vars) | ({_block_name(stmt, plan)} if plan.block else set())


def loops(stmt: Stmt, shared: Sequence[str], plan: Plan) -> list[Loop]:
    """The loops ``plan`` gives ``stmt`` (after its ``shared`` outer loops, which stay as
    they are), outermost first."""
    ext = dict(zip(stmt.vars, stmt.extents, strict=True))
    names = _names(stmt, _taken(stmt, plan))
    head: list[Loop] = []
    if plan.block is not None:
        bv, bs = plan.block
        head.append(Loop(_block_name(stmt, plan), bv, -(-ext[bv] // bs), "block"))
        ext[bv] = min(bs, ext[bv])
    outer: list[Loop] = []
    inner: list[Loop] = []
    last = plan.unroll if plan.jam else (plan.vector or plan.contiguous)
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
    out = [Loop(v, v, ext[v], "full") for v in shared] + head + outer + inner
    blocked = plan.block[0] if plan.block else None
    tagged: list[Loop] = []
    for lp in out:
        tag = None
        if lp.var == plan.parallel and lp.var not in shared and (
                lp.part == "block" if lp.var == blocked else lp.part in ("full", "outer")):
            tag = "parallel"
        elif lp.var == plan.vector and lp.part in ("full", "inner") and lp is out[-1]:
            tag = "vector"
        elif lp.var == plan.unroll and lp.part == "inner":
            tag = "unroll"
        within = plan.block[1] if lp.var == blocked and lp.part != "block" else 0
        tagged.append(Loop(lp.name, lp.var, lp.trip, lp.part, tag, within))
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
    names = _names(stmt, _taken(stmt, plan))
    current = list(stmt.vars)
    if plan.block is not None:  # the block loop, then the variable's loop inside a block
        bv, bs = plan.block
        bn = _block_name(stmt, plan)
        out.append(cmd.Split(c, bv, bs, bn, bv))
        k = current.index(bv)
        current[k:k + 1] = [bn, bv]
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
