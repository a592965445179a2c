"""The fpga target's six image kernels (the first paper's FPGA evaluation) on a 512x384
RGB uint8 image: the latency estimate of each under the two schedules side by side
(channel-parallel as Xilinx's HLS video library, and 512-bit vectorized along the width),
and the wall time of one C-simulation call of each.

The estimate is the target's model (backends/fpga/latency.py: pipeline depth + II x trip
count, II raised by the memory ports), not a synthesis result; microseconds are cycles at
the clock asked for (300 MHz by default). C-simulation times are the best of a few calls on
this machine; they say how long checking a schedule takes, nothing about the FPGA.

    .venv/bin/python benchmarks/fpga.py [--reps 3] [--clock 300]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import best_of, print_table  # noqa: I001 (sets up the import path)

from middleend.api import examples_fpga as ex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clock", type=float, default=300.0)
    args = ap.parse_args()
    img = np.random.default_rng(0).integers(0, 256, (384, 512, 3), dtype=np.uint8)
    rows = []
    for name, make in ex.KERNELS.items():
        est, sim = {}, {}
        for sched in ex.SCHEDULES:
            k = make(sched).compile(target="fpga", clock_mhz=args.clock)
            sim[sched] = best_of(lambda k=k: k(inp=img), reps=args.reps)
            est[sched] = k.latency_estimate
        c, v = est["chan"], est["vec"]
        rows.append([name, c, v, f"{c / v:.1f}x", f"{c / args.clock:.0f}",
                     f"{v / args.clock:.0f}", f"{sim['chan'] * 1e3:.1f}",
                     f"{sim['vec'] * 1e3:.1f}"])
    print_table(f"fpga: estimated cycles (and µs at {args.clock:g} MHz), 512x384 RGB uint8; "
                "C-simulation wall time per call",
                ["kernel", "cycles chan", "cycles vec", "vec speed-up", "µs chan", "µs vec",
                 "csim ms chan", "csim ms vec"], rows)


if __name__ == "__main__":
    main()
