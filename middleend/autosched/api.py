"""``auto_schedule(fn, target=...)``: the entry point (``Function.auto_schedule`` calls it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..driver.summary import Summary, estimates_for, summarize
from ..driver.targets import TargetRegistry
from ..ir import commands as cmd
from ..ir.errors import DefinitionError
from ..ir.function import Function
from . import expand, store
from .cost import MachineModel
from .placement import At, place
from .result import AutoSchedule, Stored, python_line
from .search import Searched, _Checker, search
from .tune import tune as run_tuning

MAPPED = ("cpu", "gpu", "mpi", "fpga")  # the targets auto_schedule maps programs onto
# a compile to time candidates with: (the Function with a candidate's commands) -> kernel
Compile = Callable[[Function], Any]


def _budget(budget: float | None) -> float | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
        raise DefinitionError(f"auto_schedule: budget must be a positive number of seconds, "
                              f"got {budget!r}")
    return float(budget)


def machine_model(target: str, cores: int | None = None) -> MachineModel:
    """The cost model's view of ``target``'s machine (a target that describes none: a
    plain vector machine)."""
    if not isinstance(target, str):
        raise DefinitionError(f"auto_schedule: target must be a target name, got {target!r}")
    t = TargetRegistry.discover().lookup(target)  # an unknown name: the registry's error
    if target not in MAPPED:
        raise DefinitionError(f"auto_schedule: no automatic schedule for the {target!r} "
                              f"target yet (it schedules for {', '.join(MAPPED)})")
    return MachineModel.of(t.machine() if target == "cpu" else None, cores)


def _estimate(found: Searched) -> float:
    return sum(c.estimate for c in found.choices)


def _expanded(fn: Function, found: Searched, m: MachineModel, outputs: Sequence[Any] | None,
              est: Mapping[str, int], deadline: float | None, summary: Summary,
              base: list[cmd.Command], check: _Checker, placed: Sequence[At],
              cached: Mapping[str, Any] | None, notes: list[str]) -> Searched:
    """``found``, or the search's result with an array expansion (:mod:`.expand`) where
    the model estimates that lower; an expansion the middle-end refuses (a value would
    cross the loops' iterations) is not searched."""
    for e in expand.candidates(fn, summary, fn._names()):
        if deadline is not None and time.monotonic() > deadline:
            break
        trial = [*base, e]
        if not check.legal(trial):
            continue
        got = search(fn, m, outputs, est, deadline, summarize(fn, est, outputs, trial),
                     trial, check, placed, "cpu", prefer=cached)
        if _estimate(got) < _estimate(found):
            notes.append(f"{python_line(e)}: one copy of {e.comp!r} per iteration of those "
                         f"loops (the model: {_estimate(got):.3g} cycles, "
                         f"{_estimate(found):.3g} without)")
            found, base = got, trial
    return found


def auto_schedule(fn: Function, target: str = "cpu", outputs: Sequence[Any] | None = None,
                  estimates: Mapping[str, int] | None = None, budget: float | None = None,
                  apply: bool = True, tune: Compile | None = None,
                  inputs: Mapping[str, Any] | None = None,
                  ranks: int | str | None = None) -> AutoSchedule:
    """Choose a schedule for ``fn`` on ``target`` and (``apply``) make it ``fn``'s.

    ``estimates``: a value per parameter for the cost model (default: each Param's
    ``max`` if small, else 1024). ``budget``: seconds the search may take (it stops
    trying new candidates then; the best legal ones so far are kept). ``tune``: a compile
    (Function -> kernel) to time the best few candidates with on ``inputs`` (the arrays by
    buffer name, at the sizes that matter); see :mod:`.tune`. ``ranks``: the mpi
    target's (a number, or "runtime"), which its distribution's blocks follow."""
    if not isinstance(fn, Function):
        raise DefinitionError(f"auto_schedule takes a me.Function, got {type(fn).__name__}")
    limit = _budget(budget)
    t0 = time.monotonic()
    m = machine_model(target)
    est = estimates_for(fn, estimates)
    deadline = None if limit is None else t0 + limit
    notes: list[str] = []
    stored = cached = None
    if tune is not None:  # the program as given: placement may add buffers to it
        stored = store.key(fn, outputs, target, m, est, inputs or {})
        cached = store.load(stored)
    had = {b.name for b in fn.buffers}
    inlined = [c.comp for c in fn.commands.items if isinstance(c, cmd.Inline)]
    base, placed, summary = place(fn, list(fn.commands.items), m, outputs, est, deadline,
                                  notes, per_tile=target == "cpu")
    summary = summary or summarize(fn, est, outputs, base)
    if target == "mpi" and ranks is None:
        raise DefinitionError("auto_schedule for mpi: give ranks= (the number the kernel "
                              "runs on, or 'runtime'), as the mpi target takes it")
    check = _Checker(fn, outputs, ranks=ranks if target == "mpi" else None)
    found = search(fn, m, outputs, est, deadline, summary, base, check, placed, target,
                   prefer=cached, ranks=ranks)
    if target == "cpu":
        found = _expanded(fn, found, m, outputs, est, deadline, summary, base, check, placed,
                          cached, notes)
    found.notes[:0] = notes
    measured: dict[str, float] = {}
    if tune is not None and cached is None and target == "cpu":
        found, measured = run_tuning(fn, found, tune, inputs or {}, summary, m, outputs,
                                     deadline)
        if stored is not None and not any("deadline" in n for n in found.notes):
            # a fused group's plan is the model's again next time (fuse.py), not forced
            store.save(stored, {c.stmt: c.plan for c in found.choices
                                if c.plan and not c.group})
    made = {b.name: b for b in fn.buffers if b.name not in had}
    stores = [Stored(c, made[c.buffer], tuple(v.name for v in fn.computation(c.comp).vars))
              for c in found.commands if isinstance(c, cmd.StoreIn) and c.buffer in made]
    still = {c.comp for c in found.commands if isinstance(c, cmd.Inline)}
    own = fn.commands.items
    added = [c for c in found.commands if isinstance(c, cmd.StorageFold)
             and not any(c is x for x in own)]
    result = AutoSchedule(fn.name, target, found.commands, found.choices,
                          time.monotonic() - t0, found.checks, found.notes,
                          tuned=tune is not None, measured=measured,
                          from_cache=cached is not None, stores=stores,
                          uninlined=[p for p in dict.fromkeys(inlined) if p not in still],
                          added=added)
    if apply:
        result.apply(fn)
    return result
