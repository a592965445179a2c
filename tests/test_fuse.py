"""``comp.fuse(outer, inner, fused)``: one loop over two, the same instances in the same
order, against numpy under several schedules; the fused loop is tagged like any other and
the legality check sees through it; what cannot be fused is refused naming the command."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me


def _scaled(schedule: str) -> tuple[me.Function, np.ndarray]:
    rng = np.random.default_rng(3)
    av = rng.random((7, 9, 5), dtype=np.float32)
    with me.Function("scaled") as fn:
        a = me.Input("a", [7, 9, 5], me.float32)
        i, j, k = me.Var("i", 0, 7), me.Var("j", 0, 9), me.Var("k", 0, 5)
        c = me.Computation("c", [i, j, k], a[i, j, k] * 2.0 + me.cast(me.float32, i - j * k))
        if schedule == "ij_parallel":
            c.fuse(i, j, "ij").parallelize("ij").vectorize(k, 4)
        elif schedule == "after_split":
            c.split(j, 4, "jo", "ji")
            c.fuse(i, "jo", "ijo").parallelize("ijo")
        elif schedule == "innermost_vectorized":
            c.fuse(j, k, "jk").vectorize("jk", 8)
        elif schedule == "twice":
            c.fuse(i, j, "ij").fuse("ij", k, "ijk").parallelize("ijk")
    want = av * 2 + (np.arange(7)[:, None, None] - np.arange(9)[None, :, None]
                     * np.arange(5)[None, None, :]).astype(np.float32)
    return fn, want


@pytest.mark.parametrize("schedule", ["ij_parallel", "after_split", "innermost_vectorized",
                                      "twice"])
def test_fused_loops_give_numpys_values(schedule: str) -> None:
    fn, want = _scaled(schedule)
    rng = np.random.default_rng(3)
    av = rng.random((7, 9, 5), dtype=np.float32)
    np.testing.assert_array_equal(fn.compile("cpu")(a=av)["c"], want)


def test_a_triangle_fuses_with_gaps_skipped() -> None:
    """The inner extent of a triangle varies: the fused loop spans the widest row and the
    instances, not the gaps, run (each exactly once: a count per cell)."""
    with me.Function("tri") as fn:
        i = me.Var("i", 0, 6)
        j = me.Var("j", 0, i + 1)
        c = me.Computation("c", [i, j], me.cast(me.float32, i * 10 + j))
        c.fuse(i, j, "ij").parallelize("ij")
    out = fn.compile("cpu")()["c"]
    want = np.array([[i * 10 + j if j <= i else 0 for j in range(6)] for i in range(6)],
                    np.float32)
    np.testing.assert_array_equal(out, want)


def test_fusing_keeps_the_dependences_checked() -> None:
    """A prefix sum along j: fusing i and j is legal (same order); parallelizing the fused
    loop is not (it carries the sum), and the error names the parallelize."""
    rng = np.random.default_rng(5)
    av = rng.random((4, 6), dtype=np.float32)

    def build(par: bool) -> me.Function:
        with me.Function("psum") as fn:
            a = me.Input("a", [4, 6], me.float32)
            i = me.Var("i", 0, 4)
            s = me.Buffer("s", [4, 6], me.float32, kind="output")
            init = me.Computation("init", [i], a[i, 0])
            init.store_in(s, [i, 0])
            j1 = me.Var("j", 1, 6)
            step = me.Computation("step", [i, j1], s[i, j1 - 1] + a[i, j1])
            step.store_in(s, [i, j1])
            step.after(init, me.ROOT)
            step.fuse(i, j1, "ij")
            if par:
                step.parallelize("ij")
        return fn

    out = build(False).compile("cpu")(a=av)["s"]
    np.testing.assert_allclose(out, np.cumsum(av, axis=1), rtol=1e-6)
    with pytest.raises(me.ScheduleError, match="parallelize") as e:
        build(True).compile("cpu")
    assert "dependence" in str(e.value)


def test_what_cannot_be_fused_is_refused() -> None:
    def attempt(apply: object) -> str:
        with me.Function("bad") as fn:
            n = me.Param("N")
            i, j, k = me.Var("i", 0, 4), me.Var("j", 0, n), me.Var("k", 0, 3)
            c = me.Computation("c", [i, j, k], me.cast(me.float32, i + j + k))
            apply(c)  # type: ignore[operator]
        with pytest.raises(me.ScheduleError) as e:
            fn.compile("cpu")
        return str(e.value)

    assert "directly inside" in attempt(lambda c: c.fuse("i", "k", "ik"))
    assert "already tagged" in attempt(lambda c: c.parallelize("k").fuse("j", "k", "jk"))
    assert "not bounded by constants" in attempt(lambda c: c.fuse("i", "j", "ij"))
    assert "already used" in attempt(lambda c: c.fuse("j", "k", "i"))
