"""The dataflow of the scheduled program that the legality check compares with Layer I's
(:mod:`.legality`): ISL's exact dataflow, one problem per buffer, the copy chains a read
goes through, and the pieces of the program-wide relations split once so that checking
one read costs what its own statement and buffer hold."""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.islutil import maps_of
from .data import Layer3
from .dataflow import Expected
from .layer1 import Layer1
from .layer4 import Layer4
from .physical import Physical
from .placement import TimeSpace
from .samevalue import same_value


def ident_sched(m: isl.Map, name: str) -> isl.UnionMap:
    dom = m.domain()
    ident = isl.Map.identity(dom.get_space().map_from_set()).intersect_domain(dom)
    return isl.UnionMap.from_map(ident.set_tuple_name(isl.dim_type.in_, name))


class Chains:
    """Follows a read through transparent Layer IV operations (copies) to the computation
    instance whose value it sees: a read whose last writer is a copy instance sees what
    that instance read, and so on (a copy of a copy: global -> shared -> local)."""

    def __init__(self, deps: isl.UnionMap, ts: TimeSpace, ph: Physical, l4: Layer4) -> None:
        self.ranges = {o.name: isl.UnionSet.from_set(ts.comps[o.name].full.range())
                       for o in l4.ops.values() if o.transparent and o.name in ph.op_reads}
        self.flow = {o: strip(deps, f"O_{o}").reverse() for o in ph.op_reads}
        self.unsourced = {o: isl.UnionSet.from_set(ph.op_reads[o].domain()).subtract(
            self.flow[o].domain()) for o in ph.op_reads}

    def resolve(self, flow: isl.UnionMap) -> tuple[isl.UnionMap, isl.UnionSet]:
        """``flow`` (T_sink -> T_source) with copy instances replaced by their own
        sources; the sinks whose chain ends at a copy that read nothing written (an input's
        or the caller's initial content)."""
        none = isl.UnionSet.empty(flow.get_space().params())
        for _ in range(len(self.ranges) + 1):
            changed = False
            for o, rng in self.ranges.items():
                part = flow.intersect_range(rng)
                if part.is_empty():
                    continue
                changed = True
                none = none.union(part.intersect_range(self.unsourced[o]).domain())
                flow = flow.subtract(part).union(part.apply_range(self.flow[o]))
            if not changed:
                return flow, none
        raise ScheduleError("internal: a chain of copies does not end")  # pragma: no cover


Flow = tuple[isl.UnionMap, Chains, Callable[[], isl.UnionMap]]


def flow_group(access: isl.Map) -> str:
    """The dataflow problem an access belongs to: its buffer's (benchmarks/legality_time.py
    puts all in one, as the check did before, to compare)."""
    return access.get_tuple_name(isl.dim_type.out) or ""


def scheduled_flow(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected, ph: Physical,
                    l4: Layer4) -> Flow | None:
    """ISL's exact dataflow of the scheduled program (sink -> the write it sees, in
    time-space), the copy chains to follow through, and the same-value relation (lazy);
    None when nothing is read and nothing is an output. One dataflow problem per buffer
    (a read sees only writes of its own buffer): the same dependences as one problem for
    the whole program, which ISL solved in time growing faster than the number of
    statements (a many-stage pipeline)."""
    empty = isl.UnionMap.empty(l1.param_space)
    groups: dict[str, list[isl.UnionMap]] = {}  # buffer -> [sinks, must, may, schedule]

    def add(m: isl.Map, slot: int, sched: isl.UnionMap) -> None:
        g = groups.setdefault(flow_group(m), [empty] * 4)
        g[slot] = g[slot].union(isl.UnionMap.from_map(m))
        g[3] = g[3].union(sched)

    for key, r in [*((f"R{k}", m) for k, m in ph.reads.items()),
                   *((f"O_{k}", m) for k, m in ph.op_reads.items())]:
        add(r.set_tuple_name(isl.dim_type.in_, key), 0, ident_sched(r, key))
    writers = [(n in ph.guarded, w) for n, w in ph.writes.items()]
    # a receive's data comes from another node: the distributed target checks it
    writers += [(False, w) for o, w in ph.op_writes.items() if l4.ops[o].transparent]
    for guarded, w in writers:
        nm = "V" if guarded else "W"
        add(w.set_tuple_name(isl.dim_type.in_, nm), 2 if guarded else 1, ident_sched(w, nm))
    ntd = 2 * ts.depth + 1
    end = [max([ts.comps[n].betas[0] for n in ts.order] or [0]) + 1] + [0] * (ntd - 1)
    for bname, written in exp.written.items():
        if bname in ph.local:
            continue
        elems = written
        f = l3.fold_map(bname, elems.get_space())
        if f is not None:
            continue  # folded buffers are never outputs (refused in Layer III)
        nm = f"END_{bname}"
        e2 = elems.set_tuple_name(nm)
        t_end = isl.Set.read_from_str(l1.ctx, "{ [" + ", ".join(map(str, end)) + "] }")
        add(isl.Map.identity(e2.get_space().map_from_set()).intersect_domain(e2)
            .set_tuple_name(isl.dim_type.out, bname), 0,
            isl.UnionMap.from_map(isl.Map.from_domain_and_range(e2, t_end)))
    deps, any_sink = empty, False
    for sinks, must, may, sched in groups.values():
        if sinks.is_empty():
            continue
        any_sink = True
        deps = deps.union(group_flow(sinks, must, may, sched))
    if not any_sink:
        return None
    cached: list[isl.UnionMap] = []

    def same() -> isl.UnionMap:  # computed only when some producers differ
        if not cached:
            cached.append(same_value(l1, l3))
        return cached[0]

    return deps, Chains(deps, ts, ph, l4), same


def isl_flow(sinks: isl.UnionMap, must: isl.UnionMap, may: isl.UnionMap,
             sched: isl.UnionMap) -> isl.UnionMap:
    """ISL's dataflow (source -> sink): for every element a sink instance reads, the last
    must source before it that writes the element, and the may sources after that one."""
    info = isl.UnionAccessInfo.from_sink(sinks).set_must_source(must).set_may_source(may)
    return info.set_schedule_map(sched).compute_flow().get_may_dependence()


def group_flow(sinks: isl.UnionMap, must: isl.UnionMap, may: isl.UnionMap,
               sched: isl.UnionMap) -> isl.UnionMap:
    """:func:`isl_flow` of one buffer's problem (as :func:`scheduled_flow` builds it: every
    source ``W`` and sink ``R``/``O_`` instance named by its own time-space point, an
    ``END_`` sink after every write), found without ISL's search for the last writer
    wherever the writes allow it.

    Why: a producer computed per tile (compute_at) writes, in each tile, a region made of
    several overlapping pieces, and its elements again in the next tiles (the borders
    recomputed); ISL then looks for the last writer of each read element over every pair
    of pieces of every tile before it (a chain of 4 stencils took seconds, a clipped one
    ran out of memory). But when no element is written twice within one iteration of the
    outer ``p`` time-space dims (``W[t] -> (t[:p], element)`` is injective), a read at
    ``t`` that some write with the same ``t[:p]`` precedes has exactly one such write, and
    it is the last writer: any other write before ``t`` has a smaller prefix, so comes
    before it. Those dependences are a join, ``R ; key^-1`` restricted to ``t' < t``; the
    reads with no such write (from an earlier iteration, or from none) are left to ISL.
    With ``p`` = 0 (every element written once) the join is the whole answer. The result
    is the same relation as :func:`isl_flow`'s (``tests/test_compute_at_hull.py`` compares
    them)."""
    if not may.is_empty():
        return isl_flow(sinks, must, may, sched)
    writes = maps_of(must.coalesce())
    if len(writes) != 1:
        return isl_flow(sinks, must, may, sched)
    w = writes[0]
    n = w.dim(isl.dim_type.in_)
    for p in range(0, n, 2):  # prefixes ending at a loop dim: [b0, l0, ..., b(k-1), l(k-1)]
        key_w = _prefix(w.get_space().domain(), p).range_product(w)
        if key_w.is_injective():
            break
    else:
        return isl_flow(sinks, must, may, sched)
    wname = w.get_tuple_name(isl.dim_type.in_)
    out = isl.UnionMap.empty(must.get_space())
    rest = isl.UnionMap.empty(sinks.get_space())
    for r in maps_of(sinks.coalesce()):
        name = r.get_tuple_name(isl.dim_type.in_) or ""
        if name.startswith("END_"):
            if p:  # its time is no write's: its last writer is in no prefix
                rest = rest.union(isl.UnionMap.from_map(r))
                continue
            # the end comes after every write: each element's only writer
            cand = isl.UnionMap.from_map(r).apply_range(isl.UnionMap.from_map(w.reverse()))
        else:
            if r.dim(isl.dim_type.in_) != n:
                return isl_flow(sinks, must, may, sched)
            key_r = _prefix(r.get_space().domain(), p).range_product(r)
            cand = isl.UnionMap.from_map(key_r).apply_range(isl.UnionMap.from_map(
                key_w.reverse()))
            before = isl.Map.lex_gt(r.get_space().domain()).set_tuple_name(
                isl.dim_type.out, wname)
            cand = cand.intersect(isl.UnionMap.from_map(before))
        cand = cand.coalesce()  # the lex order split each pair into one piece per dim
        out = out.union(cand.reverse())
        if p:
            left = isl.UnionMap.from_map(r).subtract(cand.apply_range(
                isl.UnionMap.from_map(w)))
            if not left.is_empty():
                rest = rest.union(left)
    if not rest.is_empty():
        out = out.union(isl_flow(rest, must, may, sched))
    return out


def _prefix(space: isl.Space, p: int) -> isl.Map:
    """``name[t] -> [t[:p]]`` over the whole of ``space`` (a named set space)."""
    n = space.dim(isl.dim_type.set)
    ident = isl.Map.identity(space.map_from_set()).project_out(isl.dim_type.out, p, n - p)
    return ident.reset_tuple_id(isl.dim_type.out)


class Parts:
    """The pieces of the program-wide relations that one read needs, split once per check
    so that checking a read costs what its own statement and buffer hold, not the whole
    program (a many-stage pipeline's reads each went through every statement's maps:
    quadratic in the number of stages): the dependences by sink, the time-space ->
    instance map by statement, and each buffer's writers."""

    def __init__(self, deps: isl.UnionMap, ph: Physical, l4: Layer4) -> None:
        self.by_sink: dict[str, list[isl.Map]] = {}
        for m in maps_of(deps):
            self.by_sink.setdefault(m.get_tuple_name(isl.dim_type.out) or "", []).append(m)
        self.tinv: dict[str, isl.UnionMap] = {}
        for m in maps_of(ph.tinv):
            n = m.get_tuple_name(isl.dim_type.out) or ""
            um = isl.UnionMap.from_map(m)
            self.tinv[n] = self.tinv[n].union(um) if n in self.tinv else um
        self.writers: dict[str, list[str]] = {}
        for n, w in ph.writes.items():
            self.writers.setdefault(w.get_tuple_name(isl.dim_type.out) or "", []).append(n)
        # a read resolved through a copy sees another buffer's writers: all of them then
        self.exact = not any(o.transparent for o in l4.ops.values())
        self.empty = isl.UnionMap.empty(ph.tinv.get_space())

    def tinv_of(self, names: list[str]) -> isl.UnionMap:
        out = self.empty
        for n in names:
            out = out.union(self.tinv.get(n, self.empty))
        return out


def strip(deps: isl.UnionMap, sink_name: str,
           by_sink: dict[str, list[isl.Map]] | None = None) -> isl.UnionMap:
    """The part of ``deps`` into sink ``sink_name``, with tuple names removed: T -> T
    (``by_sink``: ``deps``' maps grouped by sink, to look at that sink's only)."""
    out = None
    for m in (maps_of(deps) if by_sink is None else by_sink.get(sink_name, [])):
        if m.get_tuple_name(isl.dim_type.out) != sink_name:
            continue
        m2 = m.reset_tuple_id(isl.dim_type.in_)
        if m2.get_tuple_name(isl.dim_type.out) != sink_name:
            continue
        m2 = m2.reset_tuple_id(isl.dim_type.out) if not sink_name.startswith("END_") else \
            m2.set_tuple_name(isl.dim_type.out, sink_name)
        um = isl.UnionMap.from_map(m2)
        out = um if out is None else out.union(um)
    if out is None:
        return isl.UnionMap.empty(deps.get_space())
    return out
