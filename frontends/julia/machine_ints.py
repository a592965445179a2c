"""Int arguments of ``@schedule`` directives that depend on the machine.

A hand-written schedule names sizes that suit one instruction set: a register tile of
8 rows x 6 columns of Float64 holds 12 sums in AVX2's 16 vector registers, but on an
AVX-512 machine the same 8 rows are one vector, the tile holds 6 sums, and gcc's code is
bound by the multiply-adds' latency (mm2: 2.1x numpy's single-thread time there, 1.2x with
24 columns). Halide schedules ask ``natural_vector_size``; a directive here may ask::

    vector_lanes(Float64)     # elements of T in one of the target's widest vectors
    vector_registers()        # the target's architectural vector registers
    cache_bytes(2)            # bytes of the target's level-2 data cache (levels 1-3)

and combine them with Int literals by ``+``, ``-``, ``*`` and ``÷``, e.g.
``tile(T, i, j, k, 8, 3 * vector_registers() * vector_lanes(Float64) ÷ 32, 1024)``.
They are answered from the machine the target builds for (``me.target_machine``: its
compiler's predefined macros, and for the cpu target the host's caches), the same facts
the builds use (512-bit vectors on AVX-512, ``backends.cpu.build.vector_flags``). The
shape of an argument is checked when the source is compiled (:func:`problem`); the answer,
when the call specializes it (:func:`value`).
"""

from __future__ import annotations

from collections.abc import Callable

from frontends.julia import jast as J
from frontends.julia.jtypes import ELEMENT
from middleend import Machine

QUERIES = {"vector_lanes": 1, "vector_registers": 0, "cache_bytes": 1}  # name -> arguments
CACHE_LEVELS = (1, 2, 3)  # what cache_bytes takes
assert set(QUERIES) == J.DIRECTIVE_QUERIES  # what the parsers let through
ELEMENTS = [t for t, d in ELEMENT.items() if d.is_float or d.is_int]  # vector_lanes' T


def problem(e: J.Expr) -> str | None:
    """What is wrong with ``e`` as a directive's Int argument built from literals and the
    queries, or None (names are loop or statement names: not checked here)."""
    if isinstance(e, J.Name) or (isinstance(e, J.Num) and e.type == "Int64"):
        return None
    if not isinstance(e, J.Call):
        return "a directive argument must be a name, an Int or an Int expression"
    if e.fn in QUERIES:
        want = QUERIES[e.fn]
        if len(e.args) != want:
            return f"{e.fn} takes {want} argument(s), got {len(e.args)}"
        if e.fn == "cache_bytes":
            a = e.args[0]
            if not (isinstance(a, J.Num) and a.type == "Int64" and
                    int(a.value) in CACHE_LEVELS):
                return "cache_bytes takes a cache level: 1, 2 or 3"
            return None
        if want and not (isinstance(e.args[0], J.Name) and e.args[0].id in ELEMENTS):
            return f"{e.fn} takes an element type ({', '.join(ELEMENTS)})"
        return None
    if e.fn in J.DIRECTIVE_INT_OPS and len(e.args) in ((1, 2) if e.fn == "-" else (2,)):
        for a in e.args:
            if isinstance(a, J.Name):
                return f"{e.fn} of a name in a directive argument (Ints and queries only)"
            got = problem(a)
            if got is not None:
                return got
        return None
    return (f"{e.fn}(...) in a directive argument (Int expressions of literals, "
            f"{', '.join(f'{q}()' for q in QUERIES)} and + - * ÷ only)")


def value(e: J.Expr, machine: Callable[[], Machine | None]) -> int:
    """The Int ``e`` denotes (``problem(e)`` is None and ``e`` is not a name); ``machine``
    is asked only when ``e`` holds a query. Raises ValueError with the reason."""
    if isinstance(e, J.Num):
        return int(e.value)
    assert isinstance(e, J.Call), e
    if e.fn in QUERIES:
        m = machine()
        if m is None:
            raise ValueError(f"{e.fn}: the target does not say which machine it builds for")
        if e.fn == "cache_bytes":
            level = int(e.args[0].value)  # type: ignore[attr-defined]  (problem checked it)
            size = m.cache_bytes(level)
            if size is None:
                raise ValueError(f"cache_bytes({level}): the target's machine reports no "
                                 f"level-{level} data cache")
            return size
        got = _lanes(m, e.args[0]) if e.fn == "vector_lanes" else m.vector_registers()
        if got is None:
            raise ValueError(f"{e.fn}: the target's machine has no vector unit the "
                             "middle-end knows (x86-64 SSE2..AVX-512, ARM NEON)")
        return got
    xs = [value(a, machine) for a in e.args]
    if e.fn == "-":
        return -xs[0] if len(xs) == 1 else xs[0] - xs[1]
    if e.fn == "+":
        return xs[0] + xs[1]
    if e.fn == "*":
        return xs[0] * xs[1]
    if xs[1] == 0:
        raise ValueError("÷ by zero in a directive argument")
    return xs[0] // xs[1] if (xs[0] < 0) == (xs[1] < 0) else -(-xs[0] // xs[1])  # Julia ÷


def resolve_blocks(d: J.Call, machine: Callable[[], Machine | None]) -> J.Call:
    """``d`` with the block size of each ``x % k`` argument (``store_in``'s folded loops,
    ``pack``'s blocked dims) that is an expression of the queries replaced by its value:
    those directives take literal block sizes. Raises ValueError as :func:`value` does."""
    args = []
    for a in d.args:
        if isinstance(a, J.Call) and a.fn == "%" and len(a.args) == 2 and \
                isinstance(a.args[1], J.Call):
            k = J.Num(value(a.args[1], machine), "Int64", d.line)
            a = J.Call("%", (a.args[0], k), a.line)
        args.append(a)
    return J.Call(d.fn, tuple(args), d.line)


def _lanes(m: Machine, t: J.Expr) -> int | None:
    assert isinstance(t, J.Name)
    d = ELEMENT[t.id]
    size = max(1, d.bits // 8)
    got = m.vector_bytes(d.is_float, size)
    return None if got is None else got // size
