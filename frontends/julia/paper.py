"""The Julia kernels of ``kernels.jl`` with their arguments and numpy references, shared by
the tests and ``benchmarks/julia``. References are written from the kernels' mathematical
definitions (PolyBench), not from our translation, so they check it independently."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np


def source() -> str:
    """The text of ``kernels.jl``."""
    return resources.files(__package__).joinpath("kernels.jl").read_text()


Args = tuple  # the Julia arguments, numpy arrays in Fortran order and numbers


@dataclass(frozen=True)
class Kernel:
    """``make(sizes, rng)`` builds the arguments; ``reference(args)`` returns the expected
    final contents of the arrays the kernel writes, by position; ``numpy(args)`` is the
    direct numpy equivalent timed by the benchmark (None where numpy has none): it returns
    an array, or a tuple of arrays, the final contents of the arguments at the positions
    ``numpy_out`` (the benchmark checks them against ``reference``)."""

    name: str
    make: Callable[[dict[str, int], np.random.Generator], Args]
    reference: Callable[[Args], dict[int, np.ndarray]]
    small: dict[str, int]
    large: dict[str, int]
    numpy: Callable[[Args], object] | None = None
    numpy_out: tuple[int, ...] = (0,)


def _f(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asfortranarray(rng.random(shape))


def _bicg(a: Args) -> dict[int, np.ndarray]:
    _, _, A, p, r = a
    return {0: A.T @ r, 1: A @ p}


def _gesummv(a: Args) -> dict[int, np.ndarray]:
    _, _, A, B, x, alpha, beta = a
    return {0: alpha * (A @ x) + beta * (B @ x), 1: A @ x}


def _atax(a: Args) -> dict[int, np.ndarray]:
    _, _, A, x = a
    return {0: A.T @ (A @ x), 1: A @ x}


def _doitgen(a: Args) -> dict[int, np.ndarray]:
    A, C4, _ = a
    out = np.einsum("sqr,sp->pqr", A, C4)
    return {0: out, 2: out[:, -1, -1].copy()}


def _mttkrp(a: Args) -> dict[int, np.ndarray]:
    _, B, C, D = a
    return {0: np.einsum("ikl,kj,lj->ij", B, C, D)}


def _covariance(a: Args) -> dict[int, np.ndarray]:
    _, _, data = a
    mean = data.mean(axis=0)
    centered = data - mean
    return {0: centered.T @ centered / (data.shape[0] - 1), 1: mean, 2: centered}


def _mm2(a: Args) -> dict[int, np.ndarray]:
    D, _, A, B, C, alpha, beta = a
    tmp = alpha * (A @ B)
    return {0: beta * D + tmp @ C, 1: tmp}


def _jacobi(a: Args) -> dict[int, np.ndarray]:
    A, B, t = a
    A, B = A.copy(), B.copy()
    for _ in range(t):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return {0: A, 1: B}


def _mk_bicg(s: dict[str, int], g: np.random.Generator) -> Args:
    n, m = s["n"], s["m"]
    return (np.zeros(m), np.zeros(n), _f(g, n, m), _f(g, m), _f(g, n))


def _mk_gesummv(s: dict[str, int], g: np.random.Generator) -> Args:
    n = s["n"]
    return (np.zeros(n), np.zeros(n), _f(g, n, n), _f(g, n, n), _f(g, n), 1.5, 1.2)


def _mk_atax(s: dict[str, int], g: np.random.Generator) -> Args:
    m, n = s["m"], s["n"]
    return (np.zeros(n), np.zeros(m), _f(g, m, n), _f(g, n))


def _mk_doitgen(s: dict[str, int], g: np.random.Generator) -> Args:
    return (_f(g, s["p"], s["q"], s["r"]), _f(g, s["p"], s["p"]), np.zeros(s["p"]))


def _mk_mttkrp(s: dict[str, int], g: np.random.Generator) -> Args:
    i, j, k, l_ = s["i"], s["j"], s["k"], s["l"]
    return (np.zeros((i, j), order="F"), _f(g, i, k, l_), _f(g, k, j), _f(g, l_, j))


def _mk_covariance(s: dict[str, int], g: np.random.Generator) -> Args:
    n, m = s["n"], s["m"]
    return (np.zeros((m, m), order="F"), np.zeros(m), _f(g, n, m))


def _mk_mm2(s: dict[str, int], g: np.random.Generator) -> Args:
    i, j, k, l_ = s["i"], s["j"], s["k"], s["l"]
    return (_f(g, i, l_), np.zeros((i, j), order="F"), _f(g, i, k), _f(g, k, j),
            _f(g, j, l_), 1.5, 1.2)


def _mk_jacobi(s: dict[str, int], g: np.random.Generator) -> Args:
    return (_f(g, s["n"]), _f(g, s["n"]), s["t"])


def _np_bicg(a: Args) -> object:
    _, _, A, p, r = a
    return A.T @ r, A @ p


def _np_gesummv(a: Args) -> object:
    _, _, A, B, x, alpha, beta = a
    return alpha * (A @ x) + beta * (B @ x)


def _np_atax(a: Args) -> object:
    return a[2].T @ (a[2] @ a[3])


def _np_doitgen(a: Args) -> object:
    A, C4, _ = a
    p, q, r = A.shape
    return (C4.T @ A.reshape(p, q * r, order="F")).reshape(p, q, r, order="F")


def _np_mttkrp(a: Args) -> object:
    _, B, C, D = a
    i, k, l_ = B.shape
    kr = (C[:, None, :] * D[None, :, :]).reshape(k * l_, -1, order="F")
    return B.reshape(i, k * l_, order="F") @ kr


def _np_covariance(a: Args) -> object:
    return np.cov(a[2], rowvar=False)


def _np_mm2(a: Args) -> object:
    D, _, A, B, C, alpha, beta = a
    return beta * D + (alpha * (A @ B)) @ C


def _np_jacobi(a: Args) -> object:
    A, B, t = a
    A, B = A.copy(), B.copy()
    for _ in range(t):
        np.multiply(A[:-2] + A[1:-1] + A[2:], 0.33333, out=B[1:-1])
        np.multiply(B[:-2] + B[1:-1] + B[2:], 0.33333, out=A[1:-1])
    return A, B


KERNELS: dict[str, Kernel] = {k.name: k for k in [
    Kernel("bicg!", _mk_bicg, _bicg, {"n": 13, "m": 17}, {"n": 2000, "m": 2400}, _np_bicg,
           (0, 1)),
    Kernel("gesummv!", _mk_gesummv, _gesummv, {"n": 19}, {"n": 2000}, _np_gesummv),
    Kernel("atax!", _mk_atax, _atax, {"m": 15, "n": 11}, {"m": 1900, "n": 2100}, _np_atax),
    Kernel("doitgen!", _mk_doitgen, _doitgen, {"p": 11, "q": 7, "r": 5},
           {"p": 160, "q": 140, "r": 150}, _np_doitgen),
    Kernel("mttkrp!", _mk_mttkrp, _mttkrp, {"i": 9, "j": 7, "k": 5, "l": 6},
           {"i": 200, "j": 64, "k": 120, "l": 100}, _np_mttkrp),
    Kernel("covariance!", _mk_covariance, _covariance, {"n": 13, "m": 9},
           {"n": 1400, "m": 1200}, _np_covariance),
    Kernel("mm2!", _mk_mm2, _mm2, {"i": 9, "j": 11, "k": 7, "l": 5},
           {"i": 800, "j": 900, "k": 1100, "l": 1200}, _np_mm2),
    Kernel("jacobi1d!", _mk_jacobi, _jacobi, {"n": 29, "t": 5}, {"n": 400000, "t": 100},
           _np_jacobi, (0, 1)),
]}
