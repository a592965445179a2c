"""Halide's float ``min``/``max`` on NaN and signed zeros, in the middle-end's terms.

The two operands of a float min or max are not interchangeable: where they compare
unordered (a NaN) or equal (``-0.0`` and ``+0.0``), the result is one of them, and which
one is a matter of the code. The middle-end's own meaning is fixed (``min(a, b)`` is ``a < b
? a : b``, ``max(a, b)`` is ``a > b ? a : b``), and the Julia front-end keeps it. Halide's
is what its lowering and LLVM make of it, measured with the Halide 21 wheel on x86-64 for
every pair of NaN, -0.0, +0.0, 1 and 2, scalar and vectorized (both gave the same, so this
is its vectorized code as much as its scalar code; tests/test_halide_minmax.py):

- the simplifier first puts the operands in its canonical order (``should_commute``: the
  operand of the higher IR node type first, ``IRNodeType``'s order: constants, casts,
  variables, arithmetic, comparisons, select, loads, calls), an inlined Func's value
  counting as its definition's node and any other Func's or image's read as a load;
- then ``min(X, Y)`` behaves as ``Y < X ? Y : X``, except that with a constant ``Y`` it
  behaves as ``X < Y ? X : Y``; ``max(X, Y)`` as ``Y < X ? X : Y`` in both cases.

Not modelled: the simplifier's rewrites that change the expression itself (``min(a + b,
b)`` becomes ``min(a, 0) + b``), whose NaN and signed-zero results can differ from both
orders; Variables compared by name. A select operand, a clamp and float64 follow the
rule (tested). Integers are exact in any order and keep the operands as written.
"""

from __future__ import annotations

from collections.abc import Callable

from frontends.halide.hir import HExpr, HFunc
from middleend.ir.expr import Expr, binop

# Halide 21's IRNodeType, in order (src/Expr.h): the simplifier's canonical order
_ORDER = ("IntImm", "UIntImm", "FloatImm", "StringImm", "Broadcast", "Cast", "Reinterpret",
          "Variable", "Add", "Sub", "Mod", "Mul", "Div", "Min", "Max", "EQ", "NE", "LT", "LE",
          "GT", "GE", "And", "Or", "Not", "Select", "Load", "Ramp", "Call", "Let")
_RANK = {k: i for i, k in enumerate(_ORDER)}
_MAX_INLINE = 64  # inlined Funcs followed at most (a chain of them, never a cycle)


def node_rank(e: HExpr, funcs: Callable[[str], HFunc] | None, depth: int = 0) -> int:
    """The IR node type ``e`` has once lowered: a read of an inlined Func is its value's,
    a read of any other Func or an image a load, a math function a call."""
    if e.kind == "Call":
        if e.call_type == "Image":
            return _RANK["Load"]
        if e.call_type == "Halide":
            try:
                f = funcs(e.name) if funcs is not None else None
            except KeyError:  # not one of the pipeline's Funcs: read from memory
                f = None
            if f is None or f.init is None or f.updates or depth > _MAX_INLINE or \
                    not f.schedule.compute_level.is_inlined:
                return _RANK["Load"]
            return node_rank(f.init.values[e.value_index], funcs, depth + 1)
        return _RANK["Call"]
    if e.kind == "Cast" and _is_imm(e):
        return _RANK["FloatImm"]  # folded
    return _RANK.get(e.kind, _RANK["Call"])


def _is_imm(e: HExpr) -> bool:
    """A constant, or a cast of one (folded to a constant before code is generated)."""
    while e.kind == "Cast":
        e = e.args[0]
    return e.kind in ("IntImm", "UIntImm", "FloatImm")


def float_min_max(kind: str, ha: HExpr, hb: HExpr, a: Expr, b: Expr,
                  funcs: Callable[[str], HFunc] | None) -> Expr:
    """Halide's ``min``/``max`` (``kind``: "Min" or "Max") of the float operands ``ha``,
    ``hb`` (translated: ``a``, ``b``), as the middle-end's min/max with the operands in
    the order that gives Halide's result on NaN and signed zeros (module docstring)."""
    swap = node_rank(ha, funcs) < node_rank(hb, funcs)
    x, y = (b, a) if swap else (a, b)
    if kind == "Max":
        return binop("max", x, y)  # x > y ? x : y, that is y < x ? x : y
    if _is_imm(ha if swap else hb):
        return binop("min", x, y)  # x < y ? x : y
    return binop("min", y, x)  # y < x ? y : x
