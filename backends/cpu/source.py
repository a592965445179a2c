"""The CPU target's C source of a program: the loop AST unswitched
(:mod:`backends.cpu.unswitch`), then printed (:mod:`backends.cpu.cprinter`). One function,
so that every path to the C (the target, ``backends.cpu.generate_c``, the tests that
compare the wire's C with a direct lowering's) prints the same text."""

from __future__ import annotations

from middleend.ir.loopast import Program

from .cprinter import generate_c as print_c
from .unswitch import unswitch_program


def generate_c(program: Program) -> str:
    """The complete C translation unit of ``program`` (helpers + ``me_<name>``)."""
    return print_c(unswitch_program(program))


__all__ = ["generate_c"]
