"""Updates whose instances may update one element in any order (``comp.commute()``): what
the legality check accepts of a schedule that reorders them.

Layer I prescribes one order of an update's instances, the sequential one, and the exact
check (:mod:`.legality`) compares every read with it: reordering the loops of a reduction
``f[x] += a[r.x, r.y]`` makes each instance read another partial sum than Layer I's, and
is refused. Halide accepts that reorder where it proves the update associative and
commutative, since the sum is then the same (up to float rounding) in any order of its
terms. ``commute()`` says so for one update ``b[i] = b[i] op e`` (the form
:func:`.atomic.atomic_update` checks: then any two instances commute as functions of the
element's value), and the check then asks, for its instances on one element ``e``, only
what makes the final value the same:

- each instance reads ``b[e]`` as written by another instance on ``e``, or as read by the
  first one in Layer I order (the value before the reduction, ``P0``); the scheduled first
  one has no other to read, so it reads ``P0``, and each later one reads the one just
  before it: no other write comes between them, ``P0`` is read once (not again, written
  anew between them) and no instance runs twice (redundant computation is refused);
- a read of ``b[e]`` by another computation that Layer I has read the complete reduction
  (its last instance in Layer I order) must read the last one in the scheduled order
  instead; likewise the final value of an output. A read of a partial result (an earlier
  instance) is refused: the partial sums differ once the order does.

Every other dependence is checked as before, and the parallel check is not relaxed: a
parallel or vector loop that carries these instances still needs ``atomic()``.
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.islutil import maps_of
from .atomic import atomic_update
from .data import Layer3
from .dataflow import Expected, may_write, read_buffer
from .layer1 import Layer1
from .physical import Physical
from .placement import TimeSpace

_WHAT = "an update whose instances commute"


@dataclasses.dataclass
class Relaxed:
    """The expectation the legality check compares with: ``exp`` with every read of a
    commuting update's complete result redirected to its last instance in the scheduled
    order, and each commuting update's read of its own element allowed any source its
    chain may give (``exp.sources[ref]``); ``required[ref]``: the instances of that read
    that must see some write (their element has a value before the reduction)."""

    exp: Expected
    required: dict[int, isl.UnionSet]
    command: dict[int, tuple[str, str]]  # self-read ref -> (computation, commute command)
    inside: dict[int, isl.UnionSet] = dataclasses.field(default_factory=dict)  # ref -> U
    write: dict[int, isl.UnionMap] = dataclasses.field(default_factory=dict)  # U[x] -> B[e]


def commute_comps(ts: TimeSpace) -> dict[str, str]:
    """Computation -> the ``commute()`` command, as written."""
    return {n: s.commute for n, s in ts.comps.items() if s.commute}


def relax(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected, ph: Physical
          ) -> Relaxed | None:
    """The relaxed expectation of the program's commuting updates (None when it has
    none); ScheduleError when one of them is not of the form, runs an instance more than
    once, or another computation reads its partial results."""
    marked = commute_comps(ts)
    if not marked:
        return None
    out = Relaxed(dataclasses.replace(exp, sources=dict(exp.sources), final=dict(exp.final)),
                  {}, {})
    for name in l1.declared:  # in order: a later update's P0 is an earlier one's result
        if name in marked:
            _relax_one(name, marked[name], l1, l3, ts, ph, out)
    return out


def _relax_one(name: str, command: str, l1: Layer1, l3: Layer3, ts: TimeSpace,
               ph: Physical, out: Relaxed) -> None:
    atomic_update(name, l1, l3, command, _WHAT)

    def refuse(why: str, others: tuple[str, ...] = ()) -> ScheduleError:
        return ScheduleError(f"{command}: the instances of {name!r} cannot run in any order: "
                             f"{why}", computations=(name, *others), command=command)

    piped = [d for d, t in ts.comps[name].tags.items() if t == "pipeline"]
    if piped:  # recurrence.py finds a pipeline's recurrences in Layer I's order
        raise refuse(f"its loop {piped[0]!r} is pipelined, and the initiation interval is "
                     "checked against Layer I's order of them")
    if may_write(l1, l3, name):
        raise refuse("its store index is data-dependent (which element an instance "
                     "updates is known only at run time)")
    exp = out.exp
    buf = l3.store[name]
    dom = isl.UnionSet.from_set(l1.comps[name].domain)
    write = isl.UnionMap.from_map(l3.logical[name]).intersect_domain(dom)  # U[x] -> B[e]
    same_elem = write.apply_range(write.reverse())  # U[x] -> U[x'] on one element
    own = [r.ref for r in exp.reads if r.comp == name and read_buffer(l3, r) == buf]
    assert own, f"the form check found {name!r} reading its element"
    want = isl.UnionMap.empty(l1.param_space)
    for ref in own:
        want = want.union(exp.sources.get(ref, isl.UnionMap.empty(l1.param_space)))
    chained = want.intersect_range(dom)  # U[x] -> the instance before it, Layer I's order
    heads = dom.subtract(chained.domain())
    head_of = same_elem.intersect_range(heads)
    if not head_of.is_single_valued():
        raise refuse("in Layer I, another computation writes its element between two of "
                     "them")
    p0 = head_of.apply_range(want)  # U[x] -> what the first on its element reads
    strict = same_elem.subtract(isl.UnionMap.from_map(
        isl.Map.identity(l1.comps[name].domain.get_space().map_from_set())))
    allowed = strict.union(p0)
    for ref in own:
        out.exp.sources[ref] = allowed
        out.required[ref] = p0.domain()
        out.command[ref] = (name, command)
        out.inside[ref] = dom
        out.write[ref] = write
    t_of = isl.UnionMap.empty(l1.param_space)  # U[x] -> T
    for m in maps_of(ph.tinv):
        if m.get_tuple_name(isl.dim_type.out) == name:
            t_of = t_of.union(isl.UnionMap.from_map(m.reverse()))
    if not t_of.is_single_valued():
        raise refuse("the schedule runs some of them more than once (a redundant "
                     "compute_at)")
    last_l = dom.subtract(chained.range())
    last_s = write.reverse().apply_range(t_of).lexmax().apply_range(t_of.reverse())
    to_last = write.intersect_domain(last_l).apply_range(last_s)  # U[xL] -> U[xS]
    inner = dom.subtract(last_l)
    for r in exp.reads:
        if r.ref in own or r.ref not in exp.sources or read_buffer(l3, r) != buf:
            continue
        src = exp.sources[r.ref]
        partial = src.intersect_range(inner)
        if not partial.is_empty():
            raise refuse(f"{r.comp!r} reads a partial result of them ({partial}), which "
                         "depends on their order", (r.comp,))
        exp.sources[r.ref] = _redirect(src, last_l, to_last)
    if buf in exp.final:
        exp.final[buf] = _redirect(exp.final[buf], last_l, to_last)


def _redirect(src: isl.UnionMap, last_l: isl.UnionSet, to_last: isl.UnionMap
              ) -> isl.UnionMap:
    """``src`` (sink -> producer) with the producers in ``last_l`` replaced by their
    images under ``to_last``."""
    hit = src.intersect_range(last_l)
    if hit.is_empty():
        return src
    return src.subtract(hit).union(hit.apply_range(to_last))


def self_mismatch(rx: Relaxed, ref: int, act: isl.UnionMap, want: isl.UnionMap,
                  sink_ts: isl.Set, tinv: isl.UnionMap) -> isl.UnionMap:
    """Where a commuting update's read of its own element sees what it may not
    (``act``, T_sink -> P[y], outside ``want``, the allowed sources), nothing where its
    element has a value before the reduction, or that value again after the first one of
    them (an initialisation run again between them would drop the earlier terms): the
    sinks there -> what they read (or may read)."""
    bad = act.subtract(want)
    sinks = isl.UnionSet.from_set(sink_ts)
    required = tinv.intersect_domain(sinks).intersect_range(rx.required[ref]).domain()
    missing = required.subtract(act.domain())
    if not missing.is_empty():
        bad = bad.union(want.intersect_domain(missing))
    heads = act.subtract_range(rx.inside[ref]).domain()  # T_sink reading the value before
    per_elem = tinv.intersect_domain(heads).apply_range(rx.write[ref]).reverse()
    if not per_elem.is_single_valued():
        again = heads.subtract(per_elem.lexmin().range())
        bad = bad.union(act.intersect_domain(again))
    return bad
