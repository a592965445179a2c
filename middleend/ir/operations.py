"""Layer IV operations as the user creates them: copies between memories, barriers, sends
and receives (Table II of the later paper).

An operation computes no value of the algorithm; it moves data or synchronises, and is
scheduled like a computation (``after``/``before``/``then``, loop transformations of its own
loops). Each function here records one command that creates the operation and returns its
handle; what the operation does (its iteration domain, the exact elements it reads and
writes, where it runs) is computed from the schedule when the program is lowered
(:mod:`middleend.passes.layer4`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import commands as cmd
from .errors import DefinitionError
from .expr import Access, Expr, wrap
from .names import check_name
from .scheduling import Schedulable, dim_name

if TYPE_CHECKING:
    from .function import Function


class Operation(Schedulable):
    """A Layer IV operation of ``fn``: ``kind`` is one of ``commands.OPERATION_KINDS``."""

    def __init__(self, fn: Function, name: str, kind: str) -> None:
        self.fn = fn
        self.name = check_name(name, "operation")
        self.kind = kind
        fn._register("operations", self)

    def __repr__(self) -> str:
        return f"Operation({self.kind} {self.name})"


def _function_of(*objs: Any) -> Function:
    from .function import current_function

    for o in objs:
        fn = getattr(o, "fn", None)
        if fn is not None:
            return fn  # type: ignore[no-any-return]
    return current_function("a Layer IV operation")


def _buffer_name(x: Any, what: str) -> str:
    """A buffer named by a Buffer, a Computation (its buffer) or a name."""
    from .function import Buffer, Computation, _BufferOf

    if isinstance(x, (Buffer, Computation, _BufferOf)):
        return x.name
    if isinstance(x, str):
        return check_name(x, what)
    raise DefinitionError(f"{what}: expected a buffer, a computation or a name, got {x!r}")


def _consumer(p: Any, what: str) -> str:
    from .function import Computation

    if not isinstance(p, Computation):
        raise DefinitionError(f"{what}: the first argument must be a computation, got {p!r}")
    return p.name


def _level(level: Any) -> str:
    """A loop level, or ``ROOT`` (above every loop: once, before the consumer)."""
    return cmd.ROOT if isinstance(level, str) and level == cmd.ROOT else dim_name(level)


def copy_at(consumer: Any, level: Any, src: Any, dst: Any, name: str | None = None,
            order: Sequence[int] | None = None, panel: int | None = None,
            along: Any = None) -> Operation:
    """``copy_at(P, level, src, dst)``: in each iteration of ``P``'s loop ``level``, copy
    the elements of ``src`` that ``P`` reads below that loop (computed exactly from the
    schedule) into ``dst``, and make those reads read ``dst``. ``dst`` is a new buffer's
    name (sized by the compiler: the largest such footprint) or a declared temporary
    ``me.Buffer`` of ``src``'s rank and type. Returns the copy operation, which runs before
    ``P``'s inner loops unless ordered otherwise. At ``me.ROOT`` the copy runs once,
    before ``P``, into a buffer of ``src``'s sizes. ``order``: ``dst``'s dims as ``src``'s
    (``(1, 0)``: the transpose, ``dst[j, i] = src[i, j]``), so that a loop along which
    ``src`` is strided reads ``dst`` contiguously. ``panel`` (at ``me.ROOT``): ``dst``'s
    last dim in panels of that many elements, ``dst[d // P, ..., d % P]`` (``order=(1, 0),
    panel=8`` on ``A[i, k]``: ``dst[i // 8, k, i % 8]``), as a BLAS packs the operand a
    register tile of ``P`` rows reads: each step along ``k`` reads the next ``P``
    elements. ``along`` (a variable of ``P``): only the reads whose index moves with it
    read the copy (``data[k, i]`` of ``data[k, i] * data[k, j]``, along ``i``)."""
    p = _consumer(consumer, "copy_at")
    fn = _function_of(consumer)
    s = _buffer_name(src, "copy_at source")
    d = _buffer_name(dst, "copy_at destination")
    if s == d:
        raise DefinitionError(f"copy_at({p}, {level!r}, {s}, {d}): source and destination "
                              "are the same buffer")
    lv = _level(level)
    shown = "me.ROOT" if lv == cmd.ROOT else repr(lv)
    perm = tuple(order or ())
    if any(not isinstance(k, int) or isinstance(k, bool) for k in perm) or \
            sorted(perm) != list(range(len(perm))):
        raise DefinitionError(f"copy_at({p}, {shown}, {s}, {d}): order must be a "
                              f"permutation of 0..n-1 (the source's dims), got {order!r}")
    if panel is not None and (not isinstance(panel, int) or isinstance(panel, bool)
                              or panel < 2):
        raise DefinitionError(f"copy_at({p}, {shown}, {s}, {d}): panel must be an int of at "
                              f"least 2 (the elements of a panel's row), got {panel!r}")
    if panel is not None and lv != cmd.ROOT:
        raise DefinitionError(f"copy_at({p}, {shown}, {s}, {d}): a copy in panels is made "
                              "once, at me.ROOT (a tile's copy is small enough to be read "
                              "in place)")
    try:
        var = "" if along is None else dim_name(along)
    except DefinitionError:
        raise DefinitionError(f"copy_at({p}, {shown}, {s}, {d}): along must be a variable "
                              f"of {p} (a me.Var or its name), got {along!r}") from None
    if isinstance(dst, str):
        fn._reserve(d)
    op = Operation(fn, name or f"copy_{d}", "copy")
    fn.commands.add(cmd.CopyAt(p, lv, s, d, op.name, perm, panel or 0, var))
    return op


def barrier_at(consumer: Any, level: Any, name: str | None = None) -> Operation:
    """``barrier_at(P, level)``: a barrier among the threads running ``P``, in each
    iteration of its loop ``level`` (before ``P``'s inner loops unless ordered
    otherwise). Honoured by targets with threads that share memory (GPU blocks)."""
    p = _consumer(consumer, "barrier_at")
    fn = _function_of(consumer)
    lv = dim_name(level)
    op = Operation(fn, name or f"barrier_{p}_{lv}", "barrier")
    fn.commands.add(cmd.BarrierAt(p, lv, op.name))
    return op


def exchange(consumer: Any, buffer: Any, level: Any = cmd.ROOT, name: str | None = None
             ) -> Operation:
    """The halo exchange a distributed ``consumer`` needs: in each iteration of its loop
    ``level`` (once, before it, at ``me.ROOT``), every rank receives from the ranks that
    own them the elements of the distributed ``buffer`` (``buffer.distribute(dim)``) that
    ``consumer`` reads on that rank below the loop and the rank does not own, and the
    owners send them. The element sets are exact (ISL), never a bounding box of them.
    ``level`` must be a loop outside the distributed one."""
    p = _consumer(consumer, "exchange")
    fn = _function_of(consumer)
    b = _buffer_name(buffer, "exchange")
    lv = _level(level)
    op = Operation(fn, name or f"exchange_{b}_{p}", "exchange")
    fn.commands.add(cmd.Exchange(p, b, lv, op.name))
    return op


def scatter(buffer: Any, root: int = 0, name: str | None = None) -> Operation:
    """The distributed ``buffer`` (an input, ``buffer.distribute(dim)``) starts whole on
    rank ``root``, which sends each rank its block (``MPI_Scatterv``: uneven blocks too).
    Runs first unless ordered otherwise; it must come before every access of the buffer.
    Without it, each rank reads its own block of the input (no message)."""
    return _root_op(buffer, root, name, cmd.Scatter, "scatter")


def gather(buffer: Any, root: int = 0, name: str | None = None) -> Operation:
    """Every rank sends its block of the distributed ``buffer`` (an output) to rank
    ``root``, which ends with the whole buffer (``MPI_Gatherv``). Runs last unless
    ordered otherwise; it must come after every write of the buffer. Without it, each
    rank writes its own block of the output."""
    return _root_op(buffer, root, name, cmd.Gather, "gather")


def _root_op(buffer: Any, root: int, name: str | None,
             record: type[cmd.Scatter] | type[cmd.Gather], kind: str) -> Operation:
    b = _buffer_name(buffer, kind)
    if isinstance(root, bool) or not isinstance(root, int) or root < 0:
        raise DefinitionError(f"{kind}({b}, root={root!r}): root must be a rank (an int >= 0)")
    fn = _function_of(buffer)
    op = Operation(fn, name or f"{kind}_{b}", kind)
    fn.commands.add(record(b, op.name, root))
    return op


def distribute_buffer(buffer: Any, dim: int) -> None:
    """Block-partition ``buffer`` (or a computation's buffer) along ``dim`` across the
    ranks of a distributed target (rank r owns elements ``r*B .. r*B+B-1`` along ``dim``,
    ``B = ceil(extent / ranks)``); each rank stores only its block plus the halo it
    reads."""
    b = _buffer_name(buffer, "distribute")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
        raise DefinitionError(f"{b}.distribute(dim): dim must be a buffer dimension (an int "
                              f">= 0), got {dim!r}")
    _function_of(buffer).commands.add(cmd.DistributeBuffer(b, dim))


def partition_buffer(buffer: Any, dim: int, factor: int, kind: str) -> None:
    """Partition ``buffer`` (or a computation's buffer) along ``dim`` into ``factor``
    memories, ``kind`` cyclic, block or complete (``factor`` is then ignored: one register
    per element), so that a pipelined loop reads several elements per cycle. Whether the
    buffer can be partitioned (on chip, a constant size) is checked when it is lowered."""
    b = _buffer_name(buffer, "partition")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
        raise DefinitionError(f"{b}.partition(dim, ...): dim must be a buffer dimension (an "
                              f"int >= 0), got {dim!r}")
    if kind not in cmd.PARTITION_KINDS:
        raise DefinitionError(f"{b}.partition: kind must be one of "
                              f"{list(cmd.PARTITION_KINDS)}, got {kind!r}")
    if kind == "complete":
        factor = 0
    elif isinstance(factor, bool) or not isinstance(factor, int) or not 2 <= factor <= 1024:
        raise DefinitionError(f"{b}.partition: a {kind} partition needs a factor in [2, "
                              f"1024], got {factor!r}")
    _function_of(buffer).commands.add(cmd.PartitionBuffer(b, dim, factor, kind))


def expand(buffer: Any, loops: Sequence[Any], name: str | None = None) -> str:
    """Array expansion: store ``buffer`` as a new buffer (``name``, by default the buffer's
    name and the loops') with one copy per iteration of ``loops``, so that those loops no
    longer carry anything through it: they can then run in parallel, or keep several
    copies in registers at once. Each loop is an iterator name that every computation
    accessing the buffer has, or ``(name, k)`` for ``k`` copies along it (a storage fold:
    the legality check then proves that no copy is overwritten while still read). Returns
    the new buffer's name. Whether the program keeps its meaning (no value flows from one
    iteration of the loops to another) is checked exactly when it is lowered."""
    from .function import Buffer, Input

    what = f"expand({getattr(buffer, 'name', buffer)!r}, ...)"
    if not isinstance(buffer, Buffer) or isinstance(buffer, Input) or buffer.kind == "input":
        raise DefinitionError(f"{what}: expected a buffer that the program writes (a "
                              f"me.Buffer, not an input), got {buffer!r}")
    if isinstance(loops, (str, tuple)) and (isinstance(loops, str) or len(loops) == 2 and
                                            isinstance(loops[1], int)):
        loops = [loops]  # one loop given bare
    names: list[str] = []
    folds: list[int] = []
    for lp in loops:
        fold = 0
        if isinstance(lp, tuple) and len(lp) == 2:
            lp, fold = lp
            if isinstance(fold, bool) or not isinstance(fold, int) or fold < 2:
                raise DefinitionError(f"{what}: the copies kept along loop {lp!r} must be an "
                                      f"int >= 2, got {fold!r} (leave the loop out for one)")
        names.append(check_name(dim_name(lp), "loop"))
        folds.append(fold)
    if not names:
        raise DefinitionError(f"{what}: give at least one loop (an iterator name, or "
                              "(name, copies))")
    if len(set(names)) != len(names):
        raise DefinitionError(f"{what}: a loop named twice: {names}")
    fn = _function_of(buffer)
    dst = check_name(name, "buffer") if name is not None else \
        f"{buffer.name}_{'_'.join(names)}"
    fn._reserve(dst)
    fn._reserve(f"{dst}_back")  # the copy-back of an argument's final content
    fn.commands.add(cmd.Expand(buffer.name, tuple(names), tuple(folds), dst))
    return dst


def host_to_device(buffer: Any, name: str | None = None) -> Operation:
    """Copy the elements of ``buffer`` (or a computation's buffer) that the program uses
    from host to device memory; runs first unless ordered otherwise."""
    return _transfer(buffer, name, cmd.HostToDevice, "host_to_device", "to_device")


def device_to_host(buffer: Any, name: str | None = None) -> Operation:
    """Copy the elements of ``buffer`` (or a computation's buffer) that the program writes
    from device to host memory; runs last unless ordered otherwise."""
    return _transfer(buffer, name, cmd.DeviceToHost, "device_to_host", "to_host")


def _transfer(buffer: Any, name: str | None,
              record: type[cmd.HostToDevice] | type[cmd.DeviceToHost], kind: str,
              suffix: str) -> Operation:
    b = _buffer_name(buffer, kind)
    fn = _function_of(buffer)
    op = Operation(fn, name or f"{b}_{suffix}", kind)
    fn.commands.add(record(b, op.name))
    return op


def cache_at(buffer: Any, consumer: Any, level: Any, space: str, name: str | None = None
             ) -> Operation:
    """``cache_shared_at``/``cache_local_at`` of Table II: a copy of what ``consumer``
    reads of ``buffer`` below its loop ``level`` into GPU shared (or local) memory; the
    shared copy is made by the block's threads together, between barriers."""
    what = f"cache_{space}_at"
    b = _buffer_name(buffer, what)
    p = _consumer(consumer, what)
    fn = _function_of(consumer)
    lv = dim_name(level)
    op = Operation(fn, name or f"{b}_{space}", "copy")
    fn._reserve(f"{op.name}_buf")
    if space == "shared":
        for suffix in ("in", "out", "end"):
            Operation(fn, f"{op.name}_{suffix}", "barrier")
        fn.commands.add(cmd.CacheSharedAt(b, p, lv, op.name))
    else:
        fn.commands.add(cmd.CacheLocalAt(b, p, lv, op.name))
    return op


def tag_memory(buffer: Any, space: str) -> None:
    """Store ``buffer`` (or a computation's buffer) in a GPU memory space."""
    if space not in cmd.MEMORY_SPACES:
        raise DefinitionError(f"unknown memory space {space!r} (known: "
                              f"{', '.join(cmd.MEMORY_SPACES)})")
    b = _buffer_name(buffer, f"tag_{space}")
    _function_of(buffer).commands.add(cmd.TagMemory(b, space))


class _Placed:
    """What a buffer or a computation (its buffer) can be asked for in Layer IV."""

    def host_to_device(self, name: str | None = None) -> Operation:
        """An operation copying what the program uses of this buffer to the device
        (Table II's ``C.host_to_device()``)."""
        return host_to_device(self, name)

    def device_to_host(self, name: str | None = None) -> Operation:
        """An operation copying what the program writes of this buffer back to the host."""
        return device_to_host(self, name)

    def cache_shared_at(self, consumer: Any, level: Any, name: str | None = None
                        ) -> Operation:
        """Copy what ``consumer`` reads of this buffer below its loop ``level`` into GPU
        shared memory (by the block's threads, with barriers) and redirect the reads."""
        return cache_at(self, consumer, level, "shared", name)

    def cache_local_at(self, consumer: Any, level: Any, name: str | None = None
                       ) -> Operation:
        """The same into each thread's private memory."""
        return cache_at(self, consumer, level, "local", name)

    def scatter(self, root: int = 0, name: str | None = None) -> Operation:
        """An operation scattering this distributed buffer's blocks from rank ``root``
        (see :func:`scatter`)."""
        return scatter(self, root, name)

    def gather(self, root: int = 0, name: str | None = None) -> Operation:
        """An operation gathering this distributed buffer's blocks to rank ``root`` (see
        :func:`gather`)."""
        return gather(self, root, name)

    def tag_gpu_global(self) -> None:
        tag_memory(self, "gpu_global")

    def tag_gpu_shared(self) -> None:
        tag_memory(self, "gpu_shared")

    def tag_gpu_local(self) -> None:
        tag_memory(self, "gpu_local")

    def tag_gpu_constant(self) -> None:
        tag_memory(self, "gpu_constant")


def _props(props: Any, what: str) -> tuple[str, ...]:
    items = (props,) if isinstance(props, str) else tuple(props or ())
    out = []
    for p in items:
        q = str(p).lower()
        if q not in cmd.SEND_PROPERTIES:
            raise DefinitionError(f"{what}: unknown property {p!r} (known: "
                                  f"{', '.join(cmd.SEND_PROPERTIES)})")
        out.append(q)
    if {"sync", "async"} <= set(out) or {"blocking", "nonblocking"} <= set(out):
        raise DefinitionError(f"{what}: contradictory properties {out}")
    return tuple(dict.fromkeys(out))


def _iterators(iterators: Any, domain: str | None, what: str) -> tuple[Any, ...]:
    """An operation's iterators: bounded Vars, or Vars naming the dims of ``domain`` (ISL
    set text, which then gives the bounds)."""
    from .function import Var

    its = tuple(iterators)
    for v in its:
        if not isinstance(v, Var) or (v.lo is None and domain is None):
            raise DefinitionError(f"{what}: iterators must be bounded me.Vars (me.Var(name, "
                                  f"lo, hi)), got {v!r}")
    if domain is not None and not isinstance(domain, str):
        raise DefinitionError(f"{what}: domain must be ISL set text, got {domain!r}")
    return its


def _region(access: Any, size: Any, what: str) -> tuple[str, tuple[Expr, ...], tuple[Expr, ...]]:
    """(buffer, start element, extents) of ``buf[start]`` and ``size`` (one extent per
    dimension; a single extent only for a one-dimensional buffer)."""
    if not isinstance(access, Access):
        raise DefinitionError(f"{what}: the region must start at a buffer element, e.g. "
                              f"lin[0, 0, 0], got {access!r}")
    start = tuple(wrap(i) for i in access.indices)
    sizes = tuple(wrap(s) for s in size) if isinstance(size, Sequence) else (wrap(size),)
    if len(sizes) != len(start):
        raise DefinitionError(
            f"{what}: give one extent per dimension of {access.target.name!r} "
            f"({len(start)}), e.g. [2, M, 3] for two rows; got {len(sizes)}")
    return access.target.name, start, sizes


def send(iterators: Any, src: Any, size: Any, dest: Any, props: Any = ("async",),
         name: str | None = None, domain: str | None = None) -> Operation:
    """``send(d, src, size, dest, props)`` of Table II: for each point of the iteration
    domain ``d`` (bounded Vars; or ``domain``, ISL set text named after the operation, whose
    dims the Vars name), send the box of ``size`` elements starting at the element ``src``
    (e.g. ``lin[0, 0, 0]``) to node ``dest`` (an expression of the iterators).
    ``props``: 'sync'/'async', 'blocking'/'nonblocking'."""
    fn = _function_of(src if isinstance(src, Access) else None)
    its = _iterators(iterators, domain, "send")
    buf, start, sizes = _region(src, size, "send")
    op = Operation(fn, name or f"send_{buf}", "send")
    fn.commands.add(cmd.Send(op.name, its, domain or "", buf, start, sizes, wrap(dest),
                             _props(props, "send")))
    return op


def receive(iterators: Any, dst: Any, size: Any, src: Any, props: Any = ("sync",),
            matching: Operation | None = None, name: str | None = None,
            domain: str | None = None) -> Operation:
    """``receive(d, dst, size, src, props)`` of Table II: for each point of ``d``, receive
    the box of ``size`` elements at the element ``dst`` from node ``src``; ``matching`` is
    the send it pairs with."""
    fn = _function_of(dst if isinstance(dst, Access) else None)
    its = _iterators(iterators, domain, "receive")
    buf, start, sizes = _region(dst, size, "receive")
    if matching is not None and (not isinstance(matching, Operation) or
                                 matching.kind != "send"):
        raise DefinitionError(f"receive: matching must be a send operation, got {matching!r}")
    op = Operation(fn, name or f"receive_{buf}", "receive")
    fn.commands.add(cmd.Receive(op.name, its, domain or "", buf, start, sizes, wrap(src),
                                _props(props, "receive"),
                                matching.name if matching is not None else ""))
    return op
