"""``Func.define_extern``: a pipeline split at its extern stages, on any target.

An extern stage is a C function the middle-end cannot look into, so it is not a Layer I
computation: the pipeline is cut there, and each part is an ordinary pipeline whose Layer I
is exact (``compile_pipeline`` of each part, through the middle-end). In every part, each
extern Func ``e`` is replaced by its stand-in, which reads an input image ``e_extern`` (one
per output of a Tuple extern) at ``x - m`` (``m``: the region's mins, index Params of the
build; :mod:`.extern_parts`):

* **downstream**: the requested outputs.
* **upstream**: per Func argument ``g`` of an extern, a part whose one output
  ``g_extern_in(x) = g(x + m)`` (a Tuple for a Tuple Func, whose elements are passed as
  buffers of their own, as Halide does, over the union of the regions the query asked of
  them, where Halide takes the first's) is realized over exactly the region the extern's
  bounds query asked for. An argument that is itself an extern's output is the part of
  that output the query asked for (no part of its own); an ImageParam or a constant Buffer
  is passed whole, checked to hold the region asked.
* **the extern calls**: the bounds query (every Func buffer's ``host`` NULL), then the real
  call, through the C printed by :mod:`frontends.halide.extern_call`.

Bounds propagate as in Halide, consumers first: the downstream part's bounds inference
(ISL) gives the region of each extern it reads; an extern's output region is the union of
what its consumers read (the box Halide computes for a ``compute_root`` stage), its bounds
query with that region gives the region of each input, and an upstream part's bounds
inference over that region gives what it reads of the externs before it. So in a chain
``B(A(...))`` B's query sets the region of A's output, which sets A's query. Then the
externs run producers first, and the downstream part last. Where an extern asks for an
input region that cannot be given (outside an ImageParam or a Buffer), or shrinks its
output below what is read, the call raises one line. Funcs used in several parts are
computed in each (the same values).

Schedules: an extern is computed at root (``compute_root()`` or no schedule: Halide's JIT
computes an unscheduled extern at its consumer's innermost loop, over each point's
region; the values are the same for an extern whose values do not depend on the region it
is asked for, which Halide assumes too, since it asks for overlapping regions).
``compute_at`` of an extern, or of a Func an extern reads, is computed at root with one
warning (:mod:`.extern_checks`). Refused in one line as Halide refuses them: an inlined
Func or extern read by an extern (in Halide's words), ``compute_at`` of an extern at a Func
that does not use it. Refused in one line as not run here: C++ name mangling, a non-host
device API, Expr arguments other than constants, Params, ImageParam sizes and arithmetic
of them (evaluated per call, as Halide does), and ``extra_schedule=``
(:func:`.pipeline._with_externs`). The externs are called here, on the host, between the
parts' kernels; every target's kernel takes and returns host arrays, so every target runs
such a pipeline (the parts' stages that Halide runs on the host are mapped to the device
where the target runs none there, as for a whole pipeline).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frontends.halide.arguments import realize_arguments
from frontends.halide.checks import Checks
from frontends.halide.evaluate import Env, Image, ScalarKind, evaluate
from frontends.halide.exprs import dtype_of
from frontends.halide.extern_call import BufferArg, ExternCall, ExternStageError, ScalarArg
from frontends.halide.extern_checks import at_a_loop, check_extern, scalar_type
from frontends.halide.extern_parts import Names, template, wrapper_of
from frontends.halide.graph import producer_order
from frontends.halide.hir import (
    HExpr,
    HExternArg,
    HFunc,
    HLoopLevel,
    HParameter,
    HPipeline,
    HType,
)
from frontends.halide.noops import warn_ignored
from frontends.halide.translate import Translator, _buffer_array

Region = list[tuple[int, int]]  # (min, extent) per dimension, Halide's order


def extern_funcs(hp: HPipeline, outputs: list[str]) -> list[str]:
    """The extern Funcs the outputs read, directly or through other externs' arguments,
    producers first."""
    return [n for n in _order(hp, outputs) if hp.func(n).extern_function_name]


def _order(hp: HPipeline, outputs: list[str]) -> list[str]:
    """:func:`producer_order` that also goes through the Func arguments of externs (an
    extern has no definition calling them)."""
    order: list[str] = []
    seen: set[str] = set()
    stack: list[tuple[str, bool]] = [(n, False) for n in reversed(outputs)]
    while stack:
        name, finished = stack.pop()
        if finished:
            order.append(name)
            continue
        if name in seen:
            continue
        seen.add(name)
        stack.append((name, True))
        f = hp.func(name)
        nxt = producer_order(hp, [name])[:-1] if not f.extern_function_name else [
            a.name for a in f.extern_arguments if a.kind == "Func"]
        stack += [(n, False) for n in reversed(nxt) if n not in seen]
    return order


@dataclass
class _Part:
    """One ordinary pipeline of the split: its kernel, the externs whose stand-ins it reads,
    its own mins Params (an upstream part's), and per specialization the regions it reads
    of those externs (its bounds inference, kept)."""

    kernel: Any
    reads: list[str]
    mins: list[str] = field(default_factory=list)
    boxes: dict[Any, list[Region]] = field(default_factory=dict)


@dataclass
class _Input:
    """One argument of an extern passing buffers (one per Tuple element of a Func)."""

    arg: HExternArg
    position: int  # among the extern's arguments
    types: list[HType]
    part: _Part | None = None  # a Func computed by a part of its own
    extern: bool = False  # the output of an extern before this one
    const: np.ndarray | None = None
    const_mins: list[int] = field(default_factory=list)


@dataclass
class _Extern:
    func: HFunc
    call: ExternCall
    inputs: list[_Input]
    scalars: list[HExpr]
    images: list[str]  # the stand-in's images, one per output
    mins: list[str]


@dataclass
class _Plan:
    """One extern's calls in one realization: its output region, the region asked of each
    input, the scalar arguments."""

    out_region: Region
    asked: list[Region]
    values: list[object]


def _hull(regions: Sequence[Region]) -> Region:
    """The box holding every non-empty region (the first one when all are empty)."""
    full = [r for r in regions if all(n > 0 for _, n in r)] or list(regions[:1])
    lo = [min(r[d][0] for r in full) for d in range(len(full[0]))]
    hi = [max(r[d][0] + r[d][1] for r in full) for d in range(len(full[0]))]
    return [(a, b - a) for a, b in zip(lo, hi, strict=True)]


def _rooted(g: HFunc) -> HFunc:
    """``g`` computed (and stored) at root: a Func an extern reads, in its upstream part."""
    root = HLoopLevel("", -1, "__root", False, False)
    s = dataclasses.replace(g.schedule, compute_level=root, store_level=root,
                            hoist_storage_level=root)
    return dataclasses.replace(g, schedule=s)


class ExternPipeline:
    """A pipeline with extern stages (the cpu target): ``realize`` like
    :class:`HalideKernel`, running the externs (each after the parts computing its
    inputs), then the downstream part."""

    def __init__(self, hp: HPipeline, outputs: list[str], checks: Checks,
                 make_kernel: Callable[[HPipeline, list[str]], Any]) -> None:
        self.outputs = outputs
        self.params = {p.name: p for p in hp.external_parameters}
        self.checks = checks
        self._kinds = {n: ScalarKind.of(p) for n, p in self.params.items() if not p.is_buffer}
        self._label = str(outputs)
        self._make = make_kernel
        names = Names(hp)
        base = dataclasses.replace(hp, requirements=())  # checked once, here
        externs = extern_funcs(hp, outputs)
        funcs = dict(base.funcs_by_name)
        self._standins: dict[str, tuple[HParameter, ...]] = {}
        images: dict[str, list[str]] = {}
        mins: dict[str, list[str]] = {}
        for e in externs:
            f = hp.func(e)
            check_extern(f, hp, lambda a, b: a in hp.funcs_by_name
                         and b in _order(hp, [a])[:-1])
            stem = names(f"{e}_extern")
            k = len(f.output_types)
            images[e] = [stem] if k == 1 else [names(f"{stem}{j}") for j in range(k)]
            mins[e] = [names(f"{stem}_min{d}") for d in range(len(f.args))]
            t = template(e, f.args, f.output_types, images[e], mins[e], -1)
            funcs[e] = t.func
            funcs.update({g.name: g for g in t.others})
            self._standins[e] = t.params
        self.externs = [self._extern(hp, base, funcs, names, hp.func(e), images[e], mins[e])
                        for e in externs]
        self._by_name = {ex.func.name: ex for ex in self.externs}
        self.down = self._part(base, funcs, {}, (), outputs)

    # ------------------------------------------------------------------------ building
    def _part(self, base: HPipeline, funcs: dict[str, HFunc], extra: dict[str, HFunc],
              own: Sequence[HParameter], outs: list[str]) -> _Part:
        """The part computing ``outs``: every extern replaced by its stand-in, with the
        parameters it needs (the pipeline's, the stand-ins' of the externs it reads,
        ``own``)."""
        every = {**funcs, **extra}
        hp = dataclasses.replace(base, funcs=tuple(every.values()), funcs_by_name=every)
        order = producer_order(hp, outs)
        reads = [n for n in order if n in self._standins]
        params = (*base.external_parameters, *(p for n in reads for p in self._standins[n]),
                  *own)
        hp = dataclasses.replace(hp, external_parameters=params)
        warn_ignored(hp, order)
        return _Part(self._make(hp, outs), reads, [p.name for p in own])

    def _extern(self, hp: HPipeline, base: HPipeline, funcs: dict[str, HFunc], names: Names,
                f: HFunc, images: list[str], mins: list[str]) -> _Extern:
        e = f.name
        index = {n: k for k, n in enumerate(hp.func_names_in_order)}
        inputs: list[_Input] = []
        sig: list[BufferArg | ScalarArg] = []
        scalars: list[HExpr] = []
        for k, a in enumerate(f.extern_arguments):
            if a.kind == "Expr":
                assert a.expr is not None
                t = scalar_type(f, a.expr, self.params)
                sig.append(ScalarArg(t.code, t.bits))
                scalars.append(a.expr)
                continue
            if a.kind == "Func":
                g = hp.func(a.name)
                inp = _Input(a, k, list(g.output_types), extern=bool(g.extern_function_name))
                if not inp.extern:
                    out = names(f"{e}_extern_in{k}")
                    omins = [names(f"{out}_min{d}") for d in range(len(g.args))]
                    srcs = [names(f"{out}_src{j}") for j in range(len(g.output_types))]
                    t = template(out, g.args, g.output_types, srcs, omins, 1)
                    w = wrapper_of(t.func, a.name, index.get(a.name, -1))
                    extra = {out: w, **({a.name: _rooted(g)} if at_a_loop(
                        g.schedule.compute_level) else {})}
                    own = [p for p in t.params if p.name in omins]
                    inp.part = self._part(base, funcs, extra, own, [out])
                sig += [BufferArg(t.code, t.bits, len(g.args)) for t in g.output_types]
            elif a.kind == "ImageParam":
                p = self.params[a.name]
                inp = _Input(a, k, [p.type])
                sig.append(BufferArg(p.type.code, p.type.bits, p.dimensions, whole=True))
            else:  # a constant Buffer
                b = next(b for b in hp.buffers if b.name == a.name)
                inp = _Input(a, k, [b.type], const=_buffer_array(b),
                             const_mins=[d.min for d in b.dims])
                sig.append(BufferArg(b.type.code, b.type.bits, len(b.dims), whole=True))
            inputs.append(inp)
        sig += [BufferArg(t.code, t.bits, len(f.args), output=True) for t in f.output_types]
        call = ExternCall(e, f.extern_function_name, sig)
        return _Extern(f, call, inputs, scalars, images, mins)

    # ------------------------------------------------------------------------ realization
    @property
    def input_names(self) -> list[str]:
        return sorted(self.params)

    def realize(self, sizes: Sequence[int] | int, *, out: Any = None, **inputs: Any) -> Any:
        """As :meth:`HalideKernel.realize`."""
        return self.realize_with(sizes, inputs, out)

    def realize_with(self, sizes: Sequence[int] | int, inputs: Mapping[str, Any],
                     out: Any = None) -> Any:
        if isinstance(sizes, int):
            sizes = [sizes]
        images, scalars = realize_arguments(self.params, self._kinds, self.checks, inputs,
                                            self.outputs, self._label)
        plans = self._plan(sizes, images, scalars)
        given: dict[str, Any] = dict(inputs)
        done: dict[str, tuple[list[np.ndarray], list[int]]] = {}
        for ex in self.externs:
            arrays, mins = self._run_extern(ex, plans[ex.func.name], images, given, done)
            done[ex.func.name] = (arrays, mins)
            given.update(zip(ex.images, arrays, strict=True))
            given.update(zip(ex.mins, mins, strict=True))
        return self.down.kernel.realize_with(sizes, self._arguments(self.down, given, {}),
                                             out)

    @staticmethod
    def _arguments(part: _Part, given: Mapping[str, Any], own: Mapping[str, int]
                   ) -> dict[str, Any]:
        args = {n: given[n] for n in part.kernel.params if n in given}
        args.update(own)
        return args

    def _plan(self, sizes: Sequence[int], images: dict[str, np.ndarray],
              scalars: dict[str, np.generic]) -> dict[str, _Plan | None]:
        """Per extern, its calls in this realization (None: nothing reads it), consumers
        first: what the downstream part reads, then per extern (consumers before
        producers) the union of what is read of it, its bounds query, and what the parts
        computing its inputs over the regions asked read of the externs before it."""
        demands: dict[str, list[Region]] = {ex.func.name: [] for ex in self.externs}
        self._demand(self.down, sizes, images, scalars, {}, demands)
        plans: dict[str, _Plan | None] = {}
        for ex in reversed(self.externs):
            name = ex.func.name
            if not demands[name]:
                plans[name] = None
                continue
            region = _hull(demands[name])
            values = [self._scalar(e, images, scalars) for e in ex.scalars]
            whole = [w for inp in ex.inputs for w in self._whole(inp, images)]
            asked_buffers, out_region = ex.call.query(whole, region, values)
            for d, ((lo, n), (m, ext)) in enumerate(zip(region, out_region, strict=True)):
                if m > lo or m + ext < lo + n:
                    raise ExternStageError(
                        f"extern stage {name!r}: its bounds query turns the output region "
                        f"[{lo}, {lo + n}) of dimension {d}, which its consumers read, "
                        f"into [{m}, {m + ext})")
            asked: list[Region] = []
            k = 0
            for inp in ex.inputs:
                reg = _hull(asked_buffers[k:k + len(inp.types)])
                k += len(inp.types)
                asked.append(reg)
                if inp.arg.kind != "Func":
                    self._check_whole(name, inp, reg, whole[k - 1])
                elif any(n <= 0 for _, n in reg):
                    continue
                elif inp.extern:
                    demands[inp.arg.name].append(reg)
                else:
                    assert inp.part is not None
                    self._demand(inp.part, [n for _, n in reg], images, scalars,
                                 {m: lo for m, (lo, _) in zip(inp.part.mins, reg, strict=True)},
                                 demands)
            plans[name] = _Plan(out_region, asked, values)
        return plans

    def _demand(self, part: _Part, sizes: Sequence[int], images: dict[str, np.ndarray],
                scalars: dict[str, np.generic], own: Mapping[str, int],
                demands: dict[str, list[Region]]) -> None:
        """Add to ``demands`` what ``part`` realized over ``sizes`` (its mins ``own``)
        reads of each extern: its bounds inference, with the stand-in images' mins 0 (the
        region does not depend on them)."""
        imgs = dict(images)
        scs = dict(scalars)
        for e in part.reads:
            ex = self._by_name[e]
            for img, t in zip(ex.images, ex.func.output_types, strict=True):
                imgs[img] = np.zeros((1,) * len(ex.mins), dtype_of(t, e, None).numpy)
            scs.update({m: np.int32(0) for m in ex.mins})
        scs.update({m: np.int32(v) for m, v in own.items()})
        spec = part.kernel._spec(sizes, imgs, scs)
        got = part.boxes.get(spec)
        if got is None:
            tr = Translator(part.kernel.pipeline, part.kernel.outputs, spec)
            tr.infer_bounds()
            got = []
            for e in part.reads:
                box = tr.info[e].box
                assert box is not None
                got.append([(lo, hi - lo + 1) for lo, hi in box])
            part.boxes[spec] = got
        for e, reg in zip(part.reads, got, strict=True):
            if all(n > 0 for _, n in reg):
                demands[e].append(reg)

    def _whole(self, inp: _Input, images: Mapping[str, np.ndarray]
               ) -> list[tuple[np.ndarray, list[int]] | None]:
        """Per buffer of ``inp``: an ImageParam's or Buffer's array and mins (passed
        whole), None for a Func's."""
        a = inp.arg
        if a.kind == "Func":
            return [None] * len(inp.types)
        arr = images[a.name] if a.kind == "ImageParam" else inp.const
        assert arr is not None
        arr = np.ascontiguousarray(arr)
        return [(arr, [0] * arr.ndim if a.kind == "ImageParam" else inp.const_mins)]

    @staticmethod
    def _check_whole(name: str, inp: _Input, reg: Region,
                     given: tuple[np.ndarray, list[int]] | None) -> None:
        assert given is not None
        arr, lo0 = given
        have = [(m, n) for m, n in zip(lo0, reversed(arr.shape), strict=True)]
        for d, ((m, n), (lo, ext)) in enumerate(zip(reg, have, strict=True)):
            if n > 0 and (m < lo or m + n > lo + ext):
                raise ExternStageError(
                    f"extern stage {name!r}: its bounds query asks for [{m}, {m + n}) of "
                    f"dimension {d} of {inp.arg.kind} {inp.arg.name!r} (argument "
                    f"{inp.position}), which holds [{lo}, {lo + ext})")

    def _run_extern(self, ex: _Extern, plan: _Plan | None, images: dict[str, np.ndarray],
                    given: Mapping[str, Any],
                    done: Mapping[str, tuple[list[np.ndarray], list[int]]]
                    ) -> tuple[list[np.ndarray], list[int]]:
        """The inputs over the regions asked, then the call: the output arrays (numpy
        axes) and their mins."""
        name = ex.func.name
        types = ex.func.output_types
        if plan is None:  # nothing reads it in this realization: an empty output
            shape = (0,) * len(ex.mins)
            return [np.empty(shape, dtype_of(t, name, None).numpy) for t in types], \
                [0] * len(ex.mins)
        arrays: list[np.ndarray] = []
        mins: list[list[int]] = []
        for inp, reg in zip(ex.inputs, plan.asked, strict=True):
            lo = [m for m, _ in reg]
            ext = [n for _, n in reg]
            if inp.arg.kind != "Func":
                w = self._whole(inp, images)[0]
                assert w is not None
                arrays.append(w[0])
                mins.append(w[1])
                continue
            if any(n <= 0 for n in ext):  # nothing asked: empty buffers, as Halide's
                got = [np.empty(tuple(max(n, 0) for n in reversed(ext)),
                                dtype_of(t, inp.arg.name, None).numpy) for t in inp.types]
            elif inp.extern:
                src, src_mins = done[inp.arg.name]
                got = [_crop(s, src_mins, reg) for s in src]
            else:
                assert inp.part is not None
                res = inp.part.kernel.realize_with(
                    ext, self._arguments(inp.part, given, dict(zip(inp.part.mins, lo,
                                                                   strict=True))))
                got = list(res) if isinstance(res, list) else [res]
            arrays += got
            mins += [lo] * len(got)
        out_mins = [m for m, _ in plan.out_region]
        shape = tuple(n for _, n in reversed(plan.out_region))
        outs = [np.empty(shape, dtype_of(t, name, None).numpy) for t in types]
        ex.call.run([*arrays, *outs], [*mins, *[out_mins] * len(outs)], plan.values)
        return outs, out_mins

    @staticmethod
    def _scalar(e: HExpr, images: Mapping[str, np.ndarray],
                scalars: dict[str, np.generic]) -> object:
        """An Expr argument's value in this call (:func:`.extern_checks.scalar_type`: a
        constant, a Param, an ImageParam's sizes or arithmetic of them)."""
        if e.kind in ("IntImm", "UIntImm", "FloatImm"):
            return e.value
        env = Env({n: Image.of(a) for n, a in images.items()}, dict(scalars))
        return evaluate(e, env).item()


def _crop(arr: np.ndarray, mins: Sequence[int], reg: Region) -> np.ndarray:
    """The part ``reg`` of an extern's output ``arr`` (element 0 at ``mins``), contiguous:
    what a consuming extern's bounds query asked for (inside ``arr``: its region is the
    union of what is read of it)."""
    index = tuple(slice(lo - m, lo - m + n) for m, (lo, n) in
                  zip(reversed(mins), reversed(reg), strict=True))
    return np.ascontiguousarray(arr[index])


__all__ = ["ExternPipeline", "extern_funcs"]
