"""Where each Func is realized: Halide's compute_at / store_at semantics on the middle-end's
``compute_at`` / ``allocate_at``.

Halide's ``producer.compute_at(consumer, x)`` names a loop of the consumer *Func*, not of
one stage: the producer is realized at loop ``x`` of every stage of the consumer whose loop
nest uses it (tutorial lesson 9: only the update, or the pure definition and the update, one
realization each), and a stage uses it when it calls it, directly, through inlined Funcs, or
through Funcs realized inside that stage's loops (a producer of a producer computed at the
same loop). ``compute_at(consumer.update(k), x)`` names the stage.

The middle-end's ``compute_at(c, level)`` computes what ``c`` reads per iteration of its
loop ``level``, and what the computations computed at ``c`` inside that iteration read, so
each realization is placed for the computation the readers there are computed at: the
consumer's stage itself, or the Func realized inside it that reads the producer (its loops
extend the consumer's, so the consumer's loop name is one of its loops too). A Func with
updates is read through its buffer: every stage is computed at the loop, and the middle-end
places each stage's instances that write what is read there (a scan's earlier ones too).
Several realizations of one Func are copies of its computations (:class:`Placement` tells
the translator which copy each reader reads).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import definitions, exprs_of, walk
from frontends.halide.races import check_races
from frontends.halide.ring import check_hoist, check_ring
from frontends.names import Namer
from middleend import ROOT, ScheduleError, barrier_at
from middleend.ir.expr import Access
from middleend.ir.expr import walk as expr_walk

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo, Translator


def stage_callees(fi: FuncInfo, k: int) -> list[str]:
    """The Funcs stage ``k`` of ``fi`` calls (its own earlier values excepted), once each,
    in the order the definition first calls them: a set's order follows the names'
    hashes, which differ between processes, and the placement walks callees in this
    order (a test passed or failed by the interpreter's hash seed)."""
    out: dict[str, None] = {}
    for root in exprs_of(definitions(fi.f)[k]):
        for n in walk(root):
            if n.kind == "Call" and n.call_type == "Halide" and n.name != fi.f.name:
                out.setdefault(n.name)
    return list(out)


def _has_loop(fi: FuncInfo, k: int, var: str) -> bool:
    dims = [dm.var for dm in definitions(fi.f)[k].schedule.dims]
    return any(d == var or d.endswith("." + var) for d in dims)


@dataclass
class Placement:
    """The realizations of every compute_at Func: ``sites[p]`` lists the stages of its
    consumer Func where it is realized (one copy of its computations each, in order)."""

    info: dict[str, FuncInfo]
    sites: dict[str, list[int]] = field(default_factory=dict)
    _busy: set[str] = field(default_factory=set)
    _reach: dict[tuple[str, str], bool] = field(default_factory=dict)  # see reaches()
    # (Func, realization) -> the computation it is computed at (filled by place())
    consumers: dict[tuple[str, int], Any] = field(default_factory=dict)

    def computed_at(self, name: str) -> bool:
        fi = self.info[name]
        cl = fi.f.schedule.compute_level
        return not fi.inline and not cl.is_root and not cl.is_inlined and not cl.is_outermost

    def stages(self, p: str) -> list[int]:
        """The stages of ``p``'s consumer Func where ``p`` is realized."""
        got = self.sites.get(p)
        if got is not None:
            return got
        if p in self._busy:
            raise UnsupportedHalideFeature(p, None, "compute_at levels that depend on each "
                                           "other in a cycle")
        self._busy.add(p)
        cl = self.info[p].f.schedule.compute_level
        ci = self.info.get(cl.func_name)
        if ci is None:
            raise UnsupportedHalideFeature(p, None, f"compute_at/store_at a Func "
                                           f"{cl.func_name!r} outside the pipeline")
        if ci.inline:
            raise UnsupportedHalideFeature(p, None, f"compute_at an inlined Func "
                                           f"{cl.func_name!r}")
        n = len(definitions(ci.f))
        if cl.stage_index >= n:
            raise UnsupportedHalideFeature(p, None, f"compute_at stage {cl.stage_index} of "
                                           f"{cl.func_name!r}, which has {n}")
        cand = [cl.stage_index] if cl.stage_index >= 0 else list(range(n))
        cand = [k for k in cand if _has_loop(ci, k, cl.var_name)]
        got = [k for k in cand if self.uses(cl.func_name, k, p)]
        if not got:
            raise UnsupportedHalideFeature(
                p, None, f"compute_at({cl.func_name}, {cl.var_name}): no stage of "
                f"{cl.func_name!r} with a loop {cl.var_name!r} uses it")
        self._busy.discard(p)
        self.sites[p] = got
        return got

    def inside(self, q: str, g: str, j: int) -> bool:
        """Whether ``q`` is realized inside the loops of stage ``j`` of ``g``."""
        if not self.computed_at(q):
            return False
        at = self.info[q].f.schedule.compute_level.func_name
        if at == g:
            return j in self.stages(q)
        return self.inside(at, g, j)

    def uses(self, g: str, j: int, p: str) -> bool:
        """Whether stage ``j`` of ``g`` needs ``p`` inside its loop nest."""
        return self._uses_in(g, j, g, j, p)

    def _uses_in(self, g: str, j: int, h: str, k: int, p: str) -> bool:
        """Whether stage ``k`` of ``h``, which runs inside the loops of stage ``j`` of
        ``g``, calls ``p`` there: directly, through inlined Funcs, or through Funcs realized
        inside stage ``j`` of ``g`` (the loops that matter are always ``g``'s: a Func
        inlined into a Func computed at ``g``'s loop, or computed there itself, runs in
        them too).

        A callee that cannot reach ``p`` through any chain of calls is passed over before
        its realization is asked: that may need the callee's own placement, which may be
        the one being worked out (two Funcs computed at the same loop, ``p``'s placement
        looking at its sibling, whose placement looks back at ``p``). Asked first, such
        siblings were refused as a cycle although neither calls the other."""
        for c in stage_callees(self.info[h], k):
            if c == p:
                return True
            if not self.reaches(c, p):
                continue
            ci = self.info[c]
            if ci.inline and self._uses_in(g, j, c, 0, p):
                return True
            if self.inside(c, g, j) and any(self._uses_in(g, j, c, s, p)
                                            for s in range(len(definitions(ci.f)))):
                return True
        return False

    def reaches(self, c: str, p: str) -> bool:
        """Whether some stage of ``c`` calls ``p``, directly or through other Funcs
        (memoized: the call graph is a DAG, walked once per pair)."""
        key = (c, p)
        got = self._reach.get(key)
        if got is None:
            fi = self.info[c]
            got = any(q == p or self.reaches(q, p)
                      for k in range(len(definitions(fi.f))) for q in stage_callees(fi, k))
            self._reach[key] = got
        return got

    def reads(self, g: str, j: int, p: str) -> bool:
        """Whether stage ``j`` of ``g`` reads ``p`` once inlined Funcs are substituted."""
        for c in stage_callees(self.info[g], j):
            if c == p or (self.info[c].inline and self.reads(c, 0, p)):
                return True
        return False

    def readers(self, p: str, site: int) -> list[tuple[str, int]]:
        """The stages that read ``p`` (inlining done) inside its realization ``site``."""
        f = self.info[p].f.schedule.compute_level.func_name
        out = []
        for g, gi in self.info.items():
            if gi.inline:
                continue
            for j in range(len(definitions(gi.f))):
                if ((g == f and j == site) or self.inside(g, f, site)) and self.reads(g, j, p):
                    out.append((g, j))
        return out

    def outside(self, p: str) -> list[str]:
        """The Funcs that read ``p`` (inlining done) outside every loop where it is
        realized: Halide refuses such a schedule ("computed at an invalid location")."""
        f = self.info[p].f.schedule.compute_level.func_name
        sites = self.stages(p)
        out = []
        for g, gi in self.info.items():
            if gi.inline:
                continue
            for j in range(len(definitions(gi.f))):
                if self.reads(g, j, p) and not (
                        (g == f and j in sites) or any(self.inside(g, f, k) for k in sites)):
                    out.append(g)
                    break
        return out

    def copy_for(self, p: str, reader: str, stage: int) -> int:
        """Which realization of ``p`` a read in stage ``stage`` of ``reader`` reads."""
        sites = self.sites.get(p)
        if sites is None or len(sites) == 1:
            return 0
        if len(self.sites.get(reader, ())) > 1:
            raise UnsupportedHalideFeature(
                p, None, f"a read by {reader!r}, itself computed in several stages, of a "
                "Func computed in several stages")
        f = self.info[p].f.schedule.compute_level.func_name
        for r, k in enumerate(sites):
            if (reader == f and stage == k) or self.inside(reader, f, k):
                return r
        raise UnsupportedHalideFeature(
            p, None, f"a read by {reader!r}, outside every stage of "
            f"{f!r} where it is computed")

    def check_copies(self, p: str) -> None:
        """A Func realized more than once must be read only by stages placed in one of its
        realizations: an inlined reader is translated once, for every caller."""
        f = self.info[p].f.schedule.compute_level.func_name
        for g, gi in self.info.items():
            if gi.inline and p in stage_callees(gi, 0):
                raise UnsupportedHalideFeature(
                    p, None, f"compute_at({f}, ...) in {len(self.sites[p])} stages of "
                    f"{f!r} while the inlined Func {g!r} reads it (compute {g!r} at those "
                    "stages too, or compute_root one of them)")


def place(tr: Translator, fi: FuncInfo) -> None:
    """compute_inline / compute_root / compute_at + store_at of one Func."""
    f = fi.f
    s = f.schedule
    if fi.inline:
        for c in fi.comps[0]:
            c.inline()
        return  # a ring_buffer() too: no storage, as in Halide
    if s.ring_buffer is not None and f.name not in tr.outputs:  # an output: its buffer
        check_ring(tr, fi)
    elif tr.placement.computed_at(f.name):
        check_hoist(tr, fi)
    if tr.placement.computed_at(f.name) and f.name not in tr.outputs:
        check_races(tr, fi)
    # Tuple elements of one stage share one loop nest, as in Halide, in order (an update
    # whose elements read each other: all new values first, then the stores)
    n = len(f.output_types)
    afters: list[tuple[Any, Any, str]] = []
    for k, plan in enumerate(fi.plans):
        if not plan.order and k not in fi.temps:
            continue
        inner = plan.loops[plan.order[-1]] if plan.order else ROOT
        vector = [h for h in plan.order if any(dm.var == h and dm.for_type == "Vectorized"
                                               for dm in definitions(f)[k].schedule.dims)]
        at = plan.order[:plan.order.index(vector[0])] if vector else plan.order
        for r in range(len(fi.copies) + 1):  # each realization in its own stage's loops
            comps = fi.realization(r, k)  # all new values, then all stores
            afters += [(a, b, inner) for a, b in itertools.pairwise(comps)]
            for t in comps[:-n] if at else []:
                # a scalar per iteration, or per iteration outside the vector loops
                t.allocate_at(comps[-n], plan.loops[at[-1]])
    cl = s.compute_level
    if cl.is_root or cl.is_inlined or cl.is_outermost:  # outermost: before the consumer
        sl = s.store_level
        if not sl.is_inlined and not sl.is_root and not sl.is_outermost:
            raise UnsupportedHalideFeature(f.name, None, "store_at inside a compute_root Func")
        for a, b, inner in afters:
            b.after(a, inner)
        return
    # a Tuple update whose elements read each other: every element is computed over the
    # union of what is read of any (the middle-end's compute_at fixpoint), as in Halide
    _place_at(tr, fi)
    # after compute_at, which puts each computation just before its consumer: the elements
    # of a stage then share its loops again (an update whose elements read each other
    # computes all new values, then stores them, at each point)
    for a, b, inner in afters:
        b.after(a, inner)


def _place_at(tr: Translator, fi: FuncInfo) -> None:
    """compute_at / store_at of a Func computed at a loop of its consumer."""
    f = fi.f
    s = f.schedule
    cl = s.compute_level
    pl = tr.placement
    outside = pl.outside(f.name)
    if outside:
        raise ScheduleError(
            f"Func {f.name!r} is computed at {cl.func_name}.{cl.var_name}, but "
            f"{', '.join(map(repr, outside))} read it outside that loop; Halide refuses this "
            "schedule too (\"computed at an invalid location\"): compute it at a loop "
            "around every use, or compute_root", computations=(f.name, *outside))
    # hoist_storage(level) allocates at that level, outside store_at's (values are the
    # same; Halide only gives up the sliding window there); with ring_buffer(), at the
    # store level: the storage of one realization, one copy of the ring (ring.py)
    hoisted = not s.hoist_storage_level.is_inlined and s.ring_buffer is None
    sl = s.hoist_storage_level if hoisted else s.store_level
    if sl.is_outermost:
        sl = dataclasses.replace(sl, var_name="__root")  # outside every loop: at root
    if not sl.is_inlined and not sl.is_root and sl.func_name != cl.func_name:
        raise UnsupportedHalideFeature(f.name, None, "store_at and compute_at in different "
                                       "Funcs")
    for r, site in enumerate(pl.stages(f.name)):
        comps = fi.comps[0] if r == 0 else fi.copies[r - 1]
        readers = pl.readers(f.name, site)
        if not readers:
            raise UnsupportedHalideFeature(f.name, None, f"compute_at({cl.func_name}, "
                                           f"{cl.var_name}) where nothing reads it")
        # several readers in the realization (the consumer and a Func computed there):
        # placed for the computation they are all computed at, the middle-end computes it
        # for every read made inside that iteration
        bufs = [b.name for b in (fi.storage if r == 0 else fi.copy_storage[r - 1])]
        cands = {id(c): c for c in (_reading(tr, g, j, comps, bufs) if len(readers) == 1 else
                                    _site_consumer(tr, g, j, cl.func_name, site, comps, bufs)
                                    for g, j in readers)}
        if len(cands) > 1:  # readers nested at different depths: the outermost
            cands = {id(c): c for c in (_outermost(tr, c, cl.func_name)
                                        for c in cands.values())}
        if len(cands) != 1:
            raise UnsupportedHalideFeature(
                f.name, None, f"compute_at({cl.func_name}, {cl.var_name}) where "
                f"{len(readers)} stages read it ({', '.join(g for g, _ in readers)}) "
                "computed at different Tuple elements of the consumer")
        consumer = next(iter(cands.values()))
        pl.consumers[(f.name, r)] = consumer
        level, plan, vector = _loop(tr, f.name, cl.func_name, site, cl.var_name)
        if vector is not None:
            _vectorize_lanes(tr, fi, comps, cl.func_name, site, vector)
        if level == ROOT:  # at a vector loop with no loop around it: before the consumer
            continue
        # all stages, in order, at that loop: the updates of what the consumer reads there
        # (the middle-end places them by the buffer elements the consumer reads)
        for c in [c for k in range(len(fi.comps)) for c in fi.realization(r, k)]:
            c.compute_at(consumer, level)
        if sl.is_root:
            continue
        at = level if sl.is_inlined else _loop(tr, f.name, sl.func_name, site,
                                               sl.var_name)[0]
        for c in comps:
            c.allocate_at(consumer, at)
        if level in plan.gpu_blocks:
            # computed per GPU block into its shared memory, by the block's threads: Halide
            # synchronizes them before the consumer reads it, and before each update
            # stage reads what the stage before wrote (other threads' elements); so do we
            for k in range(1, len(fi.comps)):
                barrier_at(fi.realization(r, k)[0], level)
            barrier_at(consumer, level)


def _reading(tr: Translator, g: str, j: int, comps: list[Any], bufs: list[str]) -> Any:
    """The computation of stage ``j`` of ``g`` (a Tuple element) that reads ``comps`` (or
    their buffers ``bufs``), directly or through inlined computations (the first element
    when none can be told)."""
    names = {c.name for c in comps} | set(bufs)
    inlined = {c.name: c for fi in tr.info.values() if fi.inline for c in fi.comps[0]}

    def reads(e: Any, seen: frozenset[str]) -> bool:
        for n in expr_walk(e):
            if not isinstance(n, Access):
                continue
            t = getattr(n.target, "name", "")
            if t in names:
                return True
            c = inlined.get(t)
            if c is not None and t not in seen and c.expr is not None and \
                    reads(c.expr, seen | {t}):
                return True
        return False

    for c in tr.info[g].comps[j]:
        if c.expr is not None and reads(c.expr, frozenset()):
            return c
    return tr.info[g].comps[j][0]


def _site_consumer(tr: Translator, g: str, j: int, f: str, site: int, comps: list[Any],
                   bufs: list[str]) -> Any:
    """The computation of stage ``site`` of ``f`` inside whose loops stage ``j`` of ``g``
    runs: its own when ``g`` is ``f``, else the one the Func around ``g`` is computed at."""
    if g == f:
        return _reading(tr, g, j, comps, bufs)
    h = g
    while tr.info[h].f.schedule.compute_level.func_name != f:
        h = tr.info[h].f.schedule.compute_level.func_name
    got = tr.placement.consumers.get((h, tr.placement.stages(h).index(site)))
    if got is None:
        raise UnsupportedHalideFeature(g, None, f"a read inside {f!r} from {h!r}, which is not "
                                       "placed there yet")
    return got


def _outermost(tr: Translator, comp: Any, f: str) -> Any:
    """The computation of ``f`` around ``comp``: ``comp`` itself when it is one of
    ``f``'s, else the consumer its Func was placed for, and so on outwards (a Func computed
    at ``f``'s loop for another Func computed there, as in unsharp mask: the middle-end's
    compute_at at ``f``'s computation covers the reads of everything computed inside it)."""
    owner = {id(c): (n, r) for n, fi in tr.info.items() if not fi.inline
             for r in range(len(fi.copies) + 1) for k in range(len(fi.comps))
             for c in fi.realization(r, k)}
    seen = 0
    while id(comp) in owner and owner[id(comp)][0] != f and seen < len(owner):
        nxt = tr.placement.consumers.get(owner[id(comp)])
        if nxt is None:
            return comp
        comp, seen = nxt, seen + 1
    return comp


def _loop(tr: Translator, producer: str, func: str, stage: int, var: str
          ) -> tuple[str, Any, str | None]:
    """Our name of loop ``var`` of stage ``stage`` of ``func``, that stage's plan, and the
    Halide name of the vector loop ``var`` is or sits in (None: none).

    Halide computes a Func at a vector loop per vector, over all of its lanes' points
    (each lane's storage side by side); the middle-end allocates nothing inside a vector
    loop (an OpenMP simd body), so such a level is the loop just outside the outermost
    vector loop around ``var``: the same points, computed once per vector (the values do
    not depend on where a Func is computed); ``ROOT`` when no loop is outside it (the
    Func is then computed once, before the consumer, as at ``Var.outermost()``)."""
    plan = tr.info[func].plans[stage]
    hits = [n for n in plan.order if n == var]
    hits = hits or [n for n in plan.order if n.endswith("." + var)]
    if len(hits) != 1:
        raise UnsupportedHalideFeature(producer, None, f"compute_at/store_at loop {var!r} of "
                                       f"{func!r}: loops are {plan.order}")
    pos = plan.order.index(hits[0])
    vector = {dm.var for dm in definitions(tr.info[func].f)[stage].schedule.dims
              if dm.for_type == "Vectorized"}
    around = [i for i in range(pos + 1) if plan.order[i] in vector]
    if not around:
        return plan.loops[hits[0]], plan, None
    v = around[0]
    return (plan.loops[plan.order[v - 1]] if v else ROOT), plan, plan.order[v]


def _vectorize_lanes(tr: Translator, fi: FuncInfo, comps: list[Any], func: str,
                     stage: int, vector: str) -> None:
    """Halide vectorizes a Func computed at a vector loop across the vector's lanes; ours
    is computed just outside that loop (:func:`_loop`), over the lanes' points, so its
    loop along the lanes is vectorized by the same width: the innermost loop of its pure
    definition, when that is a pure variable the consumer stage indexes it by with the
    vector loop's variable (one dimension in every call) and the definition has no loop
    directive of its own (the user's schedule of the producer stands)."""
    d = definitions(tr.info[func].f)[stage]
    parent: dict[str, str] = {}  # a loop split or renamed from another: that one
    factor = None
    for sp in d.schedule.splits:
        if sp.split_type == "FuseVars":
            return  # the lanes run along two variables
        parent[sp.outer] = sp.old_var
        if sp.split_type == "SplitVar":
            parent[sp.inner] = sp.old_var
            factor = sp.factor if sp.inner == vector else factor
    if factor is None:
        return
    width = tr._const(factor, func)
    root = vector
    while root in parent:
        root = parent[root]
    dims: set[int] = set()
    for e in exprs_of(d):
        for n in walk(e):
            if n.kind == "Call" and n.call_type == "Halide" and n.name == fi.f.name:
                dims |= {i for i, a in enumerate(n.args)
                         if any(m.kind == "Variable" and m.name == root for m in walk(a))}
    own = definitions(fi.f)[0].schedule
    plan = fi.plans[0]
    if len(dims) != 1 or own.splits or any(dm.for_type != "Serial" for dm in own.dims):
        return
    lane = fi.f.args[next(iter(dims))]
    if not plan.order or plan.order[-1] != lane:
        return
    taken = {n for p in fi.plans for n in p.loops.values()}
    namer = Namer(taken)
    outer, inner = namer(f"{lane}_vo"), namer(f"{lane}_vi")
    for c in comps:
        c.vectorize(plan.loops[lane], width, outer, inner)
