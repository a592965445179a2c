"""Layer III: buffers and the access relations that map computation instances to elements.

Default: one buffer per computation, identity access, sized by the exact bounds of what is
written (ISL's dim_max). ``store_in`` gives any affine mapping (transposed, modulo, scalar,
shared by an update chain); ``storage_fold`` contracts a dimension. Two access maps are kept
per computation: the *logical* one (before folding), which defines memory-based reads in
the sequential semantics, and the *physical* one, which the legality check and the code use.

A data-dependent store index (a histogram's ``hist[clamp(im[y, x], 0, 255)]``, a scatter
``out[perm[i]]``) has no exact relation. Its dimension is left free: the logical map says
the instance writes *some* element of the buffer's box along it (exact along the affine
dimensions), and the computation is a *may* writer (``Layer3.may``) for the dataflow, like a
guarded one: it never kills an older write and every later read of the box may see it. The
buffer is sized by its affine writers (or its declaration) and the generated store checks
the index at run time, so an out-of-range index is a kernel error, never a stray write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from ..ir import commands as cmd
from ..ir.affine import AffineContext, NonAffine, relaxed_access_map, to_pw_aff
from ..ir.errors import DefinitionError, quoted
from ..ir.expr import Binary, Const, Expr
from ..ir.function import INOUT, INPUT, OUTPUT, TEMPORARY, Buffer, Computation, Function, Var
from ..ir.types import DType, int32
from .layer1 import Layer1, comp_space


@dataclass
class BufferInfo:
    name: str
    dtype: DType
    ndim: int
    sizes: list[isl.PwAff]  # over params
    role: str
    declared: Buffer | None = None
    fold: dict[int, int] = field(default_factory=dict)
    alloc_at: tuple[str, str, str] | None = None  # (consumer, loop level, command text)
    writers: list[str] = field(default_factory=list)
    copy_of: str | None = None  # a copy_at destination: the buffer it holds a tile of
    space: str | None = None  # a memory space it was tagged with (commands.MEMORY_SPACES)
    # the physical dims as logical ones (physical dim q is logical dim order[q]; a copy_at
    # with order=): indices, sizes and footprints are permuted after any folding
    order: tuple[int, ...] = ()
    # (logical dim d, P): a copy_at in panels, physically [d // P, <order but d>, d % P]
    panel: tuple[int, int] | None = None


@dataclass
class OutOfBounds:
    """Writes outside a declared buffer for some parameter values only (``acc[0]`` of an
    ``N``-element buffer when ``N <= 0``): the program compiles, and the kernel refuses
    the values in ``violated`` (a params-only set) at call time, as Halide does."""

    buffer: str
    message: str
    violated: isl.Set


@dataclass
class Layer3:
    buffers: dict[str, BufferInfo]
    store: dict[str, str]  # computation -> buffer
    index: dict[str, tuple[Expr, ...]]  # computation -> logical index exprs over its vars
    logical: dict[str, isl.Map]  # computation universe -> buffer (before folding)
    outputs: list[str]
    # computations stored at data-dependent indices -> those index positions (may writers)
    may: dict[str, tuple[int, ...]] = field(default_factory=dict)
    requirements: list[OutOfBounds] = field(default_factory=list)
    # computations dropped for an empty domain (Layer1.dropped) -> the buffer that holds
    # what they would have stored: kept for the others' stores and reads into it
    dropped: dict[str, str] = field(default_factory=dict)

    def buffer_of(self, comp: str) -> str:
        """The buffer of a computation, a dropped one included (a ``.memory`` read)."""
        got = self.store.get(comp)
        return got if got is not None else self.dropped[comp]

    def phys_index(self, buf: str, idx: Sequence[Expr]) -> tuple[Expr, ...]:
        b = self.buffers[buf]
        f = b.fold
        out = tuple(Binary("mod", e, Const(f[k], e.dtype), e.dtype) if k in f else e
                    for k, e in enumerate(idx))
        if b.panel is not None:
            d, n = b.panel
            e, size = out[d], Const(n, out[d].dtype)
            return (Binary("floordiv", e, size, e.dtype),
                    *(out[k] for k in b.order or range(b.ndim) if k != d),
                    Binary("mod", e, size, e.dtype))
        return tuple(out[k] for k in b.order) if b.order else out

    def fold_map(self, buf: str, space: isl.Space) -> isl.Map | None:
        """``{buf[e] -> buf[e']}`` applying the storage folds and the dims' order, or None
        if there are neither."""
        b = self.buffers[buf]
        if not b.fold and not b.order and b.panel is None:
            return None
        ac = AffineContext(space)
        m = isl.Map.from_domain(isl.Set.universe(space))
        parts = []
        for k in b.order or range(b.ndim):
            x = ac.dim(k)
            if k in b.fold:
                x = x.mod_val(isl.Val.int_from_si(space.get_ctx(), b.fold[k]))
            parts.append((k, x))
        if b.panel is not None:
            d, n = b.panel
            x = dict(parts)[d]
            size = isl.Val.int_from_si(space.get_ctx(), n)
            parts = [(d, x.scale_down_val(size).floor()),
                     *((k, y) for k, y in parts if k != d), (d, x.mod_val(size))]
        for _, x in parts:
            m = m.flat_range_product(isl.Map.from_pw_aff(x))
        return m.set_tuple_name(isl.dim_type.out, buf)


def build_layer3(fn: Function, l1: Layer1, outputs: Sequence[Any] | None,
                 commands: list[cmd.Command]) -> Layer3:
    ps = l1.param_space
    pctx = AffineContext(isl.Space.set_alloc(ps.get_ctx(), 0, 0).align_params(ps))
    buffers: dict[str, BufferInfo] = {}
    for b in fn.buffers:
        try:
            sizes = [to_pw_aff(s, pctx) for s in b.sizes]
        except NonAffine as e:
            raise DefinitionError(f"buffer {b.name!r}: sizes must be affine in params "
                                  f"({e})") from None
        buffers[b.name] = BufferInfo(b.name, b.dtype, len(b.sizes), sizes, b.kind, b)
    store: dict[str, str] = {}
    index: dict[str, tuple[Expr, ...]] = {}
    pending: dict[str, cmd.StoreIn] = {}
    for c in commands:
        if isinstance(c, cmd.StoreIn) and c.comp in l1.comps:
            pending[c.comp] = c
        elif isinstance(c, cmd.StoreIn):
            raise DefinitionError(f"{c.describe()}: unknown or inlined computation {c.comp!r}")
    comp_objs = {c.name: c for c in fn.computations}
    # resolve store_in targets that are computations, following chains
    for name in l1.declared:
        tgt, idx = _resolve_target(name, pending, l1, comp_objs, buffers)
        store[name] = tgt
        index[name] = idx
    for name in l1.declared:
        tgt = store[name]
        if tgt not in buffers:
            c = l1.comps[name]
            buffers[tgt] = BufferInfo(tgt, comp_objs[tgt].dtype, len(index[name]), [], TEMPORARY)
        b = buffers[tgt]
        if b.role == INPUT:
            raise DefinitionError(f"computation {name!r} cannot be stored in input {tgt!r}")
        if len(index[name]) != b.ndim:
            raise DefinitionError(f"{name}.store_in({tgt}): {len(index[name])} indices for a "
                                  f"{b.ndim}-d buffer")
        if b.dtype != l1.comps[name].expr.dtype and comp_objs[name]._dtype is None:
            c = l1.comps[name]
            from ..ir.expr import Cast

            c.expr = Cast(b.dtype, c.expr)
        b.writers.append(name)
    dropped = _dropped_buffers(l1, store, buffers, comp_objs, pctx)
    logical: dict[str, isl.Map] = {}
    may: dict[str, tuple[int, ...]] = {}
    for name in l1.declared:
        c = l1.comps[name]
        ac = AffineContext(comp_space(ps, name, c.vars))
        logical[name], free = relaxed_access_map(index[name], ac, store[name])
        if free:
            may[name] = free
    _refuse_value_reads(l1, may)
    _fold_and_alloc(commands, l1, store, buffers, may)
    reqs: list[OutOfBounds] = []
    _size_default_buffers(l1, store, logical, buffers, may, reqs)
    _bound_may_writes(l1, store, logical, buffers, may)
    l3 = Layer3(buffers, store, index, logical, [], may, reqs, dropped)
    l3.outputs = _outputs(l1, l3, outputs, comp_objs)
    for b in buffers.values():
        if b.role in (OUTPUT, INOUT) and b.name not in l3.outputs:
            l3.outputs.append(b.name)
        if b.role not in (INPUT, INOUT):
            b.role = OUTPUT if b.name in l3.outputs else TEMPORARY
    return l3


def _dropped_buffers(l1: Layer1, store: dict[str, str], buffers: dict[str, BufferInfo],
                     comp_objs: dict[str, Computation], pctx: AffineContext
                     ) -> dict[str, str]:
    """The buffer of each dropped computation (see :mod:`.empty`): the one it is stored
    in, or its own; its own one, when no other computation writes it, is made here with
    no writer and 0 elements in every dimension (it holds nothing: an output of a
    specialized program that computes nothing is an empty array of its rank)."""
    out: dict[str, str] = {}
    for name, into in l1.dropped_into.items():
        buf = store.get(into, into)
        if buf not in buffers:
            if into not in l1.dropped:
                continue  # stored into nothing known: only dropped commands said so
            ndim = len(l1.dropped[into].vars)  # without store_in: one element per point
            zero = to_pw_aff(Const(0, int32), pctx)
            buffers[buf] = BufferInfo(buf, comp_objs[into].dtype, ndim, [zero] * ndim,
                                      TEMPORARY)
        out[name] = buf
    return out


def _resolve_target(name: str, pending: dict[str, cmd.StoreIn], l1: Layer1,
                    comp_objs: dict[str, Computation], buffers: dict[str, BufferInfo]
                    ) -> tuple[str, tuple[Expr, ...]]:
    seen = [name]
    c = pending.get(name)
    vars_ = [Var(v) for v in l1.comps[name].vars]
    ident = tuple(vars_)
    if c is None:
        return name, ident
    tgt = c.buffer
    while tgt not in buffers:
        if tgt not in comp_objs:
            raise DefinitionError(f"{c.describe()}: unknown buffer or computation {tgt!r}")
        if tgt in seen:
            raise DefinitionError(f"{c.describe()}: store_in cycle {' -> '.join(seen)}")
        seen.append(tgt)
        nxt = pending.get(tgt)
        if nxt is None:
            break
        tgt = nxt.buffer
    # Layer I's copy of the indices: inlining has substituted into them, and their reads'
    # nodes are the ones the dataflow analysed
    idx = l1.comps[name].store_index
    return tgt, ident if idx is None else idx


def _refuse_value_reads(l1: Layer1, may: dict[str, tuple[int, ...]]) -> None:
    """``P[y]`` names the value P computed at ``y``; when P stores at a data-dependent
    index, which element holds it (and whether a later write replaced it) is only known at
    run time, so such a read would be unsound: refuse it."""
    for c in l1.comps.values():
        for r in c.reads:
            if r.kind == "value" and r.target in may:
                raise DefinitionError(
                    f"computation {c.name!r} reads {r.target!r} by value, but {r.target!r} "
                    "is stored at a data-dependent index (where its value lands is only "
                    f"known at run time); read its buffer's content with "
                    f"{r.target}.memory[...] instead")


def _bound_may_writes(l1: Layer1, store: dict[str, str], logical: dict[str, isl.Map],
                      buffers: dict[str, BufferInfo], may: dict[str, tuple[int, ...]]
                      ) -> None:
    """Bound each may write by its buffer's box; its affine indices must fit the buffer
    (checked here, exactly, as for any affine writer); the data-dependent ones are
    checked by the generated code."""
    for name, free in may.items():
        b = buffers[store[name]]
        m = logical[name]
        space = m.range().get_space()
        bx = box(b, space)
        along = m.intersect_domain(l1.comps[name].domain).range().intersect(
            box(b, space, free))
        out = along.subtract(bx)
        if not out.is_empty():
            raise DefinitionError(f"{name}.store_in({b.name}): its affine indices write "
                                  f"outside the buffer's bounds: {out.coalesce()}")
        logical[name] = m.intersect_range(bx)


def _fold_and_alloc(commands: list[cmd.Command], l1: Layer1, store: dict[str, str],
                    buffers: dict[str, BufferInfo], may: dict[str, tuple[int, ...]]
                    ) -> None:
    for c in commands:
        if isinstance(c, cmd.Expand) and c.name in buffers:  # the copies (expansion.py)
            scat = [n for n in may if store[n] == c.name]
            if scat and any(c.folds):
                raise DefinitionError(f"{c.comp}.expand: {c.comp!r} is written at "
                                      f"data-dependent indices by {scat}; its copies cannot "
                                      "be folded")
            for k, f in enumerate(c.folds):
                if f:
                    buffers[c.name].fold[k] = f
        if isinstance(c, (cmd.StorageFold, cmd.AllocateAt)):
            if c.comp not in store:
                raise DefinitionError(f"{c.describe()}: unknown or inlined computation "
                                      f"{c.comp!r}")
            b = buffers[store[c.comp]]
            if b.role in (INPUT, OUTPUT, INOUT) and b.declared is not None:
                raise DefinitionError(f"{c.describe()}: buffer {b.name!r} is a kernel "
                                      "argument; only temporaries can be folded or allocated "
                                      "in a loop")
            if isinstance(c, cmd.StorageFold):
                scat = [n for n in may if store[n] == b.name]
                if scat:
                    raise DefinitionError(
                        f"{c.describe()}: buffer {b.name!r} is written at data-dependent "
                        f"indices by {scat}; it cannot be folded (the run-time check needs "
                        "the unfolded index)")
                if not 0 <= c.dim < b.ndim:
                    raise DefinitionError(f"{c.describe()}: buffer {b.name!r} has {b.ndim} dims")
                b.fold[c.dim] = c.factor
            else:
                if c.consumer not in l1.comps:
                    raise DefinitionError(f"{c.describe()}: unknown consumer {c.consumer!r}")
                b.alloc_at = (c.consumer, c.level, c.describe())


def _size_default_buffers(l1: Layer1, store: dict[str, str], logical: dict[str, isl.Map],
                          buffers: dict[str, BufferInfo], may: dict[str, tuple[int, ...]],
                          reqs: list[OutOfBounds]) -> None:
    """Size each buffer without a declaration by what its affine writers write (writers
    at data-dependent indices say nothing about the size; they are checked against it).
    A declared buffer's writes are checked against its sizes (``reqs`` gets those out of
    bounds for some parameter values only)."""
    for b in buffers.values():
        if b.declared is None and not b.writers:
            continue  # a dropped computation's own buffer: sized 0 (_dropped_buffers)
        written: isl.Set | None = None
        for w in b.writers:
            if w in may:
                continue
            s = logical[w].intersect_domain(l1.comps[w].domain).range()
            if b.declared is not None:
                _check_inside(l1, b, w, s, reqs)
            written = s if written is None else written.union(s)
        if b.declared is not None:
            continue
        if written is None:
            raise DefinitionError(
                f"buffer {b.name!r}: its writers {b.writers} all store at data-dependent "
                "indices, so its size is unknown; declare it (me.Buffer with sizes) or "
                "initialise it with a computation over the whole range")
        ac = AffineContext(written.get_space())
        sizes = []
        for k in range(b.ndim):
            neg = written.intersect(ac.dim(k).lt_set(ac.const(0)))
            if not neg.is_empty():
                raise DefinitionError(
                    f"buffer {b.name!r}: {b.writers} write negative indices in dimension {k} "
                    f"({neg}); use store_in with an offset")
            hi = written.dim_max(k)
            if hi.involves_nan():
                raise DefinitionError(f"buffer {b.name!r}: dimension {k} of what "
                                      f"{b.writers} write is unbounded: {written}")
            zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(hi.get_domain_space()))
            one = isl.Val.one(l1.ctx)
            size = hi.add_constant_val(one).union_max(zero).coalesce()
            sizes.append(size.gist_params(written.params()).coalesce())
        b.sizes = sizes


def box(b: BufferInfo, space: isl.Space, dims: Sequence[int] | None = None,
        folded: bool = True) -> isl.Set:
    """``{b[e] : 0 <= e_k < size_k}`` — the elements a buffer has (after folding, unless
    ``folded`` is False: the logical elements its sizes declare); only the bounds of
    ``dims`` when given."""
    ac = AffineContext(space)
    s = isl.Set.universe(space)
    for k in range(b.ndim) if dims is None else dims:
        x = ac.dim(k)
        size = (ac.const(b.fold[k]) if folded and k in b.fold
                else lift_params(b.sizes[k], space))
        s = s.intersect(ac.const(0).le_set(x)).intersect(x.lt_set(size))
    return s


def lift_params(pa: isl.PwAff, space: isl.Space) -> isl.PwAff:
    """A params-only pw_aff as a function on ``space``."""
    n = space.dim(isl.dim_type.set)
    lifted = pa.align_params(space).add_dims(isl.dim_type.in_, n)
    return lifted.set_tuple_id(isl.dim_type.in_, space.get_tuple_id(isl.dim_type.set))


def buffer_space(l1: Layer1, b: BufferInfo) -> isl.Space:
    return comp_space(l1.param_space, b.name, [f"e{k}" for k in range(b.ndim)])


def _check_inside(l1: Layer1, b: BufferInfo, writer: str, elems: isl.Set,
                  reqs: list[OutOfBounds]) -> None:
    """The logical elements ``writer`` writes against the declared sizes (a storage fold
    shrinks only the physical buffer). Out of bounds for every parameter value the
    context admits and for which it writes at all: refused; for some only: a
    requirement checked at call time."""
    bx = box(b, elems.get_space(), folded=False)
    out = elems.subtract(bx).coalesce()
    if out.is_empty():
        return
    bad = out.params().align_params(l1.context.get_space())
    admitted = l1.context.align_params(bad.get_space())
    writing = elems.params().align_params(bad.get_space()).intersect(admitted)
    if writing.is_subset(bad):
        raise DefinitionError(f"buffer {b.name!r}: {writer!r} writes outside its bounds "
                              f"for every parameter value: {out}")
    sizes = ", ".join(str(x) for x in b.declared.sizes) if b.declared is not None else "?"
    reqs.append(OutOfBounds(b.name, f"computation {writer!r} writes {out}, outside buffer "
                            f"{b.name!r} of sizes [{sizes}]", bad.intersect(admitted).coalesce()))


def _outputs(l1: Layer1, l3: Layer3, outputs: Sequence[Any] | None,
             comp_objs: dict[str, Computation]) -> list[str]:
    if outputs is not None:
        res = []
        for o in outputs:
            n = o if isinstance(o, str) else getattr(o, "name", None)
            if n in l3.store or n in l3.dropped:
                n = l3.buffer_of(n)
            if n not in l3.buffers or l3.buffers[n].role == INPUT:
                raise DefinitionError(f"outputs: {o!r} is not a computation or a written "
                                      "buffer")
            if n in res:
                given = o if isinstance(o, str) else getattr(o, "name", None)
                via = "" if given == n else f" (stored in buffer {n!r}, already an output)"
                raise DefinitionError(f"outputs: {quoted(given)}{via} is listed twice; list "
                                      "each output buffer once")
            res.append(n)
        return res
    read_from: dict[str, set[str]] = {}
    for c in l1.comps.values():
        for r in c.reads:
            if r.kind == "value":
                buf = l3.store[r.target]
            else:
                buf = l3.buffer_of(r.target) if r.of_comp else r.target
            read_from.setdefault(buf, set()).add(l3.store[c.name])
    res = []
    own = {b for n, b in l3.dropped.items() if b == n}  # dropped outputs: empty arrays
    for b in l3.buffers.values():
        if b.role == INPUT or not (b.writers or b.name in own):
            continue
        if b.declared is not None and b.role == TEMPORARY:
            continue
        if not (read_from.get(b.name, set()) - {b.name}):
            res.append(b.name)
    return res


def named_buffer(name: str, l3: Layer3, where: str) -> str:
    """The buffer a command names (a buffer, or a computation meaning its buffer);
    ``where`` says which command, for the error."""
    if name in l3.buffers:
        return name
    if name in l3.store or name in l3.dropped:
        return l3.buffer_of(name)
    raise DefinitionError(f"{where}: no buffer or (non-inlined) computation is named "
                          f"{name!r}")
