"""GPU schedules of the papers' programs (Figure 3-(b) and friends), defined once for the
demo, the benchmarks and the tests. Each takes the Layer I program of
:mod:`middleend.api.examples` and adds commands; none changes the algorithm."""

from __future__ import annotations

from ..ir.commands import ROOT
from ..ir.operations import barrier_at
from .examples import Blur, Heat, MatMul

BLUR_VARIANTS = ("figure3b", "cache", "global")


def schedule_blur_gpu(b: Blur, variant: str = "figure3b", ti: int = 8, tj: int = 32) -> Blur:
    """The blur on a GPU, ``by`` in ``ti x tj`` tiles of threads, one tile per block:

    * ``figure3b`` (the paper's Figure 3-(b)): ``bx`` computed per block (its tile plus
      the two rows of halo) by the block's threads into shared memory, a barrier, then
      ``by`` reads it there;
    * ``cache``: ``bx`` in its own kernel, then ``cache_shared_at`` copies the tile of
      ``bx`` each block of ``by`` reads into shared memory (the copy, the barriers and the
      redirected reads are the compiler's);
    * ``global``: two kernels, both reading global memory."""
    bx, by = b.bx, b.by
    by.tile_gpu("i", "j", ti, tj, "i0", "j0", "i1", "j1")
    if variant == "figure3b":
        bx.compute_at(by, "j0")
        bx.allocate_at(by, "j0")
        bx.tag_gpu_shared()
        bx.gpu_threads("i", "j")
        barrier_at(by, "j0")
    elif variant in ("cache", "global"):
        bx.tile_gpu("i", "j", ti, tj, "i0", "j0", "i1", "j1")
        if variant == "cache":
            bx.cache_shared_at(by, "j0")
    else:
        raise ValueError(f"unknown blur variant {variant!r} (known: {BLUR_VARIANTS})")
    return b


def schedule_matmul_gpu(mm: MatMul, t: int = 16, shared: bool = True) -> MatMul:
    """C = A @ B in ``t x t`` thread blocks, each thread one element of C summed over k in
    steps of ``t``; with ``shared``, each step's tiles of A and B go to shared memory
    (``cache_shared_at`` at the k0 loop: the copies are cooperative, between barriers)."""
    c0, c1 = mm.init, mm.update
    c0.tile_gpu("i", "j", t, t, "i0", "j0", "i1", "j1")
    c1.tile("i", "j", "k", t, t, t, "i0", "j0", "k0", "i1", "j1", "k1")
    c1.gpu_loops(("i0", "j0"), ("i1", "j1"))
    c1.after(c0, ROOT)
    if shared:
        a, b = mm.fn.buffers[0], mm.fn.buffers[1]
        a.cache_shared_at(c1, "k0")
        b.cache_shared_at(c1, "k0")
    return mm


def schedule_heat2d_gpu(h: Heat, t: int = 16) -> Heat:
    """Heat-2D: one kernel per time step (the time loop stays on the host), each step in
    ``t x t`` thread blocks; the initialisation in its own kernel."""
    h.init.tile_gpu("i", "j", t, t, "i0", "j0", "i1", "j1")
    h.h.tile_gpu("i", "j", t, t, "i0", "j0", "i1", "j1")
    return h


__all__ = ["BLUR_VARIANTS", "schedule_blur_gpu", "schedule_heat2d_gpu",
           "schedule_matmul_gpu"]
