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

from typing import Any

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import definitions, walk
from frontends.halide.hir import HDefinition, HFunc


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


def commute_reordered(f: HFunc, k: int, comps: list[Any], reads_siblings: bool) -> None:
    """Update ``k`` of ``f`` has its impure RDom loops reordered, which Halide accepted:
    let its instances commute (``comps``: one per Tuple element), unless it is a constant
    assignment. A Tuple update whose elements read each other (argmin) is refused here:
    the middle-end proves one element's update commutative, not a pair's."""
    d = definitions(f)[k]
    if not any(n.kind == "Call" and n.call_type == "Halide" and n.name == f.name
               for v in d.values for n in walk(v)):
        return
    if reads_siblings:
        raise UnsupportedHalideFeature(
            f.name, k, "reorder() of the RVars of a Tuple update whose elements read each "
            "other (Halide proves the pair associative; the middle-end proves one element's "
            "update b[i] = b[i] op e commutative): keep the RVars in their order, or split "
            "the Tuple into Funcs whose updates read only themselves")
    for c in comps:
        c.commute()
