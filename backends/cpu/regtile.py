"""Register-tile reduction loops, which gcc's loop vectorizer must not vectorize.

A register tile is a reduction loop (``k``) whose body updates a small block of one array
at places that do not move with ``k``: ``C[i, j] += A[i, k] * B[k, j]`` for the 8 x 6
``(i, j)`` of a tile, ``i`` a constant loop of 8 and ``j`` unrolled. gcc unrolls the
constant loops, keeps the 48 sums in registers across ``k`` and packs them into 12
vectors (SLP): the BLAS micro-kernel. But when the operand read along ``k`` is contiguous
(a packed panel: ``pack(A, Ap, 1 % 8, 2, 1)``), gcc 12's loop vectorizer runs first and
vectorizes the ``k`` loop itself, as 48 in-order ("fold-left") floating-point reductions:
lane extracts, permutes and a scalar add chain per sum. On mm2 with packed operands that
made the kernel 4x slower than the same loops unpacked (450 against 106 ms), where with
the loop vectorizer off for the tile the packed kernel runs 15 % faster than unpacked.

So a kernel with such a loop is compiled without the loop vectorizer
(``backends/cpu/source.py``): gcc still unrolls and SLP-vectorizes the tile, and loops
the schedule vectorizes (``#pragma omp simd``) are still vectorized; the kernel's other
loops are not auto-vectorized, the price of the option being per file. Only float
reductions qualify: gcc may reassociate an integer sum, so its vectorized form is fast.
"""

from __future__ import annotations

from backends.clike.divmod import expr_linear
from middleend.ir.expr import walk
from middleend.ir.intervals import Interval
from middleend.ir.loopast import Block, For, IInt, IterRef, Node, Program, Stmt, ivars

MAX_TILE_TRIP = 64  # a constant loop inside the tile (gcc or vtile.py unrolls it completely)
MIN_ACCUMULATORS = 4  # fewer sums are a dot product, not a tile


def register_tile_loop(f: For, program: Program) -> bool:
    """Whether ``f`` is a register-tile reduction loop (see the module doc): untagged, its
    body only blocks, constant loops of at most :data:`MAX_TILE_TRIP` iterations (plain
    or unrolled) and statements storing a float at a place that does not depend on
    ``f``'s iterator but on one of those loops', at least :data:`MIN_ACCUMULATORS` of
    them per iteration."""
    if f.tag is not None:
        return False
    n = _accumulators(f.body, f.var, {}, program)
    return n is not None and n >= MIN_ACCUMULATORS


def _accumulators(node: Node, var: str, inner: dict[str, Interval], program: Program
                  ) -> int | None:
    """Statement instances per iteration of the loop over ``var``, or None when ``node``
    is not the body of a register tile. ``inner``: the constant loops around ``node``
    inside the tile, with their ranges; every store must move with one of them (SLP's
    vector dim) and not with ``var``, read from its subscripts' linear forms where they
    have one (``yq[(i - 1) % 8, j]`` with ``i = 8 i0 + i1 + 1`` moves with ``i1`` only),
    else from the iterators it names. Without one (7 dot products down 7 columns, ``j``
    unrolled) there is nothing to pack and the in-order vectorized loop is the faster
    form (atax: 1.31 against 1.55x numpy)."""
    if isinstance(node, Block):
        total = 0
        for child in node.body:
            n = _accumulators(child, var, inner, program)
            if n is None:
                return None
            total += n
        return total
    if isinstance(node, For):
        if node.tag not in (None, "unroll") or node.step != 1 or \
                not isinstance(node.init, IInt) or not isinstance(node.hi, IInt):
            return None
        trip = node.hi.value - node.init.value + 1
        n = _accumulators(node.body, var, {**inner, node.var: (node.init.value,
                                                                 node.hi.value)}, program)
        return None if n is None or not 0 < trip <= MAX_TILE_TRIP else trip * n
    if isinstance(node, Stmt):
        info = program.stmts.get(node.comp)
        if info is None or info.op is not None or info.store is None or \
                not info.store.dtype.is_float:
            return None
        bound = dict(node.bindings)  # iterator i is bound as v_i (passes/astgen.py)
        forms = [expr_linear(ix, {n[2:]: e for n, e in bound.items()
                                  if n.startswith("v_")}, inner)
                 for ix in info.store.indices]
        if info.store.offset_names is None and all(fm is not None for fm in forms):
            moves = {k for fm in forms for k, c in fm.items() if k and c}  # type: ignore
        else:
            names = {f"v_{n.name}" for n in walk(info.store) if isinstance(n, IterRef)} | \
                set(info.store.offset_names or ())
            moves = ivars(*(bound.get(n) for n in names))
        return None if var in moves or not moves & set(inner) else 1
    return None


__all__ = ["register_tile_loop"]
