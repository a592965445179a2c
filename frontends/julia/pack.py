"""The ``pack`` directive: later reads of an array go through a copy with its dimensions
permuted, made once where the array holds its final value::

    pack(C4, C4t, 2, 1)     # C4t[p, s] = C4[s, p]: doitgen's C4[s, p:p+7] is contiguous
    pack(data, dataT, 2, 1, i)   # only the reads data[.., i] (along loop i) read the copy
    pack(A, Ap, 1 % 8, 2, 1)     # Ap[i % 8, k, i ÷ 8] = A[i, k]: panels of 8 rows

Both operands of a product like ``data' * data`` or ``C4' * A`` run along the reduction
index, the contiguous one; gcc may not reorder a floating-point sum, so the vector
dimension must be another one, along which the array is strided (a gather per vector).
A transposed copy (what a BLAS packs) makes it contiguous. The copy is a computation of
its own, labelled ``C4t``, with loops ``C4t_1, C4t_2, ...`` (``C4t_1`` the first Julia
index, innermost: the copy writes contiguously), scheduled like any other.

It is placed right after the last top-level statement that writes the array (before
everything when nothing does), and every read of the array in a later top-level statement
reads the copy; those statements see the values they would have read, since nothing
writes the array after the copy. Refused when no later statement reads the array.

With a loop name after the dims, only the reads whose index in the copy's first (contiguous)
dim is that loop variable read the copy; the others read the array itself. In
``cov[i, j] += data[k, i] * data[k, j]`` with i the vector loop, ``data[k, i]`` needs the
copy (i contiguous) while ``data[k, j]``, one value per j broadcast over the vector, is best
read where it is contiguous along k, the reduction loop: read from the copy, the j values of
a register tile lie side by side and gcc loads them as one vector and permutes it into the
broadcasts (1.4x slower on covariance).

A dim written ``d % b`` *blocks* dim ``d``: the copy has the index modulo ``b`` there and
the quotient where the plain ``d`` stands, what a BLAS does to the operand it reads as
vectors. A register tile of ``b`` rows then reads one contiguous panel (``b`` values per
step of the reduction, one cache line for 8 doubles) where the array's columns lie a whole
column apart: the tile's stream of the operand is one prefetchable run instead of one
line per column, each of a different page (mm2's products: 29 -> 39 GFLOP/s in a C
model of the loop nest). The copy's loops are the array's dims, the first index that
appears in the copy innermost, named after the copy's dims where they first appear.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.expand import accesses
from frontends.julia.exprs import runs_along
from frontends.julia.program import Program, Stmt


@dataclass(frozen=True)
class Pack:
    array: str
    copy: str
    perm: tuple[int, ...]  # the copy's Julia index k is the array's index perm[k] (0-based)
    # per copy dim: 0 the array's index itself, b > 0 the index modulo b, -b its quotient
    split: tuple[int, ...]
    at: int  # its place among the top-level positions, doubled (statements are even)
    line: int
    along: str = ""  # only reads indexed by this loop variable in the copy's first dim


def plan_pack(d: J.Call, prog: Program, arrays: set[str], rank: dict[str, int], fn: str
              ) -> Pack:
    def bad(what: str) -> UnsupportedJulia:
        return UnsupportedJulia(d.line, f"directive pack: {what} (pack(array, copy, dims...): "
                                "the copy's dims as the array's, e.g. pack(A, At, 2, 1), "
                                "or blocked, pack(A, Ap, 1 % 8, 2, 1))", fn)

    a = d.args
    if len(a) < 3 or not isinstance(a[0], J.Name) or not isinstance(a[1], J.Name):
        raise bad("expected an array, a name for the copy and its dims")
    name, copy = a[0].id, a[1].id
    if name not in arrays:
        raise bad(f"{name!r} is not an array")
    if copy in arrays or any(copy in s.labels for s in prog.stmts):
        raise bad(f"{copy!r} already names an array or a statement")
    dims: list[int] = []
    blocks: list[int] = []
    rest = list(a[2:])
    along = ""
    if rest and isinstance(rest[-1], J.Name):
        along = rest.pop().id
    for x in rest:
        b = 0
        if isinstance(x, J.Call) and x.fn == "%":
            x, by = x.args
            if not isinstance(by, J.Num) or by.type != "Int64" or int(by.value) < 2:
                raise bad("a block (dim % b) with b not an Int of at least 2")
            b = int(by.value)
        if not isinstance(x, J.Num) or x.type != "Int64":
            raise bad("a dim that is not an Int")
        dims.append(int(x.value))
        blocks.append(b)
    whole = [d_ for d_, b in zip(dims, blocks, strict=True) if not b]
    for d_, b in zip(dims, blocks, strict=True):
        if b and d_ not in whole:
            raise bad(f"dim {d_} blocked ({d_} % {b}) without its quotient (a plain {d_} "
                      "among the dims)")
    if sorted(whole) != list(range(1, rank[name] + 1)):
        raise bad(f"{whole} is not a permutation of the {rank[name]} dims of {name!r}")
    blocked = [d_ for d_, b in zip(dims, blocks, strict=True) if b]
    if len(set(blocked)) != len(blocked):
        raise bad(f"dim {blocked} blocked twice")
    # the plain dim of a blocked one holds the quotient
    by = {d_: b for d_, b in zip(dims, blocks, strict=True) if b}
    split = tuple(b or -by.get(d_, 0) for d_, b in zip(dims, blocks, strict=True))
    writes = [s.pos[0] for s in prog.stmts
              if isinstance(s.node.target, J.Ref) and s.node.target.array == name]
    at = 2 * max(writes) + 1 if writes else -1
    readers = [s for s in prog.stmts if 2 * s.pos[0] > at and _reads(s, name)]
    if not readers:
        raise bad(f"no statement after the last write of {name!r} reads it")
    perm = tuple(k - 1 for k in dims)
    if along and not any(_reads(s, name, (perm[0], along)) for s in readers):
        raise bad(f"no read of {name!r} after its last write has {along!r} as its index "
                  f"{dims[0]}")
    return Pack(name, copy, perm, split, at, d.line, along)


def copy_extent(n: int, b: int) -> int:
    """The extent of a copy's dim over an array dim of ``n`` (``Pack.split``'s ``b``):
    ``n`` itself, the block ``b``, or the number of blocks of ``-b``, the last partial."""
    return n if not b else b if b > 0 else -(-n // -b)


def _reads(s: Stmt, name: str, along: tuple[int, str] | None = None) -> bool:
    """Whether ``s`` reads array ``name`` (with ``along = (dim, v)``: with the loop
    variable ``v`` as its index in ``dim``)."""
    return any(not w and (along is None or runs_along(ref.indices, along[0], along[1]))
               for ref, w in accesses(s, name))

