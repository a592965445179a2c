"""The vocabulary of ``Acc.jl``'s Expr JSON (see :mod:`.fromjson` for the format): the
heads and operators the reader knows, and small questions about one decoded node.

Apart from the reader class so that :mod:`.fromjson` holds the translation only.
"""

from __future__ import annotations

import json
from typing import Any

from frontends.julia.errors import JuliaFrontendError
from middleend.ir.errors import quoted

Node = Any  # one decoded JSON value of the format above

_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!=",
            "≤": "<=", "≥": ">=", "≠": "!="}
"""Comparisons; the Unicode spellings are the same functions in Base (``const ≤ = <=``),
so they are normalized, as :mod:`.parse` does."""

_UPDATE = frozenset({"+=", "-=", "*=", "/="})
_NARY = frozenset({"+", "*"})
"""Julia's parser flattens ``a+b+c`` into ``+(a, b, c)``; Base evaluates it left to right,
so it becomes left-nested binary calls (what the tree-sitter path gives)."""
_BINOPS = frozenset({"+", "-", "*", "/", "÷", "%", "^", "\\", "&", "|", "<<", ">>", ">>>",
                     "⊻"})
_UNOPS = frozenset({"-", "+", "!"})
"""The operators :mod:`.parse` accepts; in an Expr an operator is a call like any other, so
a call of any other operator symbol (``===``, ``√``, ``=>``) is refused the same way."""

_LITERAL_TYPES = frozenset({"Int64", "Float64", "Float32", "Bool"})
_SPECIAL_FLOATS = {"Inf": float("inf"), "-Inf": float("-inf"), "NaN": float("nan")}

_STATEMENT_HEADS = {
    "while": "while loop", "break": "break", "continue": "continue", "try": "try block",
    "let": "let block", "function": "nested function definition",
    "->": "nested function definition", "global": "global declaration",
    "local": "local declaration", "const": "const declaration", "macro": "macro definition",
    "struct": "struct definition", "module": "module definition", "using": "using",
    "import": "import", "export": "export", "quote": "quote block", "do": "do-block"}
"""Statement kinds recognised but not translated, named as :mod:`.parse` names them."""

_EXPR_HEADS = {
    **dict.fromkeys(("vect", "hcat", "vcat", "typed_vcat", "typed_hcat", "ncat", "typed_ncat",
                     "row", "nrow"), "array literal"),
    "comprehension": "comprehension", "typed_comprehension": "comprehension",
    "generator": "generator", "flatten": "generator",
    "::": "type assertion x::T", "string": "string interpolation", "'": "adjoint (')",
    "curly": "parametric type used as a value", "...": "splat expression",
    "=": "assignment used as an expression", "kw": "keyword argument",
    "parameters": "keyword arguments", "macrocall": "macro call in an expression"}
"""Expression heads we refuse, with what to call them in the error."""


def _head(node: Node) -> str | None:
    """The head of an Expr node, None for any other value."""
    if isinstance(node, dict) and isinstance(node.get("head"), str):
        return node["head"]
    return None


def _is_line(node: Node) -> bool:
    return isinstance(node, dict) and "line" in node and "head" not in node


def _sym(node: Node) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("sym"), str):
        return node["sym"]
    return None


def _is_nothing(node: Node) -> bool:
    """``nothing`` as Julia writes it: the literal (``return`` alone) or the name."""
    return _sym(node) == "nothing" or (isinstance(node, dict) and "nothing" in node)


def _dotted(node: Node) -> str | None:
    """``f`` or ``Base.f`` (``Expr(:., :Base, QuoteNode(:f))``) as a string."""
    name = _sym(node)
    if name is not None or _head(node) != ".":
        return name
    args = node.get("args")
    if not isinstance(args, list) or len(args) != 2:
        return None
    right = args[1]["quote"] if isinstance(args[1], dict) and "quote" in args[1] else args[1]
    left, rname = _dotted(args[0]), _sym(right)
    return f"{left}.{rname}" if left is not None and rname is not None else None


def _brief(node: Node, depth: int = 0) -> str:
    """Julia-like text of a small Expr, for error messages (the user wrote source, not
    JSON): ``(a, b)``, ``A[i, 1]``, ``tile(S, i)``."""
    if depth > 3:
        return "..."
    if _sym(node) is not None or _head(node) == ".":
        return _dotted(node) or "..."
    head, args = _head(node), node.get("args") if isinstance(node, dict) else None
    if head is None or not isinstance(args, list):
        for key in ("int", "float", "bool", "str", "unknown"):
            if isinstance(node, dict) and key in node:
                return json.dumps(node[key]) if key == "str" else str(node[key])
        return quoted(node, 40)
    parts = [_brief(a, depth + 1) for a in args if not _is_line(a)]
    if head == "call" and parts:
        return f"{parts[0]}({', '.join(parts[1:])})"
    if head in ("ref", "curly") and parts:
        left, right = ("[", "]") if head == "ref" else ("{", "}")
        return f"{parts[0]}{left}{', '.join(parts[1:])}{right}"
    if head == "tuple":
        return f"({', '.join(parts)})"
    if head in ("::", "<:", ">:") and len(parts) in (1, 2):
        return head.join(parts) if len(parts) == 2 else head + parts[0]
    if head in ("=", "kw") and len(parts) == 2:
        return " = ".join(parts)
    if head == "..." and len(parts) == 1:
        return parts[0] + "..."
    return f"`{head}` expression"


def _malformed(node: Node, line: int, expected: str) -> JuliaFrontendError:
    where = f"line {line}" if line else "unknown line"
    return JuliaFrontendError(
        f"{where}: malformed Julia Expr JSON: expected {expected}, found {quoted(node)}")
