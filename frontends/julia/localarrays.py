"""Local arrays of an ``@acc`` function: ``z = zeros(eltype(r), n)``, ``zeros(n, m)``,
``similar(A)``, ``similar(A, Float32)`` (PolyBench's durbin keeps a row in one).

Such an array is a temporary buffer of the kernel (Layer III holds it; no caller sees it),
sized when the kernel is specialized, like every other size. ``zeros`` also writes its
zeros, as a loop nest placed where the allocation is in the source, so later reads see
them through the same exact dataflow as any array write; ``similar`` leaves its elements
unwritten (reading one before writing it is refused, as a read nothing produces).
Allocations are only translated as the whole value of a local assigned once at the top
level of the function: one buffer per name for the whole call.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.exprs import Exprs
from frontends.julia.jtypes import ELEMENT
from middleend.ir.types import DType

ALLOCATORS = frozenset({"zeros", "similar"})
LOOP_PREFIX = "#fill_"  # loop variables of the zeroing nest: no Julia source spells them


@dataclass(frozen=True)
class LocalArray:
    name: str
    elem: DType
    sizes: tuple[int, ...]  # Julia order (column-major), like an argument's
    zeroed: bool


def is_allocation(e: J.Expr) -> bool:
    return isinstance(e, J.Call) and e.fn in ALLOCATORS


def local_array(name: str, call: J.Call, ex: Exprs) -> LocalArray:
    """The array ``name = call`` allocates, for the arguments the kernel is specialized
    on (``ex`` knows their sizes and the constants)."""
    fail = ex.fail
    args = list(call.args)
    if call.fn == "similar":
        if not args or not isinstance(args[0], J.Name) or args[0].id not in ex.arrays:
            raise fail(call.line, f"similar of something other than an array: "
                       f"{name} = similar(...)")
        like = ex.arrays[args.pop(0).id]
        elem = _elem(args.pop(0), ex, call) if args else like.elem
        sizes = _sizes(args, ex, call) if args else like.sizes
        return LocalArray(name, elem, sizes, zeroed=False)
    elem = ELEMENT["Float64"]
    if args and _is_type(args[0], ex):
        elem = _elem(args.pop(0), ex, call)
    if not args:
        raise fail(call.line, f"zeros without sizes: {name} = zeros(...)")
    return LocalArray(name, elem, _sizes(args, ex, call), zeroed=True)


def _is_type(e: J.Expr, ex: Exprs) -> bool:
    return (isinstance(e, J.Name) and e.id in ELEMENT) or (
        isinstance(e, J.Call) and e.fn == "eltype" and len(e.args) == 1)


def _elem(e: J.Expr, ex: Exprs, call: J.Call) -> DType:
    if isinstance(e, J.Name) and e.id in ELEMENT:
        return ELEMENT[e.id]
    if isinstance(e, J.Call) and e.fn == "eltype" and len(e.args) == 1 and \
            isinstance(e.args[0], J.Name) and e.args[0].id in ex.arrays:
        return ex.arrays[e.args[0].id].elem
    raise ex.fail(call.line, f"element type of {call.fn}(...): a type such as Float64 or "
                  "eltype(A) of an array A")


def _sizes(args: list[J.Expr], ex: Exprs, call: J.Call) -> tuple[int, ...]:
    """``n, m``, a tuple ``(n, m)`` or ``size(A)``: Ints known when specialized."""
    if len(args) == 1 and isinstance(args[0], J.TupleExpr):
        args = list(args[0].items)
    if len(args) == 1 and isinstance(args[0], J.Call) and args[0].fn == "size" and \
            len(args[0].args) == 1 and isinstance(args[0].args[0], J.Name) and \
            args[0].args[0].id in ex.arrays:
        return ex.arrays[args[0].args[0].id].sizes
    out = []
    for a in args:
        v = ex.const_int(a)
        if v is None or v < 0:
            raise ex.fail(call.line, f"size of {call.fn}(...) not a known Int >= 0 when the "
                          "kernel is specialized (sizes, Int arguments, constants)")
        out.append(v)
    if not 1 <= len(out) <= 8:
        raise ex.fail(call.line, f"{call.fn}(...) of {len(out)} dimensions")
    return tuple(out)


def zero_fill(arr: LocalArray, line: int) -> J.For:
    """``for i1 in 1:n1, ... z[i1, ...] = 0 end``: the zeros ``zeros`` writes."""
    idx = tuple(J.Name(f"{LOOP_PREFIX}{arr.name}{k}", line) for k in range(len(arr.sizes)))
    zero = (J.Num(False, "Bool", line) if arr.elem.is_bool else
            J.Num(0, "Int64", line) if arr.elem.is_int else J.Num(0.0, "Float64", line))
    body: J.Stmt = J.Assign(J.Ref(arr.name, idx, line), "=", zero, line)
    for k in range(len(arr.sizes)):  # the first index innermost: Julia's memory order
        body = J.For(idx[k].id, J.Range(J.Num(1, "Int64", line), None,
                                        J.Num(arr.sizes[k], "Int64", line), line),
                     (body,), line)
    assert isinstance(body, J.For)
    return body


def refuse_misplaced(line: int, fn: str | None) -> UnsupportedJulia:
    return UnsupportedJulia(line, "an allocation other than a local assigned once at the top "
                            "level of the function (`z = zeros(T, n)`, `z = similar(A)`)", fn)
