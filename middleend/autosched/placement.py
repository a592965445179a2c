"""Where producers are computed: inlined into their reader, at the root, or inside a tile
of their reader (compute_at).

A front-end leaves a producer it has no placement for inlined (Halide's default: every Func
inlined into the output), which recomputes it at every read: a 5-tap blur of a 5-tap blur
computes the first blur 5 times per output pixel. Materializing it at the root computes it
once but writes and reads a whole buffer; computing it per tile of its reader (Halide's
``compute_at``) computes a little more than once (the tile's halo) while its values stay
in cache. For each producer read at several places, producers first, the model prices the
three (:func:`place`):

- inlined: the reader's best plan, the producer's work inside it;
- root: the reader's and the producer's best plans, each with its memory traffic;
- per tile: for each of the reader's plans and each of its outer loops, the producer's
  region per iteration (from the reader's access strides and offsets, the halo included),
  its work times the recomputation that region implies, its data read from L1; the
  region must fit half of L2.

The cheapest wins. A producer computed per tile fixes its reader's plan (the search uses
it if the legality check accepts it, else the producer goes back to the root's pricing).
Each producer was priced with the stages after it still inlined; those put at the root
are then priced once more against inlining, consumers first, with every other placement
final (:func:`_revisit`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..driver.summary import (
    UNKNOWN_STRIDE,
    Stmt,
    Summary,
    domain_box,
    summarize,
    value_nodes,
)
from ..ir import commands as cmd
from ..ir.errors import MiddleEndError
from ..ir.expr import Access, Binary, Call, Unary, walk
from ..ir.function import Buffer, Computation, Function, Var
from .cost import MachineModel, compute_cycles, cost, first_touch, speedup
from .plan import Loop, Plan, loops
from .space import ranked

# a placement other than inlined must be estimated at least 5 % cheaper, on what it changes
# (the producer's own loops and its readers' difference; :func:`_choose`)
GAIN = 0.95
PLANS = 400  # reader plans priced per producer


@dataclass(frozen=True)
class At:
    """``producer`` computed inside ``reader``'s loop ``level``, the reader's loops being
    ``plan``."""

    producer: str
    reader: str
    plan: Plan
    level: str


def _readers(fn: Function, producer: str) -> dict[str, int]:
    """Each computation that reads ``producer``, with the number of distinct places it
    reads (index tuples); a read at a data-dependent index (a lookup table's
    ``remap[idx(gray)]``) counts as several: any element may be read at every instance of
    the reader, so inlining may recompute each one many times (the local Laplacian's
    remapping curve, an ``exp`` per entry: evaluated for each of 8 levels of every pixel
    where 1793 entries are the whole table). So does a read whose indices leave out one of
    the reader's dimensions: every iteration of that dimension reads the same element (the
    local Laplacian's output channels ``c`` each read the collapsed pyramid at ``x, y``:
    inlined, the whole pyramid is recomputed per channel)."""
    out: dict[str, int] = {}
    for c in fn.computations:
        if c.expr is None or c.name == producer:
            continue
        reads = [n for n in walk(c.expr) if isinstance(n, Access)
                 and isinstance(n.target, Computation) and n.target.name == producer]
        if reads:
            inside = [x for n in reads for ix in n.indices for x in walk(ix)]
            gather = any(isinstance(x, Access) for x in inside)
            used = {x.name for x in inside if isinstance(x, Var)}
            broadcast = any(v.name not in used for v in c.vars)
            out[c.name] = max(len({repr(n.indices) for n in reads}),
                              2 if gather or broadcast else 1)
    return out


def _work(fn: Function, name: str, inlined: set[str], memo: dict[str, int]) -> int:
    """Operations one instance of ``name`` computes, those of the inlined producers it
    reads included: a sum of two inlined stages (a pyramid level's upsampling plus its
    Laplacian) is one addition of its own but all of theirs at every read."""
    if name not in memo:
        memo[name] = 0  # guards the recursion (inlined stages form no cycle)
        comp = fn.computation(name)
        nodes = value_nodes(comp.expr) if comp.expr is not None else []
        memo[name] = sum(1 for x in nodes if isinstance(x, (Binary, Unary, Call))) + sum(
            _work(fn, x.target.name, inlined, memo) for x in nodes
            if isinstance(x, Access) and isinstance(x.target, Computation)
            and x.target.name in inlined and x.target.name != name)
    return memo[name]


def _offset_store(fn: Function, name: str, trial: list[cmd.Command],
                  est: Mapping[str, int]) -> tuple[list[cmd.Command], Buffer | None]:
    """A producer about to be materialized whose domain starts below 0 (a blur's rows
    ``y - 2``, around a clamped edge) cannot have its default buffer (indices from 0):
    a buffer of its box's sizes and a ``store_in`` at its indices minus the box's start,
    as a user would write. Nothing where the program has parameters (the box would
    depend on them) or the box starts at 0."""
    comp = fn.computation(name)
    box = domain_box(fn, name, trial, est) if not fn.params else None
    if box is None or all(lo >= 0 for lo, _ in box):
        return [], None
    lows = [lo for lo, _ in box]
    sizes = [hi - lo + 1 for lo, hi in box]
    taken = {x.name for x in (*fn.buffers, *fn.computations, *fn.params)}
    bname, k = f"{name}_box", 0
    while bname in taken:
        k += 1
        bname = f"{name}_box{k}"
    with fn:
        buf = Buffer(bname, sizes, comp.dtype)
    idx = tuple(v if lo == 0 else v + (-lo) for v, lo in zip(comp.vars, lows, strict=True))
    return [cmd.StoreIn(name, bname, idx)], buf


def _through(fn: Function, readers: Mapping[str, int], statements: set[str]
             ) -> dict[str, int]:
    """The statements that read a producer, directly or through inlined computations (a
    blur read by an inlined interpolation that the output reads), with the reads."""
    out: dict[str, int] = {}
    todo, seen = list(readers.items()), set()
    while todo:
        r, n = todo.pop()
        if r in statements:
            out[r] = out.get(r, 0) + n
        elif r not in seen:
            seen.add(r)
            todo += [(q, n * k) for q, k in _readers(fn, r).items()]
    return out


def _best(st: Stmt, m: MachineModel) -> float:
    got = ranked(st, (), m)
    return got[0][0] if got else 0.0


def _at_root(st: Stmt, m: MachineModel) -> float:
    """A producer's own cost at the root: its best plan and the zeroing of its buffer's
    pages where that buffer is fresh memory at every call (:func:`.cost.first_touch`)."""
    return _best(st, m) + first_touch(st, m)


def region(reader: Stmt, nest: Sequence[Loop], k: int, buf: str) -> float:
    """Elements of ``buf`` the reader reads in one iteration of its loop ``k`` (the
    loops inside it run over their ranges; the reads' offsets add the halo)."""
    reads = [a for a in reader.accesses if a.buffer == buf and not a.write]
    # a data-dependent index (a grid's z from the pixel's value) or a fractional one (a
    # pyramid's x / 8): no region per iteration to price, so no compute_at
    if not reads or any(c != int(c) or abs(c) >= UNKNOWN_STRIDE
                        for a in reads for row in a.spans for c in row):
        return 0.0
    index = {v: j for j, v in enumerate(reader.vars)}
    rng = [1] * len(reader.vars)
    for lp in nest[k + 1:]:
        rng[index[lp.var]] *= lp.trip
    total = 1.0
    a0 = reads[0]
    for d in range(len(a0.dim_sizes)):
        offs = [a.offsets[d] for a in reads if a.offsets]
        halo = (max(offs) - min(offs)) if offs else 0.0
        span = 1.0 + halo + sum(abs(c) * (r - 1) for c, r in zip(a0.spans[d], rng,
                                                                   strict=True))
        total *= min(span, float(a0.dim_sizes[d]))
    return total


def _per_tile(reader: Stmt, prod: Stmt, m: MachineModel) -> tuple[float, Plan, str] | None:
    """The cheapest (estimate, reader plan, level) computing ``prod`` per iteration of a
    loop of ``reader``, None where no region fits."""
    buf = next(a.buffer for a in prod.accesses if a.write)
    elem = next(a.elem_bytes for a in prod.accesses if a.write)
    alone = ranked(prod, (), m)
    if not alone:
        return None
    # the producer's own loops inside the tile: its best plan without a parallel loop
    one = next((p for _, p in alone if p.parallel is None), alone[0][1])
    unit = compute_cycles(prod, loops(prod, (), one), m) / max(prod.points, 1)
    best: tuple[float, Plan, str] | None = None
    resident = frozenset({buf})
    for _, plan in ranked(reader, (), m)[:PLANS]:
        nest = loops(reader, (), plan)
        trips = 1.0
        par = 1.0
        for k, lp in enumerate(nest):
            trips *= lp.trip
            if lp.tag == "parallel":
                par = speedup(lp.trip, m)
            if lp.part == "inner" or lp.tag == "vector":
                break
            size = region(reader, nest, k, buf)
            if size == 0 or size * elem > m.caches[1] / 2:
                continue
            work = size * trips
            if work > 4 * prod.points:
                continue  # recomputes too much to be a candidate
            est = cost(reader, nest, m, resident) + unit * work / par
            if best is None or est < best[0]:
                best = (est, plan, lp.name)
    return best


def place(fn: Function, base: list[cmd.Command], m: MachineModel,
          outputs: Sequence[Any] | None, est: Mapping[str, int], deadline: float | None,
          notes: list[str], per_tile: bool = True
          ) -> tuple[list[cmd.Command], list[At], Summary | None]:
    """``base`` without the ``inline`` commands of the producers the model computes faster
    elsewhere, those of them computed per tile of their reader (``per_tile``: a
    multicore CPU's tiles; a device's mapping computes producers at the root), and the
    summary of the commands returned if it was built (None: nothing was priced)."""
    current = list(base)
    ats: list[At] = []
    done: set[str] = set()
    rooted: dict[str, tuple[cmd.Inline, list[cmd.Command], Buffer | None]] = {}
    now: Summary | None = None  # the summary of ``current``, rebuilt when it changes
    while True:
        inlined = [c.comp for c in current if isinstance(c, cmd.Inline)]
        statements = {c.name for c in fn.computations} - set(inlined)
        cands = []
        work: dict[str, int] = {}  # per round: the inlined set is fixed within it
        # producers first (the front-ends list them after their consumers), each priced
        # with its consumers still inlined; :func:`_revisit` then prices each again with
        # the final placement of the others
        for p in reversed(inlined):
            if p in done:
                continue
            readers = _readers(fn, p)
            if _work(fn, p, set(inlined), work) < 2 or sum(readers.values()) < 2:
                continue
            cands.append((p, _through(fn, readers, statements)))
        if not cands:
            for a in ats:  # a reader of a producer computed in its loops stays a loop nest
                rooted.pop(a.reader, None)
            current, now = _revisit(fn, current, rooted, m, outputs, est, deadline, notes,
                                    now)
            return current, ats, now
        if deadline is not None and time.monotonic() > deadline:
            notes.append("placement: the deadline passed; the other producers stay inlined")
            return current, ats, now
        p, readers = cands[0]
        done.add(p)
        trial = [c for c in current if not (isinstance(c, cmd.Inline) and c.comp == p)]
        try:
            store, buf = _offset_store(fn, p, trial, est)
        except MiddleEndError:
            store, buf = [], None
        trial = store + trial
        try:
            s0 = now = now or summarize(fn, est, outputs, current)
            s1 = summarize(fn, est, outputs, trial)
            choice = _choose(p, list(readers), s0, s1, m, per_tile)
        except MiddleEndError as e:  # any refusal: the producer stays inlined
            notes.append(f"placement: {p} stays inlined ({type(e).__name__}: "
                         f"{str(e).splitlines()[0]})")
            choice = None
        if choice is None:
            if buf is not None:
                fn.buffers.remove(buf)
            continue
        inline_cmd = next(c for c in current if isinstance(c, cmd.Inline) and c.comp == p)
        current, now = trial, s1
        if isinstance(choice, At):
            ats.append(choice)
            notes.append(f"placement: {p} computed per iteration of {choice.reader}'s loop "
                         f"{choice.level}")
        else:
            rooted[p] = (inline_cmd, store, buf)
            notes.append(f"placement: {p} computed at the root")


def _revisit(fn: Function, current: list[cmd.Command],
             rooted: Mapping[str, tuple[cmd.Inline, list[cmd.Command], Buffer | None]],
             m: MachineModel, outputs: Sequence[Any] | None, est: Mapping[str, int],
             deadline: float | None, notes: list[str], now: Summary | None
             ) -> tuple[list[cmd.Command], Summary | None]:
    """Each producer the first pass put at the root, consumers first, priced again against
    inlining it, now that the others are placed: the first pass priced a producer with
    every consumer after it still inlined into the output, where each of its reads is
    multiplied by the consumers' own recomputation, so that a cheap stage read by
    materialized ones (a pyramid's premultiplied input, read by its first downsampling
    and its last interpolation) was written to memory and read back where recomputing it
    at each read is cheaper. Inlined again where the model finds that at least 5 %
    cheaper, by the margin :func:`_choose` takes (its buffer and store_in dropped)."""
    for p in reversed(list(rooted)):
        if deadline is not None and time.monotonic() > deadline:
            notes.append("placement: the deadline passed; no producer at the root revisited")
            break
        inline_cmd, store, buf = rooted[p]
        statements = {c.name for c in fn.computations} - {
            c.comp for c in current if isinstance(c, cmd.Inline)}
        readers = list(_through(fn, _readers(fn, p), statements - {p}))
        trial = [c for c in current if not any(c is x for x in store)] + [inline_cmd]
        try:
            s_root = now = now or summarize(fn, est, outputs, current)
            s_in = summarize(fn, est, outputs, trial)
        except MiddleEndError:
            continue
        by_root = {st.name: st for st in s_root.stmts}
        by_in = {st.name: st for st in s_in.stmts}
        if p not in by_root or any(r not in by_root or r not in by_in for r in readers):
            continue
        own = _at_root(by_root[p], m)
        root = own + sum(_best(by_root[r], m) for r in readers)
        inline = sum(_best(by_in[r], m) for r in readers)
        if inline + _margin(own, readers, by_in, by_root, m) < root:
            current, now = trial, s_in
            if buf is not None:
                fn.buffers.remove(buf)
            notes.append(f"placement: {p} inlined again, its readers placed (the model: "
                         f"{inline:.3g} cycles inlined, {root:.3g} at the root)")
    return current, now


def _choose(p: str, readers: list[str], s0: Summary, s1: Summary, m: MachineModel,
            per_tile: bool = True) -> At | str | None:
    """None: keep ``p`` inlined; "root"; or the :class:`At` the model prefers."""
    by0 = {st.name: st for st in s0.stmts}
    by1 = {st.name: st for st in s1.stmts}
    if p not in by1 or any(r not in by0 or r not in by1 for r in readers):
        return None
    inline = sum(_best(by0[r], m) for r in readers)
    own = _at_root(by1[p], m)
    root = own + sum(_best(by1[r], m) for r in readers)
    tile = _per_tile(by1[readers[0]], by1[p], m) if per_tile and len(readers) == 1 \
        else None
    margin = _margin(own, readers, by0, by1, m)
    options: list[tuple[float, At | str | None]] = [(inline, None), (root + margin, "root")]
    if tile is not None:
        options.append((tile[0] + margin, At(p, readers[0], tile[1], tile[2])))
    return min(options, key=lambda o: o[0])[1]


def _margin(own: float, readers: Sequence[str], inlined: Mapping[str, Stmt],
            rooted: Mapping[str, Stmt], m: MachineModel) -> float:
    """How much cheaper one placement of a producer must be estimated than the other to
    be taken (the model's noise, :data:`GAIN`): 5 % of what the choice changes, the
    producer's own loops and its readers' difference between the two, not of the
    readers' whole estimates, which may still hold every later stage inlined (a
    pyramid's output: 1e12 cycles while its first stage is placed) and would dilute the
    margin on a whole below any saving."""
    both = sum(min(_best(inlined[r], m), _best(rooted[r], m)) for r in readers)
    spread = sum(max(_best(inlined[r], m), _best(rooted[r], m)) for r in readers) - both
    return (1.0 / GAIN - 1.0) * (own + spread)
