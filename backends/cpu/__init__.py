"""The CPU backend: C99 + OpenMP generated from the loop AST, built with the system
compiler, called through :class:`middleend.runtime.Kernel`.

``generate_c`` and ``build`` are separate steps so that callers can inspect or cache the
source; ``compile_kernel`` chains them.
"""

from __future__ import annotations

from middleend.loopast import Program
from middleend.runtime import Kernel

from .build import BuiltLibrary, cache_dir, compile_shared
from .cprinter import generate_c


def build(program: Program, source: str | None = None, fp_contract: bool = False
          ) -> BuiltLibrary:
    """Build ``source`` (generated from ``program`` when None) into a cached shared object.

    ``program`` is accepted for symmetry with other targets (and to generate the source);
    the cache key depends only on the source, the compiler and the flags."""
    return compile_shared(source if source is not None else generate_c(program),
                          fp_contract=fp_contract)


def compile_kernel(program: Program) -> Kernel:
    """Generate, build (or reuse) and load ``program``."""
    return Kernel(program, build(program))


class CpuTarget:
    """The cpu target as an object, for a registry of targets keyed by name."""

    name = "cpu"

    def generate(self, program: Program) -> str:
        return generate_c(program)

    def build(self, program: Program, source: str | None = None) -> BuiltLibrary:
        return build(program, source)

    def compile(self, program: Program) -> Kernel:
        return compile_kernel(program)


__all__ = ["BuiltLibrary", "CpuTarget", "Kernel", "build", "cache_dir", "compile_kernel",
           "compile_shared", "generate_c"]
