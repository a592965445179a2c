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
OTHER_TAGS = ("gpu_block", "gpu_thread", "distribute", "pipeline")


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
class Gpu(Command):
    """Tag loops as GPU blocks and threads (as many of each)."""

    blocks: tuple[str, ...]
    threads: tuple[str, ...]


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
    """Pipeline a loop (the fpga target)."""

    dim: str


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
class AllocateAt(Command):
    """Allocate the buffer of ``comp`` inside ``consumer``'s loop ``level``."""

    consumer: str
    level: str


SCHEDULE_COMMANDS = (
    Interchange, Split, Tile, Shift, Skew, Reverse, After, ComputeAt, Unroll, Vectorize,
    Parallelize, Gpu, TileGpu, Distribute, Pipeline, SetSchedule,
)
DATA_COMMANDS = (StoreIn, StorageFold, AllocateAt)


@dataclass
class CommandLog:
    """The ordered list of commands of one Function."""

    items: list[Command] = field(default_factory=list)

    def add(self, cmd: Command) -> None:
        self.items.append(cmd)
