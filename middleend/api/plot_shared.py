"""The shared time-space panel of a picture (``f.plot(..., together=True)``, ``middleend
plot --together``): the instances of all drawn computations in one Layer II picture, with
the flow dependences *between* computations as arrows.

The schedules of all computations map into one time-space, so the panel draws each
computation's instances on the axes its own Layer II panel uses (the drawn dims, a split or
tiled dim recombined), which puts a producer's element beside the consumer's instances
that read it. A computation placed by ``compute_at`` shares its consumer's outer loops
(Layer II keeps them as dims of its instances): when the drawn computations share the
outer loop of an axis of the one they are computed at (a tile loop ``i0``, or the loop
``i`` itself), the blocks of that loop are drawn apart, each block holding the instances
run inside one of its iterations. A producer's instances computed again for the next tile
(the halo of a blur) then appear once per tile, which is what compute_at costs; drawn on
the plain dims they would fall on one another and the recomputation could not be seen.

Arrows come from the same exact relation as those of the per-computation panels
(``Expected.sources``, what the legality check compares against); with recomputation the
consumer's instance sees the last instance of the producer that runs before it, and the
dependence is broken (purple) when none does, or when a parallel loop carries it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import islpy as isl

from ..driver.lowering import Lowered
from ..ir import commands as cmd
from ..passes.legality import PARALLEL_TAGS
from .plot_data import (
    XY,
    Axis,
    PlotError,
    Pt,
    _axis_fn,
    _axis_label,
    _choose_axes,
    _dims,
    _Instances,
    _renamed,
    _tag,
    _violates,
    axes_of,
    chosen,
    fix_params,
    instances,
    pairs,
    show_params,
    splits_of,
)

Link = tuple[str, str]  # (source computation, sink computation)


@dataclass
class SharedPanel:
    """All drawn computations in one time-space: per computation its distinct drawn
    positions, how many instances it runs (more than its domain holds when compute_at
    recomputes it), the tile boxes, and the flow arrows per (source, sink) pair of
    computations (``violated``: those the schedule breaks, a subset of ``arrows``)."""

    title: str
    xlabel: str
    ylabel: str
    comps: list[str]
    points: dict[str, list[XY]] = field(default_factory=dict)
    # drawn positions holding only instances computed again (not the first time)
    again: dict[str, list[XY]] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    domain: dict[str, int] = field(default_factory=dict)
    tiles: list[tuple[int, int, int, int]] = field(default_factory=list)
    tile_names: list[str] = field(default_factory=list)  # the tile loops' values, per tile
    arrows: dict[Link, list[tuple[XY, XY]]] = field(default_factory=dict)
    violated: dict[Link, list[tuple[XY, XY]]] = field(default_factory=dict)
    # storage dependences a parallel loop carries: (kind, first, second) -> arrows, kind
    # "anti" (a read, then a write of the element) or "output" (two writes)
    storage: dict[tuple[str, str, str], list[tuple[XY, XY]]] = field(default_factory=dict)
    apart: dict[str, str] = field(default_factory=dict)  # "x"/"y" -> loop drawn apart
    # on an axis drawn apart: (drawn position, the value it stands for), for tick labels
    ticks: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def between(self, source: str, sink: str) -> int:
        """Arrows from ``source``'s instances to ``sink``'s."""
        return len(self.arrows.get((source, sink), []))

    def broken(self, source: str, sink: str) -> int:
        return len(self.violated.get((source, sink), []))


def _hosts(lw: Lowered, c: str) -> list[str]:
    """The computations ``c`` is computed at, innermost first (a chain of compute_at)."""
    out: list[str] = []
    h = lw.ts.comps[c].outer_of
    while h is not None and h not in out:
        out.append(h)
        h = lw.ts.comps[h].outer_of
    return out


@dataclass
class _Comp:
    """One computation as the shared panel draws it: instances, axes (outer first)."""

    name: str
    inst: _Instances
    axes: list[Axis]
    fns: list[Callable[[Pt], int]]  # the value on each axis of a time-space point
    parallel: set[int]  # time-space positions of its parallel loops


class _Layout:
    """Where a time-space point of a computation is drawn: its value on each axis, plus,
    on an axis whose blocks are drawn apart, ``gap`` times the rank of its block."""

    def __init__(self, comps: dict[str, _Comp], ref: str, lw: Lowered) -> None:
        self.comps = comps
        self.block: dict[int, int] = {}  # axis (0: y, 1: x) -> time-space position
        self.rank: dict[int, dict[int, int]] = {}
        self.gap: dict[int, int] = {}
        r = comps[ref]
        for k in (0, 1) if len(r.axes) == 2 else (1,):
            a = axis(r, k)
            if not a.loops:
                continue
            q = r.inst.position(a.loops[0])
            shared = [c for c in comps if c != ref and ref in _hosts(lw, c)
                      and q < 2 * lw.ts.comps[c].n_outer]
            if shared and len(shared) == len(comps) - 1:
                self.block[k] = q
        for k, q in self.block.items():
            span: dict[int, list[int]] = {}
            for c in comps.values():
                for ts in c.inst.ts_of.values():
                    for t in ts:
                        v = self.value(c, k, t)
                        lo_hi = span.setdefault(t[q], [v, v])
                        lo_hi[:] = [min(lo_hi[0], v), max(lo_hi[1], v)]
            keys = sorted(span)
            self.rank[k] = {b: n for n, b in enumerate(keys)}
            self.gap[k] = max([0] + [span[a][1] - span[b][0] + 2
                                     for a, b in zip(keys, keys[1:], strict=False)])

    @staticmethod
    def value(c: _Comp, k: int, t: Pt) -> int:
        """``t``'s value on axis ``k`` (0: y, the outer; 1: x, the inner; a computation
        drawn on one axis has it on x, and 0 on y)."""
        if len(c.fns) < 2:
            return c.fns[0](t) if k == 1 else 0
        return c.fns[k](t)

    def at(self, c: str, t: Pt) -> XY:
        x, y = (self.value(self.comps[c], k, t) + (
            self.gap[k] * self.rank[k][t[self.block[k]]] if k in self.block else 0)
            for k in (1, 0))
        return (x, y)


def axis(c: _Comp, k: int) -> Axis:
    """Axis ``k`` of ``c`` (0: y, 1: x; a single axis is x)."""
    return c.axes[min(k, len(c.axes) - 1)]


def collect_shared(lw: Lowered, commands: Sequence[cmd.Command], params: Mapping[str, int],
                   computations: Sequence[str] | None = None,
                   dims: Sequence[str] | None = None, cap: int = 4096) -> SharedPanel:
    """The shared panel of the computations asked for (default: all)."""
    fixed = fix_params(lw, params)
    at = show_params(params)
    names = chosen(lw, computations)
    comps: dict[str, _Comp] = {}
    for c in names:
        inst = instances(lw, c, fixed, at, cap)
        d = _dims(c, lw.l1.comps[c].vars, dims)
        ax = _choose_axes(c, axes_of(inst.loops, splits_of(commands, c)),
                          [_renamed(commands, c, v) for v in d], None)
        tags = {lp: _tag(lw, c, k) for k, lp in enumerate(inst.loops)}
        par = {2 * k + 1 for k, lp in enumerate(inst.loops)
               if tags[lp].split(" ")[0] in PARALLEL_TAGS}
        fns = [_axis_fn(inst, a) if a.loops else (lambda t: 0) for a in ax]
        comps[c] = _Comp(c, inst, ax, fns, par)
    order = {n: k for k, n in enumerate(lw.ts.order)}
    ref = max(names, key=lambda c: (sum(c in _hosts(lw, o) for o in names), order[c]))
    lay = _Layout(comps, ref, lw)
    r = comps[ref]
    tags = {lp: _tag(lw, ref, k) for k, lp in enumerate(r.inst.loops)}

    def label(k: int) -> str:
        if k == 0 and len(r.axes) < 2:
            return ""
        a = axis(r, k)
        text = _axis_label(a, tags)
        if k in lay.block:
            text += f"   (blocks of {a.loops[0]} drawn apart)"
        return text

    sp = SharedPanel(f"Layer II: {', '.join(names)} in one time-space", label(1), label(0),
                     names)
    sp.apart = {"yx"[k]: axis(r, k).loops[0] for k in lay.block}
    _place(sp, comps, lay, ref, lw)
    _links(lw, sp, comps, lay, fixed, at, cap)
    _storage(lw, sp, comps, lay, fixed, cap)
    _overwritten(lw, sp, comps, lay, fixed, cap)
    return sp


def _place(sp: SharedPanel, comps: dict[str, _Comp], lay: _Layout, ref: str,
           lw: Lowered) -> None:
    """Points, execution order, tile boxes and the notes on recomputation."""
    r = comps[ref]
    tile_loops = [lp for a in r.axes for lp in a.tiles]
    tile_pos = [r.inst.position(lp) for lp in tile_loops]
    boxes: dict[tuple[object, ...], list[int]] = {}
    names: dict[tuple[object, ...], str] = {}  # a tile -> "i0=1 j0=0"
    for c, comp in comps.items():
        seen: dict[XY, bool] = {}  # position -> whether only recomputations are there
        shares = c == ref or (ref in _hosts(lw, c) and all(
            q < 2 * lw.ts.comps[c].n_outer for q in tile_pos))
        own_loops = [lp for a in comp.axes for lp in a.tiles]
        own = [comp.inst.position(lp) for lp in own_loops]
        first = {min(ts) for ts in comp.inst.ts_of.values()}
        for t in sorted(t for ts in comp.inst.ts_of.values() for t in ts):
            xy = lay.at(c, t)
            seen[xy] = seen.get(xy, True) and t not in first
            key: tuple[object, ...] | None = (
                (ref, *(t[q] for q in tile_pos)) if shares and tile_pos
                else (c, *(t[q] for q in own)) if own else None)
            if key is not None:
                if key not in names:
                    lps = tile_loops if key[0] == ref and shares else own_loops
                    names[key] = " ".join(f"{lp}={v}" for lp, v in zip(lps, key[1:],
                                                                        strict=True))
                b = boxes.setdefault(key, [xy[0], xy[0], xy[1], xy[1]])
                b[:] = [min(b[0], xy[0]), max(b[1], xy[0]), min(b[2], xy[1]),
                        max(b[3], xy[1])]
        sp.points[c] = list(seen)
        sp.again[c] = [xy for xy, again in seen.items() if again]
        sp.domain[c] = len(comp.inst.dom)
        sp.runs[c] = sum(len(ts) for ts in comp.inst.ts_of.values())
        more = sp.runs[c] - len(comp.inst.ts_of)
        hosts = _hosts(lw, c)
        sp.notes.append(
            f"{c}: {sp.runs[c]} instance{'s' * (sp.runs[c] != 1)} run"
            + (f", {more} of them recomputations (computed at {hosts[0]})" if more > 0
               else f" (computed at {hosts[0]})" if hosts else ""))
    sp.tiles = [(b[0], b[1], b[2], b[3]) for b in boxes.values()]
    sp.tile_names = [names[k] for k in boxes]
    for k in lay.block:
        sp.ticks["yx"[k]] = sorted({(lay.at(c, t)[1 - k], lay.value(comp, k, t))
                                    for c, comp in comps.items()
                                    for ts in comp.inst.ts_of.values() for t in ts})
    roots = [c for c in lw.ts.order if c in comps and not _hosts(lw, c)]
    inside = [f"{c} inside {h[0]}'s loop {lw.ts.comps[c].ext_dims[lw.ts.comps[c].n_outer - 1]}"
              for c in lw.ts.order if c in comps and (h := _hosts(lw, c))
              and lw.ts.comps[c].n_outer]
    sp.notes.append("order: " + " then ".join(roots) + (f"; {', '.join(inside)}"
                                                       if inside else ""))


def _links(lw: Lowered, sp: SharedPanel, comps: dict[str, _Comp], lay: _Layout,
           fixed: isl.Set, at: str, cap: int) -> None:
    """Flow arrows between the drawn computations (their own dependences included), each
    from the producer's instance the consumer's instance sees; broken ones kept apart."""
    from ..ir.islutil import maps_of

    found: dict[Link, dict[tuple[XY, XY], bool]] = {}
    other: dict[str, int] = {}
    for r in lw.exp.reads:
        src = lw.exp.sources.get(r.ref)
        if r.comp not in comps or src is None:
            continue
        c = comps[r.comp]
        for m in maps_of(src):
            p = m.get_tuple_name(isl.dim_type.out)
            prs = pairs(m.intersect_params(fixed), f"the flow dependences {p} -> {r.comp} "
                        f"at {at}", 8 * cap)
            if p not in comps:
                other[p] = other.get(p, 0) + len(prs)
                continue
            arrows = found.setdefault((p, r.comp), {})
            for sink, source in prs:
                srcs = comps[p].inst.ts_of.get(source, [])
                for tk in c.inst.ts_of.get(sink, []):
                    good = [ts for ts in srcs if not _violates(ts, tk, c.parallel)]
                    for ts in ([max(good)] if good else srcs):
                        e = (lay.at(p, ts), lay.at(r.comp, tk))
                        arrows[e] = arrows.get(e, False) or not good
    for link, arrows in found.items():
        drawn = [e for e in arrows if e[0] != e[1] or link[0] != link[1]]
        if drawn:
            sp.arrows[link] = drawn
        bad = [e for e in drawn if arrows[e]]
        if bad:
            sp.violated[link] = bad
    for p, n in other.items():
        sp.notes.append(f"+ {n} flow dependence{'s' * (n != 1)} from {p} (not drawn)")


def _storage(lw: Lowered, sp: SharedPanel, comps: dict[str, _Comp], lay: _Layout,
             fixed: isl.Set, cap: int) -> None:
    """The anti and output dependences that a parallel (vector, GPU, distributed) loop
    carries, from the relations the legality check intersects with that loop: two
    iterations touching one element, at least one writing, have no order."""
    from ..ir.islutil import maps_of
    from ..passes.legality import memory_dependences, tagged_loops

    loops = list(tagged_loops(lw.l1, lw.ts))
    if not loops:
        return
    kinds = memory_dependences(lw.l1, lw.ph)
    owner = {t: c for c, comp in comps.items() for ts in comp.inst.ts_of.values()
             for t in ts}
    found: dict[tuple[str, str, str], dict[tuple[XY, XY], None]] = {}
    where: dict[str, set[str]] = {}
    for _, loop, tag, carried in loops:
        for kind in ("anti", "output"):
            for m in maps_of(kinds[kind].intersect(carried).intersect_params(fixed)):
                for a, b in _some_pairs(sp, m, f"{kind} dependences carried by {loop!r}",
                                        8 * cap):
                    ca, cb = owner.get(a), owner.get(b)
                    if ca is None or cb is None:
                        continue  # an operation or a computation not drawn
                    found.setdefault((kind, ca, cb), {})[(lay.at(ca, a), lay.at(cb, b))] = None
                    where.setdefault(kind, set()).add(f"{loop} ({tag})")
    sp.storage.update({k: list(v) for k, v in found.items()})
    for kind, lps in where.items():
        n = sum(len(v) for (k, _, _), v in found.items() if k == kind)
        sp.notes.append(f"{n} {kind} dependence arrow{'s' * (n != 1)} carried by loop "
                        f"{', '.join(sorted(lps))}: its iterations share storage")


def _overwritten(lw: Lowered, sp: SharedPanel, comps: dict[str, _Comp], lay: _Layout,
                 fixed: isl.Set, cap: int) -> None:
    """Anti and output dependences that the order breaks, from what the legality check
    compares (:func:`~middleend.passes.legality.misreads`): a read that would see the value
    of another write than Layer I's, though Layer I's producer ran before it, was
    overwritten in between (an anti dependence from the read to that write, broken); an
    output element whose last write is not Layer I's (an output dependence from the write
    that came last to the one that should have, broken). A read whose producer runs after
    it is the purple flow arrow already."""
    from ..ir.islutil import maps_of
    from ..passes.legality import misreads

    owner = {t: c for c, comp in comps.items() for ts in comp.inst.ts_of.values()
             for t in ts}
    found: dict[tuple[str, str, str], dict[tuple[XY, XY], None]] = {}
    for what, got, want in misreads(lw.l1, lw.l3, lw.ts, lw.exp, lw.ph, lw.l4):
        prescribed: dict[Pt, list[tuple[str, Pt]]] = {}
        for m in maps_of(want.intersect_params(fixed)):
            p = m.get_tuple_name(isl.dim_type.out)
            for k, y in _some_pairs(sp, m, "producers prescribed to broken reads", 8 * cap):
                prescribed.setdefault(k, []).append((p, y))
        for m in maps_of(got.intersect_params(fixed)):
            for k, src in _some_pairs(sp, m, "producers broken reads see", 8 * cap):
                cs = owner.get(src)
                for p, y in prescribed.get(k, []):
                    runs = comps[p].inst.ts_of.get(y, []) if p in comps else []
                    if cs is None or not runs:
                        continue
                    if what == "read" and owner.get(k) and any(t < k for t in runs):
                        e = (lay.at(owner[k], k), lay.at(cs, src))
                        found.setdefault(("anti", owner[k], cs), {})[e] = None
                    elif what == "final":
                        e = (lay.at(cs, src), lay.at(p, max(runs)))
                        found.setdefault(("output", cs, p), {})[e] = None
    for key, arrows in found.items():
        sp.storage.setdefault(key, []).extend(arrows)
    for kind in ("anti", "output"):
        n = sum(len(v) for (k, _, _), v in found.items() if k == kind)
        if n:
            sp.notes.append(f"{n} {kind} dependence arrow{'s' * (n != 1)} broken by the "
                            "order (a value overwritten before its last use, or the wrong "
                            "last write)")


def _some_pairs(sp: SharedPanel, m: isl.Map, what: str, cap: int) -> list[tuple[Pt, Pt]]:
    """The pairs of a relation drawn on top of the picture (storage dependences), or none,
    with a note, when there are too many to enumerate: the rest of the picture stands."""
    try:
        return pairs(m, what, cap)
    except PlotError:
        sp.notes.append(f"{what}: too many to draw (more than {cap} pairs)")
        return []
