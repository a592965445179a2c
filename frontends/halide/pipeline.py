"""``compile_pipeline``: a Halide pipeline compiled by the middle-end, realized from numpy.

The pipeline is read once (``hl.serialize_pipeline`` and our reader). A realization is
specialized on its sizes (output extents, input shapes, and the Params that index or bound
something) and on the branch each ``specialize()``d stage takes (:mod:`.specialize`):
the first ``realize`` of each specialization translates and compiles (through the wire
format, embedded or remote, so the artifact cache also serves later processes); the
following ones only call the kernel. Every other Param is a scalar argument of the
kernel, of its own type. Halide's checks (requirements, ImageParam constraints, Param
ranges; :mod:`.checks`) run on every call, before anything is built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import halide as hl
import numpy as np

from frontends.halide.allowed_races import race_refusal
from frontends.halide.arguments import realize_arguments, split_arguments
from frontends.halide.checks import Checks, build_checks
from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.evaluate import ScalarKind
from frontends.halide.exprs import dtype_of
from frontends.halide.externs import ExternPipeline, extern_funcs
from frontends.halide.graph import producer_order
from frontends.halide.hir import HPipeline
from frontends.halide.host_stages import device_mapped
from frontends.halide.index_params import index_params
from frontends.halide.innermost import innermost_reductions
from frontends.halide.intrinsics import uses_strict_float
from frontends.halide.noops import warn_ignored
from frontends.halide.outputs import OutputArray, realized_elsewhere
from frontends.halide.prepared import MISS, Prepared, prepare
from frontends.halide.reader import read_pipeline
from frontends.halide.specialize import Specializations, without_output_buffers
from frontends.halide.target_queries import answer_target_queries
from frontends.halide.translate import Built, Spec, Translator
from frontends.halide.wrappers import apply_wrappers
from middleend import ScheduleError, target_traits
from middleend.ir.errors import KernelArgumentError

# How many prepared calls a kernel keeps (a caller alternating between a few sizes or
# Param values repeats each of them).
_PREPARED = 4


class HalideKernel:
    """A Halide pipeline compiled by the middle-end: ``k.realize(sizes, **inputs)``, or
    ``k.realize(sizes, out=arrays, **inputs)`` into preallocated outputs."""

    def __init__(self, hp: HPipeline, outputs: list[str], target: str, service: Any,
                 check_legality: bool = True,
                 extra_schedule: Callable[[Built], None] | None = None,
                 fp_contract: bool = True, target_options: dict[str, Any] | None = None,
                 checks: Checks | None = None, schedule: str | None = None) -> None:
        self.pipeline = hp
        self.outputs = outputs
        self.target = target
        self.service = service
        self.check_legality = check_legality
        self.extra_schedule = extra_schedule
        # strict_float: no FMA anywhere (the strict operations' values are Halide's)
        self.fp_contract = fp_contract and not uses_strict_float(hp)
        self.target_options = dict(target_options or {})
        # "auto": the middle-end schedules each specialization; "tune": and times the
        # model's best few plans on the first call's inputs (:meth:`_tuned`)
        self.schedule = schedule
        order = producer_order(hp, outputs)
        self.index_params = index_params(hp, order)
        self.params = {p.name: p for p in hp.external_parameters}
        self.checks = checks or Checks(str(outputs), self.params, hp.requirements)
        self._kinds = {n: ScalarKind.of(p) for n, p in self.params.items() if not p.is_buffer}
        self._label = str(outputs)
        self.specializations = Specializations(hp, order, outputs, self.params, self._label)
        self._builds: dict[Spec, tuple[Built, Any]] = {}
        self._translations: dict[Spec, Built] = {}  # translated, not compiled
        # why out= arrays larger than realize(sizes)'s are refused (None: they are computed
        # over whole); set by the pipelines that realize this one as a part
        self.larger_out_refused: str | None = None
        self._lock = threading.Lock()
        self.compiles = 0  # how many specializations were built (tests check reuse)
        self.repeats = 0  # how many calls repeated the previous one (:mod:`.prepared`)
        self._out_types: list[np.dtype] | None = None  # numpy dtype per realized array
        # calls to repeat, the latest first (:mod:`.prepared`), and the build of the last
        # call that took the ordinary path: a call is prepared when it takes the build its
        # predecessor took, so that a caller whose calls never repeat pays nothing for it
        self._prepared: tuple[Prepared, ...] = ()
        self._last_built: Built | None = None

    @property
    def input_names(self) -> list[str]:
        return sorted(self.params)

    def _arguments(self, inputs: Mapping[str, Any]
                   ) -> tuple[dict[str, np.ndarray], dict[str, np.generic]]:
        """The inputs as arrays (ImageParams) and numpy scalars of their types (Params),
        each checked; errors name the input."""
        return split_arguments(self.params, self._kinds, inputs, self.outputs, self._label)

    def _spec(self, sizes: Sequence[int], images: Mapping[str, np.ndarray],
              scalars: Mapping[str, np.generic]) -> Spec:
        shapes = tuple((n, tuple(reversed(a.shape))) for n, a in sorted(images.items()))
        index = tuple((n, v.item()) for n, v in sorted(scalars.items())
                      if n in self.index_params)
        return Spec(tuple(int(s) for s in sizes), shapes, index,
                    self.specializations.choose(sizes, images, scalars))

    def translate(self, sizes: Sequence[int], **inputs: Any) -> Built:
        """The translated Function of this specialization, not compiled and not kept:
        ``built.fn.lower(outputs=built.outputs)`` gives its layers and loop AST without a C
        compiler (what ``benchmarks/lowering_time.py`` times)."""
        images, scalars = self._arguments(inputs)
        return Translator(self.pipeline, self.outputs, self._spec(sizes, images, scalars)
                          ).build("halide_" + self.outputs[0])

    def build(self, sizes: Sequence[int], **inputs: Any) -> tuple[Built, Any]:
        """The translated Function and its kernel for this specialization."""
        return self._build(sizes, *self._arguments(inputs))[0]

    def _build(self, sizes: Sequence[int], images: Mapping[str, np.ndarray],
               scalars: Mapping[str, np.generic], out: Any = None
               ) -> tuple[tuple[Built, Any], list[np.ndarray] | None]:
        """The build of this specialization and the ``out=`` arrays, checked against the
        regions the translation infers before anything is compiled. ``out=`` arrays larger
        than ``realize(sizes)``'s are computed over whole, as Halide's ``realize(buffer)``
        does: the build is then specialized on their regions (:attr:`Spec.out_regions`)."""
        spec = self._spec(sizes, images, scalars)
        with self._lock:
            built = self._translation(spec)
            arrays = None
            if out is not None:
                arrays, regions = self._check_out(built, sizes, out)
                if regions is not None:
                    spec = replace(spec, out_regions=regions)
                    built = self._translation(spec)
                    self._check_covered(built, arrays)
            got = self._builds.get(spec)
            if got is None:
                self._translations.pop(spec, None)
                if self.extra_schedule is not None:
                    with built.fn:
                        self.extra_schedule(built)
                tuned = self._tuned(built, images, scalars) if self.schedule == "tune" \
                    else ""
                try:
                    kernel = built.fn.compile(self.target, outputs=built.outputs,
                                              check_legality=self.check_legality,
                                              service=self.service,
                                              fp_contract=self.fp_contract,
                                              **self._schedule_options(),
                                              **self.target_options)
                except ScheduleError as e:  # a race allow_race_conditions() let through
                    refusal = race_refusal(self.pipeline, built, e)
                    if refusal is None:
                        raise
                    raise refusal from e
                if tuned:
                    kernel.auto_schedule = tuned
                got = (built, kernel)
                self._builds[spec] = got
                self.compiles += 1
        return got, arrays

    def _schedule_options(self) -> dict[str, Any]:
        return {"schedule": "auto"} if self.schedule == "auto" else {}

    def _tuned(self, built: Built, images: Mapping[str, np.ndarray],
               scalars: Mapping[str, np.generic]) -> str:
        """``schedule="tune"``: the auto-schedule of this specialization with its best
        few plans per statement built and timed on copies of this call's inputs (the
        tuned plans are stored by the program's content hash: a second compile of the
        same pipeline builds nothing), applied to ``built``; returns it as Python."""
        args = _kernel_args(built, images, scalars, copy=True)
        return str(built.fn.auto_schedule(
            self.target, outputs=built.outputs, tune=True, inputs=args,
            service=self.service, fp_contract=self.fp_contract,
            **self.target_options).python())

    def auto_schedule(self, sizes: Sequence[int], **inputs: Any) -> str:
        """What ``schedule="auto"`` chose for the specialization of these sizes and inputs
        (built if it was not yet), as Python statements on the translated Function ``f``;
        "" for a pipeline compiled with its own schedule."""
        return self.build(sizes, **inputs)[1].auto_schedule

    def _translation(self, spec: Spec) -> Built:
        """The translation of ``spec``: its build's, or one kept uncompiled (the regions of
        ``realize(sizes)``, which place larger ``out=`` arrays, or one being compiled)."""
        got = self._builds.get(spec)
        if got is not None:
            return got[0]
        built = self._translations.get(spec)
        if built is None:
            built = Translator(self.pipeline, self.outputs, spec).build(
                "halide_" + self.outputs[0])
            self._translations[spec] = built
        return built

    def _empty_realization(self, sizes: Sequence[int], out: Any) -> list[np.ndarray] | None:
        """A region without a point (a size of 0): Halide's realize runs no stage and reads
        no input there, so nothing is translated or built (bounds inference would find
        every Func and input read nowhere): the outputs are empty arrays of their shapes
        and types, or the ``out=`` arrays, left as they are. None when something is
        realized: no size is 0, or an ``out=`` array has elements (it is computed over
        whole, as Halide's ``realize(buffer)``)."""
        if all(s != 0 for s in sizes):
            return None
        shape = tuple(int(s) for s in reversed(sizes))
        types = self._output_types()
        if out is None:
            return [np.empty(shape, dtype=t) for t in types]
        arrays = list(out) if isinstance(out, list | tuple) else [out]
        if any(not isinstance(a, np.ndarray) or a.size for a in arrays):
            return None
        labels = self.output_labels()
        if len(arrays) != len(labels):
            raise KernelArgumentError(
                f"Halide pipeline {self.outputs}: out= gives {len(arrays)} array(s), the "
                f"pipeline has {len(labels)} output(s) {labels} (one array each, in order)")
        for k, (a, t) in enumerate(zip(arrays, types, strict=True)):
            if a.dtype != t or a.ndim != len(shape):
                raise KernelArgumentError(
                    f"{self._where(k, labels[k])}: expected {t} with shape {shape} (sizes "
                    f"{list(sizes)} reversed), got {a.dtype} with shape {a.shape}")
        return arrays

    def _output_types(self) -> list[np.dtype]:
        """The numpy dtype of each array ``realize`` returns, in its order."""
        if self._out_types is None:
            self._out_types = [dtype_of(t, n, 0).numpy for n in self.outputs
                               for t in self.pipeline.func(n).output_types]
        return self._out_types

    def output_labels(self) -> list[str]:
        """One label per array ``realize`` returns: the output Func's name, ``name[k]`` for
        the k-th element of a Tuple output."""
        labels = []
        for n in self.outputs:
            k = len(self.pipeline.func(n).output_types)
            labels += [n] if k == 1 else [f"{n}[{j}]" for j in range(k)]
        return labels

    def _check_out(self, built: Built, sizes: Sequence[int], out: Any
                   ) -> tuple[list[np.ndarray], tuple[tuple[tuple[int, int], ...], ...] | None]:
        """``out`` as a list of arrays, one per output, each checked (count, type, dtype,
        shape, layout) against what ``realize(sizes)`` returns (each output over its own
        region, :mod:`.outputs`); errors name the output. An array may be larger in every
        dimension: Halide's ``realize(buffer)`` computes over the whole buffer, so the
        second result is then every output Func's region (element 0 at the region's min,
        the extents the arrays'), else None."""
        types = self._output_types()
        assert built.regions is not None
        regions = built.regions.arrays
        arrays = list(out) if isinstance(out, list | tuple) else [out]
        if len(arrays) == len(types) and all(
                type(a) is np.ndarray and a.dtype == want and a.shape == r.shape
                and (fl := a.flags).c_contiguous and fl.aligned and fl.writeable
                for a, want, r in zip(arrays, types, regions, strict=True)):
            return arrays, None  # the common case, checked without building any message
        labels = self.output_labels()
        if len(arrays) != len(labels):
            raise KernelArgumentError(
                f"Halide pipeline {self.outputs}: out= gives {len(arrays)} array(s), the "
                f"pipeline has {len(labels)} output(s) {labels} (one array each, in order)")
        for k, (a, r, want) in enumerate(zip(arrays, regions, types, strict=True)):
            label, shape = r.label, r.shape
            where = self._where(k, label)
            if not isinstance(a, np.ndarray):
                hint = " (np.asarray(buffer) is a writable view of it)" if isinstance(
                    a, hl.Buffer) else ""
                raise KernelArgumentError(f"{where}: expected a numpy array of {want} with "
                                          f"shape {shape}, got {type(a).__name__}{hint}")
            if a.dtype != want or not _covers(a.shape, shape):
                why = realized_elsewhere(r, tuple(sizes)) or \
                    f" (sizes {list(sizes)} reversed)"
                larger = "" if _covers(a.shape, shape) else (
                    " (an array larger in every dimension is computed over whole, as by "
                    "Halide's realize(buffer))")
                raise KernelArgumentError(
                    f"{where}: expected {want} with shape {shape}{why}, got {a.dtype} with "
                    f"shape {a.shape}{larger}")
            if not a.flags.c_contiguous or not a.flags.aligned:
                raise KernelArgumentError(f"{where}: expected a C-contiguous, aligned array "
                                          f"(got strides {a.strides})")
            if not a.flags.writeable:
                raise KernelArgumentError(f"{where}: the array is read-only")
        if all(a.shape == r.shape for a, r in zip(arrays, regions, strict=True)):
            return arrays, None
        if self.larger_out_refused is not None:
            k, r = next((k, r) for k, (a, r) in enumerate(zip(arrays, regions, strict=True))
                        if a.shape != r.shape)
            raise KernelArgumentError(f"{self._where(k, r.label)}: expected shape {r.shape}, "
                                      f"got {arrays[k].shape} ({self.larger_out_refused})")
        return arrays, self._regions_of(arrays, regions)

    def _regions_of(self, arrays: list[np.ndarray], regions: Sequence[OutputArray]
                    ) -> tuple[tuple[tuple[int, int], ...], ...]:
        """Per output Func, the region of its ``out=`` arrays (one region for the elements
        of a Tuple, as Halide requires of the buffers of one Func)."""
        per_func: dict[str, tuple[tuple[int, int], ...]] = {}
        for k, (a, r) in enumerate(zip(arrays, regions, strict=True)):
            region = tuple((m, e) for (m, _), e in zip(r.region, reversed(a.shape),
                                                          strict=True))
            first = per_func.setdefault(r.func, region)
            if first != region:
                raise KernelArgumentError(
                    f"{self._where(k, r.label)}: shape {a.shape}, but the other elements of "
                    f"Tuple output {r.func!r} have shape "
                    f"{tuple(e for _, e in reversed(first))} (Halide requires one region "
                    "for the buffers of a Tuple's elements)")
        return tuple(per_func[n] for n in self.outputs)

    def _check_covered(self, built: Built, arrays: list[np.ndarray]) -> None:
        """Larger ``out=`` arrays: each must still hold what the other outputs, computed
        over their whole arrays, and its own updates read or write of it (Halide refuses
        such a buffer too)."""
        assert built.regions is not None
        for k, (a, r) in enumerate(zip(arrays, built.regions.arrays, strict=True)):
            if a.shape != r.shape:
                got = [(m, m + e - 1) for (m, _), e in zip(r.region, reversed(a.shape),
                                                           strict=True)]
                raise KernelArgumentError(
                    f"{self._where(k, r.label)}: the array covers {got}, but the "
                    f"pipeline (the other outputs, computed over their whole out= arrays, "
                    f"and its own updates) reads or writes {r.func!r} over "
                    f"{[(m, m + e - 1) for m, e in r.region]}: expected shape {r.shape} or "
                    f"larger, got {a.shape}")

    def _where(self, k: int, label: str) -> str:
        """Which out= array an error is about: the output's label, and its index when
        there are several."""
        several = len(self._out_types or ()) > 1
        return f"realize out= for output {label!r}" + (f" (out[{k}])" if several else "")

    def output_regions(self, sizes: Sequence[int] | int, **inputs: Any
                       ) -> list[list[tuple[int, int]]]:
        """Per array ``realize(sizes, **inputs)`` returns, its region as (min, extent) per
        Halide dimension (dimension 0 first): the realized region, or larger where other
        outputs or its own updates reach beyond it and the first output's region is the
        realized one (Halide's bounds query and crop, :mod:`.outputs`); element 0 of the
        array is at the mins (what Halide's ``Buffer.dim(d).min()`` says of its output
        buffers). An ``out=`` array covers the region computed, which may be larger."""
        built, _ = self.build([sizes] if isinstance(sizes, int) else sizes, **inputs)
        assert built.regions is not None
        return [list(a.returned) for a in built.regions.arrays]

    def realize(self, sizes: Sequence[int] | int, *, out: Any = None, **inputs: Any) -> Any:
        """Like ``Pipeline.realize(sizes)`` with the inputs set: numpy arrays (axes as in
        ``hl.Buffer(ndarray)``), ``hl.Buffer``s, Python numbers for Params. Returns an
        array, or a list of arrays for several outputs or a Tuple.

        ``out``: preallocated outputs, like Halide's ``Pipeline.realize(buffer)``: an array
        (one output) or a list of arrays (one per output Func / Tuple element, in the order
        ``realize`` returns them), each C-contiguous, of the dtype ``realize`` would return
        and its shape (numpy axes: ``sizes`` reversed) or larger in every dimension: as
        Halide's ``realize(buffer)``, every output is then computed over its whole array,
        whose element 0 stays at the region's min (:meth:`output_regions`). The kernel
        writes into them and returns them (the very objects given), so a repeated call
        allocates nothing.
        A pipeline with an input named ``out`` cannot use this keyword form: call
        :meth:`realize_with` (inputs as a dict)."""
        if isinstance(sizes, int):
            sizes = [sizes]
        for plan in self._prepared:  # realize_with's C stubs, inlined: one frame less
            if plan.stub is not None and (res := plan.stub(sizes, inputs, out)) is not MISS:
                self.repeats += 1
                return res
        if "out" in self.params:
            raise KernelArgumentError(
                f"Halide pipeline {self.outputs} has an input named 'out', which realize's "
                "out= keyword would shadow; call realize_with(sizes, {'out': ..., ...}, "
                "out=...) instead")
        return self._realize_in_python(sizes, inputs, out)

    def realize_with(self, sizes: Sequence[int] | int, inputs: Mapping[str, Any],
                     out: Any = None) -> Any:
        """:meth:`realize` with the inputs in a mapping (any input names, ``out``
        included)."""
        if isinstance(sizes, int):
            sizes = [sizes]
        for plan in self._prepared:
            if plan.stub is not None and (res := plan.stub(sizes, inputs, out)) is not MISS:
                self.repeats += 1
                return res
        return self._realize_in_python(sizes, inputs, out)

    def _realize_in_python(self, sizes: Sequence[int], inputs: Mapping[str, Any],
                           out: Any) -> Any:
        """A call no C stub matched (:mod:`frontends.fastcall`): a prepared call's Python
        checks (:meth:`Prepared.call`), else the ordinary path, which prepares the call
        when it took the build the call before it took."""
        for plan in self._prepared:
            res = plan.call(sizes, inputs, out)
            if res is not MISS:
                self.repeats += 1
                return res
        images, scalars = realize_arguments(self.params, self._kinds, self.checks, inputs,
                                            self.outputs, self._label)
        nothing = self._empty_realization(sizes, out)
        if nothing is not None:
            return nothing[0] if len(nothing) == 1 else nothing
        (built, kernel), outs_given = self._build(sizes, images, scalars, out)
        args = _kernel_args(built, images, scalars)
        assert built.regions is not None
        keys = [a.key for a in built.regions.arrays]
        if outs_given is not None:
            for key, a in zip(keys, outs_given, strict=True):
                args[key] = a
        res = kernel(**args)
        outs = [res[a.key] if outs_given is not None else a.returned_part(res[a.key])
                for a in built.regions.arrays]
        if built is self._last_built:
            plan = prepare(sizes, inputs, out, args,
                           {ours: n for n, ours in built.inputs.items()}, kernel,
                           built.regions.arrays)
            if plan is not None:
                self._prepared = (plan, *self._prepared[:_PREPARED - 1])
        self._last_built = built
        return outs[0] if len(outs) == 1 else outs


def _covers(shape: tuple[int, ...], region: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` holds a region of shape ``region``: the same number
    of dimensions, each at least as large."""
    return len(shape) == len(region) and all(s >= r for s, r in zip(shape, region,
                                                                     strict=True))


def _with_externs(hp: HPipeline, names: list[str], checks: Checks, target: str,
                  service: Any, check_legality: bool,
                  extra_schedule: Callable[[Built], None] | None, fp_contract: bool,
                  target_options: dict[str, Any]) -> ExternPipeline:
    """A pipeline with ``define_extern`` stages, split around them (:mod:`.externs`).
    Any target runs it: the extern stages are called here, on the host, between the
    parts' kernels, which every target calls with host arrays and returns host arrays
    (as Halide copies a buffer to the host before an extern stage of the host). A part
    is shaped for the target like a whole pipeline (:func:`device_mapped`)."""
    first = extern_funcs(hp, names)[0]
    if extra_schedule is not None:
        raise UnsupportedHalideFeature(first, None, "extra_schedule= with define_extern "
                                       "(the pipeline is split around its extern stages)")

    def make(part: HPipeline, outs: list[str]) -> HalideKernel:
        if not target_traits(target).host_statements:
            part = device_mapped(part, outs, target_options)
        k = HalideKernel(part, outs, target, service, check_legality, None, fp_contract,
                         target_options)
        k.larger_out_refused = ("an out= array larger than realize(sizes)'s, with "
                                "define_extern stages, is not run here: their bounds "
                                "queries are asked for the realized region")
        return k

    return ExternPipeline(hp, names, checks, make)


def _kernel_args(built: Built, images: Mapping[str, Any], scalars: Mapping[str, np.generic],
                 copy: bool = False) -> dict[str, Any]:
    """The kernel's arguments by buffer name for these inputs (``copy``: the images
    copied, for runs that must not touch the caller's arrays)."""
    args: dict[str, Any] = dict(built.constants)
    for name, ours in built.inputs.items():  # np.asarray keeps 0-d arrays 0-d
        args[ours] = (np.array if copy else np.asarray)(images[name], order="C")
    for name, (ours, kind, dt) in built.scalars.items():
        v = scalars[name]
        args[ours] = int(v) if kind == "param" else np.array(v, dtype=dt.numpy)
    return args


def unscheduled_or_refuse(hp: HPipeline, names: list[str], schedule: str = "auto") -> None:
    """``schedule="auto"`` schedules a pipeline as Halide's autoschedulers do: one without
    a schedule of its own (every Func at Halide's default). A Func with a directive
    would have it silently replaced, so such a pipeline is refused, naming the Func."""
    for n in producer_order(hp, names):
        f = hp.func(n)
        stages = ((f.init,) if f.init else ()) + f.updates
        touched = next((k for k, d in enumerate(stages) if d.schedule.touched), None)
        if touched is not None or not f.schedule.compute_level.is_inlined:
            what = "a compute level" if touched is None else \
                ("a schedule" if touched == 0 else f"a schedule on update {touched}")
            raise UnsupportedHalideFeature(
                n, touched, f"{what} with schedule={schedule!r} (it schedules pipelines without "
                "one: build the Funcs without scheduling directives, or compile with "
                "their own schedule)")


def compile_pipeline(outputs: Any, target: str = "cpu", service: Any = None,
                     check_legality: bool = True,
                     extra_schedule: Callable[[Built], None] | None = None,
                     fp_contract: bool = True, schedule: str | None = None,
                     **target_options: Any) -> HalideKernel | ExternPipeline:
    """Compile a Halide pipeline (an ``hl.Pipeline``, an ``hl.Func`` or a list of Funcs) with
    the middle-end. ``service``: None (embedded), a client of ``me.connect`` or
    ``"host:port"``. ``extra_schedule(built)`` may add middle-end commands to the translated
    Function before it is compiled (``built.comps[func_name]`` gives its computations), for
    schedules Halide cannot express, such as fusing the loops of two outputs; the legality
    check still applies. ``fp_contract``: Halide's float semantics let the compiler fuse
    ``a * b + c`` into one rounding (FMA) unless ``strict_float`` is used; we do the same by
    default so results match Halide's to the last bits more often (a pipeline using
    ``strict_float`` is built without FMAs). ``target_options``
    are the target's own (``dialect="opencl"`` for the gpu target, ...). ``schedule="auto"``
    has the middle-end schedule a pipeline that has no schedule (Halide's default), per
    specialization (its sizes known), as Halide's autoschedulers would: what it chose is
    in :meth:`HalideKernel.auto_schedule`. ``schedule="tune"`` also builds and times the
    model's best few plans per statement on the first call's inputs (seconds to minutes,
    progress on stderr), per specialization, and keeps the fastest."""
    if schedule not in (None, "auto", "tune"):
        raise TypeError(f"compile_pipeline: schedule must be None, 'auto' or 'tune', got "
                        f"{schedule!r}")
    if isinstance(outputs, hl.Pipeline):
        pipe = outputs
    elif isinstance(outputs, hl.Func):
        pipe = hl.Pipeline(outputs)
    elif isinstance(outputs, list | tuple) and outputs and all(
            isinstance(f, hl.Func) for f in outputs):
        pipe = hl.Pipeline(list(outputs))
    else:
        raise TypeError("compile_pipeline takes an hl.Pipeline, an hl.Func or a list of Funcs")
    data, live = hl.serialize_pipeline(pipe, get_params=True)
    hp = answer_target_queries(apply_wrappers(read_pipeline(data)), target)
    names = [f.name() for f in pipe.outputs()]
    for n in names:
        if n not in hp.funcs_by_name:
            raise UnsupportedHalideFeature(n, None, "an output missing from the serialization")
    if schedule in ("auto", "tune"):
        unscheduled_or_refuse(hp, names, schedule)
        if extra_schedule is not None:
            raise TypeError(f"compile_pipeline: extra_schedule and schedule={schedule!r} "
                            "cannot be combined")
    hp = innermost_reductions(without_output_buffers(hp, names), names)
    checks = build_checks(hp, live, str(names))
    if any(hp.func(n).extern_function_name for n in producer_order(hp, names)):
        if schedule in ("auto", "tune"):
            raise UnsupportedHalideFeature(None, None, f"schedule={schedule!r} with "
                                           "define_extern stages")
        return _with_externs(hp, names, checks, target, service, check_legality,
                             extra_schedule, fp_contract, target_options)
    warn_ignored(hp, producer_order(hp, names))
    if not target_traits(target).host_statements:
        hp = device_mapped(hp, names, target_options)  # host stages: a device mapping
    return HalideKernel(hp, names, target, service, check_legality, extra_schedule,
                        fp_contract, target_options, checks, schedule)
