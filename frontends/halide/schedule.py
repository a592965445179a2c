"""Halide schedules to middle-end commands.

Per stage: the splits in order (a split whose inner loop Halide vectorizes or unrolls becomes
the middle-end's ``vectorize``/``unroll`` with that factor, which splits the same way; a
``fuse`` is the middle-end's ``fuse``), then
interchanges that put the loops in Halide's final order, then loop tags (parallel, full
unroll, GPU). Per Func: compute_root is the middle-end's default (a loop nest of its own,
producers first), Halide's default, inlining, is ``inline``, and compute_at/store_at are
placed by :mod:`.placement`.

Tail strategies: the middle-end iterates exactly the domain (partial tiles are guarded), so
ShiftInwards, RoundUp, GuardWithIf and the predicated strategies all give Halide's values;
none recomputes points outside the domain. A loop made from RVars is shifted to start at
Halide's min before it is split or fused (:mod:`.rloops`), so that its tiles, and the
order of an update reordered across them, are Halide's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.gpu_blocks import split_factor
from frontends.halide.graph import definitions
from frontends.halide.rvars import (
    commute_reordered,
    impure_loops,
    impure_order,
    rdom_loops,
    stage_model,
    stage_order,
)
from frontends.names import Namer

if TYPE_CHECKING:
    from frontends.halide.rloops import LoopModel
    from frontends.halide.translate import FuncInfo, Translator


OUTERMOST = "__outermost"  # Halide's loop of one iteration outside every stage's loops


@dataclass
class StagePlan:
    """Halide loop names of one stage to the computation's loop names."""

    loops: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # Halide dims, outermost first
    gpu_blocks: set[str] = field(default_factory=set)  # our loops Halide maps to GPU blocks


def plan_func_schedule(fi: FuncInfo, is_output: bool) -> None:
    """Refuse what is not translated; decide inline vs. computed."""
    f = fi.f
    s = f.schedule
    if f.extern_function_name:
        raise UnsupportedHalideFeature(f.name, None, f"define_extern({f.extern_function_name})")
    # memoize, fold_storage, align/bound_storage, trace_*, print, prefetch,
    # store_in(MemoryType) and async are no-ops (see noops.py)
    # ring_buffer() is checked where the Func is placed (ring.py)
    hs = s.hoist_storage_level
    if not hs.is_inlined and not hs.is_root and s.compute_level.is_root:
        raise UnsupportedHalideFeature(f.name, None, "hoist_storage() at a loop of a "
                                       "compute_root Func")
    if is_output and [sd.var for sd in s.storage_dims] not in ([], list(f.args)):
        raise UnsupportedHalideFeature(f.name, None, "reorder_storage() of an output (realize "
                                       "returns the output in Halide's dimension order)")
    for k, d in enumerate(definitions(f)):
        st = d.schedule
        if st.fused_pairs:  # compute_with's other side (fusewith.py), as lowering fills it
            raise UnsupportedHalideFeature(f.name, k, "compute_with() pairs")
        if st.atomic and k == 0:
            raise UnsupportedHalideFeature(f.name, k, "atomic() of a pure definition (only "
                                           "an update is made atomic)")
    cl = s.compute_level
    fi.inline = cl.is_inlined and not is_output and not f.updates


def _fuse(run: Callable[..., None], plan: StagePlan, order: list[str], outer: str,
          inner: str, fused: str, ours: str) -> None:
    """Halide's ``fuse(inner, outer, fused)``: the middle-end's ``fuse`` of ``inner`` placed
    directly inside ``outer`` first (interchanges: only the final loop order, set after
    every split, matters)."""
    if order.index(inner) < order.index(outer):
        run("interchange", plan.loops[outer], plan.loops[inner])
        i, o = order.index(inner), order.index(outer)
        order[i], order[o] = outer, inner
    po, pi = order.index(outer), order.index(inner)
    if pi != po + 1:
        run("interchange", plan.loops[order[po + 1]], plan.loops[inner])
        order[po + 1], order[pi] = inner, order[po + 1]
    run("fuse", plan.loops[outer], plan.loops[inner], ours)
    plan.loops[fused] = ours
    order[po:po + 2] = [fused]


def schedule_stage(tr: Translator, fi: FuncInfo, k: int) -> None:
    """Loop commands of stage ``k`` of ``fi`` (applied to every Tuple element)."""
    f = fi.f
    d = definitions(f)[k]
    st = d.schedule
    comps = fi.stage_comps(k)
    vars_ = fi.stage_vars[k]
    plan = StagePlan({n: v.name for n, v in vars_.items()})
    order = list(vars_)  # Halide names, outermost first
    namer = Namer(set(plan.loops.values()))
    final = {dm.var: dm for dm in st.dims}
    extents: dict[str, int] = {}
    impure = impure_loops(d) if k > 0 else set()
    moved = False  # two impure RDom loops in another relative order (rvars.py)
    model = stage_model(tr, fi, k)  # RDom loops start at Halide's min (rloops.py)

    def run(method: str, *args: Any) -> None:
        for c in comps:
            getattr(c, method)(*args)

    def from_halides_min(loop: str) -> None:
        amount = model.shift(loop)
        if amount:
            run("shift", plan.loops[loop], amount)

    for sp in st.splits:
        if sp.split_type == "RenameVar":
            plan.loops[sp.outer] = plan.loops[sp.old_var]
            order[order.index(sp.old_var)] = sp.outer
            model.rename(sp.old_var, sp.outer)
            continue
        if sp.split_type == "FuseVars":
            before = impure_order(order, impure)
            from_halides_min(sp.outer)
            from_halides_min(sp.inner)
            model.fuse(sp.outer, sp.inner, sp.old_var)
            _fuse(run, plan, order, sp.outer, sp.inner, sp.old_var, namer(sp.old_var))
            moved |= before != impure_order(order, impure, (sp.old_var, sp.outer, sp.inner))
            continue
        if sp.factor is None:
            raise UnsupportedHalideFeature(f.name, k, f"split of {sp.old_var} without factor")
        factor = split_factor(sp, model.loops[sp.old_var].ext, tr._const(sp.factor, f.name))
        from_halides_min(sp.old_var)
        model.split(sp.old_var, sp.outer, sp.inner, factor)
        old = plan.loops[sp.old_var]
        outer, inner = namer(sp.outer), namer(sp.inner)
        plan.loops[sp.outer], plan.loops[sp.inner] = outer, inner
        p = order.index(sp.old_var)
        order[p:p + 1] = [sp.outer, sp.inner]
        extents[sp.inner] = factor
        tag = final[sp.inner].for_type if sp.inner in final else "Serial"
        if tag == "Vectorized":
            run("vectorize", old, factor, outer, inner)
        elif tag == "Unrolled":
            run("unroll", old, factor, outer, inner)
        else:
            run("split", old, factor, outer, inner)
    target = [dm.var for dm in reversed(st.dims) if dm.var != OUTERMOST]
    if sorted(target) != sorted(order):
        raise UnsupportedHalideFeature(f.name, k, f"loops {target} that do not match the "
                                       f"splits' result {order}")
    before = impure_order(order, impure)
    for i, want in enumerate(target):
        if order[i] != want:
            j = order.index(want)
            run("interchange", plan.loops[order[i]], plan.loops[want])
            order[i], order[j] = order[j], order[i]
    if moved or before != impure_order(order, impure):
        commute_reordered(f, k, comps, k in fi.temps, stage_order(tr, fi, k) is not None)
    blocks, threads = [], []
    for dm in reversed(st.dims):
        if dm.var == OUTERMOST:
            continue
        loop = plan.loops[dm.var]
        if dm.for_type == "Parallel":
            run("parallelize", loop)
        elif dm.for_type == "Vectorized" and dm.var not in extents:
            _vectorize_whole(run, plan, model, namer, f.name, k, dm.var)
        elif dm.for_type == "Unrolled" and dm.var not in extents:
            run("unroll", loop)
        elif dm.for_type == "GPUBlock":
            blocks.append(loop)
        elif dm.for_type in ("GPUThread", "GPULane"):
            threads.append(loop)
        elif dm.for_type not in ("Serial", "Vectorized", "Unrolled"):
            raise UnsupportedHalideFeature(f.name, k, f"a {dm.for_type} loop ({dm.var})")
    if blocks or threads:
        if len(blocks) > 3 or len(threads) > 3:
            raise UnsupportedHalideFeature(f.name, k, "more than three GPU block or thread "
                                           "loops")
        run("gpu_loops", tuple(blocks), tuple(threads))
    if st.atomic:
        _atomic(fi, k, comps)
    plan.gpu_blocks = set(blocks)
    plan.order = order
    fi.plans.append(plan)


def _vectorize_whole(run: Callable[..., None], plan: StagePlan, model: LoopModel, namer: Namer,
                     func: str, k: int, var: str) -> None:
    """Halide's ``vectorize(x)`` without a factor: the whole loop is one vector, which
    Halide allows only where the loop's extent is a constant (``bound()``, a split's inner
    loop, a region of a compute_at Func). The build is specialized on its sizes, so the
    stage's loop has a constant extent here: the middle-end's ``vectorize`` by that
    extent, the loop first shifted to start at 0 (the middle-end splits at multiples of
    the factor), leaves one vector of the loop's every point. Over a Func computed at a
    loop, the extent is the Func's whole domain's, so a realization's (smaller) region is
    one or two partial vectors: the same points and values (vectorizing never changes
    a value; the legality check proves a vectorized update's loop carries no
    dependence)."""
    lp = model.loops.get(var)
    if lp is None or lp.ext is None or lp.ext <= 0:
        raise UnsupportedHalideFeature(func, k, f"vectorize({var}) without a factor, where "
                                       "the loop's extent is not known here (give one: "
                                       f"vectorize({var}, 8))")
    loop = plan.loops[var]
    if lp.lo:
        run("shift", loop, -lp.lo)
    outer, inner = namer(f"{var}_vo"), namer(f"{var}_vi")
    run("vectorize", loop, lp.ext, outer, inner)
    plan.loops[var] = inner


_RACING = ("Parallel", "Vectorized", "GPUBlock", "GPUThread", "GPULane")


def _atomic(fi: FuncInfo, k: int, comps: list[Any]) -> None:
    """``update(k).atomic()``: one atomic read-modify-write per instance, so a parallel or
    vector loop over the RDom may update one element from several iterations (a histogram).

    A Tuple update whose elements read only themselves (``{s0[i] + 1, s1[i] + v}``) is made
    atomic element by element: Halide takes a mutex per element group so that the elements
    change together, but no element's update reads another, so every element ends with
    its own reduction over all instances, as under the lock. A Tuple update whose elements
    read each other (argmin: the index follows the value), or that keeps one element as it
    is (``{f[0] + a[r], f[1]}``: no read-modify-write of it), is changed as one, as under
    Halide's mutex: where a loop over the RDom is parallel or vectorized, its computations
    (all new values, then the stores) are one atomic group, each instance one critical
    section under a lock (passes/critical.py); elsewhere no two concurrent instances
    update one element, and atomicity changes nothing (the legality check proves every
    parallel loop)."""
    f = fi.f
    if k not in fi.temps and not _keeps_an_element(f, k):
        for c in comps:
            c.atomic()
        return
    d = definitions(f)[k]
    rvars = rdom_loops(d)  # loops made from RVars run over the RDom too
    racing = [dm for dm in d.schedule.dims if dm.var in rvars and dm.for_type in _RACING]
    if racing:  # one lock around each instance's new values and stores
        for c in comps:
            c.atomic(group=comps[-1].name)


def _keeps_an_element(f: Any, k: int) -> bool:
    """Whether update ``k`` of Tuple Func ``f`` stores some element unchanged (its value
    is that element, read at the update's own index)."""
    d = definitions(f)[k]
    return len(d.values) > 1 and any(
        v.kind == "Call" and v.call_type == "Halide" and v.name == f.name and
        v.value_index == vi and len(v.args) == len(d.args) and
        all(_same(a, b) for a, b in zip(v.args, d.args, strict=True))
        for vi, v in enumerate(d.values))


def _same(a: Any, b: Any) -> bool:
    """Structural equality of two Halide expressions (HExpr compares by identity)."""
    return (a.kind, a.type, a.value, a.name, a.call_type, a.value_index, a.param_name,
            a.image_name, len(a.args)) == (b.kind, b.type, b.value, b.name, b.call_type,
                                           b.value_index, b.param_name, b.image_name,
                                           len(b.args)) and \
        all(_same(x, y) for x, y in zip(a.args, b.args, strict=True))
