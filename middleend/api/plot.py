"""Pictures of the layers (``f.plot(path, params=...)`` and ``middleend plot``): for each
computation, its Layer I iteration domain and its Layer II time-space after the schedule,
side by side, as the papers draw them, from the exact sets.

- Left: the integer points of the domain projected on two of its dimensions (default the
  two innermost), coloured by the tile each belongs to after the schedule, with the flow
  dependences between its instances as arrows (source -> sink).
- Right: the same instances where the schedule places them (two axes of the time-space;
  a split or tiled dimension is drawn recombined, ``factor * outer + inner``), tiles
  outlined, the execution order as a thin line, the same dependences, and the loop tags
  (parallel, vector with its width, ...) in the axis labels.
- Below (``together=True``): all of them in their shared time-space, with the dependences
  between them (:mod:`middleend.api.plot_shared`).

Drawing uses matplotlib's object API on a ``Figure`` of its own (no pyplot state, no
display: a PNG goes through Agg, an SVG through matplotlib's SVG writer). What was drawn is
returned (:class:`PlotResult`) so that a caller, or a test, can check the counts.
"""

from __future__ import annotations

import logging
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import islpy as isl

from ..driver.lowering import DEFAULT_MAX_OPS, lower
from ..ir.errors import ResourceLimitError
from ..ir.function import Function
from .plot_data import Panel, PlotError, collect, show_params
from .plot_shared import SharedPanel, collect_shared

FORMATS = (".svg", ".png")
# the phases after the lowering's (which logs its own), for -v and the progress bar
_log = logging.getLogger("middleend.plot")
_FLOW, _VIOLATED = "#c0392b", "#8e24aa"  # red arrows; a broken dependence in purple
_STORAGE = "#00897b"  # an anti or output dependence broken (teal)
# past these, dependence arrows are counted, not drawn (a picture of a blot helps nobody);
# those the schedule violates are drawn up to MAX_ARROWS_DRAWN whatever the density
MAX_ARROWS_DRAWN = 2000
MAX_POINTS_WITH_ARROWS = 600


@dataclass
class PlotResult:
    """What :func:`plot` drew: one Layer I and one Layer II panel per computation."""

    path: Path
    panels: list[Panel]
    shared: SharedPanel | None = None  # together=True: all computations in one time-space

    def panel(self, comp: str, layer: str) -> Panel:
        for p in self.panels:
            if p.comp == comp and p.layer == layer:
                return p
        raise KeyError(f"no panel of layer {layer} for {comp!r}")

    def points(self, comp: str, layer: str = "I") -> int:
        return len(self.panel(comp, layer).points)

    def tiles(self, comp: str) -> int:
        return len(self.panel(comp, "II").tiles)

    def arrows(self, comp: str, layer: str = "I") -> int:
        return len(self.panel(comp, layer).arrows)

    def violated(self, comp: str, layer: str = "I") -> int:
        """Arrows of dependences the schedule breaks (drawn in purple)."""
        return len(self.panel(comp, layer).violated)

    def summary(self) -> str:
        rows = [f"{p.comp} layer {p.layer}: {len(p.points)} points, {len(p.tiles)} tiles, "
                f"{len(p.arrows)} dependence arrows"
                + (f" ({len(p.violated)} violated)" if p.violated else "")
                for p in self.panels]
        if self.shared is not None:
            sp = self.shared
            rows.append("together: " + ", ".join(
                f"{c} {len(sp.points[c])} points ({sp.runs[c]} instances run)"
                for c in sp.comps))
            rows += [f"  {a} -> {b}: {len(e)} dependence arrows"
                     + (f" ({sp.broken(a, b)} violated)" if sp.broken(a, b) else "")
                     for (a, b), e in sp.arrows.items()]
            rows += [f"  {a} -> {b}: {len(e)} {kind} dependence arrows (violated)"
                     for (kind, a, b), e in sp.storage.items()]
        return "\n".join([f"wrote {self.path}", *rows])


def check_path(path: str | Path) -> Path:
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise PlotError(f"cannot write a picture to {str(out)!r}: the file must end in "
                        f"{' or '.join(FORMATS)}")
    return out


def plot(fn: Function, path: str | Path, params: Mapping[str, int] | None = None,
         computations: Sequence[str] | None = None, dims: Sequence[str] | None = None,
         loops: Sequence[str] | None = None, max_points: int = 4096,
         outputs: Sequence[Any] | None = None, together: bool = False,
         max_isl_ops: int | None = None) -> PlotResult:
    """Draw ``fn``'s computations (default: all) to ``path`` (.svg or .png).

    ``params`` gives every parameter a value; ``dims`` names the one or two Layer I
    dimensions to project on (default the two innermost); ``loops`` the time-space loops
    of the Layer II panel (default the axes of the same dimensions when the schedule keeps
    them, else the two innermost); ``max_points`` caps each set enumerated; ``together``
    adds one panel with all of them in the shared time-space and the dependences between
    them (:mod:`middleend.api.plot_shared`), on the axes of the ``dims`` (``loops`` names
    one computation's loops: it applies to the per-computation panels only). The schedule
    is drawn whether or not it is legal: a picture is how one sees why it is not.
    ``max_isl_ops`` bounds the ISL operations of the lowering and of the pictures' sets
    (default ``MIDDLEEND_ISL_MAX_OPS``, 2e7); going past it is a ResourceLimitError that
    says so and how to raise it."""
    out = check_path(path)
    if max_points < 1:
        raise PlotError(f"max_points must be at least 1, got {max_points}")
    cap = DEFAULT_MAX_OPS if max_isl_ops is None else max_isl_ops
    commands = list(fn.commands.items)
    try:
        lw = lower(fn, outputs=outputs, check_legality=False, max_isl_ops=cap)
        t0 = time.perf_counter()
        rows = collect(lw, commands, dict(params or {}), computations, dims, loops,
                       max_points)
        shared = (collect_shared(lw, commands, dict(params or {}), computations, dims,
                                 max_points) if together else None)
    except (isl.Error, ResourceLimitError) as e:
        if isinstance(e, isl.Error) and "operations" not in str(e):
            raise
        raise ResourceLimitError(
            f"plot of {fn.name!r}: ISL went past its bound of {cap} operations; raise it "
            "with plot(..., max_isl_ops=N) (middleend plot --max-isl-ops N) or "
            "MIDDLEEND_ISL_MAX_OPS, or plot smaller parameter values") from None
    for p in (p for row in rows for p in row if shared is not None):
        p.notes = [n.replace("(another computation; not drawn)", "(drawn in the shared "
                             "panel)") if n.split(" from ")[-1].split(" ")[0] in shared.comps
                   else n for n in p.notes]
    _log.info("plot points and dependences: %.1f ms", (time.perf_counter() - t0) * 1e3)
    t0 = time.perf_counter()
    _draw(out, f"{fn.name}   ({show_params(params or {})})", rows, shared)
    _log.info("plot drawing (%s): %.1f ms", out.suffix[1:], (time.perf_counter() - t0) * 1e3)
    return PlotResult(out, [p for row in rows for p in row], shared)


def _draw(out: Path, title: str, rows: list[tuple[Panel, Panel]],
          shared: SharedPanel | None = None) -> None:
    from matplotlib.figure import Figure

    heights = [_row_height(row) for row in rows]
    if shared is not None:
        heights += [0.5, _shared_height(shared)]  # a spacer: the layout misses the legends
    fig = Figure(figsize=(13, sum(heights) + 0.6), layout="constrained")
    fig.suptitle(title, fontsize=13, fontweight="bold")
    gs = fig.add_gridspec(len(heights), 2, height_ratios=heights)
    for k, (p1, p2) in enumerate(rows):
        _panel(fig.add_subplot(gs[k, 0]), p1)
        _panel(fig.add_subplot(gs[k, 1]), p2)
    if shared is not None:
        _shared(fig.add_subplot(gs[len(heights) - 1, :]), shared)
    fig.savefig(out, dpi=110, bbox_inches="tight", pad_inches=0.25)  # nothing cut off


def _row_height(row: tuple[Panel, Panel]) -> float:
    """Inches for one row: the taller data shape of its two panels (a flat domain gets a
    flat row), plus room for the labels, the legend and the notes below."""
    ratio = 0.3
    for p in row:
        if p.points and p.ylabel:
            xs, ys = [x for x, _ in p.points], [y for _, y in p.points]
            ratio = max(ratio, (max(ys) - min(ys) + 1.6) / (max(xs) - min(xs) + 1.6))
    lines = max(len(_note_lines(p)) for p in row)
    return 5.0 * min(ratio, 1.3) + 2.0 + 0.15 * lines


def _note_lines(p: Panel) -> list[str]:
    return [w for note in p.notes[:4] for w in textwrap.wrap(note, 88)][:6]


def _colors(p: Panel) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(t % 10) if t >= 0 else "#3b75af" for t in p.tile_of]


def _panel(ax: Any, p: Panel) -> None:
    from matplotlib.collections import PatchCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import ScaledTranslation

    xs = [x for x, _ in p.points]
    ys = [y for _, y in p.points]
    size = _marker_size(xs, ys)
    cols = _colors(p)
    handles: list[Any] = [Line2D([], [], marker="o", ls="", color="#3b75af",
                                 label=f"instances ({len(p.points)})")]
    if p.layer == "II" and len(p.order) > 1:
        ax.plot([x for x, _ in p.order], [y for _, y in p.order], color="0.72", lw=0.8,
                zorder=1)
        handles.append(Line2D([], [], color="0.72", label="execution order"))
    if p.tiles:  # one collection: a patch each takes seconds to add for many tiles
        first = {t: n for n, t in reversed(list(enumerate(p.tile_of)))}
        ax.add_collection(PatchCollection(
            [Rectangle((x0 - 0.38, y0 - 0.38), x1 - x0 + 0.76, y1 - y0 + 0.76)
             for x0, x1, y0, y1 in p.tiles], facecolors="none", zorder=2,
            linewidths=1.3 if len(p.tiles) <= 100 else 0.8,
            edgecolors=[cols[first[k]] if k in first else "0.3"
                        for k in range(len(p.tiles))], gid=f"tiles-{p.layer}-{p.comp}"))
    if p.tiles:
        handles.append(Rectangle((0, 0), 1, 1, fill=False, edgecolor="0.3",
                                 label=f"tiles ({len(p.tiles)})"))
    if any(t >= 0 for t in p.tile_of):
        handles[0].set_label(f"instances ({len(p.points)}; colour: tile)")
    ax.scatter(xs, ys, s=size, c=cols, edgecolors="black", linewidths=0.4, zorder=3,
               gid=f"points-{p.layer}-{p.comp}")
    bad = set(p.violated)
    good = [e for e in p.arrows if e not in bad]
    dense = len(p.points) > MAX_POINTS_WITH_ARROWS or len(good) > MAX_ARROWS_DRAWN
    if not dense:
        _arrows(ax, good, _FLOW, 0.0028, 4)
    _arrows(ax, p.violated[:MAX_ARROWS_DRAWN], _VIOLATED, 0.0045, 5)
    if p.arrows:
        handles.append(Line2D([], [], color=_FLOW, marker=">", label=(
            f"flow dependences ({len(p.arrows)}" + ("; too dense to draw)" if dense
                                                    else ")"))))
    if bad:
        more = len(bad) - MAX_ARROWS_DRAWN
        handles.append(Line2D([], [], color=_VIOLATED, marker=">", lw=1.6, label=(
            f"violated ({len(bad)}" + (f"; {more} not drawn)" if more > 0 else ")"))))
    ax.set_title(p.title, fontsize=11, loc="left")
    ax.set_xlabel(p.xlabel, fontsize=10)
    ax.set_ylabel(p.ylabel, fontsize=10)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    if xs:
        _limits(ax, xs, ys)
    if not p.ylabel:  # one dimension (or none): a line of points
        ax.set_yticks([])
        ax.set_ylim(-1, 1)
        ax.set_aspect("auto")
    if p.xlabel == "(scalar)":
        ax.set_xticks([])
    ax.grid(True, color="0.92", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    # below the x label, in points (not axes fractions: rows differ in height)
    # below the x label; the notes (the domain, the schedule) as the legend's title, so
    # that the layout makes room for them as for the legend
    below = ax.transAxes + ScaledTranslation(0, -0.5, ax.figure.dpi_scale_trans)
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 0),
                    bbox_transform=below, ncol=3, fontsize=8.5, frameon=False,
                    borderaxespad=0, borderpad=0, alignment="left",
                    title="\n".join(_note_lines(p)) or None,
                    title_fontproperties={"family": "monospace", "size": 8})
    leg.get_title().set_color("0.25")


def _arrows(ax: Any, arrows: Sequence[tuple[tuple[float, float], tuple[float, float]]],
            color: str, width: float, z: int) -> None:
    """One quiver for many arrows (an arrow patch each is slow to lay out), each cut by a
    fifth of a unit at both ends so that it runs between the markers (a short one, between
    two computations' instances nudged apart, by less: it keeps its direction)."""
    if not arrows:
        return
    xs, ys, us, vs = [], [], [], []
    for (x0, y0), (x1, y1) in arrows:
        dx, dy = x1 - x0, y1 - y0
        cut = min(0.2 / max((dx * dx + dy * dy) ** 0.5, 1e-9), 0.3)
        xs.append(x0 + cut * dx)
        ys.append(y0 + cut * dy)
        us.append(dx * (1 - 2 * cut))
        vs.append(dy * (1 - 2 * cut))
    ax.quiver(xs, ys, us, vs, angles="xy", scale_units="xy", scale=1, color=color,
              width=width, headwidth=4.5, headlength=5, headaxislength=4.5, alpha=0.8,
              zorder=z)


def _marker_size(xs: list[int], ys: list[int]) -> float:
    """A marker area (pt^2) whose diameter is about a third of the spacing of points on
    a panel about 430 pt wide."""
    if not xs:
        return 40.0
    extent = max(max(xs) - min(xs), max(ys) - min(ys)) + 1.6
    return max(4.0, min(90.0, (0.35 * 430 / extent) ** 2))


def _limits(ax: Any, xs: list[int], ys: list[int]) -> None:
    """Equal units on both axes when the shape allows it (a square domain looks square),
    with half a unit of margin around the points."""
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    ax.set_xlim(x0 - 0.8, x1 + 0.8)
    ax.set_ylim(y0 - 0.8, y1 + 0.8)
    w, h = x1 - x0 + 1.6, y1 - y0 + 1.6
    if 1 / 2.5 <= h / w <= 2.5:
        ax.set_aspect("equal", adjustable="box", anchor="N")


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h")


def _shared_height(sp: SharedPanel) -> float:
    """Inches for the shared panel: its data shape on a panel about 11 inches wide."""
    pts = [xy for c in sp.comps for xy in sp.points[c]]
    ratio = 0.3
    if pts and sp.ylabel:
        xs, ys = [x for x, _ in pts], [y for _, y in pts]
        ratio = (max(ys) - min(ys) + 1.6) / (max(xs) - min(xs) + 1.6)
    return min(max(11.0 * ratio, 2.5), 9.0) + 2.2 + 0.15 * min(len(sp.notes), 8)


def _shared(ax: Any, sp: SharedPanel) -> None:
    """All computations in one time-space: a colour and a marker each, every computation
    nudged by a fraction of a unit so that instances drawn at one place stay apart, the
    tiles outlined, and the flow arrows between them (their ends nudged alike)."""
    from matplotlib import colormaps
    from matplotlib.collections import PatchCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import ScaledTranslation

    cmap = colormaps["tab10"]
    n = len(sp.comps)
    nudge = {c: 0.22 * (k - (n - 1) / 2) for k, c in enumerate(sp.comps)}
    colour = {c: cmap(k % 10) for k, c in enumerate(sp.comps)}

    def at(c: str, xy: tuple[int, int]) -> tuple[float, float]:
        return (xy[0] + nudge[c], xy[1] + nudge[c])

    allpts = [xy for c in sp.comps for xy in sp.points[c]]
    xs, ys = [x for x, _ in allpts], [y for _, y in allpts]
    size = 0.6 * _marker_size(xs, ys)
    handles: list[Any] = []
    if sp.tiles:
        ax.add_collection(PatchCollection(
            [Rectangle((x0 - 0.45, y0 - 0.45), x1 - x0 + 0.9, y1 - y0 + 0.9)
             for x0, x1, y0, y1 in sp.tiles], facecolors="none", edgecolors="0.35",
            linewidths=1.2 if len(sp.tiles) <= 100 else 0.7, zorder=2, gid="tiles-shared"))
        handles.append(Rectangle((0, 0), 1, 1, fill=False, edgecolor="0.35",
                                 label=f"tiles ({len(sp.tiles)})"))
        for (x0, _, _, y1), name in zip(sp.tiles, sp.tile_names, strict=True):
            if len(sp.tiles) <= 40:  # which tile: its loops' values, at its top left
                ax.annotate(name, (x0 - 0.45, y1 + 0.45), xytext=(2, -2),
                            textcoords="offset points", ha="left", va="top", fontsize=7,
                            color="0.35", zorder=6)
    for k, c in enumerate(sp.comps):
        again = set(sp.again[c])
        pts = [at(c, xy) for xy in sp.points[c]]
        mk = _MARKERS[k % len(_MARKERS)]
        ax.scatter([x for x, _ in pts], [y for _, y in pts], s=size, marker=mk,
                   c=["white" if xy in again else colour[c] for xy in sp.points[c]],
                   edgecolors=[colour[c] if xy in again else "black"
                               for xy in sp.points[c]],
                   linewidths=[1.4 if xy in again else 0.4 for xy in sp.points[c]],
                   zorder=3, gid=f"points-shared-{c}")
        handles.append(Line2D([], [], marker=mk, ls="", color=colour[c],
                              markeredgecolor="black",
                              label=f"{c} ({len(sp.points[c]) - len(again)} drawn)"))
        if again:
            handles.append(Line2D([], [], marker=mk, ls="", markerfacecolor="white",
                                  markeredgecolor=colour[c], markeredgewidth=1.4,
                                  label=f"{c} computed again ({len(again)} drawn)"))
    dense = len(allpts) > MAX_POINTS_WITH_ARROWS
    for (a, b), arrows in sp.arrows.items():
        bad = set(sp.violated.get((a, b), []))
        good = [(at(a, s), at(b, t)) for s, t in arrows if (s, t) not in bad]
        if not dense and len(good) <= MAX_ARROWS_DRAWN:
            _arrows(ax, good, _FLOW if a != b else "#e67e22", 0.0016, 4)
        _arrows(ax, [(at(a, s), at(b, t)) for s, t in sp.violated.get((a, b), [])]
                [:MAX_ARROWS_DRAWN], _VIOLATED, 0.0028, 5)
        handles.append(Line2D([], [], color=_FLOW if a != b else "#e67e22", marker=">",
                              label=f"{a} → {b} ({len(arrows)}"
                              + (f", {len(bad)} violated" if bad else "")
                              + ("; too dense to draw" if dense else "") + ")"))
    if sp.violated:
        handles.append(Line2D([], [], color=_VIOLATED, marker=">", lw=1.6,
                              label="violated by the schedule"))
    for (kind, a, b), arrows in sp.storage.items():
        _arrows(ax, [(at(a, s), at(b, t)) for s, t in arrows[:MAX_ARROWS_DRAWN]], _STORAGE,
                0.0028, 5)
        handles.append(Line2D([], [], color=_STORAGE, marker=">", lw=1.6, label=(
            f"{a} → {b}: {kind} dependence broken ({len(arrows)})")))
    ax.set_title(sp.title, fontsize=11, loc="left")
    ax.set_xlabel(sp.xlabel, fontsize=10)
    ax.set_ylabel(sp.ylabel, fontsize=10)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    if xs:
        _limits(ax, xs, ys)
    for name, ticks in sp.ticks.items():  # blocks drawn apart: label the values drawn
        step = max(1, len(ticks) // 24)
        axis = ax.xaxis if name == "x" else ax.yaxis
        axis.set_ticks([d for d, _ in ticks[::step]], [str(v) for _, v in ticks[::step]])
    if not sp.ylabel:
        ax.set_yticks([])
        ax.set_ylim(-1, 1)
        ax.set_aspect("auto")
    ax.grid(True, color="0.92", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    below = ax.transAxes + ScaledTranslation(0, -0.5, ax.figure.dpi_scale_trans)
    notes = [w for note in sp.notes[:8] for w in textwrap.wrap(note, 120)][:8]
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 0),
                    bbox_transform=below, ncol=4, fontsize=8.5, frameon=False,
                    borderaxespad=0, borderpad=0, alignment="left",
                    title="\n".join(notes) or None,
                    title_fontproperties={"family": "monospace", "size": 8})
    leg.get_title().set_color("0.25")
