"""The top level of a Julia source besides its functions, as every function of it sees
it: ``const`` values, and one-expression functions (helpers) whose calls the front-end
inlines (:mod:`.inline`). Read with :mod:`.parse`'s expression reader (imported as a
module: this module is imported by it)."""

from __future__ import annotations

from frontends.julia import jast
from frontends.julia import parse as P
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.tstree import Node, kids, line, text


def const(node: Node) -> list[tuple[str, jast.Expr]]:
    """``const N = 64`` / ``const A, B = 1, 2``: names and their values' expressions (the
    translator decides which values it can use: numbers, and Ints computed from them).
    Other forms are skipped, as other top-level statements are, until a function reads
    the name (then it is an unknown name, refused with its line)."""
    ctx = P._Ctx()
    named = kids(node)
    if len(named) != 1 or named[0].type != "assignment":
        return []
    target, op, value = kids(named[0])
    if text(op) != "=":
        return []
    try:
        if target.type == "typed_expression":  # const N::Float64 = 64 is 64.0
            target, typ = kids(target)
            if target.type == "identifier" and typ.type == "identifier":
                v = P._expr(value, ctx)
                t = text(typ)
                return [(text(target), v if t in ("Int", "Int64") else
                         jast.Call(t, (v,), line(typ)))]
            return []
        if target.type == "identifier":
            return [(text(target), P._expr(value, ctx))]
        if target.type in ("open_tuple", "tuple_expression") and \
                value.type in ("open_tuple", "tuple_expression") and \
                len(kids(target)) == len(kids(value)) and \
                all(t.type == "identifier" for t in kids(target)):
            return [(text(t), P._expr(v, ctx)) for t, v in zip(kids(target), kids(value),
                                                              strict=True)]
    except UnsupportedJulia:
        pass  # a const the front-end could not read anyway (a string, an array, ...)
    return []


def helper(node: Node) -> jast.Helper | None:
    """``f(a, b) = expr``, ``f(a::T)::R = expr`` or ``function f(a, b) return expr end``
    (one statement, a returned or last expression) as a Helper; None for anything else,
    which is then an ordinary function (or refused as one)."""
    if node.type == "assignment":
        target, op, value = kids(node)
        if text(op) != "=":
            return None
        body: Node | None = value
        sig = target
    elif node.type == "function_definition":
        named = kids(node)
        if not named or named[0].type != "signature" or len(named) != 2:
            return None
        sig = kids(named[0])[0]
        body = named[1]
        if body.type == "return_statement":
            body = kids(body)[0] if kids(body) else None
    else:
        return None
    if sig.type == "typed_expression":  # f(x)::Float64: Julia converts; types are ignored
        sig = kids(sig)[0]
    if body is None or sig.type != "call_expression" or kids(sig)[0].type != "identifier":
        return None
    params = []
    for a in kids(kids(sig)[1]):
        if a.type == "typed_expression":
            a = kids(a)[0]
        if a.type != "identifier":
            return None
        params.append(text(a))
    ctx = P._Ctx(function=text(kids(sig)[0]))
    try:
        value = P._expr(body, ctx)
    except UnsupportedJulia:
        return None
    return jast.Helper(text(kids(sig)[0]), tuple(params), value, line(node))
