"""Unrolled loops expanded on the loop AST, one copy of the body per iteration.

ISL can unroll a loop itself while it generates the AST (its ``unroll`` option), but it
does so by computing, for every copy, the exact set of outer iterations where that copy
runs, over the whole schedule: on a register-tiled sgemm at N = 67 (a 4-row tile
unrolled) the AST generation took 1.6-2.4 s with the option and 0.2 s without it. The
copies themselves are simple: iteration ``c`` of ``for (t = lo; t <= hi; t++)`` is the
body with ``t = lo + c``, run when ``lo + c <= hi``; the loop's extent ``hi - lo`` is
bounded by a constant (``schedule.check_unrollable`` refuses the others). So the loop is
generated as a loop and expanded here: the copies are guarded only where ``hi`` is not a
constant (a partial tile: ``if (M >= 8 * j_o + 3)``), the guards that fold to a constant
are decided, and index expressions are folded where their operands are constants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from middleend.ir.intervals import Interval, iexpr_interval, loop_range
from middleend.ir.loopast import (
    Alloc,
    Block,
    For,
    IExpr,
    If,
    IInt,
    IOp,
    IVar,
    Node,
    Stmt,
    ieval,
)

# ops folded when every operand is a constant (comparisons give 0 / 1)
_FOLD = frozenset("add sub mul neg min max eq ne lt le gt ge and or not".split())


def expand_unrolled(node: Node, extent: Callable[[For], int | None],
                    env: Mapping[str, Interval] | None = None) -> Node:
    """``node`` with every loop tagged ``unroll`` replaced by its copies; ``extent``: the
    most a loop's ``hi - lo`` is over its iterations (None: not bounded by a constant, the
    loop is left to the C compiler's unrolling); ``env``: the ranges of the loops around
    ``node`` (a copy's guard is left out where they prove it)."""
    env = env or {}
    if isinstance(node, Block):
        return Block(tuple(expand_unrolled(n, extent, env) for n in node.body))
    if isinstance(node, If):
        return If(node.cond, expand_unrolled(node.then, extent, env),
                  None if node.orelse is None
                  else expand_unrolled(node.orelse, extent, env))
    if isinstance(node, Alloc):
        return replace(node, body=expand_unrolled(node.body, extent, env))
    if not isinstance(node, For):
        return node
    rng = loop_range(node, env)
    inner = {**env, node.var: rng} if rng is not None else env
    body = expand_unrolled(node.body, extent, inner)
    ext = extent(node) if node.tag == "unroll" and node.hi is not None else None
    if ext is None or node.hi is None:
        return replace(node, body=body)
    # copy c runs where lo + c <= hi, which implies the guards of the copies before it:
    # nested as ISL nests them, if (g0) { c0; if (g1) { c1; ... } }
    copies: list[tuple[IExpr | None, Node]] = []
    for c in range(ext // node.step + 1):
        at = fold(IOp("add", (node.init, IInt(c * node.step))))
        guard = fold(IOp("le", (at, node.hi)))
        room = iexpr_interval(fold(IOp("sub", (node.hi, at))), env)
        if guard == IInt(0) or (room is not None and room[1] < 0):
            break  # never runs, nor do the later ones
        proven = guard == IInt(1) or (room is not None and room[0] >= 0)
        copies.append((None if proven else guard, substitute(body, {node.var: at})))
    out: Node | None = None
    for guard, copy in reversed(copies):
        run = copy if out is None else Block((copy, out))
        out = run if guard is None else If(guard, run)
    return Block(()) if out is None else out


def substitute(node: Node, env: dict[str, IExpr]) -> Node:
    """``node`` with the iterators in ``env`` replaced (guards that fold away decided)."""
    if isinstance(node, Block):
        return Block(tuple(substitute(n, env) for n in node.body))
    if isinstance(node, If):
        cond = fold(isubst(node.cond, env))
        then = substitute(node.then, env)
        orelse = None if node.orelse is None else substitute(node.orelse, env)
        if isinstance(cond, IInt):
            taken = then if cond.value else orelse
            return Block(()) if taken is None else taken
        return If(cond, then, orelse)
    if isinstance(node, Alloc):
        return replace(node, body=substitute(node.body, env))
    if isinstance(node, For):
        hi = None if node.hi is None else fold(isubst(node.hi, env))
        ext = None if node.extent is None else fold(isubst(node.extent, env))
        return replace(node, init=fold(isubst(node.init, env)),
                       cond=fold(isubst(node.cond, env)), hi=hi, extent=ext,
                       body=substitute(node.body, env))
    if isinstance(node, Stmt):
        bindings = tuple((n, fold(isubst(e, env))) for n, e in node.bindings)
        return replace(node, bindings=bindings)
    return node


def isubst(e: IExpr, env: dict[str, IExpr]) -> IExpr:
    """``e`` with the variables in ``env`` replaced."""
    if isinstance(e, IVar):
        return env.get(e.name, e)
    if isinstance(e, IOp):
        args = tuple(isubst(a, env) for a in e.args)
        return e if args == e.args else IOp(e.op, args)
    return e


def fold(e: IExpr) -> IExpr:
    """``e`` with constant operations evaluated and ``x + 0``, ``x - 0``, ``1 * x``,
    ``x * 1`` reduced to ``x`` (divisions and remainders are left to the printer, which
    folds them by the loops' ranges)."""
    if not isinstance(e, IOp):
        return e
    args = tuple(fold(a) for a in e.args)
    if e.op in _FOLD and all(isinstance(a, IInt) for a in args):
        return IInt(int(ieval(IOp(e.op, args), {})))
    if e.op == "le" and isinstance(args[0], IInt) and isinstance(args[1], IOp) \
            and args[1].op == "min":
        # c <= min(k, e, ..): the constants k >= c always hold, one k < c never does
        c, rest = args[0].value, []
        for a in args[1].args:
            if isinstance(a, IInt):
                if a.value < c:
                    return IInt(0)
            else:
                rest.append(a)
        if not rest:
            return IInt(1)
        return IOp("le", (args[0], rest[0] if len(rest) == 1 else IOp("min", tuple(rest))))
    if e.op == "add" and len(args) == 2:
        if args[1] == IInt(0):
            return args[0]
        if args[0] == IInt(0):
            return args[1]
    if e.op == "sub" and len(args) == 2 and args[1] == IInt(0):
        return args[0]
    if e.op == "mul" and len(args) == 2:
        if args[0] == IInt(1):
            return args[1]
        if args[1] == IInt(1):
            return args[0]
    return e if args == e.args else IOp(e.op, args)


__all__ = ["expand_unrolled", "fold", "substitute"]
