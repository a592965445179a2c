"""Human-readable forms of Layer I expressions (for layers, errors and reprs)."""

from __future__ import annotations

from .expr import Access, Binary, Call, Cast, Const, Expr, Select, Unary

_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
        "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
        "and": "&&", "or": "||"}


def expr_str(e: Expr) -> str:
    from .loopast import BufAccess, IterRef, ParamRef

    name = getattr(e, "name", None)
    if isinstance(e, (IterRef, ParamRef)) or (name is not None and not e.children()
                                              and not isinstance(e, (Const, BufAccess))):
        return str(name)
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Binary):
        if e.op in ("min", "max"):
            return f"{e.op}({expr_str(e.a)}, {expr_str(e.b)})"
        return f"({expr_str(e.a)} {_SYM[e.op]} {expr_str(e.b)})"
    if isinstance(e, Unary):
        return f"-{expr_str(e.a)}" if e.op == "neg" else f"!{expr_str(e.a)}"
    if isinstance(e, Select):
        return f"select({expr_str(e.cond)}, {expr_str(e.a)}, {expr_str(e.b)})"
    if isinstance(e, Cast):
        return f"{e.type_.name}({expr_str(e.a)})"
    if isinstance(e, Call) and e.fn == "reinterpret":
        return f"reinterpret<{e.type_.name}>({expr_str(e.args[0])})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, Access):
        return f"{e.target.name}({', '.join(expr_str(i) for i in e.indices)})"
    if isinstance(e, BufAccess):
        return f"{e.buffer}[{', '.join(expr_str(i) for i in e.indices)}]"
    return type(e).__name__


_ISYM = {"add": "+", "sub": "-", "mul": "*", "fdiv_q": "/", "pdiv_q": "/", "pdiv_r": "%",
         "zdiv_r": "%", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
         "ge": ">=", "and": "&&", "or": "||"}


def iexpr_str(e: object) -> str:
    """A loop-AST index expression as users write it: params by their names (``M``, not
    the generated ``p_M``), ``/`` the floor division (for Layer IV sizes, launch grids)."""
    from .loopast import IInt, IOp, IVar

    if isinstance(e, IInt):
        return str(e.value)
    if isinstance(e, IVar):
        return e.name[2:] if e.name.startswith("p_") else e.name
    if isinstance(e, IOp):
        args = [iexpr_str(a) for a in e.args]
        if e.op in _ISYM and len(args) == 2:
            return f"({args[0]} {_ISYM[e.op]} {args[1]})"
        if e.op == "neg":
            return f"-{args[0]}"
        if e.op == "not":
            return f"!{args[0]}"
        return f"{e.op}({', '.join(args)})"
    return str(e)
