"""Packing: an operand that a statement reads across its rows along the loop that should be
its vector loop, copied once into a buffer with its dims permuted, so that the loop reads
the copy contiguously, as a BLAS packs the operands of a GEMM.

``cov[i, j] += data[k, i] * data[k, j]`` and doitgen's ``sum[p] += A[s, q, r] * C4[s, p]``
read both operands along the reduction ``k`` (``s``), the contiguous dim; the C compiler may
not reorder a floating-point sum, so the vector loop must be ``i`` (``p``), along which the
operand lies a whole column apart: a gather per vector, or scalar dot products. A
transposed copy (``copy_at(P, me.ROOT, data, data_t, order=(1, 0))``) makes ``i``
contiguous, for the cost of one pass over the operand; the register tiles of
:mod:`.space` then apply. Whether that pays is the cost model's call: the search ranks the
packed statement's plans, plus the copy, with the others (:func:`copy_cycles`).

Only the reads that move along the vector loop are copied (``along="i"``): ``data[k, j]``,
one value per ``j`` broadcast over the vector, is best read where it lies contiguous along
``k`` (read from the copy, a tile's ``j`` values sit side by side and the compiler loads
them as one vector and permutes it). Each plan whose register tile reads the copy as
``P`` rows is also ranked with the copy in panels of ``P`` (``panel=P``:
``data_p[i // P, k, i % P]``, :func:`panelled`): the tile then reads one contiguous run
along ``k`` where the plain transpose puts each step of ``k`` a row apart. An operand
already contiguous along the vector loop but a page or more apart along the others
(mm2's ``A[i, k]``) is ranked copied in panels in its own order (``order=(0, 1)``,
:attr:`Packing.identity`), for the same single run per tile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..driver.summary import Access, Stmt
from ..ir import commands as cmd
from .cost import BANDWIDTH, PAGE
from .plan import Plan, fresh

STRIDED_COPY = 2.0  # the copy reads along one dim and writes along another: lines twice


@dataclass(frozen=True)
class Packing:
    """A copy of ``buffer`` into ``dst`` whose dim ``q`` is the buffer's ``order[q]``,
    made by the copy operation ``name`` once, before the statement."""

    buffer: str
    order: tuple[int, ...]
    dst: str
    name: str
    along: str  # the loop that reads the copy contiguously
    panel: int = 0  # the copy in panels of this many along ``along`` (0: a plain one)

    @property
    def identity(self) -> bool:
        """The dims kept in order: a copy worth making only in panels."""
        return self.order == tuple(range(len(self.order)))

    def command(self, stmt: str) -> cmd.CopyAt:
        return cmd.CopyAt(stmt, cmd.ROOT, self.buffer, self.dst, self.name, self.order,
                          self.panel, self.along)

    def commands(self, stmt: str) -> list[cmd.Command]:
        """The ``copy_at`` and the copy's own loops (they run over the source's dims in
        order, ``<dst>_0`` outermost): the outermost over the cores; in panels, the loop
        over the panel dim ``<dst>_<d>`` split by ``P`` first, its inner loop innermost,
        so that the copy writes each panel's rows in order, and the panels over the
        cores. Left as it is, the copy divides every index by ``P`` and runs on one core
        (covariance: a fifth of the kernel). ``order`` is the full permutation here (the
        search's packings give one)."""
        out: list[cmd.Command] = [self.command(stmt)]
        if not self.panel:
            return [*out, cmd.Parallelize(self.name, f"{self.dst}_0")]
        d, ndim = self.order[-1], len(self.order)
        loop = f"{self.dst}_{d}"
        outer, inner = f"{loop}_o", f"{loop}_i"
        out.append(cmd.Split(self.name, loop, self.panel, outer, inner))
        out += [cmd.Interchange(self.name, inner, f"{self.dst}_{q}")
                for q in range(d + 1, ndim)]
        out.append(cmd.Parallelize(self.name, outer if d == 0 else f"{self.dst}_0"))
        return out

    def describe(self) -> str:
        panels = f", in panels of {self.panel}" if self.panel else ""
        return (f"reads {self.buffer} through a copy with its dims in the order "
                f"{self.order}{panels} ({self.dst}: contiguous along {self.along})")


def of_command(c: cmd.CopyAt) -> Packing:
    """The packing a ``copy_at`` at the root records (a chosen block's, when tuning)."""
    return Packing(c.src, c.order, c.dst, c.name, c.along, c.panel)


def panelled(p: Packing, plan: Plan, st: Stmt) -> Packing | None:
    """``p`` in panels of the rows ``plan``'s register tile reads as vectors: the inner
    tile of ``p.along`` where that is the tile's contiguous or vector loop. Each step of
    the reduction inside the tile then reads the next ``P`` elements of one panel, where
    the plain copy puts the steps a row apart (a line and a page each: the prefetchers
    see as many streams as the tile's rows are long). On a domain that is not a box
    (covariance's triangle, ``j >= i``) only where the plan blocks its columns as wide as
    the panels (:func:`.space._aligned`): tiles the diagonal cuts elsewhere have rows
    the C printer cannot place in one panel, a division per element there, which the
    model does not count (covariance: 1.52 against 1.22x numpy's time with the plain
    copy; aligned, 1.00x)."""
    rows = plan.tile_of(p.along)
    if not st.box and (plan.block is None or plan.block[1] != rows
                       or plan.block[0] != plan.unroll):
        return None
    if rows is None or rows < 2 or p.along not in (plan.contiguous, plan.vector):
        return None
    return dataclasses.replace(p, panel=rows)


def packings(st: Stmt, shared: Sequence[str], taken: set[str]) -> list[Packing]:
    """The copies that would make a loop of ``st`` without a reduction contiguous for
    every access (the vector loop of a register tile): of a buffer ``st`` only reads,
    indexed along that loop in one dim that is not its last. ``taken``: the names in use
    (the copies' names are added to it)."""
    written = {a.buffer for a in st.accesses if a.write}
    out: list[Packing] = []
    for v in st.vars:
        if v in shared or v in st.reductions:
            continue
        k = st.vars.index(v)
        for a in st.accesses:
            if a.write or a.buffer in written or len(a.spans) < 2:
                continue
            moving = [d for d, row in enumerate(a.spans) if row[k] != 0]
            if len(moving) != 1 or abs(a.spans[moving[0]][k]) != 1.0:
                continue
            d = moving[0]
            if d == len(a.spans) - 1:
                # contiguous along v already: only worth copying in panels (identity
                # order), where the other dims step a page or more apart (mm2's A[i,
                # k] read 24 rows at a time: each k a page away, 1100 runs per tile)
                if math.prod(a.dim_sizes[1:]) * a.elem_bytes < PAGE:
                    continue
                order = tuple(range(len(a.spans)))
            else:
                order = tuple(q for q in range(len(a.spans)) if q != d) + (d,)
            if any(p.buffer == a.buffer and p.order == order for p in out):
                continue
            trial = Packing(a.buffer, order, "", "", v)
            if not _contiguous_after(relayout(st, trial), k):
                continue
            dst = fresh(f"{a.buffer}_p", taken)
            out.append(Packing(a.buffer, order, dst, fresh(f"copy_{dst}", taken), v))
    return out


def _contiguous_after(st: Stmt, k: int) -> bool:
    strides = [abs(a.strides[k]) for a in st.accesses]
    return all(s in (0.0, 1.0) for s in strides) and 1.0 in strides


def _relaid(a: Access, p: Packing) -> Access:
    """``a`` in the copy's layout. In panels of ``P``, the panel's dim first (its spans
    0: the cost model counts the panels from the last dim's) and the last dim ``P``
    long; a loop along it moves by one element inside a panel (and so, the model's
    approximation, does its tile loop, which in fact steps from panel to panel)."""
    spans = tuple(a.spans[q] for q in p.order)
    sizes = tuple(a.dim_sizes[q] for q in p.order)
    offsets = tuple(a.offsets[q] for q in p.order) if a.offsets else a.offsets
    if p.panel:
        spans = (tuple(0.0 for _ in spans[-1]), *spans)
        sizes = (math.ceil(sizes[-1] / p.panel), *sizes[:-1], p.panel)
        offsets = (0.0, *offsets) if offsets else offsets
    step = [math.prod(sizes[q + 1:]) for q in range(len(sizes))]
    strides = tuple(float(sum(spans[q][k] * step[q] for q in range(len(sizes))))
                    for k in range(len(a.strides)))
    return dataclasses.replace(a, buffer=p.dst or f"{a.buffer}'", strides=strides,
                               spans=spans, dim_sizes=sizes, offsets=offsets,
                               panel=p.panel)


def relayout(st: Stmt, p: Packing) -> Stmt:
    """``st`` as it reads after the copy: the buffer's reads that move along ``p.along``
    (all of them without one) in the copy's layout; the others read the buffer."""
    k = st.vars.index(p.along) if p.along in st.vars else None

    def copied(a: Access) -> bool:
        return a.buffer == p.buffer and not a.write and (
            k is None or any(row[k] != 0 for row in a.spans))

    return dataclasses.replace(st, accesses=tuple(
        _relaid(a, p) if copied(a) else a for a in st.accesses))


def copy_cycles(st: Stmt, p: Packing) -> float:
    """The copy's estimated cycles: one element per cycle, and the buffer's lines read and
    written from memory, twice over (it reads along one dim and writes along another)."""
    a = next(x for x in st.accesses if x.buffer == p.buffer)
    elems = math.prod(a.dim_sizes)
    moved = 2.0 * elems * a.elem_bytes * STRIDED_COPY
    return elems + moved / BANDWIDTH[4]
