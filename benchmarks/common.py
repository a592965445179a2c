"""Shared helpers of the benchmarks: import path, timing, result checks and tables.

Timing rule: every benchmark times our kernel and its anchor (numpy) in the same process,
on the same data, alternating between them (see :func:`best_of_interleaved`), and keeps the
best of N timed calls after a warm-up call. On a shared machine the absolute times are
noise; the ratios are the result.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # make `import middleend` work for `python benchmarks/x.py`
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

DEFAULT_REPS = 10
MIN_REPS = 5
# seconds of untimed calls that open each candidate's turn (samples_interleaved)
SETTLE_S = 0.3


@dataclass(frozen=True)
class SummaryRow:
    """One line of the run_all summary: ``ratio`` is always "higher is better for ours"."""

    benchmark: str
    metric: str
    ours: str
    anchor: str
    ratio: str
    note: str = ""


def samples_interleaved(fns: Mapping[str, Callable[[], object]], reps: int = DEFAULT_REPS,
                        rounds: int = 2, warmup: int = 1,
                        clock: Callable[[], float] = time.perf_counter,
                        settle_s: float = SETTLE_S) -> dict[str, list[float]]:
    """Every timed wall time (seconds, ``clock``: ``time.perf_counter``; ``time.thread_time``
    gives the calling thread's CPU time, for single-threaded runs on a loaded machine) of
    each callable, ``reps`` calls each (at least ``MIN_REPS``), in the order they ran.

    The calls are spread over ``rounds`` rounds; in each round every callable runs in turn,
    ``warmup`` untimed calls then its share of the timed calls. Alternating between the
    candidates lets a burst of load on the shared machine hit all of them alike, and the
    untimed calls at the start of each turn absorb the previous candidate's tail: at least
    ``warmup`` of them, and more until ``settle_s`` seconds (wall) have passed in the turn.
    The count alone was not enough: numpy's OpenBLAS workers busy-wait about 2^28 cycles
    (0.1 s) after a call, and took a core from the next candidate's timed calls of 1 ms
    (atax: ours 1.76x numpy with one warm-up call, the same code 1.08x single-threaded)."""
    reps = max(reps, MIN_REPS)
    rounds = max(1, min(rounds, reps))
    per_round = [reps // rounds + (1 if r < reps % rounds else 0) for r in range(rounds)]
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for count in per_round:
        for name, fn in fns.items():
            start, n = time.perf_counter(), 0
            while n < warmup or time.perf_counter() - start < settle_s:
                fn()
                n += 1
            for _ in range(count):
                t0 = clock()
                fn()
                samples[name].append(clock() - t0)
    return samples


def best_of_interleaved(fns: Mapping[str, Callable[[], object]], reps: int = DEFAULT_REPS,
                        rounds: int = 2, warmup: int = 1) -> dict[str, float]:
    """Best wall time (seconds) of each callable over ``reps`` interleaved calls (the
    minimum of :func:`samples_interleaved`)."""
    return {name: min(v) for name, v in
            samples_interleaved(fns, reps, rounds, warmup).items()}


def spread(samples: Sequence[float]) -> float:
    """How far a typical call is from the best one: (median - best) / best (0.05: the
    median call took 5 % longer than the best)."""
    best = min(samples)
    return (float(np.median(samples)) - best) / best


def median_ratio(ours: Sequence[float], anchor: Sequence[float]) -> float:
    """Median of our samples over the anchor's: the figure to read with ``--busy``, where
    the best call of each side is whichever one the scheduler happened to leave alone."""
    return float(np.median(ours)) / float(np.median(anchor))


BUSY_HELP = ("run with a busy neighbour: one process spinning at normal priority for the "
             "whole run, so that the threads of both sides compete for the cores with it; "
             "read the median ratio")


@contextlib.contextmanager
def busy_neighbour(on: bool) -> Iterator[None]:
    """``--busy``: a process that spins (``while True: pass``) at the benchmark's own
    priority while the body runs. Users' machines are rarely idle, and a runtime whose
    threads spin or wait for a descheduled thread loses much more there than on a quiet
    machine; the benchmark starts the neighbour itself so that the figure can be
    reproduced with one command."""
    if not on:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it start spinning before anything is timed
        yield
    finally:
        proc.kill()
        proc.wait()


def best_of(fn: Callable[[], object], reps: int = DEFAULT_REPS, warmup: int = 1) -> float:
    """Best wall time of ``fn`` alone (for things without an anchor, e.g. lowering)."""
    return best_of_interleaved({"fn": fn}, reps, rounds=1, warmup=warmup)["fn"]


def check_close(what: str, ours: np.ndarray, anchor: np.ndarray, rtol: float = 1e-5,
                atol: float = 1e-6) -> None:
    """Raise AssertionError unless ``ours`` equals the anchor's result (np.allclose)."""
    if ours.shape != anchor.shape:
        raise AssertionError(f"{what}: shape {ours.shape} != anchor's {anchor.shape}")
    if not np.allclose(ours, anchor, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(ours.astype(np.float64) - anchor)))
        raise AssertionError(f"{what}: result differs from the anchor (max abs err {err:g})")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table; the first column is left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                         for k, (c, w) in enumerate(zip(r, widths, strict=True)))

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:])])


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    print(f"\n== {title} ==")
    print(format_table(headers, rows), flush=True)


def print_summary(rows: Sequence[SummaryRow]) -> None:
    print_table("summary (ratio > 1: ours is better)",
                ["benchmark", "metric", "ours", "anchor", "ratio", "note"],
                [(r.benchmark, r.metric, r.ours, r.anchor, r.ratio, r.note) for r in rows])


def short_error(exc: BaseException, limit: int = 110) -> str:
    """First line of an exception, shortened for a table cell."""
    msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


def arg_parser(description: str, flags: Mapping[str, str] | None = None
               ) -> argparse.ArgumentParser:
    """The common command line: ``--reps N`` (best of N rounds, N >= 5) plus the boolean
    ``flags`` (``{"--name": "help"}``); add a script's own arguments to it."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--reps", type=int, default=DEFAULT_REPS,
                   help=f"timed rounds, best kept (>= {MIN_REPS}; default {DEFAULT_REPS})")
    for flag, help_text in (flags or {}).items():
        p.add_argument(flag, action="store_true", help=help_text)
    return p


def parse_args(description: str, flags: Mapping[str, str] | None = None
               ) -> argparse.Namespace:
    """:func:`arg_parser`'s arguments, parsed."""
    return arg_parser(description, flags).parse_args()
