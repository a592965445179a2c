"""Julia semantics through compile_source, each against numpy: memory-based statements,
scalars (temporaries, accumulations, conditional values), conditions (affine and not),
steps, 1-based and column-major indexing, Julia's types and integer division, in-place
updates, and refusals that name the line and the construct."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from frontends.julia import UnsupportedJulia, compile_source


def run(src: str, name: str, *args: object, schedule: bool = True) -> None:
    compile_source(src, name, schedule=schedule)(*args)


def F(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asfortranarray(rng.random(shape))


def test_column_major_and_one_based() -> None:
    src = """
function f!(B::Matrix{Float64}, A::Matrix{Float64})
    for j in 1:size(A, 2), i in 1:size(A, 1)
        B[i, j] = A[i, j] * 10 + i + 100 * j
    end
end"""
    A = F(np.random.default_rng(0), 5, 3)
    B = np.zeros((5, 3), order="F")
    run(src, "f!", B, A)
    ii, jj = np.meshgrid(np.arange(1, 6), np.arange(1, 4), indexing="ij")
    np.testing.assert_allclose(B, A * 10 + ii + 100 * jj)


def test_steps_and_negative_steps() -> None:
    src = """
function f!(y::Vector{Int64}, x::Vector{Int64})
    n = length(x)
    for i in 2:3:n
        y[i] = x[i] * 2
    end
    for i in n:-2:1
        y[i] += 1
    end
end"""
    x = np.arange(1, 15, dtype=np.int64)
    y = np.zeros(14, dtype=np.int64)
    run(src, "f!", y, x)
    want = np.zeros(14, dtype=np.int64)
    want[1::3] = x[1::3] * 2
    want[::-1][::2] += 1
    np.testing.assert_array_equal(y, want)


def test_in_place_prefix_sum_and_untouched_elements() -> None:
    src = """
function f!(x::Vector{Float64})
    for i in 2:length(x) - 1
        x[i] = x[i] + x[i - 1]
    end
end"""
    x = np.random.default_rng(1).random(11)
    want = x.copy()
    for i in range(1, 10):
        want[i] += want[i - 1]
    run(src, "f!", x)
    np.testing.assert_allclose(x, want)


def test_scalar_temporaries_and_accumulators() -> None:
    src = """
function f!(y::Vector{Float64}, z::Vector{Float64}, A::Matrix{Float64}, x::Vector{Float64})
    n, m = size(A)
    for i in 1:n
        t = 2.0 * x[1]
        s = 0.0
        for j in 1:m
            s += A[i, j] * x[j]
        end
        y[i] = s + t
        u = s * s
        z[i] = u
    end
end"""
    rng = np.random.default_rng(2)
    A, x = F(rng, 7, 5), rng.random(5)
    y, z = np.zeros(7), np.zeros(7)
    run(src, "f!", y, z, A, x)
    np.testing.assert_allclose(y, A @ x + 2 * x[0])
    np.testing.assert_allclose(z, (A @ x) ** 2)


def test_scalar_carried_across_iterations() -> None:
    src = """
function f!(y::Vector{Float64}, x::Vector{Float64})
    s = 0.0
    for i in 1:length(x)
        s = s + x[i]
        y[i] = s
    end
end"""
    x = np.random.default_rng(3).random(9)
    y = np.zeros(9)
    run(src, "f!", y, x)
    np.testing.assert_allclose(y, np.cumsum(x))


@pytest.mark.parametrize("schedule", [False, True])
def test_conditions_affine_and_not(schedule: bool) -> None:
    src = """
function f!(y::Matrix{Float64}, A::Matrix{Float64})
    n = size(A, 1)
    for j in 1:n, i in 1:n
        if i < j
            y[i, j] = A[i, j]
        elseif i == j && A[i, j] > 0.5
            y[i, j] = -1.0
        else
            y[i, j] = i > 1 ? A[i - 1, j] : 7.0
        end
    end
end"""
    A = F(np.random.default_rng(4), 6, 6)
    y = np.zeros((6, 6), order="F")
    run(src, "f!", y, A, schedule=schedule)
    want = np.zeros((6, 6))
    for i in range(6):
        for j in range(6):
            if i < j:
                want[i, j] = A[i, j]
            elif i == j and A[i, j] > 0.5:
                want[i, j] = -1.0
            else:
                want[i, j] = A[i - 1, j] if i > 0 else 7.0
    np.testing.assert_allclose(y, want)


def test_condition_snapshot_when_body_writes_what_it_reads() -> None:
    src = """
function f!(a::Vector{Float64}, b::Vector{Float64})
    for i in 1:length(a)
        if a[i] > 0.5
            a[i] = 0.0
            b[i] = 1.0
        end
    end
end"""
    a = np.random.default_rng(5).random(20)
    b = np.zeros(20)
    big = a > 0.5
    run(src, "f!", a, b)
    np.testing.assert_array_equal(b, big.astype(float))
    assert np.all(a[big] == 0.0)


def test_data_dependent_indices() -> None:
    src = """
function f!(h::Vector{Int64}, y::Vector{Float64}, idx::Vector{Int64}, x::Vector{Float64})
    for i in 1:length(idx)
        h[idx[i]] += 1
        y[i] = x[idx[i]]
    end
end"""
    rng = np.random.default_rng(6)
    idx = rng.integers(1, 6, 30).astype(np.int64)
    x = rng.random(5)
    h = np.zeros(5, dtype=np.int64)
    y = np.zeros(30)
    run(src, "f!", h, y, idx, x)
    np.testing.assert_array_equal(h, np.bincount(idx - 1, minlength=5))
    np.testing.assert_allclose(y, x[idx - 1])


def test_julia_types_and_integer_division() -> None:
    src = """
function f!(q::Vector{Int64}, r::Vector{Int64}, d::Vector{Float64}, w::Vector{Float32},
            a::Vector{Int64}, b::Vector{Int64}, v::Vector{Float32})
    for i in 1:length(a)
        q[i] = a[i] ÷ b[i]
        r[i] = a[i] % b[i] + mod(a[i], b[i]) * 100
        d[i] = a[i] / b[i]
        w[i] = v[i] * 0.1 + v[i]^2
    end
end"""
    a = np.array([7, -7, 7, -7, 0, 9], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 4], dtype=np.int64)
    v = np.linspace(0, 1, 6, dtype=np.float32)
    q, r = np.zeros(6, np.int64), np.zeros(6, np.int64)
    d, w = np.zeros(6), np.zeros(6, np.float32)
    run(src, "f!", q, r, d, w, a, b, v)
    np.testing.assert_array_equal(q, np.trunc(a / b).astype(np.int64))
    np.testing.assert_array_equal(r, np.fmod(a, b) + np.mod(a, b) * 100)
    np.testing.assert_allclose(d, a / b)
    # Julia: Float32 * Float64 literal is a Float64 product, rounded on the store
    np.testing.assert_array_equal(w, (v.astype(np.float64) * 0.1 + v * v).astype(np.float32))


def test_specialization_per_shape() -> None:
    src = """
function f!(y::Vector{Float64}, x::Vector{Float64})
    for i in 1:length(x)
        y[i] = x[i] + 1
    end
end"""
    k = compile_source(src, "f!")
    for n in (3, 3, 5):
        x, y = np.arange(n, dtype=float), np.zeros(n)
        k(y, x)
        np.testing.assert_allclose(y, x + 1)
    assert k.compiles == 2


@pytest.mark.parametrize("body,construct,line", [
    ("i = 0\n while i < 3\n i += 1\n end", "while loop", 3),
    ("y[1] = foo(x[1])", r"call to foo\(x\[1\]\)", 2),
    ("t = ones(3)\n y[1] = 1.0", r"call to ones\(3\)", 2),
    ("for i in 1:length(x)\n y[i] = s\n end", "unknown name 's'", 3),
    ("for i in 1:length(x)\n y[i] = x[i, 1]\n end", "2 indices on a 1-d array", 3),
    ("q = 1.5\n for i in 1:length(x)\n y[i] = x[i] + q\n end\n y = x",
     "assignment to argument 'y'", 6),
    ("for i in 1:length(x)\n y[i] = x[i] & x[i]\n end", None, 0),  # typed at the call
    ("for i in 1:length(x)\n y[i] = x\n end", "array 'x' used as a value", 3),
    ("for i in x\n y[1] = 1.0\n end", "loop over something other than a range", 2),
    ("for i in 1:3\n y[i] = 1.0\n end\n y[1] = i", "unknown name 'i'", 5),
    ("return y, x", "return of a tuple", 2),
    ("return z", "unknown name 'z'", 2),
    ("for i in 1:3\n return\n end", "return before the end", 3),
    ("@schedule tile(T, i, j, 4, 4)\nfor i in 1:3\n y[i] = 1.0\n end",
     "no statement labelled 'T'", 2),
    ("@schedule fuse(S, i)\nfor i in 1:3\n @name S y[i] = 1.0\n end",
     "fuse: unknown directive", 2),
])
def test_refused_when_compiled_naming_line_and_construct(body: str, construct: str | None,
                                                         line: int) -> None:
    """What no specialization translates is refused by compile_source, before any call."""
    src = f"function f!(y::Vector{{Float64}}, x::Vector{{Float64}})\n{body}\nend"
    if construct is None:
        compile_source(src, "f!")  # accepted here; the call decides (test below)
        return
    with pytest.raises(UnsupportedJulia, match=construct) as e:
        compile_source(src, "f!")
    assert e.value.line == line and f"line {line}:" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("body,construct", [
    ("for i in 1:length(x)\n y[i] = s\n s = x[i]\n end", "before it is assigned"),
    ("for i in 1:length(x)\n y[i] = x[i] & x[i]\n end", "bitwise & of float64 and float64"),
])
def test_refused_at_the_call_when_it_depends_on_the_arguments(body: str,
                                                               construct: str) -> None:
    src = f"function f!(y::Vector{{Float64}}, x::Vector{{Float64}})\n{body}\nend"
    k = compile_source(src, "f!")
    with pytest.raises(UnsupportedJulia, match=construct) as e:
        k(np.zeros(4), np.ones(4))
    assert e.value.line == 3


def test_argument_checks() -> None:
    src = "function f!(y::Vector{Float64})\n for i in 1:length(y)\n y[i] = 1.0\n end\nend"
    k = compile_source(src, "f!")
    with pytest.raises(me.KernelArgumentError, match="Vector"):
        k(np.zeros(4, dtype=np.float32))
    with pytest.raises(me.KernelArgumentError, match="Fortran"):
        compile_source(src.replace("Vector{Float64}", "Matrix{Float64}").replace(
            "length(y)", "1").replace("y[i]", "y[i, i]"), "f!")(np.zeros((3, 3)))
