"""Exact expected dataflow of Layer I: for every read reference, which computation instance
produces the value it must see, independently of any schedule.

A value read ``P(f(x))`` inside P's domain is produced by that instance. Outside it, and for
memory reads of a buffer (the φ of the papers: ``c1[i, j, k-1]`` at ``k = 0`` reads what
``c0`` stored), the producer is the last write to the same logical buffer element in the
*sequential order* — computations in declaration order, each domain in lexicographic order —
computed exactly with ISL's dataflow analysis. A read with no producer is a compile-time error
that prints the unproduced set, except in an in/out buffer (``kind="inout"``, an array the
caller passes and the kernel updates in place), whose unwritten elements hold the caller's
content; the legality check then keeps every such read before any write of its element.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..ir.errors import DefinitionError, UnproducedReadError
from ..ir.function import INOUT, INPUT
from ..ir.islutil import maps_of
from .data import BufferInfo, Layer3, box, lift_params
from .layer1 import Layer1, Read
from .schedule import _range_map


@dataclass
class Expected:
    reads: list[Read]  # every read reference, ``ref`` = its index here
    sources: dict[int, isl.UnionMap] = field(default_factory=dict)  # ref -> {C[x] -> P[y]}
    final: dict[str, isl.UnionMap] = field(default_factory=dict)  # buffer -> {B[e] -> P[y]}
    written: dict[str, isl.Set] = field(default_factory=dict)  # buffer -> logical elements
    # buffer -> the elements surely written (by unguarded writers at affine indices)
    covered: dict[str, isl.Set] = field(default_factory=dict)


def read_buffer(l3: Layer3, r: Read) -> str:
    if r.kind == "value":
        return l3.store[r.target]
    return l3.buffer_of(r.target) if r.of_comp else r.target


def read_role(l3: Layer3, r: Read) -> str:
    return l3.buffers[read_buffer(l3, r)].role


def logical_access(l1: Layer1, l3: Layer3, r: Read) -> isl.Map:
    """{C[x] -> B[e]}: the logical buffer elements a read may touch."""
    c = l1.comps[r.comp]
    buf = l3.buffers[read_buffer(l3, r)]
    if r.kind == "value":
        p = l1.comps[r.target]
        acc = r.access if r.access is not None else _bound(r).intersect_range(p.domain)
        return acc.apply_range(l3.logical[r.target]).intersect_domain(c.domain)
    if r.access is not None:
        return r.access.intersect_domain(c.domain).set_tuple_name(isl.dim_type.out, buf.name)
    # a data-dependent index: exact along the affine indices, anywhere in the box otherwise
    acc = _bound(r).intersect_domain(c.domain).set_tuple_name(isl.dim_type.out, buf.name)
    return acc.intersect_range(box(buf, acc.range().get_space()))


def _outside(r: Read, buf: BufferInfo, memo: dict[tuple[str, str, int, str], bool]) -> bool:
    """Whether an exact read of an input leaves its bounds somewhere, one index at a time:
    the element is (f_1(x), ..., f_n(x)), so it is outside the box for some ``x`` exactly
    when some f_k leaves [0, size_k) for some ``x``. No relation is built, and each distinct
    index of a computation is checked once (an inlined pipeline repeats them)."""
    out = False
    for k, (pa, key) in enumerate(zip(r.indices, r.index_keys, strict=True)):
        assert pa is not None and key is not None
        mk = (r.comp, buf.name, k, key)
        got = memo.get(mk)
        if got is None:
            dom_space = r.domain.get_space()
            size = (r.ctx.const(buf.fold[k]) if k in buf.fold
                    else lift_params(buf.sizes[k], dom_space))
            on = pa.intersect_domain(r.domain)
            bad = on.lt_set(r.ctx.const(0)).union(on.ge_set(size))
            got = memo[mk] = not bad.is_empty()
        out = out or got
    return out


def _bound(r: Read) -> isl.Map:
    assert r.bound is not None, f"read {r.ref} of {r.comp!r} has neither access nor bound"
    return r.bound


def reference_schedule(l1: Layer1) -> dict[str, isl.Map]:
    """The sequential order: the computations' ``order`` maps when given (a memory-based
    front-end's program order), else declaration order, then lexicographic order of each
    domain."""
    given = {n: c.source.order for n, c in l1.comps.items()
             if c.source is not None and c.source.order is not None}
    if given:
        return _given_order(l1, given)
    depth = max([len(c.vars) for c in l1.comps.values()] or [0])
    out = {}
    for k, n in enumerate(l1.declared):
        c = l1.comps[n]
        nv = len(c.vars)
        outs = [str(k)] + [f"d{q}" for q in range(nv)] + ["0"] * (depth - nv)
        ident = isl.Map.identity(c.domain.get_space().map_from_set()).reset_tuple_id(
            isl.dim_type.out)
        out[n] = ident.apply_range(_range_map(l1.ctx, nv, outs))
    return out


def end_point(l1: Layer1, sched: dict[str, isl.Map]) -> str:
    """A time point after every computation instance of the reference order."""
    width = max([m.dim(isl.dim_type.out) for m in sched.values()] or [1])
    last = -1
    for n, m in sched.items():
        r = m.range()
        if r.is_empty():
            continue
        hi = r.dim_max_val(0) if r.dim(isl.dim_type.param) == 0 else \
            r.project_out(isl.dim_type.param, 0, r.dim(isl.dim_type.param)).dim_max_val(0)
        if not hi.is_int():
            raise DefinitionError(f"computation {n!r}: the first dim of its order must be "
                                  f"bounded by a constant, got {m}")
        last = max(last, hi.to_python())
    return "{ [" + ", ".join([str(last + 1)] + ["0"] * (width - 1)) + "] }"


def _given_order(l1: Layer1, given: dict[str, str]) -> dict[str, isl.Map]:
    missing = [n for n in l1.declared if n not in given]
    if missing:
        raise DefinitionError(f"computations {missing} have no order while others do: give "
                              "the program order for every computation or for none")
    maps: dict[str, isl.Map] = {}
    for n in l1.declared:
        c = l1.comps[n]
        try:
            m = isl.Map.read_from_str(l1.ctx, given[n])
        except isl.Error as e:
            raise DefinitionError(f"computation {n!r}: malformed order {given[n]!r} "
                                  f"({e})") from None
        m = m.align_params(c.domain.get_space())
        if m.get_tuple_name(isl.dim_type.in_) != n or m.dim(isl.dim_type.in_) != len(c.vars):
            raise DefinitionError(f"computation {n!r}: its order must map {n}[...] with "
                                  f"{len(c.vars)} dims, got {given[n]!r}")
        dom = m.domain()
        if not c.domain.is_subset(dom):
            raise DefinitionError(f"computation {n!r}: its order does not cover its domain")
        maps[n] = m.intersect_domain(c.domain)
    width = max(m.dim(isl.dim_type.out) for m in maps.values())
    out = {}
    for n, m in maps.items():
        extra = width - m.dim(isl.dim_type.out)
        if extra:
            m = m.add_dims(isl.dim_type.out, extra)
            for k in range(width - extra, width):
                m = m.fix_val(isl.dim_type.out, k, isl.Val.int_from_si(l1.ctx, 0))
        out[n] = m.reset_tuple_id(isl.dim_type.out)
    return out


def _refuse_unproduced(found: list[tuple[Read, isl.Set, isl.Set]]) -> None:
    """Every read that some instance makes of a value nothing produces: which computation
    reads what at which index, the instances that do, and the elements nobody writes."""
    r0, inst0, _ = found[0]
    first = [inst for r, inst, _ in found if (r.comp, r.target) == (r0.comp, r0.target)]
    union = first[0]
    for inst in first[1:]:
        union = union.union(inst)
    parts = []
    for r, inst, elems in found:
        index = ", ".join(_bare(str(x)) for x in r.node.indices)
        parts.append(f"{r.comp} reads {r.target}[{index}] at {inst}, elements nothing "
                     f"produces: {elems}")
    raise UnproducedReadError(r0.comp, r0.target, str(union.coalesce()), "; ".join(parts))


def _bare(text: str) -> str:
    """``(i + 1)`` as ``i + 1``: the outer parentheses of a printed index say nothing."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for k, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and k < len(text) - 1:
                return text
        return text[1:-1]
    return text


def expected_dataflow(l1: Layer1, l3: Layer3) -> Expected:
    reads: list[Read] = []
    for n in l1.declared:
        for r in l1.comps[n].reads:
            r.ref = len(reads)
            reads.append(r)
    exp = Expected(reads)
    sched = reference_schedule(l1)
    in_bounds: dict[tuple[str, str, int, str], bool] = {}
    sinks: isl.UnionMap | None = None
    sink_sched: isl.UnionMap | None = None
    for r in reads:
        c = l1.comps[r.comp]
        bufname = read_buffer(l3, r)
        buf = l3.buffers[bufname]
        if buf.role == INPUT:
            if r.exact and _outside(r, buf, in_bounds):
                out = r.bound.range().subtract(box(buf, r.bound.range().get_space()))
                raise DefinitionError(f"computation {r.comp!r} reads input {bufname!r} "
                                      f"outside its bounds at {out}")
            continue
        mem = None
        if r.kind == "value":
            p = l1.comps[r.target]
            if r.access is None:
                # which instance is read is only known at run time: any it may name
                exp.sources[r.ref] = isl.UnionMap.from_map(
                    _bound(r).intersect_domain(c.domain).intersect_range(p.domain))
                continue
            inside = r.access.intersect_range(p.domain)
            exp.sources[r.ref] = isl.UnionMap.from_map(inside)
            outside = r.access.subtract_range(p.domain)
            if not outside.is_empty():
                mem = outside.apply_range(l3.logical[r.target])
        else:
            mem = logical_access(l1, l3, r)
        if mem is None:
            continue
        name = f"R{r.ref}"
        m = isl.UnionMap.from_map(mem.set_tuple_name(isl.dim_type.in_, name))
        s = isl.UnionMap.from_map(sched[r.comp].set_tuple_name(isl.dim_type.in_, name))
        sinks = m if sinks is None else sinks.union(m)
        sink_sched = s if sink_sched is None else sink_sched.union(s)
    # final values of output buffers: a sink after everything
    end_at = end_point(l1, sched)
    for bname in l3.outputs:
        b = l3.buffers[bname]
        written = None
        for w in b.writers:
            s_ = l3.logical[w].intersect_domain(l1.comps[w].domain).range()
            written = s_ if written is None else written.union(s_)
            if not may_write(l1, l3, w):
                cov = exp.covered.get(bname)
                exp.covered[bname] = s_ if cov is None else cov.union(s_)
        if written is None:
            continue
        exp.written[bname] = written
        name = f"END_{bname}"
        elems = written.set_tuple_name(name)
        m = isl.UnionMap.from_map(isl.Map.identity(elems.get_space().map_from_set())
                                  .intersect_domain(elems).set_tuple_name(isl.dim_type.out,
                                                                         bname))
        st = isl.Map.from_domain_and_range(elems, isl.Set.read_from_str(l1.ctx, end_at))
        sinks = m if sinks is None else sinks.union(m)
        sink_sched = (isl.UnionMap.from_map(st) if sink_sched is None
                      else sink_sched.union(isl.UnionMap.from_map(st)))
    if sinks is None:
        return exp
    must, may = _writes(l1, l3)
    assert sink_sched is not None
    full_sched = sink_sched
    for m_ in sched.values():
        full_sched = full_sched.union(isl.UnionMap.from_map(m_))
    info = isl.UnionAccessInfo.from_sink(sinks).set_must_source(must).set_may_source(may)
    flow = info.set_schedule_map(full_sched).compute_flow()
    deps = flow.get_may_dependence()  # source -> sink
    nosrc = flow.get_may_no_source()
    unproduced: list[tuple[Read, isl.Set, isl.Set]] = []
    for r in reads:
        name = f"R{r.ref}"
        miss = _part(nosrc, name)
        if read_role(l3, r) == INOUT:
            miss = None  # the caller's initial content: what an in-place array held
        if miss is not None and not miss.is_empty():
            unproduced.append((r, miss.domain().set_tuple_name(r.comp).coalesce(),
                               miss.range().coalesce()))
            continue
        d = _part_range(deps, name)
        if d is not None:
            d = _rename_domain(d.reverse(), r.comp)
            exp.sources[r.ref] = exp.sources[r.ref].union(d) if r.ref in exp.sources else d
    if unproduced:
        _refuse_unproduced(unproduced)
    for bname in exp.written:
        d = _part_range(deps, f"END_{bname}")
        if d is not None:
            exp.final[bname] = _rename_domain(d.reverse(), bname)
    return exp


def may_write(l1: Layer1, l3: Layer3, comp: str) -> bool:
    """Whether an instance of ``comp`` may leave the elements its logical access names
    unwritten: a run-time guard, or a data-dependent index (it writes one element of the
    over-approximated set, not all). Such writes never kill older ones in the dataflow."""
    return l1.comps[comp].guard is not None or comp in l3.may


def _writes(l1: Layer1, l3: Layer3) -> tuple[isl.UnionMap, isl.UnionMap]:
    must = isl.UnionMap.empty(l1.param_space)
    may = isl.UnionMap.empty(l1.param_space)
    for n in l1.declared:
        w = isl.UnionMap.from_map(l3.logical[n].intersect_domain(l1.comps[n].domain))
        if not may_write(l1, l3, n):
            must = must.union(w)
        else:
            may = may.union(w)
    return must, may


def _part(u: isl.UnionMap, domain_name: str) -> isl.Map | None:
    """The map of ``u`` whose domain tuple is ``domain_name`` (None if absent)."""
    found = None
    for m in maps_of(u):
        if m.get_tuple_name(isl.dim_type.in_) == domain_name:
            found = m if found is None else found.union(m)
    return found


def _part_range(u: isl.UnionMap, range_name: str) -> isl.UnionMap | None:
    """The maps of ``u`` whose range tuple is ``range_name`` (None if none)."""
    found = None
    for m in maps_of(u):
        if m.get_tuple_name(isl.dim_type.out) == range_name:
            um = isl.UnionMap.from_map(m)
            found = um if found is None else found.union(um)
    return found


def _rename_domain(u: isl.UnionMap, name: str) -> isl.UnionMap:
    out = None
    for m in maps_of(u):
        um = isl.UnionMap.from_map(m.set_tuple_name(isl.dim_type.in_, name))
        out = um if out is None else out.union(um)
    assert out is not None
    return out
