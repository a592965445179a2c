"""Scatter from and gather to a root rank (``me.scatter``/``me.gather``): their plan and
the checks of their placement.

A scatter moves the blocks of a distributed input from the root's whole copy to their
owners; a gather moves every rank's block of a distributed output to the root. Both are
statements of the time-space like any other (first / last unless ordered otherwise). What
each rank receives or sends is exactly its block (``_Blocks.own``): the elements the
program computes or reads there are a subset, and the halo comes from the exchanges. So a
scatter must come before every access of the buffer on every rank (an exchange of it
included: it would send what was not there yet), and a gather after every write of the
buffer by a computation (a receive or an exchange writes only a halo copy, which is not
gathered). Both are checked with ISL on the time-space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import islpy as isl

from ..ir import commands as cmd
from ..ir.distribution import RootOp
from ..ir.errors import ScheduleError
from ..ir.loopast import Program
from .dataflow import logical_access
from .exchange_order import _instance

if TYPE_CHECKING:
    from .distribution import _Blocks, _Ranks
    from .layer4 import Op

KINDS = ("scatter", "gather")


def plan_root_ops(rk: _Ranks, blocks: dict[str, _Blocks], program: Program,
                  commands: Sequence[cmd.Command]) -> dict[str, RootOp]:
    """Each scatter's and gather's buffer and root, after checking that the buffer is a
    distributed argument that the operation may move, the root a rank, and the
    placement."""
    out: dict[str, RootOp] = {}
    roles = {b.name: b.role for b in program.buffers}
    seen: dict[tuple[str, str], str] = {}
    for o in rk.l4.ops.values():
        if o.kind not in KINDS:
            continue
        buf = str(o.src)
        root = int(o.properties[0].split("=", 1)[1])
        want = ("input", "inout") if o.kind == "scatter" else ("output", "inout")
        if buf not in blocks:
            raise _fail(o, f"{buf!r} is not distributed; {o.kind} moves the blocks of a "
                           f"distributed buffer ({buf}.distribute(dim))")
        if roles.get(buf) not in want:
            what = "an input" if o.kind == "scatter" else "an output"
            raise _fail(o, f"{buf!r} is {roles.get(buf, 'not an argument')}; a {o.kind} "
                           f"moves {what} of the kernel")
        if root >= rk.R:
            raise _fail(o, f"root {root} is not a rank (the program runs on ranks 0.."
                           f"{rk.R - 1})")
        if (o.kind, buf) in seen:
            raise _fail(o, f"{buf!r} already has a {o.kind} ({seen[o.kind, buf]!r})")
        other = next((x for x in out.values() if x.buffer == buf and x.root != root), None)
        if other is not None:
            raise _fail(o, f"the {other.kind} of {buf!r} has root {other.root}; its scatter "
                           "and its gather must have the same root")
        seen[o.kind, buf] = o.name
        _check_placement(rk, o, buf, commands)
        out[o.name] = RootOp(o.kind, buf, root)
    return out


def _fail(o: Op, msg: str, command: str | None = None, index: int | None = None
          ) -> ScheduleError:
    return ScheduleError(f"{o.kind} {o.name!r}: {msg}", computations=(o.name,),
                         command=command or o.command,
                         command_index=o.command_index if command is None else index)


def _check_placement(rk: _Ranks, o: Op, buf: str, commands: Sequence[cmd.Command]) -> None:
    """Refuse an access (scatter) or a write (gather) of ``buf`` on the wrong side of
    ``o``, naming the instance and the command that placed ``o``."""
    tsp = rk.t_space()
    xs = rk.ts.comps[o.name].full
    assert xs is not None
    here = xs.range()
    scatter = o.kind == "scatter"
    # the time-space points on the wrong side of the operation
    wrong = isl.Map.lex_le(tsp) if scatter else isl.Map.lex_ge(tsp)
    wrong_pts = wrong.intersect_range(here).domain()
    touching = [(n, m.domain()) for n, m, _ in rk.accesses(buf, reads=scatter, ops=scatter)
                if n != o.name]
    if scatter:
        # the reads of an input (which the physical accesses leave out: nothing writes a
        # host input), and an exchange of the buffer (it sends what the scatter brings)
        for n, comp in rk.l1.comps.items():
            full = rk.ts.comps[n].full if n in rk.ts.comps else None
            for r in comp.reads:
                if full is not None and rk.l4.buffer_of(rk.l3, r) == buf:
                    acc = logical_access(rk.l1, rk.l3, r)
                    touching.append((n, full.intersect_domain(acc.domain()).range()))
        for x in rk.l4.ops.values():
            full = rk.ts.comps[x.name].full
            if x.kind == "exchange" and x.src == buf and full is not None:
                touching.append((x.name, full.range()))
    for _, pts in touching:
        bad = pts.intersect(wrong_pts)
        if bad.is_empty():
            continue
        who = _instance(rk, bad.sample_point())
        how = (f"runs after {who} accesses {buf!r}; place it before every access of the "
               "buffer (it runs first unless ordered otherwise)") if scatter else \
            (f"runs before {who} writes {buf!r}; place it after every write of the buffer "
             "(it runs last unless ordered otherwise)")
        moved = [k for k, c in enumerate(commands)
                 if isinstance(c, cmd.After) and o.name in (c.comp, c.other)]
        if moved:
            raise _fail(o, how, commands[moved[-1]].describe(), moved[-1])
        raise _fail(o, how)
