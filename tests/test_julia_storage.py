"""The storage directives of ``@schedule`` (issue 13): ``store_in`` (an array expanded
along loops, folded, copied back into an argument), ``copy_at`` (a packed copy read in
its place) and ``pack`` (later reads through a copy with permuted dims), against numpy
under several schedules, and their refusals."""

from __future__ import annotations

import numpy as np
import pytest

from frontends.julia import UnsupportedJulia, compile_source
from middleend import ScheduleError

DOITGEN = """
@acc function doitgen!(A::Array{Float64, 3}, C4::Matrix{Float64}, sum::Vector{Float64})
    np, nq, nr = size(A)
    @schedule begin
        SCHEDULE
    end
    for r in 1:nr, q in 1:nq
        for p in 1:np
            @name Z sum[p] = 0.0
            for s in 1:np
                @name U sum[p] += A[s, q, r] * C4[s, p]
            end
        end
        for p in 1:np
            @name W A[p, q, r] = sum[p]
        end
    end
end
"""


def F(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asfortranarray(rng.random(shape))


def _src(template: str, schedule: str) -> str:
    return template.replace("SCHEDULE", "\n        ".join(schedule.split(";")))


@pytest.mark.parametrize("schedule", [
    "store_in(sum, r); parallelize(U, r)",
    "store_in(sum, q, r); interchange(U, q, r)",
    "store_in(sum, q % 2, r); parallelize(U, r)",
    "store_in(sum, r, q % 3)",
    "store_in(sum, r); parallelize(U, r); split(U, p, 4); unroll(U, p1)",
    "pack(C4, C4t, 2, 1); store_in(sum, r); interchange(C4t, C4t_2, C4t_1)",
])
def test_store_in_expands_doitgens_sum(schedule: str) -> None:
    rng = np.random.default_rng(1)
    A, C4, s = F(rng, 11, 7, 5), F(rng, 11, 11), np.zeros(11)
    want = np.einsum("sqr,sp->pqr", A, C4)
    compile_source(_src(DOITGEN, schedule), "doitgen!")(A, C4, s)
    np.testing.assert_allclose(A, want, rtol=1e-12)
    np.testing.assert_allclose(s, want[:, -1, -1], rtol=1e-12)  # copied back


def test_the_shared_sum_keeps_r_sequential_and_a_fold_too_small_is_refused() -> None:
    rng = np.random.default_rng(1)
    args = (F(rng, 5, 3, 4), F(rng, 5, 5), np.zeros(5))
    with pytest.raises(ScheduleError):
        compile_source(_src(DOITGEN, "parallelize(U, r)"), "doitgen!")(*args)
    with pytest.raises(ScheduleError, match=r"(?s)'r' of 'U' is tagged parallel but carries .*"
                       r"mod 2 = 0"):  # 2 copies along r, r over the cores
        compile_source(_src(DOITGEN, "store_in(sum, r % 2); parallelize(U, r)"),
                       "doitgen!")(*args)


LOCAL = """
@acc function rows!(B::Matrix{Float64}, A::Matrix{Float64})
    n, m = size(A)
    t = similar(A, Float64, m)
    @schedule begin
        SCHEDULE
    end
    for i in 1:n
        for j in 1:m
            @name T t[j] = 2.0 * A[i, j]
        end
        for j in 1:m
            @name R B[i, j] = t[j] + t[m - j + 1]
        end
    end
end
"""


@pytest.mark.parametrize("schedule", ["", "store_in(t, i); parallelize(T, i)",
                                      "store_in(t, i % 3)"])
def test_store_in_a_local_array(schedule: str) -> None:
    rng = np.random.default_rng(2)
    A, B = F(rng, 6, 5), np.zeros((6, 5), order="F")
    compile_source(_src(LOCAL, schedule), "rows!")(B, A)
    np.testing.assert_allclose(B, 2 * A + 2 * A[:, ::-1], rtol=1e-12)


SMOOTH = """
@acc function smooth!(u::Vector{Float64}, x::Vector{Float64}, steps::Int)
    n = length(u)
    @schedule begin
        SCHEDULE
    end
    for t in 1:steps
        for i in 1:n
            if t == 1
                @name U u[i] = x[i]
            else
                @name V u[i] = 0.5 * u[i] + x[i]
            end
        end
    end
end
"""


@pytest.mark.parametrize("template, schedule, message", [
    (SMOOTH, "store_in(u, t)", r"line 5: .*'u' written at line 12 is read at line 12 in "
     r"another iteration of loop 't'"),
    (SMOOTH.replace("if t == 1", "if t == 0"), "store_in(u, t)",
     r"line 12 reads what 'u' held before the loops"),
    (SMOOTH, "store_in(u, i)", r"'u' is an argument whose last writes lie in several "
     r"iterations"),
    (SMOOTH, "store_in(u, k)", r"every access of 'u' must be inside one loop 'k' \(line 10 "
     r"is not in a loop 'k'\)"),
    (SMOOTH, "store_in(x, t)", r"no statement writes 'x'"),
    (SMOOTH, "store_in(steps, t)", r"the first argument must be an array"),
    (SMOOTH, "store_in(u, t, t)", r"a loop named twice"),
    (SMOOTH, "store_in(u, t % 0)", r"neither a loop name nor `loop % k`"),
    (DOITGEN, "store_in(sum, p)", r"they lie in 2 different loops 'p'"),
    (DOITGEN, "store_in(sum, r); store_in(sum, q)", r"'sum' is stored twice"),
])
def test_store_in_refusals(template: str, schedule: str, message: str) -> None:
    rng = np.random.default_rng(3)
    if template is DOITGEN:
        args: tuple = (F(rng, 5, 3, 4), F(rng, 5, 5), np.zeros(5))
        name = "doitgen!"
    else:
        args, name = (np.zeros(9), F(rng, 9), 4), "smooth!"
    with pytest.raises(UnsupportedJulia, match=message):
        compile_source(_src(template, schedule), name)(*args)


def test_smooth_unexpanded_is_right() -> None:
    """The refused expansions above refuse a program that does compute (not one that was
    broken anyway)."""
    rng = np.random.default_rng(3)
    u, x = np.zeros(9), F(rng, 9)
    compile_source(_src(SMOOTH, "vectorize(V, i, 4)"), "smooth!")(u, x, 4)
    want = x.copy()
    for _ in range(3):
        want = 0.5 * want + x
    np.testing.assert_allclose(u, want, rtol=1e-12)


MM = """
@acc function mm!(C::Matrix{Float64}, A::Matrix{Float64}, B::Matrix{Float64})
    ni, nk = size(A)
    nj = size(B, 2)
    @schedule begin
        SCHEDULE
    end
    for j in 1:nj, i in 1:ni
        C[i, j] = 0.0
    end
    for i in 1:ni, j in 1:nj, k in 1:nk
        @name T C[i, j] += A[i, k] * B[k, j]
    end
end
"""


@pytest.mark.parametrize("schedule", [
    "copy_at(T, i, B, Bp)",
    "tile(T, i, j, 4, 4); copy_at(T, j0, B, Bp)",
    "tile(T, i, j, 4, 4); copy_at(T, j0, B, Bp); vectorize(Bp, Bp_1, 4)",
    "tile(T, i, j, 4, 4); interchange(T, i0, j0); copy_at(T, j0, B, Bp); "
    "copy_at(T, i0, A, Ap); parallelize(T, j0)",
])
def test_copy_at_packs_an_operand(schedule: str) -> None:
    rng = np.random.default_rng(4)
    A, B, C = F(rng, 9, 7), F(rng, 7, 11), np.zeros((9, 11), order="F")
    compile_source(_src(MM, schedule), "mm!")(C, A, B)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)


@pytest.mark.parametrize("schedule, message", [
    ("copy_at(T, q, B, Bp)", r"'T' has no loop 'q' \(its loops: \['i', 'j', 'k'\]\)"),
    ("copy_at(T, j, X, Bp)", r"copy_at: takes \(statement, loop, array, new buffer name\)"),
    ("copy_at(T, j, B)", r"copy_at: takes \(statement, loop, array, new buffer name\)"),
    ("copy_at(T, j, B, A)", r"'A' already names a statement or an array"),
    ("copy_at(T, j, B, Bp); vectorize(Bp, Bp_7, 4)", r"has no loop 'Bp_7'"),
])
def test_copy_at_refusals(schedule: str, message: str) -> None:
    rng = np.random.default_rng(4)
    with pytest.raises(UnsupportedJulia, match=message):
        compile_source(_src(MM, schedule), "mm!")(np.zeros((3, 4), order="F"), F(rng, 3, 2),
                                                  F(rng, 2, 4))


@pytest.mark.parametrize("schedule", [
    "pack(B, Bt, 2, 1)",
    "pack(B, Bt, 2, 1); pack(A, At, 2, 1); vectorize(Bt, Bt_1, 4); interchange(At, At_1, At_2)",
    "pack(B, Bt, 2, 1); tile(T, i, j, 4, 4); interchange(T, i1, k); parallelize(T, i0); "
    "tile(Bt, Bt_2, Bt_1, 4, 4)",
])
def test_pack_reads_a_transposed_copy(schedule: str) -> None:
    rng = np.random.default_rng(5)
    A, B, C = F(rng, 9, 7), F(rng, 7, 11), np.zeros((9, 11), order="F")
    compile_source(_src(MM, schedule), "mm!")(C, A, B)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)


GRAM = """
@acc function gram!(G::Matrix{Float64}, X::Matrix{Float64}, c::Vector{Float64})
    n, m = size(X)
    @schedule begin
        SCHEDULE
    end
    for j in 1:m, i in 1:n
        X[i, j] -= c[j]
    end
    for i in 1:m, j in 1:m
        G[i, j] = 0.0
        for k in 1:n
            @name P G[i, j] += X[k, i] * X[k, j]
        end
    end
    for j in 1:m
        X[1, j] += 1.0
    end
end
"""


@pytest.mark.parametrize("schedule", ["", "pack(X, Xt, 2, 1)",
                                      "pack(X, Xt, 2, 1); vectorize(P, i, 4)",
                                      "pack(X, Xt, 2, 1, i); vectorize(P, i, 4)",
                                      "pack(X, Xt, 2, 1, j); tile(P, i, j, 2, 3); "
                                      "interchange(P, j1, k); unroll(P, i1)"])
def test_pack_of_an_array_the_kernel_writes_before_and_after(schedule: str) -> None:
    """The copy is made after the last write before its readers: the centring before is
    seen, the update after still lands in X (and is not read through the copy)."""
    rng = np.random.default_rng(6)
    X, c, G = F(rng, 8, 5), rng.random(5), np.zeros((5, 5), order="F")
    Xc = X - c
    if schedule:  # the last write (X[1, j] += 1) comes after the product: nothing to pack
        with pytest.raises(UnsupportedJulia, match="no statement after the last write of "
                           "'X' reads it"):
            compile_source(_src(GRAM, schedule), "gram!")(G, X.copy(order="F"), c)
        src = GRAM.replace("X[1, j] += 1.0", "c[j] += 1.0")
    else:
        src = GRAM
    compile_source(_src(src, schedule), "gram!")(G, X, c)
    np.testing.assert_allclose(G, Xc.T @ Xc, rtol=1e-12)


REG_TILE = ("shift(T, i, -1); shift(T, j, -1); shift(T, k, -1); tile(T, i, j, k, 4, 3, 5); "
            "interchange(T, i0, k0); interchange(T, i1, k1); unroll(T, j1)")


@pytest.mark.parametrize("schedule", [
    "pack(A, Ap, 1 % 4, 2, 1)",
    "pack(A, Ap, 2, 1 % 4, 1)",
    "pack(A, Ap, 1 % 4, 2, 1); parallelize(Ap, Ap_2); " + REG_TILE,
    "pack(A, Ap, 1 % 4, 2, 1); pack(B, Bp, 2, 1 % 3, 1); " + REG_TILE,
    "pack(A, Ap, 1 % 4, 2, 1); split(Ap, Ap_1, 4); " + REG_TILE + "; parallelize(T, j0)",
    "pack(A, Ap, 1 % 4, 2 % 5, 1, 2)",
    "pack(A, Ap, 1 % 4, 2 % 5, 1, 2); parallelize(Ap, Ap_2); " + REG_TILE,
    "pack(A, Ap, 1 % 4, 2 % 3, 1, 2); " + REG_TILE,
])
def test_blocked_pack_reads_panels(schedule: str) -> None:
    """``dim % b``: the copy holds the index modulo b there and the quotient where the
    plain dim stands (9 rows: a partial last panel). Both dims blocked (mm2's panels of
    I rows x 128 k, a k block's panels contiguous): 7 k, a partial last block too, in
    blocks as long as the tile's (5) or not (3)."""
    rng = np.random.default_rng(5)
    A, B, C = F(rng, 9, 7), F(rng, 7, 11), np.zeros((9, 11), order="F")
    compile_source(_src(MM, schedule), "mm!")(C, A, B)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)


def test_blocked_pack_along_a_loop() -> None:
    rng = np.random.default_rng(6)
    X, c = F(rng, 8, 5), rng.random(5)
    Xc = X - c
    src = GRAM.replace("X[1, j] += 1.0", "c[j] += 1.0")
    # the second with k (8 rows) in blocks of 3 too, a block's panels contiguous
    for schedule in ("pack(X, Xt, 2 % 2, 1, 2, i)", "pack(X, Xt, 2 % 2, 1 % 3, 2, 1, i)"):
        G = np.zeros((5, 5), order="F")
        compile_source(_src(src, schedule), "gram!")(G, X.copy(order="F"), c.copy())
        np.testing.assert_allclose(G, Xc.T @ Xc, rtol=1e-12)


@pytest.mark.parametrize("schedule, message", [
    ("pack(B, Bt, 1, 1)", r"\[1, 1\] is not a permutation of the 2 dims of 'B'"),
    ("pack(B, Bt, 2 % 1, 1, 2)", r"a block \(dim % b\) with b not an Int of at least 2"),
    ("pack(B, Bt, 2 % 4, 1)", r"dim 2 blocked \(2 % 4\) without its quotient"),
    ("pack(B, Bt, 2 % 4, 2)", r"\[2\] is not a permutation of the 2 dims"),
    ("pack(B, Bt, 2 % 4, 2 % 2, 1, 2)", r"dim \[2, 2\] blocked twice"),
    ("pack(B, Bt, 2 % k, 1, 2)", r"schedule argument 2 % k"),
    ("pack(B, Bt, 1)", r"\[1\] is not a permutation"),
    ("pack(B, A, 2, 1)", r"'A' already names an array"),
    ("pack(B, T, 2, 1)", r"'T' already names an array or a statement"),
    ("pack(q, Bt, 2, 1)", r"the first argument must be an array"),
    ("pack(C, Ct, 2, 1)", r"no statement after the last write of 'C' reads it"),
    ("pack(B, Bt, 2, 1, k)", r"no read of 'B' after its last write has 'k' as its index 2"),
    ("pack(B, Bt, 2, 1); vectorize(Bt, Bt_3, 4)", r"has no loop 'Bt_3'"),
])
def test_pack_refusals(schedule: str, message: str) -> None:
    rng = np.random.default_rng(4)
    with pytest.raises(UnsupportedJulia, match=message):
        compile_source(_src(MM, schedule), "mm!")(np.zeros((3, 4), order="F"), F(rng, 3, 2),
                                                  F(rng, 2, 4))


def test_pack_then_return_of_a_value() -> None:
    """The value ``return`` stores is read through a pack too (its array is made while
    the pack's view is in place)."""
    src = """
function tr(A::Matrix{Float64})
    @schedule pack(A, At, 2, 1)
    s = 0.0
    for i in 1:size(A, 1)
        s += A[i, i] * A[1, i]
    end
    return s + A[2, 1]
end"""
    A = F(np.random.default_rng(7), 4, 4)
    got = compile_source(src, "tr")(A)
    assert np.isclose(got, np.trace(A * A[0][None, :]) + A[1, 0], rtol=1e-12)


def test_copy_at_of_the_array_a_statement_updates_is_refused_by_the_legality_check() -> None:
    rng = np.random.default_rng(8)
    with pytest.raises(ScheduleError, match="'T' writes 'C': a read-only copy"):
        compile_source(_src(MM, "copy_at(T, j, C, Cp)"), "mm!")(
            np.zeros((3, 4), order="F"), F(rng, 3, 2), F(rng, 2, 4))


def test_pack_along_a_loop_reads_the_other_operand_in_place() -> None:
    """``pack(X, Xt, 2, 1, i)``: ``X[k, i]`` is read from the copy, ``X[k, j]`` from X."""
    import re

    rng = np.random.default_rng(8)
    X, c, G = F(rng, 8, 5), rng.random(5), np.zeros((5, 5), order="F")
    src = GRAM.replace("X[1, j] += 1.0", "c[j] += 1.0")
    k = compile_source(_src(src, "pack(X, Xt, 2, 1, i)"), "gram!")
    k(G, X.copy(order="F"), c.copy())
    Xc = X - c
    np.testing.assert_allclose(G, Xc.T @ Xc, rtol=1e-12)
    code = k.compiled(k.spec_of((G, X, c))).kernel.source
    line = next(x for x in code.splitlines() if re.search(r"b_G\[.*\] = \(b_G", x))
    assert "b_Xt[" in line and "b_X[" in line, line
