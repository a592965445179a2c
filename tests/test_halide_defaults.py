"""Halide directives in the overloads Halide 21's Python binding accepts without a factor,
against Halide's realize: ``vectorize(x)`` vectorizes the whole loop, which Halide allows
where the loop's extent is a constant (``bound()``, a region of a Func computed at a loop,
an RDom). The binding's other factorless overloads (``unroll(x)``, ``parallel(y)``) were
translated already; ``split``, ``tile`` and ``gpu_tile`` always take factors there."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import compile_pipeline
from middleend.ir.loopast import walk_loops


def _a() -> hl.ImageParam:
    return hl.ImageParam(hl.Float(32), 2, "a")


def _data(rng: np.random.Generator) -> np.ndarray:
    return rng.random((16, 32), dtype=np.float32)


def test_vectorize_a_bounded_loop_whole(rng: np.random.Generator) -> None:
    """``bound(x, 0, 8).vectorize(x)``: one vector of 8 lanes per row (a vector loop in
    the loop AST, its 8 points), Halide's values."""
    x, y = hl.Var("x"), hl.Var("y")
    a = _a()
    f = hl.Func("vw_bound")
    f[x, y] = a[x, y] * 2 + 1
    f.bound(x, 0, 8).vectorize(x)
    data = _data(rng)
    k = check(f, [8, 16], [(a, data)])
    built, _ = k.build([8, 16], a=data)
    body = built.fn.lower(outputs=built.outputs).program.body
    vectors = {fors[-1] for _, fors in walk_loops(body) if fors and fors[-1].tag == "vector"}
    assert len(vectors) == 1, vectors


def test_vectorize_an_outer_loop_whole(rng: np.random.Generator) -> None:
    """``vectorize(y)`` of the outer loop (bounded): Halide vectorizes across rows."""
    x, y = hl.Var("x"), hl.Var("y")
    a = _a()
    f = hl.Func("vw_outer")
    f[x, y] = a[x, y] - a[x + 1, y]
    f.bound(y, 0, 4).vectorize(y)
    check(f, [8, 4], [(a, _data(rng))])


@pytest.mark.parametrize("width", [24, 21])
def test_vectorize_a_compute_at_region_whole(width: int, rng: np.random.Generator) -> None:
    """A producer at its consumer's tile, ``vectorize(x)``: Halide's vector is the tile's
    region (9 points: the stencil reads x + 1), a constant extent; ours the same points
    in one or two vectors. A width that is not a multiple of 8 too (a ShiftInwards tail)."""
    x, y, xo, xi = (hl.Var(n) for n in ("x", "y", "xo", "xi"))
    a = _a()
    g, f = hl.Func("vw_g"), hl.Func("vw_f")
    g[x, y] = a[x, y] + 1
    f[x, y] = g[x, y] * 2 + g[x + 1, y]
    f.split(x, xo, xi, 8)
    g.compute_at(f, xo).vectorize(x)
    check(f, [width, 16], [(a, _data(rng))])


def test_vectorize_an_rvar_whole(rng: np.random.Generator) -> None:
    """An update over ``RDom(2, 6)`` writing one element per RVar value, ``vectorize(r.x)``:
    the RDom's constant extent is the vector (the loop from its min 2)."""
    x = hl.Var("x")
    a = _a()
    r = hl.RDom([(2, 6)])
    f = hl.Func("vw_rvar")
    f[x] = 0.0
    f[r.x] = f[r.x] + a[r.x, 1]
    f.update().vectorize(r.x)
    check(f, [10], [(a, _data(rng))])


def test_vectorize_whole_needs_no_bound_here(rng: np.random.Generator) -> None:
    """Halide refuses ``vectorize(x)`` of an output without ``bound()`` (its extent is the
    buffer's, not a constant); the build here is specialized on the sizes, so it runs, with
    the values every Halide schedule gives."""
    x, y = hl.Var("x"), hl.Var("y")
    a = _a()
    f = hl.Func("vw_unbounded")
    f[x, y] = a[x, y] * 2
    f.vectorize(x)
    data = _data(rng)
    got = compile_pipeline(f).realize([8, 16], a=data)
    np.testing.assert_array_equal(got, data[:16, :8] * 2)
