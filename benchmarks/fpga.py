"""The fpga target's six image kernels (the first paper's FPGA evaluation) on a 512x384
RGB uint8 image: the latency estimate of each under its schedules side by side
(channel-parallel as Xilinx's HLS video library, 512-bit vectorized along the width, and
for the three stencils channel-parallel with a line buffer), how many times each schedule
reads every input element from off-chip memory, and the wall time of one C-simulation
call of each.

The estimate is the target's model (backends/fpga/latency.py: pipeline depth + II x trip
count, II raised by the memory ports), not a synthesis result; microseconds are cycles at
the clock asked for (300 MHz by default). Reads per element are counted from the schedule
(kernel.traffic: the elements the input port moves in one call, over the elements of the
input). C-simulation times are the best of a few interleaved calls on this machine; they
say how long checking a schedule takes, nothing about the FPGA.

    .venv/bin/python benchmarks/fpga.py [--reps 3] [--clock 300]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import best_of_interleaved, print_table  # noqa: I001 (sets up the import path)

from middleend.api import examples_fpga as ex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clock", type=float, default=300.0)
    args = ap.parse_args()
    rows_n, cols_n = 384, 512
    img = np.random.default_rng(0).integers(0, 256, (rows_n, cols_n, 3), dtype=np.uint8)
    rows = []
    for name, make in ex.KERNELS.items():
        scheds = [*ex.SCHEDULES, *(("lb",) if name in ex.LINE_BUFFERED else ())]
        kernels = {s: make(s).compile(target="fpga", clock_mhz=args.clock) for s in scheds}
        outs = {s: next(iter(k(inp=img).values())) for s, k in kernels.items()}
        for s, o in outs.items():  # every schedule computes the same image
            np.testing.assert_array_equal(o, outs["chan"], err_msg=f"{name} {s}")
        sim = best_of_interleaved({s: (lambda k=k: k(inp=img)) for s, k in kernels.items()},
                                  reps=args.reps)
        est = {s: k.estimate(N=rows_n, M=cols_n) for s, k in kernels.items()}
        per = {s: k.traffic(N=rows_n, M=cols_n)["inp"][0] / img.size
               for s, k in kernels.items()}

        def cell(table: dict[str, float], s: str, fmt: str) -> str:
            return format(table[s], fmt) if s in table else "-"

        c = est["chan"]
        rows.append([name, c, est["vec"], cell(est, "lb", "d"),
                     f"{c / est['vec']:.1f}x",
                     f"{c / est['lb']:.1f}x" if "lb" in est else "-",
                     f"{c / args.clock:.0f}", f"{est['vec'] / args.clock:.0f}",
                     f"{est['lb'] / args.clock:.0f}" if "lb" in est else "-",
                     cell(per, "chan", ".2f"), cell(per, "vec", ".2f"), cell(per, "lb", ".2f"),
                     *(f"{sim[s] * 1e3:.1f}" if s in sim else "-"
                       for s in ("chan", "vec", "lb"))])
    print_table(f"fpga: estimated cycles (and µs at {args.clock:g} MHz), 512x384 RGB uint8; "
                "off-chip reads per input element; C-simulation wall time per call",
                ["kernel", "cycles chan", "cycles vec", "cycles lb", "vec speed-up",
                 "lb speed-up", "µs chan", "µs vec", "µs lb", "reads/elem chan",
                 "reads/elem vec", "reads/elem lb", "csim ms chan", "csim ms vec",
                 "csim ms lb"], rows)


if __name__ == "__main__":
    main()
