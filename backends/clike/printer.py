"""What every C-family loop-nest printer shares: the buffers by name (each declared once,
with a valid C name), the output lines, and the walk over the loop AST that dispatches
each node to the target's own printing of loops, statements and allocations."""

from __future__ import annotations

import abc
from collections.abc import Container

from middleend.ir.errors import TargetError
from middleend.ir.loopast import Alloc, Block, BufferDecl, For, If, Node, Program, Stmt

from .cexpr import ident, iexpr_c


class LoopPrinter(abc.ABC):
    """Per-call state only (lines, buffers): a printer is used once and thrown away."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.lines: list[str] = []
        self.buffers: dict[str, BufferDecl] = {}
        for b in program.buffers:
            if b.name in self.buffers:
                raise TargetError(f"program {program.name!r} declares buffer {b.name!r} twice")
            ident(b.name, "buffer name")
            self.buffers[b.name] = b

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def node(self, n: Node, depth: int) -> None:
        if isinstance(n, Block):
            for child in n.body:
                self.node(child, depth)
        elif isinstance(n, For):
            self._for(n, depth)
        elif isinstance(n, If):
            self.emit(depth, f"if ({iexpr_c(n.cond)}) {{")
            self.node(n.then, depth + 1)
            if n.orelse is not None:
                self.emit(depth, "} else {")
                self.node(n.orelse, depth + 1)
            self.emit(depth, "}")
        elif isinstance(n, Stmt):
            self._stmt(n, depth)
        elif isinstance(n, Alloc):
            self._alloc(n, depth)
        else:
            raise TargetError(f"unknown loop AST node {type(n).__name__}")

    def _loop_header(self, f: For, honoured: Container[str], target: str) -> tuple[str, str]:
        """The C name of ``f``'s iterator and the loop's label, once ``f`` is known to be
        printable here: a tag this target does not honour, or a step that is not a nonzero
        int, is refused naming the loop and the command that set it."""
        var = ident(f.var, "loop iterator")
        label = f.name or var
        if f.tag is not None and f.tag not in honoured:
            raise TargetError(f"the {target} target cannot honour tag {f.tag} on loop {label}"
                              + (f" (set by {f.command})" if f.command else ""),
                              target=target, loop=label, command=f.command or None,
                              feature=("tag", f.tag))
        if not isinstance(f.step, int) or f.step == 0:
            raise TargetError(f"loop {label} has invalid step {f.step!r}")
        return var, label

    @abc.abstractmethod
    def _for(self, f: For, depth: int) -> None: ...

    @abc.abstractmethod
    def _stmt(self, s: Stmt, depth: int) -> None: ...

    @abc.abstractmethod
    def _alloc(self, a: Alloc, depth: int) -> None: ...
