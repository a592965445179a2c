"""The search: which loops statements share, then each statement's best legal plan.

1. *Distribution.* The front-end's ordering commands keep the source's loop structure
   (two statements in one Julia loop share it). Each shared loop is a constraint on both
   statements' plans, so the search first tries to give every statement its own loop nest
   (all ``after`` levels at the root), and where that is illegal (a time loop around two
   sweeps), one ordering at a time, keeping each that stays legal.
2. *Plans.* Statement by statement, in declaration order, the candidates of
   :mod:`.space` ranked by :mod:`.cost`; the first of the best few that the middle-end's
   legality check accepts, with the plans already chosen in place, is kept. The check is
   the one every compile runs (:func:`middleend.driver.lowering.check_commands`), so the
   result is legal by construction, never by the model's say-so.
3. *Around a sum.* A sum's initializer computed in the sum's loops and its reader fused
   after it in its outer loops, where the check accepts it (:mod:`.around`): a sum kept
   in memory then goes through the cache once, not three times.

Statements the user scheduled (any loop command of theirs) and the Layer IV operations are
left as they are. The result is deterministic: the same program, estimates and machine give
the same commands (nothing depends on time, except that ``deadline`` stops trying).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..driver.lowering import check_commands, checked_program
from ..driver.summary import Stmt, Summary, summarize
from ..driver.targets import TargetRegistry
from ..ir import commands as cmd
from ..ir.errors import MiddleEndError, ScheduleError
from ..ir.function import Function
from ..ir.latency import statement_latency
from . import around
from .cost import MachineModel, cost, joint_cost, vectorizable
from .devices import CANDIDATES, fpga_candidates, mpi_data
from .fuse import Group, apart, distributed, fused, groups, joint_ranked
from .pack import Packing, copy_cycles, packings, panelled, relayout
from .placement import At
from .plan import Plan, commands, loops
from .space import likely_legal, ranked

TRIES = 6  # candidates checked per statement before settling for a simpler one
_ORDERING = (cmd.After, cmd.Before, cmd.Then)


@dataclass(frozen=True)
class Choice:
    """What the search chose for one statement: its plan, the model's estimate for it
    and for the loops as they were, and how many candidates the legality check refused."""

    stmt: str
    plan: Plan | None  # None: left as it was
    shared: tuple[str, ...]
    estimate: float
    baseline: float
    refused: int
    what: str = ""  # a device mapping (plan None): what it is
    group: tuple[str, ...] = ()  # statements sharing its loop nest and plan (fuse.py)


@dataclass
class Searched:
    """The search's state: the commands it keeps as they were (``rest``: data mapping and
    the user's own loop commands), each statement's chosen commands (``blocks``, in
    declaration order), the ordering it settled on; what tuning starts from."""

    rest: list[cmd.Command]
    blocks: dict[str, list[cmd.Command]]
    orders: list[cmd.Command]
    choices: list[Choice]
    checks: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def commands(self) -> list[cmd.Command]:
        return self.rest + [c for b in self.blocks.values() for c in b] + self.orders

    def with_block(self, stmt: str, block: list[cmd.Command]) -> list[cmd.Command]:
        """The commands with ``stmt``'s block replaced by ``block``."""
        return self.with_blocks({stmt: block})

    def with_blocks(self, blocks: Mapping[str, list[cmd.Command]],
                    orders: list[cmd.Command] | None = None) -> list[cmd.Command]:
        """The commands with the statements' blocks in ``blocks`` replaced, and the
        ordering by ``orders`` if given."""
        out = list(self.rest)
        for n, b in self.blocks.items():
            out += blocks.get(n, b)
        return out + (self.orders if orders is None else orders)


def _user_scheduled(commands_: Sequence[cmd.Command]) -> set[str]:
    return {c.comp for c in commands_
            if isinstance(c, cmd.SCHEDULE_COMMANDS) and not isinstance(c, _ORDERING)}


class _Checker:
    """The legality check, counted, with the program's outputs."""

    def __init__(self, fn: Function, outputs: Sequence[Any] | None,
                 ranks: int | str | None = None) -> None:
        self.fn, self.outputs, self.count, self.ranks = fn, outputs, 0, ranks

    def legal(self, commands_: Sequence[cmd.Command]) -> bool:
        self.count += 1
        try:
            check_commands(self.fn, commands_, self.outputs, ranks=self.ranks)
        except MiddleEndError:
            return False
        return True


def _distribute(check: _Checker, rest: list[cmd.Command], orders: list[cmd.Command],
                stmts: Mapping[str, Stmt], keep: Sequence[int] = ()) -> list[cmd.Command]:
    """``orders`` with each ``after`` level moved as far out as stays legal: to the root
    (a loop nest of its own), else to the outermost of the statement's loops outside it
    that still is (a time loop around two sweeps stays shared, the sweeps' own loops
    are not); those at the positions ``keep`` (groups kept fused, :mod:`.fuse`) stay."""
    def at(c: cmd.Command, level: str) -> cmd.Command:
        assert isinstance(c, cmd.After)
        return type(c)(c.comp, c.other, level)

    movable = [k for k, c in enumerate(orders)
               if type(c) is cmd.After and c.level != cmd.ROOT and k not in keep]
    if not movable:
        return orders
    every = [at(c, cmd.ROOT) if k in movable else c for k, c in enumerate(orders)]
    if check.legal(rest + every):
        return every
    out = list(orders)
    for k in movable:
        c = out[k]
        assert isinstance(c, cmd.After)
        st = stmts.get(c.comp)
        outer = list(st.vars[:st.vars.index(c.level)]) if st and c.level in st.vars else []
        for level in [cmd.ROOT, *outer]:
            trial = list(out)
            trial[k] = at(c, level)
            if check.legal(rest + trial):
                out = trial
                break
    return out


def _shared(stmts: Mapping[str, Stmt], orders: Sequence[cmd.Command]) -> dict[str, int]:
    """Per statement, how many of its outer loops it shares with another statement (the
    non-root levels of the ordering commands: both sides keep those loops)."""
    depth: dict[str, int] = {}
    for c in orders:
        if not isinstance(c, cmd.After) or c.level == cmd.ROOT:
            continue
        later, earlier = (c.other, c.comp) if isinstance(c, cmd.Before) else (c.comp,
                                                                                c.other)
        s = stmts.get(later)
        if s is None or c.level not in s.vars:
            # a level that is not one of the statement's own variables: keep all loops
            for n in (later, earlier):
                if n in stmts:
                    depth[n] = len(stmts[n].vars)
            continue
        d = s.vars.index(c.level) + 1
        for n in (later, earlier):
            if n in stmts:
                depth[n] = max(depth.get(n, 0), min(d, len(stmts[n].vars)))
    return depth


_Device = Mapping[str, tuple[Stmt, tuple[str, ...], list[list[cmd.Command]], float]]


def _distributed(device: _Device, found: Searched, check: _Checker, summary: Summary
                 ) -> dict[str, Choice]:
    """The mpi target: the loops each statement's block distributes, then the buffers and
    exchanges that follow from them, checked together (at two ranks: the distribution
    plan is part of the check)."""
    loops_: dict[str, str] = {}
    for n in device:  # the statement variable each distributes (split in rank blocks)
        d = next(c.dim for c in found.blocks[n] if isinstance(c, cmd.Distribute))
        split = next((c for c in found.blocks[n] if isinstance(c, cmd.Split)
                      and c.outer == d), None)
        loops_[n] = split.dim if split is not None else d
    ops_before = list(check.fn.operations)
    data = mpi_data(check.fn, summary, loops_)
    if data is not None:
        found.orders = found.orders + data
        if check.legal(found.commands):
            return {n: Choice(n, None, sh, b, b, 0, f"distribute({loops_[n]!r})")
                    for n, (_, sh, _, b) in device.items()}
        found.orders = found.orders[:len(found.orders) - len(data)]
    check.fn.operations[:] = ops_before
    raise ScheduleError(f"auto_schedule for mpi: no distribution of "
                        f"{', '.join(device)} over the ranks is legal (their buffers "
                        "cannot follow their loops; distribute them by hand)",
                        computations=list(device))


def _device(device: _Device, found: Searched, check: _Checker, target: str,
            summary: Summary) -> dict[str, Choice]:
    """A device mapping for every statement at once (a device runs them all, or the
    buffers they share would live on both sides): each statement's first candidate, then,
    while the whole is illegal, each statement's next ones with the others kept. A
    statement with no candidate (no parallel loop) is refused, naming it."""
    none = [n for n, (_, _, c, _) in device.items() if not c]
    if none:
        raise ScheduleError(f"auto_schedule for {target}: {', '.join(none)} "
                            f"{'has' if len(none) == 1 else 'have'} no loop without a "
                            "dependence to map (schedule it by hand, or compile for cpu)",
                            computations=none)
    pick = {n: 0 for n in device}
    for n, (_, _, c, _) in device.items():
        found.blocks[n] = c[0]
    if target == "mpi":
        return _distributed(device, found, check, summary)
    legal = check.legal(found.commands)
    for n, (_, _, c, _) in device.items():
        if legal:
            break
        for k in range(1, len(c)):
            trial = found.with_block(n, c[k])
            if check.legal(trial):
                found.blocks[n], pick[n], legal = c[k], k, True
                break
    if not legal:
        raise ScheduleError(f"auto_schedule for {target}: no mapping of "
                            f"{', '.join(device)} is legal together (schedule it by hand)",
                            computations=list(device))
    if target == "fpga":
        cycles = _by_estimate(device, found, check, target, summary, pick)
        if cycles is not None:
            at = ", ".join(f"{k}={v}" for k, v in summary.estimates.items())
            found.notes.append(f"the fpga target's latency model: {cycles:.0f} cycles per "
                               f"call{' at ' + at if at else ''}")
    out = {}
    for n, (_, sh, c, baseline) in device.items():
        what = "; ".join(x.describe().split(".", 1)[1] for x in c[pick[n]]
                         if isinstance(x, _MAPPING)) or "loops as written"
        out[n] = Choice(n, None, sh, baseline, baseline, pick[n], what)
    return out


_MAPPING = (cmd.TileGpu, cmd.Gpu, cmd.Distribute, cmd.Interchange, cmd.Pipeline, cmd.Vectorize,
            cmd.Unroll)


def _by_estimate(device: _Device, found: Searched, check: _Checker, target: str,
                 summary: Summary, pick: dict[str, int]) -> float | None:
    """Each statement's candidate that the target's own estimate of the whole program
    finds fastest, the others kept, statement by statement from the legal mapping found
    (a candidate the check refuses has no estimate). Returns the final estimate."""
    tgt = TargetRegistry.discover().lookup(target)

    def estimate(commands_: list[cmd.Command]) -> float | None:
        check.count += 1
        try:
            program = checked_program(check.fn, commands_, check.outputs)
        except MiddleEndError:
            return None
        return tgt.estimate_cycles(program, summary.estimates)

    best = estimate(found.commands)
    for n, (_, _, c, _) in device.items():
        for k in range(len(c)):
            if k == pick[n]:
                continue
            trial = found.with_block(n, c[k])
            e = estimate(trial)
            if e is not None and (best is None or e < best):
                best, found.blocks[n], pick[n] = e, c[k], k
    return best


def _tries(st: Stmt, sh: Sequence[str], m: MachineModel, taken: set[str], packs: bool
           ) -> list[tuple[float, Plan, Packing | None]]:
    """The best few plans of ``st`` to check, likely-legal ones first, by estimate: its
    own, and (``packs``) those of ``st`` reading an operand through a packed copy
    (:mod:`.pack`, its names new among ``taken``), each with the copy's cost added."""
    out: list[tuple[float, Plan, Packing | None]] = [
        (est, plan, None) for est, plan in ranked(st, sh, m)[:TRIES]]
    if not packs:
        return out
    for pk in packings(st, sh, taken):
        extra = copy_cycles(st, pk)
        plain = ranked(relayout(st, pk), sh, m)
        if not pk.identity:  # a copy in the same order pays only in panels
            out += [(est + extra, plan, pk) for est, plan in plain[:TRIES]]
        # in panels of a register tile's rows: every plan's panelled form, by its own
        # estimate (the best in panels is seldom among the best without: a plain copy's
        # runs a page apart cost each plan differently); for a copy in the same order,
        # whole panels only (a reduction block adds nothing to a run that is contiguous
        # already, and reloads the sums: mm2's k blocks of 128, 26.7 against 22.8 ms)
        panels = []
        for _, plan in plain:
            pp = panelled(pk, plan, st)
            if pp is None or pk.identity and any(v in st.reductions for v, _ in plan.tiles):
                continue
            est = cost(relayout(st, pp), loops(st, sh, plan), m)
            panels.append((est + extra, plan, pp))
        out += sorted(panels, key=lambda t: t[0])[:TRIES]
    out.sort(key=lambda t: (not likely_legal(st, sh, t[1]), t[0]))  # stable: ties as made
    return out[:TRIES]


def _forced(st: Stmt, sh: Sequence[str], m: MachineModel, taken: set[str], plan: Plan,
            packs: bool) -> list[tuple[float, Plan, Packing | None]]:
    """A given plan (a tuning's, from the store) to try first: as it is and, where the
    model finds a packed copy pays for it (as it did when the plan was tuned), with it,
    cheapest first."""
    out: list[tuple[float, Plan, Packing | None]] = [
        (cost(st, loops(st, sh, plan), m), plan, None)]
    for pk in packings(st, sh, taken) if packs else []:
        for p in (None if pk.identity else pk, panelled(pk, plan, st)):
            if p is not None:
                out.append((cost(relayout(st, p), loops(st, sh, plan), m)
                            + copy_cycles(st, p), plan, p))
    return sorted(out, key=lambda t: t[0])


def _inside(st: Stmt, a: At, m: MachineModel, fold: bool = True) -> list[cmd.Command]:
    """A producer's commands inside its reader's tile: 0-based loops, the innermost
    vectorized where its accesses are contiguous, computed at the reader's loop (stored
    at the window's outer loop, its buffer folded where ``fold`` and the window has a
    fold)."""
    out: list[cmd.Command] = [cmd.Shift(st.name, v, -lo) for v, lo in
                              zip(st.vars, st.lows, strict=True) if lo]
    v = st.vars[-1]
    if v not in st.reductions and vectorizable(st.accesses, len(st.vars) - 1):
        lanes = m.lanes(max(x.elem_bytes for x in st.accesses if x.write))
        out.append(cmd.Vectorize(st.name, v, lanes, f"{v}_vo", f"{v}_vi"))
    # stored per iteration too (as Halide stores at the compute level by default), or of
    # the window's outer loop: each core then has its own copy of the region, and no
    # iteration overwrites another's
    out += [cmd.ComputeAt(st.name, a.reader, a.level),
            cmd.AllocateAt(st.name, a.reader, a.stored_at)]
    if fold and a.fold is not None:
        out.append(cmd.StorageFold(st.name, *a.fold))
    return out


def _worth_fusing(stmts: Mapping[str, Stmt], orders: Sequence[cmd.Command], skip: set[str],
                  m: MachineModel) -> list[tuple[Group, list[tuple[float, Plan]], float]]:
    """The source's groups of statements in one loop nest (:mod:`.fuse`) whose best joint
    plan the model finds cheaper than their best plans apart: each with its joint
    candidates and its estimate apart."""
    out = []
    for g in groups(stmts, orders, skip):
        sts = [stmts[n] for n in g.members]
        tries = joint_ranked(sts, m)
        alone = apart(sts, m)
        if tries and tries[0][0] < alone:
            out.append((g, tries, alone))
    return out


def _fused(sts: Sequence[Stmt], g: Group, tries: Sequence[tuple[float, Plan]], alone: float,
           found: Searched, check: _Checker, m: MachineModel, deadline: float | None,
           results: dict[str, Choice], notes: list[str]) -> bool:
    """The first of a group's best few joint plans that is legal, with the ordering at
    its innermost loop, kept in ``found``; False when none is."""
    refused = 0
    for est, plan in tries[:TRIES]:
        if deadline is not None and time.monotonic() > deadline:
            break
        blocks, orders = fused(sts, g, plan, found.orders)
        if not check.legal(found.with_blocks(blocks, orders)):
            refused += 1
            continue
        found.blocks.update(blocks)
        found.orders = orders
        base = joint_cost(sts, loops(sts[0], (), Plan(sts[0].vars)), m)
        for st in sts:
            results[st.name] = Choice(st.name, plan, (), est, base, refused, group=g.members)
        notes.append(f"{', '.join(g.members)}: one loop nest, one plan (the model: "
                     f"{est:.3g} cycles together, {alone:.3g} apart)")
        return True
    notes.append(f"{', '.join(g.members)}: no joint plan is legal ({refused} refused); "
                 "planned apart where that is legal")
    return False


def _around(found: Searched, stmts: Mapping[str, Stmt], results: dict[str, Choice],
            check: _Checker, m: MachineModel, deadline: float | None, skip: set[str],
            notes: list[str]) -> None:
    """Each reduction in a nest of its own with its initializer computed in its loops and
    its reader fused after it in its outer loops (:mod:`.around`), the first legal of each
    one's placements kept in ``found``."""
    for name, ch in list(results.items()):
        red = stmts[name]
        if ch.plan is None or ch.shared or not red.reductions or name in skip:
            continue
        for other in stmts.values():
            mine = results.get(other.name)
            if other.name in skip or other.name == name or mine is None:
                continue
            tries = around.initializer_inside(other, red, loops(red, (), ch.plan),
                                              found.orders, m) \
                or around.reader_after(other, red, ch.plan, found.orders, m, mine.estimate)
            for mv in tries[:TRIES]:
                if deadline is not None and time.monotonic() > deadline:
                    return
                if check.legal(found.with_blocks({mv.stmt: mv.block}, mv.orders)):
                    found.blocks[mv.stmt], found.orders = mv.block, mv.orders
                    results[mv.stmt] = Choice(mv.stmt, mv.plan, (), mv.estimate,
                                              mine.baseline, mine.refused, mv.what)
                    notes.append(mv.note)
                    break


def search(fn: Function, m: MachineModel, outputs: Sequence[Any] | None = None,
           estimates: Mapping[str, int] | None = None, deadline: float | None = None,
           summary: Summary | None = None, base: list[cmd.Command] | None = None,
           check: _Checker | None = None, placed: Sequence[At] = (),
           target: str = "cpu", prefer: Mapping[str, Plan] | None = None,
           ranks: int | str | None = None) -> Searched:
    """The commands of ``fn`` (or ``base``, its commands with another placement) with a
    plan for every statement it can find one for; ``placed``: producers computed per
    iteration of a reader's loop, the reader's plan fixed (where legal); ``prefer``: a
    plan to try first per statement (a tuning's, from :mod:`.store`)."""
    base = list(fn.commands.items) if base is None else base
    fixed = _user_scheduled(base)
    orders = [c for c in base if isinstance(c, _ORDERING)]
    rest = [c for c in base if not isinstance(c, _ORDERING)]
    s = summary or summarize(fn, estimates, outputs, base)
    check = check or _Checker(fn, outputs)
    by_name = {st.name: st for st in s.stmts}
    # a tuning's plan (measured, with the producers placed as now) before placement's own
    forced = {**{a.reader: a.plan for a in placed}, **(prefer or {})}
    at = {a.producer: a for a in placed}
    joint = _worth_fusing(by_name, orders, fixed | set(forced) | set(at), m) \
        if target == "cpu" else []
    orders = _distribute(check, rest, orders, by_name,
                         keep=[k for g, _, _ in joint for k in g.links])
    shared = _shared(by_name, orders)
    found = Searched(rest, {st.name: [] for st in s.stmts}, orders, [])
    notes: list[str] = []
    # the names a packed copy may take: new in fn and among the copies this search makes
    # (AutoSchedule.apply creates the chosen ones' operations in the Function)
    taken = fn._names()
    group_of = {n: j for j in joint for n in j[0].members}
    # a reader whose producer is computed in its loops is planned first: the producer's
    # compute_at names one of the loops its plan makes
    # then the producers computed in a reader's loops, consumers first: a chain of stages
    # each computed in the output's loops (a stencil chain's) is legal at every step only
    # if a stage's readers are in those loops before it is
    inside = {a.producer: k for k, a in enumerate(placed)}
    todo = [st for st in s.stmts if st.name in forced] + \
        sorted((st for st in s.stmts if st.name in inside and st.name not in forced),
               key=lambda st: -inside[st.name]) + \
        [st for st in s.stmts if st.name not in forced and st.name not in inside]
    results: dict[str, Choice] = {}
    device: dict[str, tuple[Stmt, tuple[str, ...], list[list[cmd.Command]], float]] = {}
    # an array expansion's copy-back (passes/expansion.py) is not fn's: left as made
    own = {c.name for c in fn.computations}
    for st in todo:
        if st.name in fixed or len(st.vars) == 0 or st.name in results or \
                st.name not in own:
            continue
        if st.name in group_of:
            g, tries, apart_ = group_of[st.name]
            sts = [by_name[n] for n in g.members]
            if _fused(sts, g, tries, apart_, found, check, m, deadline, results, notes):
                continue
            # no joint plan is legal: each member in a nest of its own, if that is
            loose = distributed(g, found.orders)
            if check.legal(found.with_blocks({}, loose)):
                found.orders = loose
                shared = _shared(by_name, loose)
        sh = st.vars[:shared.get(st.name, 0)]
        baseline = cost(st, loops(st, sh, Plan(st.vars[len(sh):])), m)
        if len(sh) == len(st.vars):
            results[st.name] = Choice(st.name, None, sh, baseline, baseline, 0)
            continue
        a = at.get(st.name)
        if a is not None and a.reader in found.blocks and found.blocks[a.reader]:
            # a window's fold where legal (a window that does not move forward keeps rows
            # longer than the fold), else the window unfolded
            tries = [_inside(st, a, m)] + ([_inside(st, a, m, fold=False)] if a.fold else [])
            trial = next((t for t in tries if check.legal(found.with_block(st.name, t))), [])
            if trial:
                found.blocks[st.name] = trial
                results[st.name] = Choice(st.name, None, sh, baseline, baseline, 0)
                notes.append(f"{st.name}: {a.describe()}" + (
                    f", its buffer folded to {a.fold[1]} along dimension {a.fold[0]}"
                    if a.fold and isinstance(trial[-1], cmd.StorageFold) else ""))
                continue
            notes.append(f"{st.name}: not computed in {a.reader}'s loop {a.level} (refused "
                         "as illegal): at the root")
        if target == "fpga":
            lat = statement_latency(fn.computation(st.name).expr)
            device[st.name] = (st, sh, fpga_candidates(st, sh, lat), baseline)
            continue
        if target in CANDIDATES:
            device[st.name] = (st, sh, CANDIDATES[target](st, sh, ranks), baseline)
            continue
        refused = 0
        picked: tuple[float, Plan, Packing | None] | None = None
        tries = _tries(st, sh, m, taken, packs=target == "cpu" and st.name not in forced)
        if st.name in forced and not sh:
            tries = _forced(st, sh, m, taken, forced[st.name], target == "cpu") + tries
        for est, plan, pk in tries:
            if deadline is not None and time.monotonic() > deadline:
                notes.append(f"{st.name}: the deadline passed; its loops are as written")
                break
            trial = (pk.commands(st.name) if pk else []) + commands(st, sh, plan)
            if check.legal(found.with_block(st.name, trial)):
                found.blocks[st.name] = trial
                picked = (est, plan, pk)
                break
            refused += 1
        if picked is None:
            results[st.name] = Choice(st.name, None, sh, baseline, baseline, refused)
        else:
            results[st.name] = Choice(st.name, picked[1], sh, picked[0], baseline, refused)
            if picked[2] is not None:
                notes.append(f"{st.name}: {picked[2].describe()}")
    if target == "cpu":
        # (a tuning's plans from the store are not skipped: the placements are made
        # again around them, as when they were timed)
        _around(found, by_name, results, check, m, deadline,
                fixed | set(at) | set(group_of) | (set(by_name) - own), notes)
    if device:
        results.update(_device(device, found, check, target, s))
    found.choices = [results[st.name] for st in s.stmts if st.name in results]
    found.checks, found.notes = check.count, notes + found.notes
    return found
