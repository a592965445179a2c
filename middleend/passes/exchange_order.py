"""An exchange must send the values its consumer reads: the check of its placement.

The legality check sees one address space: a read of an element another rank owns is legal
there as soon as the producer's write comes before the read. On the ranks, the reader sees
the copy that the exchange brought, i.e. the owner's value *when the exchange ran*. So for
every element ``e`` a rank reads and does not own, through ``me.exchange(P, buf, level)``,
the exchange instance of the read's iteration of ``level`` must come before the read, and
no write of ``e`` may come between that exchange and the read: otherwise the rank reads a
stale or never-sent value, which only a run would show. Everything here is ISL relations
over the time-space, rank by rank, so the refusal names an element and the instances.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from ..ir.islutil import sets_of

if TYPE_CHECKING:
    from .distribution import _Blocks, _Ranks
    from .layer4 import Op


def check_exchange_order(rk: _Ranks, blocks: dict[str, _Blocks],
                         commands: Sequence[cmd.Command]) -> None:
    """Refuse an exchange placed after a read it serves or before a write of an element
    it sends (ScheduleError naming the exchange, the buffer, one element, the instances,
    and the command that placed it: the last ordering command that moved it, else the
    exchange itself)."""
    tsp = rk.t_space()
    le = isl.UnionMap.from_map(isl.Map.lex_le(tsp))  # { T -> T' : T <= T' }
    gt = isl.UnionMap.from_map(isl.Map.lex_gt(tsp))  # { T -> T' : T > T' }
    for o in rk.l4.ops.values():
        if o.kind != "exchange" or o.src not in blocks or o.consumer is None:
            continue
        p, buf, bl = o.consumer, o.src, blocks[o.src]
        lv = -1 if o.level in (None, cmd.ROOT) else rk.ts.comps[p].ext_dims.index(o.level)
        xs = rk.ts.comps[o.name].full
        assert xs is not None
        serve = isl.Map.universe(tsp.map_from_set())  # a read -> its iteration's exchange
        for q in range(lv + 1):
            serve = serve.equate(isl.dim_type.in_, 2 * q + 1, isl.dim_type.out, 2 * q + 1)
        serve_u = isl.UnionMap.from_map(serve.intersect_range(xs.range()))
        # the owners' computations (a receive only writes a copy in another rank's halo)
        writes = isl.UnionMap.empty(tsp.params())
        for _, m, _ in rk.accesses(buf, reads=False, ops=False):
            writes = writes.union(isl.UnionMap.from_map(m))
        for r in range(rk.R):
            remote = isl.UnionMap.empty(tsp.params())  # { read on r -> element not r's }
            for n, m, _ in rk.accesses(buf, writes=False, ops=False):
                if n == p:
                    m = m.intersect_domain(rk.on_rank(p, r)).subtract_range(bl.own(r))
                    remote = remote.union(isl.UnionMap.from_map(m))
            if remote.is_empty():
                continue
            reads = remote.domain()
            served = serve_u.intersect_domain(reads)
            late = served.intersect(le).domain().union(reads.subtract(served.domain()))
            if not late.is_empty():
                rd = late.sample_point()
                raise _refuse(rk, o, bl, r, _at(remote, rd), rd, None, commands)
            # { read -> a write of an element it reads remotely, before the read and not
            # before the exchange that serves the read }
            stale = remote.apply_range(writes.reverse()).intersect(gt).intersect(
                served.apply_range(le))
            if not stale.is_empty():
                rd, wr = _split(stale.wrap().sample_point(), tsp)
                elems = _at(remote, rd).intersect(_at(writes, wr))
                raise _refuse(rk, o, bl, r, elems, rd, wr, commands)


def _at(u: isl.UnionMap, pt: isl.Point) -> isl.UnionSet:
    """The elements ``u`` maps the time-space point ``pt`` to."""
    return u.intersect_domain(isl.UnionSet.from_point(pt)).range()


def _split(pair: isl.Point, tsp: isl.Space) -> tuple[isl.Point, isl.Point]:
    """A point of a wrapped ``{T -> T'}`` as its two time-space points (params kept)."""
    n = tsp.dim(isl.dim_type.set)
    s = isl.Set.from_point(pair)
    a = s.project_out(isl.dim_type.set, n, n)
    b = s.project_out(isl.dim_type.set, 0, n)
    return (a.reset_tuple_id().sample_point(), b.reset_tuple_id().sample_point())


def _coords(pt: isl.Point) -> list[int]:
    n = pt.get_space().dim(isl.dim_type.set)
    return [int(pt.get_coordinate_val(isl.dim_type.set, k).to_python()) for k in range(n)]


def _instance(rk: _Ranks, pt: isl.Point) -> str:
    """The statement instance at a time-space point, as ``name[var = value, ...]``."""
    for s in sets_of(isl.UnionSet.from_point(pt).apply(rk.ph.tinv)):
        name = s.get_tuple_name()
        names = rk.l1.comps[name].vars if name in rk.l1.comps else []
        vals = _coords(s.sample_point())
        return f"{name}[" + ", ".join(
            f"{v} = {x}" for v, x in zip(names or [f"d{k}" for k in range(len(vals))], vals,
                                        strict=False)) + "]"
    return str(pt)  # pragma: no cover - every time-space point is an instance


def _refuse(rk: _Ranks, o: Op, bl: _Blocks, r: int, elems: isl.UnionSet, read: isl.Point,
            write: isl.Point | None, commands: Sequence[cmd.Command]) -> ScheduleError:
    buf = bl.buf
    pts = sets_of(elems)
    e = pts[0].sample_point() if pts else None
    elem = f"{buf}[{', '.join(map(str, _coords(e)))}]" if e is not None else f"of {buf!r}"
    owners = [q for q in range(rk.R) if e is not None and
              not isl.Set.from_point(e).intersect(bl.own(q)).is_empty()]
    owner = f" (owned by rank {owners[0]})" if owners else ""
    reader = _instance(rk, read)
    if write is None:
        what = (f"runs after {reader} reads element {elem}{owner} on rank {r} (or in "
                "another iteration of its loop), so the read does not see what it sends")
        comps: tuple[str, ...] = (o.name, str(o.consumer))
    else:
        writer = _instance(rk, write)
        what = (f"sends element {elem}{owner} to rank {r} before {writer} writes it, and "
                f"{reader} reads it there after that write")
        comps = (o.name, writer.split("[", 1)[0], str(o.consumer))
    moved = [k for k, c in enumerate(commands)
             if isinstance(c, cmd.After) and o.name in (c.comp, c.other)]
    command, index = ((commands[moved[-1]].describe(), moved[-1]) if moved
                      else (o.command, o.command_index))
    return ScheduleError(
        f"illegal exchange placement: exchange {o.name!r} of {buf!r} {what}; place the "
        "exchange after the writes it sends and before the reads it serves",
        computations=tuple(dict.fromkeys(comps)), command=command, command_index=index)
