"""The last pass: the lowered program as a loop AST with its buffers and statements
(:class:`~middleend.ir.loopast.Program`), what every target prints.

Each computation becomes a :class:`StmtInfo` whose reads and store are resolved to buffer
elements (after store_in, storage folding, loop-local allocation and the reads that a copy
redirected); each Layer IV operation becomes one too, tagged with its kind and the command
that created it, so that a target that cannot honour it says so by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import islpy as isl

from ..ir.errors import DefinitionError
from ..ir.expr import Access, Cast, Expr, rebuild
from ..ir.function import Buffer, Computation, Function, Param, Var, _BufferOf
from ..ir.loopast import (
    BufAccess,
    BufferDecl,
    FnCall,
    IInt,
    InlineFunction,
    IterRef,
    LocalArg,
    LocalElement,
    Node,
    ParamRef,
    Program,
    Requirement,
    StmtInfo,
)
from .astgen import GpuFacts, generate, iexpr
from .atomic import atomic_update
from .critical import critical_sections
from .data import Layer3, box, buffer_space
from .dataflow import Expected
from .device import DevicePlan
from .layer1 import Layer1
from .layer4 import Layer4, Op
from .physical import Physical
from .placement import TimeSpace


def build_program(fn: Function, l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace,
                  ph: Physical, exp: Expected, dev: DevicePlan | None = None) -> Program:
    pmap = {p: f"p_{p}" for p in l1.params}
    cb = isl.AstBuild.from_context(l1.context)
    decls = []
    inputs = [b for b in l3.buffers.values() if b.role == "input"]
    outs = [l3.buffers[n] for n in l3.outputs]  # outputs and inouts
    temps = [b for b in l3.buffers.values() if b.role == "temporary"]
    for b in [*inputs, *outs, *temps]:
        la = ph.local.get(b.name)
        src = la.sizes if la is not None else b.sizes
        sizes = []
        for k, pa in enumerate(src):
            if k in b.fold:
                sizes.append(IInt(b.fold[k]))
            else:
                sizes.append(iexpr(cb.expr_from_pw_aff(pa.project_domain_on_params()), pmap))
        if b.panel is not None and la is None:  # [d // P, <order but d>, d % P]
            d, n = b.panel
            count = src[d].scale_down_val(isl.Val.int_from_si(src[d].get_ctx(), n)).ceil()
            sizes = [iexpr(cb.expr_from_pw_aff(count.project_domain_on_params()), pmap),
                     *(sizes[k] for k in b.order or range(b.ndim) if k != d), IInt(n)]
        elif b.order and la is None:  # a local buffer's sizes are physical already
            sizes = [sizes[k] for k in b.order]
        full = True
        if b.role == "output" and b.name in exp.written:
            # only sure writes count: a guarded or data-dependent one may skip elements,
            # which the kernel wrapper must then hand back zeroed, not uninitialised
            elems = exp.covered.get(b.name)
            full = elems is not None and box(b, elems.get_space()).is_subset(elems)
        memory = dev.memory.get(b.name, "host") if dev is not None else "host"
        decls.append(BufferDecl(b.name, b.dtype, tuple(sizes), b.role, la is not None, full,
                                memory))
    stmts: dict[str, StmtInfo] = {}
    store_buf: dict[str, str] = {}
    read_bufs: dict[str, set[str]] = {}
    iters: dict[str, list[str]] = {}
    on_device = dev.on_device if dev is not None else set()
    functions = _functions(l1, l3, ph)
    calls = {f.name: (f.locals, _call_args(f, ph)) for f in functions}
    for n in ts.order:
        if n in l4.ops:
            o = l4.ops[n]
            stmts[n] = _op_info(o, l3, ph, n in on_device)
            if o.dst is not None:
                store_buf[n] = o.dst
            read_bufs[n] = {o.src} if o.src is not None else set()
            iters[n] = list(o.dims)
        else:
            stmts[n] = _stmt_info(n, l1, l3, l4, ph, n in on_device,
                                  ts.comps[n].atomic if n in ts.comps else "", calls)
            store_buf[n] = l3.store[n]
            read_bufs[n] = {l4.buffer_of(l3, r) for r in l1.comps[n].reads}
            iters[n] = list(l1.comps[n].vars)
    gpu = None
    for n in on_device & set(stmts):
        first = min(ts.gpu_dims(n, "gpu_block") + ts.gpu_dims(n, "gpu_thread"), default=0)
        stmts[n] = dataclasses.replace(stmts[n], kernel=(
            first, tuple(ts.comps[n].betas[:first + 1])))
    if on_device:
        kinds = {n: (l4.ops[n].kind if n in l4.ops else None) for n in ts.order}
        boxes = {o.name: box(l3.buffers[o.src], buffer_space(l1, l3.buffers[o.src]))
                 for o in l4.ops.values()
                 if o.kind in ("host_to_device", "device_to_host") and o.src is not None}
        gpu = GpuFacts(kinds, boxes)
    body: Node = generate(ts, ph, l1.params, l1.context, iters, store_buf, read_bufs, gpu)
    stmts = critical_sections(body, stmts, ts)  # atomic(group=...): who takes the lock
    bounds = {p.name: (p.min, p.max) for p in fn.params if (p.min, p.max) != (None, None)}
    reqs = tuple(Requirement(r.buffer, r.message, iexpr(cb.expr_from_set(r.violated), pmap))
                 for r in l3.requirements)
    return Program(fn.name, tuple(l1.params), tuple(decls), body, stmts, bounds,
                   requirements=reqs, functions=functions)


def _local_params(buf: str, ph: Physical) -> list[str]:
    """The integer parameters of a function that reads loop-local ``buf``: its offsets
    (see ``LocalArg``; the buffer itself is a pointer parameter, ``FnCall.locals``)."""
    return [f"me_lo_{buf}_{q}" for q in range(len(ph.local[buf].offsets))]


def _call_args(f: InlineFunction, ph: Physical) -> tuple[Expr, ...]:
    """What a statement passes to ``f`` after the point: the offsets of each loop-local
    buffer it reads, as the statement's code names them."""
    return tuple(LocalArg(b, o) for b in f.locals for o in _offsets(ph, b) or ())


def _functions(l1: Layer1, l3: Layer3, ph: Physical) -> tuple[InlineFunction, ...]:
    """The inlined computations kept as functions (:mod:`.inlining`), callees first: their
    bodies read buffers at their logical indices (bounds-checked unless the printer
    proves them in bounds: the elements a caller reads are not known per function). A
    loop-local buffer (a stage computed at a loop) is one per iteration: the buffer and
    its offsets are parameters, which each call passes on."""
    out: dict[str, InlineFunction] = {}

    def make(name: str) -> None:
        if name in out:
            return
        f = l1.functions[name]
        bufs: dict[str, None] = {}
        local: dict[str, None] = {}

        def params_of(buf: str) -> list[Expr]:
            local[buf] = None
            return [IterRef(p) for p in _local_params(buf, ph)]

        def node(n: Expr) -> Expr | None:
            ref = _scalar_ref(n)
            if ref is not None:
                return ref
            if isinstance(n, Access):
                idx = tuple(rebuild(i, node, memo) for i in n.indices)
                t = n.target
                if isinstance(t, Computation) and t.name in l1.functions:
                    make(t.name)
                    callee = out[t.name]
                    args = [p for b in callee.locals for p in params_of(b)]
                    return FnCall(t.name, (*idx, *args), l1.functions[t.name].expr.dtype,
                                  callee.locals)
                if isinstance(t, Computation):  # its value, in its buffer
                    buf, lidx = _stored_at(l1, l3, t.name, idx,
                                           lambda e: rebuild(e, node, {}))
                else:
                    buf, lidx = t.name, idx
                if buf in ph.local and isinstance(t, Computation) and \
                        not l3.buffers[buf].fold:
                    return LocalElement(buf, l3.phys_index(buf, lidx), n.dtype,
                                        tuple(params_of(buf)))
                if buf in ph.local or not isinstance(t, Buffer | Computation):
                    raise DefinitionError(  # pragma: no cover - inlining.py refuses these
                        f"inlined {name!r}: its function cannot read {t!r} (a whole "
                        "buffer only)")
                bufs[buf] = None
                return BufAccess(buf, l3.phys_index(buf, lidx), n.dtype, None, checked=True)
            return None

        memo: dict[int, Expr] = {}
        body = rebuild(f.expr, node, memo)
        params = [*f.vars, *(p for b in local for p in _local_params(b, ph))]
        out[name] = InlineFunction(name, tuple(params), body, tuple(bufs), tuple(local))

    for name in l1.functions:
        make(name)
    return tuple(out.values())


def _scalar_ref(n: Expr) -> Expr | None:
    """An iterator or a parameter as the loop AST refers to it; None for other nodes."""
    if isinstance(n, Var):
        return IterRef(n.name)
    if isinstance(n, Param):
        return ParamRef(n.name)
    return None


def _stored_at(l1: Layer1, l3: Layer3, comp: str, idx: tuple[Expr, ...],
               conv: Callable[[Expr], Expr]) -> tuple[str, tuple[Expr, ...]]:
    """(buffer, logical index) where computation ``comp``'s value at ``idx`` is stored:
    its store_in index with its iterators replaced by ``idx`` (``conv`` converts the
    index expressions to the loop AST's)."""
    repl = dict(zip(l1.comps[comp].vars, idx, strict=True))
    return l3.store[comp], tuple(_subst_iters(conv(e), repl) for e in l3.index[comp])


def _offsets(ph: Physical, buf: str) -> tuple[str, ...] | None:
    la = ph.local.get(buf)
    return None if la is None else tuple(f"o_{buf}_{q}" for q in range(len(la.offsets)))


def _stmt_info(name: str, l1: Layer1, l3: Layer3, l4: Layer4, ph: Physical,
               device: bool, atomic: str = "",
               calls: dict[str, tuple[tuple[str, ...], tuple[Expr, ...]]] | None = None,
               ) -> StmtInfo:
    c = l1.comps[name]
    affine_nodes = {id(n) for r in c.reads if r.exact for n in r.nodes}
    redirected = {id(n): l4.redirect[r.ref] for r in c.reads if r.ref in l4.redirect
                  for n in r.nodes}

    memo: dict[int, Expr] = {}  # shared subtrees (an inlined pipeline's) converted once

    def conv(e: Expr) -> Expr:
        return rebuild(e, node, memo)

    def node(n: Expr) -> Expr | None:
        ref = _scalar_ref(n)
        if ref is not None:
            return ref
        if isinstance(n, Access):
            t = n.target
            idx = tuple(conv(i) for i in n.indices)
            if isinstance(t, Computation) and t.name in l1.functions:
                local, args = (calls or {}).get(t.name, ((), ()))
                return FnCall(t.name, (*idx, *args), l1.functions[t.name].expr.dtype,
                              local)
            if isinstance(t, Computation):
                buf, lidx = _stored_at(l1, l3, t.name, idx, conv)
            elif isinstance(t, _BufferOf):
                buf, lidx = l3.buffer_of(t.comp.name), idx
            elif isinstance(t, Buffer):
                buf, lidx = t.name, idx
            else:  # pragma: no cover
                raise DefinitionError(f"{name}: cannot lower a read of {t!r}")
            if id(n) in redirected:  # a copy holds the element, at its logical index
                dst = redirected[id(n)]
                return BufAccess(dst, l3.phys_index(dst, lidx), n.dtype, _offsets(ph, dst))
            return BufAccess(buf, l3.phys_index(buf, lidx), n.dtype, _offsets(ph, buf),
                             checked=id(n) not in affine_nodes)
        return None

    sbuf = l3.store[name]
    sidx = l3.phys_index(sbuf, tuple(conv(e) for e in l3.index[name]))
    # a data-dependent store index is checked at run time (the store is then skipped)
    store = BufAccess(sbuf, sidx, l3.buffers[sbuf].dtype, _offsets(ph, sbuf),
                      checked=name in l3.may)
    value = conv(c.expr)
    if value.dtype != store.dtype:
        value = Cast(store.dtype, value)
    guard = None if c.guard is None else conv(c.guard)
    rmw = None
    if atomic:  # one atomic read-modify-write of the stored element
        op, operand = atomic_update(name, l1, l3, atomic)
        rmw = (op, conv(operand))
    return StmtInfo(name, tuple(c.vars), store, value, guard, device=device, atomic=rmw)


def _op_info(o: Op, l3: Layer3, ph: Physical, device: bool) -> StmtInfo:
    """A Layer IV operation as a statement: its own iterators index the elements it reads
    and writes (a send's and a receive's element dims follow its own iterators)."""
    nb = len(o.dims) - len(o.iterators)
    elem = tuple(IterRef(d) for d in o.dims[len(o.iterators):])
    store = value = None
    # a zero-dimensional buffer (a scalar input) is one element with no element dims
    if o.dst is not None and (nb or l3.buffers[o.dst].ndim == 0):
        b = l3.buffers[o.dst]
        store = BufAccess(o.dst, l3.phys_index(o.dst, elem), b.dtype, _offsets(ph, o.dst))
    if o.src is not None and (nb or l3.buffers[o.src].ndim == 0):
        b = l3.buffers[o.src]
        value = BufAccess(o.src, l3.phys_index(o.src, elem), b.dtype, _offsets(ph, o.src))
    peer = None
    if o.peer is not None:
        peer = rebuild(o.peer, lambda n: IterRef(n.name) if isinstance(n, Var) else
                       (ParamRef(n.name) if isinstance(n, Param) else None))
    return StmtInfo(o.name, tuple(o.dims), store, value, None, o.kind,
                    o.described, peer, o.properties, device)


def _subst_iters(e: Expr, repl: dict[str, Expr]) -> Expr:
    return rebuild(e, lambda n: repl.get(n.name) if isinstance(n, IterRef) else None)
