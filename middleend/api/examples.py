"""Programs of the papers, defined once for the demo, the benchmarks and the tests.

Each builder returns the Function and the computations a caller schedules; the schedules
here are the tuned ones the demo and benchmarks use (tests try many others).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.commands import ROOT
from ..ir.errors import DefinitionError
from ..ir.expr import minimum
from ..ir.function import OUTPUT, Buffer, Computation, Input, Param, Var
from ..ir.operations import copy_at
from ..ir.types import float32
from .function import Function


@dataclass
class Blur:
    """The papers' blurxy: ``bx`` blurs along j, ``by`` along i (3 colour channels)."""

    fn: Function
    bx: Computation
    by: Computation


def blur(shape: tuple[int, int] | None = None) -> Blur:
    """Layer I of blurxy; sizes are Params N, M, or the constants ``shape``."""
    with Function("blur") as f:
        n, m = (Param("N"), Param("M")) if shape is None else shape
        i, j, c = Var("i", 0, n - 2), Var("j", 0, m - 2), Var("c", 0, 3)
        ii = Var("i", 0, n)  # by reads bx at rows i+1 and i+2: bx covers every row
        inp = Input("inp", [n, m, 3], float32)
        bx = Computation("bx", [ii, j, c],
                         (inp[ii, j, c] + inp[ii, j + 1, c] + inp[ii, j + 2, c]) / 3)
        by = Computation("by", [i, j, c],
                         (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
    return Blur(f, bx, by)


def schedule_blur(b: Blur, c_inner: bool = True, ti: int = 32, tj: int = 256, vf: int = 8,
                  level: str = "i0") -> Blur:
    """Tiles of ``by`` (ti x tj); ``bx`` computed per tile row at ``level`` into a private
    buffer so that ``i0`` runs in parallel; j vectorized by ``vf``, the 3 channels innermost
    (contiguous [j][c] elements) or, with ``c_inner=False``, outermost in the tile."""
    bx, by = b.bx, b.by
    by.tile("i", "j", ti, tj, "i0", "j0", "i1", "j1")
    if not c_inner:
        by.interchange("j1", "c")
        bx.interchange("j", "c")
    by.vectorize("j1", vf)
    bx.vectorize("j", vf)
    bx.compute_at(by, level)
    bx.allocate_at(by, level)
    by.parallelize("i0")
    return b


@dataclass
class Heat:
    """Heat-2D over T time steps, double-buffered: the cyclic dataflow Halide cannot
    express. ``init`` fills both halves of ``buf``; ``h`` writes step t into ``buf[t % 2]``."""

    fn: Function
    init: Computation
    h: Computation


def heat2d(name: str = "heat") -> Heat:
    """Layer I of heat-2D (5-point stencil, 0.2 weights; the border keeps its input)."""
    with Function(name) as f:
        T, N, M = Param("T"), Param("N"), Param("M")
        s, ii, jj = Var("s", 0, 2), Var("i", 0, N), Var("j", 0, M)
        t, i, j = Var("t", 1, T + 1), Var("i", 1, N - 1), Var("j", 1, M - 1)
        inp = Input("inp", [N, M], float32)
        buf = Buffer("buf", [2, N, M], float32, kind=OUTPUT)
        init = Computation("init", [s, ii, jj], inp[ii, jj])
        init.store_in(buf, [s, ii, jj])
        h = Computation("h", [t, i, j], dtype=float32)
        h.set_expression(0.2 * (h[t - 1, i, j] + h[t - 1, i - 1, j] + h[t - 1, i + 1, j]
                                + h[t - 1, i, j - 1] + h[t - 1, i, j + 1]))
        h.store_in(buf, [t % 2, i, j])
    return Heat(f, init, h)


@dataclass
class MatMul:
    """The papers' matrix product: ``C`` (0) then the update chain ``c1`` stored in C."""

    fn: Function
    init: Computation
    update: Computation


def matmul(name: str = "matmul", n: int | None = None) -> MatMul:
    """Layer I of C = A @ B: ``n`` None gives Params (A is N x K, B is K x M), else square
    constant sizes."""
    with Function(name) as f:
        if n is None:
            rows, inner, cols = Param("N"), Param("K"), Param("M")
        else:
            rows = inner = cols = n
        i, j, k = Var("i", 0, rows), Var("j", 0, cols), Var("k", 0, inner)
        a = Input("A", [rows, inner], float32)
        b = Input("B", [inner, cols], float32)
        init = Computation("C", [i, j], 0.0)
        upd = Computation("c1", [i, j, k], dtype=float32)
        upd.set_expression(upd[i, j, k - 1] + a[i, k] * b[k, j])
        upd.store_in(init, [i, j])
    return MatMul(f, init, upd)


def _positive_tiles(name: str, **sizes: int) -> None:
    """Tile sizes are positive ints: a 0 would divide by zero in the buffer shapes."""
    for what, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise DefinitionError(f"{name}: {what} must be a positive int, got {v!r}")


def _blas_schedule(acc: Computation, upd: Computation, c: Computation, tj: int, mr: int,
                   nr: int) -> None:
    """The loops of a BLAS micro-kernel: j0 (parallel column panels of ``tj``) / i_uo /
    j1_vo / k / i_ui (unrolled ``mr``) / j1_vi (vector ``nr``), with ``acc`` an ``mr x nr``
    accumulator tile per micro-tile (a stack array gcc keeps in registers)."""
    for x in (acc, upd, c):
        x.split("j", tj, "j0", "j1")
        x.interchange("i", "j0")  # j0 i j1 [k]
        x.unroll("i", mr)
        x.vectorize("j1", nr)
        x.interchange("i_ui", "j1_vo")  # j0 i_uo j1_vo i_ui j1_vi [k]
        x.parallelize("j0")
    upd.interchange("i_ui", "k")  # j0 i_uo j1_vo k j1_vi i_ui
    upd.interchange("j1_vi", "i_ui")  # j0 i_uo j1_vo k i_ui j1_vi
    upd.after(acc, "j1_vo")
    c.after(upd, "j1_vo")
    acc.allocate_at(c, "j1_vo")


def _sgemm(name: str, n: int | None, helper: bool, pack_a: bool = False
           ) -> tuple[Function, Computation, Computation, Computation]:
    """C = A @ B through an accumulator (``acc``, then ``upd`` in acc, then ``C``); with
    ``helper``, ``upd`` reads B through a Layer I copy ``Bp``, and with ``pack_a`` reads A
    through ``Ap``, a copy stored transposed (``Ap[i, k]`` at ``ApB[k, i]``) in a buffer
    of its own."""
    with Function(name) as f:
        size = Param("N") if n is None else n
        i, j, k = Var("i", 0, size), Var("j", 0, size), Var("k", 0, size)
        a = Input("A", [size, size], float32)
        b = Input("B", [size, size], float32)
        kk, jj = Var("kk", 0, size), Var("jj", 0, size)
        bp = Computation("Bp", [kk, jj], b[kk, jj]) if helper else None
        ap = None
        if pack_a:
            ia, ka = Var("ia", 0, size), Var("ka", 0, size)
            ap = Computation("Ap", [ia, ka], a[ia, ka])
            ap.store_in(Buffer("ApB", [size, size], float32), [ka, ia])
        acc = Computation("acc", [i, j], 0.0)
        upd = Computation("upd", [i, j, k], dtype=float32)
        upd.set_expression(upd[i, j, k - 1] + (ap if ap is not None else a)[i, k]
                           * (bp if bp is not None else b)[k, j])
        upd.store_in(acc, [i, j])
        c = Computation("C", [i, j], upd[i, j, size - 1])
    return f, acc, upd, c


def sgemm_packed(n: int | None = None, tj: int = 64, mr: int = 6, nr: int = 16,
                 pack_a: bool = False) -> Function:
    """C = A @ B the way a BLAS does it, in the scheduling language: ``Bp`` a copy of B
    packed per column panel, written as a Layer I helper computation (``compute_at`` +
    ``allocate_at`` at the parallel ``j0``), and the micro-kernel of
    :func:`_blas_schedule`. ``n`` None gives a Param N.

    With ``pack_a``, the ``mr`` rows of A a micro-tile row reads are also copied at
    ``i_uo`` into ``ApB``, an ``N x mr`` buffer in k-major order (``store_in`` with swapped
    indices, ``allocate_at``), as a BLAS packs A: the micro-kernel then reads A
    contiguously, where the ``mr`` rows of A itself lie ``4N`` bytes apart. It is not the
    default: repacked for every ``tj``-column panel, the copy costs ``N^3 / tj`` strided
    moves, more than it saves at ``tj = 64`` in ``benchmarks/sgemm.py`` (its ``A packed``
    row); a BLAS packs A once per cache block of A and reuses it for every panel.
    """
    _positive_tiles("sgemm_packed", tj=tj, mr=mr, nr=nr)
    f, acc, upd, c = _sgemm("sgemm_packed", n, helper=True, pack_a=pack_a)
    _blas_schedule(acc, upd, c, tj, mr, nr)
    bp = f.computation("Bp")
    bp.vectorize("jj", nr)
    bp.compute_at(upd, "j0")
    bp.allocate_at(upd, "j0")
    if pack_a:
        ap = f.computation("Ap")
        ap.compute_at(upd, "i_uo")
        ap.allocate_at(upd, "i_uo")
    return f


def sgemm_packed_a(n: int | None = None, tj: int = 16, mr: int = 6, nr: int = 16
                   ) -> Function:
    """:func:`sgemm_packed` with A packed too, once, before the panels: ``Ap`` copies A
    into ``mr``-row micro-panels (``store_in(ApP, [i // mr, k, i % mr])``, a root loop
    nest parallel over the micro-panels), so that the micro-kernel reads one contiguous
    stream of A (``mr`` values per k) beside the packed panel of B, where
    :func:`sgemm_packed` reads ``mr`` rows of A ``4N`` bytes apart (``mr`` streams,
    all in one L1 set when ``4N`` is a multiple of 4 KB). The copy is one pass over A
    (``N^2`` moves against ``2 N^3`` flops); the printer works the ``//`` and ``%`` out
    from the loops, so neither side divides."""
    _positive_tiles("sgemm_packed_a", tj=tj, mr=mr, nr=nr)
    with Function("sgemm_packed_a") as f:
        size = Param("N") if n is None else n
        i, j, k = Var("i", 0, size), Var("j", 0, size), Var("k", 0, size)
        a = Input("A", [size, size], float32)
        b = Input("B", [size, size], float32)
        kk, jj = Var("kk", 0, size), Var("jj", 0, size)
        bp = Computation("Bp", [kk, jj], b[kk, jj])
        ia, ka = Var("ia", 0, size), Var("ka", 0, size)
        ap = Computation("Ap", [ia, ka], a[ia, ka])
        ap.store_in(Buffer("ApP", [(size + (mr - 1)) // mr, size, mr], float32),
                    [ia // mr, ka, ia % mr])
        acc = Computation("acc", [i, j], 0.0)
        upd = Computation("upd", [i, j, k], dtype=float32)
        upd.set_expression(upd[i, j, k - 1] + ap[i, k] * bp[k, j])
        upd.store_in(acc, [i, j])
        c = Computation("C", [i, j], upd[i, j, size - 1])
    ap.split("ia", mr, "ia0", "ia1")
    ap.interchange("ia1", "ka")  # ia0 ka ia1: each micro-panel written contiguously
    ap.parallelize("ia0")
    _blas_schedule(acc, upd, c, tj, mr, nr)
    bp.vectorize("jj", nr)
    bp.compute_at(upd, "j0")
    bp.allocate_at(upd, "j0")
    return f


def sgemm_copy_at(n: int | None = None, tj: int = 64, mr: int = 6, nr: int = 16,
                  pack: bool = True) -> Function:
    """The same sgemm with the algorithm left alone: B's column panel is packed by a
    Layer IV operation, ``copy_at(upd, "j0", B, "Bp")`` (the compiler computes the panel
    each j0 iteration reads and redirects the reads); ``pack=False`` gives the same
    schedule without the copy, to measure what packing does."""
    f, acc, upd, c = _sgemm("sgemm_copy_at", n, helper=False)
    _blas_schedule(acc, upd, c, tj, mr, nr)
    if pack:
        cp = copy_at(upd, "j0", f.buffers[1], "Bp")
        cp.vectorize("Bp_1", nr)
    return f


def sgemm_blocked(n: int | None = None, kc: int = 256, mc: int = 96, mr: int = 6,
                  nr: int = 16, pack_a: bool = True) -> Function:
    """C = A @ B blocked as GotoBLAS/BLIS block it, in the scheduling language: for each
    block ``k0`` of ``kc`` of the reduction, B's ``kc x N`` rows are packed (in parallel)
    into column micro-panels ``nr`` wide, each contiguous (``store_in(BpB, [j // nr, k,
    j % nr])``); for each block ``i0`` of ``mc`` rows (parallel), A's ``mc x kc`` block
    is packed into row micro-panels ``mr`` high (``ApB[i // mr, k, i % mr]``); then each
    ``mr x nr`` micro-tile accumulates the block's ``kc`` products in a register tile
    that is added into C. The micro-kernel reads both operands contiguously (the printer
    works the ``//`` and ``%`` out from the loops), the B micro-panel (``kc x nr``) stays
    in L1 across the ``mc / mr`` micro-tiles, A's block in L2.

    In Layer I the blocking of the reduction is part of the algorithm, since a value read
    must have one producer: ``acc`` has a ``k0`` index (a fresh accumulator per block:
    ``acc0`` zeroes it, ``u`` accumulates, ``u`` at ``k1 = 0`` reading ``acc0``'s
    element), and ``cs`` adds block ``k0``'s sum to C (``cs[i, j, k0 - 1]``; at ``k0 =
    0`` C's initial value, ``cz``). Loops: k0 / i0 (parallel) / j_vo / i1_uo / k1 / i1_ui
    (unrolled ``mr``) / j_vi (vector ``nr``). ``n`` None gives a Param N (a last partial
    block of ``N mod kc``); ``pack_a=False`` reads A in place."""
    _positive_tiles("sgemm_blocked", kc=kc, mc=mc, mr=mr, nr=nr)
    with Function("sgemm_blocked") as f:
        size = Param("N") if n is None else n
        nk = (size + (kc - 1)) // kc
        i, j = Var("i", 0, size), Var("j", 0, size)
        k0 = Var("k0", 0, nk)
        k1 = Var("k1", 0, minimum(kc, size - k0 * kc))
        a = Input("A", [size, size], float32)
        b = Input("B", [size, size], float32)
        kk, jj = Var("kk", 0, size), Var("jj", 0, size)
        bp = Computation("Bp", [kk, jj], b[kk, jj])
        bp.store_in(Buffer("BpB", [(size + (nr - 1)) // nr, size, nr], float32),
                    [jj // nr, kk, jj % nr])
        ap = None
        if pack_a:
            ia, ka = Var("ia", 0, size), Var("ka", 0, size)
            ap = Computation("Ap", [ia, ka], a[ia, ka])
            ap.store_in(Buffer("ApB", [(size + (mr - 1)) // mr, size, mr], float32),
                        [ia // mr, ka, ia % mr])
        cb = Buffer("C", [size, size], float32, kind=OUTPUT)
        cz = Computation("cz", [i, j], 0.0)
        cz.store_in(cb, [i, j])
        accb = Buffer("acc", [size, size, nk], float32)
        acc0 = Computation("acc0", [i, j, k0], 0.0)
        acc0.store_in(accb, [i, j, k0])
        u = Computation("u", [i, j, k0, k1], dtype=float32)
        u.set_expression(u[i, j, k0, k1 - 1]
                         + (a if ap is None else ap)[i, k0 * kc + k1] * bp[k0 * kc + k1, j])
        u.store_in(accb, [i, j, k0])
        cs = Computation("cs", [i, j, k0], dtype=float32)
        cs.set_expression(cs[i, j, k0 - 1]
                          + u[i, j, k0, minimum(kc, size - k0 * kc) - 1])
        cs.store_in(cb, [i, j])
    cz.parallelize("i")
    for x in (acc0, u, cs):
        x.split("i", mc, "i0", "i1")  # i0 i1 j k0
        x.interchange("i1", "j")  # i0 j i1 k0
        x.interchange("i0", "j")  # j i0 i1 k0
        x.interchange("i1", "k0")  # j i0 k0 i1
        x.interchange("i0", "k0")  # j k0 i0 i1
        x.interchange("j", "k0")  # k0 j i0 i1
        x.interchange("j", "i0")  # k0 i0 j i1
        x.vectorize("j", nr)  # k0 i0 j_vo j_vi i1
        x.interchange("j_vi", "i1")  # k0 i0 j_vo i1 j_vi
        x.unroll("i1", mr)  # k0 i0 j_vo i1_uo i1_ui j_vi
        x.parallelize("i0")
    u.interchange("i1_ui", "k1")  # ... i1_uo k1 j_vi i1_ui
    u.interchange("j_vi", "i1_ui")  # ... i1_uo k1 i1_ui j_vi
    acc0.after(cz, ROOT)
    u.after(acc0, "i1_uo")
    cs.after(u, "i1_uo")
    acc0.allocate_at(cs, "i1_uo")
    bp.vectorize("jj", nr)
    bp.interchange("kk", "jj_vo")  # jj_vo kk jj_vi: each thread packs whole micro-panels
    bp.parallelize("jj_vo")
    bp.compute_at(u, "k0")
    bp.allocate_at(u, "k0")
    if ap is not None:
        ap.split("ia", mr, "ia0", "ia1")  # whole micro-panels: no // or % per element
        ap.interchange("ia1", "ka")  # ia0 ka ia1: each micro-panel written contiguously
        ap.compute_at(u, "i0")
        ap.allocate_at(u, "i0")
    return f
