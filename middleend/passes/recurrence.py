"""The initiation interval a pipelined loop's recurrences allow (the fpga target).

A pipelined loop starts an iteration every II cycles. A value that a statement of the loop
writes and a statement of the loop reads ``d`` iterations later (a dependence carried by
the loop at distance ``d``) must be written by the time that later iteration needs it:
``d × II`` cycles after the writer's iteration started, the writer must be done. Along a
cycle of such dependences through several statements of the loop (``a`` feeds ``b`` in
the same iteration, ``b`` feeds ``a`` one iteration later, say), the latencies of the
writers add up: every cycle ``C`` needs ``II × Σ_C d ≥ Σ_C L``, ``L`` a writer's latency
from its loads to its store (:mod:`middleend.ir.latency`). A dependence that is not on a
cycle constrains nothing (the pipeline delays the reader within its iteration).

With ISL: the flow pairs (the write each read sees, by Layer I's exact dataflow, as
time-space points of the loop's statements inside one iteration of the loops around it)
per pair of statements,
split into the ones inside one iteration (distance 0) and the ones the loop carries (their
smallest distance). The smallest II is the smallest one without a cycle of positive
weight ``L - II × d`` (Bellman-Ford on the few statements of one loop). Below it the
schedule is refused, naming the cycle, its distance and latency, the dependence that
closes it and the smallest II.
"""

from __future__ import annotations

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.islutil import maps_of
from ..ir.latency import statement_latency
from .dataflow import Expected
from .layer1 import Layer1
from .legality import _fmt
from .physical import Physical
from .placement import TimeSpace

Edge = tuple[str, str, int, isl.UnionMap]  # writer, reader, distance, the pairs


def check_pipelines(l1: Layer1, ts: TimeSpace, ph: Physical, exp: Expected) -> None:
    """Every pipelined loop's II allows its recurrences (see the module docstring)."""
    flow: isl.UnionMap | None = None
    ntd = 2 * ts.depth + 1
    seen: set[tuple[int, ...]] = set()
    for n in ts.order:
        s = ts.comps[n]
        if n not in l1.comps:
            continue
        for name, tag in s.tags.items():
            if tag != "pipeline" or name not in s.dims:
                continue
            dyn = s.n_outer + s.dims.index(name)
            key = (*s.betas[: dyn + 1], dyn)
            if key in seen:
                continue
            seen.add(key)
            if flow is None:
                flow = _flow(l1, ph, exp)
            members = [m for m in ts.order if m in l1.comps
                       and len(ts.comps[m].ext_dims) > dyn
                       and ts.comps[m].betas[: dyn + 1] == s.betas[: dyn + 1]]
            edges = _edges(l1, ts, flow, members, 2 * dyn + 1, ntd)
            if not edges:
                continue
            lat = {m: statement_latency(l1.comps[m].expr) for m in members}
            ii = s.widths.get(name, 1)
            need = _smallest_ii(members, edges, lat)
            if ii < need:  # a cycle that II = need - 1 cannot meet is one that sets need
                cycle = _positive_cycle(members, edges, lat, need - 1)
                raise _refusal(l1, ph, n, name, ii, need, cycle, lat, 2 * dyn + 1, ntd)


def _flow(l1: Layer1, ph: Physical, exp: Expected) -> isl.UnionMap:
    """Write time -> read time of the value each read sees (Layer I's exact dataflow, which
    the legality check has proved the schedule keeps), for every computation's read."""
    src: isl.UnionMap | None = None
    for m in exp.sources.values():
        src = m if src is None else src.union(m)
    if src is None:
        return isl.UnionMap.empty(l1.param_space)
    return ph.tinv.apply_range(src.reverse()).apply_range(ph.tinv.reverse())


def _edges(l1: Layer1, ts: TimeSpace, flow: isl.UnionMap, members: list[str], d: int,
           ntd: int) -> list[Edge]:
    """The flow pairs between the loop's statements inside one iteration of the loops
    around it: carried ones with their smallest distance, the others (write before read
    in one iteration) with distance 0."""
    t = [f"t{k}" for k in range(ntd)]
    u = [f"u{k}" for k in range(ntd)]
    same = [f"t{k} = u{k}" for k in range(d)]

    def rel(cons: list[str]) -> isl.UnionMap:
        return isl.UnionMap.read_from_str(
            l1.ctx, f"{{ [{', '.join(t)}] -> [{', '.join(u)}] : {' and '.join(cons)} }}")

    carried_rel = rel([*same, f"t{d} < u{d}"])
    inside = rel([*same, f"t{d} = u{d}"]).intersect(
        isl.UnionMap.from_map(isl.Map.lex_lt(isl.Space.set_alloc(l1.ctx, 0, ntd))))
    points = {m: isl.UnionSet.from_set(ts.comps[m].full.range()) for m in members}
    out: list[Edge] = []
    for a in members:
        from_a = flow.intersect_domain(points[a])
        for b in members:
            pairs = from_a.intersect_range(points[b])
            if pairs.is_empty():
                continue
            carried = pairs.intersect(carried_rel)
            if not carried.is_empty():
                out.append((a, b, _min_distance(carried, d), carried))
            if a != b:
                within = pairs.intersect(inside.align_params(pairs.get_space()))
                if not within.is_empty():
                    out.append((a, b, 0, within))
    return out


def _longest(members: list[str], edges: list[Edge], lat: dict[str, int], ii: int
             ) -> tuple[dict[str, int], dict[str, Edge | None], Edge | None]:
    """Bellman-Ford for the longest paths with weights ``L(writer) - ii × d``: the
    distances, the predecessor edges, and an edge still relaxing after |V| rounds (on or
    behind a positive cycle) or None."""
    dist = dict.fromkeys(members, 0)
    pred: dict[str, Edge | None] = dict.fromkeys(members)
    for _ in range(len(members)):
        changed = False
        for e in edges:
            a, b, dd, _ = e
            w = lat[a] - ii * dd
            if dist[a] + w > dist[b]:
                dist[b], pred[b], changed = dist[a] + w, e, True
        if not changed:
            return dist, pred, None
    for e in edges:
        a, b, dd, _ = e
        if dist[a] + lat[a] - ii * dd > dist[b]:
            return dist, pred, e
    return dist, pred, None


def _smallest_ii(members: list[str], edges: list[Edge], lat: dict[str, int]) -> int:
    top = max(sum(lat[m] for m in members), 1)  # a simple cycle has distance >= 1
    for ii in range(1, top + 1):
        if _longest(members, edges, lat, ii)[2] is None:
            return ii
    return top


def _positive_cycle(members: list[str], edges: list[Edge], lat: dict[str, int], ii: int
                    ) -> list[Edge]:
    """A cycle of the dependence graph that ``ii`` cannot meet (its edges in order)."""
    _, pred, last = _longest(members, edges, lat, ii)
    assert last is not None
    node = last[1]
    pred[node] = last
    for _ in range(len(members)):  # walk back onto the cycle
        e = pred[node]
        assert e is not None
        node = e[0]
    cycle: list[Edge] = []
    start = node
    while True:
        e = pred[node]
        assert e is not None
        cycle.append(e)
        node = e[0]
        if node == start:
            break
    return cycle[::-1]


def _refusal(l1: Layer1, ph: Physical, n: str, name: str, ii: int, need: int,
             cycle: list[Edge], lat: dict[str, int], d: int, ntd: int) -> ScheduleError:
    names = {c: x.vars for c, x in l1.comps.items()}
    dist = sum(e[2] for e in cycle)
    closing = next(e for e in cycle if e[2] > 0)
    t = [f"t{k}" for k in range(ntd)]
    u = [f"u{k}" for k in range(ntd)]
    at = [f"t{k} = u{k}" for k in range(d)] + [f"u{d} = t{d} + {closing[2]}"]
    closest = isl.UnionMap.read_from_str(
        l1.ctx, f"{{ [{', '.join(t)}] -> [{', '.join(u)}] : {' and '.join(at)} }}")
    near = closing[3].intersect(closest)
    dep = (near if not near.is_empty() else closing[3]).apply_domain(ph.tinv).apply_range(
        ph.tinv)
    at_n = [k for k, e in enumerate(cycle) if e[0] == n]
    if at_n:  # read it from the statement the message names
        cycle = cycle[at_n[0]:] + cycle[:at_n[0]]
    if len(cycle) == 1:
        a = cycle[0][0]
        what = (f"it carries a dependence of distance {dist} through {a!r}, whose latency "
                f"is {lat[a]} cycles")
    else:
        path = " -> ".join([*(repr(e[0]) for e in cycle), repr(cycle[0][0])])
        lats = " + ".join(str(lat[e[0]]) for e in cycle)
        what = (f"it carries a recurrence {path} of distance {dist}, whose latency is "
                f"{lats} = {sum(lat[e[0]] for e in cycle)} cycles")
    comps = tuple(dict.fromkeys(e[0] for e in cycle))
    return ScheduleError(f"illegal schedule: loop {name!r} of {n!r} is pipelined with "
                         f"II={ii}, but {what}: the smallest II it allows is {need}",
                         computations=comps, dependence=_fmt(names, dep), level=name)


def _min_distance(carried: isl.UnionMap, d: int) -> int:
    """The smallest distance along time-space dim ``d`` of a loop-carried relation (for
    every parameter value)."""
    best: int | None = None
    for m in maps_of(carried):
        delta = m.deltas()
        n = delta.dim(isl.dim_type.set)
        one = delta.project_out(isl.dim_type.set, d + 1, n - d - 1).project_out(
            isl.dim_type.set, 0, d)
        one = one.project_out(isl.dim_type.param, 0, one.dim(isl.dim_type.param))
        lo = one.lexmin()
        if lo.is_empty():
            continue
        v = lo.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
        best = v if best is None else min(best, v)
    return max(int(best or 1), 1)
