"""What a picture of the layers shows, as plain numbers, before anything is drawn.

For one computation: the integer points of its Layer I iteration domain projected on two of
its dimensions, the same instances placed by the schedule in the Layer II time-space
(projected on two *axes*: a loop, or the loops a split or a tile made of one dimension,
recombined as ``factor * outer + inner`` so that a tiled square still looks like a square,
with its tiles outlined), and the flow dependences between its instances as arrows.

Everything comes from enumerating the exact ISL sets of the lowering (domains, the
time-space maps, and the flow relation ``Expected.sources`` that the legality check
compares against), with the parameters fixed to the values the user gives. Enumeration is
bounded: a set whose bounding box is too large is refused before ISL scans it, and one
with more points than the cap after the scan, so a picture never hangs or exhausts memory.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import islpy as isl

from ..driver.lowering import Lowered
from ..ir import commands as cmd
from ..ir.errors import MiddleEndError, quoted
from ..passes.legality import PARALLEL_TAGS

Pt = tuple[int, ...]
XY = tuple[int, int]
Coords = tuple[Callable[[Pt], int], Callable[[Pt], int]]  # a point -> its (x, y)

# how much larger than the point cap a bounding box may be before it is refused unscanned
# (skewed and triangular sets fill part of their box; a box far larger is not drawable)
BOX_SLACK = 64


class PlotError(MiddleEndError):
    """A picture cannot be drawn as asked (unknown computation or dimension, a parameter
    without a value, too many points, an unsupported file type)."""


@dataclass(frozen=True)
class Axis:
    """One axis of the Layer II picture: the loops it recombines, outermost first, with
    their weights (``value = sum(w * loop)``), and the loops whose values name a tile."""

    name: str
    loops: tuple[str, ...]
    weights: tuple[int, ...]
    tiles: tuple[str, ...] = ()

    def formula(self) -> str:
        if len(self.loops) <= 1:
            return self.name
        terms = [lp if w == 1 else f"{w}·{lp}" for lp, w in zip(self.loops, self.weights,
                                                                 strict=True)]
        return f"{self.name} = " + " + ".join(terms)


@dataclass
class Panel:
    """One drawn panel: distinct projected points (in a stable order), the tile index of
    each point (-1: none), tile boxes, arrows (source -> sink) and the execution order."""

    comp: str
    layer: str  # "I" or "II"
    title: str
    xlabel: str
    ylabel: str
    points: list[XY] = field(default_factory=list)
    tile_of: list[int] = field(default_factory=list)
    tiles: list[tuple[int, int, int, int]] = field(default_factory=list)  # x0, x1, y0, y1
    arrows: list[tuple[XY, XY]] = field(default_factory=list)
    violated: list[tuple[XY, XY]] = field(default_factory=list)  # a subset of ``arrows``
    order: list[XY] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def fix_params(lw: Lowered, params: Mapping[str, int]) -> isl.Set:
    """The parameter set ``{ : N = 8 and ... }``; every parameter needs a value."""
    names = list(lw.l1.params)
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise PlotError(f"function {lw.fn_name!r} has no parameter {quoted(unknown[0])} "
                        f"(its parameters: {', '.join(names) or 'none'})")
    missing = [n for n in names if n not in params]
    if missing:
        # one message for both ways in: f.plot's params= and middleend plot's --params
        eg = ", ".join(f"{n!r}: 8" for n in missing)
        flag = ",".join(f"{n}=8" for n in missing)
        raise PlotError(f"function {lw.fn_name!r}: give every parameter a value to draw its "
                        f"points; missing {', '.join(missing)} (e.g. params={{{eg}}}, or "
                        f"--params {flag} on the command line)")
    sp = lw.l1.param_space
    fixed = isl.Set.universe(sp)
    for n, v in params.items():
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise PlotError(f"parameter {n!r} must be an int, got {quoted(v)}")
        fixed = fixed.fix_val(isl.dim_type.param, sp.find_dim_by_name(isl.dim_type.param, n),
                              isl.Val(str(int(v)), lw.l1.ctx))
    if fixed.intersect(lw.l1.context).is_empty():
        raise PlotError(f"function {lw.fn_name!r}: {show_params(params)} violates the "
                        f"parameters' assumptions {lw.l1.context}")
    return fixed


def show_params(params: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "no parameters"


def _check_box(s: isl.Set, what: str, cap: int) -> None:
    """Refuse, before ISL scans it, a set whose bounding box is far beyond the cap."""
    vol = 1
    for k in range(s.dim(isl.dim_type.set)):
        lo, hi = s.dim_min_val(k), s.dim_max_val(k)
        if not (lo.is_int() and hi.is_int()):
            raise PlotError(f"{what} is unbounded with these parameter values")
        vol *= hi.to_python() - lo.to_python() + 1
        if vol > BOX_SLACK * cap:
            raise PlotError(f"{what} spans too many points to draw (its bounding box holds "
                            f"more than {BOX_SLACK * cap}; the cap is {cap}): give smaller "
                            "parameter values or raise max_points (--max-points)")


def points(s: isl.Set, what: str, cap: int, boxed: bool = True) -> list[Pt]:
    """The integer points of a bounded set with fixed parameters, refused past ``cap``
    (``boxed``: also refused unscanned when its bounding box is far larger)."""
    if s.is_empty():
        return []
    if boxed:
        _check_box(s, what, cap)
    n = s.dim(isl.dim_type.set)
    out: list[Pt] = []

    lost: list[int] = []

    def visit(p: isl.Point) -> None:
        try:
            out.append(tuple(p.get_coordinate_val(isl.dim_type.set, k).to_python()
                             for k in range(n)))
        except (TypeError, isl.Error):  # ISL went past its operation bound mid-scan
            lost.append(1)

    s.foreach_point(visit)
    if lost:  # (raised here, not in the callback, whose exceptions islpy only prints)
        raise isl.Error("maximal number of operations exceeded while enumerating points")
    if len(out) > cap:
        raise PlotError(f"{what} has {len(out)} points, more than the cap of {cap}: give "
                        "smaller parameter values or raise max_points (--max-points)")
    return sorted(out)


def pairs(m: isl.Map, what: str, cap: int) -> list[tuple[Pt, Pt]]:
    """The (source, sink) integer pairs of a map with fixed parameters. The box of the
    pairs is the product of those of both ends (far larger than a function's graph), so
    each end's box is checked instead, and the pairs counted after the scan."""
    if m.is_empty():
        return []
    _check_box(m.domain(), what, cap)
    _check_box(m.range(), what, cap)
    n_in = m.dim(isl.dim_type.in_)
    return [(p[:n_in], p[n_in:]) for p in points(m.wrap(), what, cap, boxed=False)]


Split = tuple[str, int, str, str, bool]  # dim, factor, outer, inner, outlined as tiles


def splits_of(commands: Sequence[cmd.Command], comp: str) -> list[Split]:
    """``(dim, factor, outer, inner, tiles)`` of every split the commands made of
    ``comp``'s loops, in the order written: those of split and tile outline tiles, those
    of vectorize and unroll by a factor do not (their loop is marked by its tag)."""
    out: list[Split] = []
    for c in commands:
        if getattr(c, "comp", None) != comp:
            continue
        if isinstance(c, cmd.Split):
            out.append((c.dim, c.factor, c.outer, c.inner, True))
        elif isinstance(c, cmd.Vectorize) or (isinstance(c, cmd.Unroll) and c.factor):
            out.append((c.dim, c.factor, c.outer, c.inner, False))  # type: ignore[misc]
        elif isinstance(c, cmd.Tile):
            out += [(*x, True) for x in zip(c.dims, c.sizes, c.outers, c.inners,
                                             strict=True)]
        elif isinstance(c, cmd.TileGpu):
            out += [(c.i, c.t1, c.i0, c.i1, True), (c.j, c.t2, c.j0, c.j1, True)]
    return out


def axes_of(loops: Sequence[str], splits: Sequence[Split]) -> list[Axis]:
    """The loops recombined into axes: the last split first, so that a split of a split
    nests; a split whose loops a later command renamed (skew) stays two axes. Ordered by
    their innermost loop."""
    axes = {lp: Axis(lp, (lp,), (1,)) for lp in loops}
    for dim, f, outer, inner, tiled in reversed(splits):
        o, i = axes.get(outer), axes.get(inner)
        if o is None or i is None or dim in axes:
            continue
        del axes[outer], axes[inner]
        axes[dim] = Axis(dim, o.loops + i.loops,
                         tuple(w * f for w in o.weights) + i.weights,
                         o.loops if tiled else o.tiles + i.tiles)
    pos = {lp: k for k, lp in enumerate(loops)}
    return sorted(axes.values(), key=lambda a: max(pos[lp] for lp in a.loops))


def project(pts: Sequence[Pt], fns: Coords) -> list[XY]:
    """Distinct 2-D images of ``pts`` in first-seen order (``fns``: two coordinate maps)."""
    seen: dict[XY, None] = {}
    for p in pts:
        seen.setdefault(_xy(p, fns), None)
    return list(seen)


def _xy(p: Pt, fns: Coords) -> XY:
    return (fns[0](p), fns[1](p))


@dataclass
class _Instances:
    """A computation's instances: its domain points and, per point, its time-space
    points (several when compute_at recomputes it), with the loop positions."""

    dom: list[Pt]
    ts_of: dict[Pt, list[Pt]]
    loops: list[str]

    def position(self, loop: str) -> int:
        """The time-space position of ``loop``: its own when compute_at gave it an outer
        loop of the same name (``i`` of its consumer, then its own ``i``)."""
        return 2 * (len(self.loops) - 1 - self.loops[::-1].index(loop)) + 1

    def loop_value(self, t: Pt, loop: str) -> int:
        return t[self.position(loop)]


def instances(lw: Lowered, c: str, fixed: isl.Set, at: str, cap: int) -> _Instances:
    """``c``'s domain points and the time-space points the schedule runs each at."""
    s = lw.ts.comps[c]
    dom = points(lw.l1.comps[c].domain.intersect_params(fixed), f"the domain of {c!r} at {at}",
                 cap)
    assert s.proj is not None and s.full is not None
    sched = s.proj.reverse().apply_range(s.full).intersect_params(fixed)
    inst = _Instances(dom, {}, list(s.ext_dims))
    for x, t in pairs(sched, f"the instances of {c!r} at {at}", 8 * cap):
        inst.ts_of.setdefault(x, []).append(t)
    return inst


def collect(lw: Lowered, commands: Sequence[cmd.Command], params: Mapping[str, int],
            computations: Sequence[str] | None = None, dims: Sequence[str] | None = None,
            loops: Sequence[str] | None = None, cap: int = 4096
            ) -> list[tuple[Panel, Panel]]:
    """The Layer I and Layer II panels of each computation asked for (default: all, in
    declaration order)."""
    fixed = fix_params(lw, params)
    return [_panels(lw, commands, params, fixed, n, dims, loops, cap)
            for n in chosen(lw, computations)]


def chosen(lw: Lowered, computations: Sequence[str] | None) -> list[str]:
    """The computations asked for (default: all, in declaration order), each one known."""
    names = list(lw.l1.declared)
    out = list(computations) if computations is not None else names
    for n in out:
        if n not in lw.l1.comps or n not in lw.ts.comps:
            why = " (it is inlined)" if n in lw.l1.inlined else ""
            raise PlotError(f"function {lw.fn_name!r} has no computation {quoted(n)} to "
                            f"draw{why}; its computations: {', '.join(names)}")
    return out


def _panels(lw: Lowered, commands: Sequence[cmd.Command], params: Mapping[str, int],
            fixed: isl.Set, c: str, dims: Sequence[str] | None,
            loops: Sequence[str] | None, cap: int) -> tuple[Panel, Panel]:
    comp = lw.l1.comps[c]
    at = show_params(params)
    inst = instances(lw, c, fixed, at, cap)
    dom = inst.dom
    # Layer I: x is the inner of the two dims, y the outer
    d = _dims(c, comp.vars, dims)
    idx = [comp.vars.index(v) for v in d if v in comp.vars]  # none for a scalar
    f1: Coords = ((lambda p: p[idx[-1]]) if idx else (lambda p: 0),
                  (lambda p: p[idx[0]]) if len(idx) == 2 else (lambda p: 0))
    # Layer II: the two axes (the inner on x)
    axes = axes_of(inst.loops, splits_of(commands, c))
    ax = _choose_axes(c, axes, [_renamed(commands, c, v) for v in d], loops)
    tags = {lp: _tag(lw, c, k) for k, lp in enumerate(inst.loops)}
    f2: Coords = (_axis_fn(inst, ax[-1]),
                  _axis_fn(inst, ax[0]) if len(ax) == 2 else (lambda t: 0))
    p1 = Panel(c, "I", f"{c}: Layer I, iteration domain", d[-1],
               d[0] if len(d) == 2 else "", project(dom, f1))
    p1.notes.append(_short(str(comp.domain)))
    ordered = sorted(t for ts in inst.ts_of.values() for t in ts)  # execution order
    p2 = Panel(c, "II", f"{c}: Layer II, time-space after the schedule",
               _axis_label(ax[-1], tags), _axis_label(ax[0], tags) if len(ax) == 2 else "",
               project(ordered, f2))
    p2.order = list(p2.points)
    _tiles(inst, ax, ordered, f2, p1, p2, f1)
    sched_cmds = [_brief(x) for x in commands if getattr(x, "comp", None) == c
                  and isinstance(x, cmd.SCHEDULE_COMMANDS)]
    p2.notes.append("schedule: " + ("; ".join(sched_cmds) if sched_cmds else "identity"))
    p2.notes += [f"{lp}: {tg}" for lp, tg in tags.items() if tg and not any(
        lp in a.loops for a in ax)]
    parallel = {2 * k + 1 for k, lp in enumerate(inst.loops)
                if tags[lp].split(" ")[0] in PARALLEL_TAGS}
    _deps(lw, c, fixed, at, inst, (f1, f2), (p1, p2), parallel, cap)
    return p1, p2


def _dims(c: str, vars_: list[str], dims: Sequence[str] | None) -> list[str]:
    if dims is None:
        return list(vars_[-2:]) or ["(scalar)"]
    bad = [v for v in dims if v not in vars_]
    if bad or len(dims) not in (1, 2) or len(set(dims)) != len(dims):
        raise PlotError(f"computation {c!r}: cannot draw dims {list(dims)}; name one or two "
                        f"of its dims {vars_}")
    return list(dims)


def _renamed(commands: Sequence[cmd.Command], comp: str, dim: str) -> str:
    """The loop a Layer I dimension became through the renames of skew (``t`` -> ``t2``)."""
    for c in commands:
        if isinstance(c, cmd.Skew) and c.comp == comp:
            dim = {c.a: c.new_a, c.b: c.new_b}.get(dim, dim)
    return dim


def _choose_axes(c: str, axes: list[Axis], d: list[str], loops: Sequence[str] | None
                 ) -> list[Axis]:
    """The named loops' axes; else the axes that recombine the Layer I dims drawn; else
    the two innermost. Outer first."""
    if not axes:
        return [Axis("(scalar)", (), ())]
    if loops is not None:
        found = [next((a for a in axes if lp == a.name or lp in a.loops), None)
                 for lp in loops]
        if None in found or len(loops) not in (1, 2) or len(set(map(id, found))) != len(found):
            raise PlotError(f"computation {c!r}: cannot draw loops {list(loops)}; name one "
                            f"or two of its loops {[lp for a in axes for lp in a.loops]}")
        chosen = [a for a in found if a is not None]
    elif all(any(a.name == v for a in axes) for v in d):
        chosen = [a for a in axes if a.name in d]
    else:
        chosen = axes[-2:]
    return [a for a in axes if a in chosen]


def _axis_fn(inst: _Instances, a: Axis) -> Callable[[Pt], int]:
    pos = [inst.position(lp) for lp in a.loops]
    w = a.weights
    return lambda t: sum(wk * t[pk] for wk, pk in zip(w, pos, strict=True))


def _tag(lw: Lowered, c: str, k: int) -> str:
    tag = lw.ts.effective_tag(c, k)
    if tag is None:
        return ""
    width = lw.ts.comps[c].widths.get(lw.ts.loop_name(c, k))
    return f"{tag} ×{width}" if width and tag == "vector" else tag


def _axis_label(a: Axis, tags: Mapping[str, str]) -> str:
    marks = [f"{lp} {tags[lp]}" for lp in a.loops if tags.get(lp)]
    return a.formula() + (f"   [{', '.join(marks)}]" if marks else "")


def _brief(c: cmd.Command) -> str:
    """A command in a few characters: ``tile(i,j, 2,2, i0,j0, i1,j1)``."""
    if isinstance(c, cmd.Gpu):
        return c.describe().split(".", 1)[1]
    args = [",".join(map(str, v)) if isinstance(v, tuple) else str(v)
            for k, v in c.__dict__.items() if k != "comp"]
    return f"{c.kind}({', '.join(args)})"


def _short(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _tiles(inst: _Instances, ax: list[Axis], ordered: list[Pt], f2: Coords,
           p1: Panel, p2: Panel, f1: Coords) -> None:
    """Tile boxes (Layer II) and each point's tile, in both panels: the tile of an instance
    is the value of the tile loops of the axes drawn."""
    tl = [lp for a in ax for lp in a.tiles]
    if not tl:
        p1.tile_of = [-1] * len(p1.points)
        p2.tile_of = [-1] * len(p2.points)
        return
    index: dict[Pt, int] = {}
    boxes: list[list[int]] = []
    first: dict[XY, int] = {}
    for t in ordered:
        key = tuple(inst.loop_value(t, lp) for lp in tl)
        k = index.setdefault(key, len(index))
        x, y = _xy(t, f2)
        if k == len(boxes):
            boxes.append([x, x, y, y])
        b = boxes[k]
        b[:] = [min(b[0], x), max(b[1], x), min(b[2], y), max(b[3], y)]
        first.setdefault((x, y), k)
    p2.tiles = [(b[0], b[1], b[2], b[3]) for b in boxes]
    p2.tile_of = [first[p] for p in p2.points]
    of1: dict[XY, int] = {}
    for p in inst.dom:
        ts = inst.ts_of.get(p)
        if ts:
            of1.setdefault(_xy(p, f1), index[tuple(inst.loop_value(ts[0], lp) for lp in tl)])
    p1.tile_of = [of1.get(p, -1) for p in p1.points]


def _violates(source: Pt, sink: Pt, parallel: set[int]) -> bool:
    """Whether the schedule breaks the dependence: the source does not run before the
    sink, or the first loop where they differ runs its iterations in parallel."""
    if source >= sink:
        return True
    first = next(k for k, (a, b) in enumerate(zip(source, sink, strict=True)) if a != b)
    return first in parallel


def _deps(lw: Lowered, c: str, fixed: isl.Set, at: str, inst: _Instances,
          fns: tuple[Coords, Coords], panels: tuple[Panel, Panel],
          parallel: set[int], cap: int) -> None:
    """Flow dependences into ``c``, from the exact relation the legality check compares
    the scheduled program with (``Expected.sources``: each read instance -> the instance
    whose value it must see). Those between instances of ``c`` become arrows, projected
    and without repeats, marked violated where the time-space order breaks them (the
    picture of an illegal schedule); those from other computations are counted in a
    note."""
    from ..ir.islutil import maps_of

    (f1, f2), (p1, p2) = fns, panels
    a1: dict[tuple[XY, XY], bool] = {}  # arrow -> violated
    a2: dict[tuple[XY, XY], bool] = {}
    other: dict[str, int] = {}
    for r in lw.exp.reads:
        src = lw.exp.sources.get(r.ref)
        if r.comp != c or src is None:
            continue
        for m in maps_of(src):
            p = m.get_tuple_name(isl.dim_type.out)
            prs = pairs(m.intersect_params(fixed), f"the flow dependences {p} -> {c} at {at}",
                        8 * cap)
            if p != c:
                other[p] = other.get(p, 0) + len(prs)
                continue
            for sink, source in prs:
                e1 = (_xy(source, f1), _xy(sink, f1))
                a1.setdefault(e1, False)
                for tk in inst.ts_of.get(sink, []):
                    # with recomputation (compute_at), the sink sees the last instance of
                    # the source before it; broken only when none comes before it
                    srcs = inst.ts_of.get(source, [])
                    good = [ts for ts in srcs if not _violates(ts, tk, parallel)]
                    for ts in ([max(good)] if good else srcs):
                        e2 = (_xy(ts, f2), _xy(tk, f2))
                        a2[e2] = a2.get(e2, False) or not good
                    a1[e1] = a1[e1] or not good
    p1.arrows = [a for a in a1 if a[0] != a[1]]
    p2.arrows = [a for a in a2 if a[0] != a[1]]
    p1.violated = [a for a in p1.arrows if a1[a]]
    p2.violated = [a for a in p2.arrows if a2[a]]
    if len(p1.arrows) < len(a1):
        p1.notes.append(f"+ flow dependences of {c} along dims not drawn (their ends "
                        "project to one point)")
    for p, n in other.items():
        p1.notes.append(f"+ {n} flow dependence{'s' * (n != 1)} from {p} (another "
                        "computation; not drawn)")
