"""Point-to-point communication of a distributed program (``send``/``receive`` of
Table II) for a given number of ranks: which send each receive matches, the rank pairs
each one connects (exact, rank by rank), and the deadlocks the schedule makes certain.
Split from :mod:`.distribution`, which plans the rest (ownership, exchanges)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import islpy as isl

from ..ir import commands as cmd
from ..ir.affine import AffineContext, NonAffine, to_pw_aff
from ..ir.errors import ScheduleError
from ..ir.expr import Expr
from .data import lift_params

if TYPE_CHECKING:  # distribution imports this module to plan; the types only go back
    from .distribution import _Ranks


def match_messages(rk: _Ranks, commands: Sequence[cmd.Command]) -> dict[str, int]:
    """Message tags: each send its own, each receive its matching send's (named, or the
    only send there is); then every (sender, receiver) pair a send serves must be served
    by its receive and the reverse, and a schedule where every rank waits in a blocking
    receive before it sends is refused."""
    sends = [c for c in commands if isinstance(c, cmd.Send) and not isinstance(c, cmd.Receive)]
    recvs = [c for c in commands if isinstance(c, cmd.Receive)]
    tags = {c.comp: k + 1 for k, c in enumerate(sends)}
    by_name = {c.comp: c for c in sends}
    for c in recvs:
        if c.matching:
            if c.matching not in by_name:
                raise ScheduleError(f"{c.describe()}: no send named {c.matching!r}",
                                    computations=(c.comp,), command=c.describe())
            s = by_name[c.matching]
        elif len(sends) == 1:
            s = sends[0]
        else:
            raise ScheduleError(f"{c.describe()}: say which send it receives "
                                f"(matching=<send>; sends: {sorted(by_name) or 'none'})",
                                computations=(c.comp,), command=c.describe())
        tags[c.comp] = tags[s.comp]
        _check_pairs(rk, s, c)
    for s in sends:
        if not any(tags.get(c.comp) == tags[s.comp] for c in recvs):
            raise ScheduleError(f"{s.describe()}: no receive matches this send (every send "
                                "needs a receive on its destination rank)",
                                computations=(s.comp,), command=s.describe())
    return tags


def _pairs(rk: _Ranks, name: str, peer: Expr) -> set[tuple[int, int]]:
    """The (rank, peer) pairs some instance of the operation ``name`` may connect."""
    o = rk.l4.ops[name]
    s = rk.ts.comps[name]
    assert s.full is not None
    try:
        pa = to_pw_aff(peer, AffineContext(o.domain.get_space()))
    except NonAffine as e:
        raise ScheduleError(f"{o.command}: the peer must be affine in its iterators ({e})",
                            computations=(name,)) from None
    out: set[tuple[int, int]] = set()
    for r in range(rk.R):
        inst = s.full.intersect_range(rk.on_rank(name, r)).domain()
        if rk.dist[name] is None:
            inst = o.domain
        for q in range(rk.R):
            hit = inst.intersect(pa.eq_set(lift_params(isl.PwAff.val_on_domain(
                isl.Set.universe(o.domain.get_space().params()), isl.Val.int_from_si(rk.ctx, q)),
                o.domain.get_space())))
            if not hit.is_empty():
                out.add((r, q))
    return out


def _check_pairs(rk: _Ranks, s: cmd.Send, c: cmd.Receive) -> None:
    sent = _pairs(rk, s.comp, rk.l4.ops[s.comp].peer)  # (sender, destination)
    got = {(q, r) for r, q in _pairs(rk, c.comp, rk.l4.ops[c.comp].peer)}  # (source, receiver)
    for a, b in sorted(sent ^ got):
        if not (0 <= b < rk.R):
            continue
        who = (f"{s.comp!r} sends from rank {a} to rank {b}, but {c.comp!r} receives nothing "
               f"there from rank {a}") if (a, b) in sent else \
              (f"{c.comp!r} on rank {b} receives from rank {a}, which {s.comp!r} never "
               f"sends to it")
        raise ScheduleError(f"unmatched communication: {who} (with {rk.R} ranks)",
                            computations=(s.comp, c.comp))
    for a, b in sorted(sent):
        if not 0 <= b < rk.R:
            raise ScheduleError(f"{s.comp!r} on rank {a} sends to rank {b}, which does not "
                                f"exist (ranks 0..{rk.R - 1})", computations=(s.comp,))
    for a, b in sorted(got):
        if not 0 <= a < rk.R:
            raise ScheduleError(f"{c.comp!r} on rank {b} receives from rank {a}, which does "
                                f"not exist (ranks 0..{rk.R - 1})", computations=(c.comp,))
    _check_deadlock(rk, s, c, got)


def _check_deadlock(rk: _Ranks, s: cmd.Send, c: cmd.Receive,
                    got: set[tuple[int, int]]) -> None:
    """A blocking receive placed before its send waits for a rank that waits too: when
    the waits form a cycle, every rank in it blocks forever."""
    order = rk.ts.order
    if order.index(c.comp) > order.index(s.comp) or "nonblocking" in c.properties:
        return
    bs, bc = rk.ts.comps[s.comp].betas, rk.ts.comps[c.comp].betas
    if not bs or not bc or bs[0] == bc[0]:
        return  # they share loops: which comes first depends on the iteration
    senders = {a for a, _ in _pairs(rk, s.comp, rk.l4.ops[s.comp].peer)}
    waits: dict[int, set[int]] = {}
    for a, b in got:
        if b in senders:  # b receives before it sends
            waits.setdefault(b, set()).add(a)
    for start in waits:
        seen, stack = set(), [start]
        while stack:
            x = stack.pop()
            for y in waits.get(x, ()):
                if y == start:
                    raise ScheduleError(
                        f"certain deadlock: {c.comp!r} is a blocking receive scheduled before "
                        f"{s.comp!r}, and rank {start} waits for ranks that wait in turn "
                        f"(waits: {dict(sorted((k, sorted(v)) for k, v in waits.items()))}); "
                        f"schedule the send first ({s.comp}.before({c.comp}, me.ROOT)) or "
                        "make the send asynchronous", computations=(c.comp, s.comp))
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
