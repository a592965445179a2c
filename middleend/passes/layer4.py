"""Layer IV operations: what each copy, barrier, host/device copy, send and receive does,
computed exactly from Layers I and III.

An operation is a statement with its own iteration domain and exact element accesses
(ISL relations), placed in the time-space like a computation:

* ``copy_at(P, level, src, dst)``: its domain is the set of elements of ``src`` that ``P``
  reads; placed at ``P``'s loop ``level``, each iteration copies exactly the elements the
  iterations below it read (the footprint, computed as for ``compute_at``), into ``dst``
  (allocated per iteration of ``level``), and ``P``'s reads of ``src`` read ``dst``
  instead. The copy is *transparent*: the element it writes holds the value it read, so
  the legality check follows a read through the copy to the computation that produced the
  value (:mod:`middleend.passes.legality`).
* ``barrier_at(P, level)``: one point per iteration of ``level``; no data.
* ``host_to_device``/``device_to_host``: a transparent copy of a buffer's elements (those
  the program reads / writes) between two memories of the same buffer.
* ``send``/``receive``: for each point of their own domain, a box of elements read / written.

Default placement: copies and barriers run inside ``level`` before ``P``'s inner loops;
``host_to_device``, sends and receives first (in the order written), ``device_to_host``
last; ordering commands (after/before/then) move them like computations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..ir import commands as cmd
from ..ir.affine import AffineContext, NonAffine, to_pw_aff
from ..ir.errors import DefinitionError, ScheduleError
from ..ir.expr import Expr, walk
from ..ir.function import TEMPORARY, Function, Var
from .data import BufferInfo, Layer3, box
from .dataflow import logical_access, read_buffer
from .layer1 import Layer1, Read, comp_space, domain_of

TRANSPARENT = ("copy", "host_to_device", "device_to_host")


@dataclass
class Op:
    """One Layer IV operation. ``domain`` is its own iteration domain (named after it, dims
    ``dims``); ``read``/``write`` map an instance to the *logical* element of ``src``/
    ``dst`` it reads/writes; ``acc`` (copies and barriers) maps each Layer I instance of the
    consumer to the instances it needs, which places the operation at the consumer's loop
    ``level``; ``refs`` are the consumer's read references now reading ``dst``."""

    name: str
    kind: str
    command: str
    index: int
    domain: isl.Set
    dims: list[str]
    placement: str  # "at" (before the consumer at its level), "after" (after it), "first",
    # "last", "before" (before the first of ``anchors`` in the order, outside its loops)
    consumer: str | None = None
    level: str | None = None
    src: str | None = None
    dst: str | None = None
    read: isl.Map | None = None
    write: isl.Map | None = None
    acc: isl.Map | None = None
    refs: list[int] = field(default_factory=list)
    peer: Expr | None = None
    properties: tuple[str, ...] = ()
    iterators: list[str] = field(default_factory=list)  # send/receive: its own iterators
    cache: str | None = None  # a cache_shared_at / cache_local_at copy: "shared" / "local"
    anchors: tuple[str, ...] = ()  # placement "before": the statements it precedes

    @property
    def transparent(self) -> bool:
        """Whether the element it writes holds the value it read (a copy)."""
        return self.kind in TRANSPARENT

    @property
    def command_index(self) -> int | None:
        return None if self.index < 0 else self.index

    @property
    def described(self) -> str:
        """The command that created it, with its index (or why the compiler added it)."""
        return self.command if self.index < 0 else f"{self.command} (command #{self.index})"


@dataclass
class Layer4:
    ops: dict[str, Op] = field(default_factory=dict)
    redirect: dict[int, str] = field(default_factory=dict)  # read ref -> buffer it now reads

    def buffer_of(self, l3: Layer3, r: object) -> str:
        """The buffer a read reference reads (after the copies)."""
        return self.redirect.get(r.ref, read_buffer(l3, r))  # type: ignore[attr-defined]


def build_layer4(fn: Function, l1: Layer1, l3: Layer3, commands: list[cmd.Command]
                 ) -> Layer4:
    """The operations the commands create, in command order (a copy may read what an
    earlier copy made: global -> shared -> local). Adds each copy's destination buffer to
    Layer III."""
    l4 = Layer4()
    for k, c in enumerate(commands):
        if isinstance(c, cmd.CopyAt):
            _copy(l4, l1, l3, fn, c, k)
        elif isinstance(c, cmd.BarrierAt):
            _barrier(l4, l1, c, k)
        elif isinstance(c, (cmd.HostToDevice, cmd.DeviceToHost)):
            _host_device(l4, l1, l3, c, k)
        elif isinstance(c, cmd.Send):
            _send(l4, l1, l3, c, k)
        elif isinstance(c, cmd.Exchange):
            _exchange(l4, l1, l3, c, k)
        elif isinstance(c, (cmd.Scatter, cmd.Gather)):
            _root_op(l4, l1, l3, c, k)
        elif isinstance(c, (cmd.CacheSharedAt, cmd.CacheLocalAt)):
            _cache(l4, l1, l3, fn, c, k)
        elif isinstance(c, cmd.TagMemory):
            buf = l3.store.get(c.comp, c.comp)
            if buf not in l3.buffers:
                raise _fail(c, k, f"unknown buffer or computation {c.comp!r}")
            l3.buffers[buf].space = c.space
    return l4


def _cache(l4: Layer4, l1: Layer1, l3: Layer3, fn: Function,
           c: cmd.CacheSharedAt | cmd.CacheLocalAt, k: int) -> None:
    """cache_shared_at / cache_local_at: a copy into a new buffer in that memory; in
    shared memory, between barriers (before the copy, after it, and after the consumer's
    iteration, so that the next iteration's copy never overwrites what a thread still
    reads)."""
    shared = isinstance(c, cmd.CacheSharedAt)
    copy = cmd.CopyAt(c.consumer, c.level, c.comp, f"{c.name}_buf", c.name)
    if shared:
        _barrier(l4, l1, cmd.BarrierAt(c.consumer, c.level, f"{c.name}_in"), k, c)
    _copy(l4, l1, l3, fn, copy, k, c)
    l3.buffers[copy.dst].space = "gpu_shared" if shared else "gpu_local"
    l4.ops[c.name].cache = "shared" if shared else "local"
    if shared:
        _barrier(l4, l1, cmd.BarrierAt(c.consumer, c.level, f"{c.name}_out"), k, c)
        _barrier(l4, l1, cmd.BarrierAt(c.consumer, c.level, f"{c.name}_end"), k, c)
        l4.ops[f"{c.name}_end"].placement = "after"


def _fail(c: cmd.Command, k: int, msg: str, comps: tuple[str, ...] = ()) -> ScheduleError:
    return ScheduleError(f"{c.describe()}: {msg}", computations=comps, command=c.describe(),
                         command_index=k)


def _named_elements(l1: Layer1, name: str, dims: list[str]) -> isl.Space:
    return comp_space(l1.param_space, name, dims)


def _as_op(s: isl.Set | isl.Map, op: str, dims: list[str], out: bool = False) -> isl.Set:
    """``s`` (a set of elements, or the range of a map when ``out``) renamed as the
    operation's instances ``op[dims]``."""
    x = s.range() if out else s
    x = x.set_tuple_name(op)
    for q, d in enumerate(dims):
        x = x.set_dim_name(isl.dim_type.set, q, d)
    return x


def _identity(dom: isl.Set, target: str) -> isl.Map:
    """``{op[e] -> target[e]}`` on ``dom``."""
    m = isl.Map.identity(dom.get_space().map_from_set()).intersect_domain(dom)
    for q in range(m.dim(isl.dim_type.out)):
        m = m.set_dim_name(isl.dim_type.out, q, f"e{q}")
    return m.set_tuple_name(isl.dim_type.out, target)


def _consumer(l1: Layer1, c: cmd.Command, k: int, blame: cmd.Command | None = None) -> str:
    if c.comp not in l1.comps:
        what = "inlined" if c.comp in l1.inlined else "unknown"
        raise _fail(blame or c, k, f"{what} computation {c.comp!r}", (c.comp,))
    return c.comp


def _copy(l4: Layer4, l1: Layer1, l3: Layer3, fn: Function, c: cmd.CopyAt, k: int,
          blame: cmd.Command | None = None) -> None:
    """``blame``: the command as the user wrote it, when the copy is part of another
    (cache_shared_at): errors and Layer IV name that one."""
    who = blame or c
    p = _consumer(l1, c, k, who)
    src = l3.store.get(c.src, c.src)
    if src not in l3.buffers:
        raise _fail(who, k, f"unknown buffer or computation {c.src!r}")
    if l3.store[p] == src:
        raise _fail(who, k, f"{p!r} writes {src!r}: a read-only copy of the buffer it updates "
                          "would go stale (copy another computation's buffer)", (p,))
    refs = [r for r in l1.comps[p].reads if l4.buffer_of(l3, r) == src]
    if not refs:
        raise _fail(who, k, f"{p!r} does not read {src!r}", (p,))
    if c.along:
        refs = [r for r in refs if _moves_with(r, c.along)]
        if not refs:
            raise _fail(who, k, f"no read of {src!r} by {p!r} has an index that moves with "
                              f"{c.along!r} (along= names a variable of {p!r})", (p,))
    for r in refs:
        if r.access is None:
            raise _fail(who, k, f"{p!r} reads {src!r} at a data-dependent index; its footprint "
                              "is not exact, so it cannot be copied", (p,))
    sb = l3.buffers[src]
    if c.order and sorted(c.order) != list(range(sb.ndim)):
        raise _fail(who, k, f"order {c.order} is not a permutation of the dims of {src!r} "
                          f"(0..{sb.ndim - 1})", (p,))
    if c.panel and c.level != cmd.ROOT:
        raise _fail(who, k, f"a copy in panels (panel={c.panel}) is made once, at the root "
                          f"(me.ROOT), not per iteration of {c.level!r}", (p,))
    if c.panel and (c.panel < 2 or c.dst in l3.buffers):
        raise _fail(who, k, f"panel={c.panel}: a copy in panels needs panels of at least 2 "
                          "elements and a new buffer as its destination (its layout is the "
                          "compiler's)", (p,))
    dst = _dst_buffer(l3, fn, c, k, sb, who)
    if c.order != tuple(range(sb.ndim)):
        dst.order = c.order
    if c.panel:
        dst.panel = ((c.order or tuple(range(sb.ndim)))[-1], c.panel)
    acc: isl.Map | None = None
    for r in refs:
        a = logical_access(l1, l3, r)
        acc = a if acc is None else acc.union(a)
    assert acc is not None
    dims = [f"{c.dst}_{q}" for q in range(sb.ndim)]
    origin = read_buffer(l3, refs[0])  # the logical element space the copies share
    acc = acc.set_tuple_name(isl.dim_type.out, origin).coalesce()
    dom = _as_op(acc, c.name, dims, out=True).coalesce()
    acc = acc.set_tuple_name(isl.dim_type.out, c.name)
    for q, d in enumerate(dims):
        acc = acc.set_dim_name(isl.dim_type.out, q, d)
    op = Op(c.name, "copy", who.describe(), k, dom, dims, "at", consumer=p,
            level=c.level, src=src, dst=dst.name, read=_identity(dom, src),
            write=_identity(dom, dst.name), acc=acc, refs=[r.ref for r in refs])
    for r in refs:
        l4.redirect[r.ref] = dst.name
    l4.ops[c.name] = op


def _moves_with(r: Read, var: str) -> bool:
    """Whether one of the read's indices involves the reader's variable ``var`` (a
    data-dependent index may involve anything)."""
    pos = r.domain.get_space().find_dim_by_name(isl.dim_type.set, var)
    return pos >= 0 and any(pa is None or pa.involves_dims(isl.dim_type.in_, pos, 1)
                            for pa in r.indices)


def _dst_buffer(l3: Layer3, fn: Function, c: cmd.CopyAt, k: int, sb: BufferInfo,
                who: cmd.Command) -> BufferInfo:
    """The copy's destination: a new temporary (sized per iteration by the compiler; at
    the root, the source's sizes) or a declared temporary of the source's rank and type,
    never written by a computation."""
    at = None if c.level == cmd.ROOT else (c.comp, c.level, c.describe())
    if c.dst in l3.buffers:
        b = l3.buffers[c.dst]
        if b.declared is None or b.declared.kind != TEMPORARY or b.writers:
            raise _fail(who, k, f"destination {c.dst!r} must be a new buffer or a declared "
                              "temporary that no computation writes")
        if b.ndim != sb.ndim or b.dtype != sb.dtype:
            raise _fail(who, k, f"destination {c.dst!r} is {b.ndim}-d {b.dtype.name}; the "
                              f"source {sb.name!r} is {sb.ndim}-d {sb.dtype.name}")
        if b.alloc_at is not None:
            raise _fail(who, k, f"destination {c.dst!r} is already allocated at a loop")
        if at is None:  # indexed as the source is: its sizes, in the order given
            if any(not b.sizes[q].is_equal(sb.sizes[d])
                   for q, d in enumerate(c.order or range(sb.ndim))):
                raise _fail(who, k, f"destination {c.dst!r} of a copy at the root must "
                                  f"have the sizes of {sb.name!r}"
                                  + (f" in the order {c.order}" if c.order else ""))
            b.sizes = list(sb.sizes)  # logical, as the source's (the order permutes them)
        b.alloc_at, b.copy_of = at, sb.name
        return b
    if c.dst in fn._names() - set(fn.reserved):
        raise _fail(who, k, f"destination {c.dst!r} is the name of something else")
    b = BufferInfo(c.dst, sb.dtype, sb.ndim, list(sb.sizes) if at is None else [], TEMPORARY,
                   alloc_at=at, copy_of=sb.name)
    l3.buffers[c.dst] = b
    return b


def _barrier(l4: Layer4, l1: Layer1, c: cmd.BarrierAt, k: int,
             blame: cmd.Command | None = None) -> None:
    p = _consumer(l1, c, k, blame)
    dom = isl.Set.universe(_named_elements(l1, c.name, []))
    pdom = l1.comps[p].domain
    acc = isl.Map.from_domain_and_range(pdom, dom)
    l4.ops[c.name] = Op(c.name, "barrier", (blame or c).describe(), k, dom, [], "at",
                        consumer=p, level=c.level, acc=acc)


def _exchange(l4: Layer4, l1: Layer1, l3: Layer3, c: cmd.Exchange, k: int) -> None:
    """A halo exchange: one instance per iteration of the consumer's loop ``level``, like
    a barrier; what it moves between which ranks depends on the number of ranks and is
    computed when a distributed target lowers (:mod:`middleend.passes.distribution`)."""
    p = _consumer(l1, c, k)
    buf = l3.store.get(c.buffer, c.buffer)
    if buf not in l3.buffers:
        raise _fail(c, k, f"unknown buffer or computation {c.buffer!r}")
    if not any(l4.buffer_of(l3, r) == buf for r in l1.comps[p].reads):
        raise _fail(c, k, f"{p!r} does not read {buf!r}", (p,))
    dom = isl.Set.universe(_named_elements(l1, c.name, []))
    acc = isl.Map.from_domain_and_range(l1.comps[p].domain, dom)
    l4.ops[c.name] = Op(c.name, "exchange", c.describe(), k, dom, [], "at", consumer=p,
                        level=c.level, src=buf, acc=acc)


def _root_op(l4: Layer4, l1: Layer1, l3: Layer3, c: cmd.Scatter | cmd.Gather, k: int
             ) -> None:
    """A scatter (gather): one instance, first (last) unless ordered otherwise; which
    elements go to (come from) which rank depends on the number of ranks and is computed
    when a distributed target lowers (:mod:`middleend.passes.rootio`)."""
    buf = l3.store.get(c.comp, c.comp)
    if buf not in l3.buffers:
        raise _fail(c, k, f"unknown buffer or computation {c.comp!r}")
    kind = "scatter" if isinstance(c, cmd.Scatter) else "gather"
    dom = isl.Set.universe(_named_elements(l1, c.name, []))
    l4.ops[c.name] = Op(c.name, kind, c.describe(), k, dom, [],
                        "first" if kind == "scatter" else "last", src=buf,
                        properties=(f"root={c.root}",))


def _host_device(l4: Layer4, l1: Layer1, l3: Layer3, c: cmd.HostToDevice | cmd.DeviceToHost,
                 k: int) -> None:
    buf = l3.store.get(c.comp, c.comp)
    if buf not in l3.buffers:
        raise _fail(c, k, f"unknown buffer or computation {c.comp!r}")
    kind = "host_to_device" if isinstance(c, cmd.HostToDevice) else "device_to_host"
    transfer(l4, l1, l3, kind, buf, c.name, c.describe(), k)


def transfer(l4: Layer4, l1: Layer1, l3: Layer3, kind: str, buf: str, name: str,
             command: str, index: int, users: set[str] | None = None) -> Op:
    """A host/device copy of the elements of ``buf`` that ``users`` (default: every
    computation) read (``host_to_device``) or write (``device_to_host``); it runs first /
    last unless ordered otherwise."""
    b = l3.buffers[buf]
    elems: isl.Set | None = None
    if kind == "host_to_device":
        for comp in l1.comps.values():
            if users is not None and comp.name not in users:
                continue
            for r in comp.reads:
                if l4.buffer_of(l3, r) == buf:
                    e = logical_access(l1, l3, r).range()
                    elems = e if elems is None else elems.union(e)
        for o in l4.ops.values():  # copies made on the device (cache_shared_at)
            if o.kind == "copy" and o.src == buf and o.read is not None and \
                    (users is None or o.name in users):
                e = o.read.range().reset_tuple_id().set_tuple_name(buf)
                elems = e if elems is None else elems.union(e)
    else:
        for w in b.writers:
            if users is not None and w not in users:
                continue
            e = l3.logical[w].intersect_domain(l1.comps[w].domain).range()
            elems = e if elems is None else elems.union(e)
    space = _named_elements(l1, buf, [f"e{q}" for q in range(b.ndim)])
    if elems is None:
        elems = isl.Set.empty(space)
    elems = elems.intersect(box(b, elems.get_space())).coalesce()
    dims = [f"{buf}_{q}" for q in range(b.ndim)]
    dom = _as_op(elems, name, dims)
    op = Op(name, kind, command, index, dom, dims,
            "first" if kind == "host_to_device" else "last", src=buf, dst=buf,
            read=_identity(dom, buf), write=_identity(dom, buf))
    l4.ops[name] = op
    return op


def _send(l4: Layer4, l1: Layer1, l3: Layer3, c: cmd.Send, k: int) -> None:
    """A send (receive): for each point of its domain, the box ``[start, start + size)`` of
    the buffer, read (written)."""
    buf = l3.store.get(c.buffer, c.buffer)
    if buf not in l3.buffers:
        raise _fail(c, k, f"unknown buffer or computation {c.buffer!r}")
    b = l3.buffers[buf]
    if len(c.start) != b.ndim:
        raise _fail(c, k, f"{buf!r} has {b.ndim} dims; the region gives {len(c.start)}")
    try:
        own = domain_of(c.comp, [v if isinstance(v, Var) else Var(v) for v in c.iterators],
                        c.domain or None, l1.param_space, "operation")
    except DefinitionError as e:
        raise _fail(c, k, str(e)) from None
    its = [own.get_dim_name(isl.dim_type.set, q) for q in range(own.dim(isl.dim_type.set))]
    dims = its + [f"{buf}_{q}" for q in range(b.ndim)]
    ac = AffineContext(comp_space(l1.param_space, c.comp, dims))
    dom = own.add_dims(isl.dim_type.set, b.ndim)
    for q, d in enumerate(dims):
        dom = dom.set_dim_name(isl.dim_type.set, q, d)
    dom = dom.set_tuple_name(c.comp)
    try:
        for q, (s, n) in enumerate(zip(c.start, c.size, strict=True)):
            lo, ext = to_pw_aff(s, ac), to_pw_aff(n, ac)
            x = ac.dim(len(its) + q)
            dom = dom.intersect(lo.le_set(x)).intersect(x.lt_set(lo.add(ext)))
    except NonAffine as e:
        raise _fail(c, k, f"the region must be affine in the params and {its} ({e})") from None
    elems = isl.Map.from_domain_and_range(
        dom, isl.Set.universe(_named_elements(l1, buf, [f"e{q}" for q in range(b.ndim)])))
    for q in range(b.ndim):
        elems = elems.equate(isl.dim_type.in_, len(its) + q, isl.dim_type.out, q)
    outside = elems.range().subtract(box(b, elems.range().get_space()))
    if not outside.is_empty():
        raise _fail(c, k, f"the region lies outside {buf!r}: {outside.coalesce()}")
    receive = isinstance(c, cmd.Receive)
    peer_vars = {v.name for v in _vars_in(c.peer)}
    if not peer_vars <= set(its):
        raise _fail(c, k, f"the peer may only use the operation's iterators {its}")
    l4.ops[c.comp] = Op(c.comp, "receive" if receive else "send", c.describe(), k, dom, dims,
                        "first", src=None if receive else buf, dst=buf if receive else None,
                        read=None if receive else elems, write=elems if receive else None,
                        peer=c.peer, properties=c.properties, iterators=its)


def _vars_in(e: Expr) -> list[Var]:
    return [n for n in walk(e) if isinstance(n, Var)]
