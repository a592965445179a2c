"""compute_at of a producer that several computations read inside the same iteration: the
consumer, and a computation itself computed at that consumer's loop. The producer is
computed, per iteration, for all their reads (the union of the footprints) and before all
of them; checked against numpy, and by the producer's placement in Layer II."""

from __future__ import annotations

import islpy as isl
import numpy as np
import pytest

import middleend as me


def _pipeline(q_level: str, wide: bool) -> me.Function:
    """p = 2a; q[i, j] = p[i, j] + p[i + 1, j]; c[i, j] = q[i, j] + p[i, j + s]."""
    s = 3 if wide else 0
    with me.Function("shared") as f:
        n, m = 9, 11
        i, j = me.Var("i", 0, n), me.Var("j", 0, m)
        pi, pj = me.Var("i", 0, n + 1), me.Var("j", 0, m + s)
        a = me.Input("a", [n + 1, m + s], me.float32)
        p = me.Computation("p", [pi, pj], a[pi, pj] * 2)
        q = me.Computation("q", [i, j], p[i, j] + p[i + 1, j])
        c = me.Computation("c", [i, j], q[i, j] + p[i, j + s])
        q.compute_at(c, q_level)
        p.compute_at(c, "i")
    return f


@pytest.mark.parametrize("q_level", ["i", "j"])
@pytest.mark.parametrize("wide", [False, True])
def test_producer_computed_for_the_consumer_and_a_sibling(q_level: str, wide: bool,
                                                          rng: np.random.Generator) -> None:
    s = 3 if wide else 0
    a = rng.random((10, 11 + s), dtype=np.float32)
    f = _pipeline(q_level, wide)
    got = f.compile(outputs=["c"])(a=a)["c"]
    p = a * 2
    ref = p[:-1, :11] + p[1:, :11] + p[:-1, s:s + 11]
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    # per iteration i_o of c's loop i: row i_o for c (and q) and row i_o + 1 for q
    text = f.layers()
    text = text[text.index("== Layer II"):text.index("== Layer III")]
    line = next(ln for ln in text.splitlines() if ln.startswith("{ p["))
    per = isl.Map(line).domain().fix_val(isl.dim_type.set, 0, isl.Val("4"))
    rows = {4: 11 + s, 5: 11}
    for row, cols in rows.items():
        got_row = per.fix_val(isl.dim_type.set, 1, isl.Val(str(row)))
        assert got_row.count_val().to_python() == cols, (row, line)
    assert per.count_val().to_python() == sum(rows.values()), line


@pytest.mark.parametrize("level", ["i", "root"])
def test_a_scan_computed_at_its_consumer(level: str, rng: np.random.Generator) -> None:
    """A prefix sum (``s[r] += s[r - 1]``) that its consumer reads through memory, computed
    per iteration of the consumer: every earlier element of the scan is recomputed there
    (the closure of the scan's own reads), its initialization first."""
    n = 9
    with me.Function("scan") as f:
        i, r = me.Var("i", 0, n), me.Var("r", 1, n)
        a = me.Input("a", [n], me.int32)
        s = me.Computation("s", [i], a[i])
        su = s.update([r], lambda prev: prev + s.memory[r - 1], at=[r], name="su")
        c = me.Computation("c", [i], s.memory[i] * 3)
        if level == "i":
            s.compute_at(c, "i")
            su.compute_at(c, "i")
    a = rng.integers(-50, 50, n).astype(np.int32)
    np.testing.assert_array_equal(f.compile(outputs=["c"])(a=a)["c"], np.cumsum(a) * 3)
    if level == "i":
        text = f.layers()
        line = next(ln for ln in text[text.index("== Layer II"):].splitlines()
                    if ln.startswith("{ su["))
        per = isl.Map(line).domain().fix_val(isl.dim_type.set, 0, isl.Val("5"))
        assert per.count_val().to_python() == 5, line  # r = 1..5 at i = 5


@pytest.mark.parametrize("level", ["i", "j"])
@pytest.mark.parametrize("shared", ["j", "i"])
def test_producer_computed_for_computations_after_the_consumer(
        level: str, shared: str, rng: np.random.Generator) -> None:
    """``c1.after(c0, ...)`` reads ``p`` at ``j + 1``, ``c0`` at ``j``: with ``p`` at
    ``c0``'s loop ``level``, ``c1`` runs in the same iteration when it shares that loop
    (then ``p`` is computed for both reads, Halide's Tuple elements); when it shares less
    (``after`` at ``i``, ``p`` at ``j``) it does not, and the read is refused, never wrong."""
    n, m = 7, 9
    with me.Function(f"after_{level}_{shared}") as f:
        i, j = me.Var("i", 0, n), me.Var("j", 0, m)
        pi, pj = me.Var("i", 0, n), me.Var("j", 0, m + 1)
        a = me.Input("a", [n, m + 1], me.float32)
        p = me.Computation("p", [pi, pj], a[pi, pj] * 2)
        c0 = me.Computation("c0", [i, j], p[i, j] + 1)
        c1 = me.Computation("c1", [i, j], p[i, j + 1] * 3)
        p.compute_at(c0, level)
        c1.after(c0, shared)
    a_in = rng.random((n, m + 1), dtype=np.float32)
    if level == "j" and shared == "i":
        with pytest.raises(me.ScheduleError, match="c1"):
            f.compile(outputs=["c0", "c1"])
        return
    got = f.compile(outputs=["c0", "c1"])(a=a_in)
    np.testing.assert_allclose(got["c0"], a_in[:, :m] * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(got["c1"], a_in[:, 1:] * 2 * 3, rtol=1e-6)
