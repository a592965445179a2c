"""Register-tile reduction loops (backends/cpu/regtile.py): a kernel with one the printer
writes as scalar statements is compiled without gcc's loop vectorizer (which would
vectorize the reduction loop itself as in-order sums), one without keeps it, and so does
one whose tiles are printed with explicit vectors (backends/cpu/vtile.py, tested in
test_vtile.py); results equal numpy's in every case."""

from __future__ import annotations

import numpy as np
import pytest
from test_julia_storage import MM as STORAGE_MM

from backends.cpu.source import NO_LOOP_VECTORIZER
from frontends.julia import compile_source

# mm! of test_julia_storage, its element type a placeholder (an integer tile too)
MM = STORAGE_MM.replace("Float64", "ELEM").replace("= 0.0", "= 0")
TILE = ("shift(T, i, -1); shift(T, j, -1); shift(T, k, -1); tile(T, i, j, k, 8, 3, 16); "
        "interchange(T, i0, k0); interchange(T, i1, k1); unroll(T, j1)")


# an update vtile.py has no vector form of (abs): its tiles stay scalar statements
ABS = ("C[i, j] += A[i, k] * B[k, j]", "C[i, j] += abs(A[i, k]) * B[k, j]")


def _run(schedule: str, elem: str = "Float64", absolute: bool = False) -> str:
    """Runs mm! under ``schedule`` against numpy; returns the kernel's C."""
    src = MM.replace("SCHEDULE", "\n        ".join(schedule.split(";"))).replace("ELEM", elem)
    if absolute:
        assert ABS[0] in src
        src = src.replace(*ABS)
    k = compile_source(src, "mm!")
    rng = np.random.default_rng(3)
    if elem == "Float64":
        A, B = np.asfortranarray(rng.random((40, 40))), np.asfortranarray(rng.random((40, 6)))
    else:
        A = np.asfortranarray(rng.integers(-9, 9, (40, 40)))
        B = np.asfortranarray(rng.integers(-9, 9, (40, 6)))
    C = np.zeros((40, 6), dtype=A.dtype, order="F")
    k(C, A, B)
    np.testing.assert_allclose(C, (abs(A) if absolute else A) @ B, rtol=1e-12)
    return k.compiled(k.spec_of((C, A, B))).kernel.source


@pytest.mark.parametrize("schedule", [TILE, "pack(A, Ap, 1 % 8, 2, 1); " + TILE,
                                      "pack(A, Ap, 1 % 8, 2, 1); " + TILE + "; parallelize(T, j0)"])
def test_a_scalar_register_tile_turns_the_loop_vectorizer_off(schedule: str) -> None:
    assert _run(schedule, absolute=True).startswith(NO_LOOP_VECTORIZER)


@pytest.mark.parametrize("schedule", [TILE, "pack(A, Ap, 1 % 8, 2, 1); " + TILE,
                                      TILE.replace("8, 3, 16", "20, 3, 16")])
def test_a_vector_register_tile_keeps_it(schedule: str) -> None:
    c = _run(schedule)
    assert "(vtile.py)" in c and NO_LOOP_VECTORIZER not in c


@pytest.mark.parametrize("schedule", [
    "",  # no tile
    "unroll(T, j, 3); interchange(T, j_ui, k)",  # 3 dot products: no SLP dim
    TILE + "; vectorize(T, i1, 8)",  # the schedule vectorizes the tile's rows itself
])
def test_loops_that_are_no_register_tile_keep_it(schedule: str) -> None:
    assert NO_LOOP_VECTORIZER not in _run(schedule)


def test_an_integer_tile_keeps_it() -> None:
    """gcc may reassociate an integer sum: its vectorized reduction loop is a fast one (and
    the tile is gcc's: vtile.py prints float sums only)."""
    c = _run(TILE, "Int64")
    assert NO_LOOP_VECTORIZER not in c and "(vtile.py)" not in c
