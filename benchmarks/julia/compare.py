"""Julia kernels: the scheduled version vs the same code compiled with no schedule, and vs
numpy's direct equivalent, in one run on the same data. Ratios are what to compare; the
absolute times on a shared machine are noise.

    .venv/bin/python benchmarks/julia/compare.py [--reps 5] [--only bicg!,doitgen!]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from frontends.julia import compile_source
from frontends.julia.paper import KERNELS, source


def best(f, args: tuple, reps: int) -> float:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        f(*args)
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    names = [n for n in KERNELS if not a.only or n in a.only.split(",")]
    src = source()
    print(f"{'kernel':12} {'unsched ms':>11} {'sched ms':>9} {'numpy ms':>9} "
          f"{'speedup':>8} {'vs numpy':>9}")
    for n in names:
        kd = KERNELS[n]
        args = kd.make(kd.large, np.random.default_rng(0))
        fresh = [tuple(x.copy(order="K") if isinstance(x, np.ndarray) else x for x in args)
                 for _ in range(2)]
        ks = compile_source(src, n, schedule=True)
        ku = compile_source(src, n, schedule=False)
        ks(*fresh[0])
        ku(*fresh[1])
        for pos in kd.reference(args):  # same results, scheduled or not
            np.testing.assert_allclose(fresh[0][pos], fresh[1][pos], rtol=1e-9, atol=1e-9)
        t_u = best(ku, fresh[1], a.reps)
        t_s = best(ks, fresh[0], a.reps)
        t_n = best(kd.numpy, (args,), a.reps) if kd.numpy else float("nan")
        print(f"{n:12} {t_u * 1e3:11.2f} {t_s * 1e3:9.2f} {t_n * 1e3:9.2f} "
              f"{t_u / t_s:7.2f}x {t_n / t_s:8.2f}x", flush=True)


if __name__ == "__main__":
    main()
