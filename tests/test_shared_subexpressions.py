"""Repeated subexpressions: one node after Layer I whatever way they were written, computed
once by the C printer, and never evaluated where the expression would not evaluate them
(inside a select's branch). Checked against numpy; the conftest fixture also checks that
the direct and the wire paths print the same C for every compile."""

from __future__ import annotations

import re

import numpy as np

import middleend as me
from backends.cpu import generate_c


def _c(f: me.Function) -> str:
    return generate_c(f.lower().program)


def test_repeated_value_is_computed_once(rng: np.random.Generator) -> None:
    """``(a*a + 1) * (a*a + 1)`` written twice (two separate Python expressions): one
    local holds it, and the result is numpy's."""
    with me.Function("square_twice") as f:
        a = me.Input("a", [16], me.float32)
        i = me.Var("i", 0, 16)
        me.Computation("out", [i], (a[i] * a[i] + 1.0) * (a[i] * a[i] + 1.0))
    c = _c(f)
    assert len(re.findall(r"const float me_t\d+ = ", c)) == 2, c  # a[i], a[i]*a[i] + 1
    x = rng.random(16, dtype=np.float32)
    np.testing.assert_allclose(f.compile()(a=x)["out"], (x * x + 1) * (x * x + 1), rtol=1e-6)


def test_select_branch_is_not_hoisted(rng: np.random.Generator) -> None:
    """A data-dependent read repeated inside a select's branch stays there: hoisted, it
    would be evaluated (and flagged out of bounds) where the select does not take it."""
    with me.Function("guarded_gather") as f:
        a = me.Input("a", [8], me.float32)
        b = me.Input("b", [16], me.int32)
        i = me.Var("i", 0, 16)
        me.Computation("out", [i], me.select(b[i] >= 0, a[b[i]] * 3.0 + a[b[i]] * 3.0,
                                              me.cast(me.float32, 0.0)))
    assert "me_t" not in _c(f).split("out */", 1)[1]
    x = rng.random(8, dtype=np.float32)
    idx = rng.integers(-8, 8, 16).astype(np.int32)
    idx[:2] = [-5, 3]
    want = np.where(idx >= 0, x[np.clip(idx, 0, 7)] * 6.0, 0.0).astype(np.float32)
    np.testing.assert_allclose(f.compile()(a=x, b=idx)["out"], want, rtol=1e-6)
