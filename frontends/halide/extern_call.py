"""The call of a Halide extern stage (``Func.define_extern``) from C, built by the cpu
target's host compiler (``middleend.api.hostlib``).

Halide calls an extern stage as ``int name(halide_buffer_t *in..., scalars...,
halide_buffer_t *out...)``, resolved by symbol, first in bounds-query mode (every buffer's
``host`` NULL: the stage writes the region it needs into its input buffers' ``min`` and
``extent``), then with real buffers; 0 means success. This module prints, per extern
signature, one small C function ``me_extern_call`` that builds the ``halide_buffer_t`` and
``halide_dimension_t`` of each buffer argument (the struct layout declared here from
Halide's documented ABI, ``HalideRuntime.h``: ``device``, ``device_interface``, ``host``,
``flags``, ``type {code, bits, lanes}``, ``dimensions``, ``dim {min, extent, stride,
flags}``, ``padding``), finds the symbol with ``dlsym(RTLD_DEFAULT, ...)`` at call time
(a library loaded with ``ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)``, as Halide's JIT
needs, or linked into the process) and calls it. The printed text holds only the
validated symbol name and typed integer constants; the host pointers, the sizes and the
scalar values arrive at call time. :class:`ExternCall` loads it and raises one-line
errors naming the extern (a missing symbol, a non-zero return code).
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from middleend.api.hostlib import host_library
from middleend.ir.errors import KernelRuntimeError

_SYMBOL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

#: halide_type_code_t (HalideRuntime.h)
TYPE_CODES = {"int": 0, "uint": 1, "float": 2, "handle": 3, "bfloat": 4}

#: scalar argument types: (code, bits) -> (C type, ctypes type)
_SCALARS: dict[tuple[str, int], tuple[str, type]] = {
    ("int", 8): ("int8_t", ctypes.c_int8), ("int", 16): ("int16_t", ctypes.c_int16),
    ("int", 32): ("int32_t", ctypes.c_int32), ("int", 64): ("int64_t", ctypes.c_int64),
    ("uint", 1): ("bool", ctypes.c_bool), ("uint", 8): ("uint8_t", ctypes.c_uint8),
    ("uint", 16): ("uint16_t", ctypes.c_uint16), ("uint", 32): ("uint32_t", ctypes.c_uint32),
    ("uint", 64): ("uint64_t", ctypes.c_uint64), ("float", 32): ("float", ctypes.c_float),
    ("float", 64): ("double", ctypes.c_double),
}


class ExternStageError(KernelRuntimeError):
    """An extern stage failed at call time (missing symbol, non-zero return code, a bounds
    query asking for what cannot be provided): one line naming the extern."""


@dataclass(frozen=True)
class BufferArg:
    """A ``halide_buffer_t *`` argument: element type and number of dimensions."""

    code: str
    bits: int
    dims: int
    output: bool = False
    whole: bool = False  # an ImageParam or constant Buffer: a copy of it in a bounds query


@dataclass(frozen=True)
class ScalarArg:
    """A scalar argument passed by value, of Halide type ``code``/``bits``."""

    code: str
    bits: int


def check_symbol(name: str, func: str) -> str:
    """A C symbol name, the only text from the pipeline that reaches the printed C."""
    if not isinstance(name, str) or not _SYMBOL_RE.fullmatch(name):
        raise ExternStageError(f"extern stage {func!r}: {name!r} is not a C symbol name")
    return name


def scalar_supported(code: str, bits: int) -> bool:
    return (code, bits) in _SCALARS


def print_call(symbol: str, args: Sequence[BufferArg | ScalarArg]) -> str:
    """The C source of ``me_extern_call(query, hosts, dims, scalars, status)``.

    ``hosts``: one pointer per buffer argument; ``dims``: per buffer argument, per
    dimension, ``min, extent, stride``; ``scalars``: one pointer per scalar argument, to a
    value of its type; ``status``: the extern's return code. A bounds query (``query``
    non-zero) is Halide's: a Func input's and the output's ``host`` NULL, an ImageParam's
    or Buffer's a copy of it (its host kept), and every buffer's ``min`` and ``extent``
    written back into ``dims``. Returns 0, or -1 when the symbol is missing (nothing
    called)."""
    ptypes: list[str] = []
    lines: list[str] = []
    call: list[str] = []
    back: list[str] = []
    nb = ns = off = 0
    for a in args:
        if isinstance(a, BufferArg):
            code, bits, nd = TYPE_CODES[a.code], int(a.bits), int(a.dims)
            ptypes.append("me_halide_buffer_t *")
            host = f"hosts[{nb}]" if a.whole else f"(query ? NULL : hosts[{nb}])"
            lines += [f"    me_halide_dimension_t d{nb}[{max(nd, 1)}];",
                      f"    me_halide_buffer_t b{nb};",
                      f"    memset(&b{nb}, 0, sizeof b{nb});",
                      f"    memset(d{nb}, 0, sizeof d{nb});",
                      f"    for (int k = 0; k < {nd}; k++) {{",
                      f"        d{nb}[k].min = dims[{off} + 3 * k];",
                      f"        d{nb}[k].extent = dims[{off} + 3 * k + 1];",
                      f"        d{nb}[k].stride = dims[{off} + 3 * k + 2];",
                      "    }",
                      f"    b{nb}.host = {host};",
                      f"    b{nb}.type.code = {code};",
                      f"    b{nb}.type.bits = {bits};",
                      f"    b{nb}.type.lanes = 1;",
                      f"    b{nb}.dimensions = {nd};",
                      f"    b{nb}.dim = d{nb};"]
            call.append(f"&b{nb}")
            back += [f"        for (int k = 0; k < {nd}; k++) {{",
                     f"            dims[{off} + 3 * k] = d{nb}[k].min;",
                     f"            dims[{off} + 3 * k + 1] = d{nb}[k].extent;",
                     "        }"]
            nb += 1
            off += 3 * nd
        else:
            ct = _SCALARS[(a.code, int(a.bits))][0]
            ptypes.append(ct)
            call.append(f"*(const {ct} *)scalars[{ns}]")
            ns += 1
    sym = check_symbol(symbol, symbol)
    return "\n".join([
        "#define _GNU_SOURCE",
        "#include <dlfcn.h>",
        "#include <stdbool.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "/* halide_buffer_t and its parts, as HalideRuntime.h lays them out */",
        "typedef struct { int32_t min, extent, stride; uint32_t flags; } "
        "me_halide_dimension_t;",
        "typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } me_halide_type_t;",
        "typedef struct {",
        "    uint64_t device;",
        "    const void *device_interface;",
        "    uint8_t *host;",
        "    uint64_t flags;",
        "    me_halide_type_t type;",
        "    int32_t dimensions;",
        "    me_halide_dimension_t *dim;",
        "    void *padding;",
        "} me_halide_buffer_t;",
        f"typedef int (*me_extern_fn)({', '.join(ptypes) or 'void'});",
        "int me_extern_call(int query, uint8_t *const *hosts, int32_t *dims,",
        "                   const void *const *scalars, int32_t *status) {",
        f'    me_extern_fn fn = (me_extern_fn)dlsym(RTLD_DEFAULT, "{sym}");',
        "    if (fn == NULL) return -1;",
        *lines,
        f"    int rc = fn({', '.join(call)});",
        "    *status = rc;",
        "    if (rc == 0 && query) {",
        *back,
        "    }",
        "    (void)hosts; (void)scalars; (void)dims;",
        "    return 0;",
        "}",
        ""])


class ExternCall:
    """One extern stage's call, built for the cpu target: ``query`` then ``run``."""

    def __init__(self, func: str, symbol: str, args: Sequence[BufferArg | ScalarArg]) -> None:
        self.func = func
        self.symbol = check_symbol(symbol, func)
        self.args = tuple(args)
        self.source = print_call(self.symbol, self.args)
        lib = ctypes.CDLL(str(host_library(self.source)))
        fn = lib.me_extern_call
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                       ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_void_p),
                       ctypes.POINTER(ctypes.c_int32)]
        self._lib = lib  # keeps the library loaded while the function is used
        self._fn = fn

    def _call(self, query: bool, hosts: Sequence[np.ndarray | None], dims: np.ndarray,
              scalars: Sequence[object]) -> None:
        nb = sum(isinstance(a, BufferArg) for a in self.args)
        hv = (ctypes.c_void_p * max(nb, 1))(*[None if h is None else h.ctypes.data
                                              for h in hosts])
        svals = []
        for a, v in zip([a for a in self.args if isinstance(a, ScalarArg)], scalars,
                        strict=True):
            svals.append(_SCALARS[(a.code, int(a.bits))][1](v))  # type: ignore[call-arg]
        sv = (ctypes.c_void_p * max(len(svals), 1))(
            *[ctypes.cast(ctypes.pointer(s), ctypes.c_void_p) for s in svals])
        status = ctypes.c_int32(0)
        got = self._fn(1 if query else 0, hv,
                       dims.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), sv,
                       ctypes.byref(status))
        if got == -1:
            raise ExternStageError(
                f"extern stage {self.func!r}: symbol {self.symbol!r} not found in the process "
                "(load its library first with ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))")
        if status.value != 0:
            what = "bounds query" if query else "call"
            raise ExternStageError(f"extern stage {self.func!r}: {self.symbol}() returned "
                                   f"{status.value} in its {what}")

    def query(self, inputs: Sequence[tuple[np.ndarray, Sequence[int]] | None],
              region: Sequence[tuple[int, int]], scalars: Sequence[object]
              ) -> tuple[list[list[tuple[int, int]]], list[tuple[int, int]]]:
        """Halide's bounds queries of a stage at root: one with the output ``region``
        (``(min, extent)`` per dimension) in every output buffer, which the extern may
        round up, then one with the region it left in its first output (Halide's
        ``.o0``), which gives the inputs' regions. ``inputs``: per input buffer argument,
        ``(array, mins)`` of an ImageParam or Buffer (passed as a copy, its host kept, as
        Halide does), None for a Func's. Returns the inputs' regions and the output
        region."""
        nin = len(inputs)
        nout = len(self._buffers()) - nin
        out_region = list(region)
        got: list[list[tuple[int, int]]] = []
        for _ in range(2):
            regions: list[list[tuple[int, int]]] = []
            hosts: list[np.ndarray | None] = []
            for a, inp in zip(self._buffers()[:nin], inputs, strict=True):
                if inp is None:
                    regions.append([(0, 0)] * a.dims)
                    hosts.append(None)
                else:
                    arr, mins = inp
                    regions.append([(int(m), int(n)) for m, n in
                                    zip(mins, reversed(arr.shape), strict=True)])
                    hosts.append(arr)
            regions += [list(out_region) for _ in range(nout)]
            hosts += [None] * nout
            dims = self._dims(regions, [inp is not None for inp in inputs] + [False] * nout)
            self._call(True, hosts, dims, scalars)
            got, off = [], 0
            for a in self._buffers():
                got.append([(int(dims[off + 3 * k]), int(dims[off + 3 * k + 1]))
                            for k in range(a.dims)])
                off += 3 * a.dims
            out_region = got[nin]
        return got[:nin], out_region

    def run(self, arrays: Sequence[np.ndarray], mins: Sequence[Sequence[int]],
            scalars: Sequence[object]) -> None:
        """The real call: one C-contiguous array per buffer argument (numpy axes in
        reverse of Halide's dimensions), ``mins`` its coordinates of element 0."""
        regions = [[(int(m), int(n)) for m, n in zip(mn, reversed(a.shape), strict=True)]
                   for a, mn in zip(arrays, mins, strict=True)]
        self._call(False, list(arrays), self._dims(regions, [True] * len(regions)),
                   scalars)

    def _buffers(self) -> list[BufferArg]:
        return [a for a in self.args if isinstance(a, BufferArg)]

    def _dims(self, regions: Sequence[Sequence[tuple[int, int]]], strides: Sequence[bool]
              ) -> np.ndarray:
        """The flat ``min, extent, stride`` list; strides dense where asked, else 0 (a
        query buffer's)."""
        flat: list[int] = []
        for a, reg, dense in zip(self._buffers(), regions, strides, strict=True):
            stride = 1
            for k in range(a.dims):
                m, n = reg[k]
                flat += [m, n, stride if dense else 0]
                stride *= max(n, 1)
        return np.array(flat or [0], dtype=np.int32)
