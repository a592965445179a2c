"""What a distributed target needs beyond the loop AST: where each distributed buffer's
elements live on each rank, and the exact messages of each halo exchange.

The middle-end computes these with ISL for a given number of ranks
(:mod:`middleend.passes.distribution`), or for a number read at run time
(:mod:`middleend.passes.distribution_rt`); a backend only prints them. Ranks number
``0 .. ranks-1``; a distributed loop's iteration ``v`` runs on rank ``v``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .loopast import IExpr, Node


@dataclass(frozen=True)
class Window:
    """A buffer block-partitioned along ``dim``: rank ``r`` owns the elements
    ``r*block .. r*block+block-1`` along it (``block`` = ceil(extent / ranks), an index
    expression over the params) and stores ``lo_halo`` elements below its block and
    ``hi_halo`` above it, the most any rank reads or receives there. ``whole``: the halo
    grows with the params, so every rank stores the whole dimension instead."""

    buffer: str
    dim: int
    block: IExpr
    lo_halo: int
    hi_halo: int
    whole: bool = False


@dataclass(frozen=True)
class Transfer:
    """One message of an exchange: rank ``src`` sends rank ``dst`` the elements of
    ``buffer`` that ``loops`` enumerates (a loop nest whose statements, named
    ``me_elem``, bind ``e0 .. e<n-1>`` to an element; both ranks walk it in the same
    order, one packing, one unpacking). Its bounds use the params and the iterators of
    the loops around the exchange."""

    src: int
    dst: int
    buffer: str
    loops: Node


@dataclass(frozen=True)
class RootOp:
    """A scatter (``kind``) of ``buffer``'s blocks from rank ``root``, or a gather of
    them to it: rank ``r`` receives (sends) exactly the block it owns."""

    kind: str
    buffer: str
    root: int


@dataclass(frozen=True)
class Distribution:
    """``ranks`` the program runs on; ``windows`` by buffer name; ``exchanges``: each
    exchange operation's messages; ``tags``: each send and receive operation's message
    tag (a receive has its matching send's); ``fixed_rank``: see below."""

    ranks: int
    windows: dict[str, Window] = field(default_factory=dict)
    exchanges: dict[str, tuple[Transfer, ...]] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    # statements whose distributed loop has a single iteration, which ISL prints as no
    # loop at all: (the loop's iterator, the rank that runs them)
    fixed_rank: dict[str, tuple[str, int]] = field(default_factory=dict)
    # each exchange: the value of every loop iterator around it that a Transfer may use
    # and that has one value there (ISL prints no loop for it, so a printer declares it
    # when it is not in scope), as an index expression over the params and outer ones
    loop_values: dict[str, tuple[tuple[str, IExpr], ...]] = field(default_factory=dict)
    # each scatter and gather operation, by name
    root_ops: dict[str, RootOp] = field(default_factory=dict)
    # ranks read at run time (``ranks`` is then 0): one block size ``p_me_B`` for every
    # window, computed by the program from the rank count; a distributed loop's iteration
    # ``v`` runs on the rank whose block holds ``v``; a Transfer's ``src`` is the sender's
    # offset from the receiver (-1 or +1) and its loops use the receiver's block start
    # ``me_rlo``; they are complete when the block has at least ``min_block`` elements
    runtime: bool = False
    min_block: int = 1


ELEMENT = "me_elem"  # the statement name of a Transfer's element

# Ranks read at run time (the mpi target's ``ranks="runtime"``): the names the plan of
# ``middleend.passes.distribution_rt`` and the mpi printer share (here, in the IR, since
# the targets depend only on the IR)
RUNTIME = "runtime"  # the mpi target's ``ranks`` option for a rank count read at run time
LO, BLOCK = "me_lo", "me_B"  # the symbolic rank's block start and the block size
BLOCK_C = f"p_{BLOCK}"  # the block size in the printed program (a param of the kernel)
RECV_LO_C = "me_rlo"  # an exchange's receiver's block start, in the printed program
