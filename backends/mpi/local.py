"""One rank's view of a distributed program: the same loop AST, with each distributed
buffer stored as its window (the rank's block plus its halo) instead of whole.

A window of buffer ``b`` along ``dim`` starts at global index ``me_lo_b`` (``rank * block
- lo_halo``) and holds ``me_w_b`` elements (``block + lo_halo + hi_halo``) along it; both
are extra parameters of the rank's entry point, set by ``main`` from the params and the
rank. Every access to ``b`` subtracts ``me_lo_b`` from its subscript along ``dim``: the
statements keep their global indices, so the schedule the middle-end checked is the one
that runs.
"""

from __future__ import annotations

import dataclasses

from middleend.ir.distribution import BLOCK, Distribution, Window
from middleend.ir.expr import Binary, Expr, rebuild
from middleend.ir.loopast import BufAccess, BufferDecl, IVar, ParamRef, Program, StmtInfo
from middleend.ir.types import int64

RANK = "me_rank"


def lo_param(buf: str) -> str:
    return f"me_lo_{buf}"


def width_param(buf: str) -> str:
    return f"me_w_{buf}"


def shifted(windows: dict[str, Window], acc: BufAccess) -> BufAccess:
    """``acc`` relative to its buffer's window on this rank (unchanged if the buffer is
    not distributed, or stored whole)."""
    w = windows.get(acc.buffer)
    if w is None or w.whole:
        return acc
    idx = list(acc.indices)
    idx[w.dim] = Binary("sub", idx[w.dim], ParamRef(lo_param(acc.buffer)), int64)
    return BufAccess(acc.buffer, tuple(idx), acc.type_, acc.offset_names, acc.checked)


def _expr(windows: dict[str, Window], e: Expr | None) -> Expr | None:
    if e is None:
        return None

    def f(n: Expr) -> Expr | None:
        if isinstance(n, BufAccess):
            inner = BufAccess(n.buffer, tuple(_expr(windows, i) for i in n.indices),  # type: ignore[misc]
                              n.type_, n.offset_names, n.checked)
            return shifted(windows, inner)
        return None

    return rebuild(e, f)


def local_program(program: Program, dist: Distribution) -> Program:
    """The program one rank runs: windowed buffers, and ``me_rank`` plus each window's
    start and width as parameters (after the program's own; then the block size
    ``me_B`` when the ranks are read at run time)."""
    windows = {n: w for n, w in dist.windows.items() if not w.whole}
    buffers = []
    for b in program.buffers:
        if b.name in dist.windows and b.role == "input":
            # receives and exchanges write its halo: not const in the rank's kernel
            b = dataclasses.replace(b, role="inout")
        w = windows.get(b.name)
        if w is not None:
            sizes = list(b.sizes)
            sizes[w.dim] = IVar(f"p_{width_param(b.name)}")
            b = dataclasses.replace(b, sizes=tuple(sizes))
        buffers.append(b)
    stmts: dict[str, StmtInfo] = {}
    for name, info in program.stmts.items():
        store = _expr(windows, info.store)
        stmts[name] = dataclasses.replace(info, store=store, value=_expr(windows, info.value),
                                          guard=_expr(windows, info.guard))
    extra = [RANK]
    for n in sorted(windows):
        extra += [lo_param(n), width_param(n)]
    if dist.runtime:
        extra.append(BLOCK)  # the block size, computed from the ranks at run time
    return dataclasses.replace(program, name=f"{program.name}_rank",
                               params=(*program.params, *extra), buffers=tuple(buffers),
                               stmts=stmts)


def window_decl(b: BufferDecl, w: Window | None) -> BufferDecl:
    """``b`` as one rank stores it (for sizing its allocation in ``main``)."""
    if w is None or w.whole:
        return b
    sizes = list(b.sizes)
    sizes[w.dim] = IVar(f"p_{width_param(b.name)}")
    return dataclasses.replace(b, sizes=tuple(sizes))
