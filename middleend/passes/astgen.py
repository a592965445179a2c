"""Loop generation: ISL's AST builder on the union of time-space maps, translated into the
project's own loop AST (:mod:`middleend.loopast`).

Iterators are named ``t<k>`` after their time-space dimension, so a loop's dimension (and so
its tags) is known from its iterator. Each statement node gets, from ISL, the expressions of
its computation's iterators and of the offsets of loop-local buffers in terms of the loop
iterators; the statement bodies stay Layer I expressions.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.islutil import exhausted
from ..ir.loopast import Alloc, Block, For, IExpr, If, IInt, IOp, IVar, Node, Stmt, statements
from .gpu_ast import Leaf, annotate
from .loopmerge import merge_split_loops
from .physical import LocalAlloc, Physical
from .placement import TimeSpace
from .schedule import check_unrollable, unroll_extent
from .unrolling import expand_unrolled

_log = logging.getLogger("middleend.lower")

_OPS = {
    isl.ast_expr_op_type.add: "add", isl.ast_expr_op_type.sub: "sub",
    isl.ast_expr_op_type.mul: "mul", isl.ast_expr_op_type.minus: "neg",
    isl.ast_expr_op_type.fdiv_q: "fdiv_q", isl.ast_expr_op_type.pdiv_q: "pdiv_q",
    isl.ast_expr_op_type.pdiv_r: "pdiv_r", isl.ast_expr_op_type.zdiv_r: "zdiv_r",
    isl.ast_expr_op_type.div: "pdiv_q",
    isl.ast_expr_op_type.min: "min", isl.ast_expr_op_type.max: "max",
    isl.ast_expr_op_type.cond: "select", isl.ast_expr_op_type.select: "select",
    isl.ast_expr_op_type.eq: "eq", isl.ast_expr_op_type.le: "le",
    isl.ast_expr_op_type.lt: "lt", isl.ast_expr_op_type.ge: "ge",
    isl.ast_expr_op_type.gt: "gt", isl.ast_expr_op_type.and_: "and",
    isl.ast_expr_op_type.and_then: "and", isl.ast_expr_op_type.or_: "or",
    isl.ast_expr_op_type.or_else: "or",
}


def iexpr(e: isl.AstExpr, params: dict[str, str]) -> IExpr:
    """Translate an ISL AST expression; ``params`` maps ISL names to C names."""
    t = e.get_type()
    if t == isl.ast_expr_type.int:
        text = e.get_val().to_str()
        if text is None:  # ISL gave up printing it: out of its bound, the one cause seen
            raise isl.Error("maximal number of operations exceeded (reading an AST constant)")
        return IInt(int(text))
    if t == isl.ast_expr_type.id:
        n = e.get_id().get_name()
        return IVar(params.get(n, n))
    op = e.get_op_type()
    if op not in _OPS:
        raise ScheduleError(f"unsupported ISL AST operator {op} in generated loops")
    args = tuple(iexpr(e.get_op_arg(k), params) for k in range(e.get_op_n_arg()))
    name = _OPS[op]
    if name in ("min", "max") and len(args) > 2:
        acc = args[0]
        for a in args[1:]:
            acc = IOp(name, (acc, a))
        return acc
    return IOp(name, args)


@dataclass
class _StmtRec:
    comp: str
    bindings: tuple[tuple[str, IExpr], ...]
    domain: isl.Set  # the instances (extended domain) this leaf executes


def generate(ts: TimeSpace, ph: Physical, params: list[str], context: isl.Set,
             iter_names: dict[str, list[str]], store_buf: dict[str, str],
             read_bufs: dict[str, set[str]], gpu: GpuFacts | None = None) -> Node:
    """Build the loop AST. ``iter_names``: statement (computation or operation) -> its own
    iterator names; ``store_buf``/``read_bufs``: which buffers each statement writes/reads
    (for offsets of loop-local buffers; an operation may write none). ``gpu``: for a
    program with statements on a GPU, what :func:`gpu_ast.annotate` needs."""
    if not ts.order:  # no statement: a specialized program that computes nothing
        return Block(())
    ctx = context.get_ctx()
    ntd = 2 * ts.depth + 1
    pmap = {p: f"p_{p}" for p in params}
    build = isl.AstBuild.from_context(context)
    ids = isl.IdList.alloc(ctx, ntd)
    for k in range(ntd):
        ids = ids.add(isl.Id(f"t{k}", context=ctx))
    build = build.set_iterators(ids)
    opts = _unroll_options(ts, ctx)  # checks every unrolled loop (bounded by a constant)
    if opts is not None and gpu is not None:  # (the GPU annotation keeps ISL's copies)
        build = build.set_options(opts)
    recs: list[_StmtRec] = []
    failed: list[BaseException] = []
    local_offsets: dict[tuple[str, str], list[isl.PwAff]] = {}

    def offsets(comp: str, buf: str) -> list[isl.PwAff]:
        """The offsets of loop-local buffer ``buf`` (empty if it is not one) as functions
        of ``comp``'s time-space, computed once per computation and buffer: each leaf of
        the computation only pulls them back to its own part of the schedule (computed
        per leaf, 0.1 s of the vectorized 8-stage stencil chain's 45 leaves)."""
        got = local_offsets.get((comp, buf))
        if got is None:
            la = ph.local.get(buf)
            got = []
            if la is not None:
                full = ts.comps[comp].full
                assert full is not None
                ext = isl.PwMultiAff.from_map(full)  # ext domain -> time-space
                got = [off.pullback_pw_multi_aff(ext) for off in la.offsets]
            local_offsets[(comp, buf)] = got
        return got

    def at_domain(node: isl.AstNode, b: isl.AstBuild) -> isl.AstNode:
        """ISL calls this back for each leaf; an exception here (ISL out of its operation
        bound, typically) is kept and raised after the build: islpy would print it with
        a traceback and go on."""
        try:
            return leaf(node, b)
        except BaseException as e:  # noqa: BLE001 - re-raised below, after ISL returns
            failed.append(e)
            return node

    def leaf(node: isl.AstNode, b: isl.AstBuild) -> isl.AstNode:
        sched = isl.Map.from_union_map(b.get_schedule())
        comp = sched.get_tuple_name(isl.dim_type.in_)
        if comp.startswith(TAIL):
            comp = comp[len(TAIL):]
            sched = sched.set_tuple_name(isl.dim_type.in_, comp)
        inv = isl.PwMultiAff.from_map(sched.reverse())
        s = ts.comps[comp]
        binds: list[tuple[str, IExpr]] = []
        for k, v in enumerate(iter_names[comp]):
            pa = inv.get_pw_aff(s.n_outer + k)
            binds.append((f"v_{v}", iexpr(b.expr_from_pw_aff(pa), pmap)))
        bufs = ({store_buf[comp]} if comp in store_buf else set()) | read_bufs.get(comp, set())
        for buf in sorted(bufs):
            for q, off in enumerate(offsets(comp, buf)):
                pa = off.pullback_pw_multi_aff(inv)
                binds.append((f"o_{buf}_{q}", iexpr(b.expr_from_pw_aff(pa), pmap)))
        recs.append(_StmtRec(comp, tuple(binds), sched.domain()))
        return node.set_annotation(isl.Id(f"s{len(recs) - 1}", context=ctx))

    build, _handle = build.set_at_each_domain(at_domain)
    users = {buf: users_of(buf, store_buf, read_bufs) for buf in ph.local}
    local_users = {c for us in users.values() for c in us}
    extents: dict[tuple[str, int], int | None] = {}
    keep: set[str] = set()
    while True:
        recs.clear()
        sched = _separated(ts, keep).intersect_params(context)
        maps = sched.get_map_list()
        tails = any(maps.get_at(k).get_tuple_name(isl.dim_type.in_).startswith(TAIL)
                    for k in range(maps.n_map()))
        try:
            root = _node(build, sched, failed, tails,
                         SEPARATION_OPS if params else CONSTANT_SEPARATION_OPS)
        except isl.Error as e:
            if not tails or keep == set(ts.order) or DISJOINT not in str(e):
                raise
            # ISL's generation of some separated schedules trips over its own assumption
            # (covariance's mean and centring unrolled by 8 beside a 256 x 4 tile): the
            # same loops without the separation, except, first, the register tiles' (whose
            # sums stay in registers only in full tiles: 1.5-3.7x), said on the
            # lowering's logger
            wider = keep | (set(ts.order) - _register_tiled(ts))
            keep = wider if wider not in (keep, set(ts.order)) else set(ts.order)
            _log.info("ISL could not generate the separated full/partial tiles (%s): %s "
                      "generated without the separation", DISJOINT, ", ".join(sorted(keep)))
            continue
        except SeparationTooCostly:
            keep = set(ts.order)  # generate every statement without the separation
            # a performance cliff the user cannot see otherwise (covariance's register
            # tile ran 3.7x slower unseparated): say so on the lowering's logger
            _log.info("full/partial tile separation passed its budget of %d ISL "
                      "operations: %s generated without it (guards inside the tiles)",
                      SEPARATION_OPS if params else CONSTANT_SEPARATION_OPS,
                      ", ".join(sorted(ts.order)))
            continue
        body = _translate(root, recs, pmap, ts)
        if gpu is None:  # generated as loops, then one copy per iteration (unrolling.py)
            body = expand_unrolled(body, lambda f: _unroll_extent(f, ts, extents))
        _check_nesting(body, None)
        try:
            placed = _place_allocs(body, ts, ph, users, recs)
        except ScheduleError:
            if local_users <= keep:
                raise
            # separating vector tails moved pieces of a thread's iterations apart: generate
            # the users of loop-local buffers without the separation
            keep = keep | local_users
            continue
        if gpu is None:
            return merge_split_loops(placed)
        leaves = [Leaf(r.comp, r.domain) for r in recs]
        return annotate(placed, ts, leaves, context, lambda e: iexpr(e, pmap), gpu.kinds,
                        gpu.boxes)


# ISL operations the AST generation of a schedule with separated full/partial tiles may
# take (about 3 s here) before it is generated without the separation. Tails add
# statements, and ISL's generation grows fast with them: a GotoBLAS-blocked sgemm took 30 s
# and passed the lowering's whole bound; unseparated it takes 3 s.
SEPARATION_OPS = 3_000_000
# The same where every size is a constant (the Julia front-end's specialized kernels, the
# benchmarks' N): the partial tiles are then concrete sets, and ISL spends its operations
# faster and more often succeeds. Covariance's register tile at 1400 x 1000 needed 3-5
# million (without its separation the kernel ran 3.7x slower), the packed sgemm at
# N = 1024 6-10 million, and lowered faster separated (4.7 s) than failing at 3 million
# and falling back (5.1 s); a GotoBLAS-blocked sgemm still falls back (8 -> 12 s).
CONSTANT_SEPARATION_OPS = 10_000_000


# the message of ISL's AST generation failing on a separated schedule it cannot handle
DISJOINT = "basic sets in scc are assumed to be disjoint"


class SeparationTooCostly(Exception):
    """The separated schedule's AST generation passed :data:`SEPARATION_OPS`."""


def _node(build: isl.AstBuild, sched: isl.UnionMap, failed: list[BaseException],
          bounded: bool, budget: int) -> isl.AstNode:
    """ISL's AST of ``sched``; with ``bounded`` (a schedule with separated tiles), within
    ``budget`` operations, else :class:`SeparationTooCostly`. ISL counts
    operations per context: the counter restarts here, so the lowering's own bound then
    counts from this point (at most twice the bound in all)."""
    ctx = sched.get_ctx()
    cap = ctx.get_max_operations()
    if bounded:
        ctx.reset_operations()
        ctx.set_max_operations(min(cap, budget) if cap else budget)
    try:
        try:
            root = build.node_from_schedule_map(sched)
        except isl.Error:
            if not failed:
                raise
            root = None  # a leaf's callback failed first: raised below
        if failed or root is None:
            first = failed[0]
            if bounded and isinstance(first, isl.Error) and exhausted(ctx):
                ctx.reset_operations()
                raise SeparationTooCostly from None
            raise first
        return root
    except isl.Error:
        if not bounded or not exhausted(ctx):
            raise
        ctx.reset_operations()
        raise SeparationTooCostly from None
    finally:
        failed.clear()
        if bounded:
            ctx.set_max_operations(cap)


@dataclass
class GpuFacts:
    """What the GPU annotation needs beside the schedule: each statement's operation
    kind (None for a computation) and each host/device copy's buffer elements."""

    kinds: dict[str, str | None]
    boxes: dict[str, isl.Set]


TAIL = "_tail_"  # users' names cannot start with '_'
PARALLEL_LOOP_TAGS = ("parallel", "gpu_block", "gpu_thread", "distribute")


def users_of(buf: str, store_buf: dict[str, str], read_bufs: dict[str, set[str]]
             ) -> set[str]:
    """The computations that write or read ``buf``."""
    return ({c for c, b in store_buf.items() if b == buf}
            | {c for c, bs in read_bufs.items() if buf in bs})


def _register_tiled(ts: TimeSpace) -> set[str]:
    """The computations with an unrolled loop that has a loop inside it: a register tile's
    columns around its rows (the ones whose separation matters most)."""
    out = set()
    for n in ts.order:
        s = ts.comps[n]
        for name, tag in s.tags.items():
            if tag == "unroll" and name in s.dims and s.dims.index(name) < len(s.dims) - 1:
                out.add(n)
    return out


def _separated(ts: TimeSpace, keep: set[str]) -> isl.UnionMap:
    """The schedule with full and partial tiles of vectorized or unrolled loops as separate
    statements, so that ISL generates the full tiles with constant loop bounds and one
    tail. A tile is full when the vector/unroll loop and the short loops inside it span
    their whole range: a short loop below an unrolled one whose extent varies (the rows of
    a diagonal tile in a triangular domain) would otherwise keep a ``min`` bound, in every
    tile, that stops gcc keeping the tile's sums in registers (covariance: 1.5x).
    Computations in ``keep`` (users of loop-local buffers) are not separated: ISL may move
    a separated tail out of the allocation loop, away from the buffer's allocation."""
    out = isl.UnionMap.empty(next(iter(ts.comps.values())).full.get_space().params())
    for n in ts.order:
        s = ts.comps[n]
        full = s.full
        assert full is not None
        tail = None
        for name, tag in s.tags.items():
            if tag not in ("vector", "unroll") or n in keep:
                continue
            d = 2 * (s.n_outer + s.dims.index(name)) + 1
            t = _partial_tiles(full, d)
            if t is None:
                continue
            tail = t if tail is None else tail.union(t)
            full = full.subtract(t)
        if tail is not None:
            tail = _simpler_tail(s.full, full, tail)
            if tail.n_basic_map() > SEPARATION_PIECES:
                tail, full = None, s.full  # not worth ISL's time: generated unseparated
        out = out.union(isl.UnionMap.from_map(full))
        if tail is not None:
            out = out.union(isl.UnionMap.from_map(tail.set_tuple_name(isl.dim_type.in_,
                                                                      TAIL + n)))
    return out


# The most pieces a computation's partial tiles may be (in the form
# :func:`_simpler_tail` gives) for it to be generated separated: the first stages of a tiled,
# vectorized 12-stage stencil chain, whose regions per tile have the most corners, are
# 14-16 pieces and 0.4-0.5 s of ISL's AST generation each (the 8 others, 0.05-0.13 s); at
# 8 stages the most is 8. Above it, the computation alone is generated unseparated
# (before, the whole schedule's generation passed :data:`SEPARATION_OPS` and none was
# separated).
SEPARATION_PIECES = 12


def _simpler_tail(whole: isl.Map, full: isl.Map, tail: isl.Map) -> isl.Map:
    """``tail`` (``whole`` minus its full tiles ``full``), as ``whole.subtract(full)`` when
    it is many pieces. A convex domain's partial tiles along a loop are a head and a tail
    per prefix, at most two pieces per piece of the domain as :func:`_partial_tiles`
    computes them; more come from its projections cutting the head and tail where the
    domain's bounds change (the corners of a stencil's octagon-shaped region per tile,
    3-9 pieces per stage), and those pieces, full of the projections' bounds, cost ISL's
    AST generation 2-3x the same set written as the domain less its full tiles (a tiled,
    vectorized 8-stage stencil chain: 1.0 -> 0.5 s). The same set either way; the
    domains with few pieces keep the direct form, and so the code ISL generates."""
    if tail.n_basic_map() <= 2 * whole.n_basic_map():
        return tail
    return whole.subtract(full).coalesce()


# Loops inside a vector/unrolled one count in the fullness of its tiles when they run at
# most this many iterations: the rows of a register tile, which gcc unrolls completely,
# where a varying extent costs the whole tile its registers. A long loop inside (a whole
# column) stays out: a variable bound on it costs one comparison per iteration, not worth
# a second copy of the nest.
SHORT_LOOP = 32


def _partial_tiles(full: isl.Map, d: int) -> isl.Map | None:
    """The part of ``full`` (domain -> time-space) in partial tiles of the loop at
    time-space dim ``d``: the prefixes (dims before ``d``) under which dim ``d`` and the
    later short loops (:data:`SHORT_LOOP`) do not span their whole box. None if there is
    none (or the loop's bounds are not constants)."""
    rng = full.range()
    ntd = rng.dim(isl.dim_type.set)
    lo = rng.dim_min(d).min_val()
    hi = rng.dim_max(d).max_val()
    if not (lo.is_int() and hi.is_int()):
        return None
    box = {d: f"{lo.to_python()} <= x{d} <= {hi.to_python()}"}
    inner = rng
    for e in range(ntd - 1, d, -1):  # project out the later dims that are not short loops
        elo, ehi = rng.dim_min(e).min_val(), rng.dim_max(e).max_val()
        if elo.is_int() and ehi.is_int() and \
                ehi.to_python() - elo.to_python() < SHORT_LOOP:
            box[e] = f"{elo.to_python()} <= x{e} <= {ehi.to_python()}"
        else:
            inner = inner.project_out(isl.dim_type.set, e, 1)
    kept = sorted(box)  # the dims from d on that inner keeps, in order
    names = ", ".join(f"x{e}" for e in kept)
    cond = " and ".join(box[e] for e in kept)
    width = isl.Set.read_from_str(rng.get_ctx(), f"{{ [{names}] : {cond} }}")
    pre = inner.project_out(isl.dim_type.set, d, len(kept))
    missing = pre.flat_product(width.align_params(pre.get_space())).subtract(inner)
    partial = missing.project_out(isl.dim_type.set, d, len(kept))
    part_t = partial.add_dims(isl.dim_type.set, ntd - d).coalesce()
    t = full.intersect_range(part_t)
    return None if t.is_empty() else t


def _unroll_options(ts: TimeSpace, ctx: isl.Context) -> isl.UnionMap | None:
    opts = None
    for n in ts.order:
        s = ts.comps[n]
        for name, tag in s.tags.items():
            if tag != "unroll":
                continue
            d = 2 * (s.n_outer + s.dims.index(name)) + 1
            assert s.full is not None
            check_unrollable(s.full.range(), d, n, name)
            m = isl.Map.from_domain_and_range(
                s.full.range(), isl.Set.read_from_str(ctx, f"{{ unroll[x] : x = {d} }}"))
            um = isl.UnionMap.from_map(m)
            opts = um if opts is None else opts.union(um)
    return opts


def _unroll_extent(f: For, ts: TimeSpace, cache: dict[tuple[str, int], int | None]
                   ) -> int | None:
    """The most ``f``'s iterator spans (its last minus its first value) over the
    statements in its body, a constant; None where one of them is not bounded so."""
    most = 0
    for c in _comps_in(f.body):
        key = (c, f.dim)
        if key not in cache:
            full = ts.comps[c].full
            assert full is not None
            cache[key] = unroll_extent(full.range(), f.dim)
        got = cache[key]
        if got is None:
            return None
        most = max(most, got)
    return most


def _translate(n: isl.AstNode, recs: list[_StmtRec], pmap: dict[str, str],
               ts: TimeSpace) -> Node:
    t = n.get_type()
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return Block(tuple(_translate(ch.get_at(k), recs, pmap, ts)
                           for k in range(ch.n_ast_node())))
    if t == isl.ast_node_type.if_:
        els = _translate(n.if_get_else_node(), recs, pmap, ts) if n.if_has_else_node() \
            else None
        return If(iexpr(n.if_get_cond(), pmap), _translate(n.if_get_then_node(), recs, pmap,
                                                             ts), els)
    if t == isl.ast_node_type.user:
        rec = recs[int(n.get_annotation().get_name()[1:])]
        return Stmt(rec.comp, rec.bindings, int(n.get_annotation().get_name()[1:]))
    if t == isl.ast_node_type.mark:
        return _translate(n.mark_get_node(), recs, pmap, ts)
    if t == isl.ast_node_type.for_:
        var = n.for_get_iterator().get_id().get_name()
        dim = int(var[1:])
        body = _translate(n.for_get_body(), recs, pmap, ts)
        cond = iexpr(n.for_get_cond(), pmap)
        inc = int(n.for_get_inc().get_val().to_python())
        hi = None
        if isinstance(cond, IOp) and cond.op in ("le", "lt") and cond.args[0] == IVar(var):
            hi = cond.args[1] if cond.op == "le" else IOp("sub", (cond.args[1], IInt(1)))
        tag, name, origin = _loop_tag(body, dim, ts)
        width = _vector_width(body, dim, ts) if tag in ("vector", "pipeline") else None
        return For(var, iexpr(n.for_get_init(), pmap), cond, inc, body, tag, dim, name, hi,
                   width, origin)
    raise ScheduleError(f"unexpected ISL AST node type {t}")


def _check_nesting(node: Node, vector: For | None) -> None:
    """Nothing parallel or vector may sit inside a vector loop (an OpenMP simd region)."""
    if isinstance(node, For):
        if vector is not None and node.tag in ("vector", *PARALLEL_LOOP_TAGS):
            raise ScheduleError(
                f"loop {node.name!r} is tagged {node.tag} inside vector loop {vector.name!r}; "
                "only the innermost loops can be vectorized",
                computations=tuple(sorted(_comps_in(node))), level=node.name)
        _check_nesting(node.body, node if node.tag == "vector" else vector)
    elif isinstance(node, Block):
        for c in node.body:
            _check_nesting(c, vector)
    elif isinstance(node, If):
        _check_nesting(node.then, vector)
        if node.orelse is not None:
            _check_nesting(node.orelse, vector)
    elif isinstance(node, Alloc):
        _check_nesting(node.body, vector)


def _comps_in(node: Node) -> set[str]:
    return {s.comp for s in statements(node)}


def _loop_tag(body: Node, dim: int, ts: TimeSpace) -> tuple[str | None, str, str]:
    """The loop's tag, its name (the names of the statements' loops it fuses) and the
    command that set the tag."""
    dyn = (dim - 1) // 2
    tags: dict[str, str] = {}
    names = []
    origin = ""
    for c in sorted(_comps_in(body)):
        names.append(ts.loop_name(c, dyn))
        tg = ts.tag_at(c, dyn)
        if tg is not None:
            origin = origin or ts.tag_origin(c, dyn)
        if tg is not None and tg != "unroll":
            tags[c] = tg
    kinds = set(tags.values())
    if len(kinds) > 1:
        raise ScheduleError(f"conflicting tags {sorted(kinds)} on one fused loop (level "
                            f"{names[0] if names else dim})", computations=tuple(tags),
                            level=names[0] if names else None)
    tag = kinds.pop() if kinds else None
    if tag is None and any(ts.tag_at(c, dyn) == "unroll" for c in _comps_in(body)):
        tag = "unroll"
    return tag, "/".join(dict.fromkeys(names)), origin


def _vector_width(body: Node, dim: int, ts: TimeSpace) -> int | None:
    dyn = (dim - 1) // 2
    widths = set()
    for c in _comps_in(body):
        s = ts.comps[c]
        for name, w in s.widths.items():
            if name in s.dims and s.n_outer + s.dims.index(name) == dyn:
                widths.add(w)
    return widths.pop() if len(widths) == 1 else None


def _place_allocs(body: Node, ts: TimeSpace, ph: Physical, users: dict[str, set[str]],
                  recs: list[_StmtRec]) -> Node:
    """Place each loop-local buffer's allocation: one array per thread, i.e. inside the
    innermost parallel loop that encloses its allocation loop, or once at function entry.

    Reusing one array for the sequential iterations of the allocation loop is exact: the
    legality check proved (with one array per iteration) that no value crosses iterations
    through the buffer, and ISL's code runs instances in time-space order, so iteration k is
    over before iteration k+1 starts, however ISL splits the loop into pieces. ISL may
    also split a parallel loop into several loops (full tiles, last tile): each gets its
    own arrays, which is exact as long as no iteration of the allocation loop has
    statements in two of them — checked here with ISL, refused otherwise."""
    for buf, la in ph.local.items():
        regions: dict[int, tuple[For | None, list[int]]] = {}
        _owners(body, None, la.dim, users.get(buf, set()), buf, regions)
        if len(regions) > 1:
            _check_disjoint(buf, la, regions, recs, ts)
        owners = {id(o) for o, _ in regions.values() if o is not None}
        if owners:
            body = _alloc_in(body, owners, buf)
        if any(owner is None for owner, _ in regions.values()) or not regions:
            body = Alloc(buf, body)
    return body


def _check_disjoint(buf: str, la: LocalAlloc, regions: dict[int, tuple[For | None, list[int]]],
                    recs: list[_StmtRec], ts: TimeSpace) -> None:
    """No iteration of the allocation loop may have statements in two regions."""
    seen: isl.Set | None = None
    for _, leaves in regions.values():
        part: isl.Set | None = None
        for leaf in leaves:
            rec = recs[leaf]
            t = rec.domain.apply(ts.comps[rec.comp].full)
            ntd = t.dim(isl.dim_type.set)
            pre = t.project_out(isl.dim_type.set, la.dim + 1, ntd - la.dim - 1)
            part = pre if part is None else part.union(pre)
        if part is None:
            continue
        if seen is not None and not seen.intersect(part).is_empty():
            raise ScheduleError(
                f"the code ISL generated splits iterations of {la.where} across parallel "
                f"loops, so the loop-local buffer {buf!r} cannot be private to a thread; "
                "allocate it at an outer level or change the schedule")
        seen = part if seen is None else seen.union(part)


def _owners(node: Node, par: For | None, dim: int, users: set[str], buf: str,
            out: dict[int, tuple[For | None, list[int]]]) -> None:
    """Group the statements using ``buf`` by their innermost parallel loop at or above the
    allocation level ``dim`` (None: no such loop)."""
    if isinstance(node, Stmt):
        if node.comp in users:
            out.setdefault(id(par), (par, []))[1].append(node.leaf)
    elif isinstance(node, For):
        if node.dim <= dim and node.tag == "vector" and _comps_in(node) & users:
            raise ScheduleError(f"loop-local buffer {buf!r} is allocated inside vector loop "
                                f"{node.name!r}; vectorize an inner loop instead",
                                computations=tuple(sorted(_comps_in(node) & users)),
                                level=node.name)
        inner = node if node.dim <= dim and node.tag in PARALLEL_LOOP_TAGS else par
        _owners(node.body, inner, dim, users, buf, out)
    elif isinstance(node, Block):
        for c in node.body:
            _owners(c, par, dim, users, buf, out)
    elif isinstance(node, If):
        _owners(node.then, par, dim, users, buf, out)
        if node.orelse is not None:
            _owners(node.orelse, par, dim, users, buf, out)
    elif isinstance(node, Alloc):
        _owners(node.body, par, dim, users, buf, out)


def _alloc_in(node: Node, owners: set[int], buf: str) -> Node:
    """``node`` with ``Alloc(buf)`` around the body of each loop in ``owners`` (by id)."""
    if isinstance(node, For):
        if id(node) in owners:
            return _with_body(node, Alloc(buf, node.body))
        return _with_body(node, _alloc_in(node.body, owners, buf))
    if isinstance(node, Block):
        return Block(tuple(_alloc_in(c, owners, buf) for c in node.body))
    if isinstance(node, If):
        els = _alloc_in(node.orelse, owners, buf) if node.orelse is not None else None
        return If(node.cond, _alloc_in(node.then, owners, buf), els)
    if isinstance(node, Alloc):
        return Alloc(node.buffer, _alloc_in(node.body, owners, buf))
    return node


def _with_body(f: For, body: Node) -> For:
    return dataclasses.replace(f, body=body)
