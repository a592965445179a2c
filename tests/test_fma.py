"""The ``fma`` intrinsic (``a * b + c`` rounded once) on the cpu, gpu (OpenCL) and fpga
targets, and Julia's ``fma`` / ``muladd`` through the Julia front-end, against an exact
reference: Python's ``Fraction`` arithmetic rounded once to float64, and for float32 the
float64 sum of the exact float64 product (exact for the operands drawn here, so rounding it
to float32 is the one rounding). The data are chosen so that the unfused ``a * b + c``
differs from the fused result in most elements: a kernel that rounds twice fails."""

from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import pytest

import middleend as me
from frontends.julia import compile_source


def _operands(rng: np.random.Generator, dt: type, n: int) -> tuple[np.ndarray, ...]:
    """``a * b`` close to ``-c``, so the product's low bits decide the result."""
    a = (1 + rng.random(n)).astype(dt)
    b = (1 + rng.random(n)).astype(dt)
    c = -(a * b)  # the product rounded: fused gives exactly its rounding error
    c[: n // 4] = (rng.random(n // 4) + 0.5).astype(dt)  # some ordinary sums too
    return a, b, c


def _fused(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    if a.dtype == np.float32:  # exact in float64 for operands in [0.5, 4): one rounding
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
                ).astype(np.float32)
    return np.array([float(Fraction(x) * Fraction(y) + Fraction(z))
                     for x, y, z in zip(a.tolist(), b.tolist(), c.tolist(), strict=True)])


def _function(name: str, mt: me.DType, n: int) -> tuple[me.Function, me.Computation]:
    with me.Function(name) as f:
        i = me.Var("i", 0, n)
        a, b, c = (me.Input(x, [n], mt) for x in "abc")
        r = me.Computation("r", [i], me.fma(a[i], b[i], c[i]))
    return f, r


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fma_rounds_once_on_the_cpu(dt: type, rng: np.random.Generator) -> None:
    n = 64
    a, b, c = _operands(rng, dt, n)
    f, r = _function("fused", me.float32 if dt == np.float32 else me.float64, n)
    r.vectorize("i", 8)
    got = f.compile()(a=a, b=b, c=c)["r"]
    want = _fused(a, b, c)
    assert np.count_nonzero(want != a * b + c) > n // 2  # the test can tell the two apart
    np.testing.assert_array_equal(got, want)


def test_fma_in_opencl(rng: np.random.Generator) -> None:
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    n = 64
    a, b, c = _operands(rng, np.float32, n)
    f, r = _function("fused_cl", me.float32, n)
    r.split("i", 16, "i0", "i1")
    r.gpu("i0", "i1")
    k = f.compile(target="gpu", dialect="opencl")
    assert "fma" in k.source
    np.testing.assert_array_equal(k(a=a, b=b, c=c)["r"], _fused(a, b, c))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_fma_in_cuda_builds() -> None:
    f, r = _function("fused_cu", me.float64, 32)
    r.split("i", 16, "i0", "i1")
    r.gpu("i0", "i1")
    k = f.compile(target="gpu", dialect="cuda")
    assert "fma(" in k.source


@pytest.mark.fpga
def test_fma_on_the_fpga_target(rng: np.random.Generator) -> None:
    n = 32
    a, b, c = _operands(rng, np.float64, n)
    got = _function("fused_hls", me.float64, n)[0].compile(target="fpga")(a=a, b=b, c=c)["r"]
    np.testing.assert_array_equal(got, _fused(a, b, c))


def test_fma_refusals_are_one_line() -> None:
    with me.Function("bad") as f:
        i = me.Var("i", 0, 4)
        h = me.Input("h", [4], me.float16)
        with pytest.raises(TypeError, match="fma takes 3 argument"):
            me.fma(h[i], h[i])
        me.Computation("r", [i], me.fma(h[i], h[i], h[i]))
    with pytest.raises(me.TargetError, match="fma of float16"):
        f.compile()


_JULIA = """
@acc function fused!(r::Vector{Float64}, a::Vector{Float64}, b::Vector{Float64},
                     c::Vector{Float64})
    for i in 1:length(r)
        r[i] = fma(a[i], b[i], c[i])
    end
end

@acc function muladded!(r::Vector{Float64}, a::Vector{Float64}, b::Vector{Float64},
                        c::Vector{Float64})
    for i in 1:length(r)
        r[i] = muladd(a[i], b[i], c[i])
    end
end

@acc function imuladd!(r::Vector{Int64}, a::Vector{Int64})
    for i in 1:length(r)
        r[i] = muladd(a[i], 3, 1)
    end
end
"""


@pytest.mark.parametrize("name", ["fused!", "muladded!"])
def test_julia_fma_and_muladd_are_fused(name: str, rng: np.random.Generator) -> None:
    """Julia's ``fma`` rounds once; ``muladd`` is fused where the machine has FMA, as
    Julia compiles it on these machines."""
    a, b, c = _operands(rng, np.float64, 40)
    r = np.zeros(40)
    compile_source(_JULIA, name)(r, a, b, c)
    np.testing.assert_array_equal(r, _fused(a, b, c))


def test_julia_integer_muladd() -> None:
    a = np.arange(-5, 5, dtype=np.int64)
    r = np.zeros(10, dtype=np.int64)
    compile_source(_JULIA, "imuladd!")(r, a)
    np.testing.assert_array_equal(r, a * 3 + 1)
