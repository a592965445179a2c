"""Vector strips in the auto-scheduler (``autosched/space.py``, ``cost.py``,
``placement.py``): a reader of all a producer's channels (interpolate's normalization,
``out[c] = p[c] / p[3]``) is offered a strip of one vector of ``x`` per iteration with the
channel loop inside it; the channels' rows are streams the prefetchers follow, not short
runs; of two placements estimated alike the smaller region wins, so the producer is
computed per strip (in registers, not through a row buffer); and a producer computed per
iteration of a loop narrower than a vector along its own vector loop is priced as scalar
code."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from middleend.autosched import cost, space
from middleend.autosched.placement import _narrow, _per_tile
from middleend.autosched.plan import Plan, loops
from middleend.driver.summary import Summary, summarize
from middleend.ir import commands as cmd

ROWS, COLS = 256, 2048
M = cost.MachineModel(32, 16, (32 << 10, 512 << 10, 32 << 20), 2)
STRIP = Plan(("y", "x", "c"), (("x", 8),), vector="x", lanes=8, parallel="y")


def _normalize() -> me.Function:
    """``p[c] = sqrt(inp[c] inp[3] + 1)`` over 4 channels, inlined,
    ``out[c] = p[c] / p[3]`` over 3."""
    with me.Function("strip_norm") as f:
        inp = me.Input("inp", [4, ROWS, COLS], me.float32)
        c, y, x = me.Var("c", 0, 4), me.Var("y", 0, ROWS), me.Var("x", 0, COLS)
        p = me.Computation("p", [c, y, x], me.sqrt(inp[c, y, x] * inp[3, y, x] + 1.0))
        c3, y2, x2 = me.Var("c", 0, 3), me.Var("y", 0, ROWS), me.Var("x", 0, COLS)
        me.Computation("out", [c3, y2, x2], p[c3, y2, x2] / p[3, y2, x2])
        p.inline()  # as a front-end leaves it: placing it is the scheduler's call
    return f


def _materialized(f: me.Function) -> Summary:
    """``f``'s summary with its producers not inlined (what placement prices)."""
    return summarize(f, {}, None, [c for c in f.commands.items
                                   if not isinstance(c, cmd.Inline)])


def _reference(a: np.ndarray) -> np.ndarray:
    p = np.sqrt(a * a[3] + np.float32(1))
    return p[:3] / p[3]


def test_a_reader_of_channels_is_offered_a_vector_strip() -> None:
    f = _normalize()
    st = _materialized(f).stmt("out")
    assert STRIP in set(space.plans(st, st.vars, M))
    nest = loops(st, (), STRIP)
    assert [(lp.name, lp.trip) for lp in nest] == [("y", ROWS), ("x_o", COLS // 8),
                                                    ("c", 3), ("x_i", 8)]


def test_channels_inside_a_strip_are_streams_not_short_runs() -> None:
    """Each channel's row continues along ``x_o``: a run of the whole row (factor 1),
    not 32 bytes per channel (a short run: nearly 4)."""
    f = _normalize()
    st = _materialized(f).stmt("out")
    nest = loops(st, (), STRIP)
    write = next(a for a in st.accesses if a.write)
    assert cost._stream_factor(write, nest, st.vars) < 1.1


def test_the_producer_is_computed_per_strip_and_gives_numpys_values() -> None:
    f = _normalize()
    s = _materialized(f)
    got = _per_tile(s.stmt("out"), s.stmt("p"), M, STRIP)
    assert got is not None and got[1].level == "x_o"  # 4 x 8 values, not a row's
    f.auto_schedule()
    at = [c for c in f.commands.items if isinstance(c, cmd.ComputeAt)]
    assert [(c.comp, c.consumer) for c in at] == [("p", "out")]
    a = np.random.default_rng(0).random((4, ROWS, COLS)).astype(np.float32) + 0.1
    np.testing.assert_allclose(f.compile()(inp=a)["out"], _reference(a), rtol=1e-6)


def _columns() -> me.Function:
    """``out[y, x] = b[y, x] + b[y + 1, x]`` of a pointwise ``b``."""
    with me.Function("strip_cols") as f:
        inp = me.Input("inp", [ROWS + 1, COLS], me.float32)
        y, x = me.Var("y", 0, ROWS + 1), me.Var("x", 0, COLS)
        b = me.Computation("b", [y, x], inp[y, x] * 3.0 + 1.0)
        y2, x2 = me.Var("y", 0, ROWS), me.Var("x", 0, COLS)
        me.Computation("out", [y2, x2], b[y2, x2] + b[y2 + 1, x2])
    return f


def test_a_producer_per_column_is_priced_as_scalar_code() -> None:
    """Computed per iteration of a column loop of its reader, ``b``'s own row loop is one
    element wide: each point costs what ``b`` costs without vectors, not its vector
    plan's share (which made a blur per column look cheap)."""
    f = _columns()
    s = summarize(f, {}, None, list(f.commands.items))
    b, out = s.stmt("b"), s.stmt("out")
    vector = next(p for _, p in space.ranked(b, (), M) if p.vector == "x")
    dim, scalar = _narrow(b, vector, M)
    assert dim == 1
    assert scalar > 2 * cost.compute_cycles(b, loops(b, (), vector), M) / b.points
    cols = Plan(("x", "y"))
    got = _per_tile(out, b, M, cols)
    assert got is not None and got[1].level == "x"
    here = cost.cost(out, loops(out, (), cols), M, frozenset({"b"}))
    assert got[0] == pytest.approx(here + scalar * (ROWS + 1) * COLS)
