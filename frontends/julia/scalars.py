"""Array dataflow of a function's scalar locals: how each read of a scalar becomes a Layer I
read (section 5.2 of the paper: recover producer-consumer form from memory-based code).

For every scalar, ISL's exact dataflow on the sequential order (statement positions and
loop counters, the 2d+1 schedule) tells which assignments may produce each read:

- ``value``: every read has exactly one producer, an unconditional assignment in the same
  iteration of that assignment's loops (``t = a[i] * 2; b[i] = t``, or ``s = 0`` read by
  the following ``s += x``). The read becomes a value read of that computation; the scalar
  needs no storage of its own.
- ``buffer``: otherwise (an accumulation ``s += ...`` across a loop, a value set under a
  condition). The scalar is *expanded* along the loops around all its assignments and
  reads whose iterations it carries no value across (``s`` of a dot product per row
  ``i`` becomes ``s[i]``), and reads become memory reads of that buffer.

A read some execution reaches with no assignment before it is refused: Julia would raise
``UndefVarError`` there, and the compiled kernel would read garbage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from frontends.julia.errors import UnsupportedJulia
from frontends.julia.program import Program, Stmt


@dataclass
class ScalarPlan:
    name: str
    mode: str  # "value" or "buffer"
    # value mode: for each reading statement, its producer statement
    producer: dict[int, int] = field(default_factory=dict)
    # buffer mode: the loops (ids) the scalar is expanded along, and each one's counter range
    loops: tuple[int, ...] = ()
    extents: tuple[tuple[int, int], ...] = ()


def _sched(s: Stmt, depth: int, name: str, space_dims: list[str]) -> str:
    outs: list[str] = []
    for d in range(depth + 1):
        outs.append(str(s.pos[d]) if d < len(s.pos) else "0")
        if d < depth:
            outs.append(space_dims[d] if d < len(space_dims) else "0")
    return f"{name}[{', '.join(space_dims)}] -> [{', '.join(outs)}]"


def plan_scalars(prog: Program, domains: dict[int, isl.Set], guarded: set[int],
                 reads: dict[int, set[str]], counters: dict[int, list[str]]
                 ) -> dict[str, ScalarPlan]:
    """``domains[k]``: statement k's domain over its loop counters (affine conditions
    applied); ``guarded``: statements under a run-time condition; ``reads[k]``: scalars
    statement k reads (value, indices, conditions)."""
    depth = max([len(s.loops) for s in prog.stmts] or [0])
    plans: dict[str, ScalarPlan] = {}
    fn = prog.function.name
    for var in sorted(prog.scalars):
        defs = [s for s in prog.stmts if _defines(s, var)]
        uses = [s for s in prog.stmts if var in reads[s.index]]
        if not uses:
            plans[var] = ScalarPlan(var, "value")
            continue
        ctx = next(iter(domains.values())).get_ctx()
        must = isl.UnionMap.empty(isl.Space.params_alloc(ctx, 0))
        may = must
        sinks = must
        sched = must
        for s in defs:
            w = _access(domains[s.index], f"W{s.index}", var)
            if s.index in guarded:
                may = may.union(w)
            else:
                must = must.union(w)
            sched = sched.union(sched_map(ctx, s, depth, f"W{s.index}", counters))
        for s in uses:
            sinks = sinks.union(_access(domains[s.index], f"R{s.index}", var))
            sched = sched.union(sched_map(ctx, s, depth, f"R{s.index}", counters))
        info = isl.UnionAccessInfo.from_sink(sinks).set_must_source(must).set_may_source(may)
        flow = info.set_schedule_map(sched).compute_flow()
        deps = flow.get_may_dependence()
        nosrc = flow.get_may_no_source()
        if not nosrc.is_empty():
            first = min(int(m.get_tuple_name(isl.dim_type.in_)[1:]) for m in _maps(nosrc))
            raise UnsupportedJulia(prog.stmts[first].node.line, f"local {var!r} may be read "
                                   "before it is assigned (Julia raises UndefVarError)", fn)
        by_sink: dict[int, list[isl.Map]] = {}
        for m in _maps(deps):
            by_sink.setdefault(int(m.get_tuple_name(isl.dim_type.out)[1:]), []).append(m)
        producer: dict[int, int] = {}
        for s in uses:
            ms = by_sink.get(s.index, [])
            srcs = {int(m.get_tuple_name(isl.dim_type.in_)[1:]) for m in ms}
            if len(srcs) != 1:
                break
            d = prog.stmts[srcs.pop()]
            n = len(d.loops)
            if d.index in guarded or tuple(lp.id for lp in s.loops[:n]) != \
                    tuple(lp.id for lp in d.loops) or \
                    not all(_same_iteration(m, n) for m in ms):
                break
            producer[s.index] = d.index
        else:
            plans[var] = ScalarPlan(var, "value", producer)
            continue
        plans[var] = _buffer_plan(var, defs + uses, deps, domains)
    return plans


def _defines(s: Stmt, var: str) -> bool:
    t = s.node.target
    return getattr(t, "id", None) == var


def _access(dom: isl.Set, name: str, var: str) -> isl.UnionMap:
    d = dom.set_tuple_name(name)
    # built, not parsed: a front-end temporary's name (``#chain3_4``) is no ISL token
    cell = isl.Set.universe(isl.Space.set_alloc(dom.get_ctx(), 0, 0)).set_tuple_name(var)
    m = isl.Map.from_domain_and_range(d, cell)
    return isl.UnionMap.from_map(m)


def sched_map(ctx: isl.Context, s: Stmt, depth: int, name: str,
               counters: dict[int, list[str]]) -> isl.UnionMap:
    return isl.UnionMap.read_from_str(ctx, "{ " + _sched(s, depth, name, counters[s.index])
                                      + " }")


def _maps(u: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    u.foreach_map(out.append)
    return out


def _same_iteration(m: isl.Map, n: int) -> bool:
    """Whether the dependence m (source -> sink) keeps the first n loop counters equal."""
    eq = isl.Map.universe(m.get_space())
    for k in range(n):
        eq = eq.equate(isl.dim_type.in_, k, isl.dim_type.out, k)
    return m.is_subset(eq)


def _buffer_plan(var: str, stmts: list[Stmt], deps: isl.UnionMap,
                 domains: dict[int, isl.Set]) -> ScalarPlan:
    common = list(stmts[0].loops)
    for s in stmts[1:]:
        k = 0
        while k < min(len(common), len(s.loops)) and common[k].id == s.loops[k].id:
            k += 1
        common = common[:k]
    n = len(common)
    for m in _maps(deps):
        while n and not _same_iteration(m, n):
            n -= 1
    extents = []
    for d in range(n):
        lo, hi = None, None
        for s in stmts:
            dom = domains[s.index]
            if dom.is_empty():
                continue
            a = dom.dim_min_val(d).to_python()
            b = dom.dim_max_val(d).to_python()
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
        extents.append((lo or 0, hi if hi is not None else 0))
    return ScalarPlan(var, "buffer", loops=tuple(lp.id for lp in common[:n]),
                      extents=tuple(extents))
