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
from frontends.halide.graph import definitions, walk
from frontends.halide.hir import HDefinition, HExpr, HFunc

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
    ``ordered`` (Layer I already runs it in the scheduled order: :func:`scheduled_order`);
    else (a fused loop split, its pieces apart) it is refused: the middle-end proves one
    element's update commutative, not a pair's."""
    d = definitions(f)[k]
    if not any(n.kind == "Call" and n.call_type == "Halide" and n.name == f.name
               for v in d.values for n in walk(v)):
        return
    if reads_siblings:
        if ordered:
            return
        raise UnsupportedHalideFeature(
            f.name, k, "a reorder of the RVars of a Tuple update whose elements read each "
            "other that the front-end does not follow (a fused loop split and its pieces "
            "reordered apart; Halide proves the Tuple associative, the "
            "middle-end proves one element's update b[i] = b[i] op e commutative): split "
            "before fusing, or split the Tuple into Funcs whose updates read only "
            "themselves")
    for c in comps:
        c.commute()


def scheduled_order(f: HFunc, k: int, names: list[str], mins: list[int],
                    const: Callable[[HExpr], int]) -> list[str] | None:
    """Update ``k`` of ``f`` (iterators ``names``, Halide's, outermost first, from
    ``mins``) as its loops run once scheduled, outermost first: quasi-affine expressions
    with ``{i}`` standing for iterator ``i``; None when its impure RDom loops keep their
    relative order, or when the pieces of a fused loop split again are moved apart (not
    followed here).

    Halide accepts a reorder of a Tuple update's impure RVars only where it proves the
    Tuple associative and commutative (``Stage::reorder``: ``(max(v, e), select(e < v,
    i, r))``, an argmax, is; ``select(e > v, (r, e), (i, v))``, ``hl.argmax``'s form, is
    not), and then runs it in the scheduled order. The middle-end proves only a single
    element's ``b[i] = b[i] op e`` commutative, so the front-end makes that order Layer
    I's (the translator's sequential order): one of the orders Halide proved equivalent,
    and the one Halide runs, ties included (the argmax of equal values is the one
    visited last). The loops are split as the middle-end splits (``o = floor(d / f)``);
    Halide splits from the loop's min, so an RDom loop split from a min that is not a
    multiple of the factor (another grouping of the instances) is refused. A fused loop
    runs its pieces in their order (outer, then inner): its key is theirs, and so is that
    of the two loops of its split where they stay together."""
    d = definitions(f)[k]
    impure = impure_loops(d)
    expr = {n: [f"{{{i}}}"] for i, n in enumerate(names)}  # a fused loop: its pieces'
    leaves = {n: [n] for n in names}  # the unfused loops a loop stands for
    lo = dict(zip(names, mins, strict=True))
    rdom = rdom_loops(d)
    order = list(names)  # the unfused loops, split but not reordered
    glued: dict[str, str] = {}  # a fused loop's split: outer -> inner, kept adjacent
    for sp in d.schedule.splits:
        if sp.split_type == "FuseVars":
            expr[sp.old_var] = expr[sp.outer] + expr[sp.inner]
            leaves[sp.old_var] = leaves[sp.outer] + leaves[sp.inner]
            continue
        if sp.split_type == "RenameVar":
            expr[sp.outer], leaves[sp.outer] = expr[sp.old_var], leaves[sp.old_var]
            lo[sp.outer] = lo.get(sp.old_var, 0)
            if sp.old_var in order:
                order[order.index(sp.old_var)] = sp.outer
                leaves[sp.outer] = [sp.outer]
            continue
        assert sp.factor is not None  # schedule_stage refuses a split without one
        if sp.old_var not in order:  # a fused loop split: its order while kept together
            glued[sp.outer] = sp.inner
            expr[sp.outer], expr[sp.inner] = expr[sp.old_var], []
            leaves[sp.outer], leaves[sp.inner] = leaves[sp.old_var], []
            continue
        fac, old = const(sp.factor), expr[sp.old_var][0]
        if sp.old_var in rdom and lo[sp.old_var] % fac:
            raise UnsupportedHalideFeature(
                f.name, k, f"reorder() of the RVars of a Tuple update whose elements read "
                f"each other, with {sp.old_var} (from {lo[sp.old_var]}) split by {fac}: "
                "Halide's tiles start at the RDom's min (make it a multiple of the factor)")
        expr[sp.outer] = [f"floor(({old})/{fac})"]
        expr[sp.inner] = [f"({old}) - {fac}*floor(({old})/{fac})"]
        leaves[sp.outer], leaves[sp.inner] = [sp.outer], [sp.inner]
        lo[sp.outer], lo[sp.inner] = lo[sp.old_var] // fac, 0
        p = order.index(sp.old_var)
        order[p:p + 1] = [sp.outer, sp.inner]
    target = [dm.var for dm in reversed(d.schedule.dims) if dm.var != "__outermost"]
    if any(o not in target or target.index(i) != target.index(o) + 1
           for o, i in glued.items()):
        return None  # a fused loop's pieces apart: its order is not followed here
    runs = [leaf for n in target for leaf in leaves.get(n, [n])]
    if impure_order(order, impure) == impure_order(runs, impure) or sorted(runs) != sorted(order):
        return None
    return [e for n in target for e in expr[n]]


def stage_order(tr: Translator, fi: FuncInfo, k: int) -> list[str] | None:
    """:func:`scheduled_order` of stage ``k`` of ``fi`` where it is an update whose Tuple
    elements read each other (None elsewhere: the middle-end's ``commute()`` applies)."""
    if k not in fi.temps:
        return None
    st = tr.stage(fi, k)
    return scheduled_order(fi.f, k, st.names, [st.ranges[st.vars[n].name][0]
                                               for n in st.names],
                           lambda e: tr._const(e, fi.f.name))
