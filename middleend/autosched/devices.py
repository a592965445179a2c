"""Plans for the targets that are not a multicore CPU: GPU blocks and threads, MPI ranks,
FPGA pipelines.

A GPU kernel wants its parallel loops as a grid: the two outermost loops that carry no
dependence (once the loops shared with other statements are fixed) become blocks of
threads, 16 x 16 (or 8 x 32 with the contiguous loop as x, so that a warp's accesses are
consecutive), one loop in blocks of 256 threads where only one is parallel; the
reductions stay inside each thread, in order; outer loops that carry a dependence (a time
loop) stay sequential on the host, around the kernels. A statement with no parallel loop is
refused, naming it (the gpu target runs every statement on the device). The mpi target
distributes each statement's outermost parallel loop over the ranks (``distribute``); the
buffers follow (:func:`mpi_data`): each written one is distributed along the dimension
its writer's distributed loop runs along, an input along the dimension its readers' do,
and a distributed statement that reads another's buffer away from its own rows gets the
halo exchange (``me.exchange``, its elements exact, from ISL).
The fpga target pipelines each statement's innermost loop that is not a pixel's few
channels (those, at most :data:`FPGA_UNROLL` iterations, are unrolled inside it, as the
paper's channel-parallel schedule does), at II 1, or at the statement's latency where that
loop carries its accumulation (or, first, with a loop that carries none moved inside it and
pipelined at II 1); or vectorizes it in words of the widest port
(:data:`FPGA_PORT_BITS`: 64 lanes of 8 bits) and pipelines the loop over words; plain
loops are the last resort. Among the legal ones the target's own latency model decides
(:meth:`~middleend.target.base.Target.estimate_cycles`), since that is what an HLS
schedule is judged by.
Candidates are ordered by preference; the search keeps the first the legality check
accepts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..driver.summary import Stmt, Summary
from ..ir import commands as cmd
from ..ir.function import Function
from ..ir.operations import Operation

GPU_TILES = ((16, 16), (8, 32))
GPU_THREADS = 256
FPGA_UNROLL = 8  # innermost loops of at most this many iterations: unrolled in the pipeline
FPGA_PORT_BITS = 512  # the widest memory port (a vectorized loop's word)


def _free_parallel(st: Stmt, shared: Sequence[str]) -> tuple[list[str], list[str]]:
    """The free loops (not shared) that stay sequential outside the mapped ones (a time
    loop: each carries a dependence with the loops outside it fixed), and those after them
    without a reduction that carry none once those are fixed, in the statement's order."""
    ix = {v: k for k, v in enumerate(st.vars)}
    outer = [ix[v] for v in shared]
    seq: list[str] = []
    free = [v for v in st.vars if v not in shared]
    for v in free:
        if v not in st.reductions and st.deps.parallel(outer, ix[v]):
            break
        seq.append(v)
        outer.append(ix[v])
    par = [v for v in free if v not in seq and v not in st.reductions
           and st.deps.parallel(outer, ix[v])]
    return seq, par


def _contiguous_last(st: Stmt, vs: list[str]) -> list[str]:
    """``vs`` with the one the write moves along by one element last (the x loop)."""
    w = next(a for a in st.accesses if a.write)
    ix = {v: k for k, v in enumerate(st.vars)}
    unit = [v for v in vs if abs(w.strides[ix[v]]) == 1.0]
    return [v for v in vs if v not in unit] + unit[:1] + unit[1:]


def _to_front(st: Stmt, shared: Sequence[str], first: list[str]) -> list[cmd.Command]:
    """Interchanges that make ``first`` the outermost free loops, in that order."""
    cur = list(st.vars)
    want = list(shared) + first + [v for v in st.vars if v not in shared and v not in first]
    out: list[cmd.Command] = []
    for k, name in enumerate(want):
        j = cur.index(name)
        if j != k:
            out.append(cmd.Interchange(st.name, cur[k], name))
            cur[k], cur[j] = cur[j], cur[k]
    return out


def _shifts(st: Stmt, shared: Sequence[str]) -> list[cmd.Command]:
    return [cmd.Shift(st.name, v, -lo) for v, lo in zip(st.vars, st.lows, strict=True)
            if v not in shared and lo]


def gpu_candidates(st: Stmt, shared: Sequence[str], ranks: object = None
                   ) -> list[list[cmd.Command]]:
    """Block/thread mappings of ``st``, preferred first."""
    seq, par = _free_parallel(st, shared)
    if not par:
        return []
    outside = [*shared, *seq]
    ext = dict(zip(st.vars, st.extents, strict=True))
    out: list[list[cmd.Command]] = []
    if len(par) >= 2:
        x = _contiguous_last(st, par)[-1]  # coalesced: a warp's x along the contiguous
        y = max((v for v in par if v != x), key=lambda v: (ext[v], par.index(v)))
        for ty, tx in GPU_TILES:
            if ext[y] >= 2 and ext[x] >= 2:
                out.append(_shifts(st, outside) + _to_front(st, outside, [y, x]) + [
                    cmd.TileGpu(st.name, y, x, min(ty, ext[y]), min(tx, ext[x]),
                                f"{y}_b", f"{x}_b", f"{y}_t", f"{x}_t")])
    x = _contiguous_last(st, par)[-1]
    n = min(GPU_THREADS, ext[x])
    out.append(_shifts(st, outside) + _to_front(st, outside, [x]) + [
        cmd.Split(st.name, x, n, f"{x}_b", f"{x}_t"),
        cmd.Gpu(st.name, (f"{x}_b",), (f"{x}_t",))])
    return out


def mpi_candidates(st: Stmt, shared: Sequence[str], ranks: int | str | None = None
                   ) -> list[list[cmd.Command]]:
    """The outermost parallel free loop distributed over the ranks, moved outermost: in
    ``ceil(extent / ranks)`` blocks, one per rank, as the mpi target blocks the buffers
    (``ranks="runtime"``: the loop itself, the target dividing it when it runs)."""
    seq, par = _free_parallel(st, shared)
    if not par or shared or seq:
        return []
    v = par[0]
    head = _shifts(st, shared) + _to_front(st, shared, [v])
    if not isinstance(ranks, int):
        return [head + [cmd.Distribute(st.name, v)]]
    ext = dict(zip(st.vars, st.extents, strict=True))[v]
    block = max(1, -(-ext // max(ranks, 1)))
    return [head + [cmd.Split(st.name, v, block, f"{v}_rank", f"{v}_in"),
                    cmd.Distribute(st.name, f"{v}_rank")]]


def fpga_candidates(st: Stmt, shared: Sequence[str], latency: int
                    ) -> list[list[cmd.Command]]:
    """Pipelines of ``st`` for the fpga target (see the module's docstring); ``latency``:
    the statement's in cycles (the II a loop carrying its accumulation needs)."""
    free = [v for v in st.vars if v not in shared]
    if not free:
        return []
    ext = dict(zip(st.vars, st.extents, strict=True))
    k = len(free)
    while k > 1 and ext[free[k - 1]] <= FPGA_UNROLL and free[k - 1] not in st.reductions:
        k -= 1
    x, small = free[k - 1], free[k:]
    head = _shifts(st, shared)
    if ext[x] <= 1:
        return [head]
    out: list[list[cmd.Command]] = []
    if x in st.reductions and not small:
        # the accumulation outside, a loop without one pipelined inside it at II 1 (a
        # matrix-vector product's rows: each iteration adds into another sum)
        u = next((v for v in reversed(free[:k - 1]) if v not in st.reductions), None)
        if u is not None:
            out.append(head + [cmd.Interchange(st.name, u, x), cmd.Pipeline(st.name, u, 1)])
    lanes = FPGA_PORT_BITS // (8 * max(a.elem_bytes for a in st.accesses))
    if x not in st.reductions and 2 <= lanes <= ext[x]:
        out.append(head + [cmd.Vectorize(st.name, x, lanes, f"{x}_vo", f"{x}_vi"),
                           cmd.Pipeline(st.name, f"{x}_vo", 1)])
    unrolls: list[cmd.Command] = [cmd.Unroll(st.name, v, None, f"{v}_uo", f"{v}_ui")
                                  for v in small]
    for ii in dict.fromkeys([1, max(latency, 1)]):
        out.append(head + unrolls + [cmd.Pipeline(st.name, x, ii)])
    out.append(head)
    return out


def _dim_of(st: Stmt, write: bool, buffer: str, v: str) -> int | None:
    """The buffer dimension the statement's access of ``buffer`` runs along ``v`` by
    exactly one element (and no other dimension moves with ``v``), None otherwise."""
    k = st.vars.index(v)
    for a in st.accesses:
        if a.write != write or a.buffer != buffer:
            continue
        moving = [d for d, row in enumerate(a.spans) if row[k] != 0]
        if len(moving) == 1 and abs(a.spans[moving[0]][k]) == 1:
            return moving[0]
        return None
    return None


def mpi_data(fn: Function, s: Summary, distributed: Mapping[str, str]
             ) -> list[cmd.Command] | None:
    """The data distribution and halo exchanges of the distributed loops
    ``distributed`` (statement -> variable), None where a buffer would be distributed
    along two dimensions (the writers disagree) or not along the loop."""
    by = {st.name: st for st in s.stmts}
    writer: dict[str, str] = {}
    for st in s.stmts:
        for a in st.accesses:
            if a.write:
                writer.setdefault(a.buffer, st.name)
    dims: dict[str, int] = {}
    for n, v in distributed.items():
        st = by[n]
        w = next(a.buffer for a in st.accesses if a.write)
        d = _dim_of(st, True, w, v)
        if d is None or dims.get(w, d) != d:
            return None
        dims[w] = d
    for n, v in distributed.items():
        st = by[n]
        for a in st.accesses:
            if a.write or a.buffer in writer:
                continue
            d = _dim_of(st, False, a.buffer, v)
            if d is not None:
                dims.setdefault(a.buffer, d)
    out: list[cmd.Command] = [cmd.DistributeBuffer(b, d) for b, d in sorted(dims.items())]
    taken = {o.name for o in fn.operations} | {c.name for c in fn.computations} | \
        {b.name for b in fn.buffers}
    for n in distributed:
        st = by[n]
        for b in sorted({a.buffer for a in st.accesses if not a.write}):
            if b not in dims or writer.get(b) in (None, n):
                continue
            d = dims[b]
            offs = {a.offsets[d] for a in st.accesses if a.buffer == b and a.offsets}
            if offs == {0.0} and _dim_of(st, False, b, distributed[n]) == d:
                continue  # reads its own rows only
            name, k = f"exchange_{b}_{n}", 0
            while name in taken:
                k += 1
                name = f"exchange_{b}_{n}_{k}"
            taken.add(name)
            Operation(fn, name, "exchange")
            out.append(cmd.Exchange(n, b, cmd.ROOT, name))
    return out


CANDIDATES = {"gpu": gpu_candidates, "mpi": mpi_candidates}
