"""``Func.in_()`` / ``in_(g)`` / ``clone_in(g)`` wrappers, compared with Halide's realize.

A wrapper is a Func of its own that the calls of its consumers go to, so it can be
scheduled apart from the Func it wraps (staged at a consumer's loop while the wrapped Func
is computed at the root, say). Each test also checks that the wrapper was translated as a
computation of its own where its schedule asks for one.
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check


def _names(k: object, sizes: list[int], **inputs: np.ndarray) -> list[str]:
    built, _ = k.build(sizes, **inputs)  # type: ignore[attr-defined]
    return [c.name for c in built.fn.computations]


@pytest.mark.parametrize("schedule", ["root", "at_y"])
def test_wrapper_for_one_consumer(schedule: str, rng: np.random.Generator) -> None:
    """``f.in_(g)``: only g reads the wrapper; h reads f itself."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, g, h = hl.Func("f"), hl.Func("g"), hl.Func("h")
    f[x, y] = a[x, y] * 2
    g[x, y] = f[x, y] + f[x + 1, y]
    h[x, y] = g[x, y] - f[x, y]
    f.compute_root()
    g.compute_root()
    w = f.in_(g)
    if schedule == "root":
        w.compute_root()
    else:
        w.compute_at(g, y).vectorize(x, 4)
    data = rng.random((10, 21), dtype=np.float32)
    k = check(h, [20, 10], [(a, data)])
    assert any("_in_g" in n for n in _names(k, [20, 10], a=data))


def test_global_wrapper_and_list(rng: np.random.Generator) -> None:
    """``f.in_()`` serves every caller; ``f2.in_([g, h])`` one wrapper for both."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, f2, g, h = hl.Func("f"), hl.Func("f2"), hl.Func("g"), hl.Func("h")
    f[x, y] = a[x, y] * 2
    f2[x, y] = a[x, y] + 1
    g[x, y] = f[x, y] + f[x + 1, y] * f2[x, y]
    h[x, y] = g[x, y] + f[x, y] - f2[x, y]
    f.compute_root()
    g.compute_root()
    f.in_().compute_root()
    f2.in_([g, h]).compute_root()
    data = rng.random((10, 21), dtype=np.float32)
    k = check(h, [20, 10], [(a, data)])
    names = _names(k, [20, 10], a=data)
    assert any("_global_wrapper" in n for n in names), names


def test_clone_in(rng: np.random.Generator) -> None:
    """``f.clone_in(h)``: h reads a copy of f's definition, scheduled on its own."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f, g, h = hl.Func("f"), hl.Func("g"), hl.Func("h")
    f[x, y] = a[x, y] * 3 - 1
    g[x, y] = f[x, y] + f[x, y + 1]
    h[x, y] = g[x, y] * f[x + 1, y]
    f.compute_root()
    g.compute_root()
    f.clone_in(h).compute_at(h, y)
    data = rng.random((12, 21), dtype=np.float32)
    k = check(h, [20, 11], [(a, data)])
    assert any("clone_in_h" in n for n in _names(k, [20, 11], a=data))


def test_input_wrapper(rng: np.random.Generator) -> None:
    """``ImageParam.in_()``: the input staged in a Func of its own at the consumer's rows."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    g = hl.Func("g")
    g[x, y] = hl.u16(a[x, y]) + a[x + 1, y] + a[x, y + 1]
    a.in_().compute_at(g, y)
    check(g, [20, 10], [(a, rng.integers(0, 256, (11, 21), dtype=np.uint8))])
