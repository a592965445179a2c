"""The ordering commands (``after``/``before``/``then``, and the place compute_at gives a
producer) hold whatever order they were written in, as a graph: every permutation of a
program's ordering commands gives the time-space of the one written in dependency order
and numpy's values; orderings that cannot all hold are refused naming both commands."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

import middleend as me

_A = np.random.default_rng(11).random((6, 5), dtype=np.float32)


def _layer2(fn: me.Function) -> str:
    text = fn.layers()
    return text[text.index("== Layer II"):text.index("== Layer III")]


def _betas(fn: me.Function) -> dict[str, list[int]]:
    ts = fn.lower().ts
    return {n: list(ts.comps[n].betas) for n in ts.order}


def _row_program(perm: tuple[int, ...], schedule: str) -> me.Function:
    """init[i] at the root, then per row i: t writes the row into a one-row buffer, y reads
    it. Only y sharing t's loop i gives the right values (the legality check refuses any
    other order): ``y.after(t, i)`` must survive ``t.after(init, ROOT)`` written after it."""
    with me.Function("rows") as fn:
        a = me.Input("a", [6, 5], me.float32)
        i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
        row = me.Buffer("row", [5], me.float32, kind="temporary")
        init = me.Computation("init", [i], a[i, 0] * 3.0)
        t = me.Computation("t", [i, j], a[i, j] * 2.0)
        t.store_in(row, [j])
        y = me.Computation("y", [i, j], t[i, j] + init[i])
        if schedule == "vector":
            t.vectorize(j, 4)
        elif schedule == "split":
            y.split(j, 2, "jo", "ji")
        orderings: list[Callable[[], object]] = [
            lambda: t.after(init, me.ROOT),
            lambda: y.after(t, i),
        ]
        for k in perm:
            orderings[k]()
    return fn


@pytest.mark.parametrize("schedule", ["plain", "vector", "split"])
@pytest.mark.parametrize("perm", list(itertools.permutations(range(2))))
def test_a_later_move_of_the_anchor_keeps_the_shared_loop(perm: tuple[int, ...],
                                                          schedule: str) -> None:
    fn = _row_program(perm, schedule)
    assert _layer2(fn) == _layer2(_row_program((0, 1), schedule))
    betas = _betas(fn)
    assert betas["t"][0] == betas["y"][0] != betas["init"][0]  # t and y share loop i
    out = fn.compile("cpu")(a=_A)
    np.testing.assert_allclose(out["y"], _A * 2 + _A[:, :1] * 3, rtol=1e-6)


def _chain_program(perm: tuple[int, ...], kind: str) -> me.Function:
    """Four computations over (i, j): b after a sharing i, c after b sharing i and j, d
    after c at the root, written as after, before or then; the values are a running
    combination that each later computation reads from the ones before."""
    with me.Function("chain") as fn:
        x = me.Input("x", [6, 5], me.float32)
        i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
        a = me.Computation("a", [i, j], x[i, j] + 1.0)
        b = me.Computation("b", [i, j], a[i, j] * 2.0)
        c = me.Computation("c", [i, j], b[i, j] - x[i, j])
        d = me.Computation("d", [i, j], c[i, j] + a[i, 4 - j])
        rels = [(b, a, i), (c, b, j), (d, c, me.ROOT)]

        def order(later: me.Computation, earlier: me.Computation, level: object) -> None:
            if kind == "after":
                later.after(earlier, level)
            elif kind == "before":
                earlier.before(later, level)
            else:
                earlier.then(later, level)
        for k in perm:
            order(*rels[k])
    return fn


@pytest.mark.parametrize("kind", ["after", "before", "then"])
def test_every_order_of_a_chain_at_different_depths_gives_one_nest(kind: str) -> None:
    ref = _chain_program((0, 1, 2), kind)
    want_nest = _layer2(ref)
    betas = _betas(ref)
    # sharing k loops: the same first k constant dimensions, a different next one
    assert betas["a"][:1] == betas["b"][:1] and betas["a"][1] != betas["b"][1]
    assert betas["b"][:2] == betas["c"][:2] and betas["b"][2] != betas["c"][2]
    assert betas["c"][0] != betas["d"][0]
    xa = _A + 1
    want = xa * 2 - _A + xa[:, ::-1]
    for perm in itertools.permutations(range(3)):
        fn = _chain_program(perm, kind)
        assert _layer2(fn) == want_nest, perm
        np.testing.assert_allclose(fn.compile("cpu")(x=_A)["d"], want, rtol=1e-6)


def _two_after_one(first: str, level_b: str, level_c: str) -> me.Function:
    """b and c both after a (at their levels), the commands written in either order, a
    itself moved after z at the root last."""
    with me.Function("fan") as fn:
        x = me.Input("x", [6, 5], me.float32)
        i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
        z = me.Computation("z", [i, j], x[i, j] * 0.5)
        a = me.Computation("a", [i, j], x[i, j] + z[i, j])
        b = me.Computation("b", [i, j], a[i, j] * 3.0)
        c = me.Computation("c", [i, j], a[i, j] - 1.0)
        cmds = {"b": lambda: b.after(a, level_b), "c": lambda: c.after(a, level_c)}
        cmds[first]()
        cmds["c" if first == "b" else "b"]()
        a.after(z, me.ROOT)
    return fn


@pytest.mark.parametrize("levels", [("i", "i"), ("j", "i"), ("i", "j"), ("j", "j")])
@pytest.mark.parametrize("first", ["b", "c"])
def test_two_computations_after_the_same_one(first: str, levels: tuple[str, str]) -> None:
    """Both keep the loops they share with a, which moved after both commands."""
    fn = _two_after_one(first, *levels)
    betas = _betas(fn)
    for comp, level in zip("bc", levels, strict=True):
        depth = 1 if level == "i" else 2
        # sharing k loops: the same first k constant dimensions, a different next one
        assert betas[comp][:depth] == betas["a"][:depth], (comp, betas)
        assert betas[comp][depth] != betas["a"][depth], (comp, betas)
    out = fn.compile("cpu")(x=_A)
    np.testing.assert_allclose(out["b"], _A * 1.5 * 3, rtol=1e-6)
    np.testing.assert_allclose(out["c"], _A * 1.5 - 1, rtol=1e-6)


def test_one_computation_after_two_others_in_either_order() -> None:
    """c after a and after b (b after a), all sharing i: c goes after the later of them,
    whichever command comes first."""
    nests = []
    for flip in (False, True):
        with me.Function("join") as fn:
            x = me.Input("x", [6, 5], me.float32)
            i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
            a = me.Computation("a", [i, j], x[i, j] + 1.0)
            b = me.Computation("b", [i, j], x[i, j] * 2.0)
            c = me.Computation("c", [i, j], a[i, j] + b[i, j])
            if flip:
                c.after(a, i)
                c.after(b, i)
            else:
                c.after(b, i)
                c.after(a, i)
            b.after(a, i)
        nests.append(_layer2(fn))
        assert fn.lower().ts.order == ["a", "b", "c"]
        np.testing.assert_allclose(fn.compile("cpu")(x=_A)["c"], _A * 3 + 1, rtol=1e-6)
    assert nests[0] == nests[1]


def test_a_producer_computed_at_a_consumer_moved_later() -> None:
    """compute_at written before the consumer is moved: the producer goes with it."""
    results = []
    for consumer_moved_first in (True, False):
        with me.Function("cat") as fn:
            x = me.Input("x", [6, 5], me.float32)
            i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
            z = me.Computation("z", [i, j], x[i, j] * 0.5)
            p = me.Computation("p", [i, j], x[i, j] * 4.0)
            c = me.Computation("c", [i, j], p[i, j] + z[i, 4 - j])
            if consumer_moved_first:
                c.after(z, me.ROOT)
                p.compute_at(c, i)
            else:
                p.compute_at(c, i)
                c.after(z, me.ROOT)
        results.append(_layer2(fn))
        np.testing.assert_allclose(fn.compile("cpu")(x=_A)["c"],
                                   _A * 4 + _A[:, ::-1] * 0.5, rtol=1e-6)
    assert results[0] == results[1]


def _three(i: me.Var, j: me.Var) -> tuple[me.Computation, me.Computation, me.Computation]:
    """a, b, c over one 6 x 5 domain, independent of each other (any order is legal)."""
    x = me.Input("x", [6, 5], me.float32)
    return (me.Computation("a", [i, j], x[i, j] + 1.0),
            me.Computation("b", [i, j], x[i, j] * 2.0),
            me.Computation("c", [i, j], x[i, j] * 3.0))


def _refused(build: Callable[[], me.Function]) -> str:
    with pytest.raises(me.ScheduleError) as err:
        build().lower()
    return str(err.value)


def test_a_cycle_is_refused_naming_both_commands() -> None:
    def build() -> me.Function:
        with me.Function("cyc") as fn:
            i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
            a, b, c = _three(i, j)
            b.after(a, i)
            c.after(b, j)
            a.after(c, me.ROOT)
        return fn
    msg = _refused(build)
    first = msg.splitlines()[0]
    assert "contradictory" in first
    for text in ("b.after(other='a', level='i')", "c.after(other='b', level='j')",
                 "a.after(other='c', level='__root__')"):
        assert text in first


def test_two_depths_that_disagree_are_refused_naming_both_commands() -> None:
    """c after a at the root but after b sharing i, with b sharing i with a: no order
    gives both (whichever is written first)."""
    for flip in (False, True):
        def build(flip: bool = flip) -> me.Function:
            with me.Function("depths") as fn:
                i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
                a, b, c = _three(i, j)
                b.after(a, i)
                cmds = [lambda: c.after(a, me.ROOT), lambda: c.after(b, i)]
                for f in reversed(cmds) if flip else cmds:
                    f()
            return fn
        first = _refused(build).splitlines()[0]
        assert "contradictory ordering" in first
        assert "c.after(other='a', level='__root__')" in first
        assert "c.after(other='b', level='i')" in first


def test_a_statement_after_itself_and_an_unknown_loop_stay_one_line_errors() -> None:
    def itself() -> me.Function:
        with me.Function("self") as fn:
            x = me.Input("x", [6], me.float32)
            i = me.Var("i", 0, 6)
            a = me.Computation("a", [i], x[i] + 1.0)
            a.after(a, i)
        return fn

    def no_loop() -> me.Function:
        with me.Function("noloop") as fn:
            x = me.Input("x", [6], me.float32)
            i = me.Var("i", 0, 6)
            a = me.Computation("a", [i], x[i] + 1.0)
            b = me.Computation("b", [i], a[i] * 2.0)
            b.after(a, "k")
        return fn
    assert "cannot follow itself" in _refused(itself).splitlines()[0]
    assert "has no loop 'k'" in _refused(no_loop).splitlines()[0]
