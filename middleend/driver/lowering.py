"""The compile pipeline: Layer I -> III (data) -> II (schedule) -> legality -> IV -> loop AST.

Everything is rebuilt from the Function and its command log in a fresh ISL context whose
operation count is bounded, so a pathological input fails with a clear error instead of
hanging. When the legality check fails, the command prefixes are replayed to name the first
command after which the schedule is illegal.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import (
    DefinitionError,
    MiddleEndError,
    ResourceLimitError,
    ScheduleError,
    with_command_index,
)
from ..ir.expr import Access, Expr, rebuild
from ..ir.function import Buffer, Computation, Function, Param, Var, _BufferOf
from ..ir.loopast import BufAccess, BufferDecl, IInt, IterRef, Node, ParamRef, Program, StmtInfo
from ..passes.astgen import generate, iexpr
from ..passes.data import Layer3, box, build_layer3
from ..passes.dataflow import Expected, expected_dataflow, read_buffer
from ..passes.layer1 import Layer1, build_layer1
from ..passes.legality import check_dataflow, check_parallel
from ..passes.physical import Physical, build_physical
from ..passes.placement import TimeSpace, finalize
from ..passes.schedule import apply_command, initial

DEFAULT_MAX_OPS = int(os.environ.get("MIDDLEEND_ISL_MAX_OPS", "20000000"))


@dataclass
class Lowered:
    fn_name: str
    l1: Layer1
    l3: Layer3
    ts: TimeSpace
    exp: Expected
    ph: Physical
    program: Program

    def layers_text(self) -> str:
        return layers_text(self)


def _analyse(fn: Function, commands: list[cmd.Command], outputs: Sequence[Any] | None,
             ctx: isl.Context) -> tuple[Layer1, Layer3, Expected, TimeSpace, Physical]:
    try:
        return _analyse_unchecked(fn, commands, outputs, ctx)
    except ScheduleError as e:
        raise with_command_index(e, [c.describe() for c in commands]) from None


def _analyse_unchecked(fn: Function, commands: list[cmd.Command],
                       outputs: Sequence[Any] | None, ctx: isl.Context
                       ) -> tuple[Layer1, Layer3, Expected, TimeSpace, Physical]:
    l1 = build_layer1(fn, ctx, commands)
    l3 = build_layer3(fn, l1, outputs, commands)
    for b in l3.buffers.values():
        if b.fold and b.name in l3.outputs:
            raise DefinitionError(f"buffer {b.name!r} is an output; it cannot be folded")
    exp = expected_dataflow(l1, l3)
    scheds = {n: initial(n, l1.comps[n].domain, l1.comps[n].vars) for n in l1.declared}
    for k, c in enumerate(commands):
        if isinstance(c, cmd.SCHEDULE_COMMANDS) and not isinstance(c, (cmd.After,
                                                                         cmd.ComputeAt)):
            if c.comp not in scheds:
                raise ScheduleError(f"{c.describe()}: unknown or inlined computation "
                                    f"{c.comp!r}", command=c.describe(), command_index=k)
            try:
                apply_command(scheds[c.comp], c)
            except ScheduleError as e:
                raise with_command_index(e, [x.describe() for x in commands], k) from None
    events = [c for c in commands if isinstance(c, (cmd.After, cmd.ComputeAt))]
    for e in events:
        if e.comp not in scheds:
            raise ScheduleError(f"{e.describe()}: unknown or inlined computation {e.comp!r}",
                                command=e.describe())
    ts = finalize(scheds, l1.declared, events, l1.reads_of)
    ph = build_physical(l1, l3, ts, exp)
    return l1, l3, exp, ts, ph


def _check(l1: Layer1, l3: Layer3, ts: TimeSpace, exp: Expected, ph: Physical) -> None:
    check_dataflow(l1, l3, ts, exp, ph)
    check_parallel(l1, l3, ts, ph)


def _new_ctx(max_ops: int) -> isl.Context:
    ctx = isl.Context()
    ctx.set_max_operations(max_ops)
    return ctx


def lower(fn: Function, outputs: Sequence[Any] | None = None, check_legality: bool = True,
          max_isl_ops: int = DEFAULT_MAX_OPS) -> Lowered:
    commands = list(fn.commands.items)
    ctx = _new_ctx(max_isl_ops)
    try:
        l1, l3, exp, ts, ph = _analyse(fn, commands, outputs, ctx)
        if check_legality:
            try:
                _check(l1, l3, ts, exp, ph)
            except ScheduleError as err:
                raise _blame(fn, commands, outputs, err, max_isl_ops) from None
        try:
            program = _program(fn, l1, l3, ts, ph, exp)
        except ScheduleError as err:
            if err.command is not None:
                raise
            raise _blame(fn, commands, outputs, err, max_isl_ops, codegen=True) from None
    except isl.Error as e:
        if ctx.get_max_operations() and "operations" in str(e).lower() or \
                "quota" in str(e).lower():
            raise ResourceLimitError(
                f"function {fn.name!r}: ISL exceeded its bound of {max_isl_ops} operations "
                "(set MIDDLEEND_ISL_MAX_OPS to raise it)") from None
        raise MiddleEndError(f"function {fn.name!r}: ISL failed: {e}") from e
    return Lowered(fn.name, l1, l3, ts, exp, ph, program)


def _blame(fn: Function, commands: list[cmd.Command], outputs: Sequence[Any] | None,
           err: ScheduleError, max_ops: int, codegen: bool = False) -> ScheduleError:
    """Name the command after which the program is illegal and stays so: the last
    command whose prefix (without it) is still legal (and, for ``codegen`` errors, still
    generates code)."""
    for k in range(len(commands) - 1, -1, -1):
        try:
            l1, l3, exp, ts, ph = _analyse(fn, commands[:k], outputs, _new_ctx(max_ops))
            _check(l1, l3, ts, exp, ph)
            if codegen:
                _program(fn, l1, l3, ts, ph, exp)
        except (MiddleEndError, isl.Error):
            continue
        c = commands[k]
        msg = str(err).split("\n")[0]
        return ScheduleError(msg, computations=err.computations, dependence=err.dependence,
                             command=c.describe(), command_index=k, level=err.level)
    return err


def _ctx_build(l1: Layer1) -> isl.AstBuild:
    return isl.AstBuild.from_context(l1.context)


def _program(fn: Function, l1: Layer1, l3: Layer3, ts: TimeSpace, ph: Physical,
             exp: Expected) -> Program:
    pmap = {p: f"p_{p}" for p in l1.params}
    cb = _ctx_build(l1)
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
        full = True
        if b.role == "output" and b.name in exp.written:
            # only sure writes count: a guarded or data-dependent one may skip elements,
            # which the kernel wrapper must then hand back zeroed, not uninitialised
            elems = exp.covered.get(b.name)
            full = elems is not None and box(b, elems.get_space()).is_subset(elems)
        decls.append(BufferDecl(b.name, b.dtype, tuple(sizes), b.role, la is not None, full))
    stmts = {n: _stmt_info(n, l1, l3, ph) for n in ts.order}
    read_bufs: dict[str, set[str]] = {}
    for n in ts.order:
        read_bufs[n] = {read_buffer(l3, r) for r in l1.comps[n].reads}
    body: Node = generate(ts, ph, l1.params, l1.context,
                          {n: l1.comps[n].vars for n in ts.order}, dict(l3.store), read_bufs)
    bounds = {p.name: (p.min, p.max) for p in fn.params if (p.min, p.max) != (None, None)}
    return Program(fn.name, tuple(l1.params), tuple(decls), body, stmts, bounds)


def _stmt_info(name: str, l1: Layer1, l3: Layer3, ph: Physical) -> StmtInfo:
    c = l1.comps[name]
    affine_nodes = {id(r.node) for r in c.reads if r.access is not None}

    def offsets(buf: str) -> tuple[str, ...] | None:
        la = ph.local.get(buf)
        return None if la is None else tuple(f"o_{buf}_{q}" for q in range(len(la.offsets)))

    def conv(e: Expr) -> Expr:
        return rebuild(e, node)

    def node(n: Expr) -> Expr | None:
        if isinstance(n, Var):
            return IterRef(n.name)
        if isinstance(n, Param):
            return ParamRef(n.name)
        if isinstance(n, Access):
            t = n.target
            idx = tuple(conv(i) for i in n.indices)
            if isinstance(t, Computation):
                buf = l3.store[t.name]
                pvars = l1.comps[t.name].vars
                repl = dict(zip(pvars, idx, strict=True))
                lidx = tuple(_subst_iters(conv(e), repl) for e in l3.index[t.name])
            elif isinstance(t, _BufferOf):
                buf, lidx = l3.store[t.comp.name], idx
            elif isinstance(t, Buffer):
                buf, lidx = t.name, idx
            else:  # pragma: no cover
                raise DefinitionError(f"{name}: cannot lower a read of {t!r}")
            return BufAccess(buf, l3.phys_index(buf, lidx), n.dtype, offsets(buf),
                             checked=id(n) not in affine_nodes)
        return None

    sbuf = l3.store[name]
    sidx = l3.phys_index(sbuf, tuple(conv(e) for e in l3.index[name]))
    # a data-dependent store index is checked at run time (the store is then skipped)
    store = BufAccess(sbuf, sidx, l3.buffers[sbuf].dtype, offsets(sbuf),
                      checked=name in l3.may)
    value = conv(c.expr)
    if value.dtype != store.dtype:
        from ..ir.expr import Cast

        value = Cast(store.dtype, value)
    guard = None if c.guard is None else conv(c.guard)
    return StmtInfo(name, tuple(c.vars), store, value, guard)


def _subst_iters(e: Expr, repl: dict[str, Expr]) -> Expr:
    return rebuild(e, lambda n: repl.get(n.name) if isinstance(n, IterRef) else None)


def layers_sections(low: Lowered) -> tuple[str, str, str, str]:
    """Layers I, II, III and IV as text, in the ISL notation of the papers."""
    l2 = []
    for n in low.ts.order:
        s = low.ts.comps[n]
        tags = ", ".join(f"{d}({t})" for d, t in s.tags.items())
        l2.append(f"{s.full}" + (f"   tags: {tags}" if tags else ""))
    l3 = []
    cb = _ctx_build(low.l1)
    for b in low.l3.buffers.values():
        sizes = ", ".join(cb.expr_from_pw_aff(x.project_domain_on_params()).to_C_str()
                          for x in b.sizes)
        fold = f" storage_fold {b.fold}" if b.fold else ""
        l3.append(f"buffer {b.name}[{sizes}] {b.dtype.name} {b.role}{fold}")
    for n in low.ts.order:
        acc = str(low.l3.logical[n].intersect_domain(low.l1.comps[n].domain))
        if n in low.l3.may:
            from ..ir.printing import expr_str

            at = ", ".join(expr_str(e) for e in low.l3.index[n])
            acc += f"   (may write: data-dependent index [{at}], checked at run time)"
        l3.append(acc)
    l4 = []
    for b in low.program.buffers:
        if b.role == "temporary":
            la = low.ph.local.get(b.name)
            where = "function entry" if la is None else f"{la.where} (one array per thread)"
            sizes = ", ".join(_c_text(x) for x in b.sizes)
            l4.append(f"allocate {b.name}[{sizes}] at {where}")
    l4.append("no communication or synchronisation (cpu target)")
    return low.l1.text(), "\n".join(l2), "\n".join(l3), "\n".join(l4)


LAYER_TITLES = ("Layer I (abstract algorithm)", "Layer II (computation placement)",
                "Layer III (data)", "Layer IV (allocation, communication)")


def format_layers(sections: Sequence[str]) -> str:
    return "\n\n".join(f"== {t} ==\n{s}" for t, s in zip(LAYER_TITLES, sections,
                                                          strict=True))


def layers_text(low: Lowered) -> str:
    return format_layers(layers_sections(low))


def _c_text(e: object) -> str:
    """Index expressions of the loop AST in C-like text (for Layer IV)."""
    from ..ir.loopast import IInt, IOp, IVar

    if isinstance(e, IInt):
        return str(e.value)
    if isinstance(e, IVar):
        return e.name[2:] if e.name.startswith("p_") else e.name
    if isinstance(e, IOp):
        sym = {"add": "+", "sub": "-", "mul": "*"}.get(e.op)
        if sym and len(e.args) == 2:
            return f"({_c_text(e.args[0])} {sym} {_c_text(e.args[1])})"
        return f"{e.op}({', '.join(_c_text(a) for a in e.args)})"
    return str(e)
