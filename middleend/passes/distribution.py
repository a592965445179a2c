"""Distribution over ranks (the mpi target): which rank runs what, where each distributed
buffer's elements live, the exact halo exchanges, and the checks that make a distributed
schedule safe to run.

A statement inside a loop tagged ``distribute`` runs its iteration ``v`` on rank ``v``;
any other statement runs on every rank (replicated). A buffer distributed along a dim
(``buffer.distribute(dim)``) is owned in blocks of ``ceil(extent / ranks)``; computations
write only what their rank owns (owner computes), and a rank reads an element it does not
own only after a receive or an exchange brought it. Everything is computed with ISL for a
given number of ranks ``R`` (a compile option), rank by rank, so that block boundaries
like ``r * floor((N + R - 1) / R)`` stay quasi-affine and every set is exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl

from ..ir import commands as cmd
from ..ir.distribution import ELEMENT, Distribution, Transfer, Window
from ..ir.errors import ScheduleError
from ..ir.loopast import Block, For, IExpr, If, IInt, IOp, IVar, Node, Program, Stmt
from .astgen import iexpr
from .data import Layer3, box, lift_params
from .exchange_order import check_exchange_order
from .layer1 import Layer1
from .layer4 import Layer4, Op
from .p2p import match_messages
from .physical import Physical
from .placement import TimeSpace
from .rootio import plan_root_ops

MAX_RANKS = 64


def _val(ctx: isl.Context, v: int) -> isl.Val:
    return isl.Val.int_from_si(ctx, v)


class _Ranks:
    """Rank facts of one scheduled program for ``ranks`` ranks (see
    :mod:`.distribution_rt` for one rank count read at run time)."""

    runtime = False

    def __init__(self, l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace, ph: Physical,
                 ranks: int) -> None:
        self.l1, self.l3, self.l4, self.ts, self.ph, self.R = l1, l3, l4, ts, ph, ranks
        self.ctx = l1.ctx
        self.ntd = 2 * ts.depth + 1
        self.dist: dict[str, int | None] = {}  # statement -> time-space dim of its rank
        for n in ts.order:
            dims = ts.gpu_dims(n, "distribute")
            if len(dims) > 1:
                names = [ts.loop_name(n, d) for d in dims]
                raise ScheduleError(f"{n!r} has two distributed loops {names}; distribute one "
                                    "loop per statement (ranks are one-dimensional)",
                                    computations=(n,))
            self.dist[n] = 2 * dims[0] + 1 if dims else None

    def t_space(self) -> isl.Space:
        return isl.Space.set_alloc(self.ctx, 0, self.ntd).align_params(self.l1.param_space)

    def blocks_of(self) -> str:
        return f"ceil(extent/{self.R})"

    def blocks(self, buf: str, dim: int) -> _Blocks:
        """The block partition of ``buf`` along ``dim``."""
        return _Blocks(self, buf, dim)

    def on_rank(self, n: str, r: int) -> isl.Set:
        """The time-space points of statement ``n`` that rank ``r`` runs (all of them for
        a replicated statement)."""
        s = isl.Set.universe(self.t_space())
        d = self.dist.get(n)
        if d is None:
            return s
        return s.fix_val(isl.dim_type.set, d, _val(self.ctx, r))

    def accesses(self, buf: str, reads: bool = True, writes: bool = True,
                 ops: bool = True) -> list[tuple[str, isl.Map, str]]:
        """(statement, {T -> buf[e]}, 'read'/'write') of every access of ``buf``."""
        out: list[tuple[str, isl.Map, str]] = []
        ph = self.ph
        for n in self.ts.order:
            if n in self.l1.comps:
                if writes and n in ph.writes and _target(ph.writes[n]) == buf:
                    out.append((n, ph.writes[n], "write"))
                if reads:
                    for rd in self.l1.comps[n].reads:
                        m = ph.reads.get(rd.ref)
                        if m is not None and _target(m) == buf:
                            out.append((n, m, "read"))
            elif ops:
                m = ph.op_writes.get(n)
                if writes and m is not None and _target(m) == buf:
                    out.append((n, m, "write"))
                m = ph.op_reads.get(n)
                if reads and m is not None and _target(m) == buf:
                    out.append((n, m, "read"))
        return out

    def elements(self, buf: str, r: int, **kw: bool) -> isl.Set:
        """The elements of ``buf`` that rank ``r`` accesses."""
        acc = None
        for n, m, _ in self.accesses(buf, **kw):
            e = m.intersect_domain(self.on_rank(n, r)).range()
            acc = e if acc is None else acc.union(e)
        return acc if acc is not None else isl.Set.empty(self._espace(buf))

    def _espace(self, buf: str) -> isl.Space:
        b = self.l3.buffers[buf]
        return isl.Space.set_alloc(self.ctx, 0, b.ndim).align_params(
            self.l1.param_space).set_tuple_name(isl.dim_type.set, buf)


def _target(m: isl.Map) -> str:
    return str(m.get_tuple_name(isl.dim_type.out))


class _Blocks:
    """The block partition of one distributed buffer."""

    def __init__(self, rk: _Ranks, buf: str, dim: int) -> None:
        self.rk, self.buf, self.dim = rk, buf, dim
        b = rk.l3.buffers[buf]
        self.space = rk._espace(buf)
        ext = b.sizes[dim]
        ctx = rk.ctx
        self.block = ext.add_constant_val(_val(ctx, rk.R - 1)).scale_down_val(
            _val(ctx, rk.R)).floor()  # over params
        self.box = box(b, self.space)

    def _block_on(self, space: isl.Space) -> isl.PwAff:
        return lift_params(self.block, space)

    def start(self, sp: isl.Space, r: int) -> isl.PwAff:
        """The first index of rank ``r``'s block along the dim, on ``sp``."""
        return self._block_on(sp).scale_val(_val(self.rk.ctx, r))

    def own(self, r: int) -> isl.Set:
        """The elements rank ``r`` owns."""
        sp = self.space
        x = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(sp), isl.dim_type.set, self.dim)
        lo = self.start(sp, r)
        hi = lo.add(self._block_on(sp))
        return self.box.intersect(lo.le_set(x)).intersect(x.lt_set(hi))

    def halo(self, r: int, elems: isl.Set) -> tuple[int | None, int | None]:
        """(below, above): how far ``elems`` reach outside rank ``r``'s block (None:
        the reach grows with the params)."""
        if elems.is_empty():
            return 0, 0
        sp = elems.get_space()
        x = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(sp), isl.dim_type.set, self.dim)
        lo = self.start(sp, r)
        hi = lo.add(self._block_on(sp)).add_constant_val(_val(self.rk.ctx, -1))
        return _max_of(lo.sub(x), elems), _max_of(x.sub(hi), elems)


def _max_of(f: isl.PwAff, dom: isl.Set) -> int | None:
    """The largest value of ``f`` on ``dom`` over every value of the params, or None if
    it is unbounded or depends on them without bound (a piecewise constant is fine)."""
    vals = isl.Map.from_pw_aff(f.intersect_domain(dom)).range()  # f(x), with the params
    vals = vals.project_out(isl.dim_type.param, 0, vals.dim(isl.dim_type.param))
    if vals.is_empty():
        return 0
    try:
        m = vals.dim_max(0)
    except isl.Error:  # an unbounded optimum (a block start that is a free param)
        return None
    best: int | None = None
    for _, aff in m.get_pieces():
        if not aff.is_cst():
            return None
        v = int(aff.get_constant_val().to_python())
        best = v if best is None else max(best, v)
    if best is None or best > 1 << 20:  # an int32 context bound, not a real halo
        return None
    return best


def plan_distribution(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace, ph: Physical,
                      program: Program, commands: Sequence[cmd.Command], ranks: int
                      ) -> Distribution:
    """Windows, exchanges and message tags for ``ranks`` ranks, after checking that the
    distribution is legal (owner computes, every remote read brought by a message, sent
    after it is written, every receive matched by a send, no certain deadlock)."""
    if not 1 <= ranks <= MAX_RANKS:
        raise ScheduleError(f"ranks must be between 1 and {MAX_RANKS}, got {ranks}")
    rk = _Ranks(l1, l3, l4, ts, ph, ranks)
    blocks = _distributed_buffers(rk, commands)
    windows = {b: _window(rk, bl, program) for b, bl in blocks.items()}
    _check_owner_computes(rk, blocks)
    _check_replicated(rk, blocks)
    exchanges = {o.name: _exchange(rk, blocks, o.name) for o in l4.ops.values()
                 if o.kind == "exchange"}
    tags = match_messages(rk, commands)
    _check_remote_reads(rk, blocks, exchanges)
    check_exchange_order(rk, blocks, commands)
    values = {o.name: _loop_values(rk, o.name) for o in l4.ops.values()
              if o.kind == "exchange"}
    root_ops = plan_root_ops(rk, blocks, program, commands)
    return Distribution(ranks, windows, exchanges, tags, _fixed_ranks(rk), values, root_ops)


def _loop_values(rk: _Ranks, name: str) -> tuple[tuple[str, IExpr], ...]:
    """The loop iterators ``t<k>`` around the exchange ``name`` that take one value for
    each value of the outer ones (a loop of one iteration: ISL prints none), with it."""
    o = rk.l4.ops[name]
    s = rk.ts.comps[o.consumer or name]
    lv = -1 if o.level in (None, cmd.ROOT) else s.ext_dims.index(o.level)
    full = rk.ts.comps[name].full
    assert full is not None
    pts = full.range()
    for k in range(rk.ntd):
        pts = pts.set_dim_name(isl.dim_type.set, k, f"t{k}")
    out: list[tuple[str, IExpr]] = []
    build = isl.AstBuild.from_context(isl.Set.universe(pts.get_space().params()))
    for q in range(lv + 1):
        d = 2 * q + 1
        # { [t1, t3, .., t<d-2>] -> [t<d>] } with the other dims projected out
        m = isl.Map.from_range(pts.project_out(isl.dim_type.set, d + 1, rk.ntd - d - 1))
        for k in range(d - 1, -1, -1):
            if k % 2 == 0:
                m = m.project_out(isl.dim_type.out, k, 1)
        n_outer = m.dim(isl.dim_type.out) - 1
        m = m.move_dims(isl.dim_type.param, m.dim(isl.dim_type.param), isl.dim_type.out, 0,
                        n_outer)
        if not m.is_single_valued():
            continue
        pa = isl.PwMultiAff.from_map(m).get_pw_aff(0)
        out.append((f"t{d}", iexpr(build.expr_from_pw_aff(pa), program_params(rk))))
    return tuple(out)


def _fixed_ranks(rk: _Ranks) -> dict[str, tuple[str, int]]:
    """The statements whose distributed loop takes one value, whatever the params."""
    out: dict[str, tuple[str, int]] = {}
    for n, d in rk.dist.items():
        full = rk.ts.comps[n].full
        if d is None or full is None:
            continue
        vals = full.range().project_out(isl.dim_type.set, d + 1, rk.ntd - d - 1)
        vals = vals.project_out(isl.dim_type.set, 0, d)
        lo, hi = vals.dim_min(0), vals.dim_max(0)
        pieces = lo.get_pieces() + hi.get_pieces()
        if pieces and all(a.is_cst() for _, a in pieces):
            v = {int(a.get_constant_val().to_python()) for _, a in pieces}
            if len(v) == 1:
                out[n] = (f"t{d}", v.pop())
    return out


def _distributed_buffers(rk: _Ranks, commands: Sequence[cmd.Command]) -> dict[str, _Blocks]:
    out: dict[str, _Blocks] = {}
    for k, c in enumerate(commands):
        if not isinstance(c, cmd.DistributeBuffer):
            continue
        where = f"{c.describe()} (command #{k})"
        buf = rk.l3.store.get(c.comp, c.comp)
        b = rk.l3.buffers.get(buf)
        if b is None:
            raise ScheduleError(f"{where}: unknown buffer or computation {c.comp!r}",
                                command=c.describe(), command_index=k)
        if not 0 <= c.dim < b.ndim:
            raise ScheduleError(f"{where}: {buf!r} has {b.ndim} dimension(s); there is no "
                                f"dimension {c.dim}", command=c.describe(), command_index=k)
        if buf in out:
            raise ScheduleError(f"{where}: {buf!r} is already distributed",
                                command=c.describe(), command_index=k)
        if c.dim in b.fold or b.alloc_at is not None or buf in rk.ph.local:
            raise ScheduleError(f"{where}: {buf!r} is folded along that dimension or "
                                "allocated inside a loop; only whole buffers are distributed",
                                command=c.describe(), command_index=k)
        out[buf] = rk.blocks(buf, c.dim)
    return out


def _window(rk: _Ranks, bl: _Blocks, program: Program) -> Window:
    lo_h, hi_h, whole = 0, 0, False
    for r in range(rk.R):
        lo, hi = bl.halo(r, rk.elements(bl.buf, r))
        if lo is None or hi is None:
            whole = True
            break
        lo_h, hi_h = max(lo_h, lo), max(hi_h, hi)
    decl = next(d for d in program.buffers if d.name == bl.buf)
    size = decl.sizes[bl.dim]
    block = IOp("fdiv_q", (IOp("add", (size, IInt(rk.R - 1))), IInt(rk.R)))
    return Window(bl.buf, bl.dim, block, lo_h, hi_h, whole)


def _set_text(s: isl.Set) -> str:
    text = str(s.coalesce())
    return text if len(text) <= 300 else text[:297] + "..."


def _check_owner_computes(rk: _Ranks, blocks: dict[str, _Blocks]) -> None:
    """A computation writes, on each rank, only elements of a distributed buffer that the
    rank owns (what it gathers back is then exactly what it computed)."""
    for buf, bl in blocks.items():
        for n, m, _ in rk.accesses(buf, reads=False, ops=False):
            for r in range(rk.R):
                bad = m.intersect_domain(rk.on_rank(n, r)).range().subtract(bl.own(r))
                if not bad.is_empty():
                    how = "on every rank (it is not distributed)" if rk.dist[n] is None else \
                        f"on rank {r}"
                    raise ScheduleError(
                        f"{n!r} writes {how} elements of {buf!r} that rank {r} does not own: "
                        f"{_set_text(bad)} ({buf!r} is distributed along dimension {bl.dim} "
                        f"in blocks of {rk.blocks_of()}); distribute {n!r}'s loop so that "
                        "each rank computes its own block", computations=(n,))


def _check_replicated(rk: _Ranks, blocks: dict[str, _Blocks]) -> None:
    """A buffer that is not distributed is one copy per rank: an output is gathered from
    rank 0's copy, so a distributed computation may not write it; a rank may read an
    element of a temporary only if it wrote it itself (or every rank did)."""
    for buf in rk.l3.buffers:
        if buf in blocks:
            continue
        writers = [(n, m) for n, m, _ in rk.accesses(buf, reads=False, ops=False)
                   if rk.dist[n] is not None]
        if not writers:
            continue
        if buf in rk.l3.outputs:
            n = writers[0][0]
            raise ScheduleError(
                f"output {buf!r} is written by {n!r}, whose loop is distributed, but {buf!r} "
                f"is not: each rank would hold a part of it; distribute it too "
                f"({buf}.distribute(dim) or {n}.buffer().distribute(dim))", computations=(n,))
        written = [_union(m.intersect_domain(rk.on_rank(n, r)).range() for n, m in writers)
                   for r in range(rk.R)]
        for n, m, _ in rk.accesses(buf, writes=False, ops=False):
            for r in range(rk.R):
                elsewhere = _union(written[s] for s in range(rk.R) if s != r)
                if elsewhere is None:
                    continue
                own = written[r] if written[r] is not None else elsewhere.subtract(elsewhere)
                bad = m.intersect_domain(rk.on_rank(n, r)).range().intersect(
                    elsewhere.subtract(own))
                if not bad.is_empty():
                    raise ScheduleError(
                        f"{n!r} reads on rank {r} elements of {buf!r} that another rank "
                        f"computes: {_set_text(bad)}; {buf!r} is not distributed, so nothing "
                        f"brings them (distribute {buf!r} and exchange its halo)",
                        computations=(n,))


def _union(sets: object) -> isl.Set | None:
    out = None
    for s in sets:  # type: ignore[attr-defined]
        if s is None:
            continue
        out = s if out is None else out.union(s)
    return out


def _exchanged(rk: _Ranks, blocks: dict[str, _Blocks], name: str
               ) -> tuple[Op, str, str, _Blocks, list[isl.Map], list[int]]:
    """What an exchange moves, checked (the fixed and the run-time plans share it): the
    operation, its consumer and distributed buffer, the buffer's blocks, the consumer's
    reads of the buffer and the time-space dims of the loops around the exchange."""
    o = rk.l4.ops[name]
    p, buf = o.consumer, o.src
    assert p is not None and buf is not None
    if buf not in blocks:
        raise ScheduleError(f"{o.command}: {buf!r} is not distributed; exchange moves the "
                            f"halo of a distributed buffer ({buf}.distribute(dim))",
                            computations=(name,))
    d = rk.dist.get(p)  # None: p runs on every rank, each receives all it reads
    lv = -1 if o.level in (None, cmd.ROOT) else rk.ts.comps[p].ext_dims.index(o.level)
    if d is not None and 2 * lv + 1 >= d:
        raise ScheduleError(f"{o.command}: the exchange must be placed at a loop outside "
                            f"{p!r}'s distributed loop {rk.ts.loop_name(p, (d - 1) // 2)!r} "
                            "(all ranks exchange together)", computations=(name, p))
    reads = [m for n, m, _ in rk.accesses(buf, writes=False, ops=False) if n == p]
    return o, p, buf, blocks[buf], reads, [2 * q + 1 for q in range(lv + 1)]


def _exchange(rk: _Ranks, blocks: dict[str, _Blocks], name: str) -> tuple[Transfer, ...]:
    """The messages of one exchange: for each pair of ranks, the exact elements the
    consumer reads on the receiver below the exchange's loop that the sender owns."""
    _, p, buf, bl, reads, loops = _exchanged(rk, blocks, name)
    out: list[Transfer] = []
    for r in range(rk.R):
        need = None
        for m in reads:
            m = m.intersect_domain(rk.on_rank(p, r)).subtract_range(bl.own(r))
            need = m if need is None else need.union(m)
        if need is None:
            continue
        need = _by_loops(need, loops, rk.ntd)
        for src in range(rk.R):
            if src == r:
                continue
            part = need.intersect(bl.own(src).align_params(need.get_space()))
            if part.is_empty():
                continue
            out.append(Transfer(src, r, buf, _element_loops(part, program_params(rk))))
    return tuple(out)


def program_params(rk: _Ranks) -> dict[str, str]:
    return {q: f"p_{q}" for q in rk.l1.params}


def _by_loops(m: isl.Map, loops: list[int], ntd: int) -> isl.Set:
    """``{T -> e}`` as a set of elements whose params include the loop iterators ``t<k>``
    of the time-space dims ``loops`` (the other dims projected out)."""
    m = m.coalesce()
    for k in range(ntd):
        m = m.set_dim_name(isl.dim_type.in_, k, f"t{k}")
    keep = set(loops)
    for k in range(ntd - 1, -1, -1):
        if k not in keep:
            m = m.project_out(isl.dim_type.in_, k, 1)
    # the remaining input dims become params named t<k>
    n_in = m.dim(isl.dim_type.in_)
    m = m.move_dims(isl.dim_type.param, m.dim(isl.dim_type.param), isl.dim_type.in_, 0, n_in)
    return m.range().coalesce()


def _element_loops(elems: isl.Set, pmap: dict[str, str]) -> Node:
    """A loop nest enumerating ``elems`` in row-major order (ISL's AST builder)."""
    ctx = elems.get_ctx()
    n = elems.dim(isl.dim_type.set)
    sched = isl.Map.identity(elems.get_space().map_from_set()).intersect_domain(elems)
    sched = sched.set_tuple_name(isl.dim_type.in_, ELEMENT)
    sched = sched.reset_tuple_id(isl.dim_type.out)
    build = isl.AstBuild.from_context(isl.Set.universe(elems.get_space().params()))
    ids = isl.IdList.alloc(ctx, n)
    for k in range(n):
        ids = ids.add(isl.Id(f"me_x{k}", context=ctx))
    build = build.set_iterators(ids)
    root = build.node_from_schedule_map(isl.UnionMap.from_map(sched))
    return _translate(root, pmap)


def _translate(a: isl.AstNode, pmap: dict[str, str]) -> Node:
    t = a.get_type()
    if t == isl.ast_node_type.block:
        ch = a.block_get_children()
        return Block(tuple(_translate(ch.get_at(k), pmap) for k in range(ch.n_ast_node())))
    if t == isl.ast_node_type.if_:
        els = _translate(a.if_get_else_node(), pmap) if a.if_has_else_node() else None
        return If(iexpr(a.if_get_cond(), pmap), _translate(a.if_get_then_node(), pmap), els)
    if t == isl.ast_node_type.user:
        e = a.user_get_expr()
        binds = tuple((f"e{k - 1}", iexpr(e.get_op_arg(k), pmap))
                      for k in range(1, e.get_op_n_arg()))
        return Stmt(ELEMENT, binds)
    if t == isl.ast_node_type.for_:
        var = a.for_get_iterator().get_id().get_name()
        cond = iexpr(a.for_get_cond(), pmap)
        hi: IExpr | None = None
        if isinstance(cond, IOp) and cond.op in ("le", "lt") and cond.args[0] == IVar(var):
            hi = cond.args[1] if cond.op == "le" else IOp("sub", (cond.args[1], IInt(1)))
        return For(var, iexpr(a.for_get_init(), pmap), cond,
                   int(a.for_get_inc().get_val().to_python()),
                   _translate(a.for_get_body(), pmap), hi=hi)
    if t == isl.ast_node_type.mark:
        return _translate(a.mark_get_node(), pmap)
    raise ScheduleError(f"unexpected ISL AST node type {t} in an exchange")


def _check_remote_reads(rk: _Ranks, blocks: dict[str, _Blocks],
                        exchanges: dict[str, tuple[Transfer, ...]]) -> None:
    """An element a rank reads and does not own must be brought by a receive or an
    exchange on that rank."""
    for buf, bl in blocks.items():
        for r in range(rk.R):
            brought = None
            for n, m, _ in rk.accesses(buf, reads=False):
                if n in rk.l4.ops and rk.l4.ops[n].kind == "receive":
                    e = m.intersect_domain(rk.on_rank(n, r)).range()
                    brought = e if brought is None else brought.union(e)
            exchanged = {rk.l4.ops[x].consumer for x, ts_ in exchanges.items()
                         if rk.l4.ops[x].src == buf}
            for n, m, _ in rk.accesses(buf, writes=False, ops=False):
                if n in exchanged:
                    continue  # its exchange brings exactly what it reads
                miss = m.intersect_domain(rk.on_rank(n, r)).range().subtract(bl.own(r))
                if brought is not None:
                    miss = miss.subtract(brought)
                if miss.is_empty():
                    continue
                owners = sorted(q for q in range(rk.R) if q != r and
                                not miss.intersect(bl.own(q)).is_empty())
                raise ScheduleError(
                    f"{n!r} reads on rank {r} elements of {buf!r} owned by rank(s) {owners}, "
                    f"and nothing sends them: {_set_text(miss)}; add "
                    f"me.exchange({n}, {buf}) or a send/receive pair", computations=(n,))
