"""Julia's own ``Expr`` of an ``@acc`` function, as JSON from ``Acc.jl``, to :mod:`.jast`.

With a Julia runtime the ``@acc`` macro sees the function already parsed by Julia; rather
than printing it back to source and re-parsing it with tree-sitter, ``Acc.jl`` serializes the
``Expr`` itself and this module maps it onto the jast that :mod:`.parse` builds from text.
The JSON format (one object per value, written by ``Acc._json`` in ``Acc.jl/src/Acc.jl``):

- ``Expr``           ``{"head": "<head>", "args": [...]}``
- ``Symbol``         ``{"sym": "<name>"}`` (a ``GlobalRef`` too: its name only)
- ``LineNumberNode`` ``{"line": n}``;  ``QuoteNode`` ``{"quote": <value>}``
- integers          ``{"int": n}``, with ``"type"`` when not Int64 (``0xff`` is a UInt8)
- floats            ``{"float": x, "type": "Float64" | "Float32"}``; ``x`` may be the
  strings ``"Inf"``, ``"-Inf"``, ``"NaN"`` (JSON has no such numbers)
- ``Bool`` ``{"bool": b}``, ``String`` ``{"str": s}``, ``nothing`` ``{"nothing": true}``,
  anything else ``{"unknown": "<its type>"}``

Refusals follow :mod:`.parse` so that both paths treat a construct alike: a statement kind
we do not translate (``while``, ``break``, a macro) becomes :class:`jast.Unsupported` (the
translator reports it with the function's name); an expression, a signature or a schedule
directive we do not translate raises :class:`UnsupportedJulia` here, with the function's
name. JSON that ``Acc.jl`` would never write for any Julia ``Expr`` (a wrong key, a ``for``
without a body) is a bug between the two sides and raises :class:`JuliaFrontendError`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NoReturn

from frontends.julia import jast
from frontends.julia.errors import JuliaFrontendError, UnsupportedJulia
from frontends.julia.fromjson_nodes import (
    _BINOPS,
    _COMPARE,
    _EXPR_HEADS,
    _LITERAL_TYPES,
    _NARY,
    _SPECIAL_FLOATS,
    _STATEMENT_HEADS,
    _UNOPS,
    _UPDATE,
    Node,
    _brief,
    _dotted,
    _head,
    _is_line,
    _is_nothing,
    _malformed,
    _sym,
)


class _Reader:
    """One function's conversion. Remembers the function's name (for errors), the
    ``@schedule`` directives found, and how deep in loops/ifs the current statement is
    (``@schedule`` is only read directly in the function body)."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.schedule: list[jast.Call] = []
        self.depth = 0
        self.fastmath = False
        self.chains = 0

    def refuse(self, line: int, construct: str) -> NoReturn:
        raise UnsupportedJulia(line, construct, self.name)

    def args(self, node: Node, line: int, count: int | None = None) -> list[Node]:
        args = node.get("args") if isinstance(node, dict) else None
        if not isinstance(args, list) or (count is not None and len(args) != count):
            n = "an 'args' list" if count is None else f"{count} args"
            raise _malformed(node, line, f"a `{_head(node)}` Expr with {n}")
        return args

    def line_of(self, node: Node, line: int) -> int:
        value = node["line"]
        if not isinstance(value, int) or isinstance(value, bool):
            raise _malformed(node, line, "a LineNumberNode with an integer line")
        return value

    def macro_name(self, node: Node, line: int) -> str:
        """A macro's name without its module (``Base.@inbounds`` is ``@inbounds``)."""
        name = _dotted(node)
        if name is None:
            raise _malformed(node, line, "a macro name")
        return name.rsplit(".", 1)[-1]

    # -- the function ------------------------------------------------------------------

    def function(self, node: Node) -> jast.Function:
        node = self.unwrap(node)
        if len(self.args(node, 0)) == 1:
            self.refuse(0, f"function without methods: function {_brief(node['args'][0])} end")
        sig, body = self.args(node, 0, 2)
        if _head(body) != "block":
            raise _malformed(body, 0, "the function body (a block)")
        # Julia puts the `function` line first in the body, then one before each statement
        first = next((a for a in self.args(body, 0) if _is_line(a)), None)
        line = self.line_of(first, 0) if first is not None else 0
        if _head(sig) == "::":  # function f(x)::Nothing
            sig, rtype = self.args(sig, line, 2)
            if _sym(rtype) != "Nothing":
                self.refuse(line, f"return type annotation ::{_dotted(rtype) or '...'}")
        if _head(sig) == "where":
            self.refuse(line, "where clause")
        sig_args = self.args(sig, line) if _head(sig) == "call" else []
        if not sig_args or _sym(sig_args[0]) is None:
            self.refuse(line, f"function name or signature {_brief(sig)}")
        self.name = sig_args[0]["sym"]
        params = tuple(self.arg(a, line) for a in sig_args[1:])
        stmts = tuple(self.block(body, line))
        if self.fastmath:
            stmts = jast.mark_fastmath(stmts)
        return jast.Function(self.name, params, stmts, tuple(self.schedule), line)

    def unwrap(self, node: Node) -> Node:
        """The ``function`` Expr out of what may surround it: ``@acc [opts] function ...``,
        or a ``:toplevel``/``:block`` of one definition (``Meta.parseall``)."""
        while True:
            head = _head(node)
            if head == "function":
                return node
            items = [a for a in self.args(node, 0) if not _is_line(a)] if head else []
            if head == "=" and items and _head(items[0]) in ("call", "where", "::"):
                self.refuse(0, "short-form function definition; write it as function ... end")
            if head == "macrocall" and items and self.macro_name(items[0], 0) == "@acc":
                items = items[-1:]  # the options before it are Julia's business
            elif head == "macrocall" and items and \
                    self.macro_name(items[0], 0) == "@fastmath":
                self.fastmath = True  # @acc @fastmath function ...
                items = items[-1:]
            elif head not in ("toplevel", "block"):
                raise _malformed(node, 0, "an @acc function definition")
            if len(items) != 1:
                raise _malformed(node, 0, "exactly one function definition")
            node = items[0]

    def arg(self, node: Node, line: int) -> jast.Arg:
        if _sym(node) is not None:
            return jast.Arg(node["sym"], None, line)
        head = _head(node)
        if head == "::" and len(self.args(node, line)) == 2 and _sym(node["args"][0]):
            return jast.Arg(node["args"][0]["sym"], self.typeref(node["args"][1], line), line)
        what = {"parameters": "keyword arguments", "kw": "default argument value",
                "...": "varargs", "::": "unnamed argument"}.get(head or "", "argument")
        self.refuse(line, f"{what}: {_brief(node)}")

    def typeref(self, node: Node, line: int, whole: Node = None) -> jast.TypeRef:
        """``Matrix{Float64}`` / ``Array{Float32, 3}``; ``whole`` is the annotation an
        inner parameter belongs to, named in the error."""
        if _sym(node) is not None:
            return jast.TypeRef(node["sym"])
        args = self.args(node, line) if _head(node) == "curly" else []
        if args and _sym(args[0]) is not None:
            params: list[jast.TypeRef | int] = []
            for p in args[1:]:
                num = self.literal(p, line)
                params.append(int(num.value) if num and num.type == "Int64"
                              else self.typeref(p, line, whole or node))
            return jast.TypeRef(args[0]["sym"], tuple(params))
        self.refuse(line, f"type {_brief(whole or node)}")

    # -- statements --------------------------------------------------------------------

    def block(self, node: Node, line: int) -> list[jast.Stmt]:
        """The statements of a ``:block``, each with the line of the LineNumberNode before
        it (Julia puts one before every statement; 1.12 adds one for a loop's ``end``)."""
        if _head(node) != "block":
            raise _malformed(node, line, "a block")
        out: list[jast.Stmt] = []
        for item in self.args(node, line):
            if _is_line(item):
                line = self.line_of(item, line)
            else:
                out.extend(self.statement(item, line))
        return out

    def statement(self, node: Node, line: int) -> list[jast.Stmt]:
        """One statement as zero (``nothing``, ``@schedule``), one, or several (a spliced
        ``begin ... end``) jast statements."""
        head = _head(node)
        if head is None:  # a discarded value, as parse.py: refused without a closer look
            if _is_nothing(node):
                return []  # a bare `nothing` (often the last line) does nothing
            return [jast.Unsupported(f"expression statement: {_sym(node) or 'a literal'}",
                                     line)]
        args = self.args(node, line)
        if head == "=" or head in _UPDATE:
            return self.assign(head, args, node, line)
        if head == "for":
            return [self.loop(args, node, line)]
        if head == "if":
            return [self.branch(args, node, line)]
        if head == "block":  # a bare begin ... end only groups statements
            return self.block(node, line)
        if head == "return":
            if not args or _is_nothing(args[0]):
                return [jast.Return(line)]
            got = self.expr(args[0], line)
            if isinstance(got, jast.TupleExpr):
                return [jast.Unsupported("return of a tuple (return one value or one "
                                         "array)", line)]
            return [jast.Return(line, got)]
        if head == "macrocall":
            return self.macro_statement(args, node, line)
        if head in _STATEMENT_HEADS:
            return [jast.Unsupported(_STATEMENT_HEADS[head], line)]
        if head.endswith("=") and head not in _COMPARE:
            what = "broadcast assignment" if head.startswith(".") else "update operator"
            self.refuse(line, f"{what} {head}")
        if head == "call" and args and _sym(args[0]) and _sym(args[0]) not in _COMPARE:
            return [jast.Unsupported(f"expression statement: {args[0]['sym']}(...)", line)]
        return [jast.Unsupported(f"expression statement: `{head}` expression", line)]

    def assign(self, op: str, args: list[Node], node: Node, line: int) -> list[jast.Stmt]:
        """``x = e``, ``A[i, j] = e``, ``a, b = e``, the update forms ``x += e`` and
        chained ``a = b = e`` (several statements, :func:`jast.chain`)."""
        if len(args) != 2:
            raise _malformed(node, line, f"`{op}` with two operands")
        lhs, rhs = args
        if op == "=" and _head(lhs) in ("call", "where"):
            return [jast.Unsupported("nested function definition", line)]
        if (_head(rhs) or "").endswith("=") and _head(rhs) not in _COMPARE:
            return self.chained(op, lhs, rhs, line)
        if op == "=" and _head(rhs) == "macrocall" and self._is_fastmath(rhs, line):
            items = [a for a in self.args(rhs, line)[1:] if not _is_line(a)]
            return list(jast.mark_fastmath(tuple(self.assign(op, [lhs, items[0]], node,
                                                             line))))
        return [jast.Assign(self.target(op, lhs, line), op, self.expr(rhs, line), line)]

    def _is_fastmath(self, node: Node, line: int) -> bool:
        args = self.args(node, line)
        return bool(args) and self.macro_name(args[0], line) == "@fastmath" and \
            len([a for a in args[1:] if not _is_line(a)]) == 1

    def chained(self, op: str, lhs: Node, rhs: Node, line: int) -> list[jast.Stmt]:
        """``a = b[i] = e``: only plain ``=`` and single targets (``a = b += 1`` is
        refused), as :mod:`.parse` does."""
        targets: list[jast.Name | jast.Ref] = []
        while True:
            if op != "=" or not (_sym(lhs) is not None or _head(lhs) == "ref"):
                self.refuse(line, "chained assignment other than a = b = value")
            targets.append(self.target(op, lhs, line))  # type: ignore[arg-type]
            head = _head(rhs) or ""
            if not head.endswith("=") or head in _COMPARE:
                break
            op = head
            lhs, rhs = self.args(rhs, line, 2)
        self.chains += 1  # tells apart two chained assignments on one line
        return jast.chain(targets, self.expr(rhs, line), line, self.chains)

    def target(self, op: str, lhs: Node, line: int) -> jast.Name | jast.Ref | jast.TupleExpr:
        target: jast.Name | jast.Ref | jast.TupleExpr
        if op == "=" and _head(lhs) == "tuple":
            names = [_sym(t) for t in self.args(lhs, line)]
            if None in names:
                self.refuse(line, "tuple assignment to something other than names")
            target = jast.TupleExpr(tuple(jast.Name(n, line) for n in names if n), line)
        elif _sym(lhs) is not None or _head(lhs) == "ref":
            target = self.expr(lhs, line)  # type: ignore[assignment]
        else:
            self.refuse(line, f"assignment to {_brief(lhs)}")
        return target

    def loop(self, args: list[Node], node: Node, line: int) -> jast.Stmt:
        """``for i in r, j in s`` (a ``:block`` of specs) becomes two nested For, the first
        outermost; Julia writes every ``i in r`` / ``i ∈ r`` as ``i = r``."""
        if len(args) != 2:
            raise _malformed(node, line, "a for loop with iteration specs and a body")
        spec, body = args
        specs = ([s for s in self.args(spec, line) if not _is_line(s)]
                 if _head(spec) == "block" else [spec])
        loops: list[tuple[str, jast.Expr]] = []
        for s in specs:
            if _head(s) != "=":
                raise _malformed(s, line, "an iteration spec `i = range`")
            var, it = self.args(s, line, 2)
            if _head(var) == "outer":
                return jast.Unsupported("for outer", line)
            if _sym(var) is None:
                return jast.Unsupported(f"for loop over {_brief(var)}", line)
            loops.append((var["sym"], self.expr(it, line)))
        self.depth += 1
        try:
            stmts: tuple[jast.Stmt, ...] = tuple(self.block(body, line))
        finally:
            self.depth -= 1
        for var, it in reversed(loops):
            stmts = (jast.For(var, it, stmts, line),)
        return stmts[0]

    def branch(self, args: list[Node], node: Node, line: int) -> jast.If:
        """``if``/``elseif``/``else``, each ``elseif`` an If alone in its parent's orelse;
        an ``elseif`` condition comes as ``Expr(:block, LineNumberNode, cond)``. A ternary
        used as a statement (``c ? (x = 1) : (x = 2)``) has bare branches."""
        if len(args) not in (2, 3):
            raise _malformed(node, line, "an if with a condition and one or two branches")
        cond = args[0]
        if _head(cond) == "block":
            items = self.args(cond, line)
            for item in (a for a in items if _is_line(a)):
                line = self.line_of(item, line)
            conds = [a for a in items if not _is_line(a)]
            if len(conds) != 1:
                self.refuse(line, "a condition block of several expressions")
            cond = conds[0]
        test = self.expr(cond, line)
        self.depth += 1
        try:
            then = tuple(self.body(args[1], line))
            orelse: tuple[jast.Stmt, ...] = ()
            if len(args) == 3 and _head(args[2]) == "elseif":
                orelse = (self.branch(self.args(args[2], line), args[2], line),)
            elif len(args) == 3:
                orelse = tuple(self.body(args[2], line))
        finally:
            self.depth -= 1
        return jast.If(test, then, orelse, line)

    def body(self, node: Node, line: int) -> list[jast.Stmt]:
        return self.block(node, line) if _head(node) == "block" else self.statement(node, line)

    def macro_statement(self, args: list[Node], node: Node, line: int) -> list[jast.Stmt]:
        """``@inbounds``/``@simd`` (dropped), ``@name S stmt``, ``@schedule``; any other
        macro is a statement we do not translate."""
        if not args:
            raise _malformed(node, line, "a macro call with a name")
        name = self.macro_name(args[0], line)
        if len(args) > 1 and _is_line(args[1]):
            line = self.line_of(args[1], line)
        margs = [a for a in args[2:] if not _is_line(a)]
        if name == "@simd" and margs and _sym(margs[0]) == "ivdep":
            margs = margs[1:]  # a promise we do not need: the compiler checks dependences
        if name in ("@inbounds", "@simd"):
            return [s for m in margs for s in self.statement(m, line)]
        if name == "@fastmath":
            return list(jast.mark_fastmath(tuple(s for m in margs
                                                 for s in self.statement(m, line))))
        if name == "@name":
            if len(margs) != 2 or _sym(margs[0]) is None:
                self.refuse(line, "@name needs a label and a statement: @name S stmt")
            inner = self.statement(margs[1], line)
            if len(inner) == 1 and isinstance(inner[0], jast.Unsupported):
                return inner  # refused anyway, with its own construct
            chained = len(inner) > 1 and _head(margs[1]) == "="
            if not inner or (len(inner) > 1 and not chained) or \
                    not isinstance(inner[0], (jast.Assign, jast.For, jast.If)):
                self.refuse(line, "@name on something other than one assignment, for loop "
                            "or if")
            return [dataclasses.replace(x, label=margs[0]["sym"])  # type: ignore[arg-type]
                    for x in inner]
        if name == "@schedule":
            if self.depth:
                return [jast.Unsupported("@schedule inside a nested block", line)]
            for m in margs:
                for item in self.args(m, line) if _head(m) == "block" else [m]:
                    if _is_line(item):
                        line = self.line_of(item, line)
                    else:
                        self.schedule.append(self.directive(item, line))
            return []
        return [jast.Unsupported(f"macro {name}", line)]

    def directive(self, node: Node, line: int) -> jast.Call:
        """A schedule command ``cmd(args...)``: its arguments are names and numbers only
        (``-1`` is a literal in Julia's Expr; ``-(1)`` is accepted as the same)."""
        args = self.args(node, line) if _head(node) == "call" else []
        if not args or _sym(args[0]) is None:
            self.refuse(line, f"schedule directive {_brief(node)} (must be a call)")
        out: list[jast.Expr] = []
        for a in args[1:]:
            e = self.expr(a, line)
            if (isinstance(e, jast.Call) and e.fn == "-" and len(e.args) == 1
                    and isinstance(e.args[0], jast.Num)):
                e = jast.Num(-e.args[0].value, e.args[0].type, line)
            if not jast.is_directive_arg(e):
                self.refuse(line, f"schedule argument {_brief(a)} (must be a name, a "
                            "number, loop % k or an Int expression of vector_lanes(T), "
                            "vector_registers() and cache_bytes(level))")
            out.append(e)
        return jast.Call(args[0]["sym"], tuple(out), line)

    # -- expressions -------------------------------------------------------------------

    def literal(self, node: Node, line: int) -> jast.Num | None:
        """A number or Bool literal; None for any other node."""
        if not isinstance(node, dict) or "head" in node:
            return None
        for key, default in (("int", "Int64"), ("float", "Float64"), ("bool", "Bool")):
            if key in node:
                value, typ = node[key], node.get("type", default)
                break
        else:
            return None
        if key == "float" and isinstance(value, str) and value in _SPECIAL_FLOATS:
            value = _SPECIAL_FLOATS[value]
        ok = {"int": isinstance(value, int) and not isinstance(value, bool),
              "float": isinstance(value, (int, float)) and not isinstance(value, bool),
              "bool": isinstance(value, bool)}[key]
        if not ok:
            raise _malformed(node, line, f"a {key} literal")
        if typ not in _LITERAL_TYPES:
            self.refuse(line, f"literal of type {typ} (only Int64, Float64, Float32, Bool)")
        return jast.Num(float(value) if key == "float" else value, typ, line)

    def expr(self, node: Node, line: int) -> jast.Expr:
        num = self.literal(node, line)
        if num is not None:
            return num
        head = _head(node)
        if head is None:
            return self.leaf(node, line)
        args = self.args(node, line)
        if head == "call":
            return self.call(args, node, line)
        if head == "comparison":  # a < b <= c: Expr(:comparison, a, :<, b, :<=, c)
            ops = [_sym(a) for a in args[1::2]]
            if len(args) < 3 or len(args) % 2 == 0 or any(o not in _COMPARE for o in ops):
                self.refuse(line, f"comparison chain with operators {ops}")
            return jast.Compare(tuple(_COMPARE[o] for o in ops if o),
                                tuple(self.expr(a, line) for a in args[0::2]), line)
        if head in ("&&", "||"):
            if len(args) < 2:
                raise _malformed(node, line, f"`{head}` with two operands")
            out = self.expr(args[-1], line)  # they associate to the right in Julia
            for a in reversed(args[:-1]):
                out = jast.Logic(head, self.expr(a, line), out, line)
            return out
        if head == "if":  # c ? a : b (an if block used as a value only with one value each)
            if len(args) != 3 or _head(args[2]) == "elseif":
                self.refuse(line, "if used as a value")
            c, a, b = (self.value(x, line) for x in args)
            return jast.Ternary(c, a, b, line)
        if head == "ref":
            if not args or _sym(args[0]) is None:
                self.refuse(line, "indexing of something other than a named array")
            return jast.Ref(args[0]["sym"], tuple(self.index(a, line) for a in args[1:]), line)
        if head == "tuple":
            return jast.TupleExpr(tuple(self.expr(a, line) for a in args), line)
        if head == "block":  # (a) with a line inside, as Julia writes some parentheses
            return self.value(node, line)
        if head == ".":
            bcast = len(args) == 2 and _head(args[1]) == "tuple"
            self.refuse(line, "broadcast call f.(...)" if bcast else "field access")
        if head == "macrocall" and args:
            self.refuse(line, f"macro call in an expression: {self.macro_name(args[0], line)}")
        self.refuse(line, _EXPR_HEADS.get(head) or _STATEMENT_HEADS.get(head)
                    or f"`{head}` expression")

    def value(self, node: Node, line: int) -> jast.Expr:
        """An expression that may come wrapped in a ``:block`` with line numbers."""
        if _head(node) != "block":
            return self.expr(node, line)
        items = [a for a in self.args(node, line) if not _is_line(a)]
        if len(items) != 1:
            self.refuse(line, "block in parentheses")
        return self.expr(items[0], line)

    def index(self, node: Node, line: int) -> jast.Expr:
        if _sym(node) == ":":
            self.refuse(line, "`:` (a whole dimension) in an index")
        return self.expr(node, line)

    def leaf(self, node: Node, line: int) -> jast.Expr:
        name = _sym(node)
        if name == "end":
            self.refuse(line, "`end` inside an index")
        if name == ":":
            self.refuse(line, "operator used as a value")
        if name is not None:
            return jast.Name(name, line)
        for key, what in (("str", "string literal"), ("quote", "quoted symbol"),
                          ("nothing", "`nothing` used as a value"), ("unknown", "literal")):
            if isinstance(node, dict) and key in node:
                self.refuse(line, f"{what} {_brief(node)}")
        raise _malformed(node, line, "an Expr, a Symbol or a literal")

    def call(self, args: list[Node], node: Node, line: int) -> jast.Expr:
        if not args:
            raise _malformed(node, line, "a call with a function")
        fn = _sym(args[0])
        if fn is None:
            self.refuse(line, f"call of {_dotted(args[0]) or 'a computed function'}")
        rest = args[1:]
        for a in rest:
            if _head(a) in ("parameters", "kw", "..."):
                self.refuse(line, f"{_EXPR_HEADS[_head(a)]} in a call to {fn}")  # type: ignore
        if fn == ":":  # a:b and a:s:b are calls of the colon
            if len(rest) not in (2, 3):
                raise _malformed(node, line, "a range a:b or a:s:b")
            parts = [self.expr(a, line) for a in rest]
            return jast.Range(parts[0], parts[1] if len(parts) == 3 else None, parts[-1], line)
        if fn in _COMPARE and len(rest) == 2:  # a < b alone is a call, not a :comparison
            return jast.Compare((_COMPARE[fn],), tuple(self.expr(a, line) for a in rest), line)
        if len(fn) > 1 and fn.startswith(".") and fn != "..":
            self.refuse(line, f"broadcast operator {fn}")
        if not (fn[0].isalpha() or fn[0] == "_") and not (
                (fn in _UNOPS and len(rest) == 1) or (fn in _BINOPS and len(rest) == 2)
                or (fn in _NARY and len(rest) > 2)):
            self.refuse(line, f"operator {fn}")
        operands = [self.expr(a, line) for a in rest]
        if fn == "ifelse" and len(operands) == 3:
            return jast.Ternary(operands[0], operands[1], operands[2], line)
        if fn in _NARY and len(operands) > 2:
            out = jast.Call(fn, (operands[0], operands[1]), line)
            for o in operands[2:]:
                out = jast.Call(fn, (out, o), line)
            return out
        return jast.Call(fn, tuple(operands), line)


def function_from_json(obj: dict[str, Any] | str | bytes) -> jast.Function:
    """The jast of one ``@acc`` function from ``Acc.jl``'s JSON of its ``Expr`` (the text,
    or already decoded). Accepts the function ``Expr`` itself, the whole ``@acc`` macro call
    and a ``:toplevel``/``:block`` holding one definition (what ``Meta.parseall`` gives)."""
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError as exc:
            raise JuliaFrontendError(f"the Expr JSON from Julia does not decode: {exc}") from None
    if not isinstance(obj, dict):
        raise _malformed(obj, 0, "a JSON object")
    return _Reader().function(obj)
