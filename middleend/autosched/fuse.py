"""Statements that share a loop nest and one plan for all of them: fusion kept, not undone.

The search gives every statement its own loop nest where that is legal (:mod:`.search`,
step 1), which is right when statements want different loop orders. It is wrong when
they read the same operand alike: bicg's ``s[j] += r[i] A[i, j]`` and
``q[i] += A[i, j] p[j]``, written in one Julia loop, then read ``A`` twice, as numpy's two
BLAS calls do, where one pass serves both. So, before distributing, the groups of
statements the source runs in one loop nest (each ``after`` the previous at its
innermost loop, over the same variables and extents) that read some buffer alike, and
write nothing another member accesses, are
ranked together: one plan for all of them, estimated with :func:`.cost.joint_cost` (their
work added, their cache lines counted once), against the sum of each one's own best plan.
A group whose joint plan the model finds cheaper stays in one loop nest; the search then
checks its joint candidates like any other (the legality check has the last word) and,
where none is legal, distributes it after all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..driver.summary import Stmt
from ..ir import commands as cmd
from .cost import MachineModel, joint_cost
from .plan import Plan, commands, loops
from .space import fld_blocks, likely_legal, plans, ranked


@dataclass(frozen=True)
class Group:
    """Statements run in one loop nest: ``members`` in source order, ``links`` the
    positions in the ordering commands of the ``after`` that puts each member after the
    one before it, at its innermost loop."""

    members: tuple[str, ...]
    links: tuple[int, ...]


def groups(stmts: Mapping[str, Stmt], orders: Sequence[cmd.Command],
           skip: set[str]) -> list[Group]:
    """The groups of the source's ordering: chains of ``after`` at the innermost loop
    between statements of the same variables, extents and lower bounds, not in ``skip``
    (scheduled by the user, or by a tuning or placement), that read a buffer alike and
    write nothing another one accesses."""
    by_later: dict[str, tuple[str, int]] = {}
    for k, c in enumerate(orders):
        if type(c) is not cmd.After or c.level == cmd.ROOT:
            continue
        a, b = stmts.get(c.other), stmts.get(c.comp)
        if a is None or b is None or {a.name, b.name} & skip or not a.vars:
            continue
        if (a.vars, a.extents, a.lows) != (b.vars, b.extents, b.lows) \
                or c.level != a.vars[-1] or b.name in by_later:
            continue
        by_later[b.name] = (a.name, k)
    firsts = {a for a, _ in by_later.values()} - set(by_later)
    out: list[Group] = []
    nxt = {a: (b, k) for b, (a, k) in by_later.items()}  # one later per earlier statement
    for first in sorted(firsts, key=list(stmts).index):
        members, links = [first], []
        while members[-1] in nxt:
            b, k = nxt.pop(members[-1])
            members.append(b)
            links.append(k)
        if _alike([stmts[n] for n in members]):
            out.append(Group(tuple(members), tuple(links)))
    return out


def _alike(sts: Sequence[Stmt]) -> bool:
    """Whether two of ``sts`` read one buffer with the same reach (the lines one pass
    brings in serve both) and none of them accesses what another writes: members that
    depend on each other (covariance's scaling and its symmetric copy, one the other's
    reader on the diagonal) fuse into a nest cut up by the dependence's guards, which
    the model does not see (2.3x slower there than apart)."""
    written = {st.name: {a.buffer for a in st.accesses if a.write} for st in sts}
    for st in sts:
        others = set().union(*(w for n, w in written.items() if n != st.name))
        if any(a.buffer in others for a in st.accesses):
            return False
    seen: dict[tuple[str, tuple[tuple[float, ...], ...]], str] = {}
    for st in sts:
        for a in st.accesses:
            if not a.write and seen.setdefault((a.buffer, a.spans), st.name) != st.name:
                return True
    return False


def joint_ranked(sts: Sequence[Stmt], m: MachineModel) -> list[tuple[float, Plan]]:
    """The distinct plans of every member (each with the others' blocks of a sum per
    block, which the plan gives all of them), by :func:`.cost.joint_cost`, those
    likely legal for every member first."""
    free = list(sts[0].vars)
    blocks = [b for st in sts for b in fld_blocks(st, free)]
    seen: set[Plan] = set()
    out: list[tuple[bool, float, int, Plan]] = []
    for st in sts:
        for p in plans(st, free, m, blocks):
            for q in (p, dataclasses.replace(p, parallel=None)):
                if q in seen:
                    continue
                seen.add(q)
                legal = all(likely_legal(x, (), q) for x in sts)
                out.append((not legal, joint_cost(sts, loops(st, (), q), m), len(out), q))
    out.sort(key=lambda t: (t[0], t[1], t[2]))
    return [(c, p) for _, c, _, p in out]


def apart(sts: Sequence[Stmt], m: MachineModel) -> float:
    """The model's cycles for ``sts`` each in its own loop nest, each with its best plan
    likely to be legal (the search's first try)."""
    return sum(ranked(st, (), m)[0][0] for st in sts)


def innermost(st: Stmt, plan: Plan) -> str:
    """The name of the innermost loop ``plan``'s commands give ``st`` (a vectorized
    loop's is that of its vector loop), where the members share every loop."""
    last = loops(st, (), plan)[-1]
    return f"{last.name}_vi" if last.tag == "vector" else last.name


def fused(sts: Sequence[Stmt], g: Group, plan: Plan, orders: Sequence[cmd.Command]
          ) -> tuple[dict[str, list[cmd.Command]], list[cmd.Command]]:
    """Each member's commands for ``plan`` and the ordering with each link at the plan's
    innermost loop."""
    return ({st.name: commands(st, (), plan) for st in sts},
            _links_at(g, orders, innermost(sts[0], plan)))


def distributed(g: Group, orders: Sequence[cmd.Command]) -> list[cmd.Command]:
    """The ordering with the group's links at the root: each member in its own nest."""
    return _links_at(g, orders, cmd.ROOT)


def _links_at(g: Group, orders: Sequence[cmd.Command], level: str) -> list[cmd.Command]:
    out = list(orders)
    for k in g.links:
        c = out[k]
        assert isinstance(c, cmd.After)
        out[k] = cmd.After(c.comp, c.other, level)
    return out
