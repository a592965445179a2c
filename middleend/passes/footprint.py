"""Which instances of a computation a statement reads through the inlined functions it
calls (:mod:`.inlining`), as a relation small enough for every analysis.

A computation computed at a loop of its reader (compute_at) is placed by what the reader
reads of it per iteration, so "any instance", the over-approximation the analyses take for
the other reads made through calls (:func:`.layer1._call_reads`), would compute all of it
at every iteration. The exact relation is the composition of the calls' index maps with
the bodies' reads, as costly as the substitution the calls avoid (a pyramid's thousands of
clamped paths); here each function's footprint is the simple hull (:func:`isl.Map.
simple_hull`) of what its body reads directly and through its callees' footprints, once per
function. A hull is convex and a few constraints, so composing it through ten levels costs
ten compositions, not 16^10; it holds every instance read (so dependences and the values
the reader expects stay sound) and a few more near a clamped edge or a floor division,
which compute_at then computes too, as Halide's interval bounds do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import islpy as isl

from ..ir.affine import access_relation, try_pw_aff
from ..ir.expr import Access, Expr, walk_shared
from ..ir.function import Computation

if TYPE_CHECKING:
    from .layer1 import Comp


def _hull(m: isl.Map, domain: isl.Set) -> isl.Map:
    """A convex relation holding ``m`` on ``domain`` (``m`` itself when it is one piece)."""
    m = m.intersect_domain(domain).remove_divs().coalesce()
    if m.n_basic_map() > 1:
        m = isl.Map.from_basic_map(m.simple_hull()).intersect_domain(domain)
    return m


class Footprints:
    """Per (function, computation): the instances the function reads, as a hull, built on
    first use and kept (one composition per call site of each function)."""

    def __init__(self, funcs: dict[str, Comp]) -> None:
        self.funcs = funcs
        self.memo: dict[tuple[str, str], isl.Map | None] = {}
        # index expressions in ISL, by (function, node): a body repeats its index
        # expressions across its reads (x * 2 - 1 of every channel's read)
        self.indices: dict[tuple[str, int], isl.PwAff | None] = {}

    def _access(self, c: Comp, n: Access, target: str) -> isl.Map:
        """``{c[x] -> target[indices]}``, any element along a data-dependent index."""
        pas = []
        for ix in n.indices:
            key = (c.name, id(ix))
            if key not in self.indices:
                self.indices[key] = try_pw_aff(ix, c.ctx)
            pas.append(self.indices[key])
        return access_relation(pas, c.ctx, target)[0]

    def of_calls(self, reader: Comp, calls: list[Access], target: str) -> isl.Map | None:
        """What ``reader`` reads of ``target`` through ``calls`` (its call nodes), or None
        when no call reaches it."""
        return self._reads(reader, [reader.expr], calls, target)

    def _function(self, name: str, target: str) -> isl.Map | None:
        key = (name, target)
        if key not in self.memo:
            self.memo[key] = None  # inlining has refused cycles; this ends any recursion
            f = self.funcs[name]
            self.memo[key] = self._reads(f, [f.expr], None, target)
        return self.memo[key]

    def _reads(self, c: Comp, roots: list[Expr], calls: list[Access] | None,
               target: str) -> isl.Map | None:
        """The hull of ``c``'s reads of ``target``: those in ``roots`` (direct ones and
        calls) or, given ``calls``, through those calls only."""
        nodes = calls if calls is not None else [
            n for r in roots for n in walk_shared(r) if isinstance(n, Access)]
        out: isl.Map | None = None
        for n in nodes:
            t = n.target
            if not isinstance(t, Computation):
                continue
            if t.name in self.funcs:
                inner = self._function(t.name, target)
                if inner is None:
                    continue
                part = self._access(c, n, t.name).apply_range(inner)
            elif t.name == target and calls is None:
                part = self._access(c, n, target)
            else:
                continue
            out = part if out is None else out.union(part)
        return None if out is None else _hull(out, c.domain)
