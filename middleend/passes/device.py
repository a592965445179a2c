"""Where each statement runs when the schedule maps loops to a GPU, and where each buffer
lives: Layer IV's memory spaces and the host/device copies between them.

A statement runs on the device when one of its loops, or a loop of the consumer it is
placed in (compute_at, copy_at, barrier_at), is tagged ``gpu_block`` or ``gpu_thread``.
A buffer that the device uses and that the caller passes (an input, output or in/out
argument) has two copies: the host's and the device's (named ``_dev_<buffer>`` in the
physical accesses, so the legality check sees two memories). Unless the user scheduled
them, the copies between them are inserted here: what the device reads of it goes to the
device first, what the device writes comes back last, each an operation with an exact
footprint. A temporary only the device touches lives on the device only (or in the
memory space it is tagged with); one both sides touch needs the user's copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from ..ir.function import Function
from .data import Layer3
from .layer1 import Layer1
from .layer4 import Layer4, Op, transfer
from .schedule import CompSchedule

GPU_TAGS = ("gpu_block", "gpu_thread")
DEVICE_PREFIX = "_dev_"  # users' names start with a letter: no clash


@dataclass
class DevicePlan:
    """``on_device``: the statements (computations and operations) that run on the
    device; ``copies``: the buffers with a host and a device copy; ``memory``: where each
    buffer lives (host, device, both, or a tagged gpu_* space)."""

    on_device: set[str] = field(default_factory=set)
    copies: set[str] = field(default_factory=set)
    memory: dict[str, str] = field(default_factory=dict)

    def name_for(self, buf: str, statement: str) -> str:
        """The physical name of ``buf`` as ``statement`` accesses it."""
        if buf in self.copies and statement in self.on_device:
            return DEVICE_PREFIX + buf
        return buf


def _loops(n: str, scheds: dict[str, CompSchedule], at: dict[str, tuple[str, str]],
           seen: tuple[str, ...] = ()) -> list[tuple[str, str | None]]:
    """``n``'s loops, outermost first, with their tags, including the loops of the
    consumers it is placed in (whose tags it inherits)."""
    own = [(d, scheds[n].tags.get(d)) for d in scheds[n].dims]
    if n not in at or n in seen:
        return own
    c, level = at[n]
    if c not in scheds:
        return own
    outer = _loops(c, scheds, at, (*seen, n))
    names = [name for name, _ in outer]
    if level not in names:
        return own  # reported by the placement, with the command
    return outer[:names.index(level) + 1] + own


def plan_device(fn: Function, l1: Layer1, l3: Layer3, l4: Layer4,
                scheds: dict[str, CompSchedule], commands: list[cmd.Command]) -> DevicePlan:
    """Decide device statements and memories; insert the default copies into ``l4`` (and
    their schedules into ``scheds``); map cooperative copies onto the block's threads."""
    at = {c.comp: (c.consumer, c.level) for c in commands if isinstance(c, cmd.ComputeAt)}
    for o in l4.ops.values():
        if o.consumer is not None and o.level is not None:
            at[o.name] = (o.consumer, o.level)
    loops = {n: _loops(n, scheds, at) for n in scheds}
    plan = DevicePlan({n for n, ls in loops.items() if any(t in GPU_TAGS for _, t in ls)})
    if not plan.on_device:
        return plan
    _check_operations(l4, loops, plan)
    _map_cooperative_copies(l4, scheds, loops)
    users = _users(l1, l3, l4)
    transfers = {(o.kind, o.src) for o in l4.ops.values()
                 if o.kind in ("host_to_device", "device_to_host")}
    taken = fn._names() | set(l4.ops) | set(l3.buffers)
    for b in l3.buffers.values():
        readers, writers = users.get(b.name, (set(), set()))
        dev = {n for n in readers | writers if n in plan.on_device}
        host = (readers | writers) - dev
        if b.space is not None:
            plan.memory[b.name] = b.space
            _check_space(b.name, b.space, b.role, host, writers & dev)
            if b.role == "input" and b.space == "gpu_constant":
                plan.copies.add(b.name)
                _default(l4, l1, l3, scheds, plan, transfers, taken, b.name, readers & dev,
                         writers & dev, b.role, set())
            continue
        if not dev:
            plan.memory[b.name] = "host"
        elif b.role in ("input", "output", "inout") or (host and _has_copies(transfers, b.name)):
            plan.memory[b.name] = "both"
            plan.copies.add(b.name)
            _default(l4, l1, l3, scheds, plan, transfers, taken, b.name, readers & dev,
                     writers & dev, b.role, writers - dev)
        elif host:
            raise ScheduleError(
                f"buffer {b.name!r} is used on the host (by {', '.join(sorted(host))}) and on "
                f"the device (by {', '.join(sorted(dev))}); map them all to the GPU, or copy "
                f"it with {b.name}.host_to_device() / device_to_host()",
                computations=tuple(sorted(host | dev)))
        else:
            plan.memory[b.name] = "device"
    return plan


def _users(l1: Layer1, l3: Layer3, l4: Layer4) -> dict[str, tuple[set[str], set[str]]]:
    """buffer -> (statements that read it, statements that write it); host/device copies
    are not users (they are what connects the two sides)."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for c in l1.comps.values():
        out.setdefault(l3.store[c.name], (set(), set()))[1].add(c.name)
        for r in c.reads:
            out.setdefault(l4.buffer_of(l3, r), (set(), set()))[0].add(c.name)
    for o in l4.ops.values():
        if o.kind in ("host_to_device", "device_to_host"):
            continue
        if o.src is not None:
            out.setdefault(o.src, (set(), set()))[0].add(o.name)
        if o.dst is not None:
            out.setdefault(o.dst, (set(), set()))[1].add(o.name)
    return out


def _has_copies(transfers: set[tuple[str, str | None]], buf: str) -> bool:
    return ("host_to_device", buf) in transfers or ("device_to_host", buf) in transfers


def _default(l4: Layer4, l1: Layer1, l3: Layer3, scheds: dict[str, CompSchedule],
             plan: DevicePlan, transfers: set[tuple[str, str | None]], taken: set[str],
             buf: str, dev_readers: set[str], dev_writers: set[str], role: str,
             host_writers: set[str]) -> None:
    """The copies the user did not schedule: what the device reads of the caller's data
    (an input's, an in/out argument's) goes there first; what it writes of an argument
    comes back last. An output's elements are the device's own, unless the host writes
    some that the device then reads (a pure definition on the host, an update on the
    device, as Halide copies a buffer to wherever it is used next): those go to the device
    just before the first device statement that reads them, after the host's writes
    (the legality check proves that order covers every read, or names the reads it does
    not)."""
    wanted = []
    if dev_readers and (role in ("input", "inout") or host_writers):
        wanted.append(("host_to_device", "to_device", dev_readers,
                       "inserted: the device reads it"))
    elif role == "inout":
        wanted.append(("host_to_device", "to_device", None, "inserted: the device reads it"))
    if dev_writers and role in ("output", "inout"):
        wanted.append(("device_to_host", "to_host", dev_writers,
                       "inserted: the device writes it"))
    for kind, suffix, users, why in wanted:
        if (kind, buf) in transfers:
            continue
        name = f"{buf}_{suffix}"
        while name in taken:
            name += "_"
        taken.add(name)
        o = transfer(l4, l1, l3, kind, buf, name, f"{kind} of {buf} ({why})", -1, users)
        if kind == "host_to_device" and host_writers and users:
            o.placement, o.anchors = "before", tuple(sorted(users))
        scheds[name] = _schedule_of(o)


def _schedule_of(o: Op) -> CompSchedule:
    from .schedule import initial

    return initial(o.name, o.domain, o.dims)


def _check_space(buf: str, space: str, role: str, host: set[str], dev_writers: set[str]
                 ) -> None:
    if host:
        raise ScheduleError(f"buffer {buf!r} is tagged {space} but the host uses it (by "
                            f"{', '.join(sorted(host))})", computations=tuple(sorted(host)))
    if space == "gpu_constant" and (role != "input" or dev_writers):
        raise ScheduleError(f"buffer {buf!r} is tagged gpu_constant: only an input that the "
                            "device only reads can live in constant memory",
                            computations=tuple(sorted(dev_writers)))
    if space in ("gpu_shared", "gpu_local") and role != "temporary":
        raise ScheduleError(f"buffer {buf!r} is a kernel argument ({role}); only a temporary "
                            f"allocated inside a kernel can be tagged {space}")


def _check_operations(l4: Layer4, loops: dict[str, list[tuple[str, str | None]]],
                      plan: DevicePlan) -> None:
    """A barrier is executed by every thread of a block: it must sit in a block's loops,
    outside thread loops. A shared cache is filled per block by its threads: inside the
    consumer's block loops, outside its thread loops. A local cache is per thread."""
    for o in l4.ops.values():
        if o.consumer is None or o.level is None:
            continue
        names = [n for n, _ in loops[o.consumer]]
        if o.level not in names:
            raise ScheduleError(f"{o.command}: {o.consumer!r} has no loop {o.level!r}; its "
                                f"loops are {names}", computations=(o.name, o.consumer),
                                command=o.command, command_index=o.command_index)
        prefix = loops[o.name][:len(loops[o.name]) - len(o.dims)]
        tags = [t for _, t in prefix]
        if o.kind == "barrier" or o.cache == "shared":
            what = "a barrier" if o.kind == "barrier" else "a shared-memory cache"
            if "gpu_thread" in tags:
                raise ScheduleError(f"{o.described}: {what} cannot sit inside the thread loop "
                                    f"{prefix[tags.index('gpu_thread')][0]!r} of "
                                    f"{o.consumer!r}; place it at a block-level loop",
                                    computations=(o.name, o.consumer), command=o.command,
                                    command_index=o.command_index)
            if o.name in plan.on_device and "gpu_block" not in tags and o.cache == "shared":
                raise ScheduleError(f"{o.described}: the loop {o.level!r} of {o.consumer!r} "
                                    "is outside its GPU block loops; a shared-memory cache "
                                    "belongs to a block", computations=(o.name, o.consumer),
                                    command=o.command, command_index=o.command_index)
        if o.cache == "local" and "gpu_thread" not in tags and o.name in plan.on_device:
            raise ScheduleError(f"{o.described}: a local cache is per thread: {o.level!r} "
                                f"must be at or inside a thread loop of {o.consumer!r}",
                                computations=(o.name, o.consumer), command=o.command,
                                command_index=o.command_index)


def _map_cooperative_copies(l4: Layer4, scheds: dict[str, CompSchedule],
                            loops: dict[str, list[tuple[str, str | None]]]) -> None:
    """A shared cache's own loops run on the block's threads, as many loops as the
    consumer has thread loops: the ones with the most elements (a tile's rows and
    columns, not its three channels), the last of them on x. A user's own mapping of the
    copy's loops wins."""
    for o in l4.ops.values():
        if o.cache != "shared" or o.consumer is None:
            continue
        s = scheds[o.name]
        if any(t in GPU_TAGS for t in s.tags.values()):
            continue
        k = min(sum(1 for _, t in loops[o.consumer] if t == "gpu_thread"), len(s.dims))
        if k == 0:
            continue
        extents = []
        for q, d in enumerate(s.dims):
            lo, hi = s.domain.dim_min_val(q), s.domain.dim_max_val(q)
            span = hi.sub(lo).to_python() if lo.is_int() and hi.is_int() else 1 << 30
            extents.append((span, q, d))
        chosen = sorted(sorted(extents, reverse=True)[:k], key=lambda e: e[1])
        for _, _, d in chosen:
            s.tags[d] = "gpu_thread"
            s.origins[d] = o.described
