"""``h.compute_with(g, y)`` against Halide's realize: both at root, their loops fused down to
``y`` (``g``'s body first at each fused iteration), as the middle-end's ``h.after(g, y)``."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import UnsupportedHalideFeature, compile_pipeline
from middleend.ir.loopast import Stmt, walk_loops


def _two(schedule: str) -> tuple[hl.Func, hl.Func, hl.Func, hl.ImageParam]:
    x, y, xo, xi = (hl.Var(n) for n in ("x", "y", "xo", "xi"))
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g, h, o = hl.Func("cw_g"), hl.Func("cw_h"), hl.Func("cw_o")
    g[x, y] = a[x, y] + 1
    h[x, y] = (a[x + 1, y] * 2, x + y)  # a Tuple: both elements in the fused loops
    o[x, y] = g[x, y] + h[x, y][0] + g[x + 1, y] + hl.f32(h[x, y][1])
    g.compute_root()
    h.compute_root()
    if schedule == "y":
        h.compute_with(g, y)
    elif schedule == "x":
        h.compute_with(g, x)
    else:
        g.split(x, xo, xi, 4).vectorize(xi)
        h.split(x, xo, xi, 4)
        h.compute_with(g, xo)
    return g, h, o, a


@pytest.mark.parametrize("schedule", ["y", "x", "split"])
def test_compute_with(schedule: str, rng: np.random.Generator) -> None:
    g, h, o, a = _two(schedule)
    data = rng.random((10, 22), dtype=np.float32)
    k = check(o, [20, 10], [(a, data)])
    if schedule == "y":
        built, _ = k.build([20, 10], a=data)
        text = built.fn.layers()
        layer2 = text[text.index("== Layer II"):text.index("== Layer III")].splitlines()
        rows = [ln.split("->")[1].split(":")[0].strip() for ln in layer2
                if ln.startswith(("{ cw_g", "{ cw_h"))]
        assert rows == ["[0, y, 0, x, 0]", "[0, y, 1, x, 0]", "[0, y, 1, x, 1]"], rows


def test_compute_with_different_loops_is_refused() -> None:
    """Fused loops are matched by position: loops that differ down to the level are
    refused by name (Halide would align them)."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g, h, o = hl.Func("cw_g2"), hl.Func("cw_h2"), hl.Func("cw_o2")
    g[x, y] = a[x, y] + 1
    h[x, y] = a[x, y] * 2
    o[x, y] = g[x, y] + h[x, y]
    g.compute_root()
    h.compute_root().reorder(y, x)
    h.compute_with(g, y)
    with pytest.raises(UnsupportedHalideFeature, match="the loops down to 'y' differ"):
        compile_pipeline(o).realize([8, 4], a=np.zeros((4, 8), np.float32))


def test_compute_with_an_output(rng: np.random.Generator) -> None:
    """Two outputs (computed at root by being outputs), one computed with the other."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g, h = hl.Func("cw_out_g"), hl.Func("cw_out_h")
    g[x, y] = a[x, y] + 1
    h[x, y] = a[x, y] * 2
    h.compute_with(g, x)
    check([g, h], [8, 4], [(a, rng.random((4, 8), dtype=np.float32))])


def _at(tag: str, shift: int) -> tuple[hl.Func, hl.Func, hl.Func, hl.ImageParam]:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g, h, o = hl.Func(f"cwa_g{tag}"), hl.Func(f"cwa_h{tag}"), hl.Func(f"cwa_o{tag}")
    g[x, y] = a[x, y] + 1
    h[x, y] = a[x, y] * 2
    o[x, y] = g[x, y] + h[x + shift, y] + g[x, y + 1]  # g: two rows per o row
    return g, h, o, a


@pytest.mark.parametrize(("level", "shift", "align"), [
    ("x", 0, None), ("y", 0, None), ("x", 3, None), ("x", 3, "AlignEnd"),
    ("x", 3, "NoAlign")])
def test_compute_with_at_a_loop(level: str, shift: int, align: str | None,
                                rng: np.random.Generator) -> None:
    """Both Funcs computed at the consumer's ``y`` (Halide's one compute level), their own
    loops fused down to ``level``; h over a range 3 wider than g's where ``shift`` is 3
    (any alignment strategy: the same values). Refused before ('computed at a loop')."""
    g, h, o, a = _at(f"{level}{shift}{align or ''}", shift)
    y = hl.Var("y")
    var = hl.Var(level)
    g.compute_at(o, y)
    h.compute_at(o, y)
    if align is None:
        h.compute_with(g, var)
    else:
        h.compute_with(g, var, getattr(hl.LoopAlignStrategy, align))
    data = rng.random((12, 24), dtype=np.float32)
    k = check(o, [20, 10], [(a, data)])
    if level == "x":  # g and h at each x of their common range, in one loop
        built = k.translate([20, 10], a=data)
        body = built.fn.lower(outputs=built.outputs).program.body
        # the computations' names, not Halide's: a Func named 'cwa_gx0$4' (Halide made the
        # name unique: another test of the worker had a 'cwa_gx0') is 'cwa_gx0_4...' here
        gc, hc = (built.comps[f.name()][0][0].name for f in (g, h))
        loops: dict[str, set[int]] = {}
        for n, fors in walk_loops(body):
            if isinstance(n, Stmt) and n.comp in (gc, hc):
                loops.setdefault(n.comp, set()).add(id(fors[-1]))
        assert loops[gc] & loops[hc], loops


@pytest.mark.parametrize("h_first", [False, True])
def test_compute_with_at_a_loop_of_a_two_stage_consumer(h_first: bool,
                                                         rng: np.random.Generator) -> None:
    """The consumer's update reads both too: each stage its own realization of the pair.
    Whichever of the two the update calls first (the placement looks at the callees in
    that order: with ``h`` first it once took the pair for a cycle, and so did CI when
    the names' hashes put ``h`` first in a set)."""
    x, y = hl.Var("x"), hl.Var("y")
    g, h, o, a = _at("2h" if h_first else "2", 0)
    if h_first:
        o[x, y] += h[x, y] * g[x + 1, y]
    else:
        o[x, y] += g[x + 1, y] * h[x, y]
    g.compute_at(o, y)
    h.compute_at(o, y)
    h.compute_with(g, x)
    check(o, [20, 10], [(a, rng.random((12, 24), dtype=np.float32))])


def test_compute_with_at_different_levels_is_refused() -> None:
    """Halide requires one compute level of the two Funcs (it refuses this when lowering);
    one line naming both levels."""
    g, h, o, a = _at("d", 0)
    g.compute_at(o, hl.Var("y"))
    h.compute_root()
    h.compute_with(g, hl.Var("x"))
    with pytest.raises(UnsupportedHalideFeature) as info:
        compile_pipeline(o).realize([8, 4], a=np.zeros((6, 9), np.float32))
    msg = str(info.value)
    assert "\n" not in msg
    # Halide's own names (another test of the process may have made a Func 'cwa_od'
    # already: Halide then names this one 'cwa_od$1')
    assert f"computed at different levels ({h.name()} at root, {g.name()} at " \
        f"{o.name()}.y)" in msg, msg
    with pytest.raises(hl.HalideError, match="compute levels"):
        o.realize([8, 4])
