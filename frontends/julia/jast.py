"""The front-end's own AST of a Julia ``@acc`` function: what both ways in produce.

The tree-sitter path (:mod:`.parse`, no Julia runtime) builds it from source text; the
juliacall path builds it from the JSON that ``Acc.jl`` makes of the macro's ``Expr``
(:mod:`.fromjson`). The translator (:mod:`.translate`) only ever sees this form, so the two
paths cannot disagree on what a construct means. Every node carries its 1-based source line
for error messages. Nodes are frozen: the translator never edits what it was given.

Conventions, matching Julia's own ``Expr`` so that the JSON path is a direct mapping:

- operators are calls: ``a + b`` is ``Call("+", (a, b))``, ``-a`` is ``Call("-", (a,))``,
  ``!c`` is ``Call("!", (c,))``; ``a ÷ b`` is ``Call("÷", ...)``, ``a % b`` ``Call("%", ...)``;
- comparisons, chained or not, are ``Compare(("<", "<="), (a, b, c))``;
- ``&&`` / ``||`` are ``Logic``; ``c ? a : b`` (and ``ifelse(c, a, b)``) is ``Ternary``;
- ``a:b`` is ``Range(a, None, b)`` and ``a:s:b`` is ``Range(a, s, b)``;
- ``x op= e`` keeps its operator: ``Assign(target, "+=", e)``;
- ``for i in r, j in s`` is two nested ``For``; ``@inbounds`` and ``@simd`` are dropped by
  the parsers (they only promise what the compiler checks anyway); ``@fastmath`` is dropped
  too but sets ``fastmath`` on every assignment under it; ``elseif`` is an ``If`` in the
  ``orelse`` of its parent;
- ``a = b = e`` is ``t = e; b = t; a = t`` with a temporary ``t`` whose name (``#chain...``)
  no Julia source can spell (no temporary for a literal ``e``): Julia assigns ``e``'s value,
  not ``b``'s, to ``a``;
- ``@name S stmt`` sets ``label="S"`` on the statement (on each, for a chained assignment);
  ``@schedule begin ... end`` (or one ``@schedule cmd(...)``) becomes ``Function.schedule``:
  each directive a ``Call``;
- top-level ``const N = 64`` of the source (tree-sitter path) are ``Function.consts``, and
  its one-expression functions (``sq(x) = x * x``) ``Function.helpers``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Num:
    """A literal. ``type`` is Julia's: Int64, Float64, Float32 (``1f0``) or Bool."""

    value: int | float | bool
    type: str
    line: int = 0


@dataclass(frozen=True)
class Name:
    id: str
    line: int = 0


@dataclass(frozen=True)
class Ref:
    """``A[i, j]``: ``array`` is the array's name."""

    array: str
    indices: tuple[Expr, ...]
    line: int = 0


@dataclass(frozen=True)
class Call:
    """An operator or a function call (``sqrt(x)``, ``size(A, 1)``, ``Float32(x)``)."""

    fn: str
    args: tuple[Expr, ...]
    line: int = 0


@dataclass(frozen=True)
class Compare:
    ops: tuple[str, ...]
    operands: tuple[Expr, ...]
    line: int = 0


@dataclass(frozen=True)
class Logic:
    op: str  # "&&" or "||"
    a: Expr
    b: Expr
    line: int = 0


@dataclass(frozen=True)
class Ternary:
    cond: Expr
    a: Expr
    b: Expr
    line: int = 0


@dataclass(frozen=True)
class Range:
    start: Expr
    step: Expr | None
    stop: Expr
    line: int = 0


@dataclass(frozen=True)
class TupleExpr:
    """``(a, b)`` or a bare ``a, b`` (only as an assignment target or a size tuple)."""

    items: tuple[Expr, ...]
    line: int = 0


Expr = Num | Name | Ref | Call | Compare | Logic | Ternary | Range | TupleExpr


@dataclass(frozen=True)
class Assign:
    """``target op value``; ``op`` is "=" or an update operator ("+=", "-=", "*=", "/=")."""

    target: Name | Ref | TupleExpr
    op: str
    value: Expr
    line: int = 0
    label: str | None = None
    fastmath: bool = False  # under @fastmath: the C compiler may contract it


@dataclass(frozen=True)
class For:
    var: str
    iter: Expr  # a Range, or a call such as axes(A, 1) / eachindex(x)
    body: tuple[Stmt, ...]
    line: int = 0
    label: str | None = None


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    line: int = 0
    label: str | None = None


@dataclass(frozen=True)
class Unsupported:
    """A statement the parser recognised but the front-end does not translate (``while``,
    ``break``, ``try``, a nested function, ...). Kept in the tree rather than raised at
    parse time so that the error comes from one place (the translator) with the function's
    name; ``construct`` says what it is."""

    construct: str
    line: int = 0


@dataclass(frozen=True)
class Return:
    """``return`` / ``return nothing`` (``value`` None), or ``return x``: the value of an
    expression, or an array (an argument or a local one), as the function's result."""

    line: int = 0
    value: Expr | None = None


Stmt = Assign | For | If | Unsupported | Return


@dataclass(frozen=True)
class TypeRef:
    """A type annotation: ``Matrix{Float64}`` is ``TypeRef("Matrix", (TypeRef("Float64"),))``;
    integer parameters (``Array{Float32, 3}``) are ints."""

    name: str
    params: tuple[TypeRef | int, ...] = ()


@dataclass(frozen=True)
class Arg:
    name: str
    type: TypeRef | None = None
    line: int = 0


@dataclass(frozen=True)
class Helper:
    """A function of the same source whose body is one expression (``sq(x) = x * x``, or
    ``function sq(x) return x * x end``): a call to it is inlined (:mod:`.inline`)."""

    name: str
    params: tuple[str, ...]
    body: Expr
    line: int = 0


@dataclass(frozen=True)
class Function:
    name: str
    args: tuple[Arg, ...]
    body: tuple[Stmt, ...]
    schedule: tuple[Call, ...] = field(default=())
    line: int = 0
    consts: tuple[tuple[str, Expr], ...] = field(default=())  # module-level `const`s
    helpers: tuple[Helper, ...] = field(default=())  # one-expression functions of the source


def mark_fastmath(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``body`` with every assignment in it (at any depth) marked ``fastmath``."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Assign):
            s = replace(s, fastmath=True)
        elif isinstance(s, For):
            s = replace(s, body=mark_fastmath(s.body))
        elif isinstance(s, If):
            s = replace(s, then=mark_fastmath(s.then), orelse=mark_fastmath(s.orelse))
        out.append(s)
    return tuple(out)


CHAIN_PREFIX = "#chain"


def chain(targets: list[Name | Ref], value: Expr, line: int, k: int) -> list[Stmt]:
    """``targets[0] = targets[1] = ... = value`` as separate assignments, innermost first
    (what both parsers make of the ``k``-th chained assignment of a function)."""
    if isinstance(value, Num):
        src: Expr = value
        out: list[Stmt] = []
    else:
        tmp = Name(f"{CHAIN_PREFIX}{line}_{k}", line)
        src, out = tmp, [Assign(tmp, "=", value, line)]
    out += [Assign(t, "=", src, line) for t in reversed(targets)]
    return out


# an Int argument of a directive may be arithmetic of Ints and machine queries
# (frontends/julia/machine_ints.py checks and answers them: vector_lanes(Float64),
# 3 * vector_registers() ÷ 4, cache_bytes(2) ÷ 4096, ...); a query's argument is an element
# type's name or a cache level
DIRECTIVE_INT_OPS = frozenset({"+", "-", "*", "÷", "div"})
DIRECTIVE_QUERIES = frozenset({"vector_lanes", "vector_registers", "cache_bytes"})


def _directive_int(e: Expr) -> bool:
    if isinstance(e, Num):
        return True
    if not isinstance(e, Call):
        return False
    if e.fn in DIRECTIVE_QUERIES:
        return all(isinstance(a, Name | Num) for a in e.args)  # checked in machine_ints
    return e.fn in DIRECTIVE_INT_OPS and all(_directive_int(a) for a in e.args)


def is_directive_arg(e: Expr) -> bool:
    """What a ``@schedule`` directive's argument may be: a name, a number,
    ``loop % k`` (a folded loop of ``store_in``) or ``dim % k`` (a blocked dim of
    ``pack``; ``k`` an Int or an Int expression of the machine queries, like ``dim % (3 *
    vector_lanes(Float64))``), or an Int expression of the machine queries (its details are checked
    when the source is compiled)."""
    return isinstance(e, Name | Num) or (
        isinstance(e, Call) and e.fn == "%" and len(e.args) == 2 and
        isinstance(e.args[0], Name | Num) and _directive_int(e.args[1])) or (
        isinstance(e, Call) and _directive_int(e))
