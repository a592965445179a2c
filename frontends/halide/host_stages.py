"""Stages Halide runs on the host, given a device mapping of their own for the gpu target.

In a Halide pipeline compiled for a GPU, a loop nest runs on the device only where a
schedule maps a loop to GPU blocks or threads; every other stage (the unscheduled pure
definition of a histogram whose update is atomic on the GPU, a compute_root Func with no
GPU schedule, a reduction left serial) runs on the host, and Halide copies buffers between
the two as needed. Our gpu target runs every computation on the device, by design
(``backends/gpu/plan.py``), and refuses a host computation. So, for the gpu target, this
module gives each stage that Halide would run on the host a device mapping written into
the pipeline as Halide's own directives: its outermost loop, when that is a pure Var,
split into GPU blocks x threads (``gpu_tile``; the block size from the loop's extent, per
build: :mod:`.gpu_blocks`), else (a 0-d stage, or a stage whose
outermost loop is over an RDom) one GPU thread running the whole stage
(``gpu_single_thread()``, which splits Halide's ``__outermost`` loop). The values are the
same; only where they are computed differs, and the legality check still proves the
mapping (a pure Var of an update may run in parallel in Halide too).

A stage qualifies when its Func is computed at the root (an output, ``compute_root()``,
``compute_at(Var.outermost())``, or a Func with updates left unscheduled, which the
translator computes at root) and no loop of the stage is a GPU loop; its parallel and
vectorized loops run serially inside the thread (the same values: Halide's parallel and
vector loops must not change them either). A Func computed at a loop of a consumer runs
wherever that loop runs (inside the consumer's kernel when the loop is a GPU loop, or
inside it) and is left as scheduled. A Func at whose loops another Func is computed or
stored keeps its loops as they are (a compute_at names them) and runs in one GPU thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from frontends.halide.gpu_blocks import block_split, bound
from frontends.halide.graph import definitions, producer_order
from frontends.halide.hir import HDefinition, HDim, HExpr, HFunc, HPipeline, HSplit, HType
from frontends.halide.schedule import OUTERMOST

_GPU = "Default_GPU"
_DEVICE = ("GPUBlock", "GPUThread", "GPULane")
_HOST_ONLY = ("Parallel", "Vectorized")


def _int(v: int) -> HExpr:
    return HExpr("IntImm", HType("int", 32), value=v)


def _at_root(f: HFunc, outputs: list[str]) -> bool:
    cl = f.schedule.compute_level
    if cl.is_root or cl.is_outermost:
        return True
    return cl.is_inlined and (f.name in outputs or bool(f.updates))


def _mapped(d: HDefinition, single: bool, most: int) -> HDefinition:
    """``d`` with its outermost loop mapped to GPU blocks x threads (at most ``most`` per
    block), or (``single``, or no pure loop outermost) with one GPU thread running it."""
    st = d.schedule
    # host parallelism and SIMD have no meaning inside one GPU thread: the loops run serially
    dims = [dataclasses.replace(dm, for_type="Serial", device_api="None")
            if dm.for_type in _HOST_ONLY else dm for dm in st.dims]
    loops = [dm for dm in dims if dm.var != OUTERMOST]
    if loops and loops[-1].dim_type == "PureVar" and not single:
        v = loops[-1].var
        split = block_split(v, most)
        b, t = split.outer, split.inner
        i = dims.index(loops[-1])
        dims[i:i + 1] = [HDim(t, "GPUThread", _GPU, "PureVar"),
                         HDim(b, "GPUBlock", _GPU, "PureVar")]
        splits = (*st.splits, split)
    else:  # Halide's gpu_single_thread(): __outermost split twice by 1
        o, oo = f"{OUTERMOST}.{OUTERMOST}", f"{OUTERMOST}.{OUTERMOST}.{OUTERMOST}"
        t, b = f"{OUTERMOST}.__gpu_thread", f"{o}.__gpu_block"
        splits = (*st.splits,
                  HSplit(OUTERMOST, o, t, _int(1), False, "ShiftInwards", "SplitVar"),
                  HSplit(o, oo, b, _int(1), False, "RoundUp", "SplitVar"))
        dims = [dm for dm in dims if dm.var != OUTERMOST] + [
            HDim(t, "GPUThread", _GPU, "PureVar"), HDim(b, "GPUBlock", _GPU, "PureVar"),
            HDim(oo, "Serial", "None", "PureVar")]
    return dataclasses.replace(d, schedule=dataclasses.replace(
        st, splits=splits, dims=tuple(dims)))


def _on_host(d: HDefinition) -> bool:
    return not any(dm.for_type in _DEVICE for dm in d.schedule.dims)


def _map_tree(d: HDefinition, single: bool, most: int) -> HDefinition:
    """``d`` and each of its specializations, each mapped if it runs on the host."""
    specs = tuple(dataclasses.replace(s, definition=_map_tree(s.definition, single, most))
                  for s in d.specializations)
    out = _mapped(d, single, most) if _on_host(d) else d
    return dataclasses.replace(out, specializations=specs) if specs else out


def device_mapped(hp: HPipeline, outputs: list[str],
                  target_options: Mapping[str, Any] | None = None) -> HPipeline:
    """``hp`` with each stage Halide would run on the host mapped to the device (see the
    module docstring); ``hp`` itself when there is none. ``target_options``: the
    compile's, whose limit on threads per block the mapping keeps (:func:`.gpu_blocks.bound`)."""
    most = bound(target_options)
    order = producer_order(hp, outputs)
    hosts = {f.schedule.compute_level.func_name for f in hp.funcs} | {
        f.schedule.store_level.func_name for f in hp.funcs} | {
        f.schedule.hoist_storage_level.func_name for f in hp.funcs}
    funcs = dict(hp.funcs_by_name)
    changed = False
    for name in order:
        f = funcs[name]
        if f.extern_function_name or not _at_root(f, outputs):
            continue
        defs = definitions(f)
        new = [_map_tree(d, name in hosts, most) for d in defs]
        if all(a is b for a, b in zip(new, defs, strict=True)):
            continue
        funcs[name] = dataclasses.replace(f, init=new[0], updates=tuple(new[1:]))
        changed = True
    if not changed:
        return hp
    new_funcs = tuple(funcs[f.name] for f in hp.funcs)
    return dataclasses.replace(hp, funcs=new_funcs,
                               funcs_by_name={f.name: f for f in new_funcs})
