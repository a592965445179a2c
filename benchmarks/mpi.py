"""Scaling of the mpi target on this machine, and its communication against the exact halo.

Heat-2D with a halo exchange every time step (the program of tests/test_mpi.py), run at 1
and 2 ranks, interleaved, same data:

* strong scaling: the same N x N grid on 1 and on 2 ranks (time ratio 1 rank / 2 ranks);
* weak scaling: N x N on 1 rank, 2N x N (twice the rows) on 2 ranks (ideal ratio 1.0);
* bytes each call sent in exchanges, against the exact halo counted here independently
  (per step, one row of N-2 interior floats each way across each block boundary): equal
  means no over-approximation;
* where a call's time goes, at 1 and 2 ranks: the slowest rank's MPI start, input,
  compute and output phases (the kernel's ``last_phases``) and the rest (mpiexec's launch,
  MPI_Finalize, the exit, the Python side), beside a 4 x 4 call (the fixed cost).

Times are whole calls (mpiexec start, input, compute, output), the same work on both
sides; on a 2-core shared machine only the ratios mean anything.

    .venv/bin/python benchmarks/mpi.py [--n 512] [--steps 10] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from middleend.api.examples_mpi import heat2d


def timed(k: Any, a: np.ndarray) -> float:
    t0 = time.perf_counter()
    k(u0=a)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    n, T = args.n, args.steps
    rng = np.random.default_rng(0)
    cases = {
        "strong": ((n, n, 1), (n, n, 2)),
        "weak": ((n, n, 1), (2 * n, n, 2)),
    }
    print(f"heat-2D, {T} steps, exchange every step; median of {args.reps} interleaved calls")
    print(f"{'case':8} {'1 rank':>14} {'2 ranks':>14} {'t1/t2':>7} {'bytes/step':>11} "
          f"{'exact halo':>11} {'equal':>6}")
    for name, ((r1, c1, _), (r2, c2, _)) in cases.items():
        k1 = heat2d(r1, c1, T, 1).compile(target="mpi", ranks=1)
        k2 = heat2d(r2, c2, T, 2).compile(target="mpi", ranks=2)
        a1 = rng.random((r1, c1), dtype=np.float32)
        a2 = rng.random((r2, c2), dtype=np.float32)
        np.testing.assert_allclose(k1(u0=a1)["u"], heat_ref(a1, T), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(k2(u0=a2)["u"], heat_ref(a2, T), rtol=1e-4, atol=1e-6)
        t1, t2 = [], []
        for _ in range(args.reps):
            t1.append(timed(k1, a1))
            t2.append(timed(k2, a2))
        m1, m2 = statistics.median(t1), statistics.median(t2)
        sent = sum(k2.last_bytes_sent) / T
        exact = 2 * (c2 - 2) * 4  # one boundary between the two blocks: a row each way
        print(f"{name:8} {m1 * 1e3:11.1f} ms {m2 * 1e3:11.1f} ms {m1 / m2:7.2f} "
              f"{sent:11.0f} {exact:11d} {str(sent == exact):>6}")
    overhead(n, T, args.reps, rng)
    runtime_ranks(n, T, args.reps, rng)


def runtime_ranks(n: int, T: int, reps: int, rng: np.random.Generator) -> None:
    """One ranks="runtime" build against a fixed build per number of ranks, interleaved."""
    kr = heat2d(n, n, T, "runtime").compile(target="mpi", ranks="runtime")
    a = rng.random((n, n), dtype=np.float32)
    ref = heat_ref(a, T)
    print(f"\nranks at run time: one build against a build per number of ranks, {n}x{n}, "
          f"{T} steps (median of {reps} interleaved calls; compute: the slowest rank's)")
    print(f"{'ranks':>5} {'fixed call':>11} {'runtime call':>13} {'ratio':>6} "
          f"{'fixed comp':>11} {'runtime comp':>13} {'ratio':>6} {'bytes/step':>11} "
          f"{'exact halo':>11} {'equal':>6}")
    for R in (1, 2):
        kf = heat2d(n, n, T, R).compile(target="mpi", ranks=R)
        for k in (kf, kr):
            np.testing.assert_allclose(k(u0=a, ranks=R)["u"], ref, rtol=1e-4, atol=1e-6)
        tf: list[float] = []
        tr: list[float] = []
        cf: list[float] = []
        cr: list[float] = []
        for _ in range(reps):
            for k, t, c in ((kf, tf, cf), (kr, tr, cr)):
                t0 = time.perf_counter()
                k(u0=a, ranks=R)
                t.append(time.perf_counter() - t0)
                c.append(k.last_phases["compute"])
        mf, mr = statistics.median(tf), statistics.median(tr)
        pf, pr = statistics.median(cf), statistics.median(cr)
        sent = sum(kr.last_bytes_sent) / T
        exact = 2 * (R - 1) * (n - 2) * 4
        print(f"{R:5d} {mf * 1e3:8.1f} ms {mr * 1e3:10.1f} ms {mr / mf:6.2f} "
              f"{pf * 1e3:8.1f} ms {pr * 1e3:10.1f} ms {pr / pf:6.2f} {sent:11.0f} "
              f"{exact:11d} {str(sent == exact):>6}")


def overhead(n: int, T: int, reps: int, rng: np.random.Generator) -> None:
    """Median whole call and phases of heat-2D n x n and 4 x 4, interleaved."""
    cases = {}
    for R in (1, 2):
        for size in (n, 4):
            k = heat2d(size, size, T, R).compile(target="mpi", ranks=R)
            cases[f"{size}x{size}, {R} rank{'s' if R > 1 else ''}"] = (
                k, rng.random((size, size), dtype=np.float32))
    calls: dict[str, list[float]] = {c: [] for c in cases}
    phases: dict[str, list[dict[str, float]]] = {c: [] for c in cases}
    for _ in range(reps):
        for c, (k, a) in cases.items():
            calls[c].append(timed(k, a))
            phases[c].append(dict(k.last_phases))
    names = ("start", "input", "compute", "output")
    print(f"\nwhere a call goes (median ms; phases: the slowest rank's), {T} steps")
    print(f"{'case':18} {'call':>8} " + " ".join(f"{p:>8}" for p in names) + f" {'rest':>8}")
    for c in cases:
        med = {p: statistics.median(x[p] for x in phases[c]) for p in names}
        call = statistics.median(calls[c])
        print(f"{c:18} {call * 1e3:8.1f} " + " ".join(f"{med[p] * 1e3:8.1f}" for p in names)
              + f" {(call - sum(med.values())) * 1e3:8.1f}")


def heat_ref(a: np.ndarray, steps: int) -> np.ndarray:
    """Every time plane of numpy's heat-2D over ``steps`` steps."""
    planes = [a.copy()]
    for _ in range(steps):
        cur = planes[-1]
        nxt = cur.copy()
        nxt[1:-1, 1:-1] = (cur[1:-1, 1:-1] + cur[:-2, 1:-1] + cur[2:, 1:-1] + cur[1:-1, :-2]
                           + cur[1:-1, 2:]) * np.float32(0.2)
        planes.append(nxt)
    return np.stack(planes)


if __name__ == "__main__":
    main()
