"""The CPU target's C source of a program: the loop AST's register tiles that ISL left
with partial-tile bounds versioned (:mod:`backends.cpu.tileversion`), unswitched
(:mod:`backends.cpu.unswitch`), then printed (:mod:`backends.cpu.cprinter`). One function,
so that every path to the C (the target, ``backends.cpu.generate_c``, the tests that
compare the wire's C with a direct lowering's) prints the same text."""

from __future__ import annotations

from middleend.ir.loopast import IInt, Program

from .cprinter import CPrinter
from .tileversion import version_tiles
from .unswitch import unswitch_program

# gcc turns the zeroing of a small local array (a register tile: sgemm's 6 x 16
# accumulators) into a memset call, which keeps the array in memory; gcc 12 then spilled
# one of the 12 accumulators in the micro-kernel's hot loop (a store/load chain per FMA:
# 0.45x numpy at N = 2016, 0.95-1.01x without the memset). Only kernels with such an
# array get the option: globally it cost bicg 1.7x (a memset-able fill inside its nest).
REGISTER_TILE_ELEMENTS = 1024
NO_MEMSET = '#pragma GCC optimize ("no-tree-loop-distribute-patterns")\n'
# a register-tile reduction loop (backends/cpu/regtile.py) printed as scalar statements
# (vtile.py prints the others as vectors): gcc's loop vectorizer off for the file, the
# loops the schedule vectorizes (omp simd) are vectorized all the same. Per function (an
# outlined tile with the optimize attribute) gcc 12 made the tile itself worse (its sums
# through the stack), so the option is the file's, like NO_MEMSET.
NO_LOOP_VECTORIZER = '#pragma GCC optimize ("no-tree-loop-vectorize")\n'


def generate_c(program: Program) -> str:
    """The complete C translation unit of ``program`` (helpers + ``me_<name>``)."""
    program = version_tiles(program)  # a full tile's copy where ISL did not separate it
    program = unswitch_program(program)  # tiles guarded inside are tiles once unswitched
    printer = CPrinter(program)
    text = printer.generate()
    if printer.scalar_tiles:  # (a tile printed as vectors needs no such option)
        text = NO_LOOP_VECTORIZER + text
    return NO_MEMSET + text if _has_register_tile(program) else text


def _has_register_tile(program: Program) -> bool:
    """Whether ``program`` allocates a local array of constant size small enough to be a
    register tile."""
    for b in program.buffers:
        if b.local and all(isinstance(e, IInt) for e in b.sizes):
            n = 1
            for e in b.sizes:
                n *= max(e.value, 0)  # type: ignore[attr-defined]
            if n <= REGISTER_TILE_ELEMENTS:
                return True
    return False


__all__ = ["generate_c"]
