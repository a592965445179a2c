"""Repeated kernel calls checked and made in C, for the front-ends: a small CPython
extension (``fastcall.c``), built on first use against this Python's and numpy's headers
by the cpu target's compiler, in its build cache like the kernels (keyed by the source,
which names the Python and numpy versions, the compiler and the host). Its stubs call the
packed entry every cpu kernel exports (:meth:`~middleend.target.kernel.Kernel.packed_entry`).

Why: a repeated call's checks (:meth:`frontends.halide.prepared.Prepared.call`, a Julia
kernel's specialization lookup and the kernel's own checks) cost 5-30 us in Python with the
interpreter's code and data in the caches and 60-150 us after a kernel has streamed a large
image (Halide's whole ``realize(buffer)``: 2 and 25-55 us); in C they read a few words of
each argument.

Where the extension cannot be built (no ``Python.h``: a Python without its development
headers; no C compiler), :func:`stub_type` says why and the Python path serves every call:
the same results, more overhead. ``MIDDLEEND_NO_FASTCALL=1`` (or true, yes, on) turns it off
(to compare the two, or to rule it out)."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import logging
import os
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from middleend.api.hostlib import host_library
from middleend.ir.errors import MiddleEndError

log = logging.getLogger(__name__)

_MODULE = "_me_fastcall"
OFF_ENV = "MIDDLEEND_NO_FASTCALL"
MAX_WORDS = 256  # fastcall.c's MAX_WORDS: a kernel with more arguments gets no stub
# what a stub, and a front-end's Python path of a repeated call, returns for a call it
# does not match
MISS = object()


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Any, str]:
    """(the extension module or None, why not); built (by the cpu target's
    compiler and cache, :func:`middleend.api.hostlib.host_library`) and imported once per
    process. The source starts with a comment naming this Python's version and ABI and
    numpy's version: the build cache keys on the source, and an extension built for
    another Python or numpy must not be loaded."""
    include = sysconfig.get_paths().get("include", "")
    if not include or not (Path(include) / "Python.h").exists():
        return None, f"this Python has no development headers (no Python.h in {include!r})"
    built_for = (f"/* built for Python {sys.version.split()[0]} "
                 f"({sysconfig.get_config_var('EXT_SUFFIX') or '?'}), numpy {np.__version__}"
                 " */\n")
    source = built_for + Path(__file__).with_name("fastcall.c").read_text()
    try:
        path = host_library(source, include_dirs=(include, np.get_include()))
        loader = importlib.machinery.ExtensionFileLoader(_MODULE, str(path))
        spec = importlib.util.spec_from_file_location(_MODULE, path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except (MiddleEndError, OSError, ImportError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.info("repeated kernel calls take the Python path: %s", first)
        return None, f"the fast-call extension could not be built or loaded: {first}"
    return module, ""


def _module() -> tuple[Any, str]:
    """The extension module, unless ``$MIDDLEEND_NO_FASTCALL`` says off (1, true, yes,
    on) or it cannot be built: then None and why."""
    off = os.environ.get(OFF_ENV, "")
    if off.strip().lower() in ("1", "true", "yes", "on"):
        return None, f"${OFF_ENV}={off}"
    return _load()


def stub_type() -> tuple[Any, str]:
    """The ``Stub`` type and "" where the extension is usable, else (None, the reason)."""
    module, why = _module()
    return (None, why) if module is None else (module.Stub, "")


def make_stub(*, sizes: tuple[int, ...],
              images: tuple[tuple[str, tuple[int, ...], tuple[int, ...], np.dtype, int], ...],
              scalars: tuple[tuple[str, type, Any], ...], out_list: bool,
              outs: tuple[tuple[tuple[int, ...], np.dtype, int], ...], params: tuple[int, ...],
              base_addresses: tuple[int, ...], nbytes: tuple[int, ...],
              pairs: tuple[tuple[int, int], ...], entry: int,
              on_error: Callable[[int], None], keep: object
              ) -> Callable[[Any, Any, Any], Any] | None:
    """A C function of ``(sizes, inputs, out)`` that returns what
    :meth:`~frontends.halide.prepared.Prepared.call` returns for a call with preallocated
    outputs (the arrays given, the kernel run on them), or :data:`MISS`; None where the
    extension is not usable or the call has a scalar it does not compare (only Python
    ints, bools and floats: a numpy scalar takes the Python path). Arguments as
    :class:`~frontends.halide.prepared.Prepared` keeps them (positions among the array
    arguments); ``entry``: :meth:`~middleend.target.kernel.Kernel.packed_entry`."""
    stub, _ = stub_type()
    if stub is None or any(kind not in (int, bool, float) for _, kind, _ in scalars) or \
            len(params) + len(nbytes) > MAX_WORDS:
        return None
    p = len(params)
    fixed = (*params, *base_addresses)
    return stub(sizes,
                tuple((name, dtype, p + pos, shape, strides)
                      for name, shape, strides, dtype, pos in images),
                scalars, out_list,
                tuple((None, dtype, p + pos, shape, None) for shape, dtype, pos in outs),
                fixed, p, nbytes, pairs, entry, on_error, MISS, keep)


def make_args_stub(*, nargs: int,
                   images: tuple[tuple[int, np.dtype, int, tuple[int, ...], tuple[int, ...],
                                       bool], ...],
                   values: tuple[tuple[int, int], ...], ints: tuple[tuple[int, int], ...],
                   params: tuple[int, ...], nbytes: tuple[int, ...],
                   pairs: tuple[tuple[int, int], ...], result: int | None, entry: int,
                   on_error: Callable[[int], None]
                   ) -> Callable[[tuple[Any, ...]], Any] | None:
    """A C function of a call's tuple of positional arguments (``nargs`` of them) that runs
    the kernel and returns argument ``result`` (None: returns None), or returns :data:`MISS`
    without running anything; None where the extension is not usable. Per array argument
    (``images``): its position, dtype, array-argument position, shape, strides and
    whether the kernel writes it (it must then be writeable); ``values``: (position,
    array-argument position) per Float64 scalar, handed to the kernel as a one-element
    array; ``ints``: (position, value) per Int argument the kernel was specialized for;
    ``params``, ``nbytes``, ``pairs`` as :class:`~middleend.target.kernel.CallPlan` has
    them; ``entry``: :meth:`~middleend.target.kernel.Kernel.packed_entry`."""
    module, _ = _module()
    if module is None or len(params) + len(nbytes) > MAX_WORDS:
        return None
    p = len(params)
    fixed = (*params, *([0] * len(nbytes)))
    return module.ArgsStub(
        nargs, tuple((k, dtype, p + pos, shape, strides, writes)
                     for k, dtype, pos, shape, strides, writes in images),
        tuple((k, p + pos) for k, pos in values), ints, fixed, p, nbytes, pairs,
        -1 if result is None else result, entry, on_error, MISS, ())
