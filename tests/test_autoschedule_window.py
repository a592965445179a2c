"""The auto-scheduler's sliding windows (``autosched/placement.py::_per_tile``): a stencil's
producer whose region per strip of its reader does not fit half of L2 while a row's does
is priced per row of the strip, stored per strip (Halide's ``store_at`` outside
``compute_at``) with its buffer folded to a line buffer; the search applies that
placement (legal, numpy's values, the fold in the printed schedule); and a producer
whose reader's iterations share nothing (channels) gets no window."""

from __future__ import annotations

import numpy as np
from halide_util import assert_same, halide_realize

import middleend as me
from frontends.halide import apps, compile_pipeline
from middleend.autosched import cost
from middleend.autosched.placement import At, _per_tile
from middleend.autosched.plan import Plan
from middleend.autosched.result import AutoSchedule
from middleend.autosched.search import search
from middleend.driver.summary import summarize
from middleend.ir import commands as cmd

ROWS, COLS = 128, 8192
# 512 KiB of L2: a 64-row strip of the producer (66 x 8192 floats, 2.1 MiB) does not fit
# half of it, three rows (96 KiB) do
M = cost.MachineModel(32, 16, (32 << 10, 512 << 10, 32 << 20), 2)
STRIPS = Plan(("y", "x"), (("y", 64),), vector="x", lanes=8, parallel="y")


def _blur() -> me.Function:
    """``out[y, x] = b[y] + b[y + 1] + b[y + 2]`` of a pointwise ``b``, ``b`` materialized
    (not inlined)."""
    with me.Function("win_blur") as f:
        inp = me.Input("inp", [ROWS + 2, COLS], me.float32)
        y, x = me.Var("y", 0, ROWS + 2), me.Var("x", 0, COLS)
        b = me.Computation("b", [y, x], me.sqrt(inp[y, x] * inp[y, x] + 1.0))
        y2, x2 = me.Var("y", 0, ROWS), me.Var("x", 0, COLS)
        me.Computation("out", [y2, x2], b[y2, x2] + b[y2 + 1, x2] + b[y2 + 2, x2])
    return f


def _reference(a: np.ndarray) -> np.ndarray:
    b = np.sqrt(a * a + np.float32(1))
    return b[:-2] + b[1:-1] + b[2:]


def test_a_strip_too_big_for_l2_is_priced_as_a_window_of_rows() -> None:
    f = _blur()
    s = summarize(f, {}, None, list(f.commands.items))
    got = _per_tile(s.stmt("out"), s.stmt("b"), M, STRIPS)
    assert got is not None
    at = got[1]
    # computed per row, stored per strip, its buffer folded to 4 rows (3 read per row)
    assert (at.level, at.store, at.fold) == ("y_i", "y_o", (0, 4))
    assert "sliding window" in at.describe()


def test_the_search_applies_the_window_with_its_fold() -> None:
    f = _blur()
    at = At("b", "out", STRIPS, "y_i", "y_o", (0, 4))
    found = search(f, M, placed=[at])
    folds = [c for c in found.commands if isinstance(c, cmd.StorageFold)]
    assert [(c.comp, c.dim, c.factor) for c in folds] == [("b", 0, 4)]
    allocs = [c for c in found.commands if isinstance(c, cmd.AllocateAt)]
    assert [(c.comp, c.level) for c in allocs] == [("b", "y_o")]
    a = np.random.default_rng(0).random((ROWS + 2, COLS)).astype(np.float32)
    # printed with the fold (which the search added), the schedule replays as it is
    text = AutoSchedule(f.name, "cpu", found.commands, found.choices, 0.0, 0,
                        added=folds).python()
    assert 'f.computation("b").storage_fold(0, 4)' in text
    g = _blur()
    exec(text, {"f": g, "me": me})
    f.commands.items = found.commands
    for k in (f, g):
        np.testing.assert_allclose(k.compile()(inp=a)["out"], _reference(a), rtol=1e-6)


def test_a_window_too_short_for_its_fold_falls_back_to_an_unfolded_one() -> None:
    """A fold of 2 rows (the model's fold were it wrong): refused by the legality check,
    so the window is applied unfolded; numpy's values."""
    f = _blur()
    at = At("b", "out", STRIPS, "y_i", "y_o", (0, 2))
    found = search(f, M, placed=[at])
    assert not any(isinstance(c, cmd.StorageFold) for c in found.commands)
    assert any(isinstance(c, cmd.AllocateAt) and c.level == "y_o" for c in found.commands)
    f.commands.items = found.commands
    a = np.random.default_rng(1).random((ROWS + 2, COLS)).astype(np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["out"], _reference(a), rtol=1e-6)


def test_a_chain_computed_in_the_outputs_loops_is_applied_consumers_first() -> None:
    """A chain of 4 stencils, each stage placed per strip of the output by the model:
    the search applies the stages consumers first (a stage is legal in the output's loops
    only once its reader is there), so none is refused; Halide's values."""
    app = apps.stencil_chain(256, 256, stages=4, schedule="inline")
    k = compile_pipeline([app.output])
    built = k.translate(app.sizes, **app.by_name())
    res = built.fn.auto_schedule(outputs=built.outputs)
    placed = [n for n in res.notes if n.startswith("placement:") and "per iteration" in n]
    assert len(placed) == 3, res.notes
    assert not [n for n in res.notes if "refused" in n], res.notes
    assert_same(compile_pipeline([app.output], schedule="auto").realize(
        app.sizes, **app.by_name()), halide_realize([app.output], app.sizes, app.inputs))
