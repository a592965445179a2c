"""The legality check: a schedule is legal iff the scheduled program computes what Layer I
says, and its parallel and vector loops carry no dependence.

Rather than checking a list of dependence directions, the check runs ISL's exact dataflow
analysis on the *scheduled* program (time-space order, physical buffers after store_in,
storage folding and allocation) and compares, for every read, the instance that actually
produces the value with the one Layer I prescribes (:mod:`middleend.dataflow`); likewise the
final writer of every output element. This covers flow, anti and output dependences,
redundant computation from compute_at and storage reuse in one test. Loops tagged parallel
or vector must in addition carry no memory dependence at all.

What must match is the value a read sees, so two producer instances count as one when they
provably store the same value (:mod:`middleend.passes.samevalue`): a boundary statement
that copies an input at every time step writes at ``t`` what it wrote at ``t - 2``, so a
read of a buffer folded modulo 2 may see either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.function import INOUT
from ..ir.islutil import maps_of, sets_of
from .atomic import atomic_comps, atomic_update
from .commute import relax, self_mismatch
from .critical import group_pairs
from .data import Layer3
from .dataflow import Expected
from .device import DEVICE_PREFIX
from .flow import Chains, Parts, scheduled_flow, strip
from .layer1 import Layer1, Read
from .layer4 import Layer4, Op
from .physical import Physical
from .placement import TimeSpace

PARALLEL_TAGS = ("parallel", "vector", "gpu_block", "gpu_thread", "distribute")


def _to_layer1(u: isl.UnionMap, tinv: isl.UnionMap, src_is_t: bool = True) -> isl.UnionMap:
    """{T_src -> T_sink} as {P[y] -> C[x]}."""
    return u.apply_domain(tinv).apply_range(tinv) if src_is_t else u.apply_range(tinv)


def check_dataflow(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected, ph: Physical,
                   l4: Layer4 | None = None) -> None:
    """Raise ScheduleError if some read would see another value than Layer I prescribes,
    or a Layer IV operation would read data before it is produced."""
    l4 = l4 or Layer4()
    names = {n: c.vars for n, c in l1.comps.items()}
    names.update({o.name: [*ts.comps[o.name].ext_dims] for o in l4.ops.values()
                  if o.name in ts.comps})
    flow = scheduled_flow(l1, l3, ts, exp, ph, l4)
    if flow is None:
        return
    deps, chains, same = flow
    rx = relax(l1, l3, ts, exp, ph)  # commute(): updates whose order may change
    exp = exp if rx is None else rx.exp
    _check_device_reads(ph, l4, deps, names)
    _check_operation_reads(l1, l3, exp, ph, l4, chains, names)
    by_ref = {ref: o for o in l4.ops.values() for ref in o.refs}
    parts = Parts(deps, ph, l4)
    for r in exp.reads:
        if r.ref not in ph.reads:
            continue
        direct = strip(deps, f"R{r.ref}", parts.by_sink).reverse()  # T_sink -> T_src
        op = by_ref.get(r.ref)
        if op is not None:
            _check_copied(l1, names, r, op, direct, ph)
        _, act, want, bad = _read_mismatch(l1, exp, ph, chains, r, direct, same, parts)
        if rx is not None and r.ref in rx.required:
            bad = self_mismatch(rx, r.ref, act, want, ph.reads[r.ref].domain(), ph.tinv)
            if not bad.is_empty():
                got = _restrict_domain_u(act, bad.domain()).apply_domain(ph.tinv).reverse()
                comp, command = rx.command[r.ref]
                raise ScheduleError(
                    f"illegal schedule: {comp!r} ({command}: its instances on one element "
                    f"may run in any order) would not update {r.target!r} as one chain of "
                    "them from the value before them (it would read "
                    f"{_fmt(names, got) or 'nothing written'})", computations=(comp,),
                    dependence=_fmt(names, _restrict_domain_u(want, bad.domain())
                                    .apply_domain(ph.tinv).reverse()) or str(bad))
        if not bad.is_empty():
            bad_sinks = bad.domain()
            dep = _restrict_domain_u(want, bad_sinks).apply_domain(ph.tinv).reverse()
            got = _restrict_domain_u(act, bad_sinks).apply_domain(ph.tinv).reverse()
            srcs = sorted({m.get_tuple_name(isl.dim_type.in_) for m in maps_of(dep)}
                          | {m.get_tuple_name(isl.dim_type.in_) for m in maps_of(got)})
            seen = (f"it would read {_fmt(names, got)})" if not got.is_empty()
                    else "it would run before that value is produced)")
            if op is not None:
                raise ScheduleError(
                    f"illegal schedule: {r.comp!r} reads {r.target!r} through the copy "
                    f"{op.name!r}, which would not hold the value Layer I prescribes ("
                    + seen.replace("it would read", "the copy would hold")
                    .replace("it would run before", "the copy would run before"),
                    computations=tuple(dict.fromkeys([*srcs, op.name, r.comp])),
                    dependence=_fmt(names, dep) or str(bad), command=op.command,
                    command_index=op.command_index)
            raise ScheduleError(
                f"illegal schedule: {r.comp!r} would not read the value of {r.target!r} that "
                f"Layer I prescribes (" + seen,
                computations=tuple(dict.fromkeys([*srcs, r.comp])),
                dependence=_fmt(names, dep) or str(bad))
    for bname in exp.written:
        found = _final_mismatch(l1, exp, ph, chains, deps, bname, same)
        if found is None:
            continue
        _, act, want, bad = found
        if not bad.is_empty():
            exp_w = want.intersect_domain(bad.domain())
            got_w = act.intersect_domain(bad.domain())
            raise ScheduleError(
                f"illegal schedule: the final content of output {bname!r} would differ from "
                f"Layer I (last writers expected {_fmt(names, exp_w)}, got "
                f"{_fmt(names, got_w)})",
                computations=tuple(l3.buffers[bname].writers),
                dependence=_fmt(names, exp_w.reverse()))


Mismatch = tuple[isl.UnionMap, isl.UnionMap, isl.UnionMap, isl.UnionMap]


def _read_mismatch(l1: Layer1, exp: Expected, ph: Physical, chains: Chains, r: Read,
                   direct: isl.UnionMap, same: Callable[[], isl.UnionMap],
                   parts: Parts | None = None) -> Mismatch:
    """For read ``r``: the writes its sinks see (T_sink -> T_src), the instances they are
    (T_sink -> P[y]), those Layer I prescribes, and where the two differ. With ``parts``,
    only the reading statement's and the read buffer's writers' pieces are composed (a
    source of the read is a writer of the buffer it reads, unless a copy is between)."""
    resolved, _ = chains.resolve(direct)
    tinv, sink_tinv = ph.tinv, ph.tinv
    if parts is not None:
        sink_tinv = parts.tinv_of([r.comp])
        if parts.exact:
            buf = ph.reads[r.ref].get_tuple_name(isl.dim_type.out) or ""
            tinv = parts.tinv_of(parts.writers.get(buf, []))
    act = resolved.apply_range(tinv).coalesce()  # T_sink -> P[y]
    sink_ts = ph.reads[r.ref].domain()
    want = _restrict_domain(sink_tinv, sink_ts).apply_range(exp.sources.get(
        r.ref, isl.UnionMap.empty(l1.param_space)))
    return resolved, act, want, _differ(act, want, same)


def _final_mismatch(l1: Layer1, exp: Expected, ph: Physical, chains: Chains,
                    deps: isl.UnionMap, bname: str, same: Callable[[], isl.UnionMap]
                    ) -> Mismatch | None:
    """For output ``bname``: its elements' last writes (b[e] -> T_src), the instances
    they are, those Layer I prescribes, and where they differ (None: nothing to check)."""
    actual, _ = chains.resolve(strip(deps, f"END_{bname}").reverse())
    if actual.is_empty() and bname not in exp.final:
        return None
    act = _rename_all_domains(actual.apply_range(ph.tinv), bname)
    want = exp.final.get(bname, isl.UnionMap.empty(l1.param_space))
    return (_rename_all_domains(actual, bname), act, want, _differ(act, want, same))


def misreads(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected, ph: Physical,
             l4: Layer4 | None = None) -> list[tuple[str, isl.UnionMap, isl.UnionMap]]:
    """What :func:`check_dataflow` compares, where it differs, for a picture: per read,
    ``("read", T_sink -> T_src seen, T_sink -> P[y] prescribed)``, per output buffer
    ``("final", b[e] -> T_src last, b[e] -> P[y] prescribed)``, each restricted to the
    sinks or elements that would get another value than Layer I's."""
    l4 = l4 or Layer4()
    flow = scheduled_flow(l1, l3, ts, exp, ph, l4)
    if flow is None:
        return []
    deps, chains, same = flow
    rx = relax(l1, l3, ts, exp, ph)
    exp = exp if rx is None else rx.exp
    out = []
    for r in exp.reads:
        if r.ref in ph.reads:
            direct = strip(deps, f"R{r.ref}").reverse()
            got, act, want, bad = _read_mismatch(l1, exp, ph, chains, r, direct, same)
            if rx is not None and r.ref in rx.required:
                bad = self_mismatch(rx, r.ref, act, want, ph.reads[r.ref].domain(), ph.tinv)
            if not bad.is_empty():
                out.append(("read", got.intersect_domain(bad.domain()),
                            want.intersect_domain(bad.domain())))
    for bname in exp.written:
        found = _final_mismatch(l1, exp, ph, chains, deps, bname, same)
        if found is not None and not found[3].is_empty():
            got, _, want, bad = found
            out.append(("final", got.intersect_domain(bad.domain()),
                        want.intersect_domain(bad.domain())))
    return out


def _differ(act: isl.UnionMap, want: isl.UnionMap, same: Callable[[], isl.UnionMap]
            ) -> isl.UnionMap:
    """The part of ``act`` and ``want`` (sink -> producer instances) whose producers differ
    up to :func:`same_value`: where they differ as instances, each side is widened to the
    instances storing the same value before they are compared again."""
    bad = act.subtract(want).union(want.subtract(act))
    if bad.is_empty() or same().is_empty():
        return bad
    sinks = bad.domain()
    a, w = act.intersect_domain(sinks), want.intersect_domain(sinks)
    a, w = a.union(a.apply_range(same())), w.union(w.apply_range(same()))
    return a.subtract(w).union(w.subtract(a))


def _check_device_reads(ph: Physical, l4: Layer4, deps: isl.UnionMap,
                        names: dict[str, list[str]]) -> None:
    """Device memory starts empty: every element read there must have been written there
    first (by a host_to_device copy, or by the device itself). A copy back to the host
    is checked with its own words (:func:`_check_operation_reads`)."""
    sinks = [(f"R{k}", m) for k, m in ph.reads.items()] + \
        [(f"O_{k}", m) for k, m in ph.op_reads.items()
         if l4.ops[k].kind != "device_to_host"]
    for key, m in sinks:
        buf = m.get_tuple_name(isl.dim_type.out)
        if not buf.startswith(DEVICE_PREFIX):
            continue
        sourced = strip(deps, key).range()
        missing = isl.UnionSet.from_set(m.domain()).subtract(sourced)
        if not missing.is_empty():
            where = _fmt_set(names, missing.apply(ph.tinv))
            who = sorted({x.get_tuple_name() for x in sets_of(missing.apply(ph.tinv))})
            raise ScheduleError(
                f"illegal schedule: {', '.join(who)} would read {buf[len(DEVICE_PREFIX):]!r} "
                f"on the device where nothing put it (no host_to_device copy covers it "
                f"before): {where}", computations=tuple(who))


def _check_copied(l1: Layer1, names: dict[str, list[str]], r: Read, op: Op,
                  direct: isl.UnionMap, ph: Physical) -> None:
    """A read redirected to a copy's destination must find the element copied there."""
    sinks = isl.UnionSet.from_set(ph.reads[r.ref].domain())
    missing = sinks.subtract(direct.domain())
    if not missing.is_empty():
        where = _fmt_set(names, missing.apply(ph.tinv))
        raise ScheduleError(
            f"illegal schedule: {r.comp!r} reads {op.dst!r} before the copy {op.name!r} "
            f"fills it (at {where})", computations=(op.name, r.comp),
            command=op.command, command_index=op.command_index)


def _check_operation_reads(l1: Layer1, l3: Layer3, exp: Expected, ph: Physical, l4: Layer4,
                           chains: Chains, names: dict[str, list[str]]) -> None:
    """An operation that is not followed through (a host/device copy, a send) must not
    read an element before anything writes it, and a copy back to the host must copy the
    final value of an output."""
    for o in l4.ops.values():
        if o.kind == "copy" or o.name not in ph.op_reads or o.src is None:
            continue
        assert o.read is not None
        produced: isl.Set | None = None
        for w in l3.buffers[o.src].writers:
            e = l3.logical[w].intersect_domain(l1.comps[w].domain).range()
            produced = e if produced is None else produced.union(e)
        flow, none = chains.resolve(chains.flow[o.name])
        unsourced = chains.unsourced[o.name].union(none)
        # an in/out buffer's elements hold the caller's content before any write: a copy
        # of them is what the program reads there (a read that needed a later write sees
        # the copy's stale value, which the check of that read refuses: the copy is
        # followed through); a copy back too early, the final-value check below
        caller = o.transparent and l3.buffers[o.src].role == INOUT
        if produced is not None and not caller:
            early = unsourced.apply(ph.tinv).apply(isl.UnionMap.from_map(o.read))
            early = early.intersect(isl.UnionSet.from_set(produced))
            if not early.is_empty():
                what = {"device_to_host": "copies to the host elements of {b} that the "
                                          "device has not written (yet)",
                        "host_to_device": "copies to the device elements of {b} that the "
                                          "host has not written (yet)"}.get(
                    o.kind, "reads elements of {b} before they are produced")
                raise ScheduleError(
                    f"illegal schedule: operation {o.name!r} "
                    f"{what.format(b=repr(o.src))}: {_fmt_set(names, early)}",
                    computations=(o.name, *l3.buffers[o.src].writers), command=o.command,
                    command_index=o.command_index)
        if o.kind == "device_to_host" and o.src in exp.final:
            inst = flow.apply_domain(ph.tinv).apply_range(ph.tinv)  # op[e] -> P[y]
            got = _rename_all_domains(inst, o.src)
            want = exp.final[o.src].intersect_domain(
                isl.UnionSet.from_set(o.read.range()))
            bad = got.subtract(want).union(want.subtract(got))
            if not bad.is_empty():
                raise ScheduleError(
                    f"illegal schedule: operation {o.name!r} copies {o.src!r} back before "
                    f"its final value is written (expected {_fmt(names, want)}, got "
                    f"{_fmt(names, got)})", computations=(o.name, *l3.buffers[o.src].writers),
                    command=o.command, command_index=o.command_index)


def _accesses(l1: Layer1, ph: Physical) -> tuple[isl.UnionMap, isl.UnionMap]:
    """Every write and every read of the program (computations and operations), as
    time-space point -> element."""
    acc_w = isl.UnionMap.empty(l1.param_space)
    for w in (*ph.writes.values(), *ph.op_writes.values()):
        acc_w = acc_w.union(isl.UnionMap.from_map(w))
    acc_r = isl.UnionMap.empty(l1.param_space)
    for r in (*ph.reads.values(), *ph.op_reads.values()):
        acc_r = acc_r.union(isl.UnionMap.from_map(r))
    # coalesced: a statement's reads of one buffer share a space, one piece per read and
    # per piece of its region, and the pairs below multiply them (9 s for a tiled chain)
    return acc_w.coalesce(), acc_r.coalesce()


# the loop tags whose iterations may run one atomic update's instances at once
_ATOMIC_TAGS = ("parallel", "vector", "gpu_block", "gpu_thread")


def check_parallel(l1: Layer1, l3: Layer3, ts: TimeSpace, ph: Physical) -> None:
    """Every loop tagged parallel/vector (or a GPU/distributed dim) carries no dependence,
    except that a parallel, vector or GPU block/thread loop may carry those between
    instances of one atomic update (passes/atomic.py), which commute (a vector loop then
    runs the atomic update one lane at a time: C compilers do not vectorize atomic
    operations; a GPU prints it as one of its atomic instructions, or refuses it)."""
    names = {n: c.vars for n, c in l1.comps.items()}
    pairs = None
    for n, command in atomic_comps(ts).items():
        atomic_update(n, l1, l3, command)  # its form, refused here if it has another
    atomic = _atomic_pairs(l1, ts).union(group_pairs(l1, ts))  # + critical sections
    for n, name, tag, loop in tagged_loops(l1, ts):
        if pairs is None:
            kinds = memory_dependences(l1, ph)
            pairs = kinds["output"].union(kinds["flow"]).union(kinds["anti"])
        carried = pairs.intersect(loop)
        if tag in _ATOMIC_TAGS and not atomic.is_empty():
            carried = carried.subtract(atomic)
        elif not atomic.is_empty() and carried.is_subset(atomic) and not carried.is_empty():
            dep = carried.apply_domain(ph.tinv).apply_range(ph.tinv)
            raise ScheduleError(
                f"illegal schedule: loop {name!r} of {n!r} is tagged {tag} and carries the "
                "dependences of an atomic update, which only a parallel, vector or GPU "
                "block/thread loop may carry (each instance is one atomic operation)",
                computations=(n,), dependence=_fmt(names, dep), level=name)
        if not carried.is_empty():
            dep = carried.apply_domain(ph.tinv).apply_range(ph.tinv)
            comps = sorted({m.get_tuple_name(isl.dim_type.in_) for m in maps_of(dep)}
                           | {m.get_tuple_name(isl.dim_type.out)
                              for m in maps_of(dep)})
            raise ScheduleError(
                f"illegal schedule: loop {name!r} of {n!r} is tagged {tag} but carries a "
                "dependence between its iterations",
                computations=tuple(comps), dependence=_fmt(names, dep), level=name)


def _atomic_pairs(l1: Layer1, ts: TimeSpace) -> isl.UnionMap:
    """Any two time-space points of one atomic update: they commute (passes/atomic.py)."""
    atomic = isl.UnionMap.empty(l1.param_space)
    for n in atomic_comps(ts):
        pts = ts.comps[n].full.range()
        atomic = atomic.union(isl.UnionMap.from_map(isl.Map.from_domain_and_range(pts, pts)))
    return atomic


def memory_dependences(l1: Layer1, ph: Physical) -> dict[str, isl.UnionMap]:
    """Every pair of accesses to one element, as time-space points (in either order), by
    kind: ``flow`` (a write -> a read), ``anti`` (a read -> a write), ``output`` (a write
    -> a write). A picture draws the storage ones that a parallel loop carries."""
    acc_w, acc_r = _accesses(l1, ph)
    return {"flow": acc_w.apply_range(acc_r.reverse()),
            "anti": acc_r.apply_range(acc_w.reverse()),
            "output": acc_w.apply_range(acc_w.reverse())}


def tagged_loops(l1: Layer1, ts: TimeSpace) -> Iterator[tuple[str, str, str, isl.UnionMap]]:
    """Per loop tagged parallel/vector (or a GPU/distributed dim), once per loop nest:
    ``(computation, loop, tag, carried)``, ``carried`` relating two time-space points of
    that nest in different iterations of the loop, the earlier first."""
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
            d = 2 * dyn + 1
            t = [f"t{k}" for k in range(ntd)]
            u = [f"u{k}" for k in range(ntd)]
            cons = [f"t{2 * q} = {s.betas[q]}" for q in range(dyn + 1)]
            cons += [f"t{k} = u{k}" for k in range(d)] + [f"t{d} < u{d}"]
            yield n, name, tag, isl.UnionMap.read_from_str(
                l1.ctx, f"{{ [{', '.join(t)}] -> [{', '.join(u)}] : {' and '.join(cons)} }}")


def _restrict_domain(u: isl.UnionMap, s: isl.Set) -> isl.UnionMap:
    return u.intersect_domain(isl.UnionSet.from_set(s))


def _restrict_domain_u(u: isl.UnionMap, s: isl.UnionSet) -> isl.UnionMap:
    return u.intersect_domain(s)


def _rename_all_domains(u: isl.UnionMap, name: str) -> isl.UnionMap:
    out = isl.UnionMap.empty(u.get_space())
    for m in maps_of(u):
        out = out.union(isl.UnionMap.from_map(m.set_tuple_name(isl.dim_type.in_, name)))
    return out


def _fmt_set(names: dict[str, list[str]], u: isl.UnionSet) -> str:
    """ISL text of a set of instances, dims named after the statement's iterators."""
    out = isl.UnionSet.empty(u.get_space())
    for x in sets_of(u.coalesce()):
        vs = names.get(x.get_tuple_name() or "", [])
        if len(vs) == x.dim(isl.dim_type.set):
            for k, v in enumerate(vs):
                x = x.set_dim_name(isl.dim_type.set, k, v)
        out = out.union(isl.UnionSet.from_set(x))
    return str(out)


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


def check_barriers(l1: Layer1, ts: TimeSpace, ph: Physical, l4: Layer4,
                   on_device: set[str]) -> None:
    """Threads of a GPU block run at their own pace between barriers: when an instance
    depends on another of the same block that another thread may run (a different thread
    loop, or a statement the block's first thread runs alone), a barrier of that block
    must come between them. A missing barrier is an error here, never a race on the
    device.

    Which thread runs an instance: targets run iteration ``t`` of a thread loop on thread
    ``t mod blockDim`` of its axis (the last thread loop of a statement is x, then y, z),
    so two instances whose thread loops have equal values, axis by axis, are one
    thread's, in program order; statements without thread loops run on the block's first
    thread only. Everything else may be two threads. Two instances of one atomic update
    need no barrier: each is one atomic instruction, and they commute."""
    stmts = [n for n in ts.order if n in on_device]
    blocks = {n: ts.gpu_dims(n, "gpu_block") for n in stmts}
    threads = {n: ts.gpu_dims(n, "gpu_thread") for n in stmts}
    if not any(blocks.values()):
        return
    ntd = 2 * ts.depth + 1
    tsp = isl.Space.set_alloc(l1.ctx, 0, ntd).align_params(l1.param_space)
    acc_w, acc_r = _accesses(l1, ph)
    pairs = (acc_w.apply_range(acc_w.reverse()).union(acc_w.apply_range(acc_r.reverse()))
             .union(acc_r.apply_range(acc_w.reverse())))
    before = isl.UnionMap.from_map(isl.Map.lex_lt(tsp))
    pairs = pairs.intersect(before).subtract(_atomic_pairs(l1, ts))
    bars = [o.name for o in l4.ops.values() if o.kind == "barrier" and o.name in on_device]
    names = {n: c.vars for n, c in l1.comps.items()}
    names.update({n: list(ts.comps[n].ext_dims) for n in stmts if n not in names})
    points = {n: isl.UnionSet.from_set(ts.comps[n].full.range()) for n in stmts}
    for a in stmts:
        for b in stmts:
            if not blocks[a] or blocks[a] != blocks[b]:
                continue  # different kernels: launches run one after the other
            if not threads[a] and not threads[b]:
                continue  # the block's first thread runs both
            dep = pairs.intersect_domain(points[a]).intersect_range(points[b])
            if dep.is_empty():
                continue
            upto = 2 * max(blocks[a]) + 1  # same kernel and same block: equal up to here
            dep = dep.intersect(_equal_upto(tsp, upto))
            if len(threads[a]) == len(threads[b]):  # the same thread: program order
                dep = dep.subtract(_same_thread(tsp, threads[a], threads[b]))
            for bar in bars:
                if dep.is_empty():
                    break
                bp = isl.UnionSet.from_set(ts.comps[bar].full.range())
                to_bar = before.intersect_range(bp).intersect(_equal_upto(tsp, upto))
                dep = dep.subtract(to_bar.apply_range(before.intersect_domain(bp)))
            if not dep.is_empty():
                inst = dep.apply_domain(ph.tinv).apply_range(ph.tinv)
                raise ScheduleError(
                    f"illegal schedule: {b!r} depends on {a!r} in the same GPU block, "
                    "possibly in another thread, with no barrier between them (add "
                    "me.barrier_at(consumer, level) at a block-level loop between them)",
                    computations=(a, b), dependence=_fmt(names, inst))


def _same_thread(space: isl.Space, ta: list[int], tb: list[int]) -> isl.UnionMap:
    """{ T -> T' : the thread loops of T and T' have equal values, axis by axis }."""
    m = isl.Map.universe(space.map_from_set())
    for da, db in zip(ta, tb, strict=True):
        m = m.equate(isl.dim_type.in_, 2 * da + 1, isl.dim_type.out, 2 * db + 1)
    return isl.UnionMap.from_map(m)


def _equal_upto(space: isl.Space, k: int) -> isl.UnionMap:
    """{ T -> T' : T and T' agree on dims 0..k }."""
    m = isl.Map.universe(space.map_from_set())
    for q in range(k + 1):
        m = m.equate(isl.dim_type.in_, q, isl.dim_type.out, q)
    return isl.UnionMap.from_map(m)
