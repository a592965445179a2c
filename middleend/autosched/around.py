"""A reduction's initializer and its copy-out moved into the reduction's loops.

Code as it is written keeps a sum in memory: doitgen's ``sum[p] = 0`` (Z), the sum over
``s`` into it (U), then ``A[p, q, r] = sum[p]`` (W), all in one ``(r, q)`` loop. Once the
sum is expanded along ``r`` and ``q`` (:mod:`.expand`) and the statements are given loop
nests of their own (the search's step 1), Z zeroes every copy before U starts and W
reads them after U has finished all of them: each of the two passes moves the whole
buffer through memory (27 MB each way at doitgen's sizes). Once U's plan is chosen:

- an *initializer* U runs after (a statement that writes a buffer U reads and reads
  none) is computed per iteration of one of U's loops (``compute_at``), the innermost one
  the legality check accepts: its writes land in cache just before U's first reads (a
  loop inside the sum's would zero the sum there again, which the check refuses);
- a *reader* of what U writes, ordered after U at the root, over U's variables, is given
  U's outer loops (the same splits, in the same order, hence the same loop names) and
  ordered after U in the loop of those where the model finds it cheapest, the values
  one iteration of U leaves being in cache when that region fits half of L2 (read up
  from L2 unless it fits half of L1): it reads each tile's sums just after U made them.

Mechanism is not in question here (compute_at, after, split and interchange are the
scheduling language's); which placement is kept is the model's choice among the ones the
legality check accepts. Measured on doitgen (2-core Xeon, interleaved in one process,
best of 15, the expansion and U's plan as the search chose them): 7.3 -> 6.5 ms with the
reader fused at ``q`` (192 KB of sums per iteration, in L2), 6.0 -> 5.5 ms at ``r_o``
(10 KB, in L1), which the model prefers once reads from L2 are charged; the expert
schedule's 5.4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..driver.summary import Stmt
from ..ir import commands as cmd
from .cost import BANDWIDTH, MachineModel, compute_cycles, cost, vectorizable
from .placement import region
from .plan import Loop, Plan, commands, loops

GAIN = 0.95  # a fused reader must be estimated at least 5 % cheaper than in its own nest


@dataclass(frozen=True)
class Moved:
    """A statement's new commands and the ordering they need, with the model's estimate
    for it, its plan (None: computed in another statement's loops, ``what``) and a note
    saying what was done."""

    stmt: str
    block: list[cmd.Command]
    orders: list[cmd.Command]
    estimate: float
    plan: Plan | None
    note: str
    what: str = ""


def _after(orders: Sequence[cmd.Command], comp: str, other: str) -> int | None:
    """The position of ``comp.after(other, ROOT)`` in ``orders``, None if absent."""
    return next((k for k, c in enumerate(orders) if type(c) is cmd.After and c.comp == comp
                 and c.other == other and c.level == cmd.ROOT), None)


def _written(st: Stmt) -> set[str]:
    return {a.buffer for a in st.accesses if a.write}


def _read(st: Stmt) -> set[str]:
    return {a.buffer for a in st.accesses if not a.write}


def initializer_inside(init: Stmt, red: Stmt, nest: Sequence[Loop],
                       orders: Sequence[cmd.Command], m: MachineModel) -> list[Moved]:
    """``init`` computed per iteration of each of ``red``'s loops ``nest`` (its chosen
    plan's), innermost first, if ``init`` is an initializer of what ``red`` reads that
    ``red`` runs right after, at the root; [] otherwise."""
    k = _after(orders, red.name, init.name)
    if k is None or _read(init) or not _written(init) & _read(red) or not init.vars:
        return []
    # red took init's place in the ordering: after what init was after
    before = next((c for c in orders if type(c) is cmd.After and c.comp == init.name), None)
    rest = [c for j, c in enumerate(orders) if j != k and c is not before]
    if before is not None:
        assert isinstance(before, cmd.After)
        rest.insert(min(k, len(rest)), cmd.After(red.name, before.other, before.level))
    own: list[cmd.Command] = [cmd.Shift(init.name, v, -lo) for v, lo in
                              zip(init.vars, init.lows, strict=True) if lo]
    v = init.vars[-1]
    if vectorizable(init.accesses, len(init.vars) - 1):
        lanes = m.lanes(max(a.elem_bytes for a in init.accesses if a.write))
        own.append(cmd.Vectorize(init.name, v, lanes, f"{v}_vo", f"{v}_vi"))
    out = []
    for lp in reversed(nest):
        if lp.tag in ("vector", "unroll"):
            continue
        what = f"computed per iteration of {red.name}'s loop {lp.name}"
        out.append(Moved(init.name, [*own, cmd.ComputeAt(init.name, red.name, lp.name)],
                         rest, compute_cycles(init, [], m), None,
                         f"{init.name}: {what} (it initializes what {red.name} reads)",
                         what))
    return out


def reader_after(reader: Stmt, red: Stmt, plan: Plan, orders: Sequence[cmd.Command],
                 m: MachineModel, alone: float) -> list[Moved]:
    """``reader`` in ``red``'s outer loops (those of ``plan``), ordered after ``red`` in
    one of them, for each depth the model estimates cheaper than ``alone`` (its own
    nest's estimate), cheapest first; [] where ``reader`` does not read what ``red``
    writes right after it, at the root, or does not have ``red``'s variables."""
    k = _after(orders, reader.name, red.name)
    shared = _written(red) & _read(reader)
    if k is None or not shared or plan.block is not None:
        return []
    ext = {v: (e, lo) for v, e, lo in zip(red.vars, red.extents, red.lows, strict=True)}
    mine = {v: (e, lo) for v, e, lo in zip(reader.vars, reader.extents, reader.lows,
                                           strict=True)}
    nest = loops(red, (), plan)
    elem = max(a.elem_bytes for a in red.accesses if a.write)
    out: list[Moved] = []
    for d in range(1, len(nest) + 1):
        lp = nest[d - 1]
        if lp.part not in ("full", "outer") or lp.tag not in (None, "parallel") \
                or mine.get(lp.var) != ext[lp.var] or lp.var in red.reductions:
            break
        prefix = nest[:d]
        p = _plan(reader, prefix, plan, m)
        mine_nest = loops(reader, (), p)
        if [x.name for x in mine_nest[:d]] != [x.name for x in prefix]:
            break  # the reader's loops would not be named as red's
        held = max(region(red, nest, d - 1, b) for b in shared) * elem
        fits = held <= m.caches[1] / 2
        est = cost(reader, mine_nest, m, frozenset(shared) if fits else frozenset())
        if fits and held > m.caches[0] / 2:  # in L2, not L1: its lines come up from there
            est += sum(reader.points * a.elem_bytes for a in reader.accesses
                       if a.buffer in shared and not a.write) / BANDWIDTH[2] / m.cores
        if est >= GAIN * alone:
            continue
        trial = list(orders)
        trial[k] = cmd.After(reader.name, red.name, lp.name)
        out.append(Moved(reader.name, commands(reader, (), p), trial, est, p,
                         f"{reader.name}: in {red.name}'s loops "
                         f"{' '.join(x.name for x in prefix)}, after it in {lp.name} "
                         f"(reads what each iteration of {red.name} wrote, in cache)"))
    return sorted(out, key=lambda x: x.estimate)


def _plan(reader: Stmt, prefix: Sequence[Loop], plan: Plan, m: MachineModel) -> Plan:
    """The reader's plan with ``prefix`` (loops of ``plan``) as its outermost loops: their
    variables first, tiled alike, the reader's other variables after them in its order,
    its innermost one in vectors where its accesses allow."""
    first = [lp.var for lp in prefix]
    order = tuple(first + [v for v in reader.vars if v not in first])
    tiles = tuple((lp.var, plan.tile_of(lp.var) or 0) for lp in prefix if lp.part == "outer")
    inner = reader.vars[-1]
    vec = inner if inner not in reader.reductions and vectorizable(
        reader.accesses, len(reader.vars) - 1) else None
    par = plan.parallel if plan.parallel in first else None
    lanes = m.lanes(max(a.elem_bytes for a in reader.accesses if a.write)) if vec else 0
    return Plan(order, tiles, vector=vec, lanes=lanes, parallel=par)
