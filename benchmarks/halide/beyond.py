"""The papers' benchmarks Halide cannot express, ours vs numpy (middleend.examples_beyond).

* ``ticket2373``: trailing 32-pixel box sum over the triangular domain r <= x (Halide issue
  #2373), 2112 x 3520 float32 (one channel: the ticket's input is 2-D).
* ``heat3d``: 8 time steps of the 3-D heat equation (paper's heat3d, fixed border), on
  128 x 256 x 256 float32 (8.4 M points, about the 7.4 M pixels of a 2112 x 3520 image),
  time folded into 2 planes (``t % 2``).
* ``edgeDetector``: ring blur then Roberts edges written back into the image (the cyclic
  dataflow), 2112 x 3520 x 3 float32.

Our kernels use the tuned schedules of ``middleend/examples_beyond.py`` and constant sizes;
they are compiled once, outside the timing, and checked against the anchor first. The
anchors are the numpy references of that module: vectorized slicing expressions, in place
where numpy allows, summing in the kernels' order. Timing: ``common.best_of_interleaved``
(each call allocates its outputs, on both sides). ratio = numpy ms / ours ms (> 1: ours
is faster). ``--variants`` also times the other schedules of each program.

    python benchmarks/halide/beyond.py [--reps N] [--variants]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: common

import common  # noqa: E402  (also puts the repository root on sys.path)
import numpy as np  # noqa: E402
from common import best_of_interleaved, check_close, print_table  # noqa: E402

from middleend.api import examples_beyond as eb  # noqa: E402

ROWS, COLS = 2112, 3520
HEAT_SHAPE = (128, 256, 256)
HEAT_STEPS = 8


def _ticket_blocked(p: eb.Ticket2373) -> None:
    """(y, x_vo, r, x_vi): r between the vector blocks and the lanes."""
    p.acc.vectorize("x", 16)
    p.acc.interchange("x_vi", "r")
    p.out.vectorize("x", 16)
    p.acc.after(p.out, "y")
    p.out.parallelize("y")


Schedules = dict[str, Callable[[Any], object]]


@dataclass(frozen=True)
class Program:
    """One benchmark: its builder, its schedules by name ("tuned" is the one of ``rows``),
    the kernel's arguments, the anchor and how to find the anchor's result in ours."""

    name: str
    build: Callable[[], Any]
    schedules: Schedules
    data: dict[str, np.ndarray]
    anchor: Callable[[], np.ndarray]
    output: Callable[[dict[str, np.ndarray]], np.ndarray]

    def kernel(self, schedule: str) -> Callable[[], dict[str, np.ndarray]]:
        """Compile (outside any timing) and check against the anchor; a call runs it."""
        p = self.build()
        self.schedules[schedule](p)
        k = p.fn.compile(target="cpu")

        def run() -> dict[str, np.ndarray]:
            return k(**self.data)  # type: ignore[no-any-return]

        check_close(f"{self.name} {schedule}", self.output(run()), self.anchor())
        return run


def programs() -> list[Program]:
    """The three programs at the papers' sizes, with seeded random inputs."""
    rng = np.random.default_rng(0)
    img2 = rng.random((ROWS, COLS), dtype=np.float32)
    vol = rng.random(HEAT_SHAPE, dtype=np.float32)
    rgb = rng.random((ROWS, COLS, 3), dtype=np.float32)
    last = (HEAT_STEPS - 1) % 2
    return [
        Program("ticket2373", lambda: eb.ticket2373((ROWS, COLS)),
                {"tuned": eb.schedule_ticket2373, "default": lambda p: None,
                 "blocked": _ticket_blocked},
                {"inp": img2}, lambda: eb.ticket2373_ref(img2), lambda o: o["out"]),
        Program("heat3d", lambda: eb.heat3d(HEAT_SHAPE, HEAT_STEPS),
                {"tuned": eb.schedule_heat3d, "default": lambda p: None,
                 "y_strips_8": lambda p: eb.schedule_heat3d(p, ty=8)},
                {"inp": vol}, lambda: eb.heat3d_ref(vol, HEAT_STEPS),
                lambda o: o["buf"][last]),
        Program("edgeDetector", lambda: eb.edge_detector((ROWS, COLS)),
                {"tuned": eb.schedule_edge_detector, "default": lambda p: None,
                 "parallel_3_passes": eb.schedule_edge_parallel},
                {"inp": rgb}, lambda: eb.edge_detector_ref(rgb), lambda o: o["Img"]),
    ]


def rows(reps: int) -> list[tuple[str, float, float]]:
    """(benchmark, ours ms, numpy ms) per program, ours with its tuned schedule."""
    out = []
    for prog in programs():
        ours = prog.kernel("tuned")
        best = best_of_interleaved({"ours": ours, "numpy": prog.anchor}, reps)
        out.append((prog.name, best["ours"] * 1e3, best["numpy"] * 1e3))
    return out


def variants(reps: int) -> list[list[str]]:
    """Every schedule of every program against the same anchor (table rows)."""
    table = []
    for prog in programs():
        calls = {name: prog.kernel(name) for name in prog.schedules}
        best = best_of_interleaved({**calls, "numpy": prog.anchor}, reps)
        for name in prog.schedules:
            table.append([prog.name, name, f"{best[name] * 1e3:.2f}",
                          f"{best['numpy'] * 1e3:.2f}", f"{best['numpy'] / best[name]:.2f}"])
    return table


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0],
                             {"--variants": "also time the other schedules of each program"})
    table = [[n, f"{o:.2f}", f"{a:.2f}", f"{a / o:.2f}"] for n, o, a in rows(args.reps)]
    print_table(f"Beyond Halide, tuned schedules, best of {args.reps} (ratio = numpy / ours)",
                ["benchmark", "ours ms", "numpy ms", "ratio"], table)
    if args.variants:
        print_table("Beyond Halide, every schedule (ratio = numpy / ours)",
                    ["benchmark", "schedule", "ours ms", "numpy ms", "ratio"],
                    variants(args.reps))


if __name__ == "__main__":
    main()
