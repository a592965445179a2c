"""Printing one statement instance and a buffer's shape, the same in every C-family
target: the statement's bindings, its guard, and ``store = value`` (a checked store only
when its subscripts are in bounds, else the error flag is raised)."""

from __future__ import annotations

from collections.abc import Mapping

from middleend.ir.errors import TargetError
from middleend.ir.intervals import Interval, iexpr_interval
from middleend.ir.loopast import BufferDecl, Stmt, StmtInfo
from middleend.ir.types import DType

from .cexpr import ExprPrinter, ident, iexpr_c, store_value
from .cruntime import suffix


def comment(text: str) -> str:
    """Make a user-visible name safe inside a C comment."""
    return "".join(ch if ch.isalnum() or ch in "_.-:" else "_" for ch in text)


def dims_lines(b: BufferDecl) -> list[str]:
    """The clamped dimension sizes ``d_<buf>_<k>`` and row-major strides ``s_<buf>_<k>``,
    defined once where the buffer comes into existence."""
    n = len(b.sizes)
    lines = [f"const int64_t d_{b.name}_{k} = me_dim({iexpr_c(size)});"
             for k, size in enumerate(b.sizes)]
    for k in reversed(range(n)):
        stride = "1" if k == n - 1 else f"s_{b.name}_{k + 1} * d_{b.name}_{k + 1}"
        lines.append(f"const int64_t s_{b.name}_{k} = {stride};")
    return lines


def iterator_ranges(s: Stmt, loops: Mapping[str, Interval]) -> dict[str, Interval]:
    """The range of each of ``s``'s iterators over the loops' ranges ``loops``, where
    known (what the printers prove clamps and bounds checks away with)."""
    out = {}
    for name, e in s.bindings:
        rng = iexpr_interval(e, loops)
        if rng is not None and name.startswith("v_"):
            out[name[2:]] = rng
    return out


def statement_lines(exprs: ExprPrinter, buffers: dict[str, BufferDecl], s: Stmt,
                    info: StmtInfo, loops: Mapping[str, Interval] | None = None
                    ) -> list[tuple[int, str]]:
    """The C lines of one instance of a computation or a copy, as (indent, text), indents
    relative to the statement's own block. ``loops``: the range of each loop iterator
    around the statement, where known; the statement's iterators then get ranges too and
    index clamps that cannot bind there are left out."""
    store, value = info.store, info.value
    if store is None or value is None:
        raise TargetError(f"statement {s.comp!r} ({info.op} operation) stores nothing")
    decl = buffers.get(store.buffer)
    if decl is not None and decl.role == "input":
        raise TargetError(f"computation {s.comp!r} writes input buffer {store.buffer!r}")
    out = [(0, f"{{ /* {comment(s.comp)} */")]
    for name, e in s.bindings:
        out.append((1, f"const int64_t {ident(name, 'binding')} = {iexpr_c(e)};"))
    exprs.ranges = iterator_ranges(s, loops) if loops else {}
    exprs.bindings = {name[2:]: e for name, e in s.bindings if name.startswith("v_")}
    exprs.loops = loops or {}
    if info.critical is not None and not exprs.atomics:
        raise TargetError(f"computation {s.comp!r} is in an atomic group (atomic(group="
                          "...)), a critical section under a lock, which this target does "
                          "not print; use the cpu target")
    if info.atomic is not None and not exprs.atomics:
        raise TargetError(f"computation {s.comp!r} is an atomic update (atomic()), which "
                          "this target does not print; use the cpu target")
    try:
        guard = exprs.value(info.guard) if info.guard is not None else None
        # evaluated where the value is: under the guard
        temps = exprs.hoist(value if info.atomic is None else info.atomic[1])
        if info.atomic is not None:
            text = exprs.value(info.atomic[1])
        else:
            text = store_value(exprs, value, store.type_)
        lets, in_bounds, target = exprs.store_target(store)
    finally:
        exprs.ranges = {}
        exprs.bindings = {}
        exprs.loops = {}
        exprs.temps = {}
    if info.atomic is None:
        update = f"{target} = {text};"
    elif exprs.atomic_rmw is not None:  # the target's own atomic operations (a GPU's)
        update = exprs.atomic_rmw(s.comp, info.atomic[0], target, text, store.type_,
                                  store.buffer)
    else:
        update = atomic_update(info.atomic[0], target, text, store.type_)
    body = [*temps, *lets, update if in_bounds is None else
            f"if ({in_bounds}) {{ {update} }} else me_flag({exprs.err});"]
    inner = 1
    if guard is not None:
        out.append((1, f"if ({guard}) {{"))
        inner = 2
    out.extend((inner, line) for line in body)
    if info.guard is not None:
        out.append((1, "}"))
    out.append((0, "}"))
    return out


_FETCH = {"add": "add", "sub": "sub", "bitand": "and", "bitor": "or", "bitxor": "xor"}
_COMBINE = {"add": "+", "sub": "-", "mul": "*", "bitand": "&", "bitor": "|", "bitxor": "^"}


def atomic_update(op: str, target: str, operand: str, dt: DType) -> str:
    """``target = target op operand`` as one atomic read-modify-write (gcc's ``__atomic``
    builtins, relaxed: the parallel loop's join orders it before what follows): a
    fetch-and-op for integer + - & | ^ (two's complement wrap-around, as the plain update
    has), else a compare-and-swap loop that retries until no other thread wrote the
    element between its load and its store."""
    if dt.is_int and op in _FETCH:
        return f"__atomic_fetch_{_FETCH[op]}(&{target}, {operand}, __ATOMIC_RELAXED);"
    c = dt.c_name
    if op in ("min", "max"):
        new = f"me_{op}_{suffix(dt)}(me_old, me_v)"
    elif op in _COMBINE:
        new = f"({c})(me_old {_COMBINE[op]} me_v)"
    else:
        raise TargetError(f"no atomic update for the operation {op!r}")
    return (f"{c} me_v = {operand}, me_old, me_new; __atomic_load(&{target}, &me_old, "
            f"__ATOMIC_RELAXED); do {{ me_new = {new}; }} while (!__atomic_compare_exchange("
            f"&{target}, &me_old, &me_new, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));")
