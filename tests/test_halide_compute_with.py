"""``h.compute_with(g, y)`` against Halide's realize: both at root, their loops fused down to
``y`` (``g``'s body first at each fused iteration), as the middle-end's ``h.after(g, y)``."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import UnsupportedHalideFeature, compile_pipeline


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
