"""The scheduled program's memory accesses, in time-space coordinates.

Every statement instance is one point T of the time-space (schedules are injective), so
accesses are written as ``{T -> buffer[element]}``. A buffer allocated inside a loop is one
array per iteration of that loop: its element identity includes the time-space prefix of the
allocation loop, which is how privatisation shows up in the dependence analysis. The offsets
and per-iteration sizes of such buffers (Layer IV allocations) are computed here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..ir.errors import ScheduleError
from .data import Layer3
from .dataflow import Expected, logical_access, may_write
from .device import DEVICE_PREFIX, DevicePlan
from .layer1 import Layer1
from .layer4 import Layer4
from .placement import TimeSpace


@dataclass
class LocalAlloc:
    """A buffer allocated inside the loop at time-space dim ``dim``."""

    buffer: str
    dim: int
    where: str  # "loop <level> of <consumer>", for messages and Layer IV
    offsets: list[isl.PwAff]  # on the full time-space, one per buffer dim
    sizes: list[isl.PwAff]  # over params


@dataclass
class Physical:
    tinv: isl.UnionMap  # T -> C[x] (the instance of each time-space point; ops too)
    writes: dict[str, isl.Map]  # comp -> {T -> B[e]} (element identity incl. privatisation)
    reads: dict[int, isl.Map]  # ref -> {T -> B[e]} (B: the buffer read after the copies)
    guarded: set[str] = field(default_factory=set)  # may writers (see dataflow.may_write)
    local: dict[str, LocalAlloc] = field(default_factory=dict)
    op_writes: dict[str, isl.Map] = field(default_factory=dict)  # Layer IV op -> {T -> B[e]}
    op_reads: dict[str, isl.Map] = field(default_factory=dict)  # Layer IV op -> {T -> B[e]}

    def accesses_of(self, buf: str) -> list[isl.Map]:
        """Every access (write or read, computations and operations) of ``buf``."""
        return [m for m in (*self.writes.values(), *self.reads.values(),
                            *self.op_writes.values(), *self.op_reads.values())
                if m.get_tuple_name(isl.dim_type.out) == buf]


def _t_space(ts: TimeSpace, l1: Layer1) -> isl.Space:
    return isl.Space.set_alloc(l1.ctx, 0, 2 * ts.depth + 1).align_params(l1.param_space)


def _fold(l3: Layer3, m: isl.Map, buf: str, name: str | None = None) -> isl.Map:
    """``m`` (an access of ``buf``) after ``buf``'s storage folds, its element space named
    ``name`` (the device's copy of the buffer, say)."""
    f = l3.fold_map(buf, m.range().get_space())
    m = m if f is None else m.apply_range(f)
    return m if name is None or name == buf else m.set_tuple_name(isl.dim_type.out, name)


def build_physical(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected,
                   l4: Layer4 | None = None, dev: DevicePlan | None = None) -> Physical:
    """The accesses in time-space. With a device plan, a buffer that has a host and a
    device copy is two memories: statements on the device access ``_dev_<buffer>``, and
    host/device copies read one and write the other."""
    l4 = l4 or Layer4()
    dev = dev or DevicePlan()
    tinv: isl.UnionMap | None = None
    to_t: dict[str, isl.Map] = {}
    for n in ts.order:
        s = ts.comps[n]
        assert s.full is not None and s.proj is not None
        m = s.full.reverse().apply_range(s.proj)  # T -> C[x]
        to_t[n] = m
        um = isl.UnionMap.from_map(m)
        tinv = um if tinv is None else tinv.union(um)
    if tinv is None:  # no statement (a specialized program that computes nothing)
        tinv = isl.UnionMap.empty(l1.param_space)
    writes = {}
    for n in ts.order:
        if n in l4.ops:
            continue
        buf = l3.store[n]
        w = to_t[n].apply_range(l3.logical[n])
        writes[n] = _fold(l3, w, buf, dev.name_for(buf, n))
    reads = {}
    for r in exp.reads:
        buf = l4.buffer_of(l3, r)  # a copy's destination when copy_at redirected the read
        name = dev.name_for(buf, r.comp)
        if l3.buffers[buf].role == "input" and name == buf:
            continue  # nothing writes a host input: every read sees the caller's data
        acc = logical_access(l1, l3, r).set_tuple_name(isl.dim_type.out, buf)
        reads[r.ref] = _fold(l3, to_t[r.comp].apply_range(acc), buf, name)
    phys = Physical(tinv, writes, reads,
                    {n for n in ts.order if n not in l4.ops and may_write(l1, l3, n)})
    for o in l4.ops.values():
        src, dst = o.src, o.dst
        if src is not None:
            src_name = DEVICE_PREFIX + src if o.kind == "device_to_host" else \
                dev.name_for(src, o.name)
        if dst is not None:
            dst_name = DEVICE_PREFIX + dst if o.kind == "host_to_device" else \
                dev.name_for(dst, o.name)
        if o.write is not None and dst is not None:
            phys.op_writes[o.name] = _fold(l3, to_t[o.name].apply_range(o.write), dst,
                                           dst_name)
        if o.read is not None and src is not None:
            phys.op_reads[o.name] = _fold(l3, to_t[o.name].apply_range(o.read), src, src_name)
    for b in l3.buffers.values():
        if b.alloc_at is not None:
            _localise(phys, ts, l1, l3, b.name, b.alloc_at)
    return phys


# the accesses of a buffer are coalesced before its per-iteration bounds are taken when they
# have more pieces than this: one piece per read of an inlined interpolate's level (75) made
# the parametric min/max take 0.57 s, 0.1 s coalesced; but the 10 reads of a tiled stencil
# stage, coalesced into 3 pieces of many more facets, took 0.19 s instead of 0.01 s
_COALESCE_ABOVE = 32


def _localise(phys: Physical, ts: TimeSpace, l1: Layer1, l3: Layer3, buf: str,
              at: tuple[str, str, str]) -> None:
    consumer, level, command = at
    if consumer not in ts.comps:
        raise ScheduleError(f"{command}: unknown or inlined consumer {consumer!r}",
                            computations=(consumer,), command=command)
    dims = ts.comps[consumer].ext_dims
    if level not in dims:
        raise ScheduleError(f"{command}: {consumer!r} has no loop {level!r}; its loops are "
                            f"{dims}", computations=(buf, consumer), command=command)
    dim = 2 * dims.index(level) + 1
    ntd = 2 * ts.depth + 1
    tsp = _t_space(ts, l1)
    prefix = isl.Map.identity(tsp.map_from_set()).project_out(isl.dim_type.out, dim + 1,
                                                              ntd - dim - 1)
    acc: isl.Map | None = None
    for m in phys.accesses_of(buf):
        acc = m if acc is None else acc.union(m)
    if acc is None:
        raise ScheduleError(f"{command}: nothing reads or writes {buf!r}",
                            computations=(buf,), command=command)
    if acc.n_basic_map() > _COALESCE_ABOVE:
        acc = acc.coalesce()  # the same relation
    per = acc.apply_domain(prefix)  # prefix -> B[e]
    offsets, sizes = [], []
    ndim = l3.buffers[buf].ndim
    for q in range(ndim):
        lo = per.dim_min(q)
        hi = per.dim_max(q)
        ext = hi.sub(lo).add_constant_val(isl.Val.one(l1.ctx))
        vals = isl.Map.from_pw_aff(ext).range()
        size = vals.dim_max(0)
        # prefer a constant bound over all parameter values (stack-allocatable tiles)
        free = vals.project_out(isl.dim_type.param, 0, vals.dim(isl.dim_type.param))
        if not free.is_empty() and not size.involves_nan() and free.is_bounded():
            cst = free.dim_max(0)
            if not cst.involves_nan() and cst.is_cst():
                ls = isl.LocalSpace.from_space(size.get_domain_space())
                size = isl.PwAff.from_aff(isl.Aff.zero_on_domain(ls).set_constant_val(
                    cst.max_val()))
        if size.involves_nan():
            raise ScheduleError(f"allocate_at: the footprint of {buf!r} per iteration of "
                                f"{level!r} is unbounded", computations=(buf, consumer))
        sizes.append(size.coalesce())
        offsets.append(lo.add_dims(isl.dim_type.in_, ntd - dim - 1).coalesce())
    phys.local[buf] = LocalAlloc(buf, dim, f"loop {level} of {consumer}", offsets, sizes)
    _check_declared_size(l1, l3, buf, sizes, command)
    # privatise: element identity = (allocation-loop prefix, element)
    for table in (phys.writes, phys.reads, phys.op_writes, phys.op_reads):
        for key, m in list(table.items()):  # type: ignore[attr-defined]
            if m.get_tuple_name(isl.dim_type.out) == buf:
                table[key] = _privatise(m, prefix, buf)  # type: ignore[index]


def _check_declared_size(l1: Layer1, l3: Layer3, buf: str, sizes: list[isl.PwAff],
                         command: str) -> None:
    """A declared buffer allocated per iteration (a copy_at destination) must hold the
    largest per-iteration footprint, for every admissible parameter value."""
    b = l3.buffers[buf]
    if b.declared is None or b.copy_of is None:
        return  # allocate_at sizes a buffer by its footprint, whatever its declaration
    cb = isl.AstBuild.from_context(l1.context)
    for k, (need, have) in enumerate(zip(sizes, b.sizes, strict=True)):
        need = need.project_domain_on_params()
        have = have.project_domain_on_params().align_params(need.get_space())
        need = need.align_params(have.get_space())
        short = need.gt_set(have).intersect_params(l1.context)
        if not short.is_empty():
            raise ScheduleError(
                f"{command}: buffer {buf!r} is declared with size "
                f"{cb.expr_from_pw_aff(have).to_C_str()} in dimension {k}, but an iteration "
                f"needs {cb.expr_from_pw_aff(need).to_C_str()}", computations=(buf,),
                command=command)


def _privatise(m: isl.Map, prefix: isl.Map, buf: str) -> isl.Map:
    return prefix.flat_range_product(m.reset_tuple_id(isl.dim_type.out)).set_tuple_name(
        isl.dim_type.out, buf)
