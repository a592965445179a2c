"""Legality of the on-chip commands: streams (a FIFO instead of a buffer) and array
partitions.

A stream is only a FIFO if the consumer takes the values out in exactly the order the
producer put them in, each once (through a line buffer's fill when the consumer has one);
a partition only exists for a buffer on the chip whose size along the partitioned
dimension is a constant. Both are decided here, with ISL on the scheduled program's
accesses (:mod:`middleend.passes.physical`), and refused with one line that names the
command's object and the reason. Pipelined loops' initiation intervals are checked in
:mod:`middleend.passes.recurrence`, FIFO depths sized in :mod:`middleend.passes.fifo`.
"""

from __future__ import annotations

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from ..ir.loopast import BufferDecl, IInt
from .data import Layer3, named_buffer
from .dataflow import Expected
from .layer1 import Layer1
from .layer4 import Layer4
from .legality import _fmt
from .linebuffer import commands_of as line_commands
from .linebuffer import plan as line_plan
from .physical import Physical
from .placement import TimeSpace

COMPLETE_LIMIT = 1024  # a complete partition makes one register per element


def streamed(commands: list[cmd.Command], l3: Layer3) -> dict[str, str]:
    """Buffer -> the computation streamed through it (its producer)."""
    return {named_buffer(c.comp, l3, c.describe()): c.comp for c in commands
            if isinstance(c, cmd.Stream)}


def partitions(commands: list[cmd.Command], l3: Layer3
               ) -> dict[str, list[tuple[cmd.PartitionBuffer, str]]]:
    """Buffer -> its partition commands (with the command as written)."""
    out: dict[str, list[tuple[cmd.PartitionBuffer, str]]] = {}
    for k, c in enumerate(commands):
        if isinstance(c, cmd.PartitionBuffer):
            b = named_buffer(c.comp, l3, c.describe())
            out.setdefault(b, []).append((c, f"{c.describe()} (command #{k})"))
    return out


def layout(decl: BufferDecl, commands: list[cmd.Command], l3: Layer3) -> BufferDecl:
    """``decl`` with its partitions and stream flag, after checking that the partitions
    can exist: on chip (a temporary, not a kernel argument in off-chip memory), not a
    FIFO, a dimension it has, of constant size, a factor no larger than that size."""
    import dataclasses

    parts = partitions(commands, l3).get(decl.name, [])
    is_stream = decl.name in streamed(commands, l3)
    if is_stream and decl.role != "temporary":
        raise ScheduleError(f"cannot stream {decl.name!r}: it is an {decl.role} of the "
                            "kernel (in off-chip memory); only a buffer between two stages "
                            "can be a FIFO", computations=(decl.name,))
    done: list[tuple[int, int, str]] = []
    for c, where in parts:
        def refuse(why: str, c: cmd.PartitionBuffer = c, where: str = where) -> ScheduleError:
            return ScheduleError(f"cannot partition buffer {decl.name!r} ({where}): {why}",
                                 computations=(decl.name,), command=where)
        if decl.role != "temporary":
            raise refuse(f"it is an {decl.role} of the kernel, in off-chip memory behind its "
                         "m_axi port; partition an on-chip copy of it (copy_at) instead")
        if is_stream:
            raise refuse("it is a stream (a FIFO has no elements to partition)")
        if c.dim >= len(decl.sizes):
            raise refuse(f"it has {len(decl.sizes)} dimensions, there is no dimension "
                         f"{c.dim}")
        size = decl.sizes[c.dim]
        if not isinstance(size, IInt):
            raise refuse(f"its size along dimension {c.dim} is not a constant; a partition "
                         "needs one (allocate it per tile, or give the parameters values)")
        if c.scheme == "complete" and size.value > COMPLETE_LIMIT:
            raise refuse(f"a complete partition of dimension {c.dim} would make "
                         f"{size.value} registers (at most {COMPLETE_LIMIT}); use a cyclic "
                         "or block partition")
        if c.scheme != "complete" and c.factor > size.value:
            raise refuse(f"factor {c.factor} exceeds its size {size.value} along dimension "
                         f"{c.dim}")
        if any(d == c.dim for d, _, _ in done):
            raise refuse(f"dimension {c.dim} is already partitioned")
        done.append((c.dim, c.factor if c.scheme != "complete" else size.value, c.scheme))
    return dataclasses.replace(decl, partition=tuple(done), stream=is_stream)


def check_streams(l1: Layer1, l3: Layer3, l4: Layer4, exp: Expected, ph: Physical,
                  commands: list[cmd.Command], ts: TimeSpace | None = None) -> None:
    """Each streamed computation has one consumer that reads each element it writes once,
    through one reference, in the order it writes them (ISL: no two writes whose reads come
    in the other order). A consumer that line-buffers the stream reads it through its
    fill instead (:mod:`middleend.passes.linebuffer`): one read per element of the
    extended scan, which must read exactly what the producer writes, in its order."""
    lined = {(c.comp, c.buffer): (c, k) for c, k in line_commands(commands)}
    for buf, comp in streamed(commands, l3).items():
        what = f"cannot stream {comp!r}"
        if comp not in l1.comps:
            raise ScheduleError(f"{what}: it is not a computation (streams carry a "
                                "computation's values)", computations=(comp,))
        if l3.buffers[buf].role != "temporary":
            raise ScheduleError(f"{what}: its buffer {buf!r} is an output of the kernel; a "
                                "FIFO only connects two stages", computations=(comp,))
        writers = sorted(n for n, b in l3.store.items() if b == buf)
        if writers != [comp]:
            raise ScheduleError(f"{what}: its buffer {buf!r} is written by {writers}; a FIFO "
                                "has one producer", computations=tuple(writers))
        if any(buf in (o.src, o.dst) for o in l4.ops.values()):
            raise ScheduleError(f"{what}: a Layer IV operation copies its buffer",
                                computations=(comp,))
        refs = [r for r in exp.reads if l4.buffer_of(l3, r) == buf]
        consumers = sorted({r.comp for r in refs})
        if len(consumers) != 1:
            who = ", ".join(map(repr, consumers)) or "nothing"
            raise ScheduleError(f"{what}: it is read by {who}; a FIFO has exactly one "
                                "consumer", computations=(comp, *consumers))
        (consumer,) = consumers
        w = ph.writes[comp]
        lb = lined.get((consumer, buf)) or lined.get((consumer, comp))
        if lb is not None and ts is not None:
            fill = line_plan(l1, l3, l4, ts, lb[0], lb[1]).fill
            if not fill.range().is_subset(w.range()):
                raise ScheduleError(f"{what}: the line buffer of {consumer!r} reads elements "
                                    f"it never writes ({fill.range().subtract(w.range())}; "
                                    "the FIFO would never deliver them)",
                                    computations=(comp, consumer))
            _check_order(l1, ph, what, comp, consumer, w, fill)
            continue
        # occurrences, not references: A[i] + A[i] pops the FIFO twice
        count = sum(len(r.nodes) for r in refs)
        if count != 1:
            raise ScheduleError(f"{what}: {consumer!r} reads it through {count} "
                                "references per instance; a FIFO is read once per instance "
                                "(keep a buffer, or a line buffer, for a stencil)",
                                computations=(comp, consumer))
        r = ph.reads[refs[0].ref]
        if not w.reverse().is_single_valued():
            raise ScheduleError(f"{what}: it writes some elements of {buf!r} more than "
                                "once; a FIFO carries each value once", computations=(comp,))
        if not r.reverse().is_single_valued():
            raise ScheduleError(f"{what}: {consumer!r} reads some of its elements more than "
                                "once; a FIFO gives each value once",
                                computations=(comp, consumer))
        if not w.range().is_subset(r.range()):
            raise ScheduleError(f"{what}: {consumer!r} never reads some of the elements it "
                                "writes (they would stay in the FIFO)",
                                computations=(comp, consumer))
        _check_order(l1, ph, what, comp, consumer, w, r)


def _check_order(l1: Layer1, ph: Physical, what: str, comp: str, consumer: str,
                 w: isl.Map, r: isl.Map) -> None:
    """The reads ``r`` (time -> element) take the elements in the order of the writes
    ``w``: no two writes whose reads come in the other order."""
    m = w.apply_range(r.reverse())  # write time -> read time of the same element
    t_space = w.domain().get_space()
    later = isl.Map.lex_lt(t_space)
    swapped = (m.reverse().apply_range(later).apply_range(m)
               .intersect(isl.Map.lex_gt(t_space)))
    if not swapped.is_empty():
        names = {n: c.vars for n, c in l1.comps.items()}
        # pairs of the consumer's instances that read in the other order
        pair = isl.UnionMap.from_map(swapped).apply_domain(ph.tinv).apply_range(ph.tinv)
        raise ScheduleError(f"{what}: {consumer!r} reads its elements in another order "
                            "than it writes them (a FIFO keeps the producer's order)",
                            computations=(comp, consumer), dependence=_fmt(names, pair))
