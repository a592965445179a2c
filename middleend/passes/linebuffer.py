"""Line buffers for stencils (the fpga target's ``comp.line_buffer(buffer)``).

A pipelined stencil such as a 3x3 convolution reads nine elements per iteration of its
column loop, eight of which it has read before: from an off-chip port that is nine reads
per element where one suffices. A line buffer keeps on chip the lines of ``buffer`` the
window still needs and a window of registers slides along the row, so that each iteration
reads one new element (per lane: the channels of an RGB pixel, say) and each element is
read once.

What this pass decides, with ISL on the scheduled accesses (time-space, see
:mod:`middleend.passes.physical`):

* the reads are a stencil over the scan of the pipelined loop ``P`` (and the loop ``R``
  directly around it, the rows): every reference is the first one translated by a constant
  offset (``A_k ∘ A_0⁻¹`` has one delta), one iteration of ``P`` moves the reads one
  element forward along one dimension of the buffer (its columns), one iteration of ``R``
  one element forward along another (its rows); anything else (reads at varying offsets,
  a scan that goes backwards, a vectorized scan) is refused with the reason;
* the reuse distance: the pairs of scan iterations that read the same element (any two
  references), as lexicographic distances in the scan (``deltas``). It must be a bounded
  set whatever the parameters and lie along ``R`` and ``P`` only; its lexicographic
  maximum ``(r, c)`` is how far back an element is still needed: the line buffer holds
  ``r`` lines and the window ``r + 1`` rows of ``c' + 1`` columns (``c'`` the largest
  column distance), that is ``r`` rows and ``c + 1`` elements live at once;
* the fill: the loops are extended by ``(r, c')`` so that each iteration reads the element
  its window needs next (the scan starts ``r`` rows and ``c'`` columns before the first
  instance), as a map from the extended scan to the buffer whose range must lie inside the
  buffer and which must be injective: each element is read from memory once.

The loop AST is then rewritten (:func:`apply_line_buffers`): the two loops extended, each
instance of the consumer guarded (the first ``r`` rows and ``c'`` columns of the scan only
fill the lines) with its iterators shifted back, and before it the statements that move
the window one column, pull the column's older rows from the line buffer, read the one new
element and push it into the line buffer. They are plain assignments between on-chip
buffers, a Layer IV operation of kind ``line_buffer`` (targets that do not declare it
refuse it); the consumer reads the window instead of ``buffer``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import DefinitionError, ScheduleError
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
from .data import Layer3, box
from .dataflow import logical_access
from .layer1 import Layer1
from .layer4 import Layer4
from .placement import TimeSpace

WINDOW_LIMIT = 1024  # window registers (a complete partition makes one per element)


@dataclass(frozen=True)
class LinePlan:
    """What ISL decided for one ``line_buffer`` command. Offsets are per dimension of the
    buffer, relative to the consumer's first reference to it."""

    consumer: str
    buffer: str
    command: str  # as written
    index: int  # its position in the command log
    pipe_var: str  # the loop iterators of P and R in the loop AST (t<dim>)
    row_var: str | None
    col_dim: int
    row_dim: int | None
    lanes: tuple[int, ...]  # dims of the buffer that vary inside one iteration of P
    rows: int  # lines held (the reuse distance along R)
    cols: int  # the window's width minus one (the largest column distance)
    distance: tuple[int, int]  # the lexicographic maximum of the reuse distances (R, P)
    lo: tuple[int, ...]  # the smallest offset per dimension
    offsets: dict[int, tuple[int, ...]]  # read reference -> its offset
    fill: isl.Map  # extended scan point -> the element its iteration reads (injective)

    def summary(self) -> str:
        """The reuse distance and what it costs, in words (for messages and docs)."""
        r, c = self.distance
        return (f"reuse distance {r} rows + {c} columns: {r} lines of {self.buffer!r} on "
                f"chip and a {self.rows + 1}x{self.cols + 1} window")


def commands_of(commands: list[cmd.Command]) -> list[tuple[cmd.LineBuffer, int]]:
    """The line_buffer commands, each with its position in the log."""
    return [(c, k) for k, c in enumerate(commands) if isinstance(c, cmd.LineBuffer)]


def _buffer(name: str, l3: Layer3, where: str) -> str:
    if name in l3.buffers:
        return name
    if name in l3.store:
        return l3.store[name]
    raise DefinitionError(f"{where}: no buffer or (non-inlined) computation is named "
                          f"{name!r}")


def _free(s: isl.Set) -> isl.Set:
    """``s`` for some value of the parameters (they are projected out)."""
    return s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))


def _point(s: isl.Set) -> tuple[int, ...]:
    p = s.sample_point()
    return tuple(int(p.get_coordinate_val(isl.dim_type.set, j).to_python())
                 for j in range(s.dim(isl.dim_type.set)))


def _tmap(ctx: isl.Context, n: int, cons: list[str], params: isl.Space) -> isl.Map:
    """``{[t0..] -> [u0..] : cons}`` over ``n`` time-space dims, aligned with ``params``."""
    t = ", ".join(f"t{k}" for k in range(n))
    u = ", ".join(f"u{k}" for k in range(n))
    text = f"{{ [{t}] -> [{u}] : {' and '.join(cons) or 'true'} }}"
    return isl.Map.read_from_str(ctx, text).align_params(params)


def _step(ctx: isl.Context, n: int, d: int, by: int, params: isl.Space) -> isl.Map:
    return _tmap(ctx, n, [f"u{k} = t{k}" + (f" + {by}" if k == d else "")
                          for k in range(n)], params)


def plan(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace, c: cmd.LineBuffer,
         index: int) -> LinePlan:
    """Decide the line buffer of command ``c`` (number ``index`` in the log; see the
    module docstring), or refuse."""
    comp = c.comp
    where = f"{c.describe()} (command #{index})"

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(f"cannot line-buffer {c.buffer!r} for {comp!r} ({where}): "
                             f"{why}", computations=(comp,), command=c.describe(),
                             command_index=index)

    if comp not in l1.comps or comp not in ts.comps:
        raise refuse("it is not a (non-inlined) computation")
    buf = _buffer(c.buffer, l3, where)
    info = l3.buffers[buf]
    if info.role not in ("input", "temporary"):
        raise refuse(f"{buf!r} is an {info.role} of the kernel (written by it); a line "
                     "buffer holds what a stage reads")
    if info.fold or info.alloc_at is not None or info.copy_of is not None:
        raise refuse(f"{buf!r} is folded, allocated in a loop or a copy; line-buffer the "
                     "buffer it holds instead")
    refs = [r for r in l1.comps[comp].reads if l4.buffer_of(l3, r) == buf]
    if not refs:
        raise refuse(f"it does not read {buf!r}")
    if any(r.access is None for r in refs):
        raise refuse(f"it reads {buf!r} at a data-dependent index (not a stencil)")
    s = ts.comps[comp]
    piped = [n for n, t in s.tags.items() if t == "pipeline" and n in s.dims]
    if not piped:
        raise refuse("it has no pipelined loop (pipeline the loop that scans the columns)")
    dyn = s.n_outer + s.dims.index(piped[0])
    ntd = 2 * ts.depth + 1
    d_p = 2 * dyn + 1
    d_r = d_p - 2 if dyn > 0 else None
    names = s.ext_dims
    p_name = names[dyn]
    r_name = names[dyn - 1] if dyn > 0 else None
    ctx, params = l1.ctx, l1.param_space
    assert s.full is not None and s.proj is not None
    to_t = s.full.reverse().apply_range(s.proj)  # T -> C[x]
    acc = [logical_access(l1, l3, r).set_tuple_name(isl.dim_type.out, buf) for r in refs]
    reads = [to_t.apply_range(a) for a in acc]  # T -> B[e]
    ndim = info.ndim

    # every reference is the first one translated by a constant offset
    offsets: dict[int, tuple[int, ...]] = {}
    for r, a in zip(refs, acc, strict=True):
        delta = _free(acc[0].reverse().apply_range(a).deltas())
        if not delta.is_singleton():
            raise refuse(f"it reads {buf!r} at offsets that vary from instance to instance "
                         f"({delta}): not a stencil")
        offsets[r.ref] = _point(delta)
    lo = tuple(min(o[j] for o in offsets.values()) for j in range(ndim))
    hi = tuple(max(o[j] for o in offsets.values()) for j in range(ndim))

    def direction(d: int, what: str) -> int | None:
        """The buffer dim one step of loop ``d`` moves the reads one element forward on."""
        step = _step(ctx, ntd, d, 1, params)
        moved = _free(reads[0].reverse().apply_range(step).apply_range(reads[0]).deltas())
        if moved.is_empty():
            return None
        if not moved.is_singleton():
            raise refuse(f"one iteration of its loop {what} moves its reads of {buf!r} by "
                         f"varying amounts ({moved}): not a scan")
        v = _point(moved)
        nz = [j for j in range(ndim) if v[j]]
        if not nz:
            return -1  # the loop does not move along the buffer at all
        if len(nz) != 1 or v[nz[0]] != 1:
            back = " backwards" if len(nz) == 1 and v[nz[0]] < 0 else ""
            raise refuse(f"one iteration of its loop {what} moves its reads of {buf!r} by "
                         f"{list(v)}{back}; a line buffer needs a scan that reads one "
                         "element further along one dimension per iteration (in scan "
                         "order, not vectorized)")
        return nz[0]

    col = direction(d_p, repr(p_name))
    if col is None:
        raise refuse(f"its pipelined loop {p_name!r} never runs a second iteration")
    if col < 0:
        raise refuse(f"every iteration of its pipelined loop {p_name!r} reads the same "
                     f"elements of {buf!r} (nothing to scan)")
    row = direction(d_r, repr(r_name)) if d_r is not None else None
    row = None if row is not None and row < 0 else row
    if row == col:
        raise refuse(f"its loops {r_name!r} and {p_name!r} scan the same dimension of "
                     f"{buf!r}")
    spans = [j for j in range(ndim) if hi[j] != lo[j]]
    if any(j not in (row, col) for j in spans):
        moves = [x for x in (row, col) if x is not None]
        raise refuse(f"its window spans dimension(s) {spans} of {buf!r}, but the scan of "
                     f"{r_name!r} and {p_name!r} moves along {moves} only: not a stencil "
                     "over the scan")

    # the reuse distance: scan iterations that read the same element, from any two refs
    scan = _tmap(ctx, ntd, [f"u{k} = t{k}" for k in range(d_p + 1)], params)
    scan = scan.project_out(isl.dim_type.out, d_p + 1, ntd - d_p - 1)  # T -> S
    by_scan = None
    for m in reads:
        x = scan.reverse().apply_range(m)
        by_scan = x if by_scan is None else by_scan.union(x)
    assert by_scan is not None
    pairs = by_scan.apply_range(by_scan.reverse())
    pairs = pairs.intersect(isl.Map.lex_lt(pairs.get_space().domain()))
    dist = _free(pairs.deltas())
    if not dist.is_bounded():
        raise refuse(f"the distance between two reads of one element of {buf!r} is not "
                     f"constant ({dist}): not a stencil")
    along = [k for k in (d_r, d_p) if k is not None]
    flat = isl.Set.read_from_str(ctx, "{ [" + ", ".join(f"s{k}" for k in range(d_p + 1))
                                 + "] : " + " and ".join(
                                     [f"s{k} = 0" for k in range(d_p + 1) if k not in along]
                                     or ["true"]) + " }")
    if not dist.is_subset(flat):
        raise refuse(f"it reads one element of {buf!r} again in another iteration of a loop "
                     f"outside {r_name!r} ({dist}): not a stencil over the scan")
    if dist.is_empty():
        rows, cols, far = 0, 0, (0, 0)
    else:
        rows = int(dist.dim_max_val(d_r).to_python()) if d_r is not None else 0
        cols = max(int(dist.dim_max_val(d_p).to_python()),
                   -int(dist.dim_min_val(d_p).to_python()))
        top = _point(dist.lexmax())
        far = (top[d_r] if d_r is not None else 0, top[d_p])
    want_rows = hi[row] - lo[row] if row is not None else 0
    if (rows, cols) != (want_rows, hi[col] - lo[col]):
        raise refuse(f"its window ({want_rows + 1}x{hi[col] - lo[col] + 1}) is not what the "
                     f"reuse distances ({dist}) need: not a stencil over the scan")
    if rows and d_r is None:
        raise refuse("it reuses across rows but has no loop around its pipelined loop")

    # the lanes: dims the reads of one iteration of P spread over (inner, unrolled loops)
    same = _tmap(ctx, ntd, [f"u{k} = t{k}" for k in range(d_p + 1)], params)
    inner = _free(reads[0].reverse().apply_range(same).apply_range(reads[0]).deltas())
    lanes = tuple(j for j in range(ndim) if j not in (row, col) and
                  not inner.is_subset(isl.Set.read_from_str(ctx, "{ [" + ", ".join(
                      f"e{k}" for k in range(ndim)) + f"] : e{j} = 0 }}")))

    # the fill: iteration T of the extended scan reads the newest element of the window of
    # the instance at T - (rows, cols), whose first reference reads base + lo
    newest = reads[0].apply_range(_translate(ctx, buf, ndim, hi, params))
    ext = isl.Map.from_basic_map(newest.affine_hull())
    if not ext.intersect_domain(newest.domain()).is_equal(newest):
        raise refuse(f"its reads of {buf!r} are not affine in the loops")
    shift = [0] * ntd
    if d_r is not None:
        shift[d_r] = rows
    shift[d_p] = cols
    grow = isl.Set.read_from_str(ctx, "{ [" + ", ".join(f"t{k}" for k in range(ntd)) + "] : "
                                 + " and ".join(f"0 <= t{k} <= {shift[k]}"
                                                for k in range(ntd)) + " }")
    dom = to_t.domain()
    ext_dom = dom.sum(grow.align_params(dom.get_space()))
    back = _tmap(ctx, ntd, [f"u{k} = t{k} - {shift[k]}" for k in range(ntd)], params)
    fill = back.intersect_domain(ext_dom).apply_range(ext)
    outside = fill.range().subtract(box(info, fill.range().get_space()))
    if not outside.intersect_params(l1.context).is_empty():
        raise refuse(f"the window's bounding box reaches elements outside {buf!r}: "
                     f"{outside}")
    if not fill.is_injective():
        raise refuse(f"several instances in one iteration of {p_name!r} read the same "
                     f"element of {buf!r} (an inner loop that does not index it)")
    return LinePlan(comp, buf, c.describe(), index, f"t{d_p}",
                    f"t{d_r}" if d_r is not None else None, col, row, lanes, rows, cols, far,
                    lo, offsets, fill)


def _translate(ctx: isl.Context, buf: str, n: int, by: tuple[int, ...],
               params: isl.Space) -> isl.Map:
    e = ", ".join(f"e{k}" for k in range(n))
    f = ", ".join(f"e{k} + {by[k]}" for k in range(n))
    return isl.Map.read_from_str(ctx, f"{{ {buf}[{e}] -> {buf}[{f}] }}").align_params(params)


def plans(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace,
          commands: list[cmd.Command]) -> list[LinePlan]:
    """One plan per line_buffer command (refusing two for one consumer and buffer)."""
    out: list[LinePlan] = []
    for c, k in commands_of(commands):
        p = plan(l1, l3, l4, ts, c, k)
        for q in out:
            if q.consumer == p.consumer:
                again = "already line-buffers it" if q.buffer == p.buffer else \
                    f"already line-buffers {q.buffer!r} (one line buffer per stage)"
                raise ScheduleError(f"cannot line-buffer {p.buffer!r} for {p.consumer!r} "
                                    f"({c.describe()} (command #{k})): {p.consumer!r} "
                                    f"{again}", computations=(p.consumer,),
                                    command=c.describe(), command_index=k)
        out.append(p)
    return out


# ---------------------------------------------------------------------------- the loop AST

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
    ref_of = {id(r.node): r.ref for r in l1.comps[p.consumer].reads}
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
