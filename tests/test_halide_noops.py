"""Directives that do not change values are compiled as no-ops, with a warning naming the
Func and the directive (memoize, fold_storage, trace_*, print / print_when); the results
still equal Halide's."""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import IgnoredHalideDirective


def _pair(rng: np.random.Generator) -> tuple[hl.Func, hl.Func, hl.ImageParam, np.ndarray]:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p, c = hl.Func("p"), hl.Func("c")
    p[x, y] = a[x, y] * 2
    c[x, y] = p[x, y] + p[x, y + 1]
    return p, c, a, rng.random((11, 20), dtype=np.float32)


def test_fold_storage(rng: np.random.Generator) -> None:
    p, c, a, data = _pair(rng)
    y = c.args()[1]
    p.store_root().compute_at(c, y).fold_storage(y, 2)
    with pytest.warns(IgnoredHalideDirective, match=re.escape(f"{p.name()!r}: fold_storage(y)")):
        check(c, [20, 10], [(a, data)])


def test_trace(rng: np.random.Generator, capfd: pytest.CaptureFixture[str]) -> None:
    p, c, a, data = _pair(rng)
    p.compute_root().trace_stores()
    with pytest.warns(IgnoredHalideDirective, match="trace_loads/trace_stores"):
        check(c, [20, 10], [(a, data)])
    capfd.readouterr()  # Halide's trace of the reference run


def test_print_and_print_when(rng: np.random.Generator,
                              capfd: pytest.CaptureFixture[str]) -> None:
    p, c, a, data = _pair(rng)
    x, y = c.args()
    d = hl.Func("printed")
    d[x, y] = hl.print_when(x == 3, c[x, y], "at", y) + hl.print(p[x, y] * 0.5, "half")
    with pytest.warns(IgnoredHalideDirective, match="print/print_when"):
        check(d, [20, 10], [(a, data)])
    capfd.readouterr()


def test_memoize() -> None:
    """Halide memoizes Funcs that read no buffer (the cache key must be scalars)."""
    x, y = hl.Var("x"), hl.Var("y")
    s = hl.Param(hl.Int(32), "s")
    p, c = hl.Func("table"), hl.Func("c")
    p[x, y] = x * y + s
    c[x, y] = p[x, y] - p[y, x]
    p.compute_root().memoize()
    with pytest.warns(IgnoredHalideDirective, match=re.escape(f"{p.name()!r}: memoize()")):
        check(c, [12, 12], [(s, 5)])


def test_prefetch_store_in_and_async(rng: np.random.Generator) -> None:
    """Hints on where and when, not what: prefetch(), store_in(MemoryType.Stack), async()."""
    p, c, a, data = _pair(rng)
    x, y = c.args()
    q = hl.Func("q_async")
    q[x, y] = c[x, y] * 3 - 1
    p.compute_at(c, y).store_in(hl.MemoryType.Stack)
    c.compute_root().async_()
    q.prefetch(a, y, y, 2)
    with pytest.warns(IgnoredHalideDirective) as got:
        check(q, [20, 10], [(a, data)])
    said = {str(w.message) for w in got}
    for func, what in ((p, "store_in(MemoryType.Stack)"), (c, "async()"), (q, "prefetch()")):
        assert any(f"{func.name()!r}: {what}" in m for m in said), (what, said)


def test_align_and_bound_storage(rng: np.random.Generator) -> None:
    """Padding of a buffer's storage: align_storage(x, 8), bound_storage(y, 16)."""
    p, c, a, data = _pair(rng)
    x, y = c.args()
    p.compute_root().align_storage(x, 8).bound_storage(y, 16)
    with pytest.warns(IgnoredHalideDirective) as got:
        check(c, [20, 10], [(a, data)])
    said = " ".join(str(w.message) for w in got)
    assert f"{p.name()!r}: align_storage(x)" in said and \
        f"{p.name()!r}: bound_storage(y)" in said, said
