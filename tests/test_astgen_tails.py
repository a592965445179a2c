"""Vector tails of computations over many-piece regions (``middleend/passes/astgen.py``:
``_simpler_tail``, ``SEPARATION_PIECES``): the tiled, vectorized stencil chain's producers
are computed per tile over octagon-shaped regions whose partial vectors are many pieces.
Their tails are written in the form ISL generates fastest; what the separation buys must
stay: every stage has full-vector loops with constant bounds and no guard inside. Values
against Halide's realize are in ``tests/test_halide_apps.py``; here, the structure.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import islpy as isl
import pytest

from frontends.halide import apps, compile_pipeline
from middleend.ir.loopast import Block, For, If, IInt, Node, statements
from middleend.passes.astgen import _partial_tiles, _simpler_tail

LANES = 8  # apps.stencil_chain vectorizes by 8


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _vector_loops(node: Node) -> Iterator[For]:
    if isinstance(node, For):
        if node.tag == "vector":
            yield node
        else:
            yield from _vector_loops(node.body)
    elif isinstance(node, Block):
        for c in node.body:
            yield from _vector_loops(c)
    elif isinstance(node, If):
        yield from _vector_loops(node.then)
        if node.orelse is not None:
            yield from _vector_loops(node.orelse)
    elif hasattr(node, "body"):  # Alloc
        yield from _vector_loops(node.body)


def _has_guard(node: Node) -> bool:
    if isinstance(node, If):
        return True
    if isinstance(node, Block):
        return any(_has_guard(c) for c in node.body)
    return _has_guard(node.body) if hasattr(node, "body") else False


def _full_vector_stages(stages: int) -> tuple[set[str], set[str]]:
    """(every stage, the stages with a guard-free full-vector loop) of the chain."""
    app = apps.stencil_chain(stages=stages, schedule=apps.TILED_VECTORIZED)
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    body = built.fn.lower(outputs=built.outputs).program.body
    every, full = set(), set()
    for loop in _vector_loops(body):
        comps = {s.comp for s in statements(loop.body)}
        every |= comps
        if loop.init == IInt(0) and loop.hi == IInt(LANES - 1) and not _has_guard(loop.body):
            full |= comps
    return every, full


def test_every_stage_keeps_guard_free_full_vectors() -> None:
    every, full = _full_vector_stages(4)
    assert len(every) == 4
    assert full == every


def test_deep_chain_separates_all_but_the_many_piece_stages() -> None:
    """At 12 stages the first stages' tails pass SEPARATION_PIECES and are generated
    unseparated; the others keep their full vectors (before, the whole schedule's
    generation passed SEPARATION_OPS and no stage kept them)."""
    every, full = _full_vector_stages(12)
    assert len(every) == 12
    assert len(full) >= 8


def _octagon(ctx: isl.Context) -> isl.Map:
    """A tile's octagon (y, x) with x split by 8: [y, xo, xi] in time-space."""
    return isl.Map.read_from_str(
        ctx, "{ S[y, x] -> [0, y, 0, o, 0, x - 8o, 0] : 0 <= y <= 40 and 0 <= x <= 60 and "
        "x + y >= 10 and x - y <= 45 and y - x <= 25 and x + y <= 90 and "
        "-7 + x <= 8o <= x }")


def test_simpler_tail_is_the_same_set() -> None:
    """The tail of the octagon (its slanted edges cut the partial vectors into more pieces
    than a head and a tail) comes back as the same set, disjoint from the full part."""
    whole = _octagon(isl.Context())
    tail = _partial_tiles(whole, 5)
    assert tail is not None
    full = whole.subtract(tail)
    assert tail.n_basic_map() > 2
    got = _simpler_tail(whole, full, tail)
    assert got.is_equal(tail)
    assert got.intersect(full).is_empty()
    assert got.union(full).is_equal(whole)


def test_simpler_tail_keeps_a_head_and_a_tail() -> None:
    """A rectangle's partial vectors (a head and a tail) keep their form, and so the code
    ISL generates for every program without many-piece tails."""
    whole = isl.Map.read_from_str(
        isl.Context(), "{ S[y, x] -> [0, y, 0, o, 0, x - 8o, 0] : 0 <= y <= 40 and "
        "3 <= x <= 60 and -7 + x <= 8o <= x }")
    tail = _partial_tiles(whole, 5)
    assert tail is not None
    full = whole.subtract(tail)
    assert _simpler_tail(whole, full, tail) is tail
