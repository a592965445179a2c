"""Which computation instances store the same value, provably and without running them.

The legality check compares, for every read, the instance that produces the value in the
scheduled program with the one Layer I prescribes. Instances are a proxy for values, and a
strict one: under storage folding, a read of ``u[(t-1) % 2]`` at the boundary may see the
boundary copy of step ``t - 1`` where the sequential order has the copy of step ``t + 1``
(or the initial copy), all of which store the same input element. Refusing that is a false
refusal; this module supplies the equivalence that lets the check accept it.

The rule is syntactic and sound: a computation is *pure* when its expression reads only
inputs (which no computation writes; a distributed receive only copies their elements),
with no run-time guard and no data-dependent store. Its value is then a function of the
iterators its expression names. Two pure instances, ``P[y]`` and ``Q[z]``, store the same
value when P's and Q's expressions are the same tree (operators, constants, types, inputs,
iterator names) and ``y`` and ``z`` agree on every iterator it names. Anything else is
equivalent only to itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable

import islpy as isl

from ..ir.expr import Access, Expr, walk
from ..ir.function import INPUT, Param, Var
from ..ir.types import DType
from .data import Layer3
from .dataflow import may_write, read_role
from .layer1 import Comp, Layer1


def same_value(l1: Layer1, l3: Layer3) -> isl.UnionMap:
    """``{P[y] -> Q[z]}``: the pairs of pure instances that store the same value (an
    equivalence relation over the pure computations' instances, identity included)."""
    groups: dict[Hashable, list[Comp]] = {}
    for n, c in l1.comps.items():
        if may_write(l1, l3, n) or any(r.kind == "value" or read_role(l3, r) != INPUT
                                       for r in c.reads):
            continue
        used = {x.name for x in walk(c.expr) if isinstance(x, Var)}
        if used <= set(c.vars):
            groups.setdefault(_key(c.expr), []).append(c)
    out = isl.UnionMap.empty(l1.param_space)
    for comps in groups.values():
        used = {x.name for x in walk(comps[0].expr) if isinstance(x, Var)}
        for p in comps:
            for q in comps:
                m = isl.Map.from_domain_and_range(p.domain, q.domain)
                for v in used:
                    m = m.equate(isl.dim_type.in_, p.vars.index(v),
                                 isl.dim_type.out, q.vars.index(v))
                out = out.union(isl.UnionMap.from_map(m))
    return out


def _key(e: Expr) -> Hashable:
    """The expression as a hashable tree: equal keys, equal functions of the iterators."""
    if isinstance(e, Var):
        return ("var", e.name)
    if isinstance(e, Param):
        return ("param", e.name)
    if isinstance(e, Access):
        return ("access", e.target.name, tuple(_key(i) for i in e.indices))
    assert dataclasses.is_dataclass(e), f"unknown expression node {type(e).__name__}"
    parts: list[Hashable] = [type(e).__name__]
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if isinstance(v, Expr):
            parts.append(_key(v))
        elif isinstance(v, tuple):
            parts.append(tuple(_key(x) if isinstance(x, Expr) else x for x in v))
        elif isinstance(v, DType):
            parts.append(v.name)
        else:
            parts.append((type(v).__name__, v))
    return tuple(parts)
