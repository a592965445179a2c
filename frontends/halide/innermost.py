"""Where Halide computes an unscheduled Func with update definitions: at the innermost loop
of its consumer.

Such a Func cannot be inlined (an inline reduction, ``hl.sum(g[x + r])``, is one: an
anonymous Func with a pure definition and an update), so Halide computes it at the innermost
loop of the stage that calls it. The translator computes it at root instead (the same
values, one buffer), except where that placement would read a Func the schedule computes
at a loop of the consumer: ``g.compute_at(out, y)`` read by ``hl.sum`` inside ``out``
(the max filter, resize, Harris, non-local means apps) is legal in Halide, and at root the
sum would read ``g`` outside the loop where it exists. For those Funcs this module writes
Halide's placement into the pipeline: ``compute_at(consumer, innermost loop)`` of the one
consumer stage that calls it (directly or through inlined Funcs). A Func read by several
stages, or several Funcs, keeps the root placement (and its refusal, if any).
"""

from __future__ import annotations

import dataclasses

from frontends.halide.graph import definitions, exprs_of, producer_order, walk
from frontends.halide.hir import HFunc, HLoopLevel, HPipeline


def _calls(d_func: HFunc, k: int) -> set[str]:
    out: set[str] = set()
    for root in exprs_of(definitions(d_func)[k]):
        for n in walk(root):
            if n.kind == "Call" and n.call_type == "Halide" and n.name != d_func.name:
                out.add(n.name)
    return out


def innermost_reductions(hp: HPipeline, outputs: list[str]) -> HPipeline:
    """``hp`` with each unscheduled Func with updates that reads (directly or through
    inlined Funcs) a Func computed at a loop placed at the innermost loop of the one
    consumer stage that calls it, as Halide places it; ``hp`` itself when there is none."""
    order = producer_order(hp, outputs)
    funcs = dict(hp.funcs_by_name)

    def level(f: HFunc) -> HLoopLevel:
        return f.schedule.compute_level

    def inline(name: str) -> bool:
        f = funcs[name]
        return level(f).is_inlined and not f.updates and name not in outputs and \
            not f.extern_function_name

    def reached(name: str, k: int) -> set[str]:
        """The Funcs stage ``k`` of ``name`` calls, looking through inlined Funcs."""
        got: set[str] = set()
        todo = list(_calls(funcs[name], k))
        while todo:
            c = todo.pop()
            if c in got:
                continue
            got.add(c)
            if inline(c):
                todo.extend(_calls(funcs[c], 0))
        return got

    def at_a_loop(name: str) -> bool:
        cl = level(funcs[name])
        return not (cl.is_inlined or cl.is_root or cl.is_outermost)

    changed = False
    for name in reversed(order):  # consumers first: a sum of a sum follows its consumer
        f = funcs[name]
        if name in outputs or not f.updates or not level(f).is_inlined or \
                f.extern_function_name:
            continue
        if not any(at_a_loop(c) for k in range(len(definitions(f)))
                   for c in reached(name, k)):
            continue
        readers = [(g, k) for g in order if g != name and not inline(g)
                   for k in range(len(definitions(funcs[g]))) if name in reached(g, k)]
        if len(readers) != 1:
            continue
        g, k = readers[0]
        dims = definitions(funcs[g])[k].schedule.dims
        if not dims:
            continue
        at = HLoopLevel(g, k, dims[0].var, False, False)
        funcs[name] = dataclasses.replace(
            f, schedule=dataclasses.replace(f.schedule, compute_level=at))
        changed = True
    if not changed:
        return hp
    new = tuple(funcs[f.name] for f in hp.funcs)
    return dataclasses.replace(hp, funcs=new, funcs_by_name={f.name: f for f in new})
