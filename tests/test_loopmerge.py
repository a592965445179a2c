"""Loops that ISL splits at another statement's unrolled loop are joined again
(``middleend/passes/loopmerge.py``): the generated nests, and the values against numpy."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

import middleend as me
from middleend.api.examples import sgemm_packed_a
from middleend.ir.loopast import Block, For, IInt, IOp, IVar, Node, Stmt, walk_loops
from middleend.passes.loopmerge import merge_split_loops


def _loops(node: Node, name: str) -> Iterator[For]:
    return (n for n, _ in walk_loops(node) if isinstance(n, For) and n.name == name)


def _two(rows: int = 4, cols: int = 10, unrolled: int = 3) -> me.Function:
    """S's loop u unrolled, T after S in each iteration of i: ISL cut T's loop k at
    ``unrolled`` (``k < 3`` and ``k >= 3``, the same body twice)."""
    with me.Function("split_at_unroll") as f:
        i, u, k = me.Var("i", 0, rows), me.Var("u", 0, unrolled), me.Var("k", 0, cols)
        s = me.Computation("S", [i, u], me.cast(me.float32, i * 100 + u))
        t = me.Computation("T", [i, k], me.cast(me.float32, i * 1000 + k))
    s.unroll("u")
    t.after(s, "i")
    return f


def test_loop_cut_at_an_unrolled_loop_is_one_loop() -> None:
    low = _two().lower()
    ks = list(_loops(low.program.body, "k"))
    assert len(ks) == 1, [(k.init, k.hi) for k in ks]
    assert (ks[0].init, ks[0].hi) == (IInt(0), IInt(9))
    kernel = _two().compile(target="cpu")
    s = np.full((4, 3), np.nan, np.float32)
    t = np.full((4, 10), np.nan, np.float32)
    kernel(S=s, T=t)
    np.testing.assert_array_equal(s, np.add.outer(np.arange(4) * 100, np.arange(3)))
    np.testing.assert_array_equal(t, np.add.outer(np.arange(4) * 1000, np.arange(10)))


def test_sgemm_tile_loops_whole(rng: np.random.Generator) -> None:
    """sgemm's k loop (3-row register tiles, ``i_ui`` unrolled) is one loop per micro-tile
    instead of ``k < 3`` and ``k >= 3``; C equals numpy's (with a partial last tile)."""
    n = 16
    fn = sgemm_packed_a(n, tj=8, mr=3, nr=8)
    low = fn.lower()
    starts = {k.init for k in _loops(low.program.body, "k")}
    assert starts == {IInt(0)}, starts
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.full((n, n), np.nan, np.float32)
    fn.compile(target="cpu")(A=a, B=b, C=c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)


def _loop(lo: int, hi: int, body: Node, var: str = "t1") -> For:
    return For(var, IInt(lo), IOp("le", (IVar(var), IInt(hi))), 1, body, hi=IInt(hi),
               name="x")


def test_only_contiguous_equal_loops_merge() -> None:
    s = Stmt("S", (("v_x", IVar("t1")),), leaf=0)
    other = Stmt("S", (("v_x", IOp("add", (IVar("t1"), IInt(1)))),), leaf=1)
    same_leaf_apart = Stmt("S", (("v_x", IVar("t1")),), leaf=7)
    got = merge_split_loops(Block((_loop(0, 2, s), _loop(3, 9, same_leaf_apart),
                                   _loop(10, 12, s))))
    assert isinstance(got, Block) and len(got.body) == 1
    assert got.body[0] == _loop(0, 12, s)
    kept = [
        Block((_loop(0, 2, s), _loop(4, 9, s))),  # a gap
        Block((_loop(0, 2, s), _loop(3, 9, other))),  # another body
        Block((_loop(0, 2, s), _loop(3, 9, s, var="t3"))),  # another loop
        Block((_loop(3, 9, s), _loop(0, 2, s))),  # the second before the first
    ]
    for b in kept:
        assert merge_split_loops(b) == b
