"""Consecutive loops that ISL split at the bounds of another statement's unrolled loop,
joined again.

ISL's ``unroll`` option applies to a whole depth of the schedule: where one statement's
loop at depth ``d`` is unrolled (the rows of a register tile), ISL splits the loops of the
*other* statements at that depth at the unrolled loop's bounds, although the option's
domain excludes them (reproduced with two statements in sequence, ``S[i, u]`` unrolled
over ``0 <= u < 3`` and ``T[i, k]`` after it: ``T``'s loop comes out as ``k = 0..2`` and
``k = 3..9``, the same body twice). In sgemm's micro-kernels this cut every 16-wide
vector loop that zeroes or stores the accumulator tile into 6 + 10 iterations (gcc then
vectorizes neither fully, with scalar stores for the rest) and the reduction loop into
``k < 6`` and ``k >= 6``.

Two loops in sequence over the same variable, with the same tag and the same body (up to
which ISL leaf each statement came from), where the second starts right after the first
ends, run exactly the statement instances of one loop over both ranges, in the same
order, so they are printed as that loop. Loops with the same tag were one loop of the
schedule, so a merged parallel or vector loop keeps the legality the check proved for it.
Run once the allocations are placed (they read the leaves); GPU loop nests are left alone
(their annotation reads the leaves too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..ir.loopast import Alloc, Block, For, If, IInt, IOp, IVar, Node, Stmt


def merge_split_loops(node: Node) -> Node:
    """``node`` with every run of consecutive mergeable loops (see the module doc) as one
    loop, at every depth."""
    if not isinstance(node, Block):
        return _inside(node, merge_split_loops)
    out: list[Node] = []
    for child in (merge_split_loops(c) for c in node.body):
        if out and (joined := _joined(out[-1], child)) is not None:
            out[-1] = joined
        else:
            out.append(child)
    return Block(tuple(out))


def _joined(a: Node, b: Node) -> For | None:
    """``a`` and ``b`` as one loop, or None when they are not one loop split in two."""
    if not (isinstance(a, For) and isinstance(b, For)) or a.step != 1 or b.step != 1:
        return None
    if not (isinstance(a.hi, IInt) and isinstance(b.init, IInt) and b.hi is not None
            and b.init.value == a.hi.value + 1):
        return None
    same = ("var", "tag", "dim", "name", "width", "command", "axis", "extent")
    if any(getattr(a, f) != getattr(b, f) for f in same) or a.axis is not None:
        return None
    if _without_leaves(a.body) != _without_leaves(b.body):
        return None
    return dataclasses.replace(a, cond=IOp("le", (IVar(a.var), b.hi)), hi=b.hi)


def _without_leaves(node: Node) -> Node:
    """``node`` with every statement's ISL leaf number cleared (for comparing bodies)."""
    if isinstance(node, Stmt):
        return dataclasses.replace(node, leaf=-1)
    if isinstance(node, Block):
        return Block(tuple(_without_leaves(c) for c in node.body))
    return _inside(node, _without_leaves)


def _inside(node: Node, fn: Callable[[Node], Node]) -> Node:
    """A loop, conditional or allocation with ``fn`` applied to what it holds; any other
    node as it is."""
    if isinstance(node, For):
        return dataclasses.replace(node, body=fn(node.body))
    if isinstance(node, If):
        return If(node.cond, fn(node.then), None if node.orelse is None else fn(node.orelse))
    if isinstance(node, Alloc):
        return Alloc(node.buffer, fn(node.body))
    return node
