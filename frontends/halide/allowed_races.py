"""``allow_race_conditions()``: which of Halide's racy schedules give Halide's values here.

Halide refuses, when the schedule is written, a parallel or vectorized loop over an RVar it
cannot prove race-free ("may introduce a race condition"), unless the stage says
``atomic()`` or ``allow_race_conditions()``. The latter only silences that check: Halide
then runs the loop as scheduled, and where instances really race its result depends on
the threads' timing (parallel) or on which lane's store lands last (vectorized). Halide's
check is syntactic and conservative, so many such schedules have no race at all
(``f[2 * r.x + 1] = ...``, a histogram of distinct bins).

Here the directive needs no translation: the middle-end's legality check decides exactly.
A schedule it proves race-free runs, with Halide's values (deterministic in both). One it
refuses because a parallel or vector loop carries a dependence is a real race, whose
result Halide does not define, so it cannot be matched by construction: that refusal is
turned into one line naming the Func, the stage, the loop and the dependence, and what to
write instead. Every other legality error passes through unchanged.
"""

from __future__ import annotations

import re

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import definitions
from frontends.halide.hir import HPipeline
from frontends.halide.translate import Built
from middleend import ScheduleError

_CARRIED = re.compile(r"is tagged (\S+) but carries a dependence between its iterations")


def race_refusal(pipeline: HPipeline, built: Built,
                 err: ScheduleError) -> UnsupportedHalideFeature | None:
    """The one-line refusal of a racing loop in a stage with ``allow_race_conditions()``,
    from the legality check's ``err``; None when ``err`` is about something else (it is
    then raised as it is)."""
    m = _CARRIED.search(str(err))
    if m is None or not err.dependence:
        return None
    for comp in err.computations:
        where = built.stages.get(comp)
        if where is None:
            continue
        func, k = where
        if not definitions(pipeline.func(func))[k].schedule.allow_race_conditions:
            continue
        loop = err.level or "?"
        halide = {ours: h for h, ours in built.loops.get(func, [{}] * (k + 1))[k].items()}
        return UnsupportedHalideFeature(
            func, k, f"allow_race_conditions() where the {m.group(1)} loop "
            f"{halide.get(loop, loop)!r} races (its iterations carry the dependence "
            f"{' '.join(err.dependence.split())}), so Halide's result depends on how the "
            "race runs and cannot be matched; make the update atomic() (an associative "
            "update) or leave that loop serial")
    return None
