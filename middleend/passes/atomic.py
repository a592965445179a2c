"""Atomic updates (``comp.atomic()``, Halide's ``atomic()``): which computations are, and
the operation each one's instances perform on their element.

An atomic computation is an update ``b[i] = b[i] op e`` whose only read of its buffer ``b``
is that element, read before it is written: each instance is then one read-modify-write,
which a target prints as one atomic operation. Instances of it that update the same
element commute (``op`` is associative and commutative: integer + * min max & | ^, and
float + * min max up to the rounding of the order), so the legality check lets a loop
tagged ``parallel`` or ``vector`` carry the dependences between them (and only those: a
dependence on another computation is checked as for any loop; C compilers run atomic
operations one lane at a time in a vector loop). Anything else is refused here, naming
the computation and what its expression is, before any code is generated.
"""

from __future__ import annotations

from ..ir.errors import ScheduleError
from ..ir.expr import Access, Binary, Call, Expr, share_common, walk_shared
from ..ir.function import Buffer, Computation, _BufferOf
from .data import Layer3
from .layer1 import Layer1
from .placement import TimeSpace

# Layer I operator -> the read-modify-write it performs; "sub" only as b[i] - e
_BINARY_OPS = ("add", "sub", "mul", "min", "max")
_BIT_OPS = ("bitand", "bitor", "bitxor")


def atomic_comps(ts: TimeSpace) -> dict[str, str]:
    """Atomic computation -> the ``atomic()`` command, as written."""
    return {n: s.atomic for n, s in ts.comps.items() if s.atomic}


def atomic_update(name: str, l1: Layer1, l3: Layer3, command: str,
                  what: str = "an atomic update") -> tuple[str, Expr]:
    """``(op, e)`` of the atomic update ``name`` (``b[i] = b[i] op e``); ScheduleError when
    its expression has another form (``what`` the command needs it to be, for it)."""
    c = l1.comps[name]
    buf = l3.store[name]
    index = l3.index[name]

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(
            f"{command}: {name!r} cannot be {what}: {why} ({what} is "
            f"{buf}[i] = {buf}[i] op e, op one of + - * min max & | ^, and e does not "
            f"read {buf!r})", computations=(name,), command=command)

    if c.guard is not None:
        raise refuse("it has a guard (a where clause)")
    value = c.expr
    if isinstance(value, Binary) and value.op in _BINARY_OPS:
        op, operands = value.op, (value.a, value.b)
    elif isinstance(value, Call) and value.fn in _BIT_OPS:
        op, operands = value.fn, value.args
    else:
        raise refuse(f"its value {value!r} is not an update of its element")
    if value.dtype != l3.buffers[buf].dtype:
        raise refuse(f"its value is a {value.dtype.name}, its buffer holds "
                     f"{l3.buffers[buf].dtype.name}")
    table: dict[object, Expr] = {}
    mine = tuple(share_common(e, table) for e in index)
    first = [k for k, x in enumerate(operands) if _reads_element(x, buf, mine, l3, table)]
    if not first or (op == "sub" and first[0] != 0):
        raise refuse(f"its value {value!r} does not read {buf}[i] as "
                     f"{'its first' if op == 'sub' else 'an'} operand")
    other = operands[1 - first[0]]
    for e in (other, *index):
        if _reads_buffer(e, buf, l3):
            raise refuse(f"{e!r} reads {buf!r} too")
    return op, other


def _buffer_of(target: object, l3: Layer3) -> str | None:
    if isinstance(target, _BufferOf | Computation):
        return l3.store.get(target.name if isinstance(target, Computation)
                            else target.comp.name)
    if isinstance(target, Buffer):
        return target.name
    return None


def _reads_element(e: Expr, buf: str, index: tuple[Expr, ...], l3: Layer3,
                   table: dict[object, Expr]) -> bool:
    """Whether ``e`` is the read of ``buf``'s current content at ``index``."""
    if not isinstance(e, Access) or not isinstance(e.target, _BufferOf | Buffer) or \
            _buffer_of(e.target, l3) != buf or len(e.indices) != len(index):
        return False
    return all(share_common(i, table) is j for i, j in zip(e.indices, index, strict=True))


def _reads_buffer(e: Expr, buf: str, l3: Layer3) -> bool:
    return any(isinstance(n, Access) and _buffer_of(n.target, l3) == buf
               for n in walk_shared(e))
