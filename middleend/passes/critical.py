"""Critical sections (``comp.atomic(group=g)``): computations whose instances at one point
run together under one lock.

One atomic update (:mod:`.atomic`) changes one element; some updates change several that
depend on each other: argmin's value and index (Halide's Tuple update whose elements read
each other, which Halide runs under a mutex), an update of one element that keeps another
as it is. Each such update is a group of computations (the new values, then the stores)
that share a domain and run one after the other at each point. Marked atomic in one
group, each instance of the group (its computations at one point) is one critical
section: a target takes the group's lock before the first and releases it after the last.
All state the group touches is then touched under the lock, so the legality check lets a
parallel or vector loop carry every dependence between two instances of the group (their
order becomes any order, which the user asserts does not matter, as with Halide's
``atomic()``); every other dependence is checked as usual.

One lock per group, not one per element: the new values may sit in storage shared by all
instances (a scalar allocated outside the loop), which a lock per element would not
protect. Before code is printed, :func:`critical_sections` checks in the loop AST that
the group's statements do run together (each point's statements consecutive, in one
order, nothing between them) and tells each statement whether it takes or releases the
lock.
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.loopast import Alloc, Block, For, If, Node, Stmt, StmtInfo
from .layer1 import Layer1
from .placement import TimeSpace


def groups(ts: TimeSpace) -> dict[str, list[str]]:
    """Group name -> its computations (in program order)."""
    out: dict[str, list[str]] = {}
    for n in ts.order:
        s = ts.comps.get(n)
        if s is not None and s.group[0]:
            out.setdefault(s.group[0], []).append(n)
    return out


def group_pairs(l1: Layer1, ts: TimeSpace) -> isl.UnionMap:
    """Every pair of time-space points of one group's instances: the dependences a
    parallel or vector loop may carry between them."""
    out = isl.UnionMap.empty(l1.param_space)
    for members in groups(ts).values():
        pts = isl.UnionSet.empty(l1.param_space)
        for n in members:
            full = ts.comps[n].full
            assert full is not None
            pts = pts.union(isl.UnionSet.from_set(full.range()))
        out = out.union(isl.UnionMap.from_domain_and_range(pts, pts))
    return out


def critical_sections(body: Node, stmts: dict[str, StmtInfo], ts: TimeSpace
                      ) -> dict[str, StmtInfo]:
    """``stmts`` with each group member's ``critical`` set (its lock, whether it takes it,
    whether it releases it); ScheduleError naming the group when its statements do not
    run together at each point."""
    members = groups(ts)
    if not members:
        return stmts
    of = {n: g for g, ns in members.items() for n in ns}
    order: dict[str, tuple[str, ...]] = {}

    def refuse(g: str, why: str) -> ScheduleError:
        command = ts.comps[members[g][0]].group[1]
        return ScheduleError(
            f"{command}: the computations of atomic group {g!r} ({', '.join(members[g])}) "
            f"do not run one after the other at each point, as one critical section needs: "
            f"{why} (give them one domain and one schedule, ordered at their innermost "
            "loop)", computations=tuple(members[g]), command=command)

    def point(s: Stmt) -> tuple[object, ...]:
        bound = dict(s.bindings)
        return tuple(bound.get(f"v_{v}") for v in stmts[s.comp].iters)

    def run(g: str, found: list[Stmt]) -> None:
        n = len(members[g])
        names = tuple(s.comp for s in found)
        for k in range(0, len(found), n):
            chunk = names[k:k + n]
            missing = [m for m in members[g] if m not in chunk]
            if missing or len(set(chunk)) != n:
                alone = list(dict.fromkeys(chunk))
                raise refuse(g, f"{', '.join(alone)} run{'s' if len(alone) == 1 else ''} "
                                f"without {', '.join(missing) or 'the others'}")
            if order.setdefault(g, chunk) != chunk:
                raise refuse(g, f"they run in the order {', '.join(chunk)} at some points "
                                f"and {', '.join(order[g])} at others")
            if len({point(s) for s in found[k:k + n]}) != 1:
                raise refuse(g, f"{', '.join(chunk)} run together at different points")

    def visit(node: Node) -> None:
        if isinstance(node, Block):
            kids = _flat(node)
            i = 0
            while i < len(kids):
                kid = kids[i]
                g = of.get(kid.comp) if isinstance(kid, Stmt) else None
                if g is None:
                    visit(kid)
                    i += 1
                    continue
                j = i
                while j < len(kids) and isinstance(kids[j], Stmt) and \
                        of.get(kids[j].comp) == g:  # type: ignore[attr-defined]
                    j += 1
                run(g, kids[i:j])  # type: ignore[arg-type]
                i = j
        elif isinstance(node, Stmt):
            if node.comp in of:
                run(of[node.comp], [node])
        elif isinstance(node, For | Alloc):
            visit(node.body)
        elif isinstance(node, If):
            visit(node.then)
            if node.orelse is not None:
                visit(node.orelse)

    visit(body)
    locks = {g: k for k, g in enumerate(sorted(order))}
    out = dict(stmts)
    for g, names in order.items():
        for n in names:
            out[n] = dataclasses.replace(out[n], critical=(locks[g], n == names[0],
                                                           n == names[-1]))
    return out


def _flat(b: Block) -> list[Node]:
    """The children of ``b``, nested blocks' children in their place (a block's
    statements run one after the other whatever its nesting)."""
    out: list[Node] = []
    for kid in b.body:
        out += _flat(kid) if isinstance(kid, Block) else [kid]
    return out
