"""Resolve compute_at and the ordering commands into one shared time-space.

compute_at is resolved after every loop transformation, so that the producer is placed in
the consumer's *final* loops: the producer's domain is extended with the consumer's outer
loop dimensions and restricted, per outer iteration, to the exact footprint the consumer
reads there (ISL computes it; overlapping tiles recompute values redundantly), together
with what the computations sharing those loops with the consumer (``after``/``before`` at
that level or deeper: a Tuple's elements) and those computed at it read. The ordering
is a total order of computations plus, between neighbours, the number of loops they share
(resolved from the ordering commands as a graph, in :mod:`.ordering`); it becomes the beta
(constant) dimensions of the time-space.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from ..ir.islutil import exact_hull
from .data import Layer3
from .dataflow import logical_access, read_buffer
from .layer1 import Layer1
from .layer4 import Op
from .ordering import Order, Placer
from .schedule import CompSchedule, _range_map

ReadsOf = Callable[[str, str], "isl.Map | None"]


@dataclass
class TimeSpace:
    """Layer II: the placed computations, in execution order."""

    order: list[str]
    comps: dict[str, CompSchedule]
    depth: int  # number of loop dimensions L; the time-space has 2L+1 dims

    def union(self) -> isl.UnionMap:
        u: isl.UnionMap | None = None
        for n in self.order:
            m = isl.UnionMap.from_map(self.comps[n].full)
            u = m if u is None else u.union(m)
        assert u is not None
        return u

    def tag_at(self, comp: str, dyn: int) -> str | None:
        return _own_tag(self.comps[comp], dyn)

    def effective_tag(self, comp: str, dyn: int) -> str | None:
        """The tag of ``comp``'s loop at ``dyn``, its own or, for the outer loops it shares
        with a consumer (compute_at, copy_at), the consumer's."""
        return _effective_tag(self.comps, comp, dyn)

    def gpu_dims(self, comp: str, tag: str) -> list[int]:
        """The loop positions (outermost first) of ``comp``'s loops tagged ``tag``."""
        return [d for d in range(len(self.comps[comp].ext_dims))
                if self.effective_tag(comp, d) == tag]

    def tag_origin(self, comp: str, dyn: int) -> str:
        """The command that tagged ``comp``'s loop at ``dyn`` ("" if untagged)."""
        s = self.comps[comp]
        for name in s.tags:
            if name in s.dims and s.n_outer + s.dims.index(name) == dyn:
                return s.origins.get(name, "")
        return ""

    def loop_name(self, comp: str, dyn: int) -> str:
        names = self.comps[comp].ext_dims
        return names[dyn] if dyn < len(names) else f"<pad{dyn}>"


def _own_tag(s: CompSchedule, dyn: int) -> str | None:
    for name, tag in s.tags.items():
        if name in s.dims and s.n_outer + s.dims.index(name) == dyn:
            return tag
    return None


def _effective_tag(comps: Mapping[str, CompSchedule], comp: str, dyn: int) -> str | None:
    s = comps[comp]
    if dyn < s.n_outer and s.outer_of is not None:
        return _effective_tag(comps, s.outer_of, dyn)
    return _own_tag(s, dyn)


def _identity_ext(s: CompSchedule) -> None:
    s.ext_domain = s.domain
    s.proj = isl.Map.identity(s.domain.get_space().map_from_set()).intersect_domain(s.domain)
    s.n_outer = 0
    s.ext_sched = s.sched
    s.ext_dims = list(s.dims)


# rounds of widening at most (a Tuple update's elements: two or three suffice)
_MAX_ROUNDS = 16


def _resolve_compute_at(comps: dict[str, CompSchedule], events: list[cmd.Command],
                        reads_of: ReadsOf, memory_reads_of: ReadsOf | None = None,
                        slides: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Place every compute_at; returns, per producer, the other computations placed in its
    consumer's loops that it is computed for too (it must precede them).

    A computation placed in the same loops that reads the producer's buffer but comes
    earlier in the sequential order reads values the producer wrote in an earlier
    iteration of a loop around both: a Tuple update's element reading another element's
    previous value (argmin), where a consumer reads the elements at different points.
    Such a reader and the producer need each other's regions (a cycle), so they are
    placed by a fixpoint: rounds of placement, each taking those readers' regions from the
    round before, until no region grows (every element computed over the union of what is
    read of any, as Halide computes a Tuple)."""
    prev: dict[str, CompSchedule] | None = None
    for _ in range(_MAX_ROUNDS):
        also, widen, unread = _resolve_round(comps, events, reads_of, memory_reads_of, prev,
                                             slides or {})
        if not widen or (prev is not None and all(
                prev[n].ext_domain is not None and comps[n].ext_domain is not None and
                prev[n].ext_domain.is_equal(comps[n].ext_domain) for n in comps)):
            if unread:
                raise unread[0]
            return also
        prev = {n: copy.copy(c) for n, c in comps.items()}
    raise ScheduleError("compute_at: the regions of computations that read each other's "
                        f"buffers did not settle in {_MAX_ROUNDS} rounds")


def _resolve_round(comps: dict[str, CompSchedule], events: list[cmd.Command],
                   reads_of: ReadsOf, memory_reads_of: ReadsOf | None,
                   prev: dict[str, CompSchedule] | None, slides: Mapping[str, str]
                   ) -> tuple[dict[str, list[str]], bool, list[ScheduleError]]:
    """One round of :func:`_resolve_compute_at` (``prev``: the round before, whose regions
    the earlier readers of a producer's buffer are taken from; None in the first round,
    which leaves them out); also whether there are such readers, and the computations
    found read by none (yet: an argmin's value element, which only the index element's
    update reads, is placed in a later round), left in place meanwhile."""
    at: dict[str, cmd.ComputeAt] = {}
    also: dict[str, list[str]] = {}
    widen = False
    unread: list[ScheduleError] = []
    names = list(comps)  # declaration order: the sequential order of memory reads
    for e in events:
        if isinstance(e, cmd.ComputeAt):
            if e.consumer not in comps:
                raise ScheduleError(f"{e.describe()}: unknown or inlined consumer "
                                    f"{e.consumer!r}", command=e.describe())
            if e.comp in at:
                raise ScheduleError(f"{e.describe()}: {e.comp!r} is already computed at "
                                    f"{at[e.comp].consumer!r}", command=e.describe())
            at[e.comp] = e
    done: set[str] = set()

    def resolve(name: str, stack: list[str]) -> None:
        nonlocal widen
        if name in done:
            return
        if name in stack:
            members = stack[stack.index(name):]
            cyc = " -> ".join([*members, name])
            closing = max((at[m] for m in members), key=events.index)  # the last one written
            raise ScheduleError(f"cyclic compute_at: {cyc}", computations=tuple(members),
                                command=closing.describe())
        s = comps[name]
        if name not in at:
            _identity_ext(s)
            done.add(name)
            return
        e = at[name]
        resolve(e.consumer, [*stack, name])
        c = comps[e.consumer]
        ext_dims: list[str] = c.ext_dims
        if e.level not in ext_dims:
            raise ScheduleError(f"{e.describe()}: {e.consumer!r} has no loop {e.level!r}; its "
                                f"loops are {ext_dims}", computations=(name, e.consumer),
                                command=e.describe())
        lvl = ext_dims.index(e.level) + 1
        acc = reads_of(e.consumer, name)
        if acc is None and memory_reads_of is not None:
            acc = memory_reads_of(e.consumer, name)
        more = []
        for other in siblings(e.consumer, lvl, name, [*stack, name]):
            # computations sharing the consumer's loops down to the level (a Tuple's other
            # elements, ordered after it) read the producer in this iteration too
            o_acc = reads_of(other, name)
            if o_acc is None and memory_reads_of is not None and \
                    names.index(other) > names.index(name):
                o_acc = memory_reads_of(other, name)
            if o_acc is not None:
                more.append((comps[other], o_acc))
                also.setdefault(name, []).append(other)
        for other in at:
            # computations placed inside this iteration of the consumer's loops read the
            # producer there too: it is computed for all their reads
            if other == name or not inside(other, e.consumer, name):
                continue
            o_acc = reads_of(other, name)
            earlier = False
            if o_acc is None and memory_reads_of is not None:
                # a later update of the same buffer reads what this one writes (the
                # updates of a scan read the elements its initialization writes); an
                # earlier computation reads it from an earlier iteration (see above)
                o_acc = memory_reads_of(other, name)
                earlier = o_acc is not None and names.index(other) < names.index(name)
            if o_acc is None:
                continue
            if earlier:
                widen = True
                if prev is None or prev[other].ext_sched is None:
                    continue
                o = prev[other]
            else:
                resolve(other, [*stack, name])
                o = comps[other]
            if o.n_outer >= lvl and o.ext_dims[:lvl] == ext_dims[:lvl]:
                more.append((o, o_acc))
                if not earlier:  # an earlier reader reads an earlier iteration's values
                    also.setdefault(name, []).append(other)
        if acc is None and not more:
            unread.append(ScheduleError(f"{e.describe()}: {e.consumer!r} does not read "
                                        f"{name!r}", computations=(name, e.consumer),
                                        command=e.describe()))
            _identity_ext(s)
            done.add(name)
            return
        extend_at(s, c, lvl, acc, more, _window(comps, c, lvl, slides.get(name)))
        done.add(name)

    def siblings(consumer: str, lvl: int, producer: str, stack: list[str]) -> list[str]:
        """The computations that share ``consumer``'s first ``lvl`` loops through
        ``after``/``before`` commands (transitively), ``producer`` excepted: they run
        inside the same iteration of its loop at that level (the elements of a Tuple)."""
        group, todo = {consumer}, [consumer]
        while todo:
            x = todo.pop()
            for ev in events:
                if not isinstance(ev, cmd.After) or x not in (ev.comp, ev.other) or \
                        ev.level == cmd.ROOT:
                    continue
                y = ev.other if ev.comp == x else ev.comp
                if y in group or y == producer or y not in comps:
                    continue
                resolve(y, stack)
                dims: list[str] = comps[ev.later].ext_dims
                if ev.level in dims and dims.index(ev.level) + 1 >= lvl:
                    group.add(y)
                    todo.append(y)
        return sorted(group - {consumer}, key=names.index)

    def inside(x: str, consumer: str, producer: str) -> bool:
        """Whether ``x`` is computed at ``consumer`` (directly or through computations
        computed there), not through ``producer``."""
        seen = {x}
        while x in at and x != producer:
            x = at[x].consumer
            if x == consumer:
                return True
            if x in seen:
                return False
            seen.add(x)
        return False

    for name in comps:
        resolve(name, [])
    return also, widen, unread


def _window(comps: Mapping[str, CompSchedule], c: CompSchedule, lvl: int,
            alloc: str | None) -> int | None:
    """The sliding window of a producer computed inside ``c``'s first ``lvl`` loops and
    allocated at ``c``'s loop ``alloc`` further out (Halide's ``store_at`` outside
    ``compute_at``): the number of loops that identify one allocation, where every loop
    between it and ``lvl`` runs in order on one core (no parallel, vector or GPU tag), so
    that the values an earlier iteration computed are still in the buffer and need not be
    computed again. None: no window (allocated at the compute level, at the root, or a
    loop in between runs out of order)."""
    if alloc is None or alloc not in c.ext_dims[:lvl]:
        return None
    k = c.ext_dims.index(alloc) + 1
    if k >= lvl or any(_effective_tag(comps, c.name, d) not in (None, "unroll")
                       for d in range(k, lvl)):
        return None
    return k


def extend_at(s: CompSchedule, c: CompSchedule, lvl: int, acc: isl.Map | None,
              more: list[tuple[CompSchedule, isl.Map]] | None = None,
              window: int | None = None) -> None:
    """Place ``s`` inside the first ``lvl`` loops of ``c`` (already placed): its domain is
    extended with those loops' values and restricted, per iteration, to the instances
    ``acc`` says the instances of ``c`` below it need (``acc``: Layer I instance of ``c``
    -> instance of ``s``), and those that ``more``'s computations, placed in the same
    loops, need. This is compute_at's placement, and a Layer IV copy's. ``window``
    (:func:`_window`): each iteration computes the bounding box of what it needs less the
    previous iteration's box, where that iteration is of the same allocation (the same
    values of the first ``window`` loops; :func:`_slid`): a stencil's producer computed
    per row of a strip computes its halo once per strip, then one new row per row."""
    rel: isl.Map | None = None
    for r, a in ([(c, acc)] if acc is not None else []) + list(more or []):
        assert r.ext_sched is not None and r.proj is not None
        rsched: isl.Map = r.ext_sched
        n = rsched.dim(isl.dim_type.out)
        outer = rsched.project_out(isl.dim_type.out, lvl, n - lvl)
        part = outer.reverse().apply_range(r.proj.apply_range(a)).intersect_range(s.domain)
        rel = part if rel is None else rel.union(part)
    assert rel is not None
    rel = exact_hull(rel.coalesce())
    if window is not None:
        rel = _slid(_box(rel).intersect_range(s.domain))
    names = _ext_names(c.ext_dims[:lvl], s.domain)
    ext = _named(rel.wrap().flatten().set_tuple_name(s.name), names).coalesce()
    proj = rel.range_map().flatten_domain().set_tuple_name(isl.dim_type.in_, s.name)
    esched = rel.domain_map().flat_range_product(rel.range_map().apply_range(s.sched))
    esched = esched.flatten_domain().set_tuple_name(isl.dim_type.in_, s.name).coalesce()
    for k, nm in enumerate(names):
        proj = proj.set_dim_name(isl.dim_type.in_, k, nm)
        esched = esched.set_dim_name(isl.dim_type.in_, k, nm)
    s.ext_domain, s.proj, s.n_outer, s.outer_of = ext, proj, lvl, c.name
    s.ext_sched = esched.reset_tuple_id(isl.dim_type.out)
    s.ext_dims = c.ext_dims[:lvl] + list(s.dims)


def _slid(rel: isl.Map) -> isl.Map:
    """``rel`` (outer iteration -> producer instances) less what the previous iteration of
    the innermost outer loop computed (the other outer loops equal, so the same
    allocation: :func:`_window` puts the allocation outside that loop), where ``rel`` has
    that iteration. After any iteration the buffer
    holds all of that iteration's region (by induction: the previous one's region, plus
    what this one added), so subtracting the previous region alone is exact for a window
    that moves forward, and computes a superset (the same values again) for one that does
    not. Subtracting every earlier iteration's region instead was exact always, but with
    the clamped edges of 2-D tiles it took the physical accesses past ISL's bound."""
    space = rel.get_space().domain()
    n = space.dim(isl.dim_type.set)
    prev = isl.Map.identity(space.map_from_set())  # o -> o with its last loop one less
    prev = prev.project_out(isl.dim_type.out, n - 1, 1).insert_dims(isl.dim_type.out, n - 1, 1)
    last = isl.Constraint.equality_alloc(isl.LocalSpace.from_space(prev.get_space()))
    last = last.set_coefficient_val(isl.dim_type.in_, n - 1, 1)
    last = last.set_coefficient_val(isl.dim_type.out, n - 1, -1).set_constant_val(
        isl.Val.int_from_si(rel.get_ctx(), -1))
    prev = prev.add_constraint(last).intersect_range(rel.domain())
    return exact_hull(rel.subtract(prev.apply_range(rel)).coalesce())


def _box(rel: isl.Map) -> isl.Map:
    """Per outer iteration, the bounding box of ``rel``'s instances (``rel``: outer
    iteration -> instances). Why boxes for a window: a tile grown by a 5-point cross is an
    octagon, and an octagon less the one before it is many pieces, which each further
    stage of a chain multiplies (the tiled stencil chain's physical accesses went past
    ISL's bound); a box less the box before it is a strip, as in Halide, for the price of
    the octagon's corners once per allocation."""
    dom = rel.domain()
    box = isl.Map.from_domain_and_range(dom, isl.Set.universe(rel.get_space().range()))
    wrapped = box.wrap()
    n_o = dom.dim(isl.dim_type.set)
    ls = isl.LocalSpace.from_space(wrapped.get_space())
    proj = isl.MultiAff.domain_map(rel.get_space())  # [o -> x] -> o
    out = wrapped
    for q in range(rel.dim(isl.dim_type.out)):
        var = isl.PwAff.from_aff(isl.Aff.var_on_domain(ls, isl.dim_type.set, n_o + q))
        lo = rel.dim_min(q).pullback_multi_aff(proj)
        hi = rel.dim_max(q).pullback_multi_aff(proj)
        out = out.intersect(lo.le_set(var)).intersect(var.le_set(hi))
    return out.unwrap().coalesce()


def _ext_names(outer: list[str], domain: isl.Set) -> list[str]:
    """Dim names of an extended domain: the consumer's outer loops, then the iterators;
    an outer name that clashes with an iterator gets a '_o' suffix."""
    inner = [domain.get_dim_name(isl.dim_type.set, k)
             for k in range(domain.dim(isl.dim_type.set))]
    outs = []
    for n in outer:
        while n in inner or n in outs:
            n = f"{n}_o"
        outs.append(n)
    return outs + inner


def _named(s: isl.Set, names: list[str]) -> isl.Set:
    for k, n in enumerate(names):
        s = s.set_dim_name(isl.dim_type.set, k, n)
    return s


def memory_reads(l1: Layer1, l3: Layer3) -> ReadsOf:
    """``reads(consumer, producer)``: the instances of ``producer`` that write the buffer
    elements ``consumer`` reads through memory (an update chain's buffer), per instance of
    ``consumer``; None when it reads none. compute_at places a producer that its consumer
    reads this way (a reduction computed per tile: its initialization and every update
    of the elements the tile reads)."""
    def reads(consumer: str, producer: str) -> isl.Map | None:
        buf = l3.store.get(producer)
        p = l1.comps.get(producer)
        if buf is None or p is None or consumer not in l1.comps:
            return None
        writers = l3.logical[producer].intersect_domain(p.domain).reverse()

        def read_by(comp: str) -> isl.Map | None:
            out: isl.Map | None = None
            for r in l1.comps[comp].reads:
                if r.kind == "value" or read_buffer(l3, r) != buf:
                    continue
                m = logical_access(l1, l3, r).apply_range(writers)
                out = m if out is None else out.union(m)
            return out

        got = read_by(consumer)
        own = read_by(producer)
        if got is None or own is None:
            return got
        # and the earlier instances of the producer whose values those read (a scan reads
        # its own earlier elements): the transitive closure, exact or over-approximated
        own = own.intersect(isl.Map.lex_gt(own.get_space().domain()))
        closure, _exact = own.transitive_closure()
        return got.union(got.apply_range(closure)).coalesce()
    return reads


def finalize(comps: dict[str, CompSchedule], declared: list[str], events: list[cmd.Command],
             reads_of: ReadsOf, ops: Mapping[str, Op] | None = None,
             memory_reads_of: ReadsOf | None = None,
             slides: Mapping[str, str] | None = None) -> TimeSpace:
    """Resolve compute_at, place the Layer IV operations (``ops``, whose schedules are in
    ``comps`` too) and resolve the ordering; build each statement's full time-space map.

    Orderings among computations are applied first (as a graph, see :mod:`.ordering`:
    whatever order they were written in), then each operation's default place, then the
    orderings that involve an operation: so a copy lands after a producer computed at the
    same loop, and an explicit ``op.after(...)`` always has the last word. ``slides``: per
    producer computed at a loop, the outer loop of the same consumer its buffer is
    allocated at, where it is computed in a sliding window (:func:`_window`)."""
    ops = ops or {}
    also = _resolve_compute_at(comps, events, reads_of, memory_reads_of, slides)
    for o in ops.values():
        if o.placement in ("at", "after"):
            assert o.consumer is not None and o.level is not None and o.acc is not None
            c = comps[o.consumer]
            if o.level == cmd.ROOT:
                continue  # once, before (after) the consumer's loops
            if o.level not in c.ext_dims:
                raise ScheduleError(f"{o.command}: {o.consumer!r} has no loop {o.level!r}; "
                                    f"its loops are {c.ext_dims}",
                                    computations=(o.name, o.consumer), command=o.command,
                                    command_index=o.command_index)
            extend_at(comps[o.name], c, c.ext_dims.index(o.level) + 1, o.acc)
    order = Order([n for n in declared if n in comps])
    placer = Placer(order, comps, also)

    def involves_op(e: cmd.Command) -> bool:
        return e.comp in ops or (isinstance(e, cmd.After) and e.other in ops)

    events = _readers_first(events, also)
    placer.apply_all([e for e in events if not involves_op(e)])
    first = 0
    for o in ops.values():
        if o.placement == "at":
            assert o.consumer is not None
            order.insert_before(o.name, o.consumer, comps[o.name].n_outer)
        elif o.placement == "after":
            assert o.consumer is not None
            order.insert_after(o.name, o.consumer, comps[o.name].n_outer)
        elif o.placement == "before":  # before the first of its anchors (and their nest)
            first_anchor = min(order.items.index(a) for a in o.anchors)
            order.insert_before(o.name, order.items[first_anchor], 0)
        elif o.placement == "first":  # in the order written, before every computation
            order.insert_at(o.name, first)
            first += 1
        else:
            order.append(o.name)
        placer.check(None, f"operation {o.name!r} placed by default for {o.command}")
    placer.apply_all([e for e in events if involves_op(e)])
    ctx = next(iter(comps.values())).domain.get_ctx() if comps else isl.DEFAULT_CONTEXT
    depth = max([len(comps[n].ext_dims) for n in order.items] or [0])
    prev: list[int] | None = None
    for k, name in enumerate(order.items):
        s = comps[name]
        if prev is None:
            betas = [0] * (depth + 1)
        else:
            d = order.share[k - 1]
            betas = prev[:d] + [prev[d] + 1] + [0] * (depth - d)
        s.betas = betas
        prev = betas
        n = len(s.ext_dims)
        outs: list[str] = []
        for q in range(depth):
            outs.append(str(betas[q]))
            outs.append(f"d{q}" if q < n else "0")
        outs.append(str(betas[depth]))
        s.full = s.ext_sched.apply_range(_range_map(ctx, n, outs))
    return TimeSpace(order.items, comps, depth)


def _readers_first(events: list[cmd.Command], also: dict[str, list[str]]
                   ) -> list[cmd.Command]:
    """The events with each producer's compute_at moved after those of the computations
    it is also computed for (``also``), so that it is placed once they are: moving one of
    them later would take the producer out of the loops it shares with them."""
    out = list(events)
    for _ in range(len(out) * len(out)):  # each move puts an event later: bounded
        for k, e in enumerate(out):
            if not isinstance(e, cmd.ComputeAt) or not also.get(e.comp):
                continue
            last = max((j for j, x in enumerate(out) if isinstance(x, cmd.ComputeAt)
                        and x.comp in also[e.comp]), default=-1)
            if last > k:
                out.insert(last, out.pop(k))
                break
        else:
            return out
    return out
