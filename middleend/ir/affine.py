"""Layer I expressions to ISL: quasi-affine expressions become exact piecewise-affine
functions (min, max, clamp, select on affine conditions, floor division and modulo by
constants are all exact in ISL); conditions become sets. Anything else is *non-affine* and the
callers keep it as an expression (guards, data-dependent accesses).
"""

from __future__ import annotations

import islpy as isl

from .expr import Binary, Cast, Const, Expr, Select, Unary


class NonAffine(Exception):
    """Raised internally when an expression cannot be represented exactly in ISL."""


class AffineContext:
    """Where names live: set dims of ``space`` (iterators) and its params."""

    def __init__(self, space: isl.Space) -> None:
        self.space = space
        self.ls = isl.LocalSpace.from_space(space)
        self.dims = {space.get_dim_name(isl.dim_type.set, k): k
                     for k in range(space.dim(isl.dim_type.set))}
        self.params = {space.get_dim_name(isl.dim_type.param, k): k
                       for k in range(space.dim(isl.dim_type.param))}

    def const(self, v: int) -> isl.PwAff:
        aff = isl.Aff.zero_on_domain(self.ls).set_constant_val(isl.Val.int_from_si(
            self.space.get_ctx(), v))
        return isl.PwAff.from_aff(aff)

    def name(self, n: str) -> isl.PwAff:
        if n in self.dims:
            return isl.PwAff.from_aff(isl.Aff.var_on_domain(self.ls, isl.dim_type.set,
                                                            self.dims[n]))
        if n in self.params:
            return isl.PwAff.from_aff(isl.Aff.var_on_domain(self.ls, isl.dim_type.param,
                                                            self.params[n]))
        raise NonAffine(f"name {n!r} is not an iterator or parameter here")

    def dim(self, k: int) -> isl.PwAff:
        return isl.PwAff.from_aff(isl.Aff.var_on_domain(self.ls, isl.dim_type.set, k))

    def universe(self) -> isl.Set:
        return isl.Set.universe(self.space)


def _named(e: Expr) -> str | None:
    # Var and Param are defined in function.py; they have a ``name`` and no children.
    from .function import Param, Var

    if isinstance(e, (Var, Param)):
        return e.name
    return None


def to_pw_aff(e: Expr, ctx: AffineContext) -> isl.PwAff:
    """Exact piecewise-affine form of an integer expression; raises NonAffine."""
    n = _named(e)
    if n is not None:
        return ctx.name(n)
    if isinstance(e, Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            if isinstance(e.value, float) and e.value == int(e.value):
                return ctx.const(int(e.value))
            raise NonAffine(f"non-integer constant {e.value!r}")
        return ctx.const(e.value)
    if isinstance(e, Cast):
        if not e.type_.is_int or not e.a.dtype.is_int:
            raise NonAffine("cast to or from a non-integer type")
        if e.type_.bits < e.a.dtype.bits or (e.type_.kind != e.a.dtype.kind):
            raise NonAffine("narrowing or sign-changing integer cast")
        return to_pw_aff(e.a, ctx)
    if isinstance(e, Unary) and e.op == "neg":
        return to_pw_aff(e.a, ctx).neg()
    if isinstance(e, Select):
        c = to_set(e.cond, ctx)
        return c.indicator_function().cond(to_pw_aff(e.a, ctx), to_pw_aff(e.b, ctx))
    if isinstance(e, Binary):
        if not e.type_.is_int:
            raise NonAffine(f"{e.op} on {e.type_.name}")
        a = to_pw_aff(e.a, ctx)
        b = to_pw_aff(e.b, ctx)
        if e.op == "add":
            return a.add(b)
        if e.op == "sub":
            return a.sub(b)
        if e.op == "mul":
            if not (a.is_cst() or b.is_cst()):
                raise NonAffine("product of two non-constant terms")
            return a.mul(b)
        if e.op == "min":
            return a.min(b)
        if e.op == "max":
            return a.max(b)
        if e.op in ("div", "floordiv", "mod"):
            v = _positive_const(e.b)
            if v is None:
                raise NonAffine(f"{e.op} by a non-constant or non-positive divisor")
            if e.op == "mod":
                return a.mod_val(isl.Val.int_from_si(ctx.space.get_ctx(), v))
            return a.div(b).floor()
    raise NonAffine(f"{type(e).__name__} is not affine")


def _positive_const(e: Expr) -> int | None:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value if e.value > 0 else None
    if isinstance(e, Cast):
        return _positive_const(e.a)
    return None


def to_set(e: Expr, ctx: AffineContext) -> isl.Set:
    """The set where a boolean expression holds; raises NonAffine."""
    if isinstance(e, Const) and isinstance(e.value, bool):
        u = ctx.universe()
        return u if e.value else u.subtract(u)
    if isinstance(e, Unary) and e.op == "not":
        return to_set(e.a, ctx).complement()
    if isinstance(e, Binary):
        if e.op == "and":
            return to_set(e.a, ctx).intersect(to_set(e.b, ctx))
        if e.op == "or":
            return to_set(e.a, ctx).union(to_set(e.b, ctx))
        cmp = {"lt": "lt_set", "le": "le_set", "gt": "gt_set", "ge": "ge_set",
               "eq": "eq_set", "ne": "ne_set"}
        if e.op in cmp:
            a = to_pw_aff(e.a, ctx)
            b = to_pw_aff(e.b, ctx)
            return getattr(a, cmp[e.op])(b)
    raise NonAffine(f"condition {type(e).__name__} is not affine")


def try_pw_aff(e: Expr, ctx: AffineContext) -> isl.PwAff | None:
    try:
        return to_pw_aff(e, ctx)
    except NonAffine:
        return None


def try_set(e: Expr, ctx: AffineContext) -> isl.Set | None:
    try:
        return to_set(e, ctx)
    except NonAffine:
        return None


def access_map(indices: tuple[Expr, ...], ctx: AffineContext, target: str
               ) -> isl.Map | None:
    """The access relation domain -> target[indices] if every index is quasi-affine."""
    m = isl.Map.from_domain(isl.Set.universe(ctx.space))
    for ix in indices:
        pa = try_pw_aff(ix, ctx)
        if pa is None:
            return None
        m = m.flat_range_product(isl.Map.from_pw_aff(pa))
    return m.set_tuple_name(isl.dim_type.out, target)


def access_relation(indices: list[isl.PwAff | None], ctx: AffineContext, target: str
                    ) -> tuple[isl.Map, tuple[int, ...]]:
    """:func:`relaxed_access_map` from indices already converted (None: not quasi-affine)."""
    m = isl.Map.from_domain(isl.Set.universe(ctx.space))
    free = []
    for k, pa in enumerate(indices):
        if pa is None:
            free.append(k)
            one = isl.Map.universe(isl.Map.from_pw_aff(ctx.const(0)).get_space())
        else:
            one = isl.Map.from_pw_aff(pa)
        m = m.flat_range_product(one)
    return m.set_tuple_name(isl.dim_type.out, target), tuple(free)


def relaxed_access_map(indices: tuple[Expr, ...], ctx: AffineContext, target: str
                       ) -> tuple[isl.Map, tuple[int, ...]]:
    """An over-approximation of the access relation domain -> target[indices]: exact
    along the quasi-affine indices, unconstrained along the others (whose positions are
    returned; empty when the relation is exact). ``x[i, perm[j]]`` touches row ``i``."""
    return access_relation([try_pw_aff(ix, ctx) for ix in indices], ctx, target)
