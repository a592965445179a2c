"""The CPU backend: C99 + OpenMP generated from the loop AST, built with the system
compiler, called through :class:`middleend.target.NativeKernel`.

``generate_c`` and ``build`` are separate steps so that callers can inspect or cache the
source; ``compile_kernel`` chains them. :class:`CpuTarget` is the plug-in the middle-end's
registry finds (entry point ``cpu`` of group ``middleend.targets``).
"""

from __future__ import annotations

from middleend.ir.loopast import Program
from middleend.target import NativeKernel

from .build import BuiltLibrary, cache_dir, compile_shared
from .source import generate_c
from .target import CpuTarget


def build(program: Program, source: str | None = None, fp_contract: bool = False
          ) -> BuiltLibrary:
    """Build ``source`` (generated from ``program`` when None) into a cached shared object.

    The cache key depends only on the source, the compiler, the host's instruction set and
    the flags."""
    return compile_shared(source if source is not None else generate_c(program),
                          fp_contract=fp_contract)


def compile_kernel(program: Program) -> NativeKernel:
    """Generate, build (or reuse) and load ``program``, without the service (no legality
    or capability check: ``program`` is taken as lowered)."""
    lib = build(program)
    return NativeKernel(program, lib.path, source=lib.source, cache_key=lib.key)


__all__ = ["BuiltLibrary", "CpuTarget", "build", "cache_dir", "compile_kernel",
           "compile_shared", "generate_c"]
