"""The cost of an mpi kernel's call inside a running MPI job (mpi4py, in-process: the
root's arrays scattered and gathered with MPI_Scatterv/Gatherv), and on a job kept up
between calls (``with k.job()``: files in shared memory, no launch), against the same
kernel launched by ``mpiexec`` from a plain process (the anchor: launch, MPI start, per-rank
file I/O, exit), heat-2D with a halo exchange every step, same data, at 1 and 2 ranks.
Then, launched, the same kernel with ``me.scatter``/``me.gather`` operations (the root
reads the whole input, scatters, gathers and writes the whole output) against per-rank
file I/O (the anchor), interleaved call by call.

Rounds alternate between the two ways (each round: a few calls launched from here, then
a job of R processes started once that makes the same number of calls in-process and
reports their median from the root); the median of the rounds' medians is printed with
the ratio in-process / launched. The job's own start (Python, imports, the compile that
hits the build cache) is not in its calls: that is what running inside a job saves.

    .venv/bin/python benchmarks/mpi_job.py [--n 512] [--steps 10] [--calls 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import middleend as me
from middleend.api.examples_mpi import heat2d

ROOT = Path(__file__).resolve().parents[1]


def _calls(k: object, a: np.ndarray, calls: int) -> float:
    """The median seconds of ``calls`` calls of ``k`` (after one warm-up call)."""
    k(u0=a)  # type: ignore[operator]
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        k(u0=a)  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def inner(n: int, steps: int, calls: int) -> None:
    """Inside the job: the in-process calls' median, printed by the root."""
    from mpi4py import MPI

    R = MPI.COMM_WORLD.Get_size()
    k = heat2d(n, n, steps, R).compile(target="mpi", ranks=R)
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    MPI.COMM_WORLD.Barrier()
    t = _calls(k, a, calls)
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(f"median {t!r}", flush=True)


def _in_job(R: int, n: int, steps: int, calls: int) -> float:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [str(mpiexec), "-launcher", "fork", "-n", str(R), sys.executable, "-m", "mpi4py",
           __file__, "--inner", "--n", str(n), "--steps", str(steps), "--calls", str(calls)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=600).stdout
    return float(next(x for x in out.splitlines() if x.startswith("median ")).split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    o = ap.parse_args()
    if o.inner:
        inner(o.n, o.steps, o.calls)
        return
    a = np.random.default_rng(0).random((o.n, o.n), dtype=np.float32)
    print(f"heat-2D {o.n}x{o.n}, {o.steps} steps; median ms of {o.calls} calls, median of "
          f"{o.rounds} alternating rounds")
    print(f"{'ranks':>5} {'launched':>10} {'in a job':>10} {'job/launched':>13} "
          f"{'kept job':>10} {'kept/launched':>14}")
    for R in (1, 2):
        k = heat2d(o.n, o.n, o.steps, R).compile(target="mpi", ranks=R)
        launched, job, kept = [], [], []
        for _ in range(o.rounds):
            launched.append(_calls(k, a, o.calls))
            job.append(_in_job(R, o.n, o.steps, o.calls))
            with k.job():  # type: ignore[attr-defined]
                kept.append(_calls(k, a, o.calls))  # its start is the warm-up call
        lm, jm, km = (statistics.median(x) for x in (launched, job, kept))
        print(f"{R:>5} {lm * 1e3:>10.1f} {jm * 1e3:>10.1f} {jm / lm:>13.2f} "
              f"{km * 1e3:>10.1f} {km / lm:>14.2f}")
    print(f"\nlaunched: scatter + gather through rank 0 against per-rank file I/O "
          f"(median ms of {o.calls * o.rounds} interleaved calls)")
    print(f"{'ranks':>5} {'per rank':>10} {'root':>10} {'root/per rank':>14}")
    for R in (1, 2):
        plain = heat2d(o.n, o.n, o.steps, R).compile(target="mpi", ranks=R)
        f = heat2d(o.n, o.n, o.steps, R, name="heat_root")
        for b in f.buffers:
            if b.name == "u0":
                b.distribute(0)
                me.scatter(b)
            elif b.name == "u":
                me.gather(b)
        rooted = f.compile(target="mpi", ranks=R)
        np.testing.assert_array_equal(rooted(u0=a)["u"], plain(u0=a)["u"])
        ts: dict[str, list[float]] = {"plain": [], "root": []}
        for _ in range(o.calls * o.rounds):
            for key, k in (("plain", plain), ("root", rooted)):
                t0 = time.perf_counter()
                k(u0=a)
                ts[key].append(time.perf_counter() - t0)
        pm, rm = statistics.median(ts["plain"]), statistics.median(ts["root"])
        print(f"{R:>5} {pm * 1e3:>10.1f} {rm * 1e3:>10.1f} {rm / pm:>14.2f}")


if __name__ == "__main__":
    main()
