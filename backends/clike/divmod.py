"""Floor division and modulo of a subscript by a constant, worked out at compile time.

A buffer stored in a packed layout (``store_in(BpB, [j // 16, k, j % 16])``: B's column
panels contiguous, as a BLAS packs them) is read with ``j // 16`` and ``j % 16`` where
``j = 16 * t5 + t13`` in the loops around the statement. Printed as written, every read
calls ``me_fdiv_i64``/``me_fmod_i64`` (a division each, and gcc no longer sees the
subscript as an affine function of the vector lane, so it gathers instead of loading a
vector). Knowing the statement's iterators as linear functions of the loop counters and
the counters' ranges, ``(d * m + r) // d`` is ``m + lo // d`` and the modulo ``r - d *
(lo // d)`` whenever ``r`` stays within one multiple of ``d`` (``lo // d == hi // d``,
``r`` in ``[lo, hi]``): exact for every value the loops take, never an approximation.
Anything else (a parameter in the remainder, a non-linear term, a remainder that crosses
a multiple of ``d``) is printed as before.
"""

from __future__ import annotations

from collections.abc import Mapping

from middleend.ir.expr import Binary, Cast, Const, Expr, Unary
from middleend.ir.intervals import Interval
from middleend.ir.loopast import IExpr, IInt, IOp, IterRef, IVar, ParamRef

# a linear form: variable name (loop counter ``t<k>`` or parameter ``p_<name>``) -> its
# coefficient, and the constant under the key ""
Linear = dict[str, int]


def _add(a: Linear, b: Linear, scale: int = 1) -> Linear:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + scale * v
    return {k: v for k, v in out.items() if v or k == ""}


def _iexpr_linear(e: IExpr) -> Linear | None:
    """``e`` (a binding: loop counters, parameters, constants) as a linear form."""
    if isinstance(e, IInt):
        return {"": int(e.value)}
    if isinstance(e, IVar):
        return {"": 0, e.name: 1}
    if not isinstance(e, IOp):
        return None
    if e.op == "neg" and len(e.args) == 1:
        a = _iexpr_linear(e.args[0])
        return None if a is None else {k: -v for k, v in a.items()}
    if e.op in ("add", "sub") and len(e.args) == 2:
        a, b = _iexpr_linear(e.args[0]), _iexpr_linear(e.args[1])
        if a is None or b is None:
            return None
        return _add(a, b, 1 if e.op == "add" else -1)
    if e.op == "mul" and len(e.args) == 2:
        a, b = _iexpr_linear(e.args[0]), _iexpr_linear(e.args[1])
        if a is None or b is None:
            return None
        for x, y in ((a, b), (b, a)):
            if set(x) == {""}:
                return {k: x[""] * v for k, v in y.items()}
    if e.op == "pdiv_r" and len(e.args) == 2 and isinstance(e.args[1], IInt) \
            and e.args[1].value > 0:
        # x mod m of a non-negative x (ISL's pdiv_r) is x - m * q, q = x / m an atom
        # (printed as the C division it is): a partial tile's first row N - N mod 3 is
        # then 3 q, a multiple of 3, whose panel N // 3 is q without a division
        x, m = _iexpr_linear(e.args[0]), e.args[1].value
        if x is None:
            return None
        return _add(x, {"": 0, f"({_c(x)} / {m}LL)": 1}, -m)
    return None


def expr_linear(e: Expr, bindings: Mapping[str, IExpr],
                loops: Mapping[str, Interval] | None = None) -> Linear | None:
    """A Layer I integer expression as a linear form over the loop counters and the
    parameters, each iterator replaced by its binding; None when it is not linear. With
    ``loops`` (the counters' ranges), a floor division or remainder by a positive
    constant is linear where :func:`linear_div_mod` works it out exactly."""
    if isinstance(e, Const):
        v = e.value
        return None if isinstance(v, bool) or not isinstance(v, int) else {"": v}
    if isinstance(e, IterRef):
        b = bindings.get(e.name)
        return None if b is None else _iexpr_linear(b)
    if isinstance(e, ParamRef):
        return {"": 0, f"p_{e.name}": 1}
    if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_int and e.type_.bits >= 32:
        return expr_linear(e.a, bindings, loops)
    if isinstance(e, Unary) and e.op == "neg" and e.a.dtype.is_int:
        a = expr_linear(e.a, bindings, loops)
        return None if a is None else {k: -v for k, v in a.items()}
    if isinstance(e, Binary) and e.type_.is_int and loops is not None and \
            e.op in ("div", "floordiv", "mod") and isinstance(e.b, Const) and \
            isinstance(e.b.value, int) and not isinstance(e.b.value, bool):
        a = expr_linear(e.a, bindings, loops)
        qr = None if a is None else linear_div_mod(a, e.b.value, loops)
        return None if qr is None else qr[1] if e.op == "mod" else qr[0]
    if isinstance(e, Binary) and e.type_.is_int and e.op in ("add", "sub", "mul"):
        a = expr_linear(e.a, bindings, loops)
        b = expr_linear(e.b, bindings, loops)
        if a is None or b is None:
            return None
        if e.op != "mul":
            return _add(a, b, 1 if e.op == "add" else -1)
        for x, y in ((a, b), (b, a)):
            if set(x) == {""}:
                return {k: x[""] * v for k, v in y.items()}
    return None


def linear_div_mod(form: Linear, d: int, loops: Mapping[str, Interval]
                   ) -> tuple[Linear, Linear] | None:
    """``(form // d, form mod d)`` (floor semantics) as linear forms, exact for every
    value of the counters in ``loops``: ``(d * m + r) // d`` is ``m + lo // d`` where the
    rest ``r`` stays within one multiple of ``d``; None otherwise."""
    if d <= 0:
        return None
    quot = {k: c // d for k, c in form.items() if k != "" and c % d == 0}
    rest = {k: c for k, c in form.items() if k == "" or c % d != 0}
    rng = _range(rest, loops)
    if rng is None or rng[0] // d != rng[1] // d:
        return None
    m = rng[0] // d
    quot[""] = m
    rest[""] = rest.get("", 0) - d * m
    return quot, rest


def _range(form: Linear, loops: Mapping[str, Interval]) -> Interval | None:
    lo = hi = form.get("", 0)
    for k, c in form.items():
        if k == "":
            continue
        r = loops.get(k)
        if r is None:
            return None
        a, b = c * r[0], c * r[1]
        lo, hi = lo + min(a, b), hi + max(a, b)
    return lo, hi


def _c(form: Linear) -> str:
    """A linear form as a C int64 expression (names are validated loop counters and
    parameter names, coefficients Python ints)."""
    terms = [f"({c}LL * {k})" if c != 1 else k for k, c in sorted(form.items())
             if k != "" and c]
    const = form.get("", 0)
    if const or not terms:
        terms.append(f"{const}LL" if const >= 0 else f"({const}LL)")
    return "(" + " + ".join(terms) + ")"


def div_mod(e: Expr, d: int, bindings: Mapping[str, IExpr],
            loops: Mapping[str, Interval]) -> tuple[str, str] | None:
    """``(e // d, e mod d)`` (floor semantics) as C expressions without a division, or
    None when they cannot be worked out exactly from the loops' ranges."""
    form = expr_linear(e, bindings)
    qr = None if form is None else linear_div_mod(form, d, loops)
    return None if qr is None else (_c(qr[0]), _c(qr[1]))
