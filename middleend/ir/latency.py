"""Operator latencies, in clock cycles, of a pipelined hardware datapath.

One table serves two users that must agree: the legality check, which refuses a pipelined
loop whose loop-carried dependence cannot be met at the requested initiation interval
(the value written in one iteration is read ``distance`` iterations later, which start
``distance * II`` cycles later: the write must be done by then), and the fpga target's
latency estimate. The figures are those Vitis HLS reports for a 7-series/UltraScale part
at about 300 MHz (integer adds in one cycle, a float add in four, DSP multiplies in two or
three); they are an estimate, not a synthesis result, and say so wherever they are shown.
"""

from __future__ import annotations

from .expr import Access, Binary, Call, Cast, Const, Expr, Select, Unary
from .loopast import BufAccess
from .types import DType

# cycles per operator, for integer and float operands
_INT = {"add": 1, "sub": 1, "mul": 2, "div": 20, "floordiv": 20, "mod": 20, "min": 1,
        "max": 1, "lt": 1, "le": 1, "gt": 1, "ge": 1, "eq": 1, "ne": 1, "and": 0, "or": 0}
_FLOAT = {"add": 4, "sub": 4, "mul": 3, "div": 12, "floordiv": 14, "mod": 20, "min": 2,
          "max": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2, "eq": 2, "ne": 2, "and": 0, "or": 0}
_CALL = {"sqrt": 12, "exp": 10, "log": 12, "pow": 24, "abs": 1, "floor": 2, "ceil": 2,
         "round": 2, "trunc": 2, "bitand": 0, "bitor": 0, "bitxor": 0, "bitnot": 0, "shl": 1,
         "shr": 1, "popcount": 1, "clz": 1, "ctz": 1, "reinterpret": 0}
CALL_DEFAULT = 20  # transcendental functions not listed above
LOAD = 1  # a read of an on-chip memory or a FIFO (the address is ready)
STORE = 1


def _binary(op: str, dt: DType) -> int:
    return (_FLOAT if dt.is_float else _INT).get(op, 1)


def expr_latency(e: Expr) -> int:
    """Cycles from the operands' loads to the value of ``e`` (the longest path through its
    tree: operators on parallel paths overlap). Reads count :data:`LOAD`; the index
    arithmetic of a read is address computation and is not on the data path."""
    if isinstance(e, Const):
        return 0
    if isinstance(e, Access | BufAccess):
        return LOAD
    kids = [expr_latency(c) for c in e.children()]
    below = max(kids, default=0)
    if isinstance(e, Binary):
        operand = e.a.dtype
        return below + _binary(e.op, operand)
    if isinstance(e, Unary):
        return below + (0 if e.op == "not" else 1)
    if isinstance(e, Select):
        return below + 1
    if isinstance(e, Cast):
        a = e.a.dtype
        return below + (4 if a.is_float != e.dtype.is_float else 0)
    if isinstance(e, Call):
        return below + _CALL.get(e.fn, CALL_DEFAULT)
    return below


def statement_latency(value: Expr) -> int:
    """Cycles from a statement's loads to its store (its pipeline depth alone)."""
    return expr_latency(value) + STORE
