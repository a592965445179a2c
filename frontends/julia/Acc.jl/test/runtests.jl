# Tests of Acc.jl: the Expr serializer, the macros, the argument checks, and @acc kernels
# against their plain-Julia `_julia` copies on random data.
#
# The compiled kernels need the repository's Python side (`frontends.julia.bridge`)
# importable from the Python that PythonCall runs. From the repository root:
#
#   JULIA_CONDAPKG_BACKEND=Null JULIA_PYTHONCALL_EXE="$PWD/.venv/bin/python" \
#       julia --project=frontends/julia/Acc.jl -e 'using Pkg; Pkg.test()'
#
# JULIA_PYTHONCALL_EXE is PythonCall's documented way to use an existing Python (the
# project's virtual environment, where `frontends` is installed in editable mode), and
# JULIA_CONDAPKG_BACKEND=Null keeps CondaPkg from installing a Python of its own.
# tests/test_julia_fromjson.py::test_julia_package_tests runs exactly this where a `julia`
# is on PATH.
using Test
using Random
using Acc

const PC = Acc.PythonCall
const KERNELS_JL = normpath(joinpath(@__DIR__, "..", "..", "kernels.jl"))

# ------------------------------------------------------------------ kernels of this file

@acc schedule=false function gesummv_loops!(tmp::Vector{Float64}, y::Vector{Float64},
                                            A::Matrix{Float64}, B::Matrix{Float64},
                                            x::Vector{Float64})
    n = size(A, 1)
    @schedule parallelize(S4, i)
    for i in 1:n
        @name S0 tmp[i] = 0.0
        @name S1 y[i] = 0.0
        for j in 1:n
            @name S2 tmp[i] = A[i, j] * x[j] + tmp[i]
            @name S3 y[i] = B[i, j] * x[j] + y[i]
        end
        @name S4 y[i] = 1.5 * tmp[i] + 1.2 * y[i]
    end
end

@acc target="cpu" function heat1d!(A::Vector{Float64}, B::Vector{Float64}, steps::Int)
    n = size(A, 1)
    for t in 1:steps
        for i in 2:n-1
            @name S B[i] = 0.25 * A[i-1] + 0.5 * A[i] + 0.25 * A[i+1]
        end
        for i in 2:n-1
            @name T A[i] = B[i]
        end
    end
end

@acc function lower_update!(C::Matrix{Float64}, A::Matrix{Float64})
    n = size(C, 1)
    for i in 1:n
        for j in 1:i
            C[i, j] += A[i, j] * A[j, i]
        end
    end
end

@acc function fill_first!(x, n::Int)  # `x` untyped: any argument type reaches the bridge
    for i in 1:n
        x[i] = 1.0
    end
end

@acc function halve_upper!(X::Matrix{Float32})
    n = size(X, 2)
    for j in 1:n, i in 1:j
        X[i, j] *= 0.5f0
    end
end

"""Kernels of `frontends/julia/kernels.jl` (the paper's set), in a module of their own:
their names would clash with this file's."""
module PaperKernels
include(joinpath(@__DIR__, "..", "..", "kernels.jl"))
end

"""Call `f` and its reference `fref` on copies of `args`; every array must come out equal."""
function same_as_reference(f, fref, args...)
    mine = map(a -> a isa AbstractArray ? copy(a) : a, args)
    theirs = map(a -> a isa AbstractArray ? copy(a) : a, args)
    @test f(mine...) === nothing
    fref(theirs...)
    for (k, (x, y)) in enumerate(zip(mine, theirs))
        x isa AbstractArray && @test (k, x ≈ y) == (k, true)
    end
end

paper(name) = (getfield(PaperKernels, Symbol(name)), getfield(PaperKernels, Symbol(name, "_julia")))

# ------------------------------------------------------------------------------ the tests

@testset "Acc.jl" begin

@testset "Expr to JSON" begin
    @test Acc.tojson(:(x = 1.5f0)) ==
          "{\"head\":\"=\",\"args\":[{\"sym\":\"x\"},{\"float\":1.5e0,\"type\":\"Float32\"}]}"
    @test Acc.tojson(1e-5) == "{\"float\":1.0e-5,\"type\":\"Float64\"}"
    @test Acc.tojson(-Inf) == "{\"float\":\"-Inf\",\"type\":\"Float64\"}"
    @test Acc.tojson(NaN32) == "{\"float\":\"NaN\",\"type\":\"Float32\"}"
    @test Acc.tojson(Float32(0.1)) == "{\"float\":0.1e0,\"type\":\"Float32\"}"
    @test Acc.tojson(42) == "{\"int\":42}"
    @test Acc.tojson(0xff) == "{\"int\":255,\"type\":\"UInt8\"}"
    @test Acc.tojson(true) == "{\"bool\":true}"
    @test Acc.tojson(nothing) == "{\"nothing\":true}"
    @test Acc.tojson('c') == "{\"unknown\":\"Char\"}"
    @test Acc.tojson("a\"b\\\n\u1") == "{\"str\":\"a\\\"b\\\\\\n\\u0001\"}"
    @test Acc.tojson(QuoteNode(:s)) == "{\"quote\":{\"sym\":\"s\"}}"
    @test Acc.tojson(GlobalRef(Base, :sqrt)) == "{\"sym\":\"sqrt\"}"
    # the layout tests/test_julia_fromjson.py writes by hand: the `function` line first in
    # the body, then a line before each statement; `a + b + c` is one call
    src = "function f(x)\n    x[1] = x[2] + x[3] + 1\nend"
    @test Acc.tojson(Meta.parse(src)) == string(
        "{\"head\":\"function\",\"args\":[{\"head\":\"call\",\"args\":[{\"sym\":\"f\"},",
        "{\"sym\":\"x\"}]},{\"head\":\"block\",\"args\":[{\"line\":1},{\"line\":2},",
        "{\"head\":\"=\",\"args\":[{\"head\":\"ref\",\"args\":[{\"sym\":\"x\"},{\"int\":1}]},",
        "{\"head\":\"call\",\"args\":[{\"sym\":\"+\"},{\"head\":\"ref\",\"args\":[{\"sym\":\"x\"},",
        "{\"int\":2}]},{\"head\":\"ref\",\"args\":[{\"sym\":\"x\"},{\"int\":3}]},{\"int\":1}]}]}]}]}")
end

@testset "annotations outside @acc are plain Julia" begin
    let x = 0
        @name S x = 3
        @test x == 3
    end
    @test (@schedule tile(S, i, j, 32, 32)) === nothing
    stripped = Acc._strip_directives(quote
        @schedule begin
            tile(S, i, j, 32, 32)
        end
        @inbounds for i in 1:3
            @name S x[i] = 0.0
        end
    end)
    @test !occursin("@name", string(stripped)) && !occursin("@schedule", string(stripped))
    @test occursin("@inbounds", string(stripped))
    A = ones(4)
    heat1d!_julia(A, zeros(4), 2)  # the reference copy runs without Python
    @test A == ones(4)
end

@testset "the macro refuses what a kernel cannot take" begin
    @test_throws ArgumentError Acc._signature(:(f(x) = x))
    @test_throws ArgumentError Acc._signature(:(function f(x; k = 1) end))
    @test_throws ArgumentError Acc._signature(:(function f(x = 1) end))
    @test_throws ArgumentError Acc._signature(:(function f(x::T) where {T} end))
    @test Acc._signature(:(function f!(A::Matrix{Float64}, n) end))[[1, 3]] == (:f!, [:A, :n])
    @test Acc._options((:(target = "cpu"), :(schedule = false))) == ("cpu", false)
    @test_throws ArgumentError Acc._options((:(target = cpu),))
    @test_throws ArgumentError Acc._options((:(fast = true),))
end

@testset "argument checks before a kernel call" begin
    f64 = Acc.BufferSpec(1, Float64)
    @test Acc._check_buffer(zeros(3), f64, "f") isa Vector{Float64}
    @test Acc._check_buffer(2.5, f64, "f") == [2.5]
    @test_throws ArgumentError Acc._check_buffer(view(zeros(4), 1:2), f64, "f")
    @test_throws ArgumentError Acc._check_buffer(transpose(zeros(2, 2)), f64, "f")
    @test_throws ArgumentError Acc._check_buffer(zeros(Float32, 3), f64, "f")
    @test_throws ArgumentError Acc._check_buffer(2, f64, "f")
    @test Acc._argvalues((zeros(2, 3), 5, 1.5, true, [1])) == "[[2,3],5,null,null,[1]]"
    k = Acc.Kernel("", "", C_NULL, Acc.ParamSource[], [f64, Acc.BufferSpec(2, Float64)],
                   Dict{String,String}(), identity)
    A = zeros(6)
    @test_throws ArgumentError Acc._check_overlap(Any[A, A], k, "f")
    @test_throws ArgumentError Acc._check_overlap(Any[A, reshape(A, 2, 3)], k, "f")
    @test Acc._check_overlap(Any[A, zeros(6)], k, "f") === nothing
    @test sprint(showerror, Acc.AccKernelError("f!", 1, "index out of bounds")) ==
          "AccKernelError: index out of bounds (f! returned 1)"
end

@testset "the Expr path agrees with the tree-sitter path on kernels.jl" begin
    fromjson = PC.pyimport("frontends.julia.fromjson")
    tsparse = PC.pyimport("frontends.julia.parse")
    pyrepr(x) = replace(PC.pyconvert(String, PC.pyimport("builtins").repr(x)),
                        r"line=\d+" => "line=0")
    src = read(KERNELS_JL, String)
    seen = 0
    for ex in Meta.parseall(src).args
        (ex isa Expr && ex.head === :macrocall &&
         Acc._macroname(ex.args[1]) === Symbol("@acc")) || continue
        fdef = ex.args[end]
        name = string(Acc._signature(fdef)[1])
        @test pyrepr(fromjson.function_from_json(Acc.tojson(fdef))) ==
              pyrepr(tsparse.parse_function(src, name))
        seen += 1
    end
    @test seen >= 8
end

@testset "@acc kernels give what the Julia code gives" begin
    rng = MersenneTwister(20240601)
    n = 37
    same_as_reference(gesummv_loops!, gesummv_loops!_julia,
                      zeros(n), zeros(n), rand(rng, n, n), rand(rng, n, n), rand(rng, n))
    same_as_reference(heat1d!, heat1d!_julia, rand(rng, 64), zeros(64), 5)
    same_as_reference(lower_update!, lower_update!_julia, rand(rng, 23, 23), rand(rng, 23, 23))
    same_as_reference(halve_upper!, halve_upper!_julia, rand(rng, Float32, 19, 19))
    # a second call with the same shapes reuses the build; new shapes build once more
    same_as_reference(heat1d!, heat1d!_julia, rand(rng, 64), zeros(64), 5)
    same_as_reference(heat1d!, heat1d!_julia, rand(rng, 50), zeros(50), 3)

    same_as_reference(paper("bicg!")..., rand(rng, 29), rand(rng, 37), rand(rng, 37, 29),
                      rand(rng, 29), rand(rng, 37))
    same_as_reference(paper("gesummv!")..., rand(rng, 33), rand(rng, 33), rand(rng, 33, 33),
                      rand(rng, 33, 33), rand(rng, 33), 1.5, 1.2)
    same_as_reference(paper("atax!")..., rand(rng, 31), rand(rng, 27), rand(rng, 27, 31),
                      rand(rng, 31))
    same_as_reference(paper("doitgen!")..., rand(rng, 10, 7, 5), rand(rng, 10, 10),
                      rand(rng, 10))
    same_as_reference(paper("mttkrp!")..., rand(rng, 9, 8), rand(rng, 9, 7, 6),
                      rand(rng, 7, 8), rand(rng, 6, 8))
    same_as_reference(paper("covariance!")..., rand(rng, 12, 12), rand(rng, 12),
                      rand(rng, 20, 12))
    same_as_reference(paper("mm2!")..., rand(rng, 11, 8), rand(rng, 11, 9), rand(rng, 11, 10),
                      rand(rng, 10, 9), rand(rng, 9, 8), 1.5, 1.2)
    same_as_reference(paper("jacobi1d!")..., rand(rng, 50), rand(rng, 50), 4)
end

@testset "bad arguments to a compiled kernel" begin
    C, A = rand(8, 8), rand(8, 8)
    lower_update!(C, A)
    @test_throws ArgumentError lower_update!(C, C)  # the same array twice: restrict pointers
    @test_throws MethodError lower_update!(C, rand(Float32, 8, 8))  # its signature says so
    x = zeros(8)
    fill_first!(x, 4)
    @test x == [1, 1, 1, 1, 0, 0, 0, 0]
    @test_throws PC.PyException fill_first!(view(x, 1:6), 4)  # the bridge refuses a SubArray
end

end
