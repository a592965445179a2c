"""The juliacall way in: Julia's ``Expr`` of an ``@acc`` function, as the JSON ``Acc.jl``
writes, to jast (``frontends/julia/fromjson.py``).

No Julia runtime is on the test machines, so the JSON is written by hand, node for node what
Julia's parser (JuliaSyntax, Julia 1.10+) gives for the source shown next to it: a
LineNumberNode before every statement of a block and the ``function`` line first in a
function body, ``a+b+c`` as one n-ary call, ``a < b`` as a call but ``a < b <= c`` as a
``:comparison``, an ``elseif`` condition wrapped in a block with its line, ``for i in r, j in
s`` as a block of ``=`` specs, ``-1`` as a literal. The same sources go through the
tree-sitter parser too, which must give the same tree (lines aside)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from frontends.julia import jast as j
from frontends.julia.errors import JuliaFrontendError, UnsupportedJulia
from frontends.julia.fromjson import function_from_json

ROOT = Path(__file__).resolve().parents[1]
ACC_JL = ROOT / "frontends" / "julia" / "Acc.jl"


# ------------------------------------------------- building the JSON as Acc._json writes


def ex(head: str, *args: Any) -> dict[str, Any]:
    return {"head": head, "args": list(args)}


def sym(name: str) -> dict[str, Any]:
    return {"sym": name}


def ln(n: int) -> dict[str, Any]:
    return {"line": n}


def i64(n: int) -> dict[str, Any]:
    return {"int": n}


def f64(x: float | str) -> dict[str, Any]:
    return {"float": x, "type": "Float64"}


def f32(x: float) -> dict[str, Any]:
    return {"float": x, "type": "Float32"}


def call(fn: str, *args: Any) -> dict[str, Any]:
    return ex("call", sym(fn), *args)


def ref(array: str, *idx: Any) -> dict[str, Any]:
    return ex("ref", sym(array), *idx)


def typed(name: str, typ: Any) -> dict[str, Any]:
    return ex("::", sym(name), typ)


def curly(name: str, *params: Any) -> dict[str, Any]:
    return ex("curly", sym(name), *params)


def macro(name: str, line: int, *args: Any) -> dict[str, Any]:
    return ex("macrocall", sym(name), ln(line), *args)


def strip_lines(node: Any) -> Any:
    """The same tree with every ``line`` 0: the tree-sitter path gives an expression its own
    line, the Expr path the line of its statement (Julia records no finer ones)."""
    if isinstance(node, tuple):
        return tuple(strip_lines(x) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {f.name: strip_lines(getattr(node, f.name)) for f in dataclasses.fields(node)}
        if "line" in changes:
            changes["line"] = 0
        return dataclasses.replace(node, **changes)
    return node


def stmt_lines(stmts: tuple[j.Stmt, ...]) -> list[tuple[str, int, str | None]]:
    """(kind, line, label) of every statement, depth first."""
    out: list[tuple[str, int, str | None]] = []
    for s in stmts:
        out.append((type(s).__name__, s.line, getattr(s, "label", None)))
        if isinstance(s, j.For):
            out += stmt_lines(s.body)
        elif isinstance(s, j.If):
            out += stmt_lines(s.then) + stmt_lines(s.orelse)
    return out


def n(v: Any, t: str = "Int64") -> j.Num:
    return j.Num(v, t)


def name(s: str) -> j.Name:
    return j.Name(s)


def jref(array: str, *idx: j.Expr) -> j.Ref:
    return j.Ref(array, idx)


def jcall(fn: str, *args: j.Expr) -> j.Call:
    return j.Call(fn, args)


def vec(elt: str) -> j.TypeRef:
    return j.TypeRef("Vector", (j.TypeRef(elt),))


def mat(elt: str) -> j.TypeRef:
    return j.TypeRef("Matrix", (j.TypeRef(elt),))


# ------------------------------------------------------------------------- the kernels

GESUMMV_SRC = """\
function gesummv!(tmp::Vector{Float64}, y::Vector{Float64}, A::Matrix{Float64}, x, N::Int)
    @inbounds for i in 1:N
        @name S0 tmp[i] = 0.0
        for j in 1:N
            tmp[i] += A[i, j] * x[j]
        end
        y[i] = 1.5 * tmp[i] + 1.2 * y[i] + 0.5f0
    end
    return nothing
end
"""

GESUMMV_JSON = ex(
    "function",
    call("gesummv!", typed("tmp", curly("Vector", sym("Float64"))),
         typed("y", curly("Vector", sym("Float64"))),
         typed("A", curly("Matrix", sym("Float64"))), sym("x"), typed("N", sym("Int"))),
    ex("block", ln(1), ln(2),
       macro("@inbounds", 2, ex(
           "for", ex("=", sym("i"), call(":", i64(1), sym("N"))),
           ex("block",
              ln(3), macro("@name", 3, sym("S0"), ex("=", ref("tmp", sym("i")), f64(0.0))),
              ln(4), ex("for", ex("=", sym("j"), call(":", i64(1), sym("N"))),
                        ex("block", ln(5),
                           ex("+=", ref("tmp", sym("i")),
                              call("*", ref("A", sym("i"), sym("j")), ref("x", sym("j")))))),
              ln(7), ex("=", ref("y", sym("i")),
                        call("+", call("*", f64(1.5), ref("tmp", sym("i"))),
                             call("*", f64(1.2), ref("y", sym("i"))), f32(0.5)))))),
       ln(9), ex("return", sym("nothing"))))

GESUMMV_JAST = j.Function(
    "gesummv!",
    (j.Arg("tmp", vec("Float64")), j.Arg("y", vec("Float64")), j.Arg("A", mat("Float64")),
     j.Arg("x"), j.Arg("N", j.TypeRef("Int"))),
    (j.For("i", j.Range(n(1), None, name("N")), (
        j.Assign(jref("tmp", name("i")), "=", n(0.0, "Float64"), label="S0"),
        j.For("j", j.Range(n(1), None, name("N")), (
            j.Assign(jref("tmp", name("i")), "+=",
                     jcall("*", jref("A", name("i"), name("j")), jref("x", name("j")))),)),
        j.Assign(jref("y", name("i")), "=",
                 jcall("+", jcall("+", jcall("*", n(1.5, "Float64"), jref("tmp", name("i"))),
                                  jcall("*", n(1.2, "Float64"), jref("y", name("i")))),
                       n(0.5, "Float32"))))),
     j.Return()))

STENCIL_SRC = """\
function stencil!(A::Vector{Float32}, B::Vector{Float32}, T::Int)
    n = size(A, 1)
    for t in 1:T, i in 2:n-1
        if 1 < i <= n - 1 && !(i == 5)
            B[i] = (A[i-1] + A[i] + A[i+1]) / 3f0
        elseif i % 2 == 0
            B[i] = i > 3 ? -A[i] : ifelse(i < 2, A[i], 0f0)
        else
            B[i] = A[i÷2]
        end
    end
end
"""

_I = sym("i")
STENCIL_JSON = ex(
    "function",
    call("stencil!", typed("A", curly("Vector", sym("Float32"))),
         typed("B", curly("Vector", sym("Float32"))), typed("T", sym("Int"))),
    ex("block", ln(1),
       ln(2), ex("=", sym("n"), call("size", sym("A"), i64(1))),
       ln(3), ex(
           "for",
           ex("block", ex("=", sym("t"), call(":", i64(1), sym("T"))),
              ex("=", _I, call(":", i64(2), call("-", sym("n"), i64(1))))),
           ex("block", ln(4), ex(
               "if",
               ex("&&", ex("comparison", i64(1), sym("<"), _I, sym("<="),
                           call("-", sym("n"), i64(1))),
                  call("!", call("==", _I, i64(5)))),
               ex("block", ln(5), ex("=", ref("B", _I), call(
                   "/", call("+", ref("A", call("-", _I, i64(1))), ref("A", _I),
                             ref("A", call("+", _I, i64(1)))), f32(3.0)))),
               ex("elseif", ex("block", ln(6), call("==", call("%", _I, i64(2)), i64(0))),
                  ex("block", ln(7), ex("=", ref("B", _I), ex(
                      "if", call(">", _I, i64(3)), call("-", ref("A", _I)),
                      call("ifelse", call("<", _I, i64(2)), ref("A", _I), f32(0.0))))),
                  ex("block", ln(9), ex("=", ref("B", _I), ref("A", call("÷", _I, i64(2))))))),
              ln(11)))))  # Julia 1.12 adds a line for a loop's `end`; 1.10 does not

_i = name("i")
_STENCIL_IF = j.If(
    j.Logic("&&", j.Compare(("<", "<="), (n(1), _i, jcall("-", name("n"), n(1)))),
            jcall("!", j.Compare(("==",), (_i, n(5))))),
    (j.Assign(jref("B", _i), "=", jcall(
        "/", jcall("+", jcall("+", jref("A", jcall("-", _i, n(1))), jref("A", _i)),
                   jref("A", jcall("+", _i, n(1)))), n(3.0, "Float32"))),),
    (j.If(j.Compare(("==",), (jcall("%", _i, n(2)), n(0))),
          (j.Assign(jref("B", _i), "=", j.Ternary(
              j.Compare((">",), (_i, n(3))), jcall("-", jref("A", _i)),
              j.Ternary(j.Compare(("<",), (_i, n(2))), jref("A", _i), n(0.0, "Float32")))),),
          (j.Assign(jref("B", _i), "=", jref("A", jcall("÷", _i, n(2)))),)),))
STENCIL_JAST = j.Function(
    "stencil!",
    (j.Arg("A", vec("Float32")), j.Arg("B", vec("Float32")), j.Arg("T", j.TypeRef("Int"))),
    (j.Assign(name("n"), "=", jcall("size", name("A"), n(1))),
     j.For("t", j.Range(n(1), None, name("T")), (
         j.For("i", j.Range(n(2), None, jcall("-", name("n"), n(1))), (_STENCIL_IF,)),))))

TRI_SRC = """\
function tri!(C::Matrix{Float64}, A::Matrix{Float64}, N::Int)
    for i in 1:N
        for j in 1:2:i
            @name S C[i, j] += A[i, j] * A[j, i]
        end
    end
    @schedule begin
        interchange(S, i, j)
        shift(S, i, -1)
    end
    @schedule parallelize(S, i)
end
"""

TRI_JSON = ex(
    "function",
    call("tri!", typed("C", curly("Matrix", sym("Float64"))),
         typed("A", curly("Matrix", sym("Float64"))), typed("N", sym("Int"))),
    ex("block", ln(1),
       ln(2), ex("for", ex("=", _I, call(":", i64(1), sym("N"))), ex(
           "block", ln(3), ex("for", ex("=", sym("j"), call(":", i64(1), i64(2), _I)), ex(
               "block", ln(4), macro("@name", 4, sym("S"), ex(
                   "+=", ref("C", _I, sym("j")),
                   call("*", ref("A", _I, sym("j")), ref("A", sym("j"), _I)))))))),
       ln(7), macro("@schedule", 7, ex(
           "block", ln(8), call("interchange", sym("S"), _I, sym("j")),
           ln(9), call("shift", sym("S"), _I, i64(-1)))),
       ln(11), macro("@schedule", 11, call("parallelize", sym("S"), _I))))

TRI_JAST = j.Function(
    "tri!", (j.Arg("C", mat("Float64")), j.Arg("A", mat("Float64")), j.Arg("N", j.TypeRef("Int"))),
    (j.For("i", j.Range(n(1), None, name("N")), (
        j.For("j", j.Range(n(1), n(2), _i), (
            j.Assign(jref("C", _i, name("j")), "+=",
                     jcall("*", jref("A", _i, name("j")), jref("A", name("j"), _i)),
                     label="S"),)),)),),
    (jcall("interchange", name("S"), _i, name("j")), jcall("shift", name("S"), _i, n(-1)),
     jcall("parallelize", name("S"), _i)))

REFUSED_SRC = """\
function bad!(A::Vector{Float64}, n::Int)
    while n > 0
        n -= 1
    end
    @show n
    println(n)
    local k = 1
    x = n
    nothing
    return A
end
"""

REFUSED_JSON = ex(
    "function", call("bad!", typed("A", curly("Vector", sym("Float64"))), typed("n", sym("Int"))),
    ex("block", ln(1),
       ln(2), ex("while", call(">", sym("n"), i64(0)),
                 ex("block", ln(3), ex("-=", sym("n"), i64(1)))),
       ln(5), macro("@show", 5, sym("n")),
       ln(6), call("println", sym("n")),
       ln(7), ex("local", ex("=", sym("k"), i64(1))),
       ln(8), ex("=", sym("x"), sym("n")),
       ln(9), sym("nothing"),
       ln(10), ex("return", sym("A"))))

REFUSED_JAST = j.Function(
    "bad!", (j.Arg("A", vec("Float64"), 1), j.Arg("n", j.TypeRef("Int"), 1)),
    (j.Unsupported("while loop", 2), j.Unsupported("macro @show", 5),
     j.Unsupported("expression statement: println(...)", 6),
     j.Unsupported("local declaration", 7), j.Assign(j.Name("x", 8), "=", j.Name("n", 8), 8),
     j.Return(10, j.Name("A", 10))),
     line=1)

KERNELS = {"gesummv!": (GESUMMV_SRC, GESUMMV_JSON, GESUMMV_JAST),
           "stencil!": (STENCIL_SRC, STENCIL_JSON, STENCIL_JAST),
           "tri!": (TRI_SRC, TRI_JSON, TRI_JAST),
           "bad!": (REFUSED_SRC, REFUSED_JSON, REFUSED_JAST)}


@pytest.mark.parametrize("fname", sorted(KERNELS))
def test_kernel_trees(fname: str) -> None:
    _, expr_json, expected = KERNELS[fname]
    assert strip_lines(function_from_json(expr_json)) == strip_lines(expected)
    # the text Acc.jl hands over decodes to the same
    assert function_from_json(json.dumps(expr_json)) == function_from_json(expr_json)


def test_lines_come_from_the_line_number_nodes() -> None:
    """Each statement gets the line of the LineNumberNode before it, its expressions too;
    the function its ``function`` line (the first in its body); an elseif its own."""
    f = function_from_json(GESUMMV_JSON)
    assert f.line == 1 and {a.line for a in f.args} == {1}
    assert stmt_lines(f.body) == [("For", 2, None), ("Assign", 3, "S0"), ("For", 4, None),
                                  ("Assign", 5, None), ("Assign", 7, None), ("Return", 9, None)]
    inner = f.body[0].body[2]  # type: ignore[union-attr]
    assert inner.value.args[1].line == 7 and inner.target.indices[0].line == 7
    g = function_from_json(STENCIL_JSON)
    assert stmt_lines(g.body) == [("Assign", 2, None), ("For", 3, None), ("For", 3, None),
                                  ("If", 4, None), ("Assign", 5, None), ("If", 6, None),
                                  ("Assign", 7, None), ("Assign", 9, None)]
    assert function_from_json(REFUSED_JSON) == REFUSED_JAST
    assert [d.line for d in function_from_json(TRI_JSON).schedule] == [8, 9, 11]


def test_same_tree_as_the_tree_sitter_parser() -> None:
    """Both ways in give one tree for one source (lines aside: see strip_lines)."""
    parse = pytest.importorskip("frontends.julia.parse",
                                reason="frontends/julia/parse.py (tree-sitter path) missing")
    if not hasattr(parse, "parse_function"):
        pytest.skip("frontends/julia/parse.py has no parse_function(text, name)")
    for fname, (src, expr_json, _) in KERNELS.items():
        assert strip_lines(function_from_json(expr_json)) == strip_lines(
            parse.parse_function(src, fname)), fname


# ------------------------------------------------------------------- wrappers and text


def _fn(*body: Any, sig: Any = None) -> dict[str, Any]:
    """``function f(A, x) <body> end`` with ``body`` starting on line 2."""
    return ex("function", sig or call("f", sym("A"), sym("x")), ex("block", ln(1), ln(2), *body))


def test_accepted_wrappers_around_the_definition() -> None:
    fdef = GESUMMV_JSON
    expected = function_from_json(fdef)
    opts = ex("=", sym("target"), {"str": "cpu"})
    assert function_from_json(macro("@acc", 1, opts, fdef)) == expected
    dotted = ex("macrocall", ex(".", sym("Acc"), {"quote": sym("@acc")}), ln(1), fdef)
    assert function_from_json(dotted) == expected
    assert function_from_json(ex("toplevel", ln(1), fdef)) == expected
    returns_nothing = ex("function", ex("::", fdef["args"][0], sym("Nothing")), fdef["args"][1])
    assert function_from_json(returns_nothing) == expected


def test_the_exact_text_acc_jl_writes() -> None:
    """Compact JSON as ``Acc._json`` prints it: ``repr`` of a Float64 (``1.0e-5``) is a JSON
    number; Inf and NaN are strings; a Float32 ``2.5f0`` is written ``2.5e0``."""
    text = ('{"head":"function","args":[{"head":"call","args":[{"sym":"f!"},{"sym":"x"}]},'
            '{"head":"block","args":[{"line":3},{"line":4},{"head":"=","args":[{"head":"ref",'
            '"args":[{"sym":"x"},{"int":1}]},{"float":"-Inf","type":"Float64"}]},{"line":5},'
            '{"head":"=","args":[{"head":"ref","args":[{"sym":"x"},{"int":2}]},{"head":"call",'
            '"args":[{"sym":"+"},{"float":1.0e-5,"type":"Float64"},{"float":2.5e0,'
            '"type":"Float32"},{"bool":true}]}]}]}]}')
    f = function_from_json(text)
    assert f == j.Function("f!", (j.Arg("x", None, 3),), (
        j.Assign(j.Ref("x", (j.Num(1, "Int64", 4),), 4), "=", j.Num(float("-inf"), "Float64", 4),
                 4),
        j.Assign(j.Ref("x", (j.Num(2, "Int64", 5),), 5), "=", j.Call("+", (j.Call("+", (
            j.Num(1e-5, "Float64", 5), j.Num(2.5, "Float32", 5)), 5), j.Num(True, "Bool", 5)),
            5), 5)), (), 3)
    nan = function_from_json(_fn(ex("=", sym("x"), f64("NaN")))).body[0]
    assert nan.value.value != nan.value.value  # type: ignore[union-attr]


# ----------------------------------------------------------------- other constructs


def test_more_statement_forms() -> None:
    f = function_from_json(_fn(
        macro("@inbounds", 2, ex("block", ln(3), ex("=", sym("a"), i64(1)),
                                 ln(4), ex("=", sym("b"), i64(2)))),
        ln(5), ex("=", ex("tuple", sym("a"), sym("b")), ex("tuple", sym("b"), sym("a"))),
        ln(6), macro("@simd", 6, sym("ivdep"), ex("for", ex("=", _I, call(":", i64(1), i64(3))),
                                                  ex("block", ln(7), ex("*=", sym("a"), i64(2))))),
        ln(8), ex("=", sym("c"), ex("||", sym("p"), ex("&&", sym("q"), sym("r")))),
        ln(9), ex("=", sym("d"), ex("&&", sym("p"), sym("q"), sym("r"))),  # a flat chain
        ln(10), ex("if", sym("p"), ex("block", ln(11), ex("return", {"nothing": True}))),
        ln(12), ex("=", sym("e"), ex("if", sym("p"), ex("block", ln(12), i64(1)), i64(2))),
        ln(13), ex("=", sym("g"), ex("block", ln(13), {"bool": False}))))
    p, q, r = j.Name("p"), j.Name("q"), j.Name("r")
    assert strip_lines(f.body) == (
        j.Assign(name("a"), "=", n(1)), j.Assign(name("b"), "=", n(2)),
        j.Assign(j.TupleExpr((name("a"), name("b"))), "=", j.TupleExpr((name("b"), name("a")))),
        j.For("i", j.Range(n(1), None, n(3)), (j.Assign(name("a"), "*=", n(2)),)),
        j.Assign(name("c"), "=", j.Logic("||", p, j.Logic("&&", q, r))),
        j.Assign(name("d"), "=", j.Logic("&&", p, j.Logic("&&", q, r))),
        j.If(p, (j.Return(),), ()),
        j.Assign(name("e"), "=", j.Ternary(p, n(1), n(2))),
        j.Assign(name("g"), "=", n(False, "Bool")))
    assert [s.line for s in f.body] == [3, 4, 5, 6, 8, 9, 10, 12, 13]


def test_statements_kept_as_unsupported() -> None:
    f = function_from_json(_fn(
        ex("break"), ln(3), ex("for", ex("=", ex("tuple", sym("a"), sym("b")), sym("x")),
                               ex("block", ln(4), ex("continue"))),
        ln(5), ex("=", call("g", sym("y")), ex("block", ln(5), sym("y"))),
        ln(6), macro("@name", 6, sym("W"), ex("while", {"bool": True}, ex("block"))),
        ln(7), ex("for", ex("=", _I, sym("x")),
                  ex("block", ln(8), macro("@schedule", 8, call("tile", sym("S"))))),
        ln(9), macro("@time", 9, ex("=", sym("a"), i64(1))),
        ln(10), ex("&&", sym("p"), ex("=", sym("a"), i64(1)))))
    assert [(type(s).__name__, getattr(s, "construct", ""), s.line) for s in f.body] == [
        ("Unsupported", "break", 2),
        ("Unsupported", "for loop over (a, b)", 3),
        ("Unsupported", "nested function definition", 5),
        ("Unsupported", "while loop", 6),
        ("For", "", 7),
        ("Unsupported", "macro @time", 9)] + [("Unsupported", f.body[-1].construct, 10)]
    assert f.body[4].body == (j.Unsupported("@schedule inside a nested block", 8),)
    assert f.schedule == ()


def test_schedule_arguments() -> None:
    f = function_from_json(_fn(macro("@schedule", 2, call("shift", sym("S"), call("-", i64(1)),
                                                         f64(0.5)))))
    assert f.schedule == (j.Call("shift", (j.Name("S", 2), j.Num(-1, "Int64", 2),
                                           j.Num(0.5, "Float64", 2)), 2),)


@pytest.mark.parametrize(("stmt", "construct"), [
    (ex("=", sym("y"), ex("vect", i64(1), i64(2))), "array literal"),
    (ex("=", sym("y"), ref("A", sym(":"), i64(1))), "`:` (a whole dimension) in an index"),
    (ex("=", sym("y"), ref("A", sym("end"))), "`end` inside an index"),
    (ex("=", sym("y"), ex("call", sym("g"), ex("parameters", ex("kw", sym("k"), i64(1))),
                          sym("x"))), "keyword arguments in a call to g"),
    (ex("=", sym("y"), call(".+", sym("x"), i64(1))), "broadcast operator .+"),
    (ex("=", sym("y"), call("===", sym("x"), i64(1))), "operator ==="),
    (ex("=", sym("y"), call("√", sym("x"))), "operator √"),
    (ex("=", sym("y"), call("-", sym("x"), i64(1), i64(2))), "operator -"),
    (ex("=", sym("y"), ex(".", sym("g"), ex("tuple", sym("x")))), "broadcast call f.(...)"),
    (ex("=", sym("y"), ex(".", sym("A"), {"quote": sym("b")})), "field access"),
    (ex(".=", sym("A"), i64(0)), "broadcast assignment .="),
    (ex("%=", sym("x"), i64(2)), "update operator %="),
    (ex("=", sym("y"), {"str": "s"}), 'string literal "s"'),
    (ex("=", sym("y"), {"int": 255, "type": "UInt8"}), "literal of type UInt8"),
    (ex("=", sym("y"), call("sqrt", {"unknown": "Vector{Int64}"})), "literal Vector{Int64}"),
    (ex("=", sym("y"), ex("call", ex(".", sym("Base"), {"quote": sym("sqrt")}), sym("x"))),
     "call of Base.sqrt"),
    (ex("=", typed("y", sym("Float64")), i64(1)), "assignment to y::Float64"),
    (ex("=", sym("y"), ex("+=", sym("z"), i64(1))), "chained assignment other than"),
    (ex("=", ex("tuple", ref("A", i64(1)), sym("b")), sym("x")), "tuple assignment"),
    (ex("=", sym("y"), ex("if", sym("p"), i64(1), ex("elseif", sym("q"), i64(2)))),
     "if used as a value"),
    (macro("@name", 2, sym("S"), ex("return", sym("nothing"))), "@name on something other"),
    (macro("@schedule", 2, ex("=", sym("x"), i64(1))), "schedule directive"),
    (macro("@schedule", 2, call("tile", ref("A", i64(1)))), "schedule argument A[1]"),
    (ex("=", sym("y"), macro("@show", 2, sym("x"))), "macro call in an expression: @show"),
])
def test_refused_expressions_name_function_and_line(stmt: Any, construct: str) -> None:
    with pytest.raises(UnsupportedJulia) as info:
        function_from_json(_fn(stmt))
    assert info.value.function == "f" and info.value.line == 2
    assert construct in info.value.construct


@pytest.mark.parametrize(("sig", "construct"), [
    (ex("call", sym("f"), ex("parameters", ex("kw", sym("b"), i64(1))), sym("a")),
     "keyword arguments"),
    (call("f", ex("kw", sym("a"), i64(1))), "default argument value"),
    (call("f", ex("...", sym("a"))), "varargs"),
    (call("f", ex("::", sym("Int"))), "unnamed argument"),
    (call("f", typed("a", curly("Vector", ex("<:", sym("Real"))))), "type Vector{<:Real}"),
    (ex("where", call("f", typed("a", sym("T"))), sym("T")), "where clause"),
    (ex("::", call("f", sym("a")), sym("Int")), "return type annotation ::Int"),
])
def test_refused_signatures(sig: Any, construct: str) -> None:
    with pytest.raises(UnsupportedJulia) as info:
        function_from_json(_fn(sig=sig))
    assert info.value.line == 1 and construct in info.value.construct


def test_definitions_without_a_kernel_are_refused() -> None:
    short = ex("=", call("f", sym("A")), ex("block", ln(1), ex("=", ref("A", i64(1)), i64(0))))
    with pytest.raises(UnsupportedJulia, match="short-form function definition"):
        function_from_json(short)
    with pytest.raises(UnsupportedJulia, match="function without methods: function f end"):
        function_from_json(ex("function", sym("f")))


@pytest.mark.parametrize("bad", [
    "{not json", "[1, 2]", ex("call", sym("f")), {"weird": 1},
    ex("function", call("f", sym("a")), ex("block"), ex("block")),
    _fn(ex("for", ex("=", _I, call(":", i64(1), i64(2))))),
    _fn(ex("=", sym("y"), {"float": "lots", "type": "Float64"})),
    _fn(ex("=", sym("y"), {"int": 1.5})),
    _fn(ex("=", sym("y"), {"mystery": 1})),
    _fn({"line": "three"}),
    _fn(ex("=", sym("y"), call(":", i64(1)))),
    _fn(ex("for", ex("block", call("f", sym("i"))), ex("block"))),
    macro("@other", 1, GESUMMV_JSON),
    ex("toplevel", GESUMMV_JSON, GESUMMV_JSON),
])
def test_malformed_json_raises(bad: Any) -> None:
    with pytest.raises(JuliaFrontendError) as info:
        function_from_json(bad)
    assert not isinstance(info.value, UnsupportedJulia)


# ------------------------------------------- the bridge's reply, used as Acc.jl uses it


def _call_like_acc_jl(reply: dict[str, Any], args: list[Any]) -> int:
    """``Acc._launch`` in Python: the Int64 params (``size(args[k], d)`` or ``args[k]``),
    then one pointer per buffer (the array's column-major data, or a one-element copy of a
    scalar), in the listed order."""
    import ctypes

    import numpy as np

    cargs: list[Any] = []
    for p in reply["params"]:
        kind, k, *dim = p["from"]
        cargs.append(ctypes.c_int64(args[k - 1].shape[dim[0] - 1] if kind == "size"
                                    else args[k - 1]))
    keep = []
    for b in reply["buffers"]:
        a = args[b["arg"] - 1]
        dtype = {"Float64": np.float64, "Float32": np.float32}[b["eltype"]]
        a = np.array([a], dtype=dtype) if b.get("scalar") else a
        assert a.dtype == dtype and (a.ndim < 2 or a.flags.f_contiguous)
        keep.append(a)
        cargs.append(ctypes.c_void_p(a.ctypes.data))
    fn = getattr(ctypes.CDLL(reply["library"]), reply["symbol"])
    fn.restype = ctypes.c_int
    return int(fn(*cargs))


def test_bridge_reply_is_what_acc_jl_calls() -> None:
    """The contract Acc.jl relies on, played from Python (no Julia here): the JSON of an
    Expr, the argument type strings and ``_argvalues`` in; a reply whose entry point,
    called with the listed params and buffers, computes what the Julia code does."""
    bridge = pytest.importorskip("frontends.julia.bridge",
                                 reason="frontends/julia/bridge.py missing")
    import numpy as np

    n = 7
    types = ["Vector{Float64}", "Vector{Float64}", "Matrix{Float64}", "Vector{Float64}",
             "Int64"]
    reply = json.loads(bridge.compile_for_julia(
        json.dumps(GESUMMV_JSON), types, "cpu", True, json.dumps([[n], [n], [n, n], [n], n])))
    assert {"library", "symbol", "params", "buffers", "messages"} <= set(reply)
    assert reply["messages"]["1"].startswith("data-dependent index out of bounds")
    rng = np.random.default_rng(7)
    tmp, y, a, x = np.zeros(n), rng.random(n), np.asfortranarray(rng.random((n, n))), \
        rng.random(n)
    want_tmp, want_y = a @ x, 1.5 * (a @ x) + 1.2 * y + 0.5
    assert _call_like_acc_jl(reply, [tmp, y, a, x, n]) == 0
    np.testing.assert_allclose(tmp, want_tmp)
    np.testing.assert_allclose(y, want_y)

    scale = ex("function", call("scale!", typed("v", curly("Vector", sym("Float32"))),
                                typed("s", sym("Float32"))),
               ex("block", ln(1), ln(2), ex("for", ex("=", _I, call(":", i64(1), call(
                   "size", sym("v"), i64(1)))), ex("block", ln(3), ex(
                       "*=", ref("v", _I), sym("s"))))))
    reply = json.loads(bridge.compile_for_julia(
        json.dumps(scale), ["Vector{Float32}", "Float32"], "cpu", True, json.dumps([[5], None])))
    assert sorted((b["arg"], b["eltype"], b.get("scalar")) for b in reply["buffers"]) == [
        (1, "Float32", False), (2, "Float32", True)]
    v = np.arange(5, dtype=np.float32)
    assert _call_like_acc_jl(reply, [v, np.float32(2.5)]) == 0
    np.testing.assert_array_equal(v, np.arange(5, dtype=np.float32) * np.float32(2.5))


# -------------------------------------------------------------- the Julia package itself


@pytest.mark.skipif(shutil.which("julia") is None,
                    reason="no Julia runtime on this machine (none in PyPI/Debian registries)")
def test_julia_package_tests() -> None:
    """``Pkg.test()`` of Acc.jl, with PythonCall using this interpreter (so that
    ``frontends.julia.bridge`` imports) instead of installing its own Python."""
    env = dict(os.environ, JULIA_CONDAPKG_BACKEND="Null", JULIA_PYTHONCALL_EXE=sys.executable)
    done = subprocess.run(
        ["julia", f"--project={ACC_JL}", "-e", "using Pkg; Pkg.test()"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def test_chained_assignment_and_fastmath_same_tree_as_tree_sitter() -> None:
    """Chained assignments (with their temporary) and @fastmath, in a block, on one
    statement and on a value, read alike on both ways in."""
    from frontends.julia.parse import parse_function

    src = ("function f(A, x)\n    a = b = 0\n    @fastmath for i in 1:3\n"
           "        @name S A[i] = x[i] = i * 2.0\n    end\n    c = @fastmath a * b + 1\n"
           "end\n")
    body = ex("block", ln(1), ln(2), ex("=", sym("a"), ex("=", sym("b"), i64(0))), ln(3),
              macro("@fastmath", 3, ex("for", ex("=", sym("i"), call(":", i64(1), i64(3))),
                    ex("block", ln(4), macro("@name", 4, sym("S"), ex(
                        "=", ref("A", sym("i")), ex("=", ref("x", sym("i")),
                                                   call("*", sym("i"), f64(2.0)))))))),
              ln(6), ex("=", sym("c"), macro("@fastmath", 6, call(
                  "+", call("*", sym("a"), sym("b")), i64(1)))))
    got = function_from_json(ex("function", call("f", sym("A"), sym("x")), body))
    assert strip_lines(got) == strip_lines(parse_function(src, "f"))
    a0, a1, loop, c = got.body
    assert strip_lines((a0.target, a1.target, a0.value, a1.value)) == (
        name("b"), name("a"), n(0), n(0))
    tmp, s1, s2 = loop.body  # type: ignore[union-attr]
    assert tmp.target.id.startswith("#chain") and s1.value == tmp.target == s2.value
    assert [s.label for s in (tmp, s1, s2)] == ["S"] * 3
    assert all(s.fastmath for s in (tmp, s1, s2, c)) and not a0.fastmath


def test_storage_directives_from_julia_exprs() -> None:
    """``store_in(sum, q % 4, r)`` and ``pack(C4, C4t, 2, 1)`` as Acc.jl sends them, and
    ``return s`` (a value: the tree, which the bridge then refuses)."""
    fn = ex("function", call("f!", typed("s", curly("Vector", sym("Float64")))),
            ex("block", ln(1),
               ln(2), macro("@schedule", 2, ex(
                   "block", ln(3), call("store_in", sym("s"), call("%", sym("q"), i64(4)),
                                        sym("r")),
                   ln(4), call("pack", sym("C4"), sym("C4t"), i64(2), i64(1)))),
               ln(6), ex("return", ref("s", i64(1)))))
    f = function_from_json(fn)
    assert [(d.fn, len(d.args)) for d in f.schedule] == [("store_in", 3), ("pack", 4)]
    fold = f.schedule[0].args[1]
    assert isinstance(fold, j.Call) and fold.fn == "%" and fold.args[1] == j.Num(4, "Int64", 3)
    (ret,) = f.body
    assert isinstance(ret, j.Return) and isinstance(ret.value, j.Ref) and ret.line == 6
