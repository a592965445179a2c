"""Autotuning: build and time the model's best few legal plans per statement, keep the
fastest.

The model ranks; it cannot tell a 10 % difference from noise in its own assumptions
(prefetchers, what gcc makes of an unrolled block). So, statement by statement (the ones
the model thinks costliest first, those above 5 % of its total), the best
:data:`PER_STMT` legal candidates are each compiled into the whole program, with the other
statements' current choices, and timed on the caller's inputs: best of :data:`REPS` calls
after one warm-up, every candidate on fresh copies of the inputs (an in-place update must
not drift into denormals between candidates). The choice as it stood is one of the timed
candidates, and another replaces it only when measured :data:`MARGIN` faster: a call of a
few milliseconds moves by more than that between runs, and a tuning that trades the
model's choice for noise makes the program slower (bicg did, once). A deadline stops it
between two builds; what was measured so far is kept. The outcome is stored by the
program's content hash (:mod:`.store`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..driver.lowering import check_commands
from ..driver.summary import Summary
from ..ir import commands as cmd
from ..ir.errors import MiddleEndError
from ..ir.function import Function
from .cost import MachineModel
from .pack import of_command, relayout
from .plan import commands
from .search import Searched
from .space import ranked

PER_STMT = 4  # legal candidates timed per statement
REPS = 5
MIN_SHARE = 0.05  # statements below this share of the model's total are not tuned
MARGIN = 0.95  # another plan replaces the model's choice only if measured 5 % faster
SCAN = 24  # ranked candidates looked at per statement to find PER_STMT legal ones


def _time(kernel: Any, inputs: Mapping[str, Any]) -> float:
    fresh = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    kernel(**fresh)
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        kernel(**fresh)
        best = min(best, time.perf_counter() - t0)
    return best


def _build(fn: Function, commands_: list[cmd.Command], compile_: Callable[[Function], Any]
           ) -> Any:
    saved = fn.commands.items
    fn.commands.items = list(commands_)
    try:
        return compile_(fn)
    finally:
        fn.commands.items = saved


def _progress(done: int, total: int, what: str, stream: Any) -> None:
    """A bar redrawn in place on a terminal; elsewhere (a log) a line per build."""
    if stream is None:
        return
    if not (hasattr(stream, "isatty") and stream.isatty()):
        stream.write(f"  tuning {done + 1}/{total}: {what}\n")
        stream.flush()
        return
    width = 24
    filled = width * done // max(total, 1)
    stream.write(f"\r  tuning [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what}"
                 + " " * 8)
    stream.flush()


def tune(fn: Function, found: Searched, compile_: Callable[[Function], Any],
         inputs: Mapping[str, Any], summary: Summary, m: MachineModel,
         outputs: Sequence[Any] | None, deadline: float | None,
         progress: Any = sys.stderr) -> tuple[Searched, dict[str, float]]:
    """``found`` with each statement's fastest measured plan; and the times measured
    (candidate label -> seconds) for the report."""
    total = sum(c.estimate / max(1, len(c.group)) for c in found.choices)  # a group's once
    # the statements that matter: a fill of a vector is not worth a build; a group in one
    # loop nest (fuse.py) keeps its joint plan (a member's own plan would split the nest)
    order = sorted((c for c in found.choices if c.plan is not None and not c.group
                    and c.estimate >= MIN_SHARE * total), key=lambda c: -c.estimate)
    plans: dict[str, list[tuple[float, Any, list[cmd.Command]]]] = {}
    checks = 0
    for ch in order:
        st = summary.stmt(ch.stmt)
        # a packed operand (pack.py) stays packed: the candidates read the same copy,
        # made by the same loops (the copy's own commands: Packing.commands)
        copies = [c for c in found.blocks[ch.stmt] if isinstance(c, cmd.CopyAt)]
        ops = {c.name for c in copies}
        pre = [c for c in found.blocks[ch.stmt] if c in copies or c.comp in ops]
        seen = st
        for c in copies:
            seen = relayout(seen, of_command(c))
        legal: list[tuple[float, Any, list[cmd.Command]]] = []
        for est, p in ranked(seen, ch.shared, m)[:SCAN]:
            if len(legal) >= PER_STMT:
                break
            if p == ch.plan:
                legal.append((est, p, list(found.blocks[ch.stmt])))
                continue
            block = pre + commands(st, ch.shared, p)
            checks += 1
            try:
                check_commands(fn, found.with_block(ch.stmt, block), outputs)
            except MiddleEndError:
                continue
            legal.append((est, p, block))
        plans[ch.stmt] = legal
    total = sum(len(v) for v in plans.values())
    done, times = 0, {}
    choices = {c.stmt: c for c in found.choices}
    for ch in order:
        best_t, best = float("inf"), None
        kept: tuple[float, tuple[float, Any, list[cmd.Command]]] | None = None
        for est, p, block in plans[ch.stmt]:
            if deadline is not None and time.monotonic() > deadline:
                found.notes.append(f"tuning stopped at its deadline ({done}/{total} built)")
                break
            _progress(done, total, f"{ch.stmt}: {p.describe()}"[:60], progress)
            t = _time(_build(fn, found.with_block(ch.stmt, block), compile_), inputs)
            done += 1
            times[f"{ch.stmt}: {p.describe()}"] = t
            if p == ch.plan:
                kept = (t, (est, p, block))
            if t < best_t:
                best_t, best = t, (est, p, block)
        if best is not None and kept is not None and best_t > MARGIN * kept[0]:
            best = kept[1]  # within the noise of the model's own choice: keep it
        if best is not None:
            found.blocks[ch.stmt] = best[2]
            choices[ch.stmt] = replace(choices[ch.stmt], plan=best[1], estimate=best[0])
        if deadline is not None and time.monotonic() > deadline:
            break
    if progress is not None and total and hasattr(progress, "isatty") and progress.isatty():
        progress.write("\n")
    found.choices = [choices[c.stmt] for c in found.choices]
    found.checks += checks
    return found, times
