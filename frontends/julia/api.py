"""Compiling ``@acc`` functions from Python: ``compile_source`` (the tree-sitter path, no
Julia runtime needed) and the kernel object both paths share.

    k = compile_source(text, "bicg!")     # parse once
    k(s, q, A, p, r)                      # numpy arrays in Fortran order, updated in place

Like Julia, which compiles a method per argument types, a kernel is specialized on its
arguments: element types, array sizes and the values of Int arguments. Each new
specialization compiles once (through the wire format, embedded or remote); later calls
with the same shapes reuse it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import middleend as me
from frontends.fastcall import MISS
from frontends.julia import jast as J
from frontends.julia import machine_ints
from frontends.julia.check import check_function
from frontends.julia.directives import Dim, Scheduler
from frontends.julia.errors import JuliaFrontendError, UnsupportedJulia
from frontends.julia.inline import inline_helpers
from frontends.julia.jtypes import ELEMENT, ArgType, arg_type
from frontends.julia.repeat import args_stub
from frontends.julia.translate import Built, Spec, Translator
from middleend.ir.errors import KernelArgumentError


def translate(fn: J.Function, spec: Spec, use_schedule: bool = True,
              target: str = "cpu") -> Built:
    """The middle-end Function of ``fn`` specialized on ``spec``, with its directives (if
    ``use_schedule``) and the ordering commands applied; directives that ask about the
    machine (``vector_lanes(T)``) are answered for ``target``'s."""
    machine = lambda: me.target_machine(target)  # noqa: E731  (asked only if needed)
    schedule = tuple(_blocks(d, machine, fn.name) for d in fn.schedule) if use_schedule \
        else ()
    stores = tuple(d for d in schedule if d.fn in ("store_in", "pack"))
    b = Translator(fn, spec, stores).build()
    dims = {c.name: [Dim(n, f"L{lid}") for n, lid in zip(
        b.loop_names[k], b.loop_ids[k], strict=True)] for k, c in b.comps.items()}
    comps = [b.comps[k] for k in sorted(b.comps, key=lambda k: (b.placed_at[k], k))]
    sch = Scheduler(fn.name, comps, b.names, dims, b.arrays, machine)
    for d in schedule:
        sch.apply(d)
    sch.order()
    return b


def _blocks(d: J.Call, machine: Callable[[], me.Machine | None], fn: str) -> J.Call:
    """``d`` with its block sizes that ask the machine answered (``pack(A, Ap, 1 % (3 *
    vector_lanes(Float64)), 2, 1)``: machine_ints.resolve_blocks)."""
    try:
        return machine_ints.resolve_blocks(d, machine)
    except ValueError as e:
        raise UnsupportedJulia(d.line, f"directive {d.fn}: {e}", fn) from None


def all_fastmath(body: tuple[J.Stmt, ...]) -> bool:
    """Whether there is an assignment and every one is under ``@fastmath``."""
    seen = False
    for s in body:
        if isinstance(s, J.Assign):
            if not s.fastmath:
                return False
            seen = True
        elif isinstance(s, J.For | J.If):
            inner = s.body if isinstance(s, J.For) else s.then + s.orelse
            if any(isinstance(x, J.Assign | J.For | J.If) for x in inner):
                if not all_fastmath(inner):
                    return False
                seen = True
    return seen


# numpy dtype -> the element type (looked up per argument of every call)
_BY_NUMPY: dict[np.dtype, me.DType] = {np.dtype(t.numpy): t for t in ELEMENT.values()}


def _numpy_elem(dt: np.dtype, what: str) -> me.DType:
    t = _BY_NUMPY.get(dt)
    if t is None:
        raise KernelArgumentError(f"{what}: unsupported element type {dt}")
    return t


_UNMADE = object()  # a specialization whose repeated-call stub is not made yet
_STUBS = 4  # how many specializations' stubs a kernel keeps


@dataclass
class _Compiled:
    built: Built
    kernel: Any
    stub: Any = _UNMADE  # its stub (:mod:`.repeat`), None where it has none


def _arguments(built: Built, spec: Spec, args: tuple[Any, ...], copy: bool = False
               ) -> dict[str, np.ndarray]:
    """The kernel's arrays by buffer name for the Julia ``args`` (views: the kernel
    updates the caller's arrays in place; ``copy``: copies)."""
    kw: dict[str, np.ndarray] = {}
    for k, name in built.buffer_of_arg.items():
        x, t = args[k], spec.types[k]
        kw[name] = (x.T.copy() if copy else x.T) if t.ndim else \
            np.array([x], dtype=t.elem.numpy)
    return kw


class JuliaKernel:
    """A compiled ``@acc`` function; call it with the Julia arguments in order."""

    def __init__(self, fn: J.Function, target: str = "cpu", use_schedule: bool | str = True,
                 service: Any = None, fp_contract: bool = False) -> None:
        fn = inline_helpers(fn)  # calls of the source's one-expression functions
        check_function(fn)  # what no specialization translates is refused now
        self.function = fn
        self.target, self.use_schedule = target, use_schedule
        self.service = service
        # @fastmath over every assignment allows (among much else) contracting a * b + c;
        # over a part only, contracting the rest too would change results it does not
        # cover, so it is not honoured there (allowed: @fastmath permits, never requires)
        self.fp_contract = fp_contract or all_fastmath(fn.body)
        self._cache: dict[Spec, _Compiled] = {}
        self.compiles = 0  # how many specializations were built
        # each declared argument type, parsed once (a call is checked against it)
        self._declared: list[ArgType | None] = [
            None if a.type is None else arg_type(a.type, a.line, f"argument {a.name!r}")
            for a in fn.args]
        self._array_types: dict[tuple[me.DType, int], ArgType] = {}
        self.repeats = 0  # calls served by a stub of an earlier call (:mod:`.repeat`)
        self._stubs: tuple[Any, ...] = ()  # the last few specializations' stubs

    def spec_of(self, args: tuple[Any, ...]) -> Spec:
        """The specialization ``args`` call for (types, array sizes, Int values), checked
        against the declared types; every call goes through here, so the array case is
        kept short (an error message is only built when it is raised)."""
        fn = self.function
        if len(args) != len(fn.args):
            raise KernelArgumentError(f"{fn.name}: {len(args)} arguments given, "
                                      f"{len(fn.args)} expected")
        types, sizes, ints = [], [], []
        for a, want, x in zip(fn.args, self._declared, args, strict=True):
            if isinstance(x, np.ndarray) and x.ndim:
                elem = _BY_NUMPY.get(x.dtype)
                got = self._array_types.get((elem, x.ndim)) if elem is not None else None
                if got is None:
                    got = self._array_type(x, a)
                fl = x.flags
                if not fl.f_contiguous and (x.ndim > 1 or not fl.c_contiguous):
                    self._refuse_layout(x, a)
                size: tuple[int, ...] | None = x.shape
                value = None
            else:
                got = self._scalar_type(x, a)
                size = None
                value = int(x) if got.elem.is_int else None
            if want is not None and want != got:
                raise KernelArgumentError(f"{fn.name}: argument {a.name!r}: expected "
                                          f"{want.julia}, got {got.julia}")
            types.append(got)
            sizes.append(size)
            ints.append(value)
        return Spec(tuple(types), tuple(sizes), tuple(ints))

    def _array_type(self, x: np.ndarray, a: J.Arg) -> ArgType:
        got = ArgType(_numpy_elem(x.dtype, f"{self.function.name}: argument {a.name!r}"),
                      x.ndim)
        self._array_types[got.elem, got.ndim] = got
        return got

    def _refuse_layout(self, x: np.ndarray, a: J.Arg) -> None:
        what = f"{self.function.name}: argument {a.name!r}"
        if x.ndim > 1 and not x.flags.f_contiguous:
            raise KernelArgumentError(f"{what}: expected a Fortran-order (column-major, "
                                      "like Julia) array; use np.asfortranarray")
        raise KernelArgumentError(f"{what}: the array is not contiguous")

    def _scalar_type(self, x: Any, a: J.Arg) -> ArgType:
        what = f"{self.function.name}: argument {a.name!r}"
        if isinstance(x, np.ndarray):  # 0-d: a scalar
            return ArgType(_numpy_elem(x.dtype, what), 0)
        if isinstance(x, (bool, np.bool_)):
            return ArgType(me.bool_, 0)
        if isinstance(x, (int, np.integer)):
            return ArgType(_numpy_elem(np.asarray(x).dtype, what) if
                           isinstance(x, np.integer) else me.int64, 0)
        if isinstance(x, (float, np.floating)):
            return ArgType(_numpy_elem(np.asarray(x).dtype, what) if
                           isinstance(x, np.floating) else me.float64, 0)
        raise KernelArgumentError(f"{what}: expected a numpy array or a number, "
                                  f"got {type(x).__name__}")

    def compiled(self, spec: Spec, args: tuple[Any, ...] | None = None) -> _Compiled:
        """The specialization ``spec``, built on first use; ``schedule="tune"`` times its
        candidates on ``args`` (copies: the caller's arrays are not touched)."""
        got = self._cache.get(spec)
        if got is None:
            auto = self.use_schedule in ("auto", "tune")
            built = translate(self.function, spec, not auto and bool(self.use_schedule),
                              self.target)
            extra: dict[str, Any] = {"schedule": "auto"} if self.use_schedule == "auto" \
                else {}
            tuned = ""
            if self.use_schedule == "tune":
                if args is None:
                    raise JuliaFrontendError(f"{self.function.name}: schedule='tune' times "
                                             "candidates on a call's arguments: call it")
                tuned = built.fn.auto_schedule(
                    self.target, outputs=built.outputs, tune=True,
                    inputs=_arguments(built, spec, args, copy=True), service=self.service,
                    fp_contract=self.fp_contract).python()
            kernel = built.fn.compile(target=self.target, outputs=built.outputs,
                                      service=self.service, fp_contract=self.fp_contract,
                                      **extra)
            if tuned:
                kernel.auto_schedule = tuned
            got = self._cache[spec] = _Compiled(built, kernel)
            self.compiles += 1
        return got

    def auto_schedule(self, *args: Any) -> str:
        """The schedule ``schedule="auto"`` (or ``"tune"``) chose for the specialization
        ``args`` call (it is compiled if it was not yet), as Python statements on the
        translated Function ``f``; "" for a kernel compiled with its own schedule or none."""
        return self.compiled(self.spec_of(args), args).kernel.auto_schedule

    def __call__(self, *args: Any) -> Any:
        """Runs the kernel on the arguments (arrays updated in place) and returns what the
        function's ``return x`` returns: the argument itself, a new (column-major) array,
        or a numpy scalar; None without one."""
        for stub in self._stubs:
            if (res := stub(args)) is not MISS:
                self.repeats += 1
                return res
        spec = self.spec_of(args)
        c = self.compiled(spec, args)
        kw = _arguments(c.built, spec, args)
        out = c.kernel(**kw)
        r = c.built.returns
        if c.stub is _UNMADE:
            c.stub = args_stub(args, spec, c.built.buffer_of_arg, r, c.kernel, kw)
            if c.stub is not None:
                self._stubs = (c.stub, *self._stubs[:_STUBS - 1])
        if r is None:
            return None
        if r[0] == "arg":
            return args[int(r[1])]
        got = out[str(r[1])]
        return got[0] if r[0] == "value" else got.T


SCHEDULES = (True, False, "auto", "tune")


def compile_source(text: str, name: str, target: str = "cpu", schedule: bool | str = True,
                   service: Any = None, fp_contract: bool = False) -> JuliaKernel:
    """The function ``name`` of Julia source ``text`` as a callable kernel. ``schedule``
    False ignores its ``@schedule`` directives (the same code, unscheduled); ``"auto"``
    ignores them too and has the middle-end schedule each specialization itself (its
    sizes known: every bound is a constant), the choice then in
    :meth:`JuliaKernel.auto_schedule`; ``"tune"`` also builds and times the best few
    candidates on each specialization's first call's arguments (copies of them), and
    keeps the fastest (stored: the same program on the same machine is not tuned twice)."""
    from frontends.julia.parse import parse_function

    if schedule not in SCHEDULES or not isinstance(schedule, (bool, str)):
        raise JuliaFrontendError(f"{name}: schedule must be True, False, 'auto' or 'tune', "
                                 f"got {schedule!r}")
    fn = parse_function(text, name)
    if not isinstance(fn, J.Function):
        raise JuliaFrontendError(f"{name}: the parser returned {type(fn).__name__}")
    return JuliaKernel(fn, target, schedule, service, fp_contract)
