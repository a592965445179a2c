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
  its work times the recomputation that region implies (as scalar code where the region
  is narrower than a vector along the producer's vector loop), its data read from L1;
  the region must fit half of L2, and of two tiles estimated alike the smaller wins.

The cheapest wins. A producer computed per tile fixes its reader's plan (the search uses
it if the legality check accepts it, else the producer goes back to the root's pricing).
Each producer was priced with the stages after it still inlined; those put at the root
are then priced once more against inlining, consumers first, with every other placement
final (:func:`_revisit`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..driver.summary import (
    UNKNOWN_STRIDE,
    Stmt,
    Summary,
    domain_box,
    summarize,
    value_nodes,
)
from ..driver.summary import Access as MemAccess
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
    ``plan``; stored per iteration of ``store``, ``level`` or a loop further out (a sliding
    window: what an earlier iteration of ``level`` computed is kept and not computed
    again, ``passes/placement.py``)."""

    producer: str
    reader: str
    plan: Plan
    level: str
    store: str = ""
    fold: tuple[int, int] | None = None  # a window's (buffer dimension, factor)

    @property
    def stored_at(self) -> str:
        return self.store or self.level

    def describe(self) -> str:
        where = f"computed per iteration of {self.reader}'s loop {self.level}"
        if self.stored_at != self.level:
            where += f", stored per iteration of {self.store} (a sliding window)"
        return where


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


def _reaches(fn: Function, reader: str, target: str, inlined: set[str]) -> bool:
    """Whether ``reader`` reads ``target``, directly or through inlined computations."""
    todo, seen = [reader], set()
    while todo:
        comp = fn.computation(todo.pop())
        for x in walk(comp.expr) if comp.expr is not None else []:
            if isinstance(x, Access) and isinstance(x.target, Computation):
                t = x.target.name
                if t == target:
                    return True
                if t in inlined and t not in seen:
                    seen.add(t)
                    todo.append(t)
    return False


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
    ext = extents(reader, nest, k, buf)
    return math.prod(ext) if ext else 0.0


def extents(reader: Stmt, nest: Sequence[Loop], k: int, buf: str) -> list[float]:
    """Per dimension of ``buf``, the extent of what the reader reads of it in one
    iteration of its loop ``k`` (:func:`region`); empty where there is no such box."""
    reads = _reads_of(reader, buf)
    # a data-dependent index (a grid's z from the pixel's value) or a fractional one (a
    # pyramid's x / 8): no region per iteration to price, so no compute_at
    if not reads or any(c != int(c) or abs(c) >= UNKNOWN_STRIDE
                        for a in reads for row in a.spans for c in row):
        return []
    index = {v: j for j, v in enumerate(reader.vars)}
    rng = [1] * len(reader.vars)
    for lp in nest[k + 1:]:
        rng[index[lp.var]] *= lp.trip
    out = []
    a0 = reads[0]
    for d in range(len(a0.dim_sizes)):
        offs = [a.offsets[d] for a in reads if a.offsets]
        halo = (max(offs) - min(offs)) if offs else 0.0
        span = 1.0 + halo + sum(abs(c) * (r - 1) for c, r in zip(a0.spans[d], rng,
                                                                   strict=True))
        out.append(min(span, float(a0.dim_sizes[d])))
    return out


def _reads_of(reader: Stmt, buf: str) -> list[MemAccess]:
    return [a for a in reader.accesses if a.buffer == buf and not a.write]


def _fold(reader: Stmt, nest: Sequence[Loop], j: int, buf: str) -> tuple[int, int] | None:
    """The storage fold of a window computed per iteration of the reader's loop ``j``:
    the one dimension of ``buf`` that moves with that loop, folded to the power of two at
    least its extent per iteration (the first iteration computes the whole extent, the
    later ones a new row each: the rows a later one reads are the last ones computed),
    so that the buffer is a line buffer that stays in cache. None where no single
    dimension moves with it."""
    reads = _reads_of(reader, buf)
    var = reader.vars.index(nest[j].var)
    moving = [d for d, row in enumerate(reads[0].spans) if row[var]] if reads else []
    if len(moving) != 1:
        return None
    span = extents(reader, nest, j, buf)[moving[0]]
    factor = 1 << max(0, int(span - 1).bit_length())
    return (moving[0], factor) if factor < reads[0].dim_sizes[moving[0]] else None


def _narrow(prod: Stmt, plan: Plan, m: MachineModel) -> tuple[int, float] | None:
    """Where ``plan`` runs ``prod`` in vectors: the dimension of its buffer that moves
    with the vector loop, and the cycles per point without vectors, the cost of each
    point where the region per iteration is narrower than a vector along it (a blur
    computed per column of its reader: its own row loop one element wide)."""
    if plan.vector is None:
        return None
    write = next(a for a in prod.accesses if a.write)
    k = prod.vars.index(plan.vector)
    dim = next((d for d, row in enumerate(write.spans) if row[k]), None)
    if dim is None:
        return None
    scalar = replace(plan, vector=None, lanes=0)
    return dim, compute_cycles(prod, loops(prod, (), scalar), m) / max(prod.points, 1)


def _index(nest: Sequence[Loop], name: str) -> int:
    """The position in ``nest`` of the loop named ``name``."""
    return next(k for k, lp in enumerate(nest) if lp.name == name)


def _per_tile(reader: Stmt, prod: Stmt, m: MachineModel, plan: Plan | None = None
              ) -> tuple[float, At] | None:
    """The cheapest (estimate, placement) computing ``prod`` per iteration of a loop of
    ``reader`` (of ``plan``'s loops where given: a reader another producer is computed in
    has its plan), None where no region fits.

    Two kinds: computed and stored per iteration of an outer loop, whose region must fit
    half of L2, or a sliding window, stored per iteration of an outer loop and computed
    per iteration of a loop inside it with only loops in order between the two (no
    parallel, vector or unrolled one): each iteration computes what the earlier ones of
    the same store did not, so the work is the outer loop's region once (the strip's
    halo the only recomputation), and only the inner loop's region must fit (a stencil's
    rows: a line buffer, folded where one dimension moves: :func:`_fold`)."""
    buf = next(a.buffer for a in prod.accesses if a.write)
    elem = next(a.elem_bytes for a in prod.accesses if a.write)
    alone = ranked(prod, (), m)
    if not alone:
        return None
    # the producer's own loops inside the tile: its best plan without a parallel loop
    one = next((p for _, p in alone if p.parallel is None), alone[0][1])
    unit = compute_cycles(prod, loops(prod, (), one), m) / max(prod.points, 1)
    narrow = _narrow(prod, one, m)
    # (estimate, region, placement): of two tiles estimated alike, the smaller region (a
    # producer of all channels per vector strip, 128 bytes in registers, not per row
    # through 28 KB of L1: interpolate ran 0.83x the time)
    best: tuple[float, float, At] | None = None
    window: tuple[float, At] | None = None
    resident = frozenset({buf})
    fits = m.caches[1] / 2
    plans = [plan] if plan is not None else [p for _, p in ranked(reader, (), m)[:PLANS]]
    for pl in plans:
        nest = loops(reader, (), pl)
        trips = 1.0
        par = 1.0
        here: float | None = None  # the reader's estimate with the producer resident
        for k, lp in enumerate(nest):
            trips *= lp.trip
            if lp.tag == "parallel":
                par = speedup(lp.trip, m)
            if lp.part == "inner" or lp.tag == "vector":
                break
            size = region(reader, nest, k, buf)
            work = size * trips
            if size == 0 or work > 4 * prod.points:
                continue  # no region, or recomputes too much to be a candidate
            ats = [At(prod.name, reader.name, pl, lp.name)] if size * elem <= fits else []
            for j in range(k + 1, len(nest) - 1):  # a window: computed in a loop inside
                if nest[j].tag is not None:
                    break
                win = region(reader, nest, j, buf)
                if 0 < win and win * elem <= fits:
                    ats.append(At(prod.name, reader.name, pl, nest[j].name, lp.name,
                                  _fold(reader, nest, j, buf)))
                    break  # the outermost that fits: the fewest producer loops
            for at in ats:
                here = cost(reader, nest, m, resident) if here is None else here
                ext = extents(reader, nest, _index(nest, at.level), buf)
                thin = narrow is not None and ext[narrow[0]] < m.lanes(elem)
                est = here + (narrow[1] if thin and narrow else unit) * work / par
                area = math.prod(ext)
                slid = at.stored_at != at.level
                if slid and (window is None or est < window[0]):
                    window = (est, at)
                elif not slid and (best is None or (est, area) < best[:2]):
                    best = (est, area, at)
    # a window computes in smaller loops than a tile (one row per iteration, not a tile's
    # rows: a blur per row of its strip ran 1.3x slower than per strip, for 6 % less
    # recomputation): taken only where it saves the margin over the best tile
    if window is not None and (best is None or window[0] < GAIN * best[0]):
        return window
    return None if best is None else (best[0], best[2])


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
            # a producer already computed in the reader's loops and read by this one
            # (a stencil chain's earlier stage): at the root, this one would take it
            # out of those loops (its reader no longer inlined there), so not offered
            keep = any(a.reader in readers and _reaches(fn, p, a.producer, set(inlined))
                       for a in ats)
            choice = _choose(p, list(readers), s0, s1, m, per_tile,
                             {a.reader: a.plan for a in ats}, keep)
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
            notes.append(f"placement: {p} {choice.describe()}")
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
            per_tile: bool = True, plans: Mapping[str, Plan] | None = None,
            not_root: bool = False) -> At | str | None:
    """None: keep ``p`` inlined; "root"; or the :class:`At` the model prefers (``plans``:
    the readers' plans fixed by producers already computed in their loops; ``not_root``:
    the root is offered only where no per-tile placement is)."""
    by0 = {st.name: st for st in s0.stmts}
    by1 = {st.name: st for st in s1.stmts}
    if p not in by1 or any(r not in by0 or r not in by1 for r in readers):
        return None
    inline = sum(_best(by0[r], m) for r in readers)
    own = _at_root(by1[p], m)
    root = own + sum(_best(by1[r], m) for r in readers)
    tile = _per_tile(by1[readers[0]], by1[p], m, (plans or {}).get(readers[0])) \
        if per_tile and len(readers) == 1 else None
    margin = _margin(own, readers, by0, by1, m)
    options: list[tuple[float, At | str | None]] = [(inline, None)]
    if tile is None or not not_root:
        options.append((root + margin, "root"))
    if tile is not None:
        options.append((tile[0] + margin, tile[1]))
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
