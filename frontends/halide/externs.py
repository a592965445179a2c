"""``Func.define_extern`` on the cpu target: a pipeline split at its extern stages.

An extern stage is a C function the middle-end cannot look into, so it is not a Layer I
computation: the pipeline is cut there, and each part is an ordinary pipeline whose Layer I
is exact (``compile_pipeline`` of each part, through the middle-end):

* **downstream**: the requested outputs, with each extern Func ``e`` replaced by a Func that
  reads an input image ``e_extern`` at ``x - m`` (``m``: the region's mins, index Params of
  the build). Its bounds inference (ISL, as for any producer) gives the region of ``e``
  the consumers read: the extern's output region, as Halide computes it for a
  ``compute_root`` extern.
* **the extern call**: the bounds query (every buffer's ``host`` NULL) with that output
  region, then the real call, both through the C printed by
  :mod:`frontends.halide.extern_call` (``halide_buffer_t`` per buffer argument, the symbol
  found with ``dlsym`` at call time).
* **upstream**: per Func argument ``g``, a pipeline whose one output ``g_extern_in(x) =
  g(x + m)`` is realized over exactly the region the bounds query asked for (``m`` its mins);
  an ImageParam or constant Buffer argument is passed whole, checked to hold that region.

So the extern gets exactly the input region its bounds query reports, whatever it is, and
writes exactly the region read downstream. Where the extern asks for an input region that
cannot be given (outside an ImageParam or a Buffer, or empty), the call raises one line.
Funcs used both upstream and downstream are computed in each part (the same values).

Schedules: an extern is computed at root (``compute_root()`` or no schedule: Halide's JIT
computes an unscheduled extern at its consumer's innermost loop, over each point's
region; the values are the same for an extern whose values do not depend on the region it
is asked for, which Halide assumes too, since it asks for overlapping regions).
``compute_at`` of an extern, an extern reading another extern's output, a Tuple extern,
a Tuple Func argument, C++ name mangling, a non-host device API and Expr arguments other
than constants and Params are refused in one line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import halide as hl
import numpy as np

from frontends.halide.arguments import realize_arguments
from frontends.halide.checks import Checks
from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.evaluate import ScalarKind
from frontends.halide.exprs import dtype_of
from frontends.halide.extern_call import (
    BufferArg,
    ExternCall,
    ExternStageError,
    ScalarArg,
    check_symbol,
    scalar_supported,
)
from frontends.halide.graph import producer_order, walk
from frontends.halide.hir import HExpr, HExternArg, HFunc, HParameter, HPipeline, HType
from frontends.halide.noops import warn_ignored
from frontends.halide.reader import read_pipeline
from frontends.halide.translate import Translator, _buffer_array


def extern_funcs(hp: HPipeline, outputs: list[str]) -> list[str]:
    """The extern Funcs the outputs read, producers first."""
    return [n for n in producer_order(hp, outputs) if hp.func(n).extern_function_name]


def _hl_type(t: HType) -> Any:
    if t.code == "uint" and t.bits == 1:
        return hl.Bool()
    make = {"int": hl.Int, "uint": hl.UInt, "float": hl.Float}.get(t.code)
    if make is None or t.lanes != 1:
        raise UnsupportedHalideFeature(None, None, f"an extern buffer of type {t}")
    return make(t.bits)


class _Names:
    """Fresh names beside the pipeline's Funcs and parameters."""

    def __init__(self, hp: HPipeline) -> None:
        self.used = {f.name for f in hp.funcs} | {p.name for p in hp.external_parameters}

    def __call__(self, base: str) -> str:
        base = re.sub(r"\W", "_", base)  # Halide's names may hold '$' or '.'
        name, k = base, 1
        while name in self.used or f"{name}_im" in self.used:
            name, k = f"{base}{k}", k + 1
        self.used |= {name, f"{name}_im"}
        return name


def _template(func: str, args: Sequence[str], src_type: HType, src: str, mins: list[str],
              sign: int) -> tuple[HFunc, list[HFunc], list[HParameter]]:
    """Our form of ``func(args) = src(args + sign * mins)``, ``src`` an ImageParam and the
    mins int32 Params, built by Halide itself (so its definition and default schedule are
    Halide's) and read back: the Func, the Func Halide makes for the ImageParam
    (``src_im``, which ``func`` calls) and the parameters."""
    img = hl.ImageParam(_hl_type(src_type), len(args), src)
    ps = [hl.Param(hl.Int(32), m, 0) for m in mins]
    vs = [hl.Var(a) for a in args]
    f = hl.Func(func)
    f[vs] = img[[v + p if sign > 0 else v - p for v, p in zip(vs, ps, strict=True)]]
    got = read_pipeline(hl.serialize_pipeline(hl.Pipeline(f)))
    # Halide renames a Func whose name a live one has (the extern itself, the ImageParam's
    # Func of an earlier template): the names are read back, not assumed
    main = got.func(f.name())
    names = {p.name for p in got.external_parameters}
    if names != {src, *mins}:
        raise UnsupportedHalideFeature(func, None, f"extern stand-in parameters {names}")
    main = dataclasses.replace(main, name=func, origin_name=func)
    return main, [g for g in got.funcs if g.name != f.name()], list(got.external_parameters)


def _image_func(w: HFunc) -> str:
    """The Func a template calls (the one Halide made for its ImageParam)."""
    assert w.init is not None
    for v in w.init.values:
        for n in walk(v):
            if n.kind == "Call" and n.call_type == "Halide":
                return n.name
    raise UnsupportedHalideFeature(w.name, None, "an extern stand-in without its image")


@dataclass
class _Input:
    """One buffer argument of an extern: its kind and, for a Func, the upstream kernel."""

    arg: HExternArg
    type: HType | None = None  # a Func's element type
    kernel: Any = None
    out_name: str = ""
    mins: list[str] = dataclasses.field(default_factory=list)
    const: np.ndarray | None = None
    const_mins: list[int] = dataclasses.field(default_factory=list)


@dataclass
class _Extern:
    func: HFunc
    call: ExternCall
    inputs: list[_Input]
    scalars: list[HExpr]
    image: str
    mins: list[str]


class ExternPipeline:
    """A pipeline with extern stages (the cpu target): ``realize`` like
    :class:`HalideKernel`, running the upstream parts, the extern calls, then the
    downstream part."""

    def __init__(self, hp: HPipeline, outputs: list[str], checks: Checks,
                 make_kernel: Callable[[HPipeline, list[str]], Any]) -> None:
        self.outputs = outputs
        self.params = {p.name: p for p in hp.external_parameters}
        self.checks = checks
        self._kinds = {n: ScalarKind.of(p) for n, p in self.params.items() if not p.is_buffer}
        self._label = str(outputs)
        names = _Names(hp)
        index = {n: k for k, n in enumerate(hp.func_names_in_order)}
        base = dataclasses.replace(hp, requirements=())  # checked once, here
        externs = extern_funcs(hp, outputs)
        funcs = dict(base.funcs_by_name)
        extra: list[HParameter] = []
        self.externs: list[_Extern] = []
        for e in externs:
            f = hp.func(e)
            self._check_extern(f, hp, externs)
            image = names(f"{e}_extern")
            mins = [names(f"{image}_min{d}") for d in range(len(f.args))]
            standin, others, params = _template(e, f.args, f.output_types[0], image, mins,
                                                -1)
            funcs[e] = standin
            funcs.update({g.name: g for g in others})
            extra += params
            inputs: list[_Input] = []
            sig: list[BufferArg | ScalarArg] = []
            scalars: list[HExpr] = []
            for k, a in enumerate(f.extern_arguments):
                if a.kind == "Expr":
                    assert a.expr is not None
                    t = self._scalar_type(f, a.expr)
                    sig.append(ScalarArg(t.code, t.bits))
                    scalars.append(a.expr)
                    continue
                inp = _Input(a)
                if a.kind == "Func":
                    g = hp.func(a.name)
                    out = names(f"{e}_extern_in{k}")
                    inp.out_name = out
                    inp.type = g.output_types[0]
                    inp.mins = [names(f"{out}_min{d}") for d in range(len(g.args))]
                    src = names(f"{out}_src")
                    w, _, wparams = _template(out, g.args, g.output_types[0], src, inp.mins,
                                              1)
                    w = _calling(w, _image_func(w), a.name, index.get(a.name, -1))
                    up = dataclasses.replace(
                        base, funcs=(*base.funcs, w),
                        external_parameters=(*base.external_parameters,
                                             *(p for p in wparams if p.name != src)),
                        funcs_by_name={**base.funcs_by_name, out: w})
                    warn_ignored(up, producer_order(up, [out]))
                    inp.kernel = make_kernel(up, [out])
                    sig.append(BufferArg(g.output_types[0].code, g.output_types[0].bits,
                                         len(g.args)))
                elif a.kind == "ImageParam":
                    p = self.params[a.name]
                    sig.append(BufferArg(p.type.code, p.type.bits, p.dimensions, whole=True))
                else:  # a constant Buffer
                    b = next(b for b in hp.buffers if b.name == a.name)
                    inp.const = _buffer_array(b)
                    inp.const_mins = [d.min for d in b.dims]
                    sig.append(BufferArg(b.type.code, b.type.bits, len(b.dims), whole=True))
                inputs.append(inp)
            t = f.output_types[0]
            sig.append(BufferArg(t.code, t.bits, len(f.args), output=True))
            call = ExternCall(e, f.extern_function_name, sig)
            self.externs.append(_Extern(f, call, inputs, scalars, image, mins))
        down = dataclasses.replace(
            base, funcs=tuple(funcs.values()),
            external_parameters=(*base.external_parameters, *extra), funcs_by_name=funcs)
        warn_ignored(down, producer_order(down, outputs))
        self.down = make_kernel(down, outputs)
        self._regions: dict[Any, list[list[tuple[int, int]]]] = {}

    # ------------------------------------------------------------------ compile-time checks
    def _check_extern(self, f: HFunc, hp: HPipeline, externs: list[str]) -> None:
        name, sym = f.name, f.extern_function_name
        what = f"define_extern({sym})"
        check_symbol(sym, name)
        if len(f.output_types) != 1:
            raise UnsupportedHalideFeature(name, None, f"{what} with a Tuple of "
                                           f"{len(f.output_types)} outputs")
        if f.extern_mangling == "CPlusPlus":
            raise UnsupportedHalideFeature(name, None, f"{what} with C++ name mangling")
        if f.extern_device_api not in ("Host", "None"):
            raise UnsupportedHalideFeature(name, None, f"{what} on device "
                                           f"{f.extern_device_api}")
        cl = f.schedule.compute_level
        if not (cl.is_inlined or cl.is_root):
            raise UnsupportedHalideFeature(
                name, None, f"compute_at({cl.func_name}, {cl.var_name}) of an extern stage "
                "(an extern is computed at root here)")
        _hl_type(f.output_types[0])
        for a in f.extern_arguments:
            if a.kind == "Func":
                g = hp.func(a.name)
                if len(g.output_types) != 1:
                    raise UnsupportedHalideFeature(name, None, f"{what} reading the Tuple "
                                                   f"Func {a.name!r}")
                _hl_type(g.output_types[0])
                if g.schedule.compute_level.is_inlined and not g.extern_function_name:
                    raise UnsupportedHalideFeature(  # Halide's refusal, in its words
                        name, None, f"Func {a.name} cannot be scheduled to be computed "
                        f"inline, because it is used in the externally-computed function "
                        f"{name}")
                gl = g.schedule.compute_level
                if not gl.is_root and not g.extern_function_name:
                    raise UnsupportedHalideFeature(
                        name, None, f"compute_at({gl.func_name}, {gl.var_name}) of Func "
                        f"{a.name!r}, read by the extern stage (computed at root, before it)")
                chained = [x for x in producer_order(hp, [a.name]) if x in externs
                           or hp.func(x).extern_function_name]
                if chained:
                    raise UnsupportedHalideFeature(name, None, f"{what} reading the output of "
                                                   f"the extern stage {chained[0]!r}")
            elif a.kind == "Buffer" and not any(b.name == a.name for b in hp.buffers):
                raise UnsupportedHalideFeature(name, None, f"{what}: Buffer {a.name!r} "
                                               "missing from the serialization")

    def _scalar_type(self, f: HFunc, e: HExpr) -> HType:
        ok = e.kind in ("IntImm", "UIntImm", "FloatImm") or (
            e.kind == "Variable" and e.param_name in self.params
            and not self.params[e.param_name].is_buffer)
        if not ok or e.type is None or not scalar_supported(e.type.code, e.type.bits) \
                or e.type.lanes != 1:
            raise UnsupportedHalideFeature(
                f.name, None, f"define_extern({f.extern_function_name}) with the Expr "
                f"argument {e.kind} {e.name or e.value!r} (only constants and scalar Params)")
        return e.type

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
        regions = self._output_regions(sizes, images, scalars)
        given = dict(inputs)
        for ex, region in zip(self.externs, regions, strict=True):
            arr, mins = self._run_extern(ex, region, images, scalars, inputs)
            given[ex.image] = arr
            given.update({m: v for m, v in zip(ex.mins, mins, strict=True)})
        return self.down.realize_with(sizes, given, out)

    def _output_regions(self, sizes: Sequence[int], images: dict[str, np.ndarray],
                        scalars: dict[str, np.generic]) -> list[list[tuple[int, int]]]:
        """Per extern, ``(min, extent)`` per dimension of what the downstream part reads
        (its bounds inference, with the stand-in images' mins 0: the region does not
        depend on them)."""
        imgs = dict(images)
        scs = dict(scalars)
        for ex in self.externs:
            imgs[ex.image] = np.zeros((1,) * len(ex.mins),
                                      dtype_of(ex.func.output_types[0], None, None).numpy)
            scs.update({m: np.int32(0) for m in ex.mins})
        spec = self.down._spec(sizes, imgs, scs)
        got = self._regions.get(spec)
        if got is None:
            tr = Translator(self.down.pipeline, self.down.outputs, spec)
            tr.infer_bounds()
            got = []
            for ex in self.externs:
                box = tr.info[ex.func.name].box
                assert box is not None
                got.append([(lo, hi - lo + 1) for lo, hi in box])
            self._regions[spec] = got
        return got

    def _run_extern(self, ex: _Extern, region: list[tuple[int, int]],
                    images: dict[str, np.ndarray], scalars: dict[str, np.generic],
                    inputs: Mapping[str, Any]) -> tuple[np.ndarray, list[int]]:
        """The bounds query, the inputs over the regions it asks for, the call: the
        output array (numpy axes) and its mins."""
        name = ex.func.name
        vals = [self._scalar(e, scalars) for e in ex.scalars]
        whole: list[tuple[np.ndarray, list[int]] | None] = []
        for inp in ex.inputs:
            a = inp.arg
            if a.kind == "Func":
                whole.append(None)
                continue
            arr = images[a.name] if a.kind == "ImageParam" else inp.const
            assert arr is not None
            arr = np.ascontiguousarray(arr)
            whole.append((arr, [0] * arr.ndim if a.kind == "ImageParam" else inp.const_mins))
        asked, out_region = ex.call.query(whole, region, vals)
        for d, ((lo, n), (m, ext)) in enumerate(zip(region, out_region, strict=True)):
            if m > lo or m + ext < lo + n:
                raise ExternStageError(
                    f"extern stage {name!r}: its bounds query turns the output region "
                    f"[{lo}, {lo + n}) of dimension {d}, which its consumers read, into "
                    f"[{m}, {m + ext})")
        arrays: list[np.ndarray] = []
        mins: list[list[int]] = []
        for k, (inp, reg, given) in enumerate(zip(ex.inputs, asked, whole, strict=True)):
            a = inp.arg
            if given is None:
                if any(n <= 0 for _, n in reg):  # nothing asked: an empty buffer, as Halide's
                    arrays.append(np.empty(tuple(max(n, 0) for _, n in reversed(reg)),
                                           dtype_of(inp.type, a.name, None).numpy))
                    mins.append([lo for lo, _ in reg])
                    continue
                sub = {n: inputs[n] for n in inp.kernel.params if n in inputs}
                sub.update({m: lo for m, (lo, _) in zip(inp.mins, reg, strict=True)})
                arrays.append(inp.kernel.realize_with([n for _, n in reg], sub))
                mins.append([lo for lo, _ in reg])
                continue
            arr, lo0 = given
            have = [(m, n) for m, n in zip(lo0, reversed(arr.shape), strict=True)]
            for d, ((m, n), (lo, ext)) in enumerate(zip(reg, have, strict=True)):
                if n > 0 and (m < lo or m + n > lo + ext):
                    raise ExternStageError(
                        f"extern stage {name!r}: its bounds query asks for [{m}, {m + n}) of "
                        f"dimension {d} of {a.kind} {a.name!r} (argument {k}), which holds "
                        f"[{lo}, {lo + ext})")
            arrays.append(arr)
            mins.append(lo0)
        t = ex.func.output_types[0]
        out = np.empty(tuple(n for _, n in reversed(out_region)),
                       dtype_of(t, name, None).numpy)
        ex.call.run([*arrays, out], [*mins, [lo for lo, _ in out_region]], vals)
        return out, [lo for lo, _ in out_region]

    def _scalar(self, e: HExpr, scalars: dict[str, np.generic]) -> object:
        if e.kind == "Variable":
            return scalars[e.param_name].item()
        return e.value


def _calling(w: HFunc, src: str, func: str, func_index: int) -> HFunc:
    """``w`` with its calls of ``src`` (the ImageParam's Func) made calls of ``func``."""
    assert w.init is not None

    def swap(root: HExpr) -> HExpr:
        return _retarget(root, src, func, func_index)

    init = dataclasses.replace(w.init, values=tuple(swap(v) for v in w.init.values))
    return dataclasses.replace(w, init=init)


def _retarget(root: HExpr, src: str, func: str, func_index: int) -> HExpr:
    if root.kind == "Call" and root.call_type == "Halide" and root.name == src:
        args = tuple(_retarget(a, src, func, func_index) for a in root.args)
        return dataclasses.replace(root, args=args, call_type="Halide", name=func,
                                   func_index=func_index, image_name="", param_name="")
    if not root.args:
        return root
    return dataclasses.replace(root, args=tuple(_retarget(a, src, func, func_index)
                                                for a in root.args))


__all__ = ["ExternPipeline", "extern_funcs"]
