"""Full register tiles versioned on the loop AST before printing, where ISL left them
with their partial-tile bounds.

The lowering generates a register tile's full tiles apart from its partial ones
(``passes/astgen.py``, ISL's separation), and the printer writes a full tile's sums as
vectors (:mod:`backends.cpu.vtile`). Where the separation is not made (it passed its
budget of ISL operations, its tails have too many pieces, a loop-local buffer's users)
and in the tails themselves (the last column of tiles, whose row tiles are full but for
the last), a tile is generated once with its partial-tile bounds in every tile:
``for (i = 0; i <= min(23, N - 24 * i_o - 1); ...)`` and the unrolled columns under
``if (M >= 8 * j_o + 2)``. Such a tile is not a register tile to the printer (its loops
are not constants), so its sums went through memory: ``A' B`` with symbolic sizes, whose
separation passed its budget while ISL also unrolled the loops, ran at 4.8x numpy's
time, against 1.6x for the versioned tiles (the same as its constant-size build).

So a reduction loop ``k`` whose tile is held back only by such bounds and guards is
printed twice: ``if (<every guard> && <every bound at its constant>) k[full] else k``.
Only bounds and guards that do not change inside ``k`` qualify (they read the tile loops
around it and the parameters), and the full copy is kept only when it is a register tile
(:func:`backends.cpu.regtile.register_tile_loop`) the original is not. The copy is exact:
under the condition, ``min(23, N - 24 i_o - 1)`` is 23 and every guard holds. The test
runs once per tile, outside its ``k`` loop.
"""

from __future__ import annotations

from dataclasses import replace

from middleend.ir.loopast import Alloc, Block, For, IExpr, If, IInt, IOp, IVar, Node, Program, ivars

from .regtile import register_tile_loop


def version_tiles(program: Program) -> Program:
    """``program`` with each register tile held back by its partial-tile bounds and
    guards versioned into a full copy and the original (see the module doc)."""
    body = _walk(program.body, program)
    return program if body is program.body else replace(program, body=body)


def _walk(node: Node, program: Program) -> Node:
    """Version top-down; returns ``node`` itself when nothing changed."""
    if isinstance(node, Block):
        body = tuple(_walk(n, program) for n in node.body)
        return node if all(a is b for a, b in zip(body, node.body, strict=True)) \
            else Block(body)
    if isinstance(node, If):
        then = _walk(node.then, program)
        orelse = None if node.orelse is None else _walk(node.orelse, program)
        return node if then is node.then and orelse is node.orelse \
            else If(node.cond, then, orelse)
    if isinstance(node, Alloc):
        body = _walk(node.body, program)
        return node if body is node.body else replace(node, body=body)
    if isinstance(node, For):
        if node.tag is None and not register_tile_loop(node, program):
            conds: list[IExpr] = []
            full = _assumed_full(node.body, _bound_in(node), conds)
            if conds and full is not None:
                tile = replace(node, body=full)
                if register_tile_loop(tile, program):
                    return If(_conjunction(conds), tile, node)
        body = _walk(node.body, program)
        return node if body is node.body else replace(node, body=body)
    return node


def _bound_in(f: For) -> set[str]:
    """The iterators ``f`` and the loops inside it bind."""
    out = {f.var}
    stack: list[Node] = [f.body]
    while stack:
        n = stack.pop()
        if isinstance(n, For):
            out.add(n.var)
            stack.append(n.body)
        elif isinstance(n, Block):
            stack.extend(n.body)
        elif isinstance(n, If):
            stack.append(n.then)
            if n.orelse is not None:
                stack.append(n.orelse)
        elif isinstance(n, Alloc):
            stack.append(n.body)
    return out


def _assumed_full(node: Node, inside: set[str], conds: list[IExpr]) -> Node | None:
    """``node`` where every guard and every ``min``/``max`` loop bound that reads none of
    ``inside`` takes its full-tile value (the guard's then branch, the bound's constant),
    the conditions that makes exact appended to ``conds``; None where the body holds what
    a register tile cannot (an allocation)."""
    if isinstance(node, Block):
        body = []
        for n in node.body:
            got = _assumed_full(n, inside, conds)
            if got is None:
                return None
            body.append(got)
        return Block(tuple(body))
    if isinstance(node, If):
        if ivars(node.cond) & inside:
            return node
        conds.append(node.cond)
        return _assumed_full(node.then, inside, conds)
    if isinstance(node, For):
        body = _assumed_full(node.body, inside, conds)
        if body is None:
            return None
        init, hi = node.init, node.hi
        lo_c = _constant_side(init, "max", inside)
        if lo_c is not None:
            c, rest = lo_c
            conds.extend(IOp("le", (e, IInt(c))) for e in rest)
            init = IInt(c)
        hi_c = _constant_side(hi, "min", inside) if hi is not None else None
        if hi_c is not None:
            c, rest = hi_c
            conds.extend(IOp("ge", (e, IInt(c))) for e in rest)
            hi = IInt(c)
        if init is node.init and hi is node.hi:
            return replace(node, body=body)
        assert hi is not None
        return replace(node, body=body, init=init, hi=hi,
                       cond=IOp("le", (IVar(node.var), hi)))
    if isinstance(node, Alloc):
        return None
    return node


def _constant_side(e: IExpr, op: str, inside: set[str]) -> tuple[int, list[IExpr]] | None:
    """For ``e = op(c1, .., e1, ..)`` (nested ``op``s flattened) with constants ``ci`` and
    invariant ``ej`` (reading none of ``inside``): ``op`` of the constants and the ``ej``;
    None otherwise."""
    if not (isinstance(e, IOp) and e.op == op):
        return None
    args: list[IExpr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, IOp) and x.op == op:
            stack.extend(x.args)
        else:
            args.append(x)
    consts = [a.value for a in args if isinstance(a, IInt)]
    rest = [a for a in args if not isinstance(a, IInt)]
    if not consts or ivars(*rest) & inside:
        return None
    return (min(consts) if op == "min" else max(consts)), rest


def _conjunction(conds: list[IExpr]) -> IExpr:
    """``conds[0] && conds[1] && ...``, each condition once."""
    seen: list[IExpr] = []
    for c in conds:
        if c not in seen:
            seen.append(c)
    out = seen[0]
    for c in seen[1:]:
        out = IOp("and", (out, c))
    return out


__all__ = ["version_tiles"]
