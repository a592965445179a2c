"""Julia source text to :mod:`.jast`, with tree-sitter: the way in that needs no Julia runtime.

The mapping follows jast's conventions (Julia's own ``Expr``), so this path and the juliacall
path give equal trees for the same source. Where tree-sitter-julia's tree differs from Julia's
parse we rebuild Julia's shape: comparison chains come out left-nested (``(a < b) <= c``) and
are flattened into one ``Compare``; ``&&``/``||`` and ``^`` come out left-nested and are
re-nested to the right, as Julia associates them; ``-2`` is a literal, as in Julia. Where the
grammar's precedence is wrong and cannot be repaired locally (``2x^2``, read as ``(2x)^2``)
we refuse instead of guessing. Everything else we do not translate is refused by name: a
statement kind becomes :class:`jast.Unsupported` (the translator reports it with the
function's name), an expression raises :class:`UnsupportedJulia` right here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import cast

from frontends.julia import jast, toplevel
from frontends.julia.errors import JuliaFrontendError, UnsupportedJulia
from frontends.julia.tstree import BINOPS, COMMENTS, Node
from frontends.julia.tstree import check_syntax as _check_syntax
from frontends.julia.tstree import kids as _kids
from frontends.julia.tstree import line as _line
from frontends.julia.tstree import parse_repaired as _parse_repaired
from frontends.julia.tstree import snippet as _snippet
from frontends.julia.tstree import text as _text

_UNOPS = frozenset({"-", "+", "!"})
_CMPOPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!=",
           "≤": "<=", "≥": ">=", "≠": "!="}
_LOGIC = frozenset({"&&", "||"})
_UPDATE_OPS = frozenset({"+=", "-=", "*=", "/="})
_TRANSPARENT_MACROS = frozenset({"inbounds", "simd"})
_INT64_MAX = 2**63 - 1

# Statement kinds we recognise but do not translate: kept as jast.Unsupported.
_UNSUPPORTED_STMTS = {
    "while_statement": "while loop", "break_statement": "break",
    "continue_statement": "continue", "try_statement": "try block",
    "let_statement": "let block", "function_definition": "nested function definition",
    "global_statement": "global declaration", "local_statement": "local declaration",
    "const_statement": "const declaration", "macro_definition": "macro definition",
    "struct_definition": "struct definition", "module_definition": "module definition",
    "using_statement": "using", "import_statement": "import",
    "export_statement": "export", "quote_statement": "quote block",
}
# Expression kinds we refuse whose node type alone would not say it well; the others are
# named by their node type ("string literal", "splat expression", ...).
_EXPR_NAMES = {
    "broadcast_call_expression": "broadcast call f.(...)", "field_expression": "field access",
    "for_clause": "generator", "arrow_function_expression": "anonymous function",
    "compound_statement": "begin ... end block used as an expression",
    "macrocall_expression": "macro call in an expression", "vector_expression": "array literal",
    "named_argument": "keyword argument", "assignment": "assignment used as an expression",
    "operator": "operator used as a value", "adjoint_expression": "adjoint (')",
}


@dataclasses.dataclass
class _Ctx:
    """Per-function state: the name for error messages and the schedule collected so far."""

    function: str | None = None
    schedule: list[jast.Call] = dataclasses.field(default_factory=list)
    chains: int = 0  # chained assignments so far

    def refuse(self, node: Node, construct: str) -> UnsupportedJulia:
        return UnsupportedJulia(_line(node), construct, self.function)


# ---------------------------------------------------------------- top level and signature


def parse_source(text: str) -> list[jast.Function]:
    """Every top-level ``function ... end`` of ``text`` (also under macros such as ``@acc``),
    in source order. Other top-level statements are skipped, except ``const``s and
    one-expression functions (``sq(x) = x * x``), which every function gets (a call of
    one is inlined); a short-form definition under ``@acc`` is refused."""
    root, text = _parse_repaired(text)
    _check_syntax(root, text)
    out = []
    consts: list[tuple[str, jast.Expr]] = []
    helpers: list[jast.Helper] = []
    for node in _kids(root):
        macros = set()
        while node.type == "macrocall_expression":  # @acc function ..., @inline @acc ...
            args = _raw_macro_args(node)
            if not args:
                break
            macros.add(_macro_name(node))
            node = args[-1]
        helper = toplevel.helper(node)
        if helper is not None:
            helpers.append(helper)
        if node.type == "function_definition":
            fn = _function(node, quiet=helper is not None)
            if fn is not None and "fastmath" in macros:
                fn = dataclasses.replace(fn, body=jast.mark_fastmath(fn.body))
            if fn is not None:
                out.append(fn)
        elif node.type == "const_statement":
            consts.extend(toplevel.const(node))
        elif node.type == "assignment" and _is_short_def(_kids(node)[0]) and \
                (helper is None or "acc" in macros):
            raise UnsupportedJulia(
                _line(node), f"short-form function definition {_snippet(node)}; "
                "write it as function ... end")
    # a function sees every module-level const and helper (Julia resolves them at run time)
    return [dataclasses.replace(f, consts=tuple(consts), helpers=tuple(
        h for h in helpers if h.name != f.name)) for f in out]


def parse_function(text: str, name: str) -> jast.Function:
    """The one top-level function called ``name``; an error lists the names there are."""
    funcs = parse_source(text)
    found = [f for f in funcs if f.name == name]
    if len(found) == 1:
        return found[0]
    if found:
        lines = ", ".join(str(f.line) for f in found)
        raise JuliaFrontendError(
            f"function {name!r} has {len(found)} methods (lines {lines}); only one is supported")
    available = ", ".join(sorted({f.name for f in funcs})) or "none"
    raise JuliaFrontendError(f"no function {name!r} in the source; available: {available}")


def _is_short_def(target: Node) -> bool:
    while target.type in ("where_expression", "typed_expression"):
        target = _kids(target)[0]
    return target.type == "call_expression"


def _function(node: Node, quiet: bool = False) -> jast.Function | None:
    """The function ``node`` defines; with ``quiet`` (it is a helper too), None instead of
    refusing what an @acc function may not have (a return type, a returned value)."""
    if quiet:
        try:
            return _function(node)
        except UnsupportedJulia:
            return None
    kids = _kids(node)
    ctx = _Ctx()
    sig = _kids(kids[0])[0] if kids and kids[0].type == "signature" else None
    if sig is None:
        raise ctx.refuse(node, "function definition without a signature")
    if sig.type == "typed_expression":  # function f(x)::T
        call, rtype = _kids(sig)
        if _text(rtype) != "Nothing":
            raise ctx.refuse(rtype, f"return type annotation ::{_text(rtype)}")
        sig = call
    if sig.type == "where_expression":
        raise ctx.refuse(sig, "where clause")
    if sig.type != "call_expression":
        raise ctx.refuse(sig, f"function without methods: {_snippet(sig)}")
    callee, arglist = _kids(sig)[:2]
    if callee.type != "identifier":
        raise ctx.refuse(callee, f"function name {_text(callee)}")
    ctx.function = _text(callee)
    args = tuple(_args(arglist, ctx))
    body = _stmts(kids[1:], ctx, top=True)
    return jast.Function(ctx.function, args, body, tuple(ctx.schedule), _line(node))


def _args(arglist: Node, ctx: _Ctx) -> Iterable[jast.Arg]:
    after_semicolon = False
    for child in arglist.children:
        if child.type == ";":
            after_semicolon = True
        if not child.is_named or child.type in COMMENTS:
            continue
        if after_semicolon:
            raise ctx.refuse(child, f"keyword arguments: {_snippet(child)}")
        if child.type == "identifier":
            yield jast.Arg(_text(child), None, _line(child))
        elif child.type == "typed_expression" and _kids(child)[0].type == "identifier":
            name, typ = _kids(child)
            yield jast.Arg(_text(name), _type(typ, ctx), _line(child))
        else:
            what = {"named_argument": "default argument value", "splat_expression": "varargs",
                    "where_expression": "where clause",
                    "unary_typed_expression": "unnamed argument"}.get(child.type, "argument")
            raise ctx.refuse(child, f"{what}: {_snippet(child)}")


def _type(node: Node, ctx: _Ctx) -> jast.TypeRef:
    if node.type == "identifier":
        return jast.TypeRef(_text(node))
    if node.type == "parametrized_type_expression":
        name, curly = _kids(node)
        if name.type == "identifier" and curly.type == "curly_expression":
            params: list[jast.TypeRef | int] = []
            for p in _kids(curly):
                if p.type == "integer_literal":
                    params.append(int(_int_literal(p, ctx).value))
                else:
                    params.append(_type(p, ctx))
            return jast.TypeRef(_text(name), tuple(params))
    raise ctx.refuse(node, f"type {_snippet(node)}")


# ---------------------------------------------------------------------------- statements


def _stmts(nodes: Iterable[Node | _Nested], ctx: _Ctx, top: bool = False
           ) -> tuple[jast.Stmt, ...]:
    return tuple(s for node in nodes for s in _stmt(node, ctx, top))


def _stmt(node: Node | _Nested, ctx: _Ctx, top: bool) -> list[jast.Stmt]:
    """One statement as zero (``nothing``, ``@schedule``), one, or several (a spliced
    ``@inbounds begin ... end``) jast statements. ``top``: directly in the function body."""
    if isinstance(node, _Nested):
        return _macro_stmt(node.node, ctx, top, node.extra)
    t, line = node.type, _line(node)
    if t in _STMT_KINDS:
        got = _STMT_KINDS[t](node, ctx)
        return got if isinstance(got, list) else [got]
    if t == "return_statement":
        value = _kids(node)
        if not value or (value[0].type == "identifier" and _text(value[0]) == "nothing"):
            return [jast.Return(line)]
        got = _expr(value[0], ctx)
        if isinstance(got, jast.TupleExpr):
            return [jast.Unsupported("return of a tuple (return one value or one array)",
                                     line)]
        return [jast.Return(line, got)]
    if t == "macrocall_expression":
        return _macro_stmt(node, ctx, top)
    if t == "compound_statement":  # a bare begin ... end only groups statements
        return list(_stmts(_kids(node), ctx, top))
    if t in _UNSUPPORTED_STMTS:
        return [jast.Unsupported(_UNSUPPORTED_STMTS[t], line)]
    if t == "call_expression" and any(c.type == "do_clause" for c in node.children):
        return [jast.Unsupported("do-block", line)]
    if t == "identifier" and _text(node) == "nothing":
        return []
    callee = _kids(node)[0] if t == "call_expression" else None
    what = f"{_text(callee)}(...)" if callee and callee.type == "identifier" else _snippet(node)
    return [jast.Unsupported(f"expression statement: {what}", line)]


def _assign(node: Node, ctx: _Ctx) -> list[jast.Stmt]:
    """``x = e``, ``A[i, j] = e``, ``a, b = e``, the update forms ``x += e`` and chained
    ``a = b = e`` (several statements, :func:`jast.chain`)."""
    target, op_node, value = _kids(node)
    op, line = _text(op_node), _line(node)
    if op == "=" and _is_short_def(target):
        return [jast.Unsupported("nested function definition", line)]
    if op.startswith("."):
        raise ctx.refuse(op_node, f"broadcast assignment {op}")
    if op != "=" and op not in _UPDATE_OPS:
        raise ctx.refuse(op_node, f"update operator {op}")
    if value.type in ("assignment", "compound_assignment_expression"):
        return _chained(node, ctx)
    if op == "=" and value.type == "macrocall_expression" and _macro_name(value) == \
            "fastmath" and len(_raw_macro_args(value)) == 1:  # x = @fastmath a * b + c
        return list(jast.mark_fastmath((jast.Assign(
            _lhs(target, op, ctx), op, _expr(_raw_macro_args(value)[0], ctx), line),)))
    return [jast.Assign(_lhs(target, op, ctx), op, _expr(value, ctx), line)]


def _chained(node: Node, ctx: _Ctx) -> list[jast.Stmt]:
    """``a = b[i] = e``: only plain ``=`` and single targets (``a = b += 1`` is refused)."""
    targets: list[jast.Name | jast.Ref] = []
    while node.type in ("assignment", "compound_assignment_expression"):
        target, op_node, value = _kids(node)
        if _text(op_node) != "=" or target.type not in ("identifier", "index_expression"):
            raise ctx.refuse(node, f"chained assignment other than a = b = value: "
                             f"{_snippet(node)}")
        targets.append(cast("jast.Name | jast.Ref", _expr(target, ctx)))
        node = value
    ctx.chains += 1  # tells apart two chained assignments on one line
    return jast.chain(targets, _expr(node, ctx), targets[0].line, ctx.chains)


def _lhs(target: Node, op: str, ctx: _Ctx) -> jast.Name | jast.Ref | jast.TupleExpr:
    lhs: jast.Name | jast.Ref | jast.TupleExpr
    if op == "=" and target.type in ("open_tuple", "tuple_expression"):
        bad = [i for i in _kids(target) if i.type != "identifier"]
        if bad:
            raise ctx.refuse(bad[0], f"tuple assignment to {_snippet(bad[0])}")
        lhs = jast.TupleExpr(tuple(jast.Name(_text(i), _line(i)) for i in _kids(target)),
                             _line(target))
    elif target.type in ("identifier", "index_expression"):
        lhs = cast("jast.Name | jast.Ref", _expr(target, ctx))
    else:
        raise ctx.refuse(target, f"assignment to {_snippet(target)}")
    return lhs


def _for(node: Node, ctx: _Ctx) -> jast.Stmt:
    """``for i in r, j in s`` becomes two nested For, the first binding outermost."""
    bindings = [c for c in _kids(node) if c.type == "for_binding"]
    loops: list[tuple[str, jast.Expr, int]] = []
    for b in bindings:
        kids = _kids(b)
        if any(c.type == "outer" for c in b.children):
            return jast.Unsupported("for outer", _line(node))
        if len(kids) != 3 or kids[0].type != "identifier":
            return jast.Unsupported(f"for loop over {_snippet(kids[0])}", _line(node))
        loops.append((_text(kids[0]), _expr(kids[2], ctx), _line(b)))
    body = _stmts((c for c in _kids(node) if c.type != "for_binding"), ctx)
    for i, (var, it, line) in reversed(list(enumerate(loops))):
        body = (jast.For(var, it, body, _line(node) if i == 0 else line),)
    return body[0]


def _if(node: Node, ctx: _Ctx, orelse: tuple[jast.Stmt, ...] = ()) -> jast.If:
    """``if``/``elseif``/``else``: each ``elseif`` is an If alone in its parent's orelse.
    Called on an ``elseif_clause`` too, with the orelse built from the clauses after it."""
    cond, *rest = _kids(node)  # the condition is the first named child
    alts = [k for k in rest if k.type in ("elseif_clause", "else_clause")]
    for alt in reversed(alts):
        orelse = (_stmts(_kids(alt), ctx) if alt.type == "else_clause"
                  else (_if(alt, ctx, orelse),))
    then = _stmts((k for k in rest if k.type not in ("elseif_clause", "else_clause")), ctx)
    return jast.If(_expr(cond, ctx), then, orelse, _line(node))


# named_argument: the assignment in @inbounds(x[i] = e)
_STMT_KINDS: dict[str, Callable[[Node, _Ctx], jast.Stmt | list[jast.Stmt]]] = {
    "assignment": _assign, "named_argument": _assign,
    "compound_assignment_expression": _assign, "for_statement": _for, "if_statement": _if}


def _macro_name(node: Node) -> str:
    ident = next(c for c in node.children if c.type == "macro_identifier")
    return _text(ident).lstrip("@")


def _raw_macro_args(node: Node) -> list[Node]:
    """The arguments of ``@m a b`` or of ``@m(a, b)``, as tree-sitter groups them."""
    for c in node.children:
        if c.type in ("macro_argument_list", "argument_list"):
            return _kids(c)
    return []


@dataclasses.dataclass(frozen=True)
class _Nested:
    """A macro call written without parentheses, with the arguments after it that Julia
    gives it but tree-sitter gives its enclosing macro (``@inbounds @name S x = 1`` comes
    out as ``@inbounds (@name S) (x = 1)``)."""

    node: Node
    extra: tuple[Node, ...]


def _macro_args(node: Node, extra: tuple[Node, ...] = ()) -> list[Node | _Nested]:
    args: list[Node | _Nested] = [*_raw_macro_args(node), *extra]
    for i, a in enumerate(args[:-1]):
        if isinstance(a, Node) and a.type == "macrocall_expression" and any(
                c.type == "macro_argument_list" for c in a.children):
            rest = tuple(x for x in args[i + 1:] if isinstance(x, Node))
            return [*args[:i], _Nested(a, rest)]
    return args


def _macro_stmt(node: Node, ctx: _Ctx, top: bool,
                extra: tuple[Node, ...] = ()) -> list[jast.Stmt]:
    name, args, line = _macro_name(node), _macro_args(node, extra), _line(node)
    if name in _TRANSPARENT_MACROS:
        if name == "simd" and args and _text(_node(args[0])) == "ivdep":
            args = args[1:]
        return list(_stmts(args, ctx, top))
    if name == "fastmath":
        return list(jast.mark_fastmath(_stmts(args, ctx, top)))
    if name == "name":
        if len(args) != 2 or _node(args[0]).type != "identifier":
            raise ctx.refuse(node, "@name needs a label and a statement: @name S stmt")
        inner = _stmt(args[1], ctx, top=False)
        if len(inner) == 1 and isinstance(inner[0], jast.Unsupported):
            return inner  # refused anyway, with its own construct
        chained = len(inner) > 1 and _node(args[1]).type == "assignment"
        if not inner or (len(inner) > 1 and not chained) or \
                not isinstance(inner[0], jast.Assign | jast.For | jast.If):
            raise ctx.refuse(node, f"@name on {_snippet(_node(args[1]))}: it must label one "
                             "assignment, for loop or if")
        label = _text(_node(args[0]))
        return [dataclasses.replace(x, label=label) for x in inner]  # type: ignore[arg-type]
    if name == "schedule":
        if not top:
            return [jast.Unsupported("@schedule inside a nested block", line)]
        directives = [_node(a) for a in args]
        if len(args) == 1 and directives[0].type == "compound_statement":
            directives = _kids(directives[0])
        ctx.schedule.extend(_directive(d, ctx) for d in directives)
        return []
    return [jast.Unsupported(f"macro @{name}", line)]


def _node(item: Node | _Nested) -> Node:
    return item.node if isinstance(item, _Nested) else item


def _directive(node: Node, ctx: _Ctx) -> jast.Call:
    """A schedule command ``cmd(args...)``: its arguments are names and numbers only (and
    ``loop % k``, a folded loop of ``store_in``, or ``dim % k``, a blocked dim of ``pack``)."""
    kids = _kids(node)
    if node.type != "call_expression" or kids[0].type != "identifier" or len(kids) != 2:
        raise ctx.refuse(node, f"schedule directive {_snippet(node)} (must be a call)")
    args = _call_args(kids[1], ctx)
    for a, a_node in zip(args, _kids(kids[1]), strict=True):
        if not jast.is_directive_arg(a):
            raise ctx.refuse(a_node, f"schedule argument {_snippet(a_node)} (must be a name, "
                             "a number, loop % k, dim % k or an Int expression of "
                             "vector_lanes(T), vector_registers() and cache_bytes(level))")
    return jast.Call(_text(kids[0]), args, _line(node))


# --------------------------------------------------------------------------- expressions


def _expr(node: Node, ctx: _Ctx) -> jast.Expr:
    t, line = node.type, _line(node)
    if t == "identifier":
        if _text(node) == "end":
            raise ctx.refuse(node, "`end` inside an index")
        return jast.Name(_text(node), line)
    if t == "integer_literal":
        return _int_literal(node, ctx)
    if t == "float_literal":
        return _float_literal(node, ctx)
    if t == "boolean_literal":
        return jast.Num(_text(node) == "true", "Bool", line)
    if t == "parenthesized_expression":
        kids = _kids(node)
        if len(kids) != 1:
            raise ctx.refuse(node, f"block in parentheses: {_snippet(node)}")
        return _expr(kids[0], ctx)
    if t in ("tuple_expression", "open_tuple"):
        if any(k.type == "named_field" for k in _kids(node)):
            raise ctx.refuse(node, f"named tuple: {_snippet(node)}")
        return jast.TupleExpr(tuple(_expr(k, ctx) for k in _kids(node)), line)
    if t == "index_expression":
        return _ref(node, ctx)
    if t == "call_expression":
        return _call(node, ctx)
    if t == "binary_expression":
        return _binary(node, ctx)
    if t == "unary_expression":
        return _unary(node, ctx)
    if t == "range_expression":
        start, stop = _kids(node)
        if start.type != "range_expression":
            return jast.Range(_expr(start, ctx), None, _expr(stop, ctx), line)
        start, step = _kids(start)
        if start.type == "range_expression":
            raise ctx.refuse(node, f"range with more than three parts: {_snippet(node)}")
        return jast.Range(_expr(start, ctx), _expr(step, ctx), _expr(stop, ctx), line)
    if t == "ternary_expression":
        c, a, b = _kids(node)
        return jast.Ternary(_expr(c, ctx), _expr(a, ctx), _expr(b, ctx), line)
    if t == "juxtaposition_expression":  # 2x is 2 * x, as in Julia
        a, b = _kids(node)
        return jast.Call("*", (_expr(a, ctx), _expr(b, ctx)), line)
    what = _EXPR_NAMES.get(t, t.replace("_", " "))
    raise ctx.refuse(node, f"{what}: {_snippet(node)}")


def _int_literal(node: Node, ctx: _Ctx) -> jast.Num:
    text = _text(node).replace("_", "")
    if text[:2].lower() in ("0x", "0b", "0o"):  # Julia makes these unsigned (UInt8, ...)
        raise ctx.refuse(node, f"unsigned integer literal {text}")
    if int(text) > _INT64_MAX:
        raise ctx.refuse(node, f"integer literal {text} does not fit in Int64")
    return jast.Num(int(text), "Int64", _line(node))


def _float_literal(node: Node, ctx: _Ctx) -> jast.Num:
    """``1.0``/``1e-3``/``.5`` are Float64, ``1f0``/``2.5f-3`` Float32, ``0x1p3`` a hex
    Float64. The value stays a Python float: what the JSON path gets from Julia too."""
    text = _text(node).replace("_", "")
    try:
        if text[:2].lower() == "0x":
            return jast.Num(float.fromhex(text), "Float64", _line(node))
        f32 = "f" in text
        return jast.Num(float(text.replace("f", "e")), "Float32" if f32 else "Float64",
                        _line(node))
    except ValueError:
        raise ctx.refuse(node, f"number literal {text}") from None


def _ref(node: Node, ctx: _Ctx) -> jast.Ref:
    array, index = _kids(node)
    if array.type != "identifier":
        raise ctx.refuse(node, f"indexing of {_snippet(array)} (only a named array can be "
                         "indexed)")
    if index.type != "vector_expression":
        raise ctx.refuse(index, f"index {_snippet(index)}")
    items = []
    for k in _kids(index):
        if k.type == "operator" and _text(k) == ":":
            raise ctx.refuse(k, f"`:` (a whole dimension) in an index: {_snippet(node)}")
        items.append(_expr(k, ctx))
    return jast.Ref(_text(array), tuple(items), _line(node))


def _call_args(arglist: Node, ctx: _Ctx) -> tuple[jast.Expr, ...]:
    if any(c.type == ";" for c in arglist.children):
        raise ctx.refuse(arglist, f"keyword arguments: {_snippet(arglist)}")
    return tuple(_expr(k, ctx) for k in _kids(arglist))


def _call(node: Node, ctx: _Ctx) -> jast.Expr:
    kids, line = _kids(node), _line(node)
    if any(k.type == "do_clause" for k in kids):
        raise ctx.refuse(node, f"do-block: {_snippet(node)}")
    callee, arglist = kids[0], kids[1]
    args = _call_args(arglist, ctx)
    if callee.type == "identifier":
        name = _text(callee)
        if name == "ifelse" and len(args) == 3:
            return jast.Ternary(*args, line=line)
        return jast.Call(name, args, line)
    if callee.type == "operator":  # -(x), !(a < b), +(a, b, c)
        op = _text(callee)
        if op in _UNOPS and len(args) == 1:
            return jast.Call(op, args, line)
        if op in _CMPOPS and len(args) == 2:
            return jast.Compare((_CMPOPS[op],), args, line)
        if op in BINOPS and (len(args) == 2 or (op in "+*" and len(args) > 2)):
            return functools.reduce(lambda a, b: jast.Call(op, (a, b), line), args)
    raise ctx.refuse(node, f"call of {_snippet(callee)}: {_snippet(node)}")


def _chain(node: Node, same: frozenset[str] | dict[str, str]) -> tuple[list[Node], list[str]]:
    """Operands and operators of a left-nested run of binary operators from ``same``, as
    tree-sitter builds ``a op b op c``; parentheses stop the run (they are their own node)."""
    operands: list[Node] = []
    ops: list[str] = []
    while node.type == "binary_expression" and _text(_kids(node)[1]) in same:
        left, op, right = _kids(node)
        operands.append(right)
        ops.append(_text(op))
        node = left
    operands.append(node)
    return operands[::-1], ops[::-1]


def _binary(node: Node, ctx: _Ctx) -> jast.Expr:
    left, op_node, right = _kids(node)
    op, line = _text(op_node), _line(node)
    if op in _CMPOPS:  # 0 < i <= n: one chained comparison, as in Julia
        nodes, ops = _chain(node, _CMPOPS)
        return jast.Compare(tuple(_CMPOPS[o] for o in ops),
                            tuple(_expr(n, ctx) for n in nodes), line)
    if op in _LOGIC or op == "^":  # right-associative in Julia, left-nested by tree-sitter
        nodes, _ = _chain(node, frozenset({op}))
        if op == "^" and any(n.type == "juxtaposition_expression" for n in nodes[:-1]):
            raise ctx.refuse(node, f"implicit multiplication before ^ in {_snippet(node)}: "
                             "write 2 * x^2 or (2x)^2")
        exprs = [_expr(n, ctx) for n in nodes]
        result = exprs[-1]
        for n, e in zip(reversed(nodes[:-1]), reversed(exprs[:-1]), strict=True):
            result = (jast.Logic(op, e, result, _line(n)) if op in _LOGIC
                      else jast.Call(op, (e, result), _line(n)))
        return result
    if op.startswith("."):
        raise ctx.refuse(op_node, f"broadcast operator {op}")
    if op not in BINOPS:
        raise ctx.refuse(op_node, f"operator {op}")
    return jast.Call(op, (_expr(left, ctx), _expr(right, ctx)), line)


def _unary(node: Node, ctx: _Ctx) -> jast.Expr:
    op_node, operand = _kids(node)
    op = _text(op_node)
    if op == "-" and operand.type in ("integer_literal", "float_literal"):
        num = _expr(operand, ctx)  # -1 is a literal in Julia's Expr, not a call
        assert isinstance(num, jast.Num)
        return jast.Num(-num.value, num.type, _line(node))
    if op.startswith("."):
        raise ctx.refuse(op_node, f"broadcast operator {op}")
    if op not in _UNOPS:
        raise ctx.refuse(op_node, f"unary operator {op}")
    return jast.Call(op, (_expr(operand, ctx),), _line(node))
