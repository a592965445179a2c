"""Distribution over a number of ranks read at run time (``f.compile(target="mpi",
ranks="runtime")``): one program serves every ``R``.

The fixed plan (:mod:`.distribution`) enumerates the ranks, because a block start
``r * ceil(N / R)`` with ``R`` a parameter is not affine. Here one rank stands for all of
them, described by two parameters instead: ``me_lo``, the first index of its block, and
``me_B``, the block size. Every distributed buffer is cut in blocks of the same ``B``
(the program computes ``B = max ceil(extent / R)`` over them at run time, from
``MPI_Comm_size``), so block ``k`` of every buffer lies on rank ``k``. Then, affine in
``(me_lo, me_B, params)``:

- a loop tagged ``distribute`` runs its iteration ``v`` on the rank whose block holds
  ``v`` (``me_lo <= v < me_lo + me_B``): distribute the loop itself, not the outer loop
  of a split by a constant;
- a rank owns ``{me_lo <= x < me_lo + me_B}`` of each distributed buffer, its neighbours
  ``me_lo - me_B ..`` and ``me_lo + me_B ..``;
- an exchange is the exact element sets a rank needs from its two neighbours, as loops
  over the receiver's ``me_lo``: the sender evaluates them with its neighbour's.

Those two neighbours hold all a rank needs when ``B`` is at least every halo width (a
constant computed here); the program checks that at call time (``Distribution.min_block``)
and fails with one line naming it. The same checks as for a fixed ``R`` run here on the
symbolic rank: owner computes, remote reads brought by an exchange, the exchanges'
placement. Refused with a ScheduleError naming the command: point-to-point sends and
receives (their peers are rank numbers), a scatter's or gather's root other than 0, and a
halo that grows with the params (it would not come from the neighbours only).
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl

from ..ir import commands as cmd
from ..ir.distribution import BLOCK, BLOCK_C, LO, RECV_LO_C, Distribution, Transfer, Window
from ..ir.errors import ScheduleError
from ..ir.loopast import IVar, Program
from .data import Layer3, box, lift_params
from .distribution import (
    _Blocks,
    _by_loops,
    _check_owner_computes,
    _check_remote_reads,
    _distributed_buffers,
    _element_loops,
    _exchanged,
    _fixed_ranks,
    _loop_values,
    _Ranks,
    _set_text,
    _union,
    program_params,
)
from .exchange_order import check_exchange_order
from .layer1 import Layer1
from .layer4 import Layer4
from .physical import Physical
from .placement import TimeSpace
from .rootio import plan_root_ops


def _param(space: isl.Space, name: str) -> isl.PwAff:
    """The param ``name`` as a function on the set space ``space``."""
    ls = isl.LocalSpace.from_space(space)
    k = space.find_dim_by_name(isl.dim_type.param, name)
    return isl.PwAff.from_aff(isl.Aff.var_on_domain(ls, isl.dim_type.param, k))


class _RtRanks(_Ranks):
    """One symbolic rank (number 0 in the checks' loops over ranks): its block starts
    at the param ``me_lo`` and has ``me_B`` elements."""

    runtime = True

    def __init__(self, l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace, ph: Physical
                 ) -> None:
        super().__init__(l1, l3, l4, ts, ph, 1)
        sp = l1.param_space
        n = sp.dim(isl.dim_type.param)
        sp = sp.add_dims(isl.dim_type.param, 2)
        sp = sp.set_dim_name(isl.dim_type.param, n, LO).set_dim_name(isl.dim_type.param,
                                                                        n + 1, BLOCK)
        self.pspace = sp

    def t_space(self) -> isl.Space:
        return isl.Space.set_alloc(self.ctx, 0, self.ntd).align_params(self.pspace)

    def _espace(self, buf: str) -> isl.Space:
        b = self.l3.buffers[buf]
        return isl.Space.set_alloc(self.ctx, 0, b.ndim).align_params(
            self.pspace).set_tuple_name(isl.dim_type.set, buf)

    def valid(self, space: isl.Space) -> isl.Set:
        """``me_lo >= 0`` and ``me_B >= 1`` on ``space``."""
        s = isl.Set.universe(space)
        lo, b = _param(space, LO), _param(space, BLOCK)
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(space))
        one = zero.add_constant_val(isl.Val.one(self.ctx))
        return s.intersect(zero.le_set(lo)).intersect(one.le_set(b))

    def on_rank(self, n: str, r: int) -> isl.Set:
        """The time-space points of ``n`` that the rank ``r`` blocks after the symbolic
        one runs: its distributed loop's iterations in that block."""
        sp = self.t_space()
        s = self.valid(sp)
        d = self.dist.get(n)
        if d is None:
            return s
        x = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(sp), isl.dim_type.set, d)
        b = _param(sp, BLOCK)
        lo = _param(sp, LO).add(b.scale_val(isl.Val.int_from_si(self.ctx, r)))
        return s.intersect(lo.le_set(x)).intersect(x.lt_set(lo.add(b)))

    def blocks(self, buf: str, dim: int) -> _Blocks:
        return _RtBlocks(self, buf, dim)

    def blocks_of(self) -> str:
        return (f"{BLOCK} from me_lo, rank 0 standing for every rank; with ranks='runtime' "
                "a distributed loop runs its iteration v on the rank whose block holds v: "
                "distribute the loop itself, not the outer loop of a split by a block size")


class _RtBlocks(_Blocks):
    """Blocks of ``me_B`` elements; block ``r`` (relative to the symbolic rank's)
    starts at ``me_lo + r * me_B``."""

    def __init__(self, rk: _RtRanks, buf: str, dim: int) -> None:
        self.rk, self.buf, self.dim = rk, buf, dim
        self.space = rk._espace(buf)
        params = isl.Set.universe(rk.pspace)
        ls = isl.LocalSpace.from_space(params.get_space())
        k = rk.pspace.find_dim_by_name(isl.dim_type.param, BLOCK)
        self.block = isl.PwAff.from_aff(isl.Aff.var_on_domain(ls, isl.dim_type.param, k))
        self.box = box(rk.l3.buffers[buf], self.space).intersect(rk.valid(self.space))

    def start(self, sp: isl.Space, r: int) -> isl.PwAff:
        return _param(sp, LO).add(lift_params(self.block, sp).scale_val(
            isl.Val.int_from_si(self.rk.ctx, r)))


def plan_runtime_distribution(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace,
                              ph: Physical, program: Program,
                              commands: Sequence[cmd.Command]) -> Distribution:
    """Windows and exact neighbour exchanges for any number of ranks, after the checks
    of the fixed plan on the symbolic rank; see the module."""
    _refuse_rank_numbers(commands)
    rk = _RtRanks(l1, l3, l4, ts, ph)
    blocks = _distributed_buffers(rk, commands)
    if not blocks:
        raise ScheduleError("ranks='runtime' cuts the distributed buffers in blocks of a "
                            "size computed at run time; distribute a buffer "
                            "(buf.distribute(dim)) or compile with a number of ranks")
    windows = {b: _window(rk, bl, program) for b, bl in blocks.items()}
    need = max([1] + [max(w.lo_halo, w.hi_halo) for w in windows.values()])
    _check_owner_computes(rk, blocks)
    _check_replicated(rk, blocks)
    exchanges = {o.name: _exchange(rk, blocks, o.name, need) for o in l4.ops.values()
                 if o.kind == "exchange"}
    _check_remote_reads(rk, blocks, exchanges)
    check_exchange_order(rk, blocks, commands)
    values = {o.name: _loop_values(rk, o.name) for o in l4.ops.values()
              if o.kind == "exchange"}
    for o in l4.ops.values():
        if o.kind in ("scatter", "gather") and o.properties[0] != "root=0":
            raise ScheduleError(f"{o.kind} {o.name!r}: with ranks='runtime' the root must "
                                "be rank 0, the one rank every run has",
                                computations=(o.name,), command=o.command,
                                command_index=o.command_index)
    root_ops = plan_root_ops(rk, blocks, program, commands)
    return Distribution(0, windows, exchanges, {}, _fixed_ranks(rk), values, root_ops,
                        runtime=True, min_block=need)


def _refuse_rank_numbers(commands: Sequence[cmd.Command]) -> None:
    for k, c in enumerate(commands):
        if isinstance(c, cmd.Send):  # a receive too
            raise ScheduleError(
                f"{c.describe()} (command #{k}): a send or receive names its peer by rank "
                "number, which a program for a number of ranks read at run time cannot "
                "check; use me.exchange(consumer, buf) or compile with ranks=<R>",
                computations=(c.comp,), command=c.describe(), command_index=k)


def _window(rk: _RtRanks, bl: _Blocks, program: Program) -> Window:
    lo, hi = bl.halo(0, rk.elements(bl.buf, 0))
    if lo is None or hi is None:
        raise ScheduleError(
            f"ranks='runtime': the elements of {bl.buf!r} that a rank accesses reach "
            "beyond its block by an amount that grows with the params (a computation that "
            "is not distributed reads it, or reads far away), so they would not all come "
            "from the neighbouring ranks; distribute the readers, or compile with "
            "ranks=<R>")
    return Window(bl.buf, bl.dim, IVar(BLOCK_C), lo, hi, False)


def _check_replicated(rk: _RtRanks, blocks: dict[str, _Blocks]) -> None:
    """A buffer that is not distributed, written by a distributed computation: an output
    would be rank 0's part only; a temporary may be read on a rank only where that rank
    wrote it, or where no distributed computation writes."""
    for buf in rk.l3.buffers:
        if buf in blocks:
            continue
        writers = [(n, m) for n, m, _ in rk.accesses(buf, reads=False, ops=False)
                   if rk.dist[n] is not None]
        if not writers:
            continue
        n0 = writers[0][0]
        if buf in rk.l3.outputs:
            raise ScheduleError(
                f"output {buf!r} is written by {n0!r}, whose loop is distributed, but {buf!r} "
                f"is not: each rank would hold a part of it; distribute it too "
                f"({buf}.distribute(dim) or {n0}.buffer().distribute(dim))",
                computations=(n0,))
        anyone = _union(m.range() for _, m in writers)
        mine = _union(m.intersect_domain(rk.on_rank(n, 0)).range() for n, m in writers)
        assert anyone is not None and mine is not None
        for n, m, _ in rk.accesses(buf, writes=False, ops=False):
            bad = m.intersect_domain(rk.on_rank(n, 0)).range().intersect(anyone).subtract(mine)
            if not bad.is_empty():
                raise ScheduleError(
                    f"{n!r} reads on a rank elements of {buf!r} that another rank computes: "
                    f"{_set_text(bad)}; {buf!r} is not distributed, so nothing brings them "
                    f"(distribute {buf!r} and exchange its halo)", computations=(n,))


def _exchange(rk: _RtRanks, blocks: dict[str, _Blocks], name: str, need_b: int
              ) -> tuple[Transfer, ...]:
    """The messages of one exchange: what the symbolic rank's instances of the consumer
    read and its block does not hold, from the block below (``src`` -1) and the block
    above (``src`` +1); ``dst`` is 0. With blocks of at least ``need_b`` elements those
    are all it reads (checked here with ISL)."""
    o, p, buf, bl, reads, loops = _exchanged(rk, blocks, name)
    need = None
    for m in reads:
        m = m.intersect_domain(rk.on_rank(p, 0)).subtract_range(bl.own(0))
        need = m if need is None else need.union(m)
    if need is None:
        return ()
    elems = _by_loops(need, loops, rk.ntd)
    pmap = {**program_params(rk), LO: RECV_LO_C, BLOCK: BLOCK_C}
    out: list[Transfer] = []
    rest = elems
    for off in (-1, 1):
        own = bl.own(off).align_params(elems.get_space())
        part = elems.intersect(own)
        rest = rest.subtract(own)
        if not part.is_empty():
            out.append(Transfer(off, 0, buf, _element_loops(part, pmap)))
    big = isl.Set.universe(rest.get_space())
    bsz = _param(big.get_space(), BLOCK)
    floor = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(big.get_space()))
    rest = rest.intersect(big.intersect(floor.add_constant_val(
        isl.Val.int_from_si(rk.ctx, need_b)).le_set(bsz)))
    if not rest.is_empty():
        raise ScheduleError(f"{o.command}: with ranks='runtime' a rank would need elements "
                            f"of {buf!r} beyond its neighbours' blocks: {_set_text(rest)}; "
                            "compile with ranks=<R>", computations=(name, p))
    return tuple(out)
