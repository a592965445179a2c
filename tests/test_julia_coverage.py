"""Julia code as people write it (issue 17: PolyBench.jl kernels by other authors), through
compile_source against numpy, scheduled and not: a labelled ternary, conditions and powers
tree-sitter-julia misreads, size names bound twice, ``_``, ``@fastmath``, chained
assignments, ``&``/``|`` on Bools, module-level ``const``s, a local used as a loop bound."""

from __future__ import annotations

import re

import numpy as np
import pytest

from frontends.julia import UnsupportedJulia, compile_source
from frontends.julia.parse import parse_function


def F(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asfortranarray(rng.random(shape))


@pytest.mark.parametrize("schedule", ["", "split(S, i, 4)", "vectorize(S, i, 4)"])
def test_labelled_ternary_is_two_computations(schedule: str) -> None:
    src = f"""
function clip!(x::Vector{{Float64}})
    @schedule begin
        {schedule}
    end
    for i in 1:length(x)
        @name S x[i] = x[i] < 0.5 ? 0.0 : x[i]
    end
end"""
    x = np.random.default_rng(0).random(23)
    want = np.where(x < 0.5, 0.0, x)
    compile_source(src, "clip!")(x)
    np.testing.assert_array_equal(x, want)


def test_conditions_and_powers_tree_sitter_misreads() -> None:
    src = """
function f!(s::Vector{Float64}, a::Vector{Int64}, b::Vector{Int64}, x::Vector{Float64})
    for j in 1:length(s)
        if a[j] + b[j] == 3
            s[j] = 2.0^(x[j]) + 1
        elseif a[j] - b[j] > 0
            s[j] = 2.0-(x[j])*3
        else
            s[j] = 3^(2)*1.0
        end
    end
end"""
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 4, 40), rng.integers(0, 4, 40)
    x, s = rng.random(40), np.zeros(40)
    compile_source(src, "f!")(s, a, b, x)
    want = np.where(a + b == 3, 2.0 ** x + 1, np.where(a - b > 0, 2.0 - x * 3, 9.0))
    np.testing.assert_allclose(s, want, rtol=1e-15)


def test_misread_shapes_parse_as_julia_does() -> None:
    fn = parse_function("function f(a, b)\n    if a + b == 3\n        y = 2.0^(a) * 3\n"
                        "    end\nend", "f")
    (branch,) = fn.body
    assert branch.cond.ops == ("==",) and branch.cond.operands[0].fn == "+"
    (assign,) = branch.then
    assert assign.value.fn == "*" and assign.value.args[0].fn == "^"
    assert [branch.line, assign.line] == [2, 3]


def test_size_names_bound_again_to_the_same_value() -> None:
    src = """
function gemm!(C::Matrix{Float64}, A::Matrix{Float64}, B::Matrix{Float64})
    ni, nk = size(A)
    nk, nj = size(B)
    _, nj = size(C)
    ni, _ = size(C)
    for i in 1:ni, j in 1:nj
        for k in 1:nk
            C[i, j] += A[i, k] * B[k, j]
        end
    end
end"""
    rng = np.random.default_rng(2)
    A, B, C = F(rng, 5, 7), F(rng, 7, 3), F(rng, 5, 3)
    want = C + A @ B
    k = compile_source(src, "gemm!")
    k(C, A, B)
    np.testing.assert_allclose(C, want)
    with pytest.raises(UnsupportedJulia, match=r"line 4: .*'nk' bound again to 6, but it is "
                       r"7 since line 3"):
        k(np.zeros((5, 3), order="F"), F(rng, 5, 7), F(rng, 6, 3))


def test_fastmath_is_fp_contract_when_it_covers_every_assignment() -> None:
    body = """
    for i in 1:length(y)
        y[i] = a[i] * x[i] + y[i]
    end"""
    sig = "function axpy!(y::Vector{Float64}, a::Vector{Float64}, x::Vector{Float64})"
    whole = compile_source(f"{sig}\n    @fastmath {body.strip()}\nend", "axpy!")
    part = compile_source(f"{sig}\n    n = length(y)\n    @fastmath y[1] = 0.0\n{body}\nend",
                          "axpy!")
    plain = compile_source(f"{sig}\n{body}\nend", "axpy!")
    value = compile_source(f"{sig}\n    for i in 1:length(y)\n        y[i] = @fastmath "
                           "a[i] * x[i] + y[i]\n    end\nend", "axpy!")
    assert (whole.fp_contract, part.fp_contract, plain.fp_contract) == (True, False, False)
    assert value.fp_contract
    rng = np.random.default_rng(3)
    a, x, y = rng.random(33), rng.random(33), rng.random(33)
    for k in (whole, value):
        out = y.copy()
        k(out, a, x)
        np.testing.assert_allclose(out, a * x + y, rtol=1e-15)


def test_chained_assignment_assigns_the_value_not_the_first_target() -> None:
    src = """
function f!(y32::Vector{Float32}, z64::Vector{Float64}, w64::Vector{Float64},
            x::Vector{Float64})
    n = m = length(x)
    for i in 1:m
        @name S w64[i] = y32[i] = z64[i] = x[i] * 0.1
    end
    for i in 1:n
        q = r = x[i] + 1.0
        z64[i] += q + r
    end
end"""
    x = np.random.default_rng(4).random(17)
    y32, z64, w64 = np.zeros(17, np.float32), np.zeros(17), np.zeros(17)
    compile_source(src, "f!")(y32, z64, w64, x)
    np.testing.assert_array_equal(y32, (x * 0.1).astype(np.float32))
    np.testing.assert_array_equal(w64, x * 0.1)  # Julia: not y32's rounded value
    np.testing.assert_array_equal(z64, x * 0.1 + 2 * (x + 1.0))


def test_bool_and_or_xor() -> None:
    src = """
function f!(y::Vector{Float64}, x::Vector{Float64})
    n = length(x)
    for i in 1:n
        if (i > 2) & (i < n) | (i == 1)
            y[i] = (x[i] > 0.5) & (x[i] < 0.9) ? 1.0 : 0.0
        elseif (x[i] > 0.5) ⊻ (i % 2 == 0)
            y[i] = 2.0
        end
    end
end"""
    x = np.random.default_rng(5).random(12)
    y = np.full(12, -1.0)
    compile_source(src, "f!")(y, x)
    i = np.arange(1, 13)
    want = np.where(((i > 2) & (i < 12)) | (i == 1),
                    ((x > 0.5) & (x < 0.9)).astype(float),
                    np.where((x > 0.5) ^ (i % 2 == 0), 2.0, -1.0))
    np.testing.assert_array_equal(y, want)


def test_module_level_consts() -> None:
    src = """
const HALO = 2
const SCALE = 0.5
const W::Float64 = 3
const LO, HI = 1, HALO + 1

function f!(y::Vector{Float64}, x::Vector{Float64})
    for i in 1 + HALO:length(x) - HALO
        y[i] = SCALE * (x[i - HALO] + x[i + HALO]) + W / 2
    end
    for i in LO:HI
        y[i] = 0.0
    end
end"""
    x = np.random.default_rng(6).random(15)
    y = np.full(15, -1.0)
    compile_source(src, "f!")(y, x)
    want = np.full(15, -1.0)
    want[2:13] = 0.5 * (x[:11] + x[4:]) + 1.5
    want[:3] = 0.0
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("schedule", [False, True])
def test_local_index_as_loop_bound(schedule: bool) -> None:
    src = """
function band!(B::Matrix{Float64}, A::Matrix{Float64}, d::Int)
    n = size(A, 1)
    @schedule interchange(S, i, j)
    for i in 1:n
        lo = max(i - d, 1)
        hi = min(i + d, n)
        for j in lo:hi
            @name S B[i, j] = A[i, j] + lo
        end
    end
end"""
    rng = np.random.default_rng(7)
    A, B = F(rng, 9, 9), np.zeros((9, 9), order="F")
    if schedule:
        src = src.replace("@schedule interchange(S, i, j)", "@schedule split(S, j, 2)")
    compile_source(src, "band!")(B, A, 2)
    ii, jj = np.meshgrid(np.arange(1, 10), np.arange(1, 10), indexing="ij")
    band = np.abs(ii - jj) <= 2
    np.testing.assert_allclose(B, np.where(band, A + np.maximum(ii - 2, 1), 0.0))


def test_local_index_read_outside_its_loop_is_refused() -> None:
    src = """
function f!(y::Vector{Float64})
    for i in 1:length(y)
        j = i + 1
        y[i] = j
    end
    y[1] = j
end"""
    k = compile_source(src, "f!")
    with pytest.raises(UnsupportedJulia, match="line 7: .*'j' read where its assignment "
                       r"\(line 4\) does not reach"):
        k(np.zeros(4))


@pytest.mark.parametrize("text,construct", [
    ("n = 1\n    n = 2\n    y[n] = 1.0", "'n' bound again to 2, but it is 1"),
    ("a = b += 1", "chained assignment other than a = b = value"),
])
def test_rebinding_refusals(text: str, construct: str) -> None:
    src = f"function f!(y::Vector{{Float64}})\n    {text}\nend"
    with pytest.raises(UnsupportedJulia, match=construct):
        compile_source(src, "f!")(np.zeros(3))



@pytest.mark.parametrize("schedule", [False, True])
def test_local_array_durbin(schedule: bool) -> None:
    """Levinson-Durbin for the Toeplitz system T y = -r (T[i, j] = r[|i - j|], r[0] = 1),
    with its row of candidates in a local array, against numpy's dense solve."""
    src = """
function durbin!(y::Vector{Float64}, r::Vector{Float64})
    n = length(r)
    z = zeros(eltype(r), n)
    @schedule vectorize(Z, i, 4)
    y[1] = -r[1]
    beta = 1.0
    alpha = -r[1]
    for k in 2:n
        beta = (1 - alpha * alpha) * beta
        s = 0.0
        for i in 1:k-1
            s += r[k - i] * y[i]
        end
        alpha = -(r[k] + s) / beta
        for i in 1:k-1
            @name Z z[i] = y[i] + alpha * y[k - i]
        end
        for i in 1:k-1
            y[i] = z[i]
        end
        y[k] = alpha
    end
end"""
    n = 12
    r = np.random.default_rng(8).random(n) * 0.1
    col = np.concatenate([[1.0], r[:-1]])
    T = col[np.abs(np.subtract.outer(np.arange(n), np.arange(n)))]
    y = np.zeros(n)
    compile_source(src, "durbin!", schedule=schedule)(y, r)
    np.testing.assert_allclose(y, np.linalg.solve(T, -r), rtol=1e-10)


def test_local_arrays_zeros_2d_and_similar() -> None:
    src = """
function f!(out::Matrix{Float64}, cnt::Vector{Int64}, A::Matrix{Float64})
    m, n = size(A)
    T = similar(A)
    H = zeros(Int, 3, n)
    for j in 1:n, i in 1:m
        T[i, j] = 2.0 * A[i, j]
        if A[i, j] > 0.5
            H[1, j] += 1
        end
    end
    for j in 1:n, i in 1:m
        out[i, j] = T[i, j] + H[1, j] + H[3, j]
    end
    for j in 1:n
        cnt[j] = H[1, j]
    end
end"""
    rng = np.random.default_rng(9)
    A = F(rng, 5, 7)
    out, cnt = np.zeros((5, 7), order="F"), np.zeros(7, np.int64)
    compile_source(src, "f!")(out, cnt, A)
    big = (A > 0.5).sum(axis=0)
    np.testing.assert_array_equal(cnt, big)
    np.testing.assert_allclose(out, 2 * A + big[None, :])


@pytest.mark.parametrize("body,construct", [
    ("for i in 1:3\n        t = zeros(3)\n        y[i] = t[1]\n    end", "an allocation other"),
    ("t = zeros(3)\n    t = zeros(4)\n    y[1] = t[1]", "an allocation other"),
    ("t = zeros(3)\n    y[1] = t", "array 't' used as a value"),
    ("t = similar(3)\n    y[1] = 0.0", "similar of something other than an array"),
])
def test_local_array_refusals(body: str, construct: str) -> None:
    src = f"function f!(y::Vector{{Float64}})\n    {body}\nend"
    with pytest.raises(UnsupportedJulia, match=construct):
        compile_source(src, "f!")


@pytest.mark.parametrize("schedule", [False, True])
def test_helpers_of_the_source_are_inlined(schedule: bool) -> None:
    src = """
const W = 2
relu(v) = v > 0 ? v : zero(v)
sq(v) = v * v
function lerp(a, b, t)
    return a + t * (b - a)
end
left(i) = i - W

function f!(y::Vector{Float64}, x::Vector{Float64})
    @schedule split(S, i, 4)
    for i in 1 + W:length(x)
        @name S y[i] = relu(lerp(sq(x[left(i)]), x[i], 0.25) - 0.3)
    end
end"""
    x = np.random.default_rng(10).random(19)
    y = np.full(19, -1.0)
    compile_source(src, "f!", schedule=schedule)(y, x)
    want = np.full(19, -1.0)
    v = x[:-2] ** 2 + 0.25 * (x[2:] - x[:-2] ** 2) - 0.3
    want[2:] = np.maximum(v, 0.0)
    np.testing.assert_allclose(y, want, rtol=1e-15)


@pytest.mark.parametrize("helper,call,construct", [
    ("g(a) = a + 1", "g(x[i], 2)", "call to g with 2 arguments; it takes 1 (line 2)"),
    ("g(a) = a + y[1]", "g(x[i])", "the helper (line 2) reads 'y', which is not one of"),
    ("g(a) = g(a) + 1", "g(x[i])", "recursion is not translated"),
])
def test_helper_refusals(helper: str, call: str, construct: str) -> None:
    src = (f"\n{helper}\nfunction f!(y::Vector{{Float64}}, x::Vector{{Float64}})\n"
           f"    for i in 1:length(x)\n        y[i] = {call}\n    end\nend")
    with pytest.raises(UnsupportedJulia, match=re.escape(construct)) as e:
        compile_source(src, "f!")
    assert e.value.line == 5


def test_a_top_level_local_bound_to_a_constant_then_to_a_value_is_a_local() -> None:
    """Only names every binding of which is a compile-time Int are constants: ``n = 5``
    then ``n = x[1] * 2`` is an ordinary local (it was before size names could be
    bound twice)."""
    src = """
function f!(y::Vector{Float64}, x::Vector{Float64})
    n = 5
    y[1] = n
    n = x[1] * 2
    y[2] = n
    m = length(x)
    m = m
    for i in 3:m
        y[i] = n + i
    end
end"""
    x = np.random.default_rng(11).random(6)
    y = np.zeros(6)
    compile_source(src, "f!")(y, x)
    np.testing.assert_allclose(y, [5.0, 2 * x[0], *(2 * x[0] + np.arange(3, 7))])


RETURNS = """
function dot(x::Vector{Float64}, y::Vector{Float64})
    s = 0.0
    for i in 1:length(x)
        s += x[i] * y[i]
    end
    return s
end

function count_big(x::Vector{Float64})
    c = 0
    for i in eachindex(x)
        if x[i] > 0.5
            c += 1
        end
    end
    return c
end

function mean_plus_first(x::Vector{Float64})
    s = 0.0
    for i in 1:length(x)
        s += x[i]
    end
    return s / length(x) + x[1]
end

function doubled(x::Matrix{Float64})
    z = similar(x)
    for j in 1:size(x, 2), i in 1:size(x, 1)
        @name D z[i, j] = 2.0 * x[i, j]
    end
    return z
end

function scale!(z::Vector{Float64}, a::Float64)
    @schedule vectorize(S, i, 4)
    for i in 1:length(z)
        @name S z[i] *= a
    end
    return z
end
"""


@pytest.mark.parametrize("schedule", [False, True])
def test_return_of_a_value_or_an_array(schedule: bool) -> None:
    """``return x`` (issue 17): a scalar local, an Int, an expression, a local array (a new
    column-major array) and an argument (the same array, updated in place)."""
    rng = np.random.default_rng(12)
    x, y, m = rng.random(13), rng.random(13), F(rng, 5, 3)
    got = compile_source(RETURNS, "dot", schedule=schedule)(x, y)
    assert isinstance(got, np.float64) and np.isclose(got, x @ y, rtol=1e-12)
    got = compile_source(RETURNS, "count_big", schedule=schedule)(x)
    assert isinstance(got, np.int64) and got == (x > 0.5).sum()
    got = compile_source(RETURNS, "mean_plus_first", schedule=schedule)(x)
    assert np.isclose(got, x.mean() + x[0], rtol=1e-12)
    z = compile_source(RETURNS, "doubled", schedule=schedule)(m)
    assert z.shape == m.shape and z.flags.f_contiguous
    np.testing.assert_array_equal(z, 2.0 * m)
    before = y.copy()
    assert compile_source(RETURNS, "scale!", schedule=schedule)(y, 3.0) is y
    np.testing.assert_allclose(y, 3.0 * before)


def test_return_refusals() -> None:
    with pytest.raises(UnsupportedJulia, match="line 3: .*return of a tuple"):
        compile_source("function f(x::Vector{Float64})\n    s = x[1]\n    return s, x\nend",
                       "f")
    with pytest.raises(UnsupportedJulia, match="line 3: .*return before the end"):
        compile_source("function f(x::Vector{Float64})\n    if x[1] > 0\n        return x[1]"
                       "\n    end\n    return 0.0\nend", "f")
    with pytest.raises(UnsupportedJulia, match="line 2: .*unknown name 'q'"):
        compile_source("function f(x::Vector{Float64})\n    return q\nend", "f")


def test_the_julia_bridge_refuses_a_returned_value() -> None:
    from frontends.julia.bridge import compile_for_julia
    from frontends.julia.errors import JuliaFrontendError

    fn = {"head": "function", "args": [
        {"head": "call", "args": [{"sym": "f"}, {"head": "::", "args": [
            {"sym": "x"}, {"head": "curly", "args": [{"sym": "Vector"}, {"sym": "Float64"}]}]}]},
        {"head": "block", "args": [{"line": 2}, {"head": "return", "args": [
            {"head": "ref", "args": [{"sym": "x"}, {"int": 1}]}]}]}]}
    import json

    with pytest.raises(JuliaFrontendError, match=r"line 2: `return` of a value is translated "
                       "by compile_source only"):
        compile_for_julia(json.dumps(fn), ["Vector{Float64}"], "cpu", True, "[[3]]")
