"""The candidate loop nests of one statement: the scheduling language's own transformations
(loop order, tiling, unrolling, vectorization, a parallel loop), combined the ways the
seeds' and Halide's hand schedules combine them, with sizes from the machine.

Six families, each over every order of the statement's free loops:

- *plain*: a loop permutation, the innermost loop vectorized where its accesses are
  contiguous and it carries no reduction, the outermost loop without a reduction parallel;
- *vector strip*: the vector loop split by the lanes, short loops (channels) inside it;
- *blocked vector*: the vector loop split in blocks (256 to 4096 elements, so that the
  block's data stays in L1 or L2 across the loops between), optionally an outer loop
  unrolled by 4 or 8 inside the block (an axpy updating a block of sums from 8 columns:
  one load and store of the sums per 8 columns), or tiled by 8 to 64 rows (a 2-D tile: a
  producer computed per tile then computes its rows once per tile, not per row);
- *register tile*: a reduction ``r``, a contiguous loop ``v`` and another ``u`` tiled as a
  BLAS micro-kernel: ``v`` by ``m`` vectors (``m`` of 1-3), ``u`` by ``U`` unrolled columns
  with ``m U`` sums within the vector registers, ``r`` in blocks (or not) outside them;
- *dot-product tile*: an innermost reduction with ``U`` of its neighbours' sums unrolled
  inside it (independent chains for the adder's latency, in vectors where they are
  contiguous);
- *cycled sums*: a reduction whose stored element cycles along it (``yq[mod(i, 8), j]``,
  8 interleaved partial sums): its tile of one period as a register tile's rows, ``U``
  columns unrolled beside it.

Which one wins is the cost model's call (:mod:`.cost`); which are legal, the middle-end's.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Sequence

from ..driver.summary import Stmt
from ..target.base import register_tile_fits
from .cost import STREAMS, MachineModel, cost, vectorizable
from .plan import Plan, loops

BLOCKS = (256, 1024, 4096)
ROW_TILES = (8, 32, 64)
UNROLLS = (4, 8)
TILE_COLUMNS = (4, 6, 8, 12)
REDUCTION_BLOCKS = (None, 128, 256, 512)
MAX_ORDERS = 120  # permutations of up to 5 free loops; beyond, only the innermost 4 move


def _orders(free: Sequence[str]) -> list[tuple[str, ...]]:
    if len(free) <= 5:
        return list(itertools.permutations(free))
    head = tuple(free[:-4])
    return [head + p for p in itertools.permutations(free[-4:])]


def _contiguous(stmt: Stmt, v: str) -> bool:
    """Whether ``v``'s loop can run in vectors: every access moves by 0 or 1 element
    along it, or is a read by 2 (:func:`.cost.vectorizable`), one of them by 1."""
    return vectorizable(stmt.accesses, stmt.vars.index(v))


def _parallel(order: Sequence[str], stmt: Stmt, ext: dict[str, int],
              tiles: dict[str, int], avoid: str | None) -> str | None:
    """The outermost variable of ``order`` without a reduction whose (outer) loop has
    more than one iteration; ``avoid``: an untiled variable whose loop is inner."""
    for v in order:
        if v in stmt.reductions or v == avoid and v not in tiles:
            continue
        trip = -(-ext[v] // tiles[v]) if v in tiles else ext[v]
        if trip > 1:
            return v
    return None


def fld_blocks(stmt: Stmt, free: Sequence[str]) -> list[tuple[str, int]]:
    """The free variables ``v`` some access indexes as ``fld(v, c)`` (a coefficient
    ``1 / c`` in one of its dimensions), with each such ``c`` below the loop's trip."""
    ext = dict(zip(stmt.vars, stmt.extents, strict=True))
    out: list[tuple[str, int]] = []
    for v in free:
        k = stmt.vars.index(v)
        for a in stmt.accesses:
            for row in a.spans:
                s = abs(row[k])
                if 0 < s < 0.5:
                    c = round(1.0 / s)
                    if abs(c * s - 1.0) < 1e-9 and c < ext[v] and (v, c) not in out:
                        out.append((v, c))
    return out


def plans(stmt: Stmt, free: Sequence[str], m: MachineModel,
          blocks: Sequence[tuple[str, int]] = ()) -> Iterator[Plan]:
    """Every candidate plan of ``stmt`` over its ``free`` loops (duplicates possible):
    those of the families above, then, for a variable indexed as ``fld(v, c)`` (a sum per
    block of ``c``), the same inside one block of ``c``, the block loop over the cores;
    ``blocks``: more such blocks (those of a statement sharing this one's loops)."""
    yield from _plans(stmt, free, m, dict(zip(stmt.vars, stmt.extents, strict=True)))
    own = fld_blocks(stmt, free)
    ext0 = dict(zip(stmt.vars, stmt.extents, strict=True))
    more = [(v, c) for v, c in blocks if v in free and c < ext0[v] and (v, c) not in own]
    for v, c in own + more:
        ext = dict(zip(stmt.vars, stmt.extents, strict=True))
        ext[v] = c
        for p in _plans(stmt, free, m, ext):
            yield dataclasses.replace(p, block=(v, c), parallel=v)


def _plans(stmt: Stmt, free: Sequence[str], m: MachineModel, ext: dict[str, int]
           ) -> Iterator[Plan]:
    elem = max((a.elem_bytes for a in stmt.accesses if a.write), default=4)
    lanes = m.lanes(elem)
    vec = [v for v in free if v not in stmt.reductions and _contiguous(stmt, v)]
    red = [v for v in free if v in stmt.reductions]
    keep = [v for v in free if v not in stmt.reductions]
    for order in _orders(free):
        inner = order[-1] if order else None
        v = inner if inner in vec and ext[inner] >= lanes else None
        yield Plan(order, (), v, lanes if v else 0, None,
                   _parallel(order, stmt, ext, {}, inner))
        for vv in vec:
            after = order[order.index(vv) + 1:]
            if after and ext[vv] > lanes and all(ext[u] <= STREAMS for u in after):
                # a vector strip: one vector of ``vv`` per iteration, the small loops
                # (channels, short enough that their rows are streams of their own:
                # :data:`.cost.STREAMS`) inside it, as Halide's apps write
                # ``split(x, xo, xi, vec).reorder(xi, c, xo)``: a producer of all channels
                # computed per strip stays in registers (interpolate's last level per
                # row: 28 KB through L1 per row; per vector of 8 columns: 0.83x the
                # app's time)
                t = {vv: lanes}
                yield Plan(order, tuple(t.items()), vv, lanes, None,
                           _parallel(order, stmt, ext, t, vv))
            for b in BLOCKS:
                if b >= ext[vv]:
                    continue
                base = {vv: b}
                yield Plan(order, ((vv, b),), vv, lanes, None,
                           _parallel(order, stmt, ext, base, vv))
                for u in keep:  # 2-D tiles: a producer computed per tile keeps its rows
                    if u == vv or order.index(u) > order.index(vv):
                        continue
                    for tu in ROW_TILES:
                        if tu < ext[u]:
                            t = {u: tu, vv: b}
                            yield Plan(order, tuple(t.items()), vv, lanes, None,
                                       _parallel(order, stmt, ext, t, vv))
                for u in free:
                    if u == vv or order.index(u) > order.index(vv):
                        continue
                    for uf in UNROLLS:
                        if uf >= ext[u]:
                            continue
                        t = {vv: b, u: uf}
                        yield Plan(order, tuple(t.items()), vv, lanes, u,
                                   _parallel(order, stmt, ext, t, vv))
                        yield Plan(order, tuple(t.items()), None, 0, u,
                                   _parallel(order, stmt, ext, t, vv), jam=True)
        # unroll-and-jam with the contiguous loop whole: the order's last variable
        if inner in vec and ext[inner] >= lanes:
            for u in free:
                if u == inner:
                    continue
                for uf in UNROLLS:
                    if uf < ext[u]:
                        t = {u: uf}
                        yield Plan(order, tuple(t.items()), None, 0, u,
                                   _parallel(order, stmt, ext, t, inner), jam=True)
        for r in red:
            for vv in vec:
                for u in keep:
                    if u == vv:
                        continue
                    for mi in (1, 2, 3):
                        rows = mi * lanes
                        if rows > ext[vv]:
                            continue
                        for uf in TILE_COLUMNS:
                            if not _fits(mi, uf, m) or uf > ext[u]:
                                continue
                            for kb in REDUCTION_BLOCKS:
                                if kb is not None and kb >= ext[r]:
                                    continue
                                t = {vv: rows, u: uf}
                                if kb is not None:
                                    t[r] = kb
                                if not stmt.box and rows % uf == 0 and rows < ext[u]:
                                    # a triangle (covariance's j >= i): the columns in
                                    # blocks as wide as the rows' tile, over the cores
                                    # (:func:`_aligned`)
                                    yield _aligned(order, t, u, rows, vv)
                                    continue
                                yield Plan(order, tuple(t.items()), None, 0, u,
                                           _parallel(order, stmt, ext, t, None),
                                           contiguous=vv)
            c = stmt.period(r)
            if c and c % lanes == 0 and c // lanes <= 3 and c <= ext[r] \
                    and _contiguous(stmt, r):
                # a sum whose element cycles along r (``yq[mod(i, 8), j]``): r's tile of
                # one period is the register tile's contiguous rows, its tile loop the sum
                for u in keep:
                    for uf in TILE_COLUMNS:
                        if _fits(c // lanes, uf, m) and uf <= ext[u]:
                            t = {r: c, u: uf}
                            yield Plan(order, tuple(t.items()), None, 0, u,
                                       _parallel(order, stmt, ext, t, None), contiguous=r)
            if inner != r:
                continue
            for u in keep:
                for uf in (4, 8, 16):
                    if uf < ext[u]:
                        t = {u: uf}
                        yield Plan(order, tuple(t.items()), None, 0, u,
                                   _parallel(order, stmt, ext, t, None))


def _fits(rows: int, columns: int, m: MachineModel) -> bool:
    """Whether a register tile of ``rows`` vectors by ``columns`` fits the registers with
    its row of operand vectors (:func:`~middleend.target.base.register_tile_fits`)."""
    return register_tile_fits(rows * columns, rows, m.registers)


def _aligned(order: tuple[str, ...], tiles: dict[str, int], u: str, rows: int, vv: str
             ) -> Plan:
    """A register tile of ``rows`` (``vv``) by ``tiles[u]`` columns on a domain that is not
    a box, its columns ``u`` first split in blocks of ``rows``, the block loop over the
    cores. The diagonal of a triangle then crosses only the ``rows`` x ``rows`` blocks on
    it, each one tile of ``vv``, so that the operand copy can be read in panels of the
    tile's rows (:func:`.pack.panelled`) with a panel index constant in every tile; the
    plain tiles cut by the diagonal all along it ran a scalar remainder per cut tile
    (covariance at 1400 x 1200 with AVX-512: 27.9 ms plain, 32.2 aligned without panels,
    22.4 aligned with them, numpy's syrk 22.3 ms, one run)."""
    return Plan(order, tuple(tiles.items()), None, 0, u, u, contiguous=vv, block=(u, rows))


def likely_legal(stmt: Stmt, shared: Sequence[str], p: Plan) -> bool:
    """Whether ``p`` keeps ``stmt``'s dependences on itself (:class:`SelfDeps`): its loop
    order, the order of its tile loops, no distance along its parallel loop once the
    loops outside are fixed, nor along its vector loop once all the others are. Only
    the statement's own flow dependences: the legality check has the last word."""
    d = stmt.deps
    if d.deltas is None:
        return True
    ix = {v: k for k, v in enumerate(stmt.vars)}
    outer = [ix[v] for v in shared] + [ix[v] for v in p.order]
    if not d.keeps_order(outer):
        return False
    tiled = {v for v, _ in p.tiles}
    if tiled:
        band = [lp.var for lp in loops(stmt, shared, p) if lp.part == "inner"]
        untiled = [ix[v] for v in (*shared, *p.order) if v not in tiled]
        if not d.keeps_order(untiled + [ix[v] for v in band]):
            return False
    if p.parallel is not None and (p.block is None or p.block[0] != p.parallel):
        # (a block loop may carry no sum where its variable does: the check decides)
        before = []
        for lp in loops(stmt, shared, p):
            if lp.tag == "parallel":
                break
            before.append(ix[lp.var])
        if not d.parallel(before, ix[p.parallel]):
            return False
    if p.vector is not None:
        k = ix[p.vector]
        if not d.parallel([j for j in range(len(stmt.vars)) if j != k], k):
            return False
    return True


def ranked(stmt: Stmt, shared: Sequence[str], m: MachineModel) -> list[tuple[float, Plan]]:
    """The distinct candidate plans of ``stmt`` by estimated cycles, best first, those
    :func:`likely_legal` before the others (ties in the order they were generated: the
    result is deterministic)."""
    free = [v for v in stmt.vars if v not in shared]
    seen: set[Plan] = set()
    out: list[tuple[bool, float, int, Plan]] = []

    def add(p: Plan) -> None:
        seen.add(p)
        out.append((not likely_legal(stmt, shared, p),
                    cost(stmt, loops(stmt, shared, p), m), len(out), p))

    for p in plans(stmt, free, m):
        if p in seen:
            continue
        add(p)
        if p.parallel is not None:  # the same without the parallel loop
            q = dataclasses.replace(p, parallel=None)
            if q not in seen:
                add(q)
    out.sort(key=lambda t: (t[0], t[1], t[2]))
    return [(c, p) for _, c, _, p in out]
