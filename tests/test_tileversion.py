"""Register tiles of parametric programs versioned before C printing
(backends/cpu/tileversion.py): the full tiles' copy is printed as vectors, the partial
tiles keep their bounds, and both give numpy's values."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from backends.cpu.tileversion import version_tiles
from middleend.ir.loopast import Block, For, IExpr, If, IInt, IOp, IVar, Node, Program, Stmt


def _mm(name: str, sizes: tuple[object, object, object] | None = None,
        rows: int = 16) -> me.Function:
    """``C[j, i] = sum_k A[k, i] B[j, k]`` with symbolic sizes (or ``sizes``), in register
    tiles of ``rows`` x 4: ``i`` contiguous in A and C, the 4 ``j`` unrolled around it."""
    with me.Function(name) as f:
        if sizes is None:
            n, m, kk = me.Param("N", min=1), me.Param("M", min=1), me.Param("K", min=1)
        else:
            n, m, kk = sizes
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("k", 0, kk)
        a, b = me.Input("A", [kk, n], me.float64), me.Input("B", [m, kk], me.float64)
        c = me.Computation("C", [j, i], me.cast(me.float64, 0))
        u = c.update([j, i, k], a[k, i] * b[j, k], name="U", at=[j, i])
        u.split("i", rows, "i_o", "i_i")
        u.split("j", 4, "j_o", "j_i")
        u.interchange("j_i", "i_o")  # j_o i_o j_i i_i k
        u.interchange("j_i", "k")  # j_o i_o k i_i j_i
        u.interchange("i_i", "j_i")  # j_o i_o k j_i i_i
        u.unroll("j_i", outer="j_i_uo", inner="j_i_ui")
    return f


@pytest.mark.parametrize("nmk", [(37, 21, 13), (32, 8, 5), (5, 3, 2), (16, 4, 1)],
                         ids=["partial", "full", "under-a-tile", "one-k"])
def test_parametric_register_tile_is_vectors_in_full_tiles(nmk: tuple[int, int, int]
                                                           ) -> None:
    n, m, kk = nmk
    rng = np.random.default_rng(n * 100 + m)
    a, b = rng.random((kk, n)), rng.random((m, kk))
    kernel = _mm("pmm").compile(target="cpu")
    # the full tiles' copy of the k loop, its 16 x 4 sums in vector variables, behind
    # the one test of the partial tiles' bounds and guards (vtile.py's "me_s<k>" sums)
    assert "me_s0 = me_vf64x" in kernel.source, kernel.source
    got = kernel(A=a, B=b)["C"]
    np.testing.assert_allclose(got, b @ a, rtol=1e-12)


def test_constant_sizes_version_the_tail_tiles_only() -> None:
    """With constant sizes ISL separates the full tiles itself; the last column of tiles
    (``j`` partial) still holds partial rows, whose full row tiles are versioned."""
    low = _mm("cmm", (37, 21, 13)).lower()
    versioned = version_tiles(low.program)
    assert versioned is not low.program
    kernel = _mm("cmm", (37, 21, 13)).compile(target="cpu")
    rng = np.random.default_rng(3)
    a, b = rng.random((13, 37)), rng.random((21, 13))
    np.testing.assert_allclose(kernel(A=a, B=b)["C"], b @ a, rtol=1e-12)


def _loop(var: str, hi: IExpr, body: Node, tag: str | None = None) -> For:
    return For(var, IInt(0), IOp("le", (IVar(var), hi)), 1, body, tag, hi=hi)


def test_a_guard_that_moves_with_the_reduction_is_not_assumed() -> None:
    """A bound or guard that reads the reduction's own iterator changes inside the loop:
    no copy is made (a register tile with it is not one)."""
    inner = _loop("t9", IOp("min", (IInt(7), IOp("sub", (IVar("p_N"), IVar("t5"))))),
                  Stmt("U", ()))
    k = _loop("t5", IVar("p_K"), Block((inner, If(IOp("ge", (IVar("t5"), IInt(1))),
                                                 Stmt("U", ())))))
    prog = Program("p", (), (), k)
    assert version_tiles(prog) is prog
