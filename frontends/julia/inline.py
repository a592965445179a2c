"""Calls to one-expression functions of the same source (``sq(x) = x * x``), inlined
before an ``@acc`` function is checked and translated: the call becomes the helper's
expression with its parameters replaced by the arguments.

Exact for what a helper can be here: its body is one expression of its parameters and of
the source's constants, and expressions have no side effects in the translated subset,
so evaluating an argument where the parameter is used (once, several times or never)
gives what Julia's call gives. Argument types are not checked against the helper's
annotations (Julia would raise a MethodError on a mismatch; here the expression is
computed with the argument's type). A helper that reads another name, or a call with the
wrong number of arguments, is refused naming both lines; helpers may call helpers, up to
a depth that rules out recursion.
"""

from __future__ import annotations

from dataclasses import replace

from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.jtypes import ELEMENT
from frontends.julia.program import assigned_names, reads_of, substitute

_MAX_DEPTH = 16
_GLOBAL_NAMES = frozenset({"true", "false", "pi", "π", *ELEMENT})


def inline_helpers(fn: J.Function) -> J.Function:
    """``fn`` with every call of one of its helpers replaced by the helper's expression."""
    if not fn.helpers:
        return fn
    return _Inliner(fn).run()


class _Inliner:
    def __init__(self, fn: J.Function) -> None:
        self.fn = fn
        self.table = {h.name: h for h in fn.helpers}
        self.consts = {n for n, _ in fn.consts}
        self.shadowed = {a.name for a in fn.args} | set(assigned_names(fn.body))

    def fail(self, line: int, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(line, what, self.fn.name)

    def run(self) -> J.Function:
        return replace(self.fn, body=self.block(self.fn.body))

    def block(self, body: tuple[J.Stmt, ...]) -> tuple[J.Stmt, ...]:
        out: list[J.Stmt] = []
        for s in body:
            if isinstance(s, J.Assign):
                t = s.target
                if isinstance(t, J.Ref):
                    t = replace(t, indices=tuple(self.expr(i, 0) for i in t.indices))
                s = replace(s, target=t, value=self.expr(s.value, 0))
            elif isinstance(s, J.For):
                s = replace(s, iter=self.expr(s.iter, 0), body=self.block(s.body))
            elif isinstance(s, J.If):
                s = replace(s, cond=self.expr(s.cond, 0), then=self.block(s.then),
                            orelse=self.block(s.orelse))
            out.append(s)
        return tuple(out)

    def expr(self, e: J.Expr, depth: int, site: int = 0) -> J.Expr:
        """``e`` inlined; ``site`` is the line of the outermost call being inlined (what
        an error names: the line the user wrote the call on)."""
        if isinstance(e, J.Call):
            args = tuple(self.expr(a, depth, site) for a in e.args)
            h = self.table.get(e.fn)
            if h is None:
                return replace(e, args=args)
            return self.inline(h, args, site or e.line, depth)
        def sub(x: J.Expr) -> J.Expr:
            return self.expr(x, depth, site)

        if isinstance(e, J.Ref):
            return replace(e, indices=tuple(sub(i) for i in e.indices))
        if isinstance(e, J.Compare):
            return replace(e, operands=tuple(sub(x) for x in e.operands))
        if isinstance(e, J.Logic):
            return replace(e, a=sub(e.a), b=sub(e.b))
        if isinstance(e, J.Ternary):
            return replace(e, cond=sub(e.cond), a=sub(e.a), b=sub(e.b))
        if isinstance(e, J.Range):
            return replace(e, start=sub(e.start), stop=sub(e.stop),
                           step=None if e.step is None else sub(e.step))
        if isinstance(e, J.TupleExpr):
            return replace(e, items=tuple(sub(x) for x in e.items))
        return e

    def inline(self, h: J.Helper, args: tuple[J.Expr, ...], line: int,
               depth: int) -> J.Expr:
        if depth >= _MAX_DEPTH:
            raise self.fail(line, f"call to {h.name}: helpers nested more than "
                            f"{_MAX_DEPTH} deep (recursion is not translated)")
        if len(args) != len(h.params):
            raise self.fail(line, f"call to {h.name} with {len(args)} arguments; it takes "
                            f"{len(h.params)} (line {h.line})")
        free = reads_of(h.body) - set(h.params) - _GLOBAL_NAMES
        bad = sorted(n for n in free if n not in self.consts or n in self.shadowed)
        if bad:
            why = ("which the calling function shadows" if bad[0] in self.consts else
                   "which is not one of its arguments or a module constant")
            raise self.fail(line, f"call to {h.name}: the helper (line {h.line}) reads "
                            f"{bad[0]!r}, {why}")
        body = substitute(h.body, dict(zip(h.params, args, strict=True)))
        return self.expr(body, depth + 1, line)
