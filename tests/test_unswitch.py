"""Loop unswitching before C printing (backends/cpu/unswitch.py): an invariant condition
leaves the innermost scalar loop, with exact results."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from backends.cpu.unswitch import MAX_COPIES, unswitch_program
from middleend.api.examples import sgemm_packed
from middleend.ir.loopast import Block, For, If, IInt, IOp, IVar, Node, Program, Stmt
from middleend.passes import astgen


def _loop(var: str, body: Node, tag: str | None = None) -> For:
    return For(var, IInt(0), IOp("le", (IVar(var), IInt(9))), 1, body, tag)


def _stmt(name: str) -> Stmt:
    return Stmt(name, ())


def _program(body: Node) -> Program:
    return Program("p", (), (), body)


def _innermost_ifs(node: Node, loops: tuple[For, ...] = ()) -> list[tuple[For, If]]:
    """(innermost enclosing scalar loop, if) for every if inside a loop without a tag."""
    out: list[tuple[For, If]] = []
    if isinstance(node, For):
        for child in (node.body,):
            out += _innermost_ifs(child, (*loops, node) if node.tag is None else loops)
    elif isinstance(node, Block):
        for child in node.body:
            out += _innermost_ifs(child, loops)
    elif isinstance(node, If):
        if loops:
            out.append((loops[-1], node))
        out += _innermost_ifs(node.then, loops)
        if node.orelse is not None:
            out += _innermost_ifs(node.orelse, loops)
    elif hasattr(node, "body"):
        out += _innermost_ifs(node.body, loops)  # type: ignore[attr-defined]
    return out


def test_invariant_condition_leaves_the_loop() -> None:
    cond = IOp("le", (IVar("t3"), IInt(4)))
    body = _loop("t3", _loop("t7", Block((_stmt("a"), If(cond, _stmt("b"))))))
    out = unswitch_program(_program(body)).body
    assert isinstance(out, For) and out.var == "t3"
    assert out.body == If(cond, _loop("t7", Block((_stmt("a"), _stmt("b")))),
                          _loop("t7", Block((_stmt("a"), Block(())))))


def test_variant_condition_and_tagged_loops_stay() -> None:
    variant = IOp("le", (IVar("t7"), IInt(4)))
    body = _loop("t7", Block((_stmt("a"), If(variant, _stmt("b")))))
    assert unswitch_program(_program(body)).body == body
    invariant = IOp("le", (IVar("t3"), IInt(4)))
    for tag in ("parallel", "vector", "unroll"):
        tagged = _loop("t7", Block((_stmt("a"), If(invariant, _stmt("b")))), tag)
        assert unswitch_program(_program(tagged)).body == tagged
    outer = _loop("t5", _loop("t7", _stmt("a")))  # not innermost: holds a scalar loop
    wrapped = _loop("t5", Block((If(invariant, _stmt("b")), _loop("t7", _stmt("a")))))
    assert unswitch_program(_program(outer)).body == outer
    assert unswitch_program(_program(wrapped)).body == wrapped


def test_copies_are_bounded() -> None:
    conds = [IOp("le", (IVar(f"t{k}"), IInt(4))) for k in range(4)]
    body = _loop("t9", Block(tuple(If(c, _stmt(f"s{k}")) for k, c in enumerate(conds))))
    out = unswitch_program(_program(body)).body
    copies: list[For] = []

    def collect(n: Node) -> None:
        if isinstance(n, For):
            copies.append(n)
        elif isinstance(n, If):
            collect(n.then)
            if n.orelse is not None:
                collect(n.orelse)
    collect(out)
    assert len(copies) == MAX_COPIES


def test_sgemm_partial_tile_unswitched(rng: np.random.Generator,
                                       monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    """Where the AST generator does not separate the partial tile (here: its operation
    budget for the separation is made too small, so it falls back to one loop nest), the
    guard it leaves in the k loop is unswitched. The fallback is said on the lowering's
    logger (a performance cliff: slower code, the same values), and only then."""
    n = 16  # 3-row register tiles: 16 = 3 * 5 + 1, a partial last tile
    with caplog.at_level(logging.INFO, logger="middleend.lower"):
        sgemm_packed(n, tj=8, mr=3, nr=8).lower()
    assert not [r for r in caplog.records if "separation" in r.getMessage()]
    monkeypatch.setattr(astgen, "SEPARATION_OPS", 1)
    monkeypatch.setattr(astgen, "CONSTANT_SEPARATION_OPS", 1)  # n is a constant here
    fn = sgemm_packed(n, tj=8, mr=3, nr=8)
    with caplog.at_level(logging.INFO, logger="middleend.lower"):
        low = fn.lower()
    said = [r.getMessage() for r in caplog.records if "separation" in r.getMessage()]
    assert said and "budget of 1 ISL operations" in said[0] and "upd" in said[0], said
    before = _innermost_ifs(low.program.body)
    assert any(loop.name == "k" for loop, _ in before), "the guard ISL leaves in the k loop"
    after = _innermost_ifs(unswitch_program(low.program).body)
    assert not any(loop.name == "k" for loop, _ in after)
    kernel = fn.compile(target="cpu")
    assert kernel.source.count("/* loop k */") > 1  # a copy of the k loop per outcome
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.full((n, n), np.nan, np.float32)
    kernel(A=a, B=b, C=c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)
