"""A kernel in a shared object, called through ctypes with the C calling convention every
native target shares: ``int symbol(int64_t param..., T *buffer...)``."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from ..ir.errors import KernelArgumentError
from ..ir.loopast import Program, Signature
from .kernel import Kernel


class NativeKernel(Kernel):
    """``library`` is the path of a shared object exporting ``entry`` (default: the
    signature's symbol)."""

    def __init__(self, program: Program | Signature, library: str | Path, *,
                 entry: str | None = None, **kw: Any) -> None:
        super().__init__(program, **kw)
        sig = self.signature
        self.library_path = Path(library)
        self.entry = entry or sig.symbol
        self._lib = ctypes.CDLL(str(self.library_path))
        try:
            fn = getattr(self._lib, self.entry)
        except AttributeError as exc:
            raise KernelArgumentError(f"library {self.library_path} has no entry point "
                                      f"{self.entry}") from exc
        fn.restype = ctypes.c_int
        fn.argtypes = ([ctypes.c_int64] * len(sig.params)
                       + [ctypes.c_void_p] * len(sig.arguments))
        self._fn = fn

    def _invoke(self, params: list[int], arrays: list[np.ndarray]) -> int:
        return int(self._fn(*params, *[a.__array_interface__["data"][0] for a in arrays]))

    def raw_entry(self) -> Any:
        """The ctypes function, where ``_invoke`` is this class's own (a subclass that adds
        work around the call, a C-simulation's, keeps it to itself)."""
        return self._fn if type(self)._invoke is NativeKernel._invoke else None

    def packed_entry(self) -> int | None:
        """``<entry>_packed``'s address where the library exports it (the cpu target's
        do) and ``_invoke`` is this class's own."""
        if self.raw_entry() is None:
            return None
        try:
            fn = getattr(self._lib, self.entry + "_packed")
        except AttributeError:
            return None
        return ctypes.cast(fn, ctypes.c_void_p).value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.signature.name!r}, {str(self.library_path)!r})"
