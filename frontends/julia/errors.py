"""Errors of the Julia front-end. Each names the source line and the construct, so a user
can find what was refused without reading our code."""

from __future__ import annotations

from middleend.ir.errors import MiddleEndError


class JuliaFrontendError(MiddleEndError):
    """Base of the Julia front-end's errors."""


class JuliaSyntaxError(JuliaFrontendError):
    """The source does not parse as Julia (tree-sitter reports an ERROR/MISSING node)."""

    def __init__(self, line: int, detail: str) -> None:
        self.line = line
        self.detail = detail
        super().__init__(f"line {line}: Julia syntax error: {detail}")


class UnsupportedJulia(JuliaFrontendError):
    """A construct the front-end does not translate (a ``while``, a call to an unknown
    function, an allocation, ...). Raised instead of dropping or approximating it, since a
    mis-translated statement would give wrong results. ``line`` is 1-based in the source
    the user gave (0 when unknown); ``function`` names the @acc function when known."""

    def __init__(self, line: int, construct: str, function: str | None = None) -> None:
        self.line = line
        self.construct = construct
        self.function = function
        where = f"line {line}" if line else "unknown line"
        if function:
            where = f"function {function!r}, {where}"
        super().__init__(f"{where}: unsupported Julia: {construct}")
