"""The loop-AST rewrite of a line buffer (:mod:`middleend.passes.linebuffer` decides it
with ISL; this module only carries the decision out).

The scan of the consumer's pipelined loop (and its row loop) is extended by the window,
``(rows, cols)`` iterations before the first instance; each instance of the consumer is
guarded (the first rows and columns only fill the lines) with its iterators shifted back;
before it come plain assignments between on-chip buffers, a Layer IV operation of kind
``line_buffer``: the window (registers, ``rows + 1`` by ``cols + 1`` per lane) moves one
column left, the column's older rows come from the lines (``rows`` by the buffer's row
length per lane), the one new element is read from the buffer, and the lines move up. The
consumer's reads of the buffer become reads of the window.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..ir.errors import ScheduleError
from ..ir.expr import Access, Binary, Cast, Const, Expr, rebuild
from ..ir.loopast import (
    Alloc,
    Block,
    BufAccess,
    BufferDecl,
    For,
    IExpr,
    If,
    IInt,
    IOp,
    IVar,
    Node,
    Program,
    Stmt,
    StmtInfo,
    ivars,
    statements,
)
from ..ir.types import int32
from .layer1 import Layer1
from .linebuffer import WINDOW_LIMIT, LinePlan


def apply_line_buffers(program: Program, l1: Layer1, line_plans: list[LinePlan]) -> Program:
    """``program`` with each plan's loops extended, its fill statements, its window and line
    buffers, and its consumer reading the window."""
    for p in line_plans:
        program = _apply(program, l1, p)
    return program


def _isub(e: IExpr, repl: dict[str, IExpr]) -> IExpr:
    if isinstance(e, IVar):
        return repl.get(e.name, e)
    if isinstance(e, IOp):
        return IOp(e.op, tuple(_isub(a, repl) for a in e.args))
    return e


def _plus(e: IExpr, k: int) -> IExpr:
    return e if k == 0 else IOp("add", (e, IInt(k)))


def _i(k: int) -> Const:
    return Const(k, int32)


def _pairs(src: Expr | None, low: Expr | None, out: dict[int, Access]) -> None:
    """Map each lowered BufAccess of a statement to the Layer I Access it came from (the
    trees have the same shape down to the accesses; lowering may add a cast on top)."""
    if src is None or low is None:
        return
    if isinstance(src, Access):
        if not isinstance(low, BufAccess):
            raise ScheduleError(f"internal: a read lowered to {type(low).__name__}")
        out[id(low)] = src
        return
    if isinstance(low, Cast) and (not isinstance(src, Cast) or src.type_ != low.type_):
        low = low.a
    kids, lows = src.children(), low.children()
    if type(src) is not type(low) or len(kids) != len(lows):
        raise ScheduleError("internal: a lowered statement does not match its expression")
    for a, b in zip(kids, lows, strict=True):
        _pairs(a, b, out)


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _apply(program: Program, l1: Layer1, p: LinePlan) -> Program:
    where = f"{p.command} (command #{p.index})"

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(f"cannot line-buffer {p.buffer!r} for {p.consumer!r} "
                             f"({where}): {why}", computations=(p.consumer,),
                             command=p.command, command_index=p.index)

    decls = {b.name: b for b in program.buffers}
    src = decls[p.buffer]
    info = program.stmts[p.consumer]
    lane_sizes = []
    for j in p.lanes:
        size = src.sizes[j]
        if not isinstance(size, IInt):
            raise refuse(f"dimension {j} of {p.buffer!r}, read several times per iteration, "
                         "has no constant size (the window's lanes need one)")
        lane_sizes.append(size.value)
    n_lanes = 1
    for n in lane_sizes:
        n_lanes *= n
    if (p.rows + 1) * (p.cols + 1) * n_lanes > WINDOW_LIMIT:
        raise refuse(f"its window would hold {(p.rows + 1) * (p.cols + 1) * n_lanes} "
                     f"registers (at most {WINDOW_LIMIT})")

    # the consumer's reads of the buffer -> window reads
    origin: dict[int, Access] = {}
    _pairs(l1.comps[p.consumer].expr, info.value, origin)
    _pairs(l1.comps[p.consumer].guard, info.guard, origin)
    ref_of = {id(n): r.ref for r in l1.comps[p.consumer].reads for n in r.nodes}
    taken = {b.name for b in program.buffers}
    win = _fresh(f"{p.consumer}_{p.buffer}_window", taken)
    lines = _fresh(f"{p.consumer}_{p.buffer}_lines", taken) if p.rows else ""
    first: list[BufAccess] = []

    def to_window(n: Expr) -> Expr | None:
        if not isinstance(n, BufAccess) or n.buffer != p.buffer:
            return None
        a = origin.get(id(n))
        ref = ref_of.get(id(a)) if a is not None else None
        if ref is None or ref not in p.offsets:
            raise refuse(f"a read of {p.buffer!r} has no reference the plan knows")
        if not first:
            first.append(n)
        o = p.offsets[ref]
        r = o[p.row_dim] - p.lo[p.row_dim] if p.row_dim is not None else 0
        return BufAccess(win, (_i(r), _i(o[p.col_dim] - p.lo[p.col_dim]),
                               *(n.indices[j] for j in p.lanes)), n.type_)

    value = rebuild(info.value, to_window) if info.value is not None else None
    guard = rebuild(info.guard, to_window) if info.guard is not None else None
    if not first:
        raise refuse(f"its statement does not read {p.buffer!r}")
    base = first[0]
    base_off = p.offsets[ref_of[id(origin[id(base)])]]
    # the element the window needs next: the first read moved to the largest offsets
    hi = [p.lo[j] + (p.rows if j == p.row_dim else p.cols if j == p.col_dim else 0)
          for j in range(len(p.lo))]
    newest = BufAccess(p.buffer, tuple(
        e if hi[j] == base_off[j] else Binary("add", e, Const(hi[j] - base_off[j], e.dtype),
                                              e.dtype)
        for j, e in enumerate(base.indices)), base.type_)
    lane_idx = tuple(newest.indices[j] for j in p.lanes)
    col_idx = newest.indices[p.col_dim]
    t = src.dtype

    def w(dy: int, dx: int) -> BufAccess:
        return BufAccess(win, (_i(dy), _i(dx), *lane_idx), t)

    def lb(dy: int) -> BufAccess:
        return BufAccess(lines, (_i(dy), col_idx, *lane_idx), t)

    moves: list[tuple[BufAccess, Expr]] = []
    for dy in range(p.rows + 1):  # the window moves one column left
        moves += [(w(dy, dx), w(dy, dx + 1)) for dx in range(p.cols)]
    moves += [(w(dy, p.cols), lb(dy)) for dy in range(p.rows)]  # older rows of the column
    moves.append((w(p.rows, p.cols), newest))  # the one read of the buffer
    moves += [(lb(dy), w(dy + 1, p.cols)) for dy in range(p.rows)]  # the lines move up
    stmts = dict(program.stmts)
    fills = []
    for k, (store, val) in enumerate(moves):
        name = f"_lb_{p.consumer}_{p.buffer}_{k}"
        stmts[name] = StmtInfo(name, info.iters, store, val, op="line_buffer",
                               command=p.command)
        fills.append(name)
    stmts[p.consumer] = dataclasses.replace(info, value=value, guard=guard)

    body = _extend(program.body, p, fills, refuse)
    # complete partitions (factor: the size): the window is registers, each line its own
    # memory, per lane
    lanes_part = tuple((k + 2, n, "complete") for k, n in enumerate(lane_sizes))
    new = [BufferDecl(win, t, (IInt(p.rows + 1), IInt(p.cols + 1),
                               *(IInt(n) for n in lane_sizes)), "temporary",
                      partition=((0, p.rows + 1, "complete"), (1, p.cols + 1, "complete"),
                                 *lanes_part))]
    if p.rows:
        new.append(BufferDecl(lines, t, (IInt(p.rows), src.sizes[p.col_dim],
                                         *(IInt(n) for n in lane_sizes)), "temporary",
                              partition=((0, p.rows, "complete"), *lanes_part)))
    return dataclasses.replace(program, body=body, stmts=stmts,
                               buffers=(*program.buffers, *new))


def _extend(body: Node, p: LinePlan, fills: list[str],
            fail: Callable[[str], ScheduleError]) -> Node:
    """The loop nest with the scan of ``p`` extended (see the module docstring)."""
    total = sum(1 for s in statements(body) if s.comp == p.consumer)
    done: list[Stmt] = []

    def simple(loop: For) -> IExpr:
        if loop.hi is None or loop.step != 1:
            raise fail(f"its loop {loop.name or loop.var!r} is not a simple range")
        return loop.hi

    def scan(loop: For, outer: For | None) -> For:
        hi = _plus(simple(loop), p.cols)
        repl: dict[str, IExpr] = {loop.var: _plus(IVar(loop.var), -p.cols)}
        conds = [IOp("ge", (IVar(loop.var), _plus(loop.init, p.cols)))] if p.cols else []
        if outer is not None:
            simple(outer)
            if outer.tag is not None:
                raise fail(f"its row loop {outer.name!r} is tagged {outer.tag!r}")
            if outer.var in ivars(loop.init, loop.hi):
                raise fail(f"the bounds of {loop.name!r} depend on {outer.name!r} (the scan "
                           "must be rectangular)")
            repl[outer.var] = _plus(IVar(outer.var), -p.rows)
            conds.insert(0, IOp("ge", (IVar(outer.var), _plus(outer.init, p.rows))))
        guard: IExpr | None = None
        for cnd in conds:
            guard = cnd if guard is None else IOp("and", (guard, cnd))

        def inner(n: Node) -> Node:
            if isinstance(n, Block):
                return Block(tuple(inner(x) for x in n.body))
            if isinstance(n, For):
                if ivars(n.init, n.cond, n.hi) & set(repl):
                    raise fail(f"the bounds of its inner loop {n.name!r} depend on the scan")
                return dataclasses.replace(n, body=inner(n.body))
            if isinstance(n, Stmt) and n.comp == p.consumer:
                b = tuple((k, _isub(v, repl)) for k, v in n.bindings)
                me = dataclasses.replace(n, bindings=b)
                done.append(me)
                return Block((*(Stmt(f, b) for f in fills),
                              me if guard is None else If(guard, me)))
            what = n.comp if isinstance(n, Stmt) else type(n).__name__
            raise fail(f"its pipelined loop {loop.name!r} also holds {what!r} (it must hold "
                       "the consumer alone)")

        return dataclasses.replace(loop, hi=hi, cond=IOp("le", (IVar(loop.var), hi)),
                                   body=inner(loop.body))

    def only(n: Node) -> Node:
        while isinstance(n, Block) and len(n.body) == 1:
            n = n.body[0]
        return n

    def has(n: Node) -> bool:
        return any(s.comp == p.consumer for s in statements(n))

    def visit(n: Node, parent: For | None) -> Node:
        if isinstance(n, For):
            if n.var == p.pipe_var and has(n):
                if not p.rows:
                    return scan(n, None)
                if parent is None or parent.var != p.row_var:
                    raise fail(f"its row loop is not directly around {n.name!r}")
                return scan(n, parent)
            if p.rows and n.var == p.row_var and has(n):
                kid = visit(only(n.body), n)
                if not (isinstance(kid, For) and kid.var == p.pipe_var):
                    raise fail(f"its row loop {n.name!r} holds more than the pipelined loop")
                hi = _plus(simple(n), p.rows)
                return dataclasses.replace(n, hi=hi, cond=IOp("le", (IVar(n.var), hi)),
                                           body=kid)
            return dataclasses.replace(n, body=visit(n.body, n))
        if isinstance(n, Block):
            return Block(tuple(visit(x, None) for x in n.body))
        if isinstance(n, If):
            return If(n.cond, visit(n.then, None),
                      visit(n.orelse, None) if n.orelse is not None else None)
        if isinstance(n, Alloc):
            return Alloc(n.buffer, visit(n.body, None))
        return n

    out = visit(body, None)
    if len(done) != total or not done:
        raise fail(f"the loop nest of {p.consumer!r} is not one scan (ISL split its "
                   "pipelined loop, or the consumer runs outside it)")
    return out
