"""The analytical cost model: cycles of one statement's loop nest, from its footprints.

In the manner of Stripe (``../shared/seeds/001_...``) and of the classic reuse analyses: for
each loop level, the cache lines each access touches inside it (a box per buffer dimension
from the access's affine strides, the summary's numbers from ISL); the outermost level
whose lines fit a cache is where that cache stops missing, and every iteration of the
loops above it brings those lines in again. The compute side counts the value operations
and the loads and stores that stay in the loop after what a register block hoists (an
access that does not move along an unrolled or vector loop is loaded once for all of its
iterations), divided by the vector lanes where the innermost loop runs in vectors, and
bounded below by the latency of an addition chain where that loop carries a reduction.
Misses below L2 cost more where the runs are short (the prefetchers have nothing to follow),
and so do L2's where each short run is a page or more from the last (its prefetcher stops at
a page; each run is a TLB lookup). The estimate is the larger of the two (a roofline), over
the cores for a parallel loop, plus the cost of starting the parallel loop as often as the
loops above it run.

It ranks candidates; it does not predict times to better than a factor. What decides
between close candidates is measurement (:mod:`.tune`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..driver.summary import Access, Stmt
from ..target.base import FRESH_BYTES, Machine
from .plan import Loop

LINE = 64  # bytes per cache line
ADD_LATENCY = 4.0  # cycles of a floating-point addition (a reduction chain's step)
FORK_CYCLES = 20000.0  # starting and joining a parallel loop (the pool: a few µs)
# bytes per cycle and core that each level delivers to the one above it
BANDWIDTH = {2: 32.0, 3: 16.0, 4: 6.0}
PAGE = 4096  # bytes of a page: L2's prefetcher does not cross one
# bytes of a contiguous run from which misses stream at full bandwidth: a prefetcher spends
# the first lines of a run learning it. At 1024, mm2's columns of B read 128 k at a time
# (1 KB runs, 6 new streams per register tile) looked as good as 8.8 KB runs, and its
# plan ran 1.5x its expert schedule's time (55 ms; with the 8 KB runs of whole-k panels,
# 38 ms, AVX2 Zen 3); at 4096 the Halide stencils' 1 KB rows of x blocks cost too much
# (stencil_chain 1.12x, interpolate 1.07x slower, A/B in one process)
STREAM_RUN = 2048.0
# iterations of a loop whose accesses are each a stream of its own, continued by the loop
# outside it (a vector strip's channels: ``x_o, c, x_i``): the prefetchers follow that
# many streams at once
STREAMS = 4
OVERLAP = 0.25  # the share of the lesser of compute and memory time that does not overlap
# vectors of an innermost loop that stay in registers across the loops outside it (a register
# tile's rows); a longer one is reloaded from L1 each time
REGISTER_RUN = 4
# instructions per vector of a read moving by 2 elements per lane (a 2x downsampling's
# ``in[2 x + c]``): two dense loads and a shuffle (backends/cpu/deinterleave.py; gcc's own
# form where that does not apply)
STRIDE2_OPS = 3.0
# instructions per vector of a float read at half the rate of a vector loop (a 2x
# upsampling's ``in[x / 2]``): a dense load and a shuffle (backends/cpu/upsample.py)
UPSAMPLE_OPS = 2.0
LIBM_CYCLES = 20.0  # a math library call (summary.LIBM) per value: scalar in every loop


def vector_ops(a: Access, k: int) -> float | None:
    """Instructions per vector of ``a`` in the loop along statement dim ``k``: 1 for a
    contiguous or fixed one, :data:`STRIDE2_OPS` for a read by 2 (the even or odd lanes
    of two vectors), :data:`UPSAMPLE_OPS` for a float read by half an element (an
    upsampling's ``in[x / 2]``: each lane's value twice), None where the loop cannot run
    in vectors (a gather, a strided store, an index through another floor division of
    the loop's counter: ``in[2 (x / 2)]`` moves by 1 on average, but by 0 and 2 in turn,
    and gcc leaves such a loop scalar)."""
    s = abs(a.strides[k])
    if k in a.uneven:
        return UPSAMPLE_OPS if s == 0.5 and not a.write and a.floating else None
    if s in (0.0, 1.0):
        return 1.0
    if s == 2.0 and not a.write:
        return STRIDE2_OPS
    return None


def vectorizable(accesses: Sequence[Access], k: int) -> bool:
    """Whether a loop along statement dim ``k`` can run in vectors by its accesses: each
    one contiguous, fixed or a read by 2 (:func:`vector_ops`), and a store or load moving
    by one element."""
    return all(vector_ops(a, k) is not None for a in accesses) \
        and any(abs(a.strides[k]) == 1.0 for a in accesses)


@dataclass(frozen=True)
class MachineModel:
    """What the model knows of the machine: vector bytes, vector registers, the data caches
    (bytes, L1 and L2 per core, L3 shared), cores."""

    vector_bytes: int
    registers: int
    caches: tuple[int, int, int]
    cores: int

    @staticmethod
    def of(machine: Machine | None, cores: int | None = None) -> MachineModel:
        """From a target's :class:`Machine` (None: a plain 16-register SSE machine with
        typical caches)."""
        vb = (machine.vector_bytes(True, 4) if machine else None) or 16
        regs = (machine.vector_registers() if machine else None) or 16
        sizes = []
        for lv, dflt in ((1, 32 << 10), (2, 1 << 20), (3, 8 << 20)):
            got = machine.cache_bytes(lv) if machine else None
            sizes.append(got or dflt)
        if cores is None:
            env = os.environ.get("MIDDLEEND_NUM_THREADS", "")
            cores = int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)
        return MachineModel(vb, regs, (sizes[0], sizes[1], sizes[2]), cores)

    def lanes(self, elem_bytes: int) -> int:
        return max(1, self.vector_bytes // max(1, elem_bytes))


def step(a: Access, lp: Loop, index: dict[str, int]) -> float:
    """How far ``a`` moves per iteration of ``lp``: its stride along the loop's variable,
    except that an index ``fld(v, c)`` (a coefficient ``1 / c`` in its dimension) stays
    put inside an aligned block of ``v`` whose size divides ``c``."""
    k = index[lp.var]
    s = a.strides[k]
    if s and lp.within and all(_in_block(row[k], lp.within) for row in a.spans):
        return 0.0
    w = a.wrap(k) if not s and lp.part == "inner" else None
    if w is not None and w[0] % lp.trip == 0:
        return w[1]  # ``mod(v, c)`` inside an aligned tile of v that divides c: it moves
    return s


def carries(stmt: Stmt, lp: Loop) -> bool:
    """Whether ``lp`` carries one of ``stmt``'s sums: a reduction variable's loop, except
    a tile inside the period of a stored element that cycles (``yq[mod(i, 8), j]``'s
    8-wide tile of ``i``: 8 different sums)."""
    if lp.var not in stmt.reductions:
        return False
    c = stmt.period(lp.var)
    return not (c and lp.part == "inner" and c % lp.trip == 0)


def _in_block(coef: float, size: int) -> bool:
    """Whether an index of coefficient ``coef`` (0, or ``1 / c``) is constant within
    aligned blocks of ``size``."""
    if coef == 0:
        return True
    c = round(1.0 / abs(coef))
    return abs(coef) < 1 and abs(c * abs(coef) - 1.0) < 1e-9 and c % size == 0


def _ranges(stmt_vars: Sequence[str], nest: Sequence[Loop]) -> list[list[int]]:
    """``out[l][k]``: how many values variable ``k`` takes inside loops ``l..`` (and
    ``out[len(nest)]``, inside every loop: one each)."""
    index = {v: k for k, v in enumerate(stmt_vars)}
    out = [[1] * len(stmt_vars) for _ in range(len(nest) + 1)]
    for lvl in range(len(nest) - 1, -1, -1):
        row = list(out[lvl + 1])
        lp = nest[lvl]
        k = index[lp.var]
        row[k] = row[k] * lp.trip
        out[lvl] = row
    return out


def _lines(a: Access, ranges: Sequence[int]) -> float:
    """Cache lines ``a`` touches while the variables take ``ranges`` values each."""
    n = len(a.dim_sizes)
    if n == 0:
        return 1.0
    spans = []
    for d in range(n):
        s = 1.0 + sum(abs(c) * (r - 1) for c, r in zip(a.spans[d], ranges, strict=True))
        spans.append(min(s, float(a.dim_sizes[d])))
    if a.panel:  # the panels the last dim's values cross (aligned: ceil(values / P))
        s = 1.0 + sum(abs(c) * (r - 1) for c, r in zip(a.spans[-1], ranges, strict=True))
        spans[0] = min(float(math.ceil(s / a.panel)), float(a.dim_sizes[0]))
        if n > 2 and spans[-1] >= a.panel:  # whole panel rows: one run along the next dim
            spans[-2:] = [spans[-2] * spans[-1]]
    last = spans[-1] * a.elem_bytes
    lines = math.ceil(last / LINE) + (1.0 if last > LINE else 0.0)
    for s in spans[:-1]:
        lines *= s
    total = math.ceil(math.prod(a.dim_sizes) * a.elem_bytes / LINE)
    return min(lines, float(total))


def _groups(stmt: Stmt) -> list[Access]:
    """One access per buffer and shape of reach: reads of ``A[i-1]``, ``A[i]`` and
    ``A[i+1]`` touch the same lines, and so do a write and the read of its own element."""
    seen: dict[tuple[str, tuple[tuple[float, ...], ...]], Access] = {}
    for a in stmt.accesses:
        seen.setdefault((a.buffer, a.spans), a)
    return list(seen.values())


def _stream_factor(a: Access, nest: Sequence[Loop], stmt_vars: Sequence[str],
                   paged: bool = False) -> float:
    """How much slower than streaming a miss of ``a`` is: its innermost loop (the first
    one it moves along) reads a run of contiguous bytes; a short run (a column of a
    row-major array, 64 bytes per row) leaves the prefetchers nothing to follow, and every
    line costs a latency, not a share of bandwidth. ``paged``: only where the next run
    starts a page or more away (from L2: its prefetcher follows a stream within a page,
    and each run is a TLB lookup of its own; 1.0 otherwise)."""
    index = {v: k for k, v in enumerate(stmt_vars)}
    run = float(a.elem_bytes)
    elems = 1.0  # the elements of the contiguous run so far
    tile = {lp.var: lp.trip for lp in nest if lp.part == "inner"}
    for lp in reversed(nest):
        s = abs(step(a, lp, index))
        if lp.tag == "unroll" and lp.trip <= 16:
            continue  # an unrolled loop's copies are streams of their own
        if s != 0 and lp.trip <= STREAMS and elems > 1:
            continue  # so are a short loop's (channels inside a vector strip)
        if s == 0:
            if elems > 1:
                break  # the run pauses for a whole loop: a stream the prefetcher loses
            continue
        if lp.part == "outer":
            s *= tile.get(lp.var, 1)  # a tile loop steps by its tile
        if s != elems:
            if paged and s * a.elem_bytes < PAGE:
                return 1.0
            break
        # a loop stepping by the run's length right outside it (or outside unrolled
        # copies) continues it: a tile of 8 rows, then the tile loop over the next 8
        elems *= lp.trip
        run = a.elem_bytes * elems
    return 1.0 + 3.0 * max(0.0, 1.0 - run / STREAM_RUN)


def cost(stmt: Stmt, nest: Sequence[Loop], m: MachineModel,
         resident: frozenset[str] = frozenset()) -> float:
    """Estimated cycles of ``stmt`` run as ``nest``; the buffers in ``resident`` are
    read from L1 (a producer computed per tile, just before)."""
    return joint_cost((stmt,), nest, m, resident)


def joint_cost(stmts: Sequence[Stmt], nest: Sequence[Loop], m: MachineModel,
               resident: frozenset[str] = frozenset()) -> float:
    """Estimated cycles of ``stmts`` (the same variables) run in one loop nest, ``nest``,
    each iteration running them all: the work of each, the cache lines of their accesses
    together, so that an operand two of them read alike (bicg's ``A[i, j]``) moves once."""
    stmt = stmts[0]
    ranges = _ranges(stmt.vars, nest)
    seen: dict[tuple[str, tuple[tuple[float, ...], ...]], Access] = {}
    for s in stmts:
        for g in _groups(s):
            seen.setdefault((g.buffer, g.spans), g)
    groups = [g for g in seen.values() if g.buffer not in resident]
    depth = len(nest)
    trips_above = [1.0] * (depth + 1)
    for lvl in range(1, depth + 1):
        trips_above[lvl] = trips_above[lvl - 1] * nest[lvl - 1].trip
    lines = [[_lines(g, ranges[lvl]) for lvl in range(depth + 1)] for g in groups]
    mem = 0.0
    for level, cap in zip((2, 3, 4), m.caches, strict=True):
        fit = depth
        for lvl in range(depth, -1, -1):
            if sum(ln[lvl] for ln in lines) * LINE <= 0.7 * cap:
                fit = lvl
            else:
                break
        for g, ln in zip(groups, lines, strict=True):
            slow = _stream_factor(g, nest, stmt.vars, paged=level == 2)
            mem += _moved(ln, trips_above, fit) * LINE / BANDWIDTH[level] * slow
    compute = sum(s.points * _per_point(s, nest, m) for s in stmts)
    par = next((k for k, lp in enumerate(nest) if lp.tag == "parallel"), None)
    if par is None:
        return _roof(compute, mem)
    spread = speedup(nest[par].trip, m)
    return _roof(compute / spread, mem / min(spread, 1.6)) + FORK_CYCLES * trips_above[par]


def _roof(compute: float, mem: float) -> float:
    """The roofline, with the lesser side showing through in part (loads wait on misses,
    misses on the loads' issue): of two nests that move the same lines, the one with
    less work in its loop body wins."""
    return max(compute, mem) + OVERLAP * min(compute, mem)


def _moved(lines: Sequence[float], trips_above: Sequence[float], fit: int) -> float:
    """Lines an access brings into a cache whose capacity holds what one iteration of
    the loop at ``fit`` touches: each iteration's lines, except those the previous
    iteration of the loop outside brought already (a window sliding along a column:
    a line of 8 doubles serves 8 consecutive rows), i.e. the lines of one iteration of
    that loop outside, as often as the loops above it run."""
    here = lines[fit] * trips_above[fit]
    if fit == 0:
        return here
    return min(here, lines[fit - 1] * trips_above[fit - 1])


def speedup(trip: int, m: MachineModel) -> float:
    """What a parallel loop of ``trip`` iterations gains on the machine's cores (its
    busiest core runs ``ceil(trip / cores)`` of them)."""
    ways = min(m.cores, trip)
    rounds = -(-trip // m.cores)
    return ((ways - 1) * 0.9 + 1) * trip / (rounds * ways)


def first_touch(stmt: Stmt, m: MachineModel) -> float:
    """Cycles the operating system spends zeroing the pages of the buffer ``stmt`` writes,
    where the kernel allocates it at every call as fresh memory (:data:`FRESH_BYTES` or
    more): one more pass over its bytes at memory bandwidth, in the loop that first
    writes it (over the cores as its misses are). A producer materialized at the root
    pays it; computed per tile or inlined, it does not (the local Laplacian's 59 MB
    Laplacian level: 34 ms at the root against 26 inlined, where the model without this
    had root ahead)."""
    w = next((a for a in stmt.accesses if a.write), None)
    if w is None:
        return 0.0
    size = math.prod(w.dim_sizes) * w.elem_bytes
    if size < FRESH_BYTES:
        return 0.0
    return size / BANDWIDTH[4] / min(float(m.cores), 1.6)


def compute_cycles(stmt: Stmt, nest: Sequence[Loop], m: MachineModel) -> float:
    """The compute side alone of :func:`cost`, on one core (a producer computed per tile
    of its reader: its data never leaves the cache)."""
    return stmt.points * _per_point(stmt, nest, m)


def _jammed(stmt: Stmt, vl: Loop, index: dict[str, int]) -> bool:
    """Whether the C compiler vectorizes ``vl``, the loop around an unrolled innermost
    one: no sum along it, every access contiguous or fixed along it."""
    steps = [abs(step(a, vl, index)) for a in stmt.accesses]
    return vl.var not in stmt.reductions and all(x in (0.0, 1.0) for x in steps) \
        and 1.0 in steps


def _jam_per_point(stmt: Stmt, u: Loop, vl: Loop, index: dict[str, int],
                   m: MachineModel) -> float:
    """Unroll-and-jam: ``vl`` in vectors, the unrolled copies in its body; an access that
    does not move along ``vl`` is hoisted out of it, one that does not move along ``u`` is
    loaded and stored once for all the copies, and reads of a buffer that one copy makes
    at the element another copy reads too are loaded once (a stencil's rows ``y + dy``
    over 4 unrolled rows: 4 + 2 row loads for 3 taps, not 12; gcc finds the addresses
    equal)."""
    elem = max((a.elem_bytes for a in stmt.accesses if a.write), default=4)
    lanes = m.lanes(elem)
    mem_ops = 0.0
    rows: dict[tuple[str, tuple[float, ...]], set[float]] = {}
    for a in stmt.accesses:
        su = step(a, u, index)
        if step(a, vl, index) == 0:
            mem_ops += 1.0 / vl.trip
        elif su == 0:
            mem_ops += 1.0 / u.trip
        elif a.write or not a.offsets:
            mem_ops += 1.0
        else:  # the elements the copies read, counted once each below
            at = _linear_offset(a)
            rows.setdefault((a.buffer, a.strides), set()).update(
                at + su * k for k in range(u.trip))
    mem_ops += sum(len(r) for r in rows.values()) / u.trip
    per = (stmt.ops - stmt.calls + mem_ops) / lanes
    return per * math.ceil(vl.trip / lanes) * lanes / vl.trip + stmt.calls * LIBM_CYCLES


def _linear_offset(a: Access) -> float:
    """The element ``a`` reads at the origin, as a row-major offset in its buffer."""
    at, stride = 0.0, 1.0
    for off, size in zip(reversed(a.offsets), reversed(a.dim_sizes), strict=False):
        at += off * stride
        stride *= size
    return at


def _per_point(stmt: Stmt, nest: Sequence[Loop], m: MachineModel) -> float:
    """Cycles per instance: value operations plus the loads and stores left in the
    register block, over the vector lanes, at least a reduction chain's latency."""
    if not nest:
        return float(stmt.ops - stmt.calls + len(stmt.accesses)) + stmt.calls * LIBM_CYCLES
    index = {v: k for k, v in enumerate(stmt.vars)}
    inner = nest[-1]
    if len(nest) >= 2 and inner.tag == "unroll" and _jammed(stmt, nest[-2], index):
        return _jam_per_point(stmt, inner, nest[-2], index, m)
    # the register block: the innermost loops of constant, small trip (vector, unrolled or
    # a plain tile loop), and the loop just outside them
    block: list[Loop] = []
    for lp in reversed(nest):
        block.append(lp)
        if not (lp.part == "inner" and lp.trip <= 64) and lp.tag != "vector":
            break
    elem = max((a.elem_bytes for a in stmt.accesses if a.write), default=4)
    lanes = m.lanes(elem)
    k_in = index[inner.var]
    vectorized = inner.tag == "vector" or (
        inner.part == "inner" and inner.trip % lanes == 0 and inner.tag is None
        and any(lp.tag == "unroll" for lp in block))
    if vectorized and any(vector_ops(a, k_in) is None for a in stmt.accesses):
        vectorized = False  # a gather or a strided store: lane by lane
    if vectorized and carries(stmt, inner):
        vectorized = False  # an ordered sum cannot run in lanes
    mem_ops = 0.0
    broadcasts = 0.0  # loads of one value for every lane: one instruction per value
    for a in stmt.accesses:
        share = 1.0
        for lp in block:
            if step(a, lp, index) == 0:
                share /= lp.trip
            elif lp is inner and inner.trip <= REGISTER_RUN * lanes:
                continue  # a few vectors: held in registers across the loops outside
            elif lp.tag == "unroll" and lp is not inner:
                continue  # one register per unrolled copy (a register tile's columns)
            else:
                break
        if vectorized and not a.write and step(a, inner, index) == 0:
            broadcasts += share
        else:
            mem_ops += share * ((vector_ops(a, k_in) or 1.0) if vectorized
                                else 1.0)
    per = stmt.ops - stmt.calls + mem_ops
    if vectorized:
        per /= lanes
        per *= math.ceil(inner.trip / lanes) * lanes / inner.trip
    per += broadcasts + stmt.calls * LIBM_CYCLES
    if carries(stmt, inner) or (block and carries(stmt, block[-1])):
        chains = 1.0
        for lp in block[:-1]:
            if not carries(stmt, lp):
                chains *= lp.trip
        if carries(stmt, inner):
            chains = 1.0
        per = max(per, ADD_LATENCY / chains)
    accumulators = 1.0
    for lp in block[:-1]:
        accumulators *= lp.trip
    # the sums a reduction keeps across the block's loops no longer fit the registers:
    # spilled (a statement without one stores each result as it goes and holds nothing)
    if vectorized and accumulators / lanes > m.registers - 4 and \
            any(lp.var in stmt.reductions for lp in block):
        per *= 2.0
    return per
