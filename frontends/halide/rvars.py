"""Halide's reordering of an update's RVars (``f.update(0).reorder(r.y, r.x)``).

Halide's rule (``Stage::reorder``, v21): a loop over the reduction domain that Halide
cannot prove free of hazards (an *impure* RVar, or a loop split or fused from one) may move
inside another such loop only where the update is a constant assignment (it reads neither
the Func nor an RVar) or where Halide proves it associative and commutative
(``prove_associativity``: ``f[x] += e``, ``*``, ``min``, ``max``, ...). Otherwise
``reorder()`` itself raises "can't reorder RVars r$y and r$x because it may change the
meaning of the algorithm", whatever ``allow_race_conditions()`` or ``atomic()`` say. A
*pure* RVar (``f[r.x] = f[r.x] * 2 + ...``: no two of its values touch one element) moves
freely, and so does a pure Var. So a pipeline that reaches the front-end with two impure
RDom loops in another relative order than the definition's is one Halide accepted.

The middle-end keeps Layer I's order of an update's instances unless told that they
commute; the front-end tells it (``commute()``) exactly there, when the update reads itself
(a constant assignment needs nothing: instances that write one element store the same
value). The middle-end checks the form it can prove (``b[i] = b[i] op e``) and that
nothing reads a partial result, and refuses in one line otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.gpu_blocks import split_factor
from frontends.halide.graph import definitions, walk
from frontends.halide.hir import HDefinition, HExpr, HFunc
from frontends.halide.rloops import LoopModel

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo, Translator


def impure_loops(d: HDefinition) -> set[str]:
    """The names (final, split, fused) of the loops over impure RVars of update ``d``:
    the final dims carry Halide's dim type, a split's pieces and a renamed loop have their
    origin's, and both pieces of a fused loop are taken as impure when it is."""
    kind = {dm.var: dm.dim_type for dm in d.schedule.dims}
    for sp in reversed(d.schedule.splits):
        if sp.split_type == "FuseVars":
            kind.setdefault(sp.outer, kind.get(sp.old_var, "PureVar"))
            kind.setdefault(sp.inner, kind.get(sp.old_var, "PureVar"))
        else:  # SplitVar, RenameVar: the pieces have their origin's type
            kind.setdefault(sp.old_var, kind.get(sp.outer, "PureVar"))
    return {n for n, t in kind.items() if t == "ImpureRVar"}


def rdom_loops(d: HDefinition) -> set[str]:
    """Every loop name of update ``d`` made from its RVars (split, fused, renamed)."""
    rvars = {rv.var for rv in d.schedule.rvars}
    for sp in d.schedule.splits:
        if sp.split_type == "FuseVars":
            if sp.inner in rvars or sp.outer in rvars:
                rvars.add(sp.old_var)
        elif sp.old_var in rvars:
            rvars |= {sp.outer, sp.inner} if sp.split_type == "SplitVar" else {sp.outer}
    return rvars


def impure_order(order: list[str], impure: set[str],
                 fused: tuple[str, str, str] | None = None) -> list[str]:
    """The impure loops of ``order`` (outermost first), a fused loop ``(fused, outer,
    inner)`` read as its two pieces, to compare the order before and after a fuse."""
    out: list[str] = []
    for v in order:
        if fused is not None and v == fused[0]:
            out += [p for p in fused[1:] if p in impure]
        elif v in impure:
            out.append(v)
    return out


def commute_reordered(f: HFunc, k: int, comps: list[Any], reads_siblings: bool,
                      ordered: bool) -> None:
    """Update ``k`` of ``f`` has its impure RDom loops reordered, which Halide accepted:
    let its instances commute (``comps``: one per Tuple element), unless it is a constant
    assignment. A Tuple update whose elements read each other (argmax) needs nothing when
    ``ordered`` (Layer I already runs it in the scheduled order: :func:`scheduled_order`,
    which refuses what it cannot follow, in one line); it is never otherwise (a guard:
    the middle-end proves one element's update commutative, not a pair's)."""
    d = definitions(f)[k]
    if not any(n.kind == "Call" and n.call_type == "Halide" and n.name == f.name
               for v in d.values for n in walk(v)):
        return
    if reads_siblings:
        if ordered:
            return
        raise UnsupportedHalideFeature(
            f.name, k, "a reorder of the RVars of a Tuple update whose elements read each "
            "other that the front-end does not follow (Halide proves the Tuple "
            "associative, the middle-end proves one element's update b[i] = b[i] op e "
            "commutative): split the Tuple into Funcs whose updates read only themselves")
    for c in comps:
        c.commute()


def scheduled_order(f: HFunc, k: int, model: LoopModel, const: Callable[[HExpr], int]
                    ) -> list[str] | None:
    """Update ``k`` of ``f`` as its loops run once scheduled, outermost first:
    quasi-affine expressions with ``{i}`` standing for the stage's iterator ``i``
    (``model``: its loops before any split); None when its impure RDom loops keep their
    relative order.

    Halide accepts a reorder of a Tuple update's impure RVars only where it proves the
    Tuple associative and commutative (``Stage::reorder``: ``(max(v, e), select(e < v,
    i, r))``, an argmax, is; ``select(e > v, (r, e), (i, v))``, ``hl.argmax``'s form, is
    not), and then runs it in the scheduled order. The middle-end proves only a single
    element's ``b[i] = b[i] op e`` commutative, so the front-end makes that order Layer
    I's (the translator's sequential order): one of the orders Halide proved equivalent,
    and the one Halide runs, ties included (the argmax of equal values is the one
    visited last). The keys are the middle-end's loop values (:class:`.rloops.LoopModel`:
    an RDom loop is shifted to Halide's min before a split or fuse, so its tiles are
    Halide's), hence an order the middle-end's schedule runs. A fused loop runs its pieces
    in their order (outer, then inner): its key is theirs; split, its pieces' keys are
    those of its value, or, where that is not Halide's (a fused pure Var, an RVar split
    by more than its extent, a ``where`` clause), the fused key kept whole: refused if
    the two pieces are moved apart."""
    d = definitions(f)[k]
    impure = impure_loops(d)
    keys = {n: [lp.val or ""] for n, lp in model.loops.items()}
    leaves = {n: [n] for n in model.loops}  # the unfused loops a loop stands for
    rdom = rdom_loops(d)
    order = list(model.loops)  # the unfused loops, split but not reordered
    glued: dict[str, tuple[str, bool]] = {}  # a fused loop split: outer -> (inner, exact)
    for sp in d.schedule.splits:
        if sp.split_type == "FuseVars":
            model.shift(sp.outer)  # as schedule_stage does
            model.shift(sp.inner)
            model.fuse(sp.outer, sp.inner, sp.old_var)
            keys[sp.old_var] = keys[sp.outer] + keys[sp.inner]
            leaves[sp.old_var] = leaves[sp.outer] + leaves[sp.inner]
            continue
        if sp.split_type == "RenameVar":
            model.rename(sp.old_var, sp.outer)
            keys[sp.outer], leaves[sp.outer] = keys[sp.old_var], leaves[sp.old_var]
            if sp.old_var in order:
                order[order.index(sp.old_var)] = sp.outer
                leaves[sp.outer] = [sp.outer]
            continue
        assert sp.factor is not None  # schedule_stage refuses a split without one
        model.shift(sp.old_var)
        fused = sp.old_var not in order
        model.split(sp.old_var, sp.outer, sp.inner,
                    split_factor(sp, model.loops[sp.old_var].ext, const(sp.factor)))
        keys[sp.outer] = [model.loops[sp.outer].val or ""]
        keys[sp.inner] = [model.loops[sp.inner].val or ""]
        if fused:  # while its pieces stay together, they run in the fused loop's order
            exact = model.loops[sp.outer].val is not None and (
                model.loops[sp.outer].off == 0 or not rdom & set(leaves[sp.old_var]))
            glued[sp.outer] = (sp.inner, exact)
            leaves[sp.outer], leaves[sp.inner] = leaves[sp.old_var], []
            if not exact:
                keys[sp.outer], keys[sp.inner] = keys[sp.old_var], []
            continue
        leaves[sp.outer], leaves[sp.inner] = [sp.outer], [sp.inner]
        p = order.index(sp.old_var)
        order[p:p + 1] = [sp.outer, sp.inner]
    target = [dm.var for dm in reversed(d.schedule.dims) if dm.var != "__outermost"]
    apart = {o: exact for o, (i, exact) in glued.items()
             if o not in target or i not in target or target.index(i) != target.index(o) + 1}
    if not all(apart.values()):
        raise UnsupportedHalideFeature(
            f.name, k, "a fused loop of a Tuple update whose elements read each other, "
            "split and its pieces reordered apart, where the middle-end's tiles of the "
            "fused loop are not Halide's (a fused pure Var, an RVar split by more than "
            "its extent, or an RDom with a where clause): fuse RVars only, or keep the "
            "pieces together")
    if apart:
        return [e for n in target for e in keys[n]]
    runs = [leaf for n in target for leaf in leaves.get(n, [n])]
    if impure_order(order, impure) == impure_order(runs, impure) or sorted(runs) != sorted(order):
        return None
    return [e for n in target for e in keys[n]]


def stage_model(tr: Translator, fi: FuncInfo, k: int) -> LoopModel:
    """The loops of stage ``k`` of ``fi`` before its splits (:class:`.rloops.LoopModel`)."""
    d = definitions(fi.f)[k]
    st = tr.stage(fi, k)
    p = d.predicate
    bounded = p is None or (p.kind == "UIntImm" and p.value == 1)
    rdom = {rv.var for rv in d.schedule.rvars} if k > 0 else set()
    return LoopModel(st.names, [st.ranges[st.vars[n].name] for n in st.names], rdom, bounded)


def stage_order(tr: Translator, fi: FuncInfo, k: int) -> list[str] | None:
    """:func:`scheduled_order` of stage ``k`` of ``fi`` where it is an update whose Tuple
    elements read each other (None elsewhere: the middle-end's ``commute()`` applies)."""
    if k not in fi.temps:
        return None
    return scheduled_order(fi.f, k, stage_model(tr, fi, k),
                           lambda e: tr._const(e, fi.f.name))
