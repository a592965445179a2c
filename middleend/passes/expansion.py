"""Array expansion (``buffer.expand(*loops)``, :class:`~middleend.ir.commands.Expand`):
the buffer is stored as a new one with the loops' counters as extra, outermost dims, one
copy per iteration (or ``k`` copies along a folded loop), so that those loops stop
carrying anything through it.

doitgen's ``sum[p]`` is reset, accumulated over ``s`` and read back in every ``(r, q)``:
stored once, it makes ``r`` and ``q`` sequential (each iteration overwrites what the last
one read) and gives a register tile only one ``q`` at a time. With one copy per ``r`` and
``q % Q``, ``r`` runs over the cores and ``Q`` sums stay in registers together.

The expansion is a rewrite of Layer I done first in every lowering: a derived Function
whose writers of the buffer store into the copies (their ``store_in`` indices prefixed
with the loops' counters) and whose memory reads of it read the copies at the reader's own
counters; a kernel argument's final content is copied back by a computation after
everything (``<copies>_back``), from the one iteration holding every element's last write.
The rewrite keeps the program's meaning exactly when every read sees the same write in the
derived program as in the original, and every output element ends with the same write's
value: both programs' exact dataflow (:func:`.dataflow.expected_dataflow`, over the
sequential order) is computed and compared, and a difference is refused naming the read.
The folds are storage folds of the copies' buffer: the legality check proves, under the
schedule, that no copy is overwritten while still read. Mechanism only: when to expand is
the auto-scheduler's policy (:mod:`middleend.autosched.expand`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import DefinitionError, UnproducedReadError
from ..ir.expr import Access, Expr, rebuild, walk, wrap
from ..ir.function import TEMPORARY, Buffer, Computation, Function, Var
from ..ir.islutil import maps_of
from . import empty
from .data import Layer3, build_layer3
from .dataflow import Expected, end_point, expected_dataflow, read_buffer, reference_schedule
from .layer1 import Layer1, build_layer1


@dataclass(frozen=True)
class Plan:
    """One expansion, resolved against the program: the copies' index of each loop is its
    counter minus ``lo`` (``sizes``: the counters' extents); ``at[c]``: the positions of the
    loops among computation ``c``'s iterators; ``back``: the loops' counters of the
    iteration whose copy holds the final content, ``box`` the elements it holds (None:
    not an argument, nothing is copied back)."""

    command: cmd.Expand
    index: int
    said: str
    lo: tuple[int, ...]
    sizes: tuple[int, ...]
    at: dict[str, tuple[int, ...]]
    writers: tuple[str, ...]
    back: tuple[int, ...] | None
    box: tuple[tuple[int, int], ...] | None

    @property
    def buffer(self) -> str:
        return self.command.comp

    @property
    def dst(self) -> str:
        return self.command.name

    @property
    def back_name(self) -> str:
        return f"{self.dst}_back"


def said(c: cmd.Expand) -> str:
    """The command as the user wrote it: ``sum.expand(('q', 10), 'r')``."""
    loops = [repr(n) if not f else f"({n!r}, {f})" for n, f in zip(c.loops, c.folds,
                                                                    strict=True)]
    return f"{c.comp}.expand({', '.join(loops)})"


def _fail(p: Plan | cmd.Expand, k: int, what: str) -> DefinitionError:
    text = p.said if isinstance(p, Plan) else said(p)
    return DefinitionError(f"{text} (command #{k}): {what}")


def _analysis(fn: Function, ctx: isl.Context, commands: list[cmd.Command],
              outputs: Sequence[Any] | None) -> tuple[Layer1, Layer3, Expected]:
    l1 = build_layer1(fn, ctx, commands)
    if l1.dropped:
        commands = [c for _, c in empty.kept_commands(commands, set(l1.dropped),
                                                      l1.declared)]
    l3 = build_layer3(fn, l1, outputs, commands)
    return l1, l3, expected_dataflow(l1, l3)


def derive(fn: Function, commands: list[cmd.Command], outputs: Sequence[Any] | None,
           ctx: isl.Context) -> tuple[Function, list[cmd.Command]]:
    """The Function and commands with every ``expand`` applied, checked to keep the
    program's dataflow (the ``expand`` commands stay in the list: Layer III folds the
    copies' buffer by them)."""
    base = [c for c in commands if not isinstance(c, cmd.Expand)]
    l1, l3, exp = _analysis(fn, ctx, base, outputs)
    plans: list[Plan] = []
    for k, c in enumerate(commands):
        if isinstance(c, cmd.Expand):
            if any(p.buffer == c.comp for p in plans):
                raise _fail(c, k, f"{c.comp!r} is expanded twice; give every loop in one "
                            "expand")
            plans.append(_plan(fn, l1, l3, exp, c, k, commands))
    ordered = any(x.order is not None for x in fn.computations)
    last = end_point(l1, reference_schedule(l1)).strip("{} []").split(",")[0] \
        if ordered else None
    fn2, cmds2 = _rewrite(fn, commands, plans, last)
    try:
        _, _, expb = _analysis(fn2, ctx, cmds2, outputs)
    except UnproducedReadError as e:  # a copy read before anything wrote it
        p = next((q for q in plans if q.dst == e.target), plans[0])
        raise _fail(p, p.index, f"the read of {p.buffer!r} by computation "
                    f"{e.computation!r} would no longer see the value it sees in the "
                    f"program as written (a "
                    f"value crosses iterations of the expanded loops; at {e.unproduced} "
                    "its copy holds nothing)") from None
    _check_same(exp, expb, plans)
    return fn2, cmds2


def _store_of(commands: list[cmd.Command], comp: str) -> cmd.StoreIn | None:
    got = None
    for c in commands:
        if isinstance(c, cmd.StoreIn) and c.comp == comp:
            got = c
    return got


def _plan(fn: Function, l1: Layer1, l3: Layer3, exp: Expected, c: cmd.Expand, k: int,
          commands: list[cmd.Command]) -> Plan:
    buf = c.comp
    if buf not in l3.buffers or not any(b.name == buf for b in fn.buffers):
        raise _fail(c, k, f"no buffer {buf!r} in function {fn.name!r}")
    writers = tuple(n for n in l1.declared if l3.store[n] == buf)
    if not writers:
        raise _fail(c, k, f"no computation writes {buf!r}: there is nothing to expand")
    for n in writers:
        s = _store_of(commands, n)
        if s is None or s.buffer != buf:
            raise _fail(c, k, f"computation {n!r} is stored in {buf!r} through "
                        f"{s.buffer if s else n!r}; expand needs {n}.store_in({buf})")
    readers: list[str] = []
    for r in exp.reads:
        if r.kind == "memory" and read_buffer(l3, r) == buf:
            if r.of_comp:
                raise _fail(c, k, f"computation {r.comp!r} reads {buf!r} as "
                            f"{r.target}.buffer(); read the buffer itself")
            readers.append(r.comp)
    for name in l1.inlined:
        src = next(x for x in fn.computations if x.name == name)
        stored = _store_of(commands, name)
        if (stored is not None and stored.buffer == buf) or any(
                isinstance(n, Access) and getattr(n.target, "name", None) == buf
                for n in walk(src.expr)):
            raise _fail(c, k, f"computation {name!r} accesses {buf!r} and is inlined")
    users = list(dict.fromkeys((*writers, *readers)))
    at: dict[str, tuple[int, ...]] = {}
    for n in users:
        vs = l1.comps[n].vars
        missing = [v for v in c.loops if v not in vs]
        if missing:
            how = "writes" if n in writers else "reads"
            raise _fail(c, k, f"computation {n!r} {how} {buf!r} outside a loop "
                        f"{missing[0]!r} (its loops: {', '.join(vs)}); every access must "
                        "lie inside every expanded loop")
        at[n] = tuple(vs.index(v) for v in c.loops)
    lo, sizes = [], []
    for j, v in enumerate(c.loops):
        lows, highs = [], []
        for n in users:
            dom = l1.comps[n].domain.intersect_params(l1.context)
            dom = dom.project_out(isl.dim_type.param, 0, dom.dim(isl.dim_type.param))
            if dom.is_empty():
                continue
            a, b = dom.dim_min_val(at[n][j]), dom.dim_max_val(at[n][j])
            if not (a.is_int() and b.is_int()):
                raise _fail(c, k, f"loop {v!r} of {n!r} has no constant bounds (the copies "
                            "are sized by its extent)")
            lows.append(a.to_python())
            highs.append(b.to_python())
        lo.append(min(lows))
        sizes.append(max(highs) - min(lows) + 1)
    back, bx = None, None
    if buf in l3.outputs:
        _refuse_initial_reads(l1, exp, l3, c, k, buf)
        back, bx = _copy_back(l1, exp, c, k, buf)
    return Plan(c, k, said(c), tuple(lo), tuple(sizes), at, writers, back, bx)


def _refuse_initial_reads(l1: Layer1, exp: Expected, l3: Layer3, c: cmd.Expand, k: int,
                          buf: str) -> None:
    """An argument's reads that see what the caller put there: no copy holds that."""
    for r in exp.reads:
        if r.kind != "memory" or read_buffer(l3, r) != buf:
            continue
        dom = l1.comps[r.comp].domain
        src = exp.sources.get(r.ref)
        seen = src.domain() if src is not None else isl.UnionSet.empty(dom.get_space())
        left = isl.UnionSet.from_set(dom).subtract(seen)
        if not left.is_empty():
            raise _fail(c, k, f"computation {r.comp!r} reads what {buf!r} held before the "
                        f"program wrote it (at {left.coalesce()}); the copies would not "
                        "hold it")


def _copy_back(l1: Layer1, exp: Expected, c: cmd.Expand, k: int, buf: str
               ) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """The loops' counters of the one iteration whose copy holds every element's final
    value, and the box of elements written (an argument keeps the others as they were)."""
    point: tuple[int, ...] | None = None
    for m in maps_of(exp.final.get(buf, isl.UnionMap.empty(l1.param_space))):
        src = m.get_tuple_name(isl.dim_type.out)
        vs = l1.comps[src].vars
        rng = m.range().intersect_params(l1.context)
        rng = rng.project_out(isl.dim_type.param, 0, rng.dim(isl.dim_type.param))
        got = []
        for v in c.loops:
            a, b = rng.dim_min_val(vs.index(v)), rng.dim_max_val(vs.index(v))
            if not (a.is_int() and a.eq(b)):
                got = None
                break
            got.append(a.to_python())
        if got is None or (point is not None and tuple(got) != point):
            raise _fail(c, k, f"{buf!r} is an argument whose last writes lie in several "
                        "iterations of the loops (its final content could not be copied "
                        "back from one copy)")
        point = tuple(got)
    written = exp.written.get(buf)
    if point is None or written is None:
        raise _fail(c, k, f"nothing writes the final content of {buf!r}")
    w = written.intersect_params(l1.context)
    w = w.project_out(isl.dim_type.param, 0, w.dim(isl.dim_type.param))
    bx = []
    for d in range(w.dim(isl.dim_type.set)):
        a, b = w.dim_min_val(d), w.dim_max_val(d)
        if not (a.is_int() and b.is_int()):
            raise _fail(c, k, f"the elements of {buf!r} written have no constant bounds")
        bx.append((a.to_python(), b.to_python()))
    whole = isl.Set.universe(w.get_space())
    ctx = w.get_ctx()
    for d, (a, b) in enumerate(bx):
        whole = whole.lower_bound_val(isl.dim_type.set, d, isl.Val.int_from_si(ctx, a))
        whole = whole.upper_bound_val(isl.dim_type.set, d, isl.Val.int_from_si(ctx, b))
    if not whole.is_subset(w):
        raise _fail(c, k, f"{buf!r} is an argument whose written elements are not a box "
                    "(the copy back would write the others)")
    return point, tuple(bx)


def _prefix(p: Plan, comp: Computation) -> tuple[Expr, ...]:
    """The copies' indices of ``comp``'s instance: its loops' counters, from 0."""
    out: list[Expr] = []
    for pos, lo in zip(p.at[comp.name], p.lo, strict=True):
        v = comp.vars[pos]
        out.append(v - lo if lo else v)
    return tuple(out)


def _rewrite(fn: Function, commands: list[cmd.Command], plans: list[Plan],
             last: str | None) -> tuple[Function, list[cmd.Command]]:
    """The derived program; ``last``: the first coordinate of a point after the whole
    sequential order, where a copy-back goes (None: the program gives no order)."""
    made = {n for p in plans for n in (p.dst, p.back_name)}
    fn2 = Function(fn.name, fn.allow_empty_domains)
    fn2.params = list(fn.params)
    fn2.buffers = list(fn.buffers)
    fn2.operations = list(fn.operations)
    fn2.reserved = [r for r in fn.reserved if r not in made]
    with fn2:
        dsts = {p.buffer: Buffer(p.dst, (*p.sizes, *_buffer(fn, p.buffer).sizes),
                                 _buffer(fn, p.buffer).dtype, TEMPORARY) for p in plans}
    by_buf = {p.buffer: p for p in plans}
    for c in fn.computations:
        plans_of = [p for p in plans if c.name in p.at]
        if not plans_of:
            fn2.computations.append(c)
            continue

        def reads(e: Expr, comp: Computation = c) -> Expr | None:
            if not isinstance(e, Access) or not isinstance(e.target, Buffer):
                return None
            p = by_buf.get(e.target.name)
            if p is None or comp.name not in p.at:
                return None
            return Access(dsts[p.buffer], (*_prefix(p, comp),
                                           *(rebuild(i, reads) for i in e.indices)))

        c2 = copy.copy(c)
        c2.fn = fn2
        c2.expr = rebuild(c.expr, reads) if c.expr is not None else None
        c2.predicate = rebuild(c.predicate, reads) if c.predicate is not None else None
        fn2.computations.append(c2)
    comps = {c.name: c for c in fn2.computations}
    out: list[cmd.Command] = []
    for c in commands:
        p = by_buf.get(c.buffer) if isinstance(c, cmd.StoreIn) else None
        if p is not None and isinstance(c, cmd.StoreIn) and c.comp in p.writers:
            comp = comps[c.comp]
            idx = c.indices if c.indices is not None else tuple(comp.vars)
            out.append(cmd.StoreIn(c.comp, p.dst, (*_prefix(p, comp), *idx)))
        else:
            out.append(c)
    for p in plans:
        if p.back is None or p.box is None:
            continue
        with fn2:
            vs = [Var(f"{p.dst}_e{d}", a, b + 1) for d, (a, b) in enumerate(p.box)]
            at = tuple(x - lo for x, lo in zip(p.back, p.lo, strict=True))
            order = None if last is None else \
                f"{{ {p.back_name}[{', '.join(v.name for v in vs)}] -> [{last}] }}"
            Computation(p.back_name, vs, Access(dsts[p.buffer], (*(wrap(x) for x in at), *vs)),
                        order=order)
        out.append(cmd.StoreIn(p.back_name, p.buffer, None))
        if any(isinstance(c, (cmd.Gpu, cmd.TileGpu)) and c.comp in p.at for c in commands):
            # the copies live where their writers run: on a GPU, the copy-back too (the
            # argument then comes back with the device's default copies)
            names = [v.name for v in vs]
            out.append(cmd.Gpu(p.back_name, (names[0],), (names[-1],) if len(names) > 1
                               else ()))
    fn2.commands.items = out
    return fn2, out


def _buffer(fn: Function, name: str) -> Buffer:
    return next(b for b in fn.buffers if b.name == name)


def _check_same(exp: Expected, expb: Expected, plans: list[Plan]) -> None:
    """Every read of the original program sees the same writes in the derived one, and
    every output ends with the same writes' values (through the copy-back)."""
    by_buf = {p.buffer: p for p in plans}
    for r in exp.reads:
        rb = expb.reads[r.ref]
        assert rb.comp == r.comp, (r, rb)
        a, b = exp.sources.get(r.ref), expb.sources.get(r.ref)
        if a is None and b is None:
            continue
        if a is None or b is None or not a.is_equal(b):
            p = by_buf.get(r.target, plans[0])
            lost = (a.subtract(b) if a is not None and b is not None else a or b)
            index = ", ".join(str(i) for i in r.node.indices)
            raise _fail(p, p.index, f"the read {r.target}[{index}] of computation "
                        f"{r.comp!r} would no longer see the value it sees in the program "
                        "as written "
                        f"(a value crosses iterations of the expanded loops: "
                        f"{lost.coalesce() if lost is not None else 'nothing'})")
    for name, want in exp.final.items():
        got = expb.final.get(name)
        p = by_buf.get(name)
        if p is not None and p.back is not None and got is not None:
            back = next(r for r in expb.reads if r.comp == p.back_name)
            got = got.apply_range(expb.sources[back.ref])
        if got is None or not got.is_equal(want):
            q = p or plans[0]
            raise _fail(q, q.index, f"the final content of {name!r} would differ from the "
                        "program as written")
