"""The legality check: a schedule is legal iff the scheduled program computes what Layer I
says, and its parallel and vector loops carry no dependence.

Rather than checking a list of dependence directions, the check runs ISL's exact dataflow
analysis on the *scheduled* program (time-space order, physical buffers after store_in,
storage folding and allocation) and compares, for every read, the instance that actually
produces the value with the one Layer I prescribes (:mod:`middleend.dataflow`); likewise the
final writer of every output element. This covers flow, anti and output dependences,
redundant computation from compute_at and storage reuse in one test. Loops tagged parallel
or vector must in addition carry no memory dependence at all.
"""

from __future__ import annotations

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.islutil import maps_of
from .data import Layer3
from .dataflow import Expected
from .layer1 import Layer1
from .physical import Physical
from .placement import TimeSpace

PARALLEL_TAGS = ("parallel", "vector", "gpu_block", "gpu_thread", "distribute")


def _ident_sched(m: isl.Map, name: str) -> isl.UnionMap:
    dom = m.domain()
    ident = isl.Map.identity(dom.get_space().map_from_set()).intersect_domain(dom)
    return isl.UnionMap.from_map(ident.set_tuple_name(isl.dim_type.in_, name))


def _to_layer1(u: isl.UnionMap, tinv: isl.UnionMap, src_is_t: bool = True) -> isl.UnionMap:
    """{T_src -> T_sink} as {P[y] -> C[x]}."""
    return u.apply_domain(tinv).apply_range(tinv) if src_is_t else u.apply_range(tinv)


def check_dataflow(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected, ph: Physical) -> None:
    """Raise ScheduleError if some read would see another value than Layer I prescribes."""
    names = {n: c.vars for n, c in l1.comps.items()}
    sinks = isl.UnionMap.empty(l1.param_space)
    sched = isl.UnionMap.empty(l1.param_space)
    for ref, r in ph.reads.items():
        sinks = sinks.union(isl.UnionMap.from_map(r.set_tuple_name(isl.dim_type.in_, f"R{ref}")))
        sched = sched.union(_ident_sched(r, f"R{ref}"))
    must = isl.UnionMap.empty(l1.param_space)
    may = isl.UnionMap.empty(l1.param_space)
    for n, w in ph.writes.items():
        nm = "V" if n in ph.guarded else "W"
        um = isl.UnionMap.from_map(w.set_tuple_name(isl.dim_type.in_, nm))
        if n in ph.guarded:
            may = may.union(um)
        else:
            must = must.union(um)
        sched = sched.union(_ident_sched(w, nm))
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
        sinks = sinks.union(isl.UnionMap.from_map(
            isl.Map.identity(e2.get_space().map_from_set()).intersect_domain(e2)
            .set_tuple_name(isl.dim_type.out, bname)))
        t_end = isl.Set.read_from_str(l1.ctx, "{ [" + ", ".join(map(str, end)) + "] }")
        sched = sched.union(isl.UnionMap.from_map(isl.Map.from_domain_and_range(e2, t_end)))
    if sinks.is_empty():
        return
    info = isl.UnionAccessInfo.from_sink(sinks).set_must_source(must).set_may_source(may)
    flow = info.set_schedule_map(sched).compute_flow()
    deps = flow.get_may_dependence()
    for r in exp.reads:
        if r.ref not in ph.reads:
            continue
        nm = f"R{r.ref}"
        actual = _strip(deps, nm)  # T_src -> T_sink
        act = actual.reverse().apply_range(ph.tinv)  # T_sink -> P[y]
        sink_ts = ph.reads[r.ref].domain()
        want = _restrict_domain(ph.tinv, sink_ts).apply_range(exp.sources.get(
            r.ref, isl.UnionMap.empty(l1.param_space)))
        bad = act.subtract(want).union(want.subtract(act))
        if not bad.is_empty():
            bad_sinks = bad.domain()
            dep = _restrict_domain_u(want, bad_sinks).apply_domain(ph.tinv).reverse()
            got = _restrict_domain_u(act, bad_sinks).apply_domain(ph.tinv).reverse()
            srcs = sorted({m.get_tuple_name(isl.dim_type.in_) for m in maps_of(dep)}
                          | {m.get_tuple_name(isl.dim_type.in_) for m in maps_of(got)})
            raise ScheduleError(
                f"illegal schedule: {r.comp!r} would not read the value of {r.target!r} that "
                f"Layer I prescribes ("
                + (f"it would read {_fmt(names, got)})" if not got.is_empty()
                   else "it would run before that value is produced)"),
                computations=tuple(dict.fromkeys([*srcs, r.comp])),
                dependence=_fmt(names, dep) or str(bad))
    for bname in exp.written:
        nm = f"END_{bname}"
        actual = _strip(deps, nm)
        if actual.is_empty() and bname not in exp.final:
            continue
        act = actual.reverse().apply_range(ph.tinv)
        act = _rename_all_domains(act, bname)
        want = exp.final.get(bname, isl.UnionMap.empty(l1.param_space))
        bad = act.subtract(want).union(want.subtract(act))
        if not bad.is_empty():
            exp_w = want.intersect_domain(bad.domain())
            got_w = act.intersect_domain(bad.domain())
            raise ScheduleError(
                f"illegal schedule: the final content of output {bname!r} would differ from "
                f"Layer I (last writers expected {_fmt(names, exp_w)}, got "
                f"{_fmt(names, got_w)})",
                computations=tuple(l3.buffers[bname].writers),
                dependence=_fmt(names, exp_w.reverse()))


def check_parallel(l1: Layer1, l3: Layer3, ts: TimeSpace, ph: Physical) -> None:
    """Every loop tagged parallel/vector (or a GPU/distributed dim) carries no dependence."""
    names = {n: c.vars for n, c in l1.comps.items()}
    acc_w = isl.UnionMap.empty(l1.param_space)
    for w in ph.writes.values():
        acc_w = acc_w.union(isl.UnionMap.from_map(w))
    acc_r = isl.UnionMap.empty(l1.param_space)
    for r in ph.reads.values():
        acc_r = acc_r.union(isl.UnionMap.from_map(r))
    pairs = None
    seen: set[tuple[int, ...]] = set()
    ntd = 2 * ts.depth + 1
    for n in ts.order:
        s = ts.comps[n]
        for name, tag in s.tags.items():
            if tag not in PARALLEL_TAGS:
                continue
            dyn = s.n_outer + s.dims.index(name)
            key = tuple(s.betas[: dyn + 1]) + (dyn,)
            if key in seen:
                continue
            seen.add(key)
            if pairs is None:
                pairs = (acc_w.apply_range(acc_w.reverse())
                         .union(acc_w.apply_range(acc_r.reverse()))
                         .union(acc_r.apply_range(acc_w.reverse())))
            d = 2 * dyn + 1
            t = [f"t{k}" for k in range(ntd)]
            u = [f"u{k}" for k in range(ntd)]
            cons = [f"t{2 * q} = {s.betas[q]}" for q in range(dyn + 1)]
            cons += [f"t{k} = u{k}" for k in range(d)] + [f"t{d} < u{d}"]
            loop = isl.UnionMap.read_from_str(
                l1.ctx, f"{{ [{', '.join(t)}] -> [{', '.join(u)}] : {' and '.join(cons)} }}")
            carried = pairs.intersect(loop)
            if not carried.is_empty():
                dep = carried.apply_domain(ph.tinv).apply_range(ph.tinv)
                comps = sorted({m.get_tuple_name(isl.dim_type.in_) for m in maps_of(dep)}
                               | {m.get_tuple_name(isl.dim_type.out)
                                  for m in maps_of(dep)})
                raise ScheduleError(
                    f"illegal schedule: loop {name!r} of {n!r} is tagged {tag} but carries a "
                    "dependence between its iterations",
                    computations=tuple(comps), dependence=_fmt(names, dep), level=name)


def _strip(deps: isl.UnionMap, sink_name: str) -> isl.UnionMap:
    """The part of ``deps`` into sink ``sink_name``, with tuple names removed: T -> T."""
    out = None
    for m in maps_of(deps):
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


def _restrict_domain(u: isl.UnionMap, s: isl.Set) -> isl.UnionMap:
    return u.intersect_domain(isl.UnionSet.from_set(s))


def _restrict_domain_u(u: isl.UnionMap, s: isl.UnionSet) -> isl.UnionMap:
    return u.intersect_domain(s)


def _rename_all_domains(u: isl.UnionMap, name: str) -> isl.UnionMap:
    out = isl.UnionMap.empty(u.get_space())
    for m in maps_of(u):
        out = out.union(isl.UnionMap.from_map(m.set_tuple_name(isl.dim_type.in_, name)))
    return out


def _fmt(names: dict[str, list[str]], u: isl.UnionMap) -> str:
    """ISL text of a relation between computation instances, with each tuple's dims named
    after the computation's iterators (ISL primes repeated names)."""
    if u.is_empty():
        return ""
    try:
        u = u.coalesce()
    except isl.Error:
        pass  # coalescing is cosmetic; ISL occasionally gives up on it
    out = isl.UnionMap.empty(u.get_space())
    for m in maps_of(u):
        for dt in (isl.dim_type.in_, isl.dim_type.out):
            vs = names.get(m.get_tuple_name(dt) or "", [])
            if len(vs) == m.dim(dt):
                for k, v in enumerate(vs):
                    m = m.set_dim_name(dt, k, v)
        out = out.union(isl.UnionMap.from_map(m))
    return str(out)
