"""Julia kernels: the scheduled version vs the same code compiled with no schedule, and vs
numpy's direct equivalent, in one run on the same data.

Before anything is timed, each kernel's results (scheduled and unscheduled) and numpy's are
checked (``np.allclose``) against the numpy reference of ``frontends/julia/paper.py``
(written from the kernels' mathematical definitions). The three candidates are then timed
interleaved (``common.samples_interleaved``: they take turns over two rounds, one untimed
warm-up call per turn), best of N; the spread is (median - best) / best. Ratios are what to
compare; the absolute times on a shared machine are noise.

The kernels write in place into their array arguments (Julia's ``f!`` convention), so our
side allocates nothing per call; numpy's formulations return new arrays.

``--cpu-time`` times the calling thread's CPU time (``time.thread_time``) instead of wall
time: with both sides on one thread (``MIDDLEEND_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``,
checked) it measures the code, not the other processes of a busy machine. ``--source``
compiles another version of ``kernels.jl`` (e.g. an earlier commit's schedules, ``git show
REV:frontends/julia/kernels.jl``) with the same compiler, to compare schedules. ``--fma``
adds a column: the scheduled kernel built with ``fp_contract`` (what ``@fastmath`` over every
assignment gives: ``a * b + c`` may become one fused multiply-add, as in numpy's BLAS),
checked and timed in the same interleaved run; the plain ratio stays the default figure.
``--busy`` runs everything beside a process spinning at the same priority
(``common.busy_neighbour``); read the median ratio (ours' median over numpy's) then.

    .venv/bin/python benchmarks/julia/compare.py [--reps 5] [--only bicg!,doitgen!] [--small]
        [--cpu-time] [--source old_kernels.jl] [--fma] [--busy]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common  # noqa: E402,F401  (sets up the import path)
import numpy as np  # noqa: E402
from common import (  # noqa: E402
    BUSY_HELP,
    MIN_REPS,
    busy_neighbour,
    median_ratio,
    print_table,
    samples_interleaved,
    spread,
)

from frontends.julia import compile_source  # noqa: E402
from frontends.julia.paper import KERNELS, Args, Kernel, source  # noqa: E402

RTOL, ATOL = 1e-9, 1e-9  # float64 sums in another order than numpy's BLAS


def _fresh(args: Args) -> Args:
    return tuple(x.copy(order="K") if isinstance(x, np.ndarray) else x for x in args)


def check(kd: Kernel, args: Args, ran: dict[str, Args], numpy_result: object) -> None:
    """``ran``: arguments after one call of each of our kernels; ``numpy_result``: what
    ``kd.numpy(args)`` returned. Each must equal ``kd.reference(args)``."""
    want = kd.reference(args)
    for label, got in ran.items():
        for pos, ref in want.items():
            if not np.allclose(got[pos], ref, rtol=RTOL, atol=ATOL):
                err = float(np.max(np.abs(got[pos] - ref)))
                raise AssertionError(f"{kd.name} {label}: argument {pos} differs from the "
                                     f"numpy reference (max abs err {err:g})")
    if kd.numpy is None:
        return
    res = numpy_result if isinstance(numpy_result, tuple) else (numpy_result,)
    assert len(res) == len(kd.numpy_out), (kd.name, len(res), kd.numpy_out)
    for pos, got in zip(kd.numpy_out, res, strict=True):
        if not np.allclose(got, want[pos], rtol=RTOL, atol=ATOL):
            raise AssertionError(f"{kd.name} numpy: argument {pos} differs from the reference")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--small", action="store_true",
                    help="the tests' small sizes instead of the large ones (a quick check)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="the calling thread's CPU time, both sides on one thread")
    ap.add_argument("--source", default="",
                    help="a kernels.jl to compile instead of frontends/julia/kernels.jl")
    ap.add_argument("--fma", action="store_true",
                    help="also time the scheduled kernels built with fp_contract (fused "
                         "multiply-adds, as @fastmath allows)")
    ap.add_argument("--busy", action="store_true", help=BUSY_HELP)
    a = ap.parse_args()
    if a.cpu_time and not all(os.environ.get(v) == "1" for v in
                              ("MIDDLEEND_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
        ap.error("--cpu-time needs MIDDLEEND_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 in the "
                 "environment (a thread's CPU time misses the work of other threads)")
    clock = time.thread_time if a.cpu_time else time.perf_counter
    with busy_neighbour(a.busy):
        run(a, clock)


def run(a: argparse.Namespace, clock: Callable[[], float]) -> None:
    """Check and time the selected kernels, then print the table."""
    names = [n for n in KERNELS if not a.only or n in a.only.split(",")]
    src = Path(a.source).read_text() if a.source else source()
    rows: list[list[object]] = []
    for n in names:
        kd = KERNELS[n]
        args = kd.make(kd.small if a.small else kd.large, np.random.default_rng(0))
        ks = compile_source(src, n, schedule=True)
        ku = compile_source(src, n, schedule=False)
        sched, unsched = _fresh(args), _fresh(args)
        ks(*sched)  # compiles, outside the timing
        ku(*unsched)
        ran = {"scheduled": sched, "unscheduled": unsched}
        calls: dict[str, Callable[[], object]] = {
            "unsched": lambda k=ku, x=unsched: k(*x), "sched": lambda k=ks, x=sched: k(*x)}
        if a.fma:
            kf = compile_source(src, n, schedule=True, fp_contract=True)
            ran["scheduled, fp_contract"] = fused = _fresh(args)
            kf(*fused)
            calls["fma"] = lambda k=kf, x=fused: k(*x)
        numpy_result = kd.numpy(args) if kd.numpy else None
        check(kd, args, ran, numpy_result)
        if kd.numpy is not None:
            calls["numpy"] = lambda f=kd.numpy, x=args: f(x)
        t = samples_interleaved(calls, reps=a.reps, clock=clock)
        b = {k: min(v) for k, v in t.items()}
        row: list[object] = [n, f"{b['unsched'] * 1e3:.3f}", f"{b['sched'] * 1e3:.3f}",
                             f"{spread(t['sched']) * 100:.0f}%"]
        if "numpy" in b:
            row += [f"{b['numpy'] * 1e3:.3f}", f"{spread(t['numpy']) * 100:.0f}%",
                    f"{b['unsched'] / b['sched']:.2f}x", f"{b['sched'] / b['numpy']:.2f}",
                    f"{median_ratio(t['sched'], t['numpy']):.2f}"]
        else:
            row += ["-", "-", f"{b['unsched'] / b['sched']:.2f}x", "-", "-"]
        if a.fma:
            row += [f"{b['fma'] * 1e3:.3f}",
                    f"{b['fma'] / b['numpy']:.2f}" if "numpy" in b else "-"]
        rows.append(row)
        print(f"{n}: checked and timed", flush=True)
    what = "single-thread CPU time" if a.cpu_time else "wall time"
    print_table(f"Julia kernels, {what}, best of {max(a.reps, MIN_REPS)} interleaved "
                "(ratio = ours scheduled / numpy; < 1: ours faster)",
                ["kernel", "unsched ms", "sched ms", "spread", "numpy ms", "spread",
                 "sched speedup", "ratio", "median ratio"]
                + (["fma ms", "fma ratio"] if a.fma else []), rows)


if __name__ == "__main__":
    main()
