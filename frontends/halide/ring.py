"""Halide's ``ring_buffer(extent)``: Halide's checks, and where the storage goes.

In Halide, a Func computed at a loop whose storage is hoisted (``hoist_storage``) above its
store level gets ``extent`` copies of one realization's storage at the hoist level, the
copy used by a realization being the iteration of the loops between the two levels modulo
``extent``: an ``async`` producer fills the next copy while the consumer reads the current
one. Every read of a realization is made in the iteration of those loops that produced it,
so the values are those of one realization's own storage per iteration, whatever the
extent. ``async`` is a no-op here (:mod:`.noops`), so one copy is live at a time: the
front-end allocates the realization at its store level (storage of its own per
iteration, a stack array when its size is constant), the memory of one copy of the ring
instead of the hoisted region of every iteration that ``hoist_storage`` alone allocates.

What Halide refuses is refused here, in one line: a ring buffer whose hoist level is its
store level (no ``hoist_storage``, or a compute_root Func), and storage hoisted outside a
parallel or vectorized loop the Func is computed in (a race). A non-positive extent, which
Halide accepts and then computes garbage with, is refused too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import definitions
from frontends.halide.hir import HLoopLevel
from middleend import ScheduleError

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo, Translator


def where_text(lv: HLoopLevel) -> str:
    """A loop level as Halide's messages write it."""
    if lv.is_root:
        return "root"
    if lv.is_outermost:
        return f"{lv.func_name}, Var.outermost()"
    return f"{lv.func_name}.{lv.var_name}"


def _same(a: HLoopLevel, b: HLoopLevel) -> bool:
    if a.is_root or b.is_root:
        return a.is_root and b.is_root
    return (a.func_name, a.var_name) == (b.func_name, b.var_name) and \
        (a.stage_index == b.stage_index or -1 in (a.stage_index, b.stage_index))


def store_level(fi: FuncInfo) -> HLoopLevel:
    """Where a realization's storage is: store_at's level, compute_at's when not given."""
    s = fi.f.schedule
    return s.compute_level if s.store_level.is_inlined else s.store_level


def check_ring(tr: Translator, fi: FuncInfo) -> int:
    """The ring's extent, once Halide's conditions on it hold (see the module's text)."""
    f = fi.f
    s = f.schedule
    assert s.ring_buffer is not None
    n = tr._const(s.ring_buffer, f.name)
    if n < 1:
        raise ScheduleError(f"Func {f.name!r}: ring_buffer({n}): the extent must be a positive "
                            "integer (Halide's requirement; it computes garbage otherwise)")
    sl = store_level(fi)
    hs = sl if s.hoist_storage_level.is_inlined else s.hoist_storage_level
    if _same(hs, sl) or (s.compute_level.is_root and hs.is_root):
        raise ScheduleError(
            f"Func {f.name!r}: ring_buffer({n}) with its storage stored and hoisted at the "
            f"same level ({where_text(sl)}); Halide refuses this too: hoist the storage to an "
            "outer loop (hoist_storage(consumer, x) or hoist_storage_root())")
    if not hs.is_root and hs.func_name != sl.func_name:
        raise UnsupportedHalideFeature(f.name, None, "ring_buffer() with hoist_storage and "
                                       "store_at in different Funcs")
    if sl.is_root or sl.is_outermost:
        return n  # stored once, outside every loop: nothing between the levels
    ci = tr.info[sl.func_name]
    check_hoist(tr, fi)
    for site in tr.placement.stages(f.name):
        order = ci.plans[site].order
        dims = {dm.var: dm.for_type for dm in definitions(ci.f)[site].schedule.dims}
        lo = -1 if hs.is_root else _position(f.name, order, hs.var_name)
        hi = _position(f.name, order, s.compute_level.var_name)
        for h in order[lo + 1:hi + 1]:
            if dims.get(h, "Serial") in ("Parallel", "Vectorized", "GPUBlock"):
                raise ScheduleError(
                    f"Func {f.name!r}: ring_buffer({n}) with its storage hoisted "
                    f"({where_text(hs)}) outside the {dims[h].lower()} loop {sl.func_name}.{h} "
                    "it is computed in, a race; Halide refuses this too: hoist it inside "
                    "that loop, or do not hoist it")
    return n


def check_hoist(tr: Translator, fi: FuncInfo) -> None:
    """``hoist_storage`` at a loop of the Func it is stored in must be outside the store
    level (Halide: "computed at the following invalid location")."""
    s = fi.f.schedule
    hs, sl = s.hoist_storage_level, store_level(fi)
    if hs.is_inlined or hs.is_root or hs.is_outermost or sl.is_root or sl.is_outermost or \
            hs.func_name != sl.func_name:
        return
    ci = tr.info[sl.func_name]
    for site in tr.placement.stages(fi.f.name):
        order = ci.plans[site].order
        if _position(fi.f.name, order, hs.var_name) > _position(fi.f.name, order, sl.var_name):
            raise ScheduleError(
                f"Func {fi.f.name!r}: hoist_storage({where_text(hs)}) is inside its store level "
                f"({where_text(sl)}); Halide refuses this too (an invalid location): hoist the "
                "storage to the store loop or a loop outside it")


def loop_position(order: list[str], var: str) -> int | None:
    """Where loop ``var`` (a Var's name, or the last part of a stage loop's) stands in
    ``order``; None unless exactly one loop matches."""
    hits = [i for i, n in enumerate(order) if n == var]
    hits = hits or [i for i, n in enumerate(order) if n.endswith("." + var)]
    return hits[0] if len(hits) == 1 else None


def _position(func: str, order: list[str], var: str) -> int:
    at = loop_position(order, var)
    if at is None:
        raise UnsupportedHalideFeature(func, None, f"hoist_storage() or ring_buffer() at "
                                       f"loop {var!r}: the loops are {order}")
    return at
