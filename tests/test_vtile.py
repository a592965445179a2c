"""Register tiles printed with explicit vectors (backends/cpu/vtile.py).

Each lane computes what its scalar statement computes, in the same order over the
reduction: a tiled product must equal the unscheduled one bit for bit (fp_contract off),
for float64 and float32, plain ``+=`` and ``muladd``, tiles of one, two or three vectors
and tiles whose rows fill only 32- or 16-byte vectors. The same C is also built for a
machine without AVX-512 (the 32-byte branch) and for plain x86-64 (SSE2: no FMA
instruction, the lane-by-lane ``fma``), and run. Tiles the module does not print (a
gather, a call it has no vector form of, rows that fill no vector) keep the scalar form
and the loop-vectorizer option (test_regtile.py)."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from test_julia_storage import MM as STORAGE_MM

from backends.clike.build import build_cached
from backends.cpu.build import cache_dir, compiler, flags_for
from backends.cpu.source import NO_LOOP_VECTORIZER
from frontends.julia import compile_source
from frontends.julia.paper import KERNELS, source
from middleend.target import NativeKernel

# mm! of test_julia_storage, its element type, zero and update placeholders
MM = STORAGE_MM.replace("Float64", "ELEM").replace("= 0.0", "= ZERO") \
    .replace("C[i, j] += A[i, k] * B[k, j]", "UPDATE")
PLAIN = "C[i, j] += A[i, k] * B[k, j]"
MULADD = "C[i, j] = muladd(A[i, k], B[k, j], C[i, j])"
MARK = "(vtile.py)"


def _tile(i: int, j: int, k: int) -> str:
    return (f"shift(T, i, -1); shift(T, j, -1); shift(T, k, -1); tile(T, i, j, k, {i}, {j}, "
            f"{k}); interchange(T, i0, k0); interchange(T, i1, k1); unroll(T, j1)")


def _source(schedule: str, elem: str = "Float64", update: str = PLAIN) -> str:
    zero = "0.0" if elem == "Float64" else "0f0"
    return MM.replace("SCHEDULE", "\n        ".join(schedule.split(";"))) \
        .replace("UPDATE", update).replace("ZERO", zero).replace("ELEM", elem)


def _args(elem: str, ni: int = 53, nk: int = 37, nj: int = 19) -> tuple[np.ndarray, ...]:
    dt = np.float64 if elem == "Float64" else np.float32
    rng = np.random.default_rng(11)
    A = np.asfortranarray(rng.standard_normal((ni, nk)).astype(dt))
    B = np.asfortranarray(rng.standard_normal((nk, nj)).astype(dt))
    return np.zeros((ni, nj), dtype=dt, order="F"), A, B


def _run(src: str, args: tuple[np.ndarray, ...], schedule: bool = True
         ) -> tuple[np.ndarray, str]:
    k = compile_source(src, "mm!", schedule=schedule)
    C = args[0].copy(order="F")
    k(C, *args[1:])
    return C, k.compiled(k.spec_of((C, *args[1:]))).kernel.source


@pytest.mark.parametrize("elem", ["Float64", "Float32"])
@pytest.mark.parametrize("update", [PLAIN, MULADD])
@pytest.mark.parametrize("shape", [(8, 3, 16), (16, 4, 8), (24, 8, 32), (12, 5, 7),
                                   (4, 6, 16), (32, 2, 5)])
def test_a_vector_tile_equals_the_unscheduled_product_bit_for_bit(
        elem: str, update: str, shape: tuple[int, int, int]) -> None:
    src = _source(_tile(*shape), elem, update)
    args = _args(elem)
    got, c = _run(src, args)
    want, _ = _run(src, args, schedule=False)
    assert MARK in c and not c.startswith(NO_LOOP_VECTORIZER)
    assert np.array_equal(got, want)
    tol = 1e-12 if elem == "Float64" else 1e-4
    np.testing.assert_allclose(got, args[1].astype(np.float64) @ args[2], rtol=tol, atol=tol)


def test_both_widths_are_printed_and_the_narrow_one_alone_where_rows_are_short() -> None:
    _, c = _run(_source(_tile(16, 3, 8)), _args("Float64"))
    assert "#if defined(__AVX512F__)" in c and "me_vf64x8 me_s0" in c and "me_vf64x4 me_s0" in c
    _, c = _run(_source(_tile(4, 3, 8)), _args("Float64"))  # 4 doubles: 32 bytes only
    assert "me_vf64x4 me_s0" in c and "me_vf64x8 me_s0" not in c
    _, c = _run(_source(_tile(2, 4, 8)), _args("Float64"))  # 2 doubles: 16 bytes
    assert "me_vf64x2 me_s0" in c


def test_a_packed_operand_is_read_as_vectors() -> None:
    """``pack(A, Ap, 1 % 8, 2, 1)``: the panel's subscripts are ``i ÷ 8`` and ``i % 8``,
    resolved from the loops' ranges into one contiguous vector per row block."""
    src = _source("pack(A, Ap, 1 % 16, 2, 1); " + _tile(16, 4, 8) + "; parallelize(T, j0)",
                  update=MULADD)
    args = _args("Float64", ni=64, nk=40, nj=12)
    got, c = _run(src, args)
    assert MARK in c and "me_vf64x8_ld(&b_Ap[" in c
    assert np.array_equal(got, _run(src, args, schedule=False)[0])


def _branches(c: str) -> tuple[str, str]:
    """The first tile's AVX-512 branch and its other one."""
    t = c[c.index(MARK):]
    wide = t[t.index("#if defined(__AVX512F__)"):t.index("#else")]
    return wide, t[t.index("#else"):t.index("#endif")]


def test_operands_every_column_reads_are_kept_in_registers() -> None:
    """A vector operand that each of the tile's columns multiplies (A's rows) is loaded
    once per step into a variable kept in a vector register (``ME_IN_REG``): left to
    itself gcc folded the load back into each column's FMA (8 x 4: 8 loads and 4
    broadcasts per 8 FMAs). Where the sums, those operands and a broadcast would take
    all 16 registers of AVX2 (12 x 4: 12 + 3 + 1) they are not pinned (gcc then spilled a
    sum); with AVX-512's 32 they are. Either way the product is the unscheduled one."""
    args = _args("Float64")
    for rows, narrow_pinned in ((8, True), (12, False)):
        src = _source(_tile(rows, 4, 16), update=MULADD)
        got, c = _run(src, args)
        wide, narrow = _branches(c)
        assert "ME_IN_REG(me_l0);" in wide, wide
        assert ("ME_IN_REG(" in narrow) == narrow_pinned, narrow
        assert "me_l0 = me_vf64x4_ld(&b_A" in narrow
        assert np.array_equal(got, _run(src, args, schedule=False)[0])


def _built_elsewhere(src: str, args: tuple[np.ndarray, ...], flags: list[str]) -> np.ndarray:
    """The kernel's C built with ``flags`` in place of the host's ISA flags, run on
    ``args``; its result."""
    k = compile_source(src, "mm!")
    c = k.compiled(k.spec_of(args))
    base = [f for f in flags_for() if not f.startswith(("-march", "-mprefer", "-mno-avx512"))]
    lib = build_cached(c.kernel.source, compiler(), [*base, *flags],
                       "test_vtile " + " ".join(flags), cache_dir(), ".c", "C compiler",
                       ["-lm"])
    kernel = NativeKernel(c.kernel.signature, lib.path)
    C = args[0].copy(order="F")
    arrays = (C, *args[1:])
    kernel(**{name: arrays[pos].T for pos, name in c.built.buffer_of_arg.items()})
    return C


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="the x86 vector branches (AVX2 + FMA, SSE2) are x86's")
@pytest.mark.parametrize("flags", [["-march=haswell"], ["-march=x86-64"]],
                         ids=["avx2-fma", "sse2-no-fma"])
def test_the_other_machines_branches_compute_the_same(flags: list[str]) -> None:
    args = _args("Float64")
    src = _source(_tile(24, 8, 16), update=MULADD)
    want, _ = _run(src, args, schedule=False)
    assert np.array_equal(_built_elsewhere(src, args, flags), want)


@pytest.mark.parametrize("update", [
    "C[i, j] += abs(A[i, k]) * B[k, j]",  # a call with no vector form here
    "C[i, j] += A[i, k] * B[k, j] * Float64(k)",  # a cast of the iterator
])
def test_a_tile_it_cannot_print_stays_scalar(update: str) -> None:
    src = _source(_tile(8, 3, 16), update=update)
    args = _args("Float64")
    got, c = _run(src, args)
    assert MARK not in c and c.startswith(NO_LOOP_VECTORIZER)
    assert np.array_equal(got, _run(src, args, schedule=False)[0])


def test_short_rows_mix_vectors_and_scalars() -> None:
    """Rows of 3 doubles (or a partial tile's): a 16-byte vector and a scalar per column."""
    src = _source(_tile(3, 4, 16))
    args = _args("Float64")
    got, c = _run(src, args)
    assert "me_vf64x2 me_s0" in c and "double me_s4 = " in c
    assert not c.startswith(NO_LOOP_VECTORIZER)
    assert np.array_equal(got, _run(src, args, schedule=False)[0])


def test_rows_that_fill_no_vector_stay_scalar() -> None:
    src = _source(_tile(1, 6, 16))  # one row: sums that no vector holds
    args = _args("Float64")
    got, c = _run(src, args)
    assert MARK not in c
    assert np.array_equal(got, _run(src, args, schedule=False)[0])



def test_a_tile_whose_sums_move_with_a_remainder_only() -> None:
    """atax's second pass (kernels.jl): ``yq[(i - 1) mod 8, j]`` with ``i = 8 i0 + i1 +
    1`` does not move with the tile loop ``i0`` (regtile.py reads the subscript as a
    linear form), so A' tmp as 8 interleaved partial sums per column is a tile of
    vector sums; the kernel equals its unscheduled self bit for bit, and numpy's (to
    rounding)."""
    kd = KERNELS["atax!"]
    # (its large size: at small ones ISL puts the first column block's case inside i0)
    args = kd.make(kd.large, np.random.default_rng(2))
    k = compile_source(source(), "atax!")
    ku = compile_source(source(), "atax!", schedule=False)
    got, want = ([a.copy(order="K") for a in args] for _ in range(2))
    k(*got)
    ku(*want)
    assert MARK in k.compiled(k.spec_of(tuple(got))).kernel.source
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
    for pos, ref in kd.reference(tuple(args)).items():
        np.testing.assert_allclose(got[pos], ref, rtol=1e-10)
