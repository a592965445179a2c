"""sgemm C = A @ B (N x N float32, N = 1024 by default), ours vs numpy.matmul (OpenBLAS).

    python benchmarks/sgemm.py [--reps R] [--size N [N ...]] [--cpu-time] [--busy]

Per size N: GFLOP/s (2 N^3 flops per call) of every variant and of numpy, and the ratio
ours/numpy, all timed interleaved in one run. Both sides write into a C preallocated once
outside the timing (``np.matmul(A, B, out=C)``, our kernel called with ``C=``), so neither
pays for allocating and faulting in a fresh N x N result per call.

The formulations of ours, each checked against numpy before timing:

* ``direct``: the papers' formulation, ``C[i,j] = 0`` then ``c1[i,j,k] = c1[i,j,k-1] +
  A[i,k]*B[k,j]`` stored in C. Schedule: 3-D tile (64, 256, 64), j vectorized by 32,
  i unrolled by 4, order i0 j0 k0 i1_uo j1_vo k1 i1_ui j1_vi, i0 parallel, C initialised by
  its own parallel loop nest. gcc keeps re-loading/storing the C tile in every k1 iteration
  (inside the OpenMP-outlined function it cannot prove C does not alias A/B).
* ``packed``: same algorithm, with two Layer I helpers that a BLAS uses: ``Bp`` a copy
  of B computed at the column-panel loop ``j0`` into a private buffer (``compute_at`` +
  ``allocate_at``: B packing), and ``acc`` an MR x NR accumulator tile allocated at the
  micro-tile loop (``allocate_at``: a stack array that gcc keeps in registers). Loops: j0
  (parallel, NR columns: the panel of B, N x NR, 128 KB at N=2048 with AVX2, in L2) /
  i_uo / k / i_ui (unrolled 6) / j1_vi (vector NR), i.e. a 6 x NR register-blocked
  micro-kernel, NR as many of the host's vectors as its registers hold beside B's and A's
  broadcast (``NR`` and ``TJ`` below: 16 floats with AVX2, 12 accumulators of 8 floats
  in 16 registers, panels of 16; 64 with AVX-512, 24 accumulators of 16 floats in 32
  registers, panels of 128). On an AVX2 machine, quiet, interleaved A/B runs:
  at N=2048 panels of NR ran at 0.91-0.94x numpy against 0.78-0.81x for panels of 64
  columns (B's panel 512 KB); at N=1024 the ratio depends on the process (0.69-0.96x for
  NR, 0.65-0.94x for 64 columns; A is re-read per panel, and its TLB cost varies, huge
  pages or not).
* ``packed+fma``: the same kernel built with ``fp_contract=True``, so that gcc emits
  fused multiply-adds, as OpenBLAS does; the anchor it is compared with uses them, and
  without them the ceiling is half the FMA peak.
* ``packed+fma A packed``: that kernel with A packed too (``Ap``, the 6 rows of A
  a micro-tile row reads, copied k-major at ``i_uo``: ``store_in(ApB, [k, i])``). Packed
  again for every panel, it has cost more than it saved in our runs.
* ``packed+fma A once`` (the chosen one with 16 vector registers; ``packed+fma`` with
  32, see ``CHOSEN``): ``packed+fma`` with A packed once before the
  panels (:func:`middleend.api.examples.sgemm_packed_a`): ``Ap`` copies A into 6-row
  micro-panels (``store_in(ApP, [i // 6, k, i % 6])``, parallel), so the micro-kernel
  reads one contiguous stream of A instead of 6 rows ``4N`` bytes apart; one pass over A
  more. In the quiet runs of 2026-11-24: 0.996 / 0.993x numpy at N = 1024 / 2048 against
  0.977 / 0.988 for ``packed+fma`` (and 0.984 against 0.973 in another run); panels of
  32 or 64 columns instead of 16: no better (0.973, 0.982).
* ``blocked+fma``: blocked as GotoBLAS/BLIS block it
  (:func:`middleend.api.examples.sgemm_blocked`): per 256-long block of k, B's rows packed
  in parallel into contiguous 256 x NR micro-panels (``store_in`` with ``j // NR``,
  ``j % NR``), per block of 96 rows (parallel) A's block packed into 6 x 256 micro-panels,
  the same 6 x NR micro-kernel reading both contiguously, each micro-tile's block sum
  added into C. Slower than ``packed+fma`` here (0.50-0.84x numpy against 0.77-0.89x
  in one quiet run; the serial parts and the packing copies cost more than the
  contiguous micro-panels save at these sizes).
* ``copy_at`` and ``copy_at off``: the packed schedule with the algorithm left alone (no
  ``Bp`` computation): the panel of B is packed by the Layer IV operation
  ``copy_at(upd, "j0", B, "Bp")``, whose footprint the compiler computes; ``copy_at off``
  is the same schedule without the copy, so the pair shows what packing by copy_at buys.

The vectorize factor reaches gcc as ``#pragma omp simd simdlen(nr)``, and gcc uses the
machine's widest vectors (``-march=native``: 8 floats with AVX2; 16 with AVX-512, where
the builds add ``-mprefer-vector-width=512``, ``backends.cpu.build.vector_flags``; the
build cache is keyed on the host's ISA). The backend builds with ``-ffp-contract=off`` by default
so float results equal numpy's. Each table also gives every variant's share of the FMA peak
measured on this machine at the start of the run (``benchmarks/peak.py``).

``--cpu-time`` times the calling thread's CPU time (``time.thread_time``) instead of the
wall time, with both sides on one thread (``MIDDLEEND_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1`` in the environment, checked): the micro-kernels compared core
for core, in figures that hold on a machine other processes keep busy (the wall-time
default is the figure that counts; the FMA peak is then one core's).

Sizes are compile-time constants (one build per N) as in the papers' benchmarks: with a
``me.Param`` N the same schedule is correct (tests/test_allocation.py) but about half as
fast here, because the packed panel's strides are then run-time values. The schedules'
tiles (128-column panels, 64 x 256 x 64 for ``direct``) suit multiples of 256.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import common
import numpy as np
from common import SummaryRow, check_close, print_table, samples_interleaved, short_error, spread
from peak import fma_peak

import middleend as me
from backends.cpu.build import compiler, float_lanes, vector_registers
from middleend.api.examples import (
    matmul,
    sgemm_blocked,
    sgemm_copy_at,
    sgemm_packed,
    sgemm_packed_a,
)

N = 1024


def define_direct(n: int = N, tiles: tuple[int, int, int] = (64, 256, 64), mr: int = 4,
                  nr: int = 32) -> me.Function:
    """The papers' sgemm (init + update chain in C) with a tiled/vector/unrolled schedule."""
    mm = matmul("sgemm", n)
    c0, c1 = mm.init, mm.update
    c0.parallelize("i")
    c1.tile("i", "j", "k", *tiles, "i0", "j0", "k0", "i1", "j1", "k1")
    c1.vectorize("j1", nr)
    c1.unroll("i1", mr)
    c1.interchange("i1_ui", "j1_vo")  # i0 j0 k0 i1_uo j1_vo i1_ui j1_vi k1
    c1.interchange("i1_ui", "k1")  # ... j1_vo k1 j1_vi i1_ui
    c1.interchange("j1_vi", "i1_ui")  # ... j1_vo k1 i1_ui j1_vi
    c1.parallelize("i0")
    c1.after(c0, me.ROOT)
    return mm.fn


# The micro-tile is 6 rows x NR columns, NR as many of the machine's vectors as leave
# registers for B's vectors and A's broadcast: 6 x 2 vectors (12 accumulators) in 16
# registers (AVX2), 6 x 4 (24) in 32 (AVX-512). TJ, the panel of B a thread packs: one
# micro-tile wide with 16 registers, two with 32 (the A micro-panel then serves two
# micro-tiles from L1). Measured, interleaved with numpy (best of 40, N=1024): on a 2-core
# Sapphire Rapids, 6 x 4 vectors with TJ = 2 NR 0.99x numpy, TJ = NR 0.93x, 6 x 2 vectors
# 0.52x; on a 2-core Zen 3 (AVX2), TJ = NR 0.996x, TJ = 2 NR 0.973x.
_REGS = vector_registers(compiler())
NR = float_lanes(compiler()) * (_REGS // 8)
TJ = NR * (_REGS // 16)
# The schedule we recommend on this machine, in the last table. With 16 registers A is
# packed once into 6-row micro-panels (0.996 / 0.993x numpy at N = 1024 / 2048 against
# 0.977 / 0.988 read in place, Zen 3); with 32, where the panel of B is two micro-tiles
# wide and the second reads the 6 rows of A again from L1, the extra pass over A costs
# more than it saves: two quiet runs on the Sapphire Rapids, read in place 1.044 / 1.013
# and 1.013 / 1.038x numpy, packed once 1.013 / 0.973 and 0.923 / 0.981.
CHOSEN = "packed+fma A once" if _REGS == 16 else "packed+fma"


def define_packed(n: int = N, pack_a: bool = False) -> me.Function:
    """The BLAS-like schedule of :func:`middleend.api.examples.sgemm_packed`, its
    micro-tile ``6 x NR``, panels of ``TJ`` columns."""
    return sgemm_packed(n, tj=TJ, nr=NR, pack_a=pack_a)


# name -> (definition for a size N, compile options)
VARIANTS: dict[str, tuple[Callable[[int], me.Function], dict[str, bool]]] = {
    "direct": (define_direct, {}),
    "packed": (define_packed, {}),
    "packed+fma": (define_packed, {"fp_contract": True}),
    "packed+fma A packed": (lambda n: define_packed(n, pack_a=True), {"fp_contract": True}),
    "packed+fma A once": (lambda n: sgemm_packed_a(n, tj=TJ, nr=NR), {"fp_contract": True}),
    "blocked+fma": (lambda n: sgemm_blocked(n, nr=NR), {"fp_contract": True}),
    "copy_at": (sgemm_copy_at, {}),
    "copy_at off": (lambda n: sgemm_copy_at(n, pack=False), {}),
}


def gflops(seconds: float, n: int = N) -> float:
    return 2.0 * n ** 3 / seconds / 1e9


def run_size(n: int, reps: int, peak: float,
             clock: Callable[[], float] = time.perf_counter) -> SummaryRow:
    """Build, check and time the variants against numpy.matmul at size ``n``; print a
    table; return the summary row of the chosen variant."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    anchor = np.matmul(a, b)
    c_np = np.empty_like(anchor)
    calls: dict[str, Callable[[], object]] = {"numpy": lambda: np.matmul(a, b, out=c_np)}
    outs: dict[str, np.ndarray] = {}
    build_s: dict[str, float] = {}
    failed: dict[str, str] = {}
    for name, (make, options) in VARIANTS.items():
        try:
            t0 = time.perf_counter()
            kernel = make(n).compile(target="cpu", **options)
            build_s[name] = time.perf_counter() - t0
            c = outs[name] = np.full_like(anchor, np.nan)
            kernel(A=a, B=b, C=c)
            # float32 sums of n terms in another order: relative tolerance 1e-4
            check_close(f"sgemm {name} N={n}", c, anchor, rtol=1e-4, atol=1e-3)
        except (me.MiddleEndError, AssertionError) as exc:
            failed[name] = short_error(exc)
            continue
        calls[name] = lambda k=kernel, c=c: k(A=a, B=b, C=c)
    samples = samples_interleaved(calls, reps, clock=clock)
    best = {k: min(v) for k, v in samples.items()}
    g_np = gflops(best["numpy"], n)
    rows: list[list[object]] = [["numpy.matmul (anchor)", f"{g_np:.1f}",
                                 f"{spread(samples['numpy']) * 100:.0f}%", "1.00",
                                 f"{g_np / peak:.2f}", "-"]]
    for name in VARIANTS:
        label = f"ours {name}" + (" (chosen)" if name == CHOSEN else "")
        if name in failed:
            rows.append([label, "failed", "-", "-", "-", failed[name]])
        else:
            g = gflops(best[name], n)
            rows.append([label, f"{g:.1f}", f"{spread(samples[name]) * 100:.0f}%",
                         f"{g / g_np:.3f}", f"{g / peak:.2f}", f"{build_s[name]:.2f}"])
    what = "single-thread CPU time" if clock is time.thread_time else "wall time"
    print_table(f"sgemm N={n} float32, best of {max(reps, common.MIN_REPS)} interleaved "
                f"({what}), preallocated C on both sides",
                ["variant", "GFLOP/s", "spread", "ours/numpy", "of FMA peak", "build s"], rows)
    metric = "GFLOP/s" if n == N else f"GFLOP/s N={n}"
    if CHOSEN in failed:
        return SummaryRow("sgemm", metric, "failed", f"{g_np:.1f}", "-", failed[CHOSEN])
    g = gflops(best[CHOSEN], n)
    return SummaryRow("sgemm", metric, f"{g:.1f}", f"{g_np:.1f}", f"{g / g_np:.3f}",
                      f"{CHOSEN} vs numpy.matmul; target >= 1.0")


def run(reps: int = common.DEFAULT_REPS, sizes: Sequence[int] = (N,),
        cpu_time: bool = False) -> list[SummaryRow]:
    """:func:`run_size` for each size; with several sizes, a last table of the chosen
    variant's ratio per size. Returns the summary rows, one per size. ``cpu_time``: the
    calling thread's CPU time, both sides on one thread (see the module doc)."""
    peak, width = fma_peak(one_core=cpu_time)
    cores = "one core" if cpu_time else "all cores"
    print(f"measured FMA peak: {peak:.1f} GFLOP/s ({width}-float vectors, {cores})")
    clock = time.thread_time if cpu_time else time.perf_counter
    out = [run_size(n, reps, peak, clock) for n in sizes]
    if len(out) > 1:
        print_table(f"sgemm {CHOSEN} vs numpy.matmul per size",
                    ["N", "ours GFLOP/s", "numpy GFLOP/s", "ours/numpy"],
                    [[n, r.ours, r.anchor, r.ratio] for n, r in zip(sizes, out, strict=True)])
    return out


def main() -> None:
    p = common.arg_parser(__doc__.splitlines()[0])
    p.add_argument("--size", type=int, nargs="+", default=[N], metavar="N",
                   help=f"matrix size(s) N (N x N times N x N; default {N})")
    p.add_argument("--cpu-time", action="store_true",
                   help="the calling thread's CPU time, both sides on one thread")
    p.add_argument("--busy", action="store_true", help=common.BUSY_HELP)
    args = p.parse_args()
    if args.cpu_time and not all(os.environ.get(v) == "1" for v in
                                 ("MIDDLEEND_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
        p.error("--cpu-time needs MIDDLEEND_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 in the "
                "environment (a thread's CPU time misses the work of other threads)")
    with common.busy_neighbour(args.busy):
        run(args.reps, args.size, args.cpu_time)


if __name__ == "__main__":
    main()
