"""Halide's ``h.compute_with(g, y)``: the loops of a stage of ``h`` fused with those of a
stage of ``g`` from the outermost down to ``y``; at each iteration of the fused loops, ``g``'s
body runs first, then ``h``'s.

That is the middle-end's ``h.after(g, y)`` (the computations share their loops down to
``y``, ``h`` after ``g`` inside), once both loop nests have their final shape: both Funcs
are computed at one level, as Halide requires (both at root or outputs, or both
``compute_at`` the same loop of one consumer: placed there first, then their own loops
fused inside it), and the fused loops are the same Halide loops in the same order (the
middle-end shares loops by position). Funcs at different levels are refused in one line,
as Halide refuses them. The middle-end's legality check then proves the fusion keeps every
dependence (Halide refuses any dependence between the two; we accept one the fused order
keeps).

The ``LoopAlignStrategy`` (Auto, AlignStart, AlignEnd, NoAlign) is not read: it says
which iterations of two loops over different ranges run together, and since no value of
one stage depends on the other's (Halide refuses such a dependence), every alignment gives
the same values. The middle-end runs the two at the same loop values, each over its own
range (its extra points in a loop of their own).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import definitions

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo, Translator


def _position(order: list[str], var: str) -> int | None:
    hits = [i for i, n in enumerate(order) if n == var or n.endswith("." + var)]
    return hits[0] if len(hits) == 1 else None


def _level(tr: Translator, fi: FuncInfo) -> str:
    """Where ``fi`` is computed: "root" (compute_root, or an output) or a consumer's loop."""
    cl = fi.f.schedule.compute_level
    if not tr.placement.computed_at(fi.f.name):
        return "root"
    stage = f".update({cl.stage_index - 1})" if cl.stage_index > 0 else ""
    return f"{cl.func_name}{stage}.{cl.var_name}"


def fuse_with(tr: Translator, fi: FuncInfo) -> None:
    """Order every stage of ``fi`` that Halide computes with another stage."""
    f = fi.f
    for k, d in enumerate(definitions(f)):
        lvl = d.schedule.fuse_level
        if lvl is None or lvl.is_inlined:
            continue
        gi = tr.info.get(lvl.func_name)
        j = lvl.stage_index
        if gi is None or gi.inline or not 0 <= j < len(gi.plans):
            raise UnsupportedHalideFeature(f.name, k, f"compute_with({lvl.func_name!r} stage "
                                           f"{j}), which is not computed in this pipeline")
        mine_at, theirs_at = _level(tr, fi), _level(tr, gi)
        if mine_at != theirs_at:  # Halide's own refusal: one compute level
            raise UnsupportedHalideFeature(
                f.name, k, f"compute_with({lvl.func_name}, {lvl.var_name}) of Funcs "
                f"computed at different levels ({f.name} at {mine_at}, {lvl.func_name} at "
                f"{theirs_at}); Halide refuses it too: compute both at root or at one loop")
        mine, theirs = fi.plans[k].order, gi.plans[j].order
        p, q = _position(mine, lvl.var_name), _position(theirs, lvl.var_name)
        if p is None or q is None or mine[:p + 1] != theirs[:q + 1]:
            raise UnsupportedHalideFeature(
                f.name, k, f"compute_with({lvl.func_name}, {lvl.var_name}) where the loops "
                f"down to {lvl.var_name!r} differ ({mine} and {theirs})")
        comps = fi.temps.get(k, []) + fi.comps[k]
        anchor = (gi.temps.get(j, []) + gi.comps[j])[-1]
        comps[0].after(anchor, fi.plans[k].loops[mine[p]])
        inner = fi.plans[k].loops[mine[-1]]
        for a, b in itertools.pairwise(comps):  # the stage's elements stay together
            b.after(a, inner)
