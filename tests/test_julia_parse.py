"""The tree-sitter parser of the Julia front-end: source text to jast, and every refusal."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
import tree_sitter

from frontends.julia import jast
from frontends.julia.errors import JuliaFrontendError, JuliaSyntaxError, UnsupportedJulia
from frontends.julia.jast import (
    Arg,
    Assign,
    Call,
    Compare,
    For,
    Function,
    Helper,
    If,
    Logic,
    Name,
    Num,
    Range,
    Ref,
    Return,
    Ternary,
    TupleExpr,
    TypeRef,
    Unsupported,
)
from frontends.julia.parse import parse_function, parse_source


def strip(node):
    """``node`` with every ``line`` set to 0, so expected trees need not spell lines out."""
    if isinstance(node, tuple):
        return tuple(strip(n) for n in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {f.name: strip(getattr(node, f.name)) for f in dataclasses.fields(node)}
        if "line" in changes:
            changes["line"] = 0
        return dataclasses.replace(node, **changes)
    return node


def src(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def body(stmts: str) -> tuple:
    """The body (lines stripped) of a function made of ``stmts``."""
    indented = textwrap.indent(textwrap.dedent(stmts).strip("\n"), "    ")
    return strip(parse_source(f"function f(x)\n{indented}\nend\n")[0].body)


def expr(text: str):
    """The parsed value of ``y = text``."""
    (stmt,) = body(f"y = {text}")
    return stmt.value


def I(v: int) -> Num:  # noqa: E743
    return Num(v, "Int64")


def F(v: float) -> Num:
    return Num(v, "Float64")


def N(name: str) -> Name:
    return Name(name)


def C(fn: str, *args) -> Call:
    return Call(fn, tuple(args))


def refused(text: str, construct: str, exc: type = UnsupportedJulia, line: int | None = None):
    """Parsing ``text`` raises ``exc`` whose message names ``construct`` (and ``line``)."""
    with pytest.raises(exc) as info:
        parse_source(text)
    msg = str(info.value)
    assert construct in msg, msg
    if line is not None:
        assert info.value.line == line, msg
        assert f"line {line}" in msg
    return info.value


def refused_stmt(stmts: str, construct: str, line: int = 2):
    """``stmts`` in a function body raise UnsupportedJulia naming ``construct`` and its line."""
    indented = textwrap.indent(textwrap.dedent(stmts).strip("\n"), "    ")
    err = refused(f"function f(x)\n{indented}\nend\n", construct, line=line)
    assert err.function == "f"
    assert "function 'f'" in str(err)


BICG = src("""
    @acc function bicg!(s::Vector{Float64}, q::Vector{Float64}, A::Matrix{Float64}, p::Vector{Float64}, r::Vector{Float64})
        N, M = size(A)
        @schedule begin
            tile(S, i, j, 32, 32, i0, j0, i1, j1)
            parallelize(Q, i)
        end
        for j in 1:M
            s[j] = 0.0
        end
        @inbounds for i in 1:N
            q[i] = 0.0
            for j in 1:M
                @name S s[j] = s[j] + r[i] * A[i, j]
                @name Q q[i] += A[i, j] * p[j]
            end
        end
        return nothing
    end
""")  # noqa: E501

JACOBI = src("""
    function jacobi1d!(A::Vector{Float32}, B::Vector{Float32}, T::Int)
        n = length(A)
        for t in 1:T
            for i in 2:n-1
                B[i] = 0.33333f0 * (A[i-1] + A[i] + A[i+1])
            end
            for i in 2:n-1
                A[i] = 0.33333f0 * (B[i-1] + B[i] + B[i+1])
            end
        end
    end
""")


# ------------------------------------------------------------------------ realistic kernels


def test_bicg_shape():
    (fn,) = parse_source(BICG)
    assert fn.name == "bicg!" and fn.line == 1
    vec = TypeRef("Vector", (TypeRef("Float64"),))
    assert fn.args == (Arg("s", vec, 1), Arg("q", vec, 1),
                       Arg("A", TypeRef("Matrix", (TypeRef("Float64"),)), 1),
                       Arg("p", vec, 1), Arg("r", vec, 1))
    assert [type(s).__name__ for s in fn.body] == ["Assign", "For", "For", "Return"]
    assert fn.body[0] == Assign(TupleExpr((Name("N", 2), Name("M", 2)), 2), "=",
                                Call("size", (Name("A", 2),), 2), 2)
    assert strip(fn.schedule) == (
        C("tile", N("S"), N("i"), N("j"), I(32), I(32), N("i0"), N("j0"), N("i1"), N("j1")),
        C("parallelize", N("Q"), N("i")))
    assert [c.line for c in fn.schedule] == [4, 5]
    outer = fn.body[2]
    assert outer.var == "i" and outer.line == 10 and outer.label is None
    assert strip(outer.iter) == Range(I(1), None, N("N"))
    q0, inner = outer.body
    assert strip(q0) == Assign(Ref("q", (N("i"),)), "=", F(0.0))
    assert inner.var == "j" and len(inner.body) == 2
    s_stmt, q_stmt = inner.body
    assert strip(s_stmt) == Assign(
        Ref("s", (N("j"),)), "=",
        C("+", Ref("s", (N("j"),)), C("*", Ref("r", (N("i"),)), Ref("A", (N("i"), N("j"))))),
        label="S")
    assert strip(q_stmt) == Assign(
        Ref("q", (N("i"),)), "+=", C("*", Ref("A", (N("i"), N("j"))), Ref("p", (N("j"),))),
        label="Q")
    assert (s_stmt.line, q_stmt.line) == (13, 14)
    assert fn.body[3] == Return(17)
    assert parse_function(BICG, "bicg!") == fn


def test_jacobi_shape():
    fn = parse_function(JACOBI, "jacobi1d!")
    f32 = TypeRef("Vector", (TypeRef("Float32"),))
    assert fn.args == (Arg("A", f32, 1), Arg("B", f32, 1), Arg("T", TypeRef("Int"), 1))
    assert fn.schedule == ()
    n_def, time_loop = fn.body
    assert strip(n_def) == Assign(N("n"), "=", C("length", N("A")))
    assert time_loop.var == "t" and strip(time_loop.iter) == Range(I(1), None, N("T"))
    assert [loop.var for loop in time_loop.body] == ["i", "i"]
    first = strip(time_loop.body[0])
    assert first.iter == Range(I(2), None, C("-", N("n"), I(1)))
    c = Num(0.33333, "Float32")

    def a(name, off):
        return Ref(name, (C(off, N("i"), I(1)),) if off else (N("i"),))
    assert first.body == (Assign(
        Ref("B", (N("i"),)), "=",
        C("*", c, C("+", C("+", a("A", "-"), a("A", None)), a("A", "+")))),)
    assert [s.line for s in time_loop.body] == [4, 7]


# ------------------------------------------------------------------------------ top level


def test_top_level_skips_other_statements_and_finds_every_function():
    text = src("""
        using LinearAlgebra
        const K = 3   # a constant
        #= a block
           comment =#
        \"\"\"Docstring.\"\"\"
        function a()
        end
        @show K
        @inline @acc function b(x)
            x[1] = 1
        end
        y = 2
        @acc function c!() end
    """)
    fns = parse_source(text)
    assert [f.name for f in fns] == ["a", "b", "c!"]
    assert [f.line for f in fns] == [6, 9, 13]
    assert fns[0] == Function("a", (), (), (), 6, (("K", Num(3, "Int64", 2)),))
    assert parse_function(text, "b").body == (
        Assign(Ref("x", (Num(1, "Int64", 10),), 10), "=", Num(1, "Int64", 10), 10),)


def test_parse_source_empty():
    assert parse_source("") == []
    assert parse_source("# only a comment\nusing Foo\n") == []


def test_parse_function_absent_lists_names():
    text = "function a() end\nfunction b() end\n"
    with pytest.raises(JuliaFrontendError, match=r"no function 'c'.*available: a, b"):
        parse_function(text, "c")
    with pytest.raises(JuliaFrontendError, match="available: none"):
        parse_function("", "c")


def test_parse_function_several_methods():
    with pytest.raises(JuliaFrontendError, match=r"2 methods \(lines 1, 2\)"):
        parse_function("function a() end\nfunction a(x) end\n", "a")


def test_no_module_level_parser_state():
    import frontends.julia.parse as mod
    assert not any(isinstance(v, tree_sitter.Parser) for v in vars(mod).values())
    assert parse_source(JACOBI) == parse_source(JACOBI)


def test_crlf_and_tabs():
    text = "function f(x)\r\n\tfor i in 1:3\r\n\t\tx[i] = 2\r\n\tend\r\nend\r\n"
    (fn,) = parse_source(text)
    assert fn.body == (For("i", Range(Num(1, "Int64", 2), None, Num(3, "Int64", 2), 2), (
        Assign(Ref("x", (Name("i", 3),), 3), "=", Num(2, "Int64", 3), 3),), 2),)


def test_parse_function_picks_one_of_several():
    text = BICG + "\n" + JACOBI
    assert [f.name for f in parse_source(text)] == ["bicg!", "jacobi1d!"]
    assert parse_function(text, "jacobi1d!").line == 20


# ------------------------------------------------------------------------------ signature


def test_signature_types():
    fn = parse_function(src("""
        function g!(a::Array{Float32, 3}, b::AbstractMatrix{Float32}, n::Int, x,
                    c::Dict{Int, Vector{Float64}})
        end
    """), "g!")
    assert fn.args == (
        Arg("a", TypeRef("Array", (TypeRef("Float32"), 3)), 1),
        Arg("b", TypeRef("AbstractMatrix", (TypeRef("Float32"),)), 1),
        Arg("n", TypeRef("Int"), 1),
        Arg("x", None, 1),
        Arg("c", TypeRef("Dict", (TypeRef("Int"), TypeRef("Vector", (TypeRef("Float64"),)))),
            2),
    )


def test_return_type_nothing_accepted():
    assert parse_function("function f()::Nothing\nend\n", "f").args == ()


@pytest.mark.parametrize("sig, construct", [
    ("f(x::T) where T", "where clause"),
    ("f(x::Vector{T} where T)", "where clause"),
    ("f(x; k=1)", "keyword arguments"),
    ("f(x, k=1)", "default argument value"),
    ("f(x::Int=1)", "default argument value"),
    ("f(x...)", "varargs"),
    ("f(::Int)", "unnamed argument"),
    ("f(x::AbstractArray{<:Real})", "type <:Real"),
    ("f(x::Base.Int)", "type Base.Int"),
    ("f(x)::Int", "return type annotation ::Int"),
    ("Base.f(x)", "function name Base.f"),
])
def test_signature_refusals(sig, construct):
    refused(f"\n\nfunction {sig}\nend\n", construct, line=3)


def test_function_without_methods_refused():
    refused("function k end\n", "function without methods", line=1)


@pytest.mark.parametrize("text", ["@acc g(x) = x + 1\n", "g(x) = (y = x; y)\n"])
def test_short_form_refused(text):
    """A short form is an @acc function only as function ... end; it is a helper only
    when its body is one expression."""
    refused("function a() end\n" + text, "short-form function definition", line=2)


def test_one_expression_functions_are_helpers_of_every_function():
    fns = parse_source(src("""
        function a() end
        g(x) = x + 1
        h(x::Int, y)::Int = x * y
        function k(y)
            return g(y) * 2
        end
        function big(y)
            y[1] = 2
            return
        end
    """))
    assert [f.name for f in fns] == ["a", "k", "big"]
    x, y = Name("x", 2), Name("y", 3)
    g = Helper("g", ("x",), Call("+", (x, Num(1, "Int64", 2)), 2), 2)
    h = Helper("h", ("x", "y"), Call("*", (Name("x", 3), y), 3), 3)
    kk = Helper("k", ("y",), Call("*", (Call("g", (Name("y", 5),), 5), Num(2, "Int64", 5)),
                                  5), 4)
    assert fns[0].helpers == (g, h, kk) and fns[1].helpers == (g, h)


# ----------------------------------------------------------------------------- statements


def test_assignments():
    assert body("""
        x = 1
        A[i, j] = x
        a, b = size(A)
        (c, d) = (1, 2)
        x += 1
        x -= 2
        x *= 3
        A[i] /= 4
    """) == (
        Assign(N("x"), "=", I(1)),
        Assign(Ref("A", (N("i"), N("j"))), "=", N("x")),
        Assign(TupleExpr((N("a"), N("b"))), "=", C("size", N("A"))),
        Assign(TupleExpr((N("c"), N("d"))), "=", TupleExpr((I(1), I(2)))),
        Assign(N("x"), "+=", I(1)),
        Assign(N("x"), "-=", I(2)),
        Assign(N("x"), "*=", I(3)),
        Assign(Ref("A", (N("i"),)), "/=", I(4)),
    )


def test_statements_on_one_line_and_lines():
    fn = parse_source("function f()\n    x = 1; y = 2\n\n    z = 3\nend\n")[0]
    assert [s.line for s in fn.body] == [2, 2, 4]
    assert fn.body[0] == Assign(Name("x", 2), "=", Num(1, "Int64", 2), 2)


def test_for_forms():
    r = Range(I(1), None, N("N"))
    one = (Assign(N("x"), "=", I(1)),)
    assert body("for i in 1:N\n    x = 1\nend") == (For("i", r, one),)
    assert body("for i = 1:N\n    x = 1\nend") == (For("i", r, one),)
    assert body("for i ∈ 1:N\n    x = 1\nend") == (For("i", r, one),)
    assert body("for i in axes(A, 1)\nend") == (For("i", C("axes", N("A"), I(1)), ()),)


def test_for_two_bindings_nest_outer_first():
    fn = parse_source(src("""
        function f(A)
            for i in 1:N,
                    j in i:M
                A[i, j] = 0
            end
        end
    """))[0]
    (outer,) = fn.body
    assert strip(outer) == For("i", Range(I(1), None, N("N")), (
        For("j", Range(N("i"), None, N("M")), (Assign(Ref("A", (N("i"), N("j"))), "=", I(0)),)),
    ))
    assert (outer.line, outer.body[0].line) == (2, 3)


def test_imperfect_nest():
    assert body("""
        for i in 1:N
            s[i] = 0
            for j in 1:M
                s[i] += A[i, j]
            end
            t[i] = s[i]
        end
    """) == (For("i", Range(I(1), None, N("N")), (
        Assign(Ref("s", (N("i"),)), "=", I(0)),
        For("j", Range(I(1), None, N("M")), (
            Assign(Ref("s", (N("i"),)), "+=", Ref("A", (N("i"), N("j")))),)),
        Assign(Ref("t", (N("i"),)), "=", Ref("s", (N("i"),))),
    )),)


def test_negative_step():
    assert body("for i in N:-1:1\nend") == (For("i", Range(N("N"), I(-1), I(1)), ()),)
    assert body("for i in 2:2:M\nend") == (For("i", Range(I(2), I(2), N("M")), ()),)


def test_if_elseif_else_chain():
    a1, a2, a3 = (Assign(N("x"), "=", I(k)) for k in (1, 2, 3))
    fn = parse_source(src("""
        function f(x)
            if a < b
                x = 1
            elseif c
                x = 2
            elseif d
            else
                x = 3
            end
        end
    """))[0]
    (stmt,) = fn.body
    assert strip(stmt) == If(Compare(("<",), (N("a"), N("b"))), (a1,), (
        If(N("c"), (a2,), (If(N("d"), (), (a3,)),)),))
    assert (stmt.line, stmt.orelse[0].line, stmt.orelse[0].orelse[0].line) == (2, 4, 6)
    assert body("if c\n    x = 1\nend") == (If(N("c"), (a1,), ()),)
    assert body("if c\n    x = 1\nelse\n    x = 2\nend") == (If(N("c"), (a1,), (a2,)),)


def test_returns():
    assert body("return") == (Return(),)
    assert body("return nothing") == (Return(),)
    assert body("return x") == (Return(value=N("x")),)
    assert body("return x[1] + 1") == (Return(value=Call("+", (Ref("x", (Num(1, "Int64"),)),
                                                               Num(1, "Int64")))),)
    assert body("return (a, b)") == (Unsupported("return of a tuple (return one value or "
                                                 "one array)"),)


def test_comments_everywhere():
    assert body("""
        # a comment
        x = f(a, # inside a call
              b) #= block =#
        #= block
           over lines =#
        for i in 1:2 # after the header
            # inside
            y = 1
        end
    """) == (Assign(N("x"), "=", C("f", N("a"), N("b"))),
             For("i", Range(I(1), None, I(2)), (Assign(N("y"), "=", I(1)),)))


def test_bare_expressions():
    assert body("nothing") == ()
    assert body("println(x)") == (Unsupported("expression statement: println(...)"),)
    assert body("x") == (Unsupported("expression statement: x"),)
    assert body("a + b") == (Unsupported("expression statement: a + b"),)


@pytest.mark.parametrize("stmt, construct", [
    ("while x < 3\n    x += 1\nend", "while loop"),
    ("break", "break"),
    ("continue", "continue"),
    ("try\n    x = 1\ncatch e\nend", "try block"),
    ("let y = 1\nend", "let block"),
    ("function g(y)\nend", "nested function definition"),
    ("g(y) = y + 1", "nested function definition"),
    ("map(x) do y\n    y\nend", "do-block"),
    ("global z", "global declaration"),
    ("local w = 1", "local declaration"),
    ("@goto done", "macro @goto"),
    ("@label done", "macro @label"),
    ("@threads for i in 1:3\nend", "macro @threads"),
    ("@views x = y", "macro @views"),
    ("@time x = a + b", "macro @time"),
    ("@show x", "macro @show"),
    ("@. x = y + 1", "macro @."),
    ("for (i, j) in zip(a, b)\nend", "for loop over (i, j)"),
    ("for outer i in 1:3\nend", "for outer"),
])
def test_unsupported_statements_kept_in_tree(stmt, construct):
    fn = parse_source("function f(x)\n    y = 0\n" + textwrap.indent(stmt, "    ") + "\nend\n")[0]
    assert fn.body[1:] == (Unsupported(construct, 3),)


def test_unsupported_statement_nested_in_loop():
    assert body("for i in 1:3\n    while true\n    end\nend") == (
        For("i", Range(I(1), None, I(3)), (Unsupported("while loop"),)),)


# ---------------------------------------------------------------------------------- macros


def test_inbounds_and_simd_are_transparent():
    loop = For("i", Range(I(1), None, N("n")), (Assign(Ref("x", (N("i"),)), "=", I(0)),))
    assert body("@inbounds for i in 1:n\n    x[i] = 0\nend") == (loop,)
    assert body("@simd for i in 1:n\n    x[i] = 0\nend") == (loop,)
    assert body("@simd ivdep for i in 1:n\n    x[i] = 0\nend") == (loop,)
    assert body("@inbounds @simd for i in 1:n\n    x[i] = 0\nend") == (loop,)
    assert body("@inbounds x[1] = 2") == (Assign(Ref("x", (I(1),)), "=", I(2)),)
    assert body("@inbounds(x[1] = 2)") == (Assign(Ref("x", (I(1),)), "=", I(2)),)
    assert body("""
        @inbounds begin
            a = 1
            b = 2
        end
        c = 3
    """) == (Assign(N("a"), "=", I(1)), Assign(N("b"), "=", I(2)), Assign(N("c"), "=", I(3)))
    assert body("begin\n    a = 1\nend") == (Assign(N("a"), "=", I(1)),)


def test_name_labels():
    loop = For("i", Range(I(1), None, N("n")), (), label="L")
    assert body("@name L for i in 1:n\nend") == (loop,)
    assert body("@name L @inbounds for i in 1:n\nend") == (loop,)
    assert body("@inbounds @name L for i in 1:n\nend") == (loop,)
    assert body("@name S x[i] = 1") == (Assign(Ref("x", (N("i"),)), "=", I(1), label="S"),)
    assert body("@name S x += 1") == (Assign(N("x"), "+=", I(1), label="S"),)
    assert body("@name T if c\nend") == (If(N("c"), (), (), label="T"),)
    assert body("@name W while c\nend") == (Unsupported("while loop"),)
    assert body("@name(S, x = 1)") == (Assign(N("x"), "=", I(1), label="S"),)


def test_stacked_macros_regrouped_as_julia_does():
    # tree-sitter gives `@inbounds @name S x = 1` as @inbounds (@name S) (x = 1); Julia
    # gives everything after `@name` to @name.
    loop = For("i", Range(I(1), None, N("n")), (Assign(N("x"), "=", I(1)),), label="L")
    for text in ("@inbounds @name L for i in 1:n\n    x = 1\nend",
                 "@inbounds @name L @simd for i in 1:n\n    x = 1\nend",
                 "@name L @inbounds @simd for i in 1:n\n    x = 1\nend",
                 "@simd @inbounds @name L @inbounds for i in 1:n\n    x = 1\nend"):
        assert body(text) == (loop,), text
    assert body("@inbounds @name S x[i] = 1") == (
        Assign(Ref("x", (N("i"),)), "=", I(1), label="S"),)
    assert body("@inbounds @views x = 1") == (Unsupported("macro @views"),)
    assert body("@inbounds @schedule tile(S, i, 4)") == ()


@pytest.mark.parametrize("stmt, construct", [
    ("@name S return", "@name on return"),
    ("@name S begin\n    a = 1\n    b = 2\nend", "@name on begin"),
    ("@name S", "@name needs a label and a statement"),
    ("@name S T x = 1", "@name needs a label and a statement"),
    ("@name (S) x = 1", "@name needs a label and a statement"),
])
def test_name_refusals(stmt, construct):
    refused_stmt(stmt, construct)


def test_schedule_block_and_single_directives():
    fn = parse_source(src("""
        function f(A)
            @schedule tile(S, i, j, 32, 32)
            for i in 1:3
                A[i] = 0
            end
            @schedule begin
                # a comment
                shift(S, i, -1)
                unroll(S, j, 4); vectorize(T, k, 8)
            end
            @schedule parallelize(S, i)
        end
    """))[0]
    assert len(fn.body) == 1 and isinstance(fn.body[0], For)
    assert strip(fn.schedule) == (
        C("tile", N("S"), N("i"), N("j"), I(32), I(32)),
        C("shift", N("S"), N("i"), I(-1)),
        C("unroll", N("S"), N("j"), I(4)),
        C("vectorize", N("T"), N("k"), I(8)),
        C("parallelize", N("S"), N("i")),
    )
    assert [c.line for c in fn.schedule] == [2, 8, 9, 9, 11]
    assert fn.schedule[1].args[2] == Num(-1, "Int64", 8)


def test_schedule_inside_a_loop_is_unsupported():
    assert body("for i in 1:3\n    @schedule tile(S, i, 4)\nend") == (
        For("i", Range(I(1), None, I(3)), (Unsupported("@schedule inside a nested block"),)),)


@pytest.mark.parametrize("stmt, construct, line", [
    ("@schedule x = 1", "schedule directive x = 1 (must be a call)", 2),
    ("@schedule begin\n    tile(S, i, 4)\n    tile\nend", "schedule directive tile (must", 4),
    ("@schedule tile(S, i + 1)", "schedule argument i + 1", 2),
    ("@schedule tile(S, f(i))", "schedule argument f(i)", 2),
    ("@schedule tile(S; k = 1)", "keyword arguments", 2),
    ("@schedule a.b(S)", "schedule directive a.b(S)", 2),
])
def test_schedule_refusals(stmt, construct, line):
    refused_stmt(stmt, construct, line)


# ----------------------------------------------------------------------------- expressions


@pytest.mark.parametrize("text, expected", [
    ("42", I(42)),
    ("1_000", I(1000)),
    ("-7", I(-7)),
    ("1.0", F(1.0)),
    ("1.", F(1.0)),
    ("1e-3", F(1e-3)),
    ("1E3", F(1000.0)),
    (".5", F(0.5)),
    ("-2.5", F(-2.5)),
    ("0x1p3", F(8.0)),
    ("1f0", Num(1.0, "Float32")),
    ("2.5f-3", Num(2.5e-3, "Float32")),
    (".5f0", Num(0.5, "Float32")),
    ("-1f0", Num(-1.0, "Float32")),
    ("true", Num(True, "Bool")),
    ("false", Num(False, "Bool")),
    ("x", N("x")),
    ("nothing", N("nothing")),
])
def test_literals_and_names(text, expected):
    got = expr(text)
    assert got == expected
    if isinstance(got, Num):  # 1.0 == 1 in Python: the value's own type must match too
        assert type(got.value) is type(expected.value)


@pytest.mark.parametrize("text, expected", [
    ("a + b", C("+", N("a"), N("b"))),
    ("a + b + c", C("+", C("+", N("a"), N("b")), N("c"))),
    ("a * b * c", C("*", C("*", N("a"), N("b")), N("c"))),
    ("a - b - c", C("-", C("-", N("a"), N("b")), N("c"))),
    ("a + b * c", C("+", N("a"), C("*", N("b"), N("c")))),
    ("(a + b) * c", C("*", C("+", N("a"), N("b")), N("c"))),
    ("a / b", C("/", N("a"), N("b"))),
    ("a ÷ b", C("÷", N("a"), N("b"))),
    ("a % b", C("%", N("a"), N("b"))),
    ("a \\ b", C("\\", N("a"), N("b"))),
    ("a ^ 2", C("^", N("a"), I(2))),
    ("a ^ b ^ c", C("^", N("a"), C("^", N("b"), N("c")))),
    ("(a ^ b) ^ c", C("^", C("^", N("a"), N("b")), N("c"))),
    ("x ^ -1", C("^", N("x"), I(-1))),
    ("a & b | c", C("|", C("&", N("a"), N("b")), N("c"))),
    ("a << 2 >> b", C(">>", C("<<", N("a"), I(2)), N("b"))),
    ("a >>> 1", C(">>>", N("a"), I(1))),
    ("a ⊻ b", C("⊻", N("a"), N("b"))),
    ("xor(a, b)", C("xor", N("a"), N("b"))),
    ("-x", C("-", N("x"))),
    ("+x", C("+", N("x"))),
    ("!c", C("!", N("c"))),
    ("-x^2", C("-", C("^", N("x"), I(2)))),
    ("-2^2", C("-", C("^", I(2), I(2)))),
    ("a - -1", C("-", N("a"), I(-1))),
    ("-(3)", C("-", I(3))),
    ("!(a < b)", C("!", Compare(("<",), (N("a"), N("b"))))),
    ("+(a, b, c)", C("+", C("+", N("a"), N("b")), N("c"))),
    ("2x", C("*", I(2), N("x"))),
    ("2x + 1", C("+", C("*", I(2), N("x")), I(1))),
    ("sqrt(x)", C("sqrt", N("x"))),
    ("size(A, 1)", C("size", N("A"), I(1))),
    ("Float32(x)", C("Float32", N("x"))),
    ("max(a, b, c)", C("max", N("a"), N("b"), N("c"))),
    ("f()", C("f")),
    ("((x))", N("x")),
])
def test_arithmetic_and_calls(text, expected):
    assert expr(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("a < b", Compare(("<",), (N("a"), N("b")))),
    ("0 < i <= n", Compare(("<", "<="), (I(0), N("i"), N("n")))),
    ("a ≤ b ≠ c ≥ d", Compare(("<=", "!=", ">="), (N("a"), N("b"), N("c"), N("d")))),
    ("a == b != c", Compare(("==", "!="), (N("a"), N("b"), N("c")))),
    ("a > b >= c", Compare((">", ">="), (N("a"), N("b"), N("c")))),
    ("(a < b) == c", Compare(("==",), (Compare(("<",), (N("a"), N("b"))), N("c")))),
    ("i + 1 < n", Compare(("<",), (C("+", N("i"), I(1)), N("n")))),
    ("a && b", Logic("&&", N("a"), N("b"))),
    ("a && b && c", Logic("&&", N("a"), Logic("&&", N("b"), N("c")))),
    ("a || b || c", Logic("||", N("a"), Logic("||", N("b"), N("c")))),
    ("a && b || c", Logic("||", Logic("&&", N("a"), N("b")), N("c"))),
    ("0 < i && i <= n", Logic("&&", Compare(("<",), (I(0), N("i"))),
                              Compare(("<=",), (N("i"), N("n"))))),
    ("c ? a : b", Ternary(N("c"), N("a"), N("b"))),
    ("i < n ? a : b", Ternary(Compare(("<",), (N("i"), N("n"))), N("a"), N("b"))),
    ("c ? a : d ? e : f", Ternary(N("c"), N("a"), Ternary(N("d"), N("e"), N("f")))),
    ("ifelse(c, a, b)", Ternary(N("c"), N("a"), N("b"))),
])
def test_comparisons_logic_ternary(text, expected):
    assert expr(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("1:N", Range(I(1), None, N("N"))),
    ("1:N-1", Range(I(1), None, C("-", N("N"), I(1)))),
    ("i+1:N", Range(C("+", N("i"), I(1)), None, N("N"))),
    ("2:2:M", Range(I(2), I(2), N("M"))),
    ("N:-1:1", Range(N("N"), I(-1), I(1))),
    ("1:s:N-1", Range(I(1), N("s"), C("-", N("N"), I(1)))),
    ("(1:N)", Range(I(1), None, N("N"))),
    ("(a, b)", TupleExpr((N("a"), N("b")))),
    ("(a,)", TupleExpr((N("a"),))),
    ("a, b", TupleExpr((N("a"), N("b")))),
    ("A[i, j+1]", Ref("A", (N("i"), C("+", N("j"), I(1))))),
    ("A[i-1] + A[i+1]", C("+", Ref("A", (C("-", N("i"), I(1)),)),
                          Ref("A", (C("+", N("i"), I(1)),)))),
    ("A[idx[i]]", Ref("A", (Ref("idx", (N("i"),)),))),
    ("A[]", Ref("A", ())),
])
def test_ranges_tuples_refs(text, expected):
    assert expr(text) == expected


def test_multiline_expression_lines():
    fn = parse_source("function f()\n    y = a +\n        b * c\nend\n")[0]
    (stmt,) = fn.body
    assert stmt.line == 2
    assert stmt.value.args[1] == Call("*", (Name("b", 3), Name("c", 3)), 3)


@pytest.mark.parametrize("text, construct", [
    ("a .+ b", "broadcast operator .+"),
    ("2 .* x", "broadcast operator .*"),
    (".-x", "broadcast operator .-"),
    ("f.(x)", "broadcast call"),
    ("f(x; k=1)", "keyword arguments"),
    ("f(x, k=1)", "keyword argument"),
    ("f(x...)", "splat"),
    ("[i for i in 1:3]", "comprehension"),
    ("sum(i for i in 1:3)", "generator"),
    ('"text"', "string literal"),
    ("'c'", "character literal"),
    ("begin 1 end", "begin ... end block used as an expression"),
    ("x -> x + 1", "anonymous function"),
    ("a.b", "field access"),
    ("A[i][j]", "indexing of A[i]"),
    ("f(A)[1]", "indexing of f(A)"),
    ("A[end]", "`end` inside an index"),
    ("A[:, 1]", "`:` (a whole dimension) in an index"),
    ("[1, 2]", "array literal"),
    ("x'", "adjoint"),
    ("@time a + b", "macro call in an expression"),
    ("a === b", "operator ==="),
    ("a isa Int", "operator isa"),
    ("a ∈ b", "operator ∈"),
    ("a // b", "operator //"),
    ("~a", "unary operator ~"),
    ("(a; b)", "block in parentheses"),
    ("(a=1,)", "named tuple"),
    ("0x1f", "unsigned integer literal 0x1f"),
    ("0b101", "unsigned integer literal 0b101"),
    ("9223372036854775808", "does not fit in Int64"),
    ("1:2:3:4", "range with more than three parts"),
    ("2x^2", "implicit multiplication before ^"),
    ("3(a+b)^2", "implicit multiplication before ^"),
    ("f(y)(z)", "call of f(y)"),
    ("Vector{Float64}(undef, n)", "call of Vector{Float64}"),
    ("z += 3", "chained assignment other than a = b = value"),
    (":sym", "quote expression"),
])
def test_expression_refusals(text, construct):
    refused_stmt(f"y = {text}", construct)


@pytest.mark.parametrize("stmt, construct", [
    ("x::Int = 3", "assignment to x::Int"),
    ("a.b = 3", "assignment to a.b"),
    ("A[i], b = 1, 2", "tuple assignment to A[i]"),
    ("x .= 2", "broadcast assignment .="),
    ("x .+= 2", "broadcast assignment .+="),
    ("x ÷= 2", "update operator ÷="),
    ("x ^= 2", "update operator ^="),
    ("for i in 1:A[end]\nend", "`end` inside an index"),
    ("if a .< b\nend", "broadcast operator .<"),
    ("x[i] = \"s\"", "string literal"),
])
def test_statement_level_expression_refusals(stmt, construct):
    refused_stmt(stmt, construct)


def test_refusal_line_inside_nested_blocks():
    text = src("""
        function f(x)
            for i in 1:3
                if x[i] > 0
                    x[i] = a.b
                end
            end
        end
    """)
    err = refused(text, "field access", line=4)
    assert err.function == "f"


# --------------------------------------------------------------------------- syntax errors


@pytest.mark.parametrize("text, line, detail", [
    ("function f(x)\n    x = 1\n", 1, "'function' block (missing `end`?) is never closed"),
    ("function f(x)\n    x = = 3\nend\n", 2, "x = = 3"),
    ("function f(x)\n    x = (1 + 2\nend\n", 2, "'(' bracket is never closed"),
    ("function f(x)\n    x = A[1\nend\n", 2, "'[' bracket is never closed"),
    ("function f(x)\n    x = 1)\nend\n", 2, "x = 1)"),
    ("function f()\nend\nfunction g(x)\n    y = 2 +* 3\nend\n", 4, "y = 2 +* 3"),
])
def test_syntax_errors(text, line, detail):
    err = refused(text, detail, exc=JuliaSyntaxError, line=line)
    assert isinstance(err, JuliaFrontendError)
    assert "Julia syntax error" in str(err)


def test_syntax_error_anywhere_refuses_the_whole_source():
    with pytest.raises(JuliaSyntaxError):
        parse_function("function a()\nend\nfunction b(\n", "a")


def test_nodes_are_frozen():
    fn = parse_source(JACOBI)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        fn.name = "g"  # type: ignore[misc]
    assert isinstance(fn, jast.Function)
