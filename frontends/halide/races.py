"""Halide's refusal of storage shared by the iterations of a parallel loop.

A Func stored (``store_at``) or hoisted (``hoist_storage``) at one loop and computed
(``compute_at``) at a loop inside it has one buffer for every iteration of the loops in
between: if one of them runs its iterations at once (parallel, vectorized, a GPU block,
thread or lane loop), they write the same buffer together. Halide refuses such a schedule
("stored outside the parallel/vectorized/gpu_block loop over ... but computed within it.
This is a potential race condition."), checking every loop from just inside the storage
level down to the compute level, that loop included, among the loops around the Func's
uses (those of its consumer's stage, and, for storage at root, those the consumer is
itself computed in). The same loops are checked here and the same schedules refused, in
one line; a Func stored where it is computed (the default) is never refused, even at a
vector loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import definitions
from frontends.halide.ring import loop_position, where_text
from middleend import ScheduleError

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo, Translator

# Halide's is_parallel(ForType)
_CONCURRENT = {"Parallel": "parallel", "Vectorized": "vectorized", "GPUBlock": "gpu_block",
               "GPUThread": "gpu_thread", "GPULane": "gpu_lane"}

Loop = tuple[str, str, str]  # (Func, Halide loop name, for_type), outermost first


def check_races(tr: Translator, fi: FuncInfo) -> None:
    """Refuse, as Halide does, a compute_at Func whose storage (store level, then hoist
    level) is outside a concurrent loop it is computed in."""
    f = fi.f
    s = f.schedule
    cl = s.compute_level
    if cl.is_inlined or cl.is_root or cl.is_outermost:
        return
    sl = cl if s.store_level.is_inlined else s.store_level
    levels = [("is stored", sl)]
    if not s.hoist_storage_level.is_inlined:
        levels.append(("storage is hoisted", s.hoist_storage_level))
    for r_site in tr.placement.stages(f.name):
        loops = _stage_loops(tr, f.name, cl.func_name, r_site)
        inner = _position(f.name, loops, cl.func_name, cl.var_name)
        for what, lv in levels:
            if lv.is_root:
                outer, around = -1, _enclosing(tr, cl.func_name)
            elif lv.is_outermost:
                outer, around = -1, []
            elif lv.func_name != cl.func_name:
                continue  # refused where the Func is placed (different Funcs)
            else:
                outer, around = _position(f.name, loops, lv.func_name, lv.var_name), []
            for func, var, kind in [*around, *loops[outer + 1:inner + 1]]:
                if kind in _CONCURRENT:
                    verb = "store" if what == "is stored" else "hoist"
                    raise ScheduleError(
                        f"Func {f.name!r} {what} outside the {_CONCURRENT[kind]} loop "
                        f"{func}.{var.rsplit('.', 1)[-1]} (at {where_text(lv)}) but computed "
                        f"within it (at {cl.func_name}.{cl.var_name}): a potential race "
                        f"condition, which Halide refuses too; {verb} it at that loop or "
                        "inside it (the default: where it is computed)")


def _stage_loops(tr: Translator, producer: str, func: str, stage: int) -> list[Loop]:
    ci = tr.info[func]
    if stage >= len(ci.plans):
        raise UnsupportedHalideFeature(producer, None, f"compute_at a stage of {func!r} "
                                       "that has no loops")
    kinds = {dm.var: dm.for_type for dm in definitions(ci.f)[stage].schedule.dims}
    return [(func, h, kinds.get(h, "Serial")) for h in ci.plans[stage].order]


def _enclosing(tr: Translator, func: str) -> list[Loop]:
    """The loops around every realization of ``func`` (those it is computed in, outermost
    first; none for a Func computed at root)."""
    cl = tr.info[func].f.schedule.compute_level
    if cl.is_inlined or cl.is_root or cl.is_outermost or cl.func_name not in tr.info:
        return []
    out: list[Loop] = []
    for site in tr.placement.stages(func):
        loops = _stage_loops(tr, func, cl.func_name, site)
        out += loops[:_position(func, loops, cl.func_name, cl.var_name) + 1]
    return _enclosing(tr, cl.func_name) + out


def _position(producer: str, loops: list[Loop], func: str, var: str) -> int:
    names = [h for _, h, _ in loops]
    at = loop_position(names, var)
    if at is None:
        raise UnsupportedHalideFeature(producer, None, f"compute_at/store_at loop {var!r} "
                                       f"of {func!r}: the loops are {names}")
    return at
