"""The calling convention every target's kernels share: numpy arrays in by buffer name,
integer parameters by name (or inferred from the arrays' shapes), a dict of numpy outputs
back.

Generated code trusts its arguments completely (``restrict`` pointers, sizes computed from
the parameters), so every check that keeps it memory-safe happens here, before the call:
each array must have exactly the declared dtype and shape, be C-contiguous and aligned,
outputs must be writeable and must not overlap other arguments. A target supplies only
:meth:`Kernel._invoke`, the call itself (ctypes for a shared object, an OpenCL queue, an
``mpiexec`` launch, a C-simulation).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.errors import KernelArgumentError, KernelRuntimeError
from ..ir.loopast import BufferDecl, IExpr, IInt, IOp, IVar, Program, Signature, ieval

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ABSENT = object()  # an argument not passed (None is passed, and refused, as a value)

RC_MESSAGES = {
    1: "data-dependent index out of bounds in kernel {name}",
    2: "memory allocation failed in kernel {name}",
}


def _param_of(size: IExpr, params: tuple[str, ...]) -> tuple[str, int] | None:
    """If ``size`` is ``p_X``, ``p_X + c``, ``c + p_X`` or ``p_X - c``, return ``(X, c)``
    (so that ``X = extent - c``); the shapes of arrays then determine ``X``."""
    def param(e: IExpr) -> str | None:
        if isinstance(e, IVar) and e.name.startswith("p_") and e.name[2:] in params:
            return e.name[2:]
        return None

    if (name := param(size)) is not None:
        return name, 0
    if isinstance(size, IOp) and size.op in ("add", "sub") and len(size.args) == 2:
        a, b = size.args
        if (name := param(a)) is not None and isinstance(b, IInt):
            return name, b.value if size.op == "add" else -b.value
        if size.op == "add" and (name := param(b)) is not None and isinstance(a, IInt):
            return name, a.value
    return None


@dataclass(frozen=True)
class CallPlan:
    """A checked call, for repeating it (:meth:`Kernel.plan`): the parameters in signature
    order and, per argument in signature order, its buffer name, what to allocate when
    it was not passed (shape, dtype, zeroed; None: it was passed) and whether the kernel
    writes it; ``pairs``: the arguments (indices) that must not overlap in memory."""

    params: tuple[int, ...]
    names: tuple[str, ...]
    absent: tuple[tuple[tuple[int, ...], np.dtype, bool] | None, ...]
    writes: tuple[bool, ...]
    pairs: tuple[tuple[int, int], ...]


class Kernel(abc.ABC):
    """A compiled program. Call it with keyword arrays (named by buffer) and integer
    parameters (named by parameter); it returns ``{output name: array}``, allocating the
    outputs that were not passed."""

    def __init__(self, program: Program | Signature, *, source: str = "", cache_key: str = "",
                 lowered: Any = None, inspect: Callable[[], Any] | None = None,
                 artifact: Any = None) -> None:
        """``program`` is the lowered Program, or just its :class:`Signature` when the kernel
        was built elsewhere (a service); ``lowered`` (or ``inspect``, a callable producing
        it on demand) gives the layers for inspection; ``artifact`` is the artifact the
        kernel came from, if any."""
        self.signature = program if isinstance(program, Signature) else Signature.of(program)
        self._program = program if isinstance(program, Program) else None
        self._lowered = lowered
        self._inspect = inspect
        self.artifact = artifact
        self.source = source
        self.cache_key = cache_key
        self.timings: tuple[Any, ...] = ()  # the compile's phases, when built by a service
        self.diagnostics: tuple[Any, ...] = ()  # its warnings
        self.auto_schedule = ""  # schedule="auto": the chosen schedule, as Python on `f`
        sig = self.signature
        self._arguments: tuple[BufferDecl, ...] = sig.arguments
        clash = set(sig.params) & {b.name for b in self._arguments}
        if clash:
            raise KernelArgumentError(f"kernel {sig.name}: names {sorted(clash)} are both "
                                      f"parameters and buffers; keyword calls would be ambiguous")
        # What every call needs, derived once: a call then costs a few dict lookups and
        # array-attribute reads (Halide's realize overhead is ~2 us; ours was ~70 us).
        self._valid = frozenset(self.valid_names)
        self._dtypes = tuple(b.dtype.numpy for b in self._arguments)
        self._writes = tuple(b.role in ("output", "inout") for b in self._arguments)
        self._infer = tuple(
            (b.name, len(b.sizes), tuple((k, *found) for k, size in enumerate(b.sizes)
                                         if (found := _param_of(size, sig.params))))
            for b in self._arguments)
        self._pairs = tuple((i, j) for i in range(len(self._arguments))
                            for j in range(i + 1, len(self._arguments))
                            if self._writes[i] or self._writes[j])
        self._shapes: dict[tuple[int, ...], tuple[tuple[int, ...], ...]] = {}
        self._required = tuple((b.name, b.role) for b in self._arguments
                               if b.role in ("input", "inout"))

    def _error_text(self, rc: int) -> str | None:
        """The message of a status beyond ``RC_MESSAGES`` (a target's runtime error)."""
        return None

    @abc.abstractmethod
    def _invoke(self, params: list[int], arrays: list[np.ndarray]) -> int:
        """Run the kernel on checked arguments (params in signature order, then the
        argument arrays in signature order, each with at least one element); returns the
        status (0, or a code of ``RC_MESSAGES``)."""

    @property
    def lowered(self) -> Any:
        """The four layers this kernel came from (lowered again locally, on demand, for a
        kernel that was compiled through a service)."""
        if self._lowered is None and self._inspect is not None:
            self._lowered = self._inspect()
        if self._lowered is None:
            raise AttributeError(f"kernel {self.signature.name}: no IR is available for "
                                 "inspection (it was loaded from an artifact only)")
        return self._lowered

    @property
    def program(self) -> Program:
        """The loop AST (see :attr:`lowered`)."""
        return self._program if self._program is not None else self.lowered.program

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def valid_names(self) -> list[str]:
        return [*self.signature.params, *(b.name for b in self._arguments)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.signature.name!r})"

    # ------------------------------------------------------------------ arguments
    def _params(self, kwargs: Mapping[str, Any]) -> dict[str, int]:
        """Explicit parameters, then those implied by the shapes of the arrays passed."""
        name = self.signature.name
        values: dict[str, int] = {}
        for p in self.signature.params:
            if p in kwargs:
                v = kwargs[p]
                if type(v) is not int:  # noqa: E721 (bool is an int subclass: refused)
                    if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
                        raise KernelArgumentError(f"kernel {name}: parameter {p} must be an "
                                                  f"int, got {type(v).__name__} {v!r}")
                    v = int(v)
                if not _INT64_MIN <= v <= _INT64_MAX:
                    raise KernelArgumentError(f"kernel {name}: parameter {p}={v} does not fit "
                                              f"in 64 bits")
                values[p] = v
        inferred: dict[str, tuple[int, str]] = {}
        for bname, ndim, found in self._infer:
            if not found:
                continue
            arr = kwargs.get(bname)
            if not isinstance(arr, np.ndarray) or arr.ndim != ndim:
                continue  # reported by the array checks
            for k, p, c in found:
                if p in values:
                    continue
                v = arr.shape[k] - c
                if p in inferred and inferred[p][0] != v:
                    raise KernelArgumentError(
                        f"kernel {name}: the shapes disagree on parameter {p}: "
                        f"{inferred[p][1]} implies {p}={inferred[p][0]}, buffer {bname} "
                        f"(shape {arr.shape}) implies {p}={v}")
                inferred.setdefault(p, (v, f"buffer {bname} (shape {arr.shape})"))
        values.update({p: v for p, (v, _) in inferred.items()})
        if len(values) != len(self.signature.params):
            missing = [p for p in self.signature.params if p not in values]
            raise KernelArgumentError(
                f"kernel {name}: missing parameter(s) {', '.join(missing)}: pass them as "
                f"keywords or pass arrays whose shapes determine them")
        for p, (lo, hi) in self.signature.param_bounds.items():
            v = values[p]
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise KernelArgumentError(
                    f"kernel {name}: parameter {p}={v} is outside the range the kernel was "
                    f"compiled for (min={lo}, max={hi})")
        if self.signature.requirements:
            self._check_requirements(values)
        return values

    def _check_requirements(self, values: dict[str, int]) -> None:
        """Refuse parameter values for which the program writes outside a buffer (the
        compiler proved it happens exactly for those): nothing runs."""
        env = {f"p_{p}": v for p, v in values.items()}
        for r in self.signature.requirements:
            if not ieval(r.violated, env):
                continue
            given = ", ".join(f"{p}={v}" for p, v in values.items())
            decl = next((b for b in self._arguments if b.name == r.buffer), None)
            shape = f"; buffer {r.buffer} then has shape {self._shape(decl, env)}" \
                if decl is not None else ""
            raise KernelArgumentError(f"kernel {self.signature.name}: {r.message} when "
                                      f"{given}{shape}")

    def _shape(self, b: BufferDecl, env: dict[str, int]) -> tuple[int, ...]:
        try:
            return tuple(max(0, ieval(s, env)) for s in b.sizes)
        except KeyError as exc:
            raise KernelArgumentError(f"kernel {self.signature.name}: the size of buffer "
                                      f"{b.name} depends on {exc.args[0]}, which is not a "
                                      f"parameter") from exc

    def _check(self, b: BufferDecl, arr: Any, shape: tuple[int, ...]) -> np.ndarray:
        where = f"kernel {self.signature.name}: buffer {b.name}"
        want = b.dtype.numpy
        if not isinstance(arr, np.ndarray):
            raise KernelArgumentError(f"{where}: expected a numpy array of {want} with shape "
                                      f"{shape}, got {type(arr).__name__}")
        if arr.dtype != want:
            raise KernelArgumentError(f"{where}: expected dtype {want}, got {arr.dtype}")
        if arr.shape != shape:
            raise KernelArgumentError(f"{where}: expected shape {shape}, got {arr.shape}")
        if not arr.flags.c_contiguous:
            raise KernelArgumentError(f"{where}: expected a C-contiguous array, got strides "
                                      f"{arr.strides} (use np.ascontiguousarray)")
        if not arr.flags.aligned:
            raise KernelArgumentError(f"{where}: the array is not aligned for {want}")
        if b.role in ("output", "inout") and not arr.flags.writeable:
            raise KernelArgumentError(f"{where}: output array is read-only")
        return arr

    # ------------------------------------------------------------------ call
    def _shapes_for(self, params: dict[str, int]) -> tuple[tuple[int, ...], ...]:
        """Every argument's shape for these parameter values (remembered per kernel for a
        few recent values: a repeated call recomputes nothing)."""
        key = tuple(params[p] for p in self.signature.params)
        got = self._shapes.get(key)
        if got is None:
            env = {f"p_{p}": v for p, v in params.items()}
            got = tuple(self._shape(b, env) for b in self._arguments)
            if len(self._shapes) >= 64:
                self._shapes.clear()
            self._shapes[key] = got
        return got

    def __call__(self, **kwargs: Any) -> dict[str, np.ndarray]:
        params, arrays = self._checked(kwargs, allocate=True)
        self.run_prepared(params, arrays)
        return {b.name: a for b, a, w in zip(self._arguments, arrays, self._writes,
                                             strict=True) if w}

    def plan(self, **kwargs: Any) -> CallPlan:
        """What a call with these arguments would pass, checked as the call checks them,
        without running anything or allocating: for a front-end that repeats a call
        (:meth:`run_prepared`)."""
        params, arrays = self._checked(kwargs, allocate=False)
        shapes = self._shapes_for(dict(zip(self.signature.params, params, strict=True)))
        absent = tuple(None if a is not None else (shape, want, not b.fully_written)
                       for a, b, shape, want in zip(arrays, self._arguments, shapes,
                                                    self._dtypes, strict=True))
        return CallPlan(tuple(params), tuple(b.name for b in self._arguments), absent,
                        self._writes, self._pairs)

    def _checked(self, kwargs: Mapping[str, Any], allocate: bool
                 ) -> tuple[list[int], list[Any]]:
        """The parameters (signature order) and the arrays (one per argument) of a call,
        every argument checked; an argument not passed is allocated (zeroed where the
        kernel does not write all of it), or None when not ``allocate``."""
        name = self.signature.name
        if not self._valid.issuperset(kwargs):
            unknown = sorted(set(kwargs) - self._valid)
            raise KernelArgumentError(f"kernel {name}: unknown argument(s) {', '.join(unknown)}"
                                      f"; valid names: {', '.join(self.valid_names)}")
        for bname, role in self._required:
            if bname not in kwargs:
                what = "input" if role == "input" else "in/out (read and written in place)"
                raise KernelArgumentError(f"kernel {name}: missing {what} buffer {bname}")
        params = self._params(kwargs)
        shapes = self._shapes_for(params)
        arrays: list[Any] = []
        for b, shape, want, writes in zip(self._arguments, shapes, self._dtypes, self._writes,
                                          strict=True):
            arr = kwargs.get(b.name, _ABSENT)
            if arr is _ABSENT:
                # never hand back uninitialised memory: zero what the kernel does not write
                alloc = np.empty if b.fully_written else np.zeros
                arr = alloc(shape, dtype=want) if allocate else None
            elif not (type(arr) is np.ndarray and arr.dtype == want and arr.shape == shape
                      and (fl := arr.flags).c_contiguous and fl.aligned
                      and (fl.writeable or not writes)):
                arr = self._check(b, arr, shape)  # raises the error that applies
            arrays.append(arr)
        return [params[p] for p in self.signature.params], arrays

    def run_prepared(self, params: list[int], arrays: list[np.ndarray]) -> None:
        """Run on ``params`` (signature order) and ``arrays`` (one per argument, in
        signature order) that the caller has already checked as :meth:`__call__` checks
        them: each of the declared dtype, of the shape these params give, C-contiguous,
        aligned, writeable where written (a front-end that repeats a call it has checked
        once, :mod:`frontends.halide.prepared`, calls this). The one check that depends
        on where the arrays lie, that no output overlaps another argument, is made here;
        a failing status raises :class:`KernelRuntimeError`."""
        name = self.signature.name
        for i, j in self._pairs:
            a, o = arrays[i], arrays[j]
            if a.size and o.size and np.may_share_memory(a, o):
                raise KernelArgumentError(
                    f"kernel {name}: buffers {self._arguments[i].name} and "
                    f"{self._arguments[j].name} overlap in memory; an output must not alias "
                    "another argument")
        # A checked out-of-bounds access falls back to element 0: it must exist.
        passed = [a if a.size else np.zeros(1, dtype=a.dtype) for a in arrays]
        rc = self._invoke(params, passed)
        if rc != 0:
            self.raise_status(rc)

    def raise_status(self, rc: int) -> None:
        """Raise the :class:`KernelRuntimeError` of a failing status ``rc``."""
        text = self._error_text(rc)
        if text is not None:
            raise KernelRuntimeError(text)
        msg = RC_MESSAGES.get(rc, "kernel {name} failed with status " + str(rc))
        raise KernelRuntimeError(msg.format(name=self.signature.name))

    def raw_entry(self) -> Callable[..., int] | None:
        """The kernel's C entry point, called as ``entry(*params, *addresses)`` (the
        arrays' data addresses, in signature order), where :meth:`_invoke` is exactly that
        call (a shared object called in-process); None elsewhere. For a front-end's
        repeated call, which makes :meth:`run_prepared`'s checks itself."""
        return None

    def packed_entry(self) -> int | None:
        """The address of the kernel's packed C entry, ``int me_<name>_packed(const
        int64_t *words)`` (:func:`backends.clike.entry.packed_definition`: the params,
        then the arrays' data addresses, as :meth:`raw_entry` takes them), where the
        kernel has one and :meth:`_invoke` is exactly that call; None elsewhere. For a
        caller written in C (:mod:`frontends.fastcall`)."""
        return None

