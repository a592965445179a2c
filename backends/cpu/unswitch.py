"""Loop unswitching on the loop AST before C printing: a condition that does not change
inside an innermost scalar loop is tested once, outside it, with one copy of the loop per
outcome.

Why: ISL guards a partial tile's statements where they are: with a 6-row register tile
and N = 2048 (2048 = 6 * 341 + 2), sgemm's k loop holds ``if (i_uo <= 340) { rows 2..5 }``
in every iteration. gcc 12 does not unswitch a loop body that large (its
``max-unswitch-insns`` is 50), so the hot loop carried the test, six flags and three
reloaded row offsets per iteration: 30 instructions for 12 FMAs instead of 24. The
condition only reads outer iterators and parameters, so testing it once is exact.

Only loops without a tag (not parallel, vector or unrolled) whose bodies hold no loop but
vector loops are unswitched (the loops gcc's code quality depends on), on conditions
reached through blocks only, and at most :data:`MAX_COPIES` copies of a loop are made, so
the code grows by a bounded factor.
"""

from __future__ import annotations

from dataclasses import replace

from middleend.ir.loopast import Alloc, Block, For, IExpr, If, Node, Program, ivars

MAX_COPIES = 4  # copies of one loop at most (two nested unswitches)


def unswitch_program(program: Program) -> Program:
    """``program`` with its innermost scalar loops unswitched (see the module doc)."""
    body = _walk(program.body)
    return program if body is program.body else replace(program, body=body)


def _walk(node: Node) -> Node:
    """Unswitch bottom-up; returns ``node`` itself when nothing changed."""
    if isinstance(node, Block):
        body = tuple(_walk(n) for n in node.body)
        return node if all(a is b for a, b in zip(body, node.body, strict=True)) \
            else Block(body)
    if isinstance(node, If):
        then = _walk(node.then)
        orelse = None if node.orelse is None else _walk(node.orelse)
        return node if then is node.then and orelse is node.orelse \
            else If(node.cond, then, orelse)
    if isinstance(node, Alloc):
        body = _walk(node.body)
        return node if body is node.body else replace(node, body=body)
    if isinstance(node, For):
        body = _walk(node.body)
        loop = node if body is node.body else replace(node, body=body)
        if loop.tag is None and _innermost_scalar(loop.body):
            return _unswitched(loop, MAX_COPIES)
        return loop
    return node


def _innermost_scalar(node: Node) -> bool:
    """True if ``node`` holds no loop except vector loops."""
    if isinstance(node, For):
        return node.tag == "vector" and _innermost_scalar(node.body)
    if isinstance(node, Block):
        return all(_innermost_scalar(n) for n in node.body)
    if isinstance(node, If):
        return _innermost_scalar(node.then) and (node.orelse is None
                                                 or _innermost_scalar(node.orelse))
    if isinstance(node, Alloc):
        return _innermost_scalar(node.body)
    return True


def _unswitched(loop: For, copies: int) -> Node:
    """``loop``, or ``if (c) loop[c true] else loop[c false]`` for the first invariant
    condition ``c`` in its body (then the same for each copy, within ``copies``)."""
    if copies < 2:
        return loop
    cond = _invariant_if(loop.body, loop.var)
    if cond is None:
        return loop
    then = replace(loop, body=_decided(loop.body, cond, True))
    orelse = replace(loop, body=_decided(loop.body, cond, False))
    return If(cond, _unswitched(then, copies // 2), _unswitched(orelse, copies // 2))


def _invariant_if(node: Node, var: str) -> IExpr | None:
    """The condition of the first ``If`` reached through blocks whose condition does not
    read ``var`` (the loop's iterator; inner loops are not entered)."""
    if isinstance(node, If):
        return node.cond if var not in ivars(node.cond) else None
    if isinstance(node, Block):
        for n in node.body:
            c = _invariant_if(n, var)
            if c is not None:
                return c
    return None


def _decided(node: Node, cond: IExpr, value: bool) -> Node:
    """``node`` with every ``If`` on ``cond`` reached through blocks replaced by the branch
    ``value`` selects (an empty block where there is no else)."""
    if isinstance(node, If) and node.cond == cond:
        taken = node.then if value else node.orelse
        return Block(()) if taken is None else taken
    if isinstance(node, Block):
        return Block(tuple(_decided(n, cond, value) for n in node.body))
    return node


__all__ = ["MAX_COPIES", "unswitch_program"]
