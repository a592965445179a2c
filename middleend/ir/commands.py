"""Scheduling and data-mapping commands, one record type per command.

The scheduling language records commands instead of applying them on the spot: Layer II and
Layer III are rebuilt from Layer I plus the ordered command list. That keeps the wire format
one-to-one with what the user wrote, lets an error point at the exact command, and lets the
legality checker replay a prefix of the list to find the command that broke a dependence.
Loop levels are loop names (strings); ``ROOT`` is the level above every loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ROOT = "__root__"

# Tags a backend may honour. 'parallel', 'vector' and 'unroll' are CPU tags.
CPU_TAGS = ("parallel", "vector", "unroll")
OTHER_TAGS = ("gpu_block", "gpu_thread", "distribute", "pipeline", "partition")


@dataclass(frozen=True)
class Command:
    """Base: ``comp`` is the name of the computation the command was called on."""

    comp: str

    @property
    def kind(self) -> str:
        """The API method that records this command (``ComputeAt`` -> ``compute_at``)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()

    def describe(self) -> str:
        args = ", ".join(
            f"{k}={v!r}" for k, v in self.__dict__.items() if k != "comp"
        )
        return f"{self.comp}.{self.kind}({args})"


@dataclass(frozen=True)
class Interchange(Command):
    a: str
    b: str


@dataclass(frozen=True)
class Split(Command):
    dim: str
    factor: int
    outer: str
    inner: str


@dataclass(frozen=True)
class Fuse(Command):
    """Fuse loop ``inner``, directly inside ``outer``, into one loop ``fused`` over both
    (Halide's ``fuse``)."""

    outer: str
    inner: str
    fused: str


@dataclass(frozen=True)
class Tile(Command):
    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    outers: tuple[str, ...]
    inners: tuple[str, ...]


@dataclass(frozen=True)
class Shift(Command):
    dim: str
    amount: int


@dataclass(frozen=True)
class Skew(Command):
    """(a, b) -> (a, b + factor * a); the new loops are named ``new_a``, ``new_b``."""

    a: str
    b: str
    factor: int
    new_a: str
    new_b: str


@dataclass(frozen=True)
class Reverse(Command):
    dim: str


@dataclass(frozen=True)
class After(Command):
    """``comp`` runs after ``other``, sharing the loops down to and including ``level``
    (a loop of ``comp``)."""

    other: str
    level: str

    @property
    def later(self) -> str:
        return self.comp

    @property
    def earlier(self) -> str:
        return self.other


@dataclass(frozen=True)
class Before(After):
    """``comp`` runs before ``other`` (recorded as written; ``level`` is a loop of
    ``other``, the one that runs later)."""

    @property
    def later(self) -> str:
        return self.other

    @property
    def earlier(self) -> str:
        return self.comp


@dataclass(frozen=True)
class Then(Before):
    """``comp.then(other, level)``: ``other`` runs after ``comp`` (same as ``before``)."""


@dataclass(frozen=True)
class ComputeAt(Command):
    consumer: str
    level: str


@dataclass(frozen=True)
class Inline(Command):
    pass


@dataclass(frozen=True)
class Unroll(Command):
    dim: str
    factor: int | None  # None: unroll the whole loop (its extent must be constant)
    outer: str
    inner: str


@dataclass(frozen=True)
class Vectorize(Command):
    dim: str
    factor: int
    outer: str
    inner: str


@dataclass(frozen=True)
class Parallelize(Command):
    dim: str


@dataclass(frozen=True)
class Atomic(Command):
    """Each instance of ``comp``, an update ``b[i] = b[i] op e`` (``op`` one of + - * min
    max and the bit operations; ``e`` not reading ``b``), is one atomic read-modify-write
    of its element (Halide's ``atomic()``): a loop tagged parallel may then run instances
    that update the same element (a histogram over its input) in parallel, since their
    order does not change the result of an associative, commutative ``op`` (the
    rounding of a float sum aside).

    With a ``group`` name, ``comp`` may have any form: its instance at a point, with those
    of the other computations atomic in the same group at that point, is one critical
    section (a lock around them: Halide's mutex around a Tuple update whose elements read
    each other, argmin); the group's computations share a domain and run one after the
    other at each point (passes/critical.py). A parallel or vector loop may then run
    group instances at once, in any order, as for one atomic update."""

    group: str = ""

    def describe(self) -> str:
        return f"{self.comp}.atomic({f'group={self.group!r}' if self.group else ''})"


@dataclass(frozen=True)
class Commute(Command):
    """The instances of ``comp``, an update ``b[i] = b[i] op e`` (the form of
    :class:`Atomic`), may update one element in any order: the legality check accepts a
    schedule that reorders them (Halide's reordering of a reduction's RVars), since an
    associative, commutative ``op`` gives the same result in any order (the rounding of
    a float sum aside). Only the order changes: a loop that runs two of them at once
    (parallel, vector) still needs :class:`Atomic`, and no other computation may read a
    partial result."""


@dataclass(frozen=True)
class Gpu(Command):
    """Tag loops as GPU blocks and threads (up to three of each; either may be empty:
    ``gpu_threads`` maps a producer computed inside a block to the block's threads).
    The last loop of each list maps to the x dimension (the fastest varying), the one
    before it to y, then z."""

    blocks: tuple[str, ...]
    threads: tuple[str, ...]

    def describe(self) -> str:
        """As the user wrote it: ``gpu_blocks(...)``, ``gpu_threads(...)``, ``gpu(...)``
        (as many blocks as threads) or ``gpu_loops(blocks, threads)``."""
        if not self.threads:
            return f"{self.comp}.gpu_blocks({', '.join(map(repr, self.blocks))})"
        if not self.blocks:
            return f"{self.comp}.gpu_threads({', '.join(map(repr, self.threads))})"
        if len(self.blocks) == len(self.threads):
            return f"{self.comp}.gpu({', '.join(map(repr, self.blocks + self.threads))})"
        return f"{self.comp}.gpu_loops(blocks={self.blocks!r}, threads={self.threads!r})"


@dataclass(frozen=True)
class TileGpu(Command):
    """``tile(i, j, t1, t2, i0, j0, i1, j1)`` then ``gpu(i0, j0, i1, j1)``."""

    i: str
    j: str
    t1: int
    t2: int
    i0: str
    j0: str
    i1: str
    j1: str


@dataclass(frozen=True)
class Distribute(Command):
    """Distribute a loop's iterations across nodes (the mpi target)."""

    dim: str


@dataclass(frozen=True)
class Pipeline(Command):
    """Pipeline a loop (the fpga target): a new iteration starts every ``ii`` cycles (the
    initiation interval; a loop-carried dependence may make a small one impossible, which
    the legality check reports with the smallest it allows)."""

    dim: str
    ii: int = 1


@dataclass(frozen=True)
class SetSchedule(Command):
    isl_map: str


@dataclass(frozen=True)
class StoreIn(Command):
    buffer: str
    indices: tuple[Any, ...] | None  # Layer I expressions over the domain vars; None = identity


@dataclass(frozen=True)
class StorageFold(Command):
    dim: int
    factor: int


@dataclass(frozen=True)
class Expand(Command):
    """``buffer.expand(*loops)``: array expansion. ``comp`` (a buffer) is stored as the
    buffer ``name``, one copy per iteration of ``loops`` (iterators that every computation
    writing or reading it has), those loops' counters its outermost dims; ``folds[k]``
    keeps that many copies along loop k (0: one per iteration). Every read still sees the
    value it sees in the program as written (checked exactly when it is lowered), and a
    kernel argument's final content is copied back (Layer III)."""

    loops: tuple[str, ...]
    folds: tuple[int, ...]
    name: str


@dataclass(frozen=True)
class AllocateAt(Command):
    """Allocate the buffer of ``comp`` inside ``consumer``'s loop ``level``."""

    consumer: str
    level: str


SCHEDULE_COMMANDS = (
    Interchange, Split, Fuse, Tile, Shift, Skew, Reverse, After, ComputeAt, Unroll, Vectorize,
    Parallelize, Gpu, TileGpu, Distribute, Pipeline, SetSchedule, Atomic, Commute,
)
DATA_COMMANDS = (StoreIn, StorageFold, AllocateAt, Expand)  # and TagMemory (Layer III/IV)


@dataclass
class CommandLog:
    """The ordered list of commands of one Function."""

    items: list[Command] = field(default_factory=list)

    def add(self, cmd: Command) -> None:
        self.items.append(cmd)


# ---------------------------------------------------------------------------- Layer IV
#
# Operations (Table II of the later paper): statements that are not Layer I computations
# (they compute no value of the algorithm) but move data or synchronise. Each command creates
# one named operation, which later commands schedule like a computation (after, before,
# then, and loop transformations of its own loops). ``comp`` is what the command was called
# on: the consumer for copy_at/barrier_at, the buffer (or computation) for the host/device
# copies, the operation itself for send/receive.

OPERATION_KINDS = ("copy", "barrier", "host_to_device", "device_to_host", "send", "receive",
                   "exchange", "stream", "line_buffer", "scatter", "gather")
# Memory spaces a buffer can be tagged with (Table II's tag_gpu_*), beside the host.
MEMORY_SPACES = ("gpu_global", "gpu_shared", "gpu_local", "gpu_constant")
SEND_PROPERTIES = ("sync", "async", "blocking", "nonblocking")


@dataclass(frozen=True)
class CopyAt(Command):
    """Copy the elements of buffer ``src`` that ``comp`` reads below its loop ``level``
    into ``dst`` (a buffer allocated per iteration of ``level``, indexed like ``src`` minus
    the tile's origin; at ``ROOT``, once before ``comp``, into a buffer of ``src``'s
    sizes) and make those reads read ``dst``. ``name`` names the operation. ``order``:
    ``dst``'s dimensions as ``src``'s, ``dst`` dim ``q`` being ``src`` dim ``order[q]``
    (the last one contiguous); empty: the same order. A transposed copy is what a BLAS
    packs: an operand strided along the vector loop read contiguously. ``panel`` (at the
    root only; 0: none) blocks ``dst``'s last dim in panels of that many elements, the
    panel's index outermost: ``dst[d // P, <the other dims in order>, d % P]``, so that a
    register tile of ``P`` rows reads one contiguous run per step of the loops inside the
    panel, where the plain transpose puts each step a whole row apart (a line and a page
    per step): what a BLAS does to the operand it reads as vectors. ``along`` (a variable
    of ``comp``) copies and redirects only the reads whose index moves with it: in
    ``cov[i, j] += data[k, i] * data[k, j]`` the vector operand ``data[k, i]``, while
    ``data[k, j]`` (one value per ``j``, broadcast) stays where it is contiguous along
    ``k``."""

    level: str
    src: str
    dst: str
    name: str
    order: tuple[int, ...] = ()
    panel: int = 0
    along: str = ""  # only the reads whose index moves with this variable of comp ("": all)


@dataclass(frozen=True)
class BarrierAt(Command):
    """A barrier among the threads that run ``comp``, in each iteration of its loop
    ``level`` (before ``comp``'s inner loops unless ordered otherwise)."""

    level: str
    name: str


@dataclass(frozen=True)
class HostToDevice(Command):
    """Copy the elements of the buffer of ``comp`` (a buffer or a computation) that the
    program uses from host to device memory."""

    name: str


@dataclass(frozen=True)
class DeviceToHost(Command):
    """Copy the elements of the buffer of ``comp`` that the program writes from device to
    host memory."""

    name: str


@dataclass(frozen=True)
class Send(Command):
    """``send(d, src, size, dest, props)``: for each point of the iteration domain (the
    bounded Vars ``iterators``, or ISL set text ``domain`` named ``comp``, the operation),
    send the box of ``size`` elements of ``buffer`` starting at ``start`` to node ``peer``
    (an expression of the iterators). ``properties`` is a subset of SEND_PROPERTIES."""

    iterators: tuple[Any, ...]
    domain: str
    buffer: str
    start: tuple[Any, ...]
    size: tuple[Any, ...]
    peer: Any
    properties: tuple[str, ...]

    def describe(self) -> str:
        """As written (the domain by its iterators: the same text before and after the
        wire, which carries the domain as ISL text)."""
        its = ", ".join(v.name for v in self.iterators)
        start = ", ".join(map(repr, self.start))
        size = ", ".join(map(repr, self.size))
        extra = f", matching={self.matching!r}" if getattr(self, "matching", "") else ""
        return (f"{self.kind}([{its}], {self.buffer}[{start}], [{size}], {self.peer!r}, "
                f"{list(self.properties)}{extra}) -> {self.comp}")


@dataclass(frozen=True)
class Receive(Send):
    """``receive(d, dst, size, src, props)``: the matching receive, into ``buffer`` at
    ``start`` from node ``peer``; ``matching`` names the send it pairs with (optional)."""

    matching: str = ""


@dataclass(frozen=True)
class CacheSharedAt(Command):
    """``C.cache_shared_at(P, level)``: copy what ``P`` reads of ``C``'s buffer (``comp``:
    a computation or a buffer) below its loop ``level`` into GPU shared memory, by the
    block's threads together, with the barriers it needs, and make ``P`` read the copy.
    ``name`` names the copy; its barriers are ``<name>_in``, ``<name>_out``, ``<name>_end``
    and its buffer ``<name>_buf``."""

    consumer: str
    level: str
    name: str


@dataclass(frozen=True)
class CacheLocalAt(Command):
    """``C.cache_local_at(P, level)``: the same into each thread's private (local) memory;
    no barrier is needed."""

    consumer: str
    level: str
    name: str


@dataclass(frozen=True)
class TagMemory(Command):
    """Store the buffer of ``comp`` (a buffer or a computation) in ``space`` (one of
    ``MEMORY_SPACES``)."""

    space: str


@dataclass(frozen=True)
class DistributeBuffer(Command):
    """``buffer.distribute(dim)``: ``comp`` (a buffer, or a computation meaning its
    buffer) is block-partitioned along ``dim`` across the ranks of a distributed target:
    each rank stores its block plus the halo it reads (Layer III)."""

    dim: int


@dataclass(frozen=True)
class Exchange(Command):
    """``me.exchange(consumer, buffer, level)``: in each iteration of ``consumer``'s loop
    ``level`` (once, at ``ROOT``), every rank receives from their owners the elements of the
    distributed ``buffer`` that ``consumer`` reads on it below that loop and it does not
    own: the exact halo, computed from the schedule (Layer IV)."""

    buffer: str
    level: str
    name: str


@dataclass(frozen=True)
class Scatter(Command):
    """``me.scatter(buffer, root)``: the distributed buffer ``comp`` starts whole on rank
    ``root``, which sends each rank its block (MPI_Scatterv); runs first unless ordered
    otherwise (Layer IV)."""

    name: str
    root: int = 0


@dataclass(frozen=True)
class Gather(Command):
    """``me.gather(buffer, root)``: every rank sends its block of the distributed buffer
    ``comp`` to rank ``root``, which ends with the whole buffer (MPI_Gatherv); runs last
    unless ordered otherwise (Layer IV)."""

    name: str
    root: int = 0


PARTITION_KINDS = ("cyclic", "block", "complete")


@dataclass(frozen=True)
class PartitionBuffer(Command):
    """``buffer.partition(dim, factor, kind)``: split the on-chip buffer ``comp`` (a
    buffer, or a computation meaning its buffer) along ``dim`` into ``factor`` memories
    (``scheme`` in PARTITION_KINDS; ``complete``: one register per element, ``factor``
    0), so that a pipelined loop can access several of its elements per cycle (Layer III).
    The API calls ``scheme`` ``kind``; ``Command.kind`` names the command itself."""

    dim: int
    factor: int
    scheme: str


@dataclass(frozen=True)
class Stream(Command):
    """``comp.stream(depth=None)``: the buffer of ``comp`` becomes a FIFO between its
    producer and its one consumer (Layer IV), legal only when the consumer reads every
    element once, in the order the producer writes them. ``depth`` None: sized from the
    schedule; a given depth that would deadlock the dataflow region is refused."""

    depth: int | None = None

    def describe(self) -> str:
        return f"{self.comp}.stream()" if self.depth is None else \
            f"{self.comp}.stream(depth={self.depth})"


@dataclass(frozen=True)
class LineBuffer(Command):
    """``comp.line_buffer(buffer)``: ``comp`` (the consumer, a stencil over the scan of its
    pipelined loop) reads ``buffer`` through a line buffer (the lines its window spans,
    sized by the exact reuse distance) and a window of registers, so that each element of
    ``buffer`` is read once (Layer IV)."""

    buffer: str


OPERATION_COMMANDS = (CopyAt, BarrierAt, HostToDevice, DeviceToHost, Send, Receive,
                      CacheSharedAt, CacheLocalAt, Exchange, Scatter, Gather)


def tags_of(c: Command) -> list[tuple[str, str]]:
    """The loop tags a command sets, with the loop each is on (what a target must
    honour)."""
    if isinstance(c, Gpu):
        return [("gpu_block", d) for d in c.blocks] + [("gpu_thread", d) for d in c.threads]
    if isinstance(c, TileGpu):
        return [("gpu_block", c.i0), ("gpu_block", c.j0), ("gpu_thread", c.i1),
                ("gpu_thread", c.j1)]
    if isinstance(c, Vectorize):
        return [("vector", c.inner)]
    if isinstance(c, Unroll):
        return [("unroll", c.dim if c.factor is None else c.inner)]
    if isinstance(c, DistributeBuffer):
        return [("distribute", f"dimension {c.dim} of buffer {c.comp}")]
    if isinstance(c, PartitionBuffer):
        return [("partition", f"dimension {c.dim} of buffer {c.comp}")]
    tag = {Parallelize: "parallel", Distribute: "distribute", Pipeline: "pipeline"}.get(type(c))
    return [(tag, c.dim)] if tag is not None else []  # type: ignore[attr-defined]


def operations_of(c: Command) -> list[tuple[str, str]]:
    """The Layer IV operations a command creates, as (kind, name)."""
    if isinstance(c, (CopyAt, CacheLocalAt)):
        return [("copy", c.name)]
    if isinstance(c, CacheSharedAt):
        return [("copy", c.name), ("barrier", f"{c.name}_in")]
    if isinstance(c, (BarrierAt, HostToDevice, DeviceToHost)):
        kind = {BarrierAt: "barrier", HostToDevice: "host_to_device",
                DeviceToHost: "device_to_host"}[type(c)]
        return [(kind, c.name)]
    if isinstance(c, Send):
        return [("receive" if isinstance(c, Receive) else "send", c.comp)]
    if isinstance(c, Exchange):
        return [("exchange", c.name)]
    if isinstance(c, (Scatter, Gather)):
        return [("scatter" if isinstance(c, Scatter) else "gather", c.name)]
    if isinstance(c, Stream):
        return [("stream", c.comp)]
    if isinstance(c, LineBuffer):
        return [("line_buffer", c.comp)]
    return []
