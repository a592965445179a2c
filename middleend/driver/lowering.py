"""The compile pipeline: Layer I -> III (data) -> IV operations -> II (schedule) ->
legality -> loop AST, one pass per step, in this order:

1. ``build_layer1``   domains and reads in ISL, inlining
2. ``build_layer3``   buffers, store_in, folds, outputs
3. ``expected_dataflow``  what every read must see (Layer I semantics, exact)
4. ``build_layer4``   the Layer IV operations: their domains and exact footprints
5. ``apply_command``  each loop transformation, per computation or operation
6. ``plan_device``    what runs on a GPU, where buffers live, the default host/device copies
7. ``finalize``       compute_at, operation placement and ordering: the time-space
8. ``build_physical`` accesses in time-space (per memory), loop-local allocations
9. ``check_dataflow``, ``check_parallel``, ``check_barriers``, ``check_pipelines``,
   ``check_streams``  legality (unless skipped)
10. ``build_program`` the loop AST every target prints
11. ``partition_loops`` host loops split where their index clamps stop binding
12. ``layout``, ``apply_line_buffers``, ``fifo_depths``  on-chip layouts, line buffers and
    FIFO depths (fpga; a FIFO depth that would deadlock is refused here)

Everything is rebuilt from the Function and its command log in a fresh ISL context whose
operation count is bounded, so a pathological input fails with a clear error instead of
hanging. When the legality check fails, the command prefixes are replayed to name the first
command after which the schedule is illegal.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import islpy as isl

from ..ir import commands as cmd
from ..ir.distribution import RUNTIME as RUNTIME_RANKS
from ..ir.errors import (
    DefinitionError,
    MiddleEndError,
    ResourceLimitError,
    ScheduleError,
    with_command_index,
)
from ..ir.function import Function
from ..ir.islutil import exhausted
from ..ir.loopast import Program
from ..passes import empty, expansion
from ..passes.data import Layer3, build_layer3
from ..passes.dataflow import Expected, expected_dataflow
from ..passes.device import DevicePlan, plan_device
from ..passes.distribution import plan_distribution
from ..passes.distribution_rt import plan_runtime_distribution
from ..passes.fifo import fifo_depths
from ..passes.layer1 import Layer1, build_layer1
from ..passes.layer4 import Layer4, build_layer4
from ..passes.legality import check_barriers, check_dataflow, check_parallel
from ..passes.linebuffer import plans as line_plans
from ..passes.linebuffer_ast import apply_line_buffers
from ..passes.onchip import check_streams, layout
from ..passes.partition import partition_loops
from ..passes.physical import Physical, build_physical
from ..passes.placement import TimeSpace, finalize, memory_reads
from ..passes.program import build_program
from ..passes.recurrence import check_pipelines
from ..passes.schedule import apply_command, check_index_range, initial
from .layers import layers_text

DEFAULT_MAX_OPS = int(os.environ.get("MIDDLEEND_ISL_MAX_OPS", "20000000"))
_log = logging.getLogger("middleend.lower")
_T = TypeVar("_T")


@dataclass
class Analysis:
    """Layers I-IV of one program, before code generation."""

    l1: Layer1
    l3: Layer3
    l4: Layer4
    exp: Expected
    ts: TimeSpace
    ph: Physical
    dev: DevicePlan
    commands: list[cmd.Command] = dataclasses.field(default_factory=list)
    # the program these layers are of: the Function lowered, or the one its array
    # expansions derived from it (passes/expansion.py)
    fn: Function | None = None

    def check(self) -> None:
        check_dataflow(self.l1, self.l3, self.ts, self.exp, self.ph, self.l4)
        check_parallel(self.l1, self.l3, self.ts, self.ph)
        check_pipelines(self.l1, self.ts, self.ph, self.exp)
        check_streams(self.l1, self.l3, self.l4, self.exp, self.ph, self.commands, self.ts)
        if self.dev.on_device:
            check_barriers(self.l1, self.ts, self.ph, self.l4, self.dev.on_device)


@dataclass
class Lowered:
    fn_name: str
    l1: Layer1
    l3: Layer3
    l4: Layer4
    ts: TimeSpace
    exp: Expected
    ph: Physical
    dev: DevicePlan
    program: Program

    def layers_text(self) -> str:
        return layers_text(self)


def _analyse(fn: Function, commands: list[cmd.Command], outputs: Sequence[Any] | None,
             ctx: isl.Context) -> Analysis:
    try:
        return _analyse_unchecked(fn, commands, outputs, ctx)
    except ScheduleError as e:
        raise with_command_index(e, [c.describe() for c in commands]) from None


def _analyse_unchecked(fn: Function, commands: list[cmd.Command],
                       outputs: Sequence[Any] | None, ctx: isl.Context) -> Analysis:
    if any(isinstance(c, cmd.Expand) for c in commands):
        fn, commands = _timed("array expansion", expansion.derive, fn, commands, outputs,
                              ctx)
    l1 = _timed("layer I (domains, reads)", build_layer1, fn, ctx, commands)
    if not l1.dropped:
        return _analyse_from(fn, l1, commands, outputs)
    # a specialized program's computations with nothing to compute: gone from here on,
    # with the commands about them (passes/empty.py); errors name commands as written
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug("dropped, their iteration domains being empty: %s",
                   ", ".join(f"{n} {d.domain}" for n, d in l1.dropped.items()))
    kept = empty.kept_commands(commands, set(l1.dropped), l1.declared)
    try:
        return _analyse_from(fn, l1, [c for _, c in kept], outputs)
    except ScheduleError as e:
        if e.command_index is None or not 0 <= e.command_index < len(kept):
            raise
        msg = str(e).split("\n")[0]
        raise ScheduleError(msg, computations=e.computations, dependence=e.dependence,
                            command=e.command, command_index=kept[e.command_index][0],
                            level=e.level) from None


def _analyse_from(fn: Function, l1: Layer1, commands: list[cmd.Command],
                  outputs: Sequence[Any] | None) -> Analysis:
    """Layers III, IV and II of ``l1``'s program under ``commands``."""
    l3 = _timed("layer III (buffers, accesses)", build_layer3, fn, l1, outputs, commands)
    for b in l3.buffers.values():
        if b.fold and b.name in l3.outputs:
            raise DefinitionError(f"buffer {b.name!r} is an output; it cannot be folded")
    exp = _timed("dataflow (what each read must see)", expected_dataflow, l1, l3)
    l4 = _timed("layer IV (operations)", build_layer4, fn, l1, l3, commands)
    t0 = time.perf_counter()
    scheds = {n: initial(n, l1.comps[n].domain, l1.comps[n].vars) for n in l1.declared}
    for o in l4.ops.values():
        scheds[o.name] = initial(o.name, o.domain, o.dims)
    for k, c in enumerate(commands):
        if isinstance(c, cmd.SCHEDULE_COMMANDS) and not isinstance(c, (cmd.After,
                                                                         cmd.ComputeAt)):
            if c.comp not in scheds:
                raise ScheduleError(f"{c.describe()}: unknown or inlined computation "
                                    f"{c.comp!r}", command=c.describe(), command_index=k)
            try:
                apply_command(scheds[c.comp], c, f"{c.describe()} (command #{k})")
                check_index_range(scheds[c.comp], c, l1.index_context if l1.index_context
                                  is not None else l1.context)
            except ScheduleError as e:
                raise with_command_index(e, [x.describe() for x in commands], k) from None
    events = [c for c in commands if isinstance(c, (cmd.After, cmd.ComputeAt))]
    for e in events:
        if e.comp not in scheds:
            raise ScheduleError(f"{e.describe()}: unknown or inlined computation {e.comp!r}",
                                command=e.describe())
    _log.info("schedule: %d commands applied in %.1f ms", len(commands),
              (time.perf_counter() - t0) * 1e3)
    dev = _timed("device plan", plan_device, fn, l1, l3, l4, scheds, commands)
    ts = _timed("layer II (time-space)", finalize, scheds, l1.declared, events, l1.reads_of,
                l4.ops, memory_reads(l1, l3), _slides(l3, events))
    ph = _timed("physical accesses", build_physical, l1, l3, ts, exp, l4, dev)
    return Analysis(l1, l3, l4, exp, ts, ph, dev, commands, fn)


def _slides(l3: Layer3, events: list[cmd.Command]) -> dict[str, str]:
    """Per producer computed at a loop of its consumer and allocated at an outer loop of
    the same consumer, that loop: Layer II computes it in a sliding window there
    (``placement.extend_at``). Only a buffer this producer alone writes (another writer
    could overwrite what an earlier iteration computed). A folded one may be too short to
    keep what a later iteration reads: the legality check, on the folded accesses, says
    so with the fold named (a line buffer of the stencil's height is fine)."""
    out: dict[str, str] = {}
    for e in events:
        if not isinstance(e, cmd.ComputeAt) or e.comp not in l3.store:
            continue
        b = l3.buffers[l3.store[e.comp]]
        if b.alloc_at is not None and b.alloc_at[0] == e.consumer and \
                b.alloc_at[1] != e.level and b.writers == [e.comp]:
            out[e.comp] = b.alloc_at[1]
    return out


def _timed(what: str, f: Callable[..., _T], *args: Any) -> _T:
    """``f(*args)``, logged with its time (``middleend -v``, or INFO on the logger
    ``middleend.lower``) as the compile runs."""
    if not _log.isEnabledFor(logging.INFO):
        return f(*args)
    t0 = time.perf_counter()
    out = f(*args)
    _log.info("%s: %.1f ms", what, (time.perf_counter() - t0) * 1e3)
    return out


def _new_ctx(max_ops: int) -> isl.Context:
    ctx = isl.Context()
    ctx.set_max_operations(max_ops)
    return ctx


def _program(fn: Function, a: Analysis, ranks: int | str | None = None) -> Program:
    fn = a.fn if a.fn is not None else fn
    p = _timed("loop AST", build_program, fn, a.l1, a.l3, a.l4, a.ts, a.ph, a.exp, a.dev)
    p = _timed("loop partitions", partition_loops, p)
    if any(isinstance(c, (cmd.Stream, cmd.PartitionBuffer)) for c in a.commands):
        p = dataclasses.replace(p, buffers=tuple(layout(b, a.commands, a.l3)
                                                 for b in p.buffers))
    lines = line_plans(a.l1, a.l3, a.l4, a.ts, a.commands)
    if lines:
        p = apply_line_buffers(p, a.l1, lines)
    fifos = fifo_depths(a.l1, a.l3, a.l4, a.ts, a.ph, a.exp, a.commands, lines)
    if fifos:
        p = dataclasses.replace(p, buffers=tuple(
            dataclasses.replace(b, depth=fifos[b.name].depth) if b.name in fifos else b
            for b in p.buffers))
    if ranks is None:
        return p
    if isinstance(ranks, str):
        if ranks != RUNTIME_RANKS:
            raise ScheduleError(f"ranks must be a number or {RUNTIME_RANKS!r}, got {ranks!r}")
        dist = plan_runtime_distribution(a.l1, a.l3, a.l4, a.ts, a.ph, p, a.commands)
    else:
        dist = plan_distribution(a.l1, a.l3, a.l4, a.ts, a.ph, p, a.commands, ranks)
    return dataclasses.replace(p, distribution=dist)


def lower(fn: Function, outputs: Sequence[Any] | None = None, check_legality: bool = True,
          max_isl_ops: int = DEFAULT_MAX_OPS, ranks: int | str | None = None) -> Lowered:
    """``ranks``: lower for a distributed target running on that many ranks, or on a
    number read at run time (``"runtime"``; the program then carries its
    :class:`~middleend.ir.distribution.Distribution`)."""
    commands = list(fn.commands.items)
    ctx = _new_ctx(max_isl_ops)
    try:
        a = _analyse(fn, commands, outputs, ctx)
        if check_legality:
            try:
                _timed("legality", a.check)
            except ScheduleError as err:
                _log.info("illegal: replaying the command prefixes to find the culprit")
                raise _blame(fn, commands, outputs, err, max_isl_ops) from None
        try:
            program = _program(fn, a, ranks)
        except ScheduleError as err:
            if err.command is not None or ranks is not None:
                raise
            raise _blame(fn, commands, outputs, err, max_isl_ops, codegen=True) from None
    except isl.Error as e:
        if ctx.get_max_operations() and ("operations" in str(e).lower() or
                                         "quota" in str(e).lower() or exhausted(ctx)):
            raise ResourceLimitError(
                f"function {fn.name!r}: ISL exceeded its bound of {max_isl_ops} operations "
                "(set MIDDLEEND_ISL_MAX_OPS to raise it)") from None
        raise MiddleEndError(f"function {fn.name!r}: ISL failed: {e}") from e
    return Lowered(fn.name, a.l1, a.l3, a.l4, a.ts, a.exp, a.ph, a.dev, program)


def _blame(fn: Function, commands: list[cmd.Command], outputs: Sequence[Any] | None,
           err: ScheduleError, max_ops: int, codegen: bool = False) -> ScheduleError:
    """Name the command after which the program is illegal and stays so: the last
    command whose prefix (without it) is still legal (and, for ``codegen`` errors, still
    generates code)."""
    for k in range(len(commands) - 1, -1, -1):
        try:
            a = _analyse(fn, commands[:k], outputs, _new_ctx(max_ops))
            a.check()
            if codegen:
                _program(fn, a)
        except (MiddleEndError, isl.Error):
            continue
        c = commands[k]
        msg = str(err).split("\n")[0]
        return ScheduleError(msg, computations=err.computations, dependence=err.dependence,
                             command=c.describe(), command_index=k, level=err.level)
    return err


def check_commands(fn: Function, commands: Sequence[cmd.Command],
                   outputs: Sequence[Any] | None = None,
                   max_isl_ops: int = DEFAULT_MAX_OPS, ranks: int | str | None = None
                   ) -> None:
    """Whether ``fn`` under ``commands`` (instead of its own log) is legal: the layers and
    the legality check of :func:`lower`, without the loop AST (which is most of a
    scheduled compile's time), and without replaying prefixes to blame a command. Raises
    the :class:`ScheduleError` (or :class:`DefinitionError`) the compile would; an
    automatic scheduler calls it on every candidate it keeps. With ``ranks``, also the
    distribution over that many ranks (which needs the loop AST)."""
    _checked(fn, commands, outputs, max_isl_ops, ranks, build=ranks is not None)


def checked_program(fn: Function, commands: Sequence[cmd.Command],
                    outputs: Sequence[Any] | None = None,
                    max_isl_ops: int = DEFAULT_MAX_OPS) -> Program:
    """:func:`check_commands`, then the loop AST of ``fn`` under ``commands``: what a
    target's own cost estimate reads (the fpga target's latency model), for an automatic
    scheduler comparing legal candidates."""
    program = _checked(fn, commands, outputs, max_isl_ops, None, build=True)
    assert program is not None
    return program


def _checked(fn: Function, commands: Sequence[cmd.Command], outputs: Sequence[Any] | None,
             max_isl_ops: int, ranks: int | str | None, build: bool) -> Program | None:
    ctx = _new_ctx(max_isl_ops)
    try:
        a = _analyse(fn, list(commands), outputs, ctx)
        a.check()
        return _program(fn, a, ranks) if build else None
    except isl.Error as e:
        if exhausted(ctx):
            raise ResourceLimitError(
                f"function {fn.name!r}: ISL exceeded its bound of {max_isl_ops} operations "
                "while checking a schedule") from None
        raise MiddleEndError(f"function {fn.name!r}: ISL failed: {e}") from e
