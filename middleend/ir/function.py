"""Layer I objects as the user builds them: params, iterators, buffers, computations, and
the Function that holds them with its command log.

These are IR records with recording methods (the scheduling language appends commands,
see :mod:`middleend.ir.scheduling`); lowering, compiling and printing the layers sit above,
in :mod:`middleend.api.function`. ``with me.Function("blur") as f:`` opens a scope; Params,
Vars, Inputs, Buffers and Computations created inside register themselves with ``f``. The
scope is held in a ``contextvars.ContextVar`` so that two threads building two functions do
not see each other, and nothing outlives the ``with`` block: there is no module-level
registry.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Any

from . import commands as cmd
from . import types as t
from .errors import DefinitionError
from .expr import Access, Expr, as_index_tuple, wrap
from .names import check_name
from .operations import Operation, _Placed
from .scheduling import Schedulable, dim_name, level_name, positive
from .types import DType

_CURRENT: contextvars.ContextVar[Function | None] = contextvars.ContextVar(
    "middleend_function", default=None
)

INPUT, OUTPUT, TEMPORARY, INOUT = "input", "output", "temporary", "inout"


def current_function(what: str) -> Function:
    f = _CURRENT.get()
    if f is None:
        raise DefinitionError(f"{what} must be created inside `with me.Function(...)`")
    return f


class Param(Expr):
    """A symbolic integer constant (a parameter of the generated kernel). ``min``/``max``
    are assumptions the compiler may use (e.g. ``min=1`` makes ``x[0]`` of an N-element
    input a valid read); the kernel checks them on every call."""

    __slots__ = ("name", "fn", "min", "max")

    def __init__(self, name: str, min: int | None = None, max: int | None = None) -> None:
        self.fn = current_function("me.Param")
        self.name = check_name(name, "parameter")
        for v in (min, max):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise DefinitionError(f"parameter {name!r}: bounds must be ints, got {v!r}")
            if v is not None and not -(2 ** 62) <= v <= 2 ** 62:
                raise DefinitionError(f"parameter {name!r}: bound {v} is beyond +-2^62 "
                                      "(index arithmetic is 64-bit)")
        if min is not None and max is not None and min > max:
            raise DefinitionError(f"parameter {name!r}: min {min} > max {max}")
        self.min, self.max = min, max
        self.fn._register("params", self)

    @property
    def dtype(self) -> DType:
        return t.int32


class Var(Expr):
    """An iterator ``lo <= v < hi``; bounds may use params and outer Vars. A Var without
    bounds only names a loop that a scheduling command creates."""

    __slots__ = ("name", "lo", "hi")

    def __init__(self, name: str, lo: Any = None, hi: Any = None) -> None:
        self.name = check_name(name, "iterator")
        if (lo is None) != (hi is None):
            raise DefinitionError(f"Var {name!r}: give both bounds or neither")
        self.lo = None if lo is None else wrap(lo)
        self.hi = None if hi is None else wrap(hi)

    @property
    def dtype(self) -> DType:
        return t.int32


class _Indexable:
    """Something that can be read with ``x[i, j]``: an Input, a Buffer or a Computation."""

    name: str
    dtype: DType

    def __getitem__(self, idx: Any) -> Expr:
        return Access(self, as_index_tuple(idx))


class Buffer(_Indexable, _Placed):
    """A Layer III buffer. Reading ``buf[i, j]`` reads its current content (memory
    semantics, resolved by exact dataflow), unlike ``comp[i, j]`` which names a value."""

    def __init__(self, name: str, sizes: Sequence[Any], dtype: DType,
                 kind: str = TEMPORARY) -> None:
        self.fn = current_function("me.Buffer")
        self.name = check_name(name, "buffer")
        if kind not in (INPUT, OUTPUT, TEMPORARY, INOUT):
            raise DefinitionError(f"buffer {name!r}: kind must be input, output, inout or "
                                  "temporary")
        self.sizes = tuple(wrap(s) for s in sizes)
        self.dtype = dtype
        self.kind = kind
        self.fn._register("buffers", self)

    def __repr__(self) -> str:
        return f"Buffer({self.name})"

    def distribute(self, dim: int) -> Buffer:
        """Block-partition this buffer along ``dim`` across the ranks of the mpi target
        (see :func:`middleend.ir.operations.distribute_buffer`)."""
        from .operations import distribute_buffer

        distribute_buffer(self, dim)
        return self

    def expand(self, *loops: Any, name: str | None = None) -> str:
        """Store this buffer with one copy per iteration of ``loops`` (array expansion;
        see :func:`middleend.ir.operations.expand`); returns the copies' buffer name."""
        from .operations import expand

        return expand(self, loops, name)

    def partition(self, dim: int, factor: int, kind: str = "cyclic") -> Buffer:
        """Partition this on-chip buffer along ``dim`` (the fpga target; see
        :func:`middleend.ir.operations.partition_buffer`)."""
        from .operations import partition_buffer

        partition_buffer(self, dim, factor, kind)
        return self


class Input(Buffer):
    """An input array of the kernel (a buffer of kind input)."""

    def __init__(self, name: str, sizes: Sequence[Any], dtype: DType) -> None:
        super().__init__(name, sizes, dtype, INPUT)


class Computation(_Indexable, Schedulable, _Placed):
    """A Layer I computation: a domain (its Vars, an optional predicate) and an expression.
    The scheduling methods record commands; nothing is applied until compile time."""

    def __init__(self, name: str, iterators: Sequence[Var], expr: Any = None,
                 predicate: Any = None, dtype: DType | None = None,
                 domain: str | None = None, order: str | None = None) -> None:
        """``domain`` (ISL set text such as ``"[N] -> { S[i, j] : 0 <= j < i < N }"``)
        replaces the iterators' bounds; the wire format carries domains this way.

        ``order`` (ISL map text such as ``"{ S[t, i] -> [0, t, 1, i, 0] }"``) is this
        computation's place in a memory-based source program's sequential order (a Julia
        loop nest): memory reads then see the last write before them *in that order*
        instead of declaration order. Give it for every computation or for none."""
        self.fn = current_function("me.Computation")
        self.name = check_name(name, "computation")
        self.vars: tuple[Var, ...] = tuple(iterators)
        if domain is not None and not isinstance(domain, str):
            raise DefinitionError(f"computation {name!r}: domain must be ISL set text")
        self.domain = domain
        if order is not None and not isinstance(order, str):
            raise DefinitionError(f"computation {name!r}: order must be ISL map text")
        self.order = order
        for v in self.vars:
            if not isinstance(v, Var) or (v.lo is None and domain is None):
                raise DefinitionError(
                    f"computation {name!r}: iterator {v!r} needs bounds (me.Var(name, lo, hi))"
                )
        if len({v.name for v in self.vars}) != len(self.vars):
            raise DefinitionError(f"computation {name!r}: repeated iterator names")
        self.predicate = None if predicate is None else wrap(predicate)
        self._dtype = dtype
        self._typing = False  # resolving the type from the expression (cycle guard)
        self.expr: Expr | None = None
        self.fn._register("computations", self)
        if expr is not None:
            self.set_expression(expr)

    @property
    def dtype(self) -> DType:
        if self._dtype is not None:
            return self._dtype
        if self.expr is not None:
            # an untyped computation takes its expression's type; one whose expression
            # reads itself (``S[i] = S[i] + 1``, or through others) has none to take
            if self._typing:
                raise DefinitionError(
                    f"computation {self.name!r}: its type depends on itself (its expression "
                    f"reads {self.name!r}, directly or through other untyped computations); "
                    f"give it a type: me.Computation({self.name!r}, ..., dtype=me.float32)")
            self._typing = True
            try:
                return self.expr.dtype
            finally:
                self._typing = False
        raise DefinitionError(f"computation {self.name!r} has neither an expression nor a type")

    def set_expression(self, e: Any) -> None:
        ex = wrap(e, self._dtype)
        if self._dtype is not None and ex.dtype != self._dtype:
            from .expr import Cast

            ex = Cast(self._dtype, ex)
        self.expr = ex

    def __repr__(self) -> str:
        return f"Computation({self.name})"

    # -- placement and inlining (Layer II) ----------------------------------------------
    def compute_at(self, consumer: Computation, level: Any) -> Computation:
        """Compute the instances ``consumer`` reads in each iteration of its loop ``level``
        just before it there (exact footprint; overlapping tiles recompute)."""
        if not isinstance(consumer, Computation):
            raise DefinitionError(f"{self.name}.compute_at: the consumer must be a "
                                  f"computation, got {consumer!r}")
        return self._log(cmd.ComputeAt(self.name, consumer.name, dim_name(level)))

    def inline(self) -> Computation:
        return self._log(cmd.Inline(self.name))

    def atomic(self, group: str | None = None) -> Computation:
        """Make each instance of this update (``b[i] = b[i] op e``) one atomic
        read-modify-write, so that a parallel loop may update the same element from
        several iterations (a histogram); with a ``group`` name, each instance, with those
        of the group's other computations at the same point, runs as one critical section
        instead (any form: argmin's value and index change together); see
        :class:`~middleend.ir.commands.Atomic`."""
        if group is not None and (not isinstance(group, str) or not group.isidentifier()):
            raise DefinitionError(f"{self.name}.atomic(group={group!r}): the group name must "
                                  "be an identifier")
        return self._log(cmd.Atomic(self.name, group or ""))

    def commute(self) -> Computation:
        """Let this update's instances (``b[i] = b[i] op e``, ``op`` associative and
        commutative) update one element in any order, so that a schedule may reorder its
        reduction loops (Halide's ``reorder`` of RVars); parallel loops over them still
        need :meth:`atomic`. See :class:`~middleend.ir.commands.Commute`."""
        return self._log(cmd.Commute(self.name))


    # -- data mapping (Layer III) ------------------------------------------------------
    def store_in(self, buffer: Buffer | Computation, indices: Sequence[Any] | None = None
                 ) -> Computation:
        """Store in ``buffer`` at ``indices``; a Computation as target means that
        computation's buffer. Affine indices give an exact access relation. Data-dependent
        ones (``[clamp(im[y, x], 0, 255)]``, a scatter ``[perm[i]]``) make a *may* write
        of any element of the buffer, bounds-checked at run time; such a computation cannot
        be read by value (read ``target.memory[...]`` instead) and the buffer is sized by
        its affine writers or its declaration."""
        idx = None if indices is None else tuple(wrap(i) for i in indices)
        return self._log(cmd.StoreIn(self.name, buffer.name, idx))

    def storage_fold(self, dim: int, factor: int) -> Computation:
        return self._log(cmd.StorageFold(self.name, int(dim), positive(factor, "storage_fold")))

    def allocate_at(self, consumer: Computation, level: Any) -> Computation:
        return self._log(cmd.AllocateAt(self.name, consumer.name, level_name(level)))

    def stream(self, depth: int | None = None) -> Computation:
        """Pass this computation's values to its consumer through a FIFO instead of a
        buffer (the fpga target's ``hls::stream``); legal only when the consumer reads
        each element once, in the order this computation writes them (checked). The FIFO
        is sized from the schedule; a ``depth`` given here is kept if it cannot deadlock
        the dataflow region, refused (with the depth it needs) if it can."""
        if depth is not None:
            if isinstance(depth, bool) or not isinstance(depth, int) or \
                    not 1 <= depth <= 1 << 24:
                raise DefinitionError(f"{self.name}.stream(depth): a FIFO depth is an int "
                                      f"in [1, 2^24], got {depth!r}")
        return self._log(cmd.Stream(self.name, depth))

    def line_buffer(self, buffer: Any) -> Computation:
        """Read ``buffer`` (a buffer, an input, or a computation meaning its buffer)
        through a line buffer (the fpga target): this computation must be a stencil over
        the scan of its pipelined loop (reads at constant offsets, one new column per
        iteration); the lines its window spans are kept on chip, sized by the exact
        reuse distance, so each element of ``buffer`` is read once (checked with ISL)."""
        from .operations import _buffer_name

        return self._log(cmd.LineBuffer(self.name, _buffer_name(buffer, "line_buffer")))

    @property
    def memory(self) -> _BufferOf:
        """The buffer this computation is stored in, read with memory semantics:
        ``hist.memory[idx]`` is the element's *current* content (whatever the last write
        before the reading instance left there, found by dataflow), whereas ``hist[b]`` is
        the value ``hist`` computed at instance ``b``. Updates read their buffer this way,
        and it is the only way to read elements written at data-dependent indices."""
        return _BufferOf(self)

    def buffer(self) -> _BufferOf:
        """The buffer associated to this computation (Table II's ``C.buffer()``), e.g. to
        distribute it: ``C.buffer().distribute(0)``."""
        return _BufferOf(self)

    def update(self, iterators: Sequence[Var], body: Any, name: str | None = None,
               at: Sequence[Any] | None = None) -> Computation:
        """Concise ``acc += ...`` style update: a new computation over ``iterators`` stored
        in this computation's buffer whose value is ``body(prev)``, ``prev`` being the
        buffer's current element (a callable), or ``prev + body`` when ``body`` is an
        expression. The element is ``at`` (default: this computation's iterators), which
        may be data-dependent, e.g. a histogram ``hist.update([ry, rx], 1, at=[idx])``."""
        buf_idx = tuple(self.vars) if at is None else tuple(wrap(i) for i in at)
        upd = Computation(name or f"{self.name}_update{self.fn._next_update(self.name)}",
                          iterators, dtype=self.dtype)
        prev = _BufferOf(self)[buf_idx]
        upd.set_expression(body(prev) if callable(body) else prev + body)
        upd.store_in(self, buf_idx)
        return upd


class _BufferOf(_Indexable):
    """The buffer a computation is stored in, before Layer III decides what it is."""

    def __init__(self, comp: Computation) -> None:
        self.comp = comp
        self.name = comp.name
        self.dtype = comp.dtype
        self.fn = comp.fn

    def distribute(self, dim: int) -> _BufferOf:
        """Block-partition the computation's buffer along ``dim`` across the ranks of the
        mpi target (``C.buffer().distribute(0)``)."""
        from .operations import distribute_buffer

        distribute_buffer(self, dim)
        return self

    def partition(self, dim: int, factor: int, kind: str = "cyclic") -> _BufferOf:
        """Partition the computation's on-chip buffer along ``dim`` (the fpga target:
        ``C.buffer().partition(2, 3, "complete")``)."""
        from .operations import partition_buffer

        partition_buffer(self, dim, factor, kind)
        return self


class Function:
    """A compilation unit: Layer I objects plus the ordered command log (what the wire
    format carries). ``me.Function`` adds lowering and compiling on top.

    ``allow_empty_domains``: a computation whose domain is empty for every parameter
    value allowed computes nothing; written by hand that is a mistake (a bound or a
    predicate the wrong way round), refused as a ``DefinitionError``. A front-end that
    specializes a program on sizes and arguments (Halide, Julia) makes such computations
    legitimately (a dead branch, an RDom of extent 0, a zero-length array) and sets this
    flag: the middle-end then drops them (see :mod:`middleend.passes.empty`)."""

    def __init__(self, name: str, allow_empty_domains: bool = False) -> None:
        self.name = check_name(name, "function")
        if not isinstance(allow_empty_domains, bool):
            raise DefinitionError(f"function {name!r}: allow_empty_domains must be a bool, "
                                  f"got {allow_empty_domains!r}")
        self.allow_empty_domains = allow_empty_domains
        self.params: list[Param] = []
        self.buffers: list[Buffer] = []
        self.computations: list[Computation] = []
        self.operations: list[Operation] = []  # Layer IV (see middleend.ir.operations)
        self.reserved: list[str] = []  # buffers that commands create (copy_at destinations)
        self.commands = cmd.CommandLog()
        self._token: contextvars.Token[Function | None] | None = None
        self._updates: dict[str, int] = {}

    def __enter__(self) -> Function:
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None

    def _names(self) -> set[str]:
        return {o.name for o in (*self.params, *self.buffers, *self.computations,
                                 *self.operations)} | set(self.reserved)

    def _register(self, kind: str, obj: Any) -> None:
        if obj.name in self._names():
            raise DefinitionError(f"function {self.name!r}: name {obj.name!r} defined twice")
        getattr(self, kind).append(obj)

    def _reserve(self, name: str) -> None:
        """Claim a name for a buffer a command creates (it must not clash later)."""
        if name in self._names():
            raise DefinitionError(f"function {self.name!r}: name {name!r} defined twice")
        self.reserved.append(name)

    def _next_update(self, base: str) -> int:
        self._updates[base] = self._updates.get(base, 0) + 1
        return self._updates[base]

    def operation(self, name: str) -> Operation:
        for o in self.operations:
            if o.name == name:
                return o
        raise DefinitionError(f"function {self.name!r} has no operation {name!r}")

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise DefinitionError(f"function {self.name!r} has no buffer {name!r}")

    def computation(self, name: str) -> Computation:
        for c in self.computations:
            if c.name == name:
                return c
        raise DefinitionError(f"function {self.name!r} has no computation {name!r}")
