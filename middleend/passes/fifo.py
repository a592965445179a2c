"""FIFO depths of the streams of a dataflow region (the fpga target's ``comp.stream()``).

In a DATAFLOW region every stage runs at once, each starting one iteration of its
pipelined loop per step; a FIFO holds what its producer has written and its consumer not
yet read. How much that is follows from the schedule, in *lockstep order*: each stage's
scan iteration with loop vector ``v`` runs at step ``v`` (the loops of the time-space, the
stage's own position among the stages left out), a stage that line-buffers its input
running its extended scan (:mod:`middleend.passes.linebuffer`: its instances ``(rows,
cols)`` later). With ISL, per stream: the lags ``Λ = {read step(e) - write step(e)}`` over
its elements. A consumer cannot read before the write, so a stage starts late by its
*slip*: ``slip(C) = lexmax(0, slip(P) - lexmin Λ)`` over the streams into it, in stage
order. The FIFO then holds at most the elements its producer writes in the
``slip(C) + lexmax Λ - slip(P)`` steps a value waits, plus the step's own: its depth is
``lanes × (lag_row × row length + lag_col + 1)``, the row length and lanes (elements per
step) bounded with ISL from the producer's domain and the parameters' bounds.

A FIFO smaller than that only slows a chain of stages down (the producer stalls until the
consumer reads). It deadlocks the region when the consumer's slip comes from *another*
stream (reconvergent paths: a stage waiting for a slow path cannot drain the fast path
that fills up, whose producer then stops feeding the slow one): such a user depth is
refused, with the numbers. Without a user depth the FIFO gets what it needs (at least 2,
HLS's default).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from .data import Layer3
from .dataflow import Expected
from .layer1 import Layer1
from .layer4 import Layer4
from .linebuffer import LinePlan
from .physical import Physical
from .placement import TimeSpace

DEFAULT_DEPTH = 2


@dataclass(frozen=True)
class Fifo:
    """The depth of one stream's FIFO and why. ``needed`` None: it grows with a parameter
    that has no upper bound (or the stages' scans cannot be compared)."""

    buffer: str
    producer: str
    consumer: str
    lag: tuple[int, ...]  # steps a value waits, per loop of the scan (outermost first)
    needed: int | None
    depth: int
    reconvergent: bool  # the lag comes from another stream into the consumer
    because: str = ""  # that stream


def _loops(ts: TimeSpace) -> list[int]:
    return [2 * k + 1 for k in range(ts.depth)]


def _to_steps(ctx: isl.Context, ntd: int, shift: list[int], params: isl.Space) -> isl.Map:
    """Time-space point -> its loop vector (the betas dropped), moved by ``shift``."""
    t = ", ".join(f"t{k}" for k in range(ntd))
    s = ", ".join(f"t{k} + {shift[k]}" for k in range(1, ntd, 2))
    return isl.Map.read_from_str(ctx, f"{{ [{t}] -> [{s}] }}").align_params(params)


def _bound(s: isl.Set, k: int, context: isl.Set, lo: bool = False) -> int | None:
    """The largest (smallest) value of dim ``k`` of ``s`` over the admissible parameters."""
    s = s.intersect_params(context)
    s = s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))
    if s.is_empty():
        return 0
    v = s.dim_min_val(k) if lo else s.dim_max_val(k)
    return int(v.to_python()) if v.is_int() else None


def _pipe_dim(ts: TimeSpace, comp: str) -> int | None:
    s = ts.comps[comp]
    for name, tag in s.tags.items():
        if tag == "pipeline" and name in s.dims:
            return 2 * (s.n_outer + s.dims.index(name)) + 1
    return None


def _sub(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x - y for x, y in zip(a, b, strict=True))


def _add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _point(s: isl.Set) -> tuple[int, ...]:
    p = s.sample_point()
    return tuple(int(p.get_coordinate_val(isl.dim_type.set, j).to_python())
                 for j in range(s.dim(isl.dim_type.set)))


def fifo_depths(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace, ph: Physical,
                exp: Expected, commands: list[cmd.Command], line_plans: list[LinePlan]
                ) -> dict[str, Fifo]:
    """Buffer -> its FIFO, for every streamed buffer (see the module docstring); refuses
    a user depth that would deadlock the region."""
    from .onchip import streamed  # onchip imports linebuffer; this module is below both

    streams = streamed(commands, l3)
    if not streams:
        return {}
    asked = {c.comp: (c.depth, c.describe(), k)
             for k, c in enumerate(commands) if isinstance(c, cmd.Stream)}
    ctx, params = l1.ctx, l1.param_space
    ntd = 2 * ts.depth + 1
    loops = _loops(ts)
    zero = (0,) * len(loops)
    shift: dict[str, list[int]] = {}
    fills: dict[tuple[str, str], isl.Map] = {}
    for p in line_plans:
        v = [0] * ntd
        v[int(p.pipe_var[1:])] = p.cols
        if p.row_var is not None:
            v[int(p.row_var[1:])] = p.rows
        shift[p.consumer] = v
        fills[p.consumer, p.buffer] = p.fill

    def steps(comp: str) -> isl.Map:
        return _to_steps(ctx, ntd, shift.get(comp, [0] * ntd), params)

    # per stream: producer, consumer, the lags of its elements (in loop vectors)
    edges: list[tuple[str, str, str, isl.Set]] = []
    for buf, prod in streams.items():
        refs = [r for r in exp.reads if l4.buffer_of(l3, r) == buf]
        if len({r.comp for r in refs}) != 1:
            continue  # refused by check_streams (unless legality was skipped)
        cons = refs[0].comp
        w = ph.writes[prod].reverse().apply_range(steps(prod))  # e -> write step
        if (cons, buf) in fills:
            r = fills[cons, buf].reverse().apply_range(steps(""))  # already extended
        else:
            r = ph.reads[refs[0].ref].reverse().apply_range(steps(cons))
        lags = w.reverse().apply_range(r).deltas()
        edges.append((buf, prod, cons, lags.project_out(isl.dim_type.param, 0,
                                                        lags.dim(isl.dim_type.param))))
    stage = {n: ts.comps[n].betas[0] for n in ts.order}
    slip: dict[int, tuple[int, ...]] = {}
    why: dict[int, str] = {}
    comparable = {buf: _pipe_dim(ts, p) is not None and _pipe_dim(ts, p) == _pipe_dim(ts, c)
                  and lags.is_bounded() and not lags.is_empty()
                  for buf, p, c, lags in edges}
    for st in sorted(set(stage.values())):
        best, src = zero, ""
        for buf, prod, cons, lags in edges:
            if stage[cons] != st or not comparable[buf]:
                continue
            need = _sub(slip.get(stage[prod], zero), _point(lags.lexmin()))
            if need > best:
                best, src = need, buf
        slip[st], why[st] = best, src
    out: dict[str, Fifo] = {}
    for buf, prod, cons, lags in edges:
        user, where, index = asked.get(prod, (None, "", None))
        if not comparable[buf]:
            out[buf] = Fifo(buf, prod, cons, zero, None, user or DEFAULT_DEPTH, False)
            continue
        lag = _add(_sub(slip[stage[cons]], slip.get(stage[prod], zero)),
                   _point(lags.lexmax()))
        own = _sub(_point(lags.lexmax()), _point(lags.lexmin()))
        reconv = lag > own and why[stage[cons]] not in ("", buf)
        needed = _needed(l1, ts, ph, prod, lag, shift.get(prod, [0] * ntd))
        f = Fifo(buf, prod, cons, lag, needed, DEFAULT_DEPTH, reconv,
                 why[stage[cons]] if reconv else "")
        if reconv and needed is None:
            raise ScheduleError(
                f"cannot size the FIFO of {prod!r}: in lockstep {cons!r} reads its values "
                f"{_words(lag)} after {prod!r} writes them (it waits for the stream "
                f"{f.because!r}), and that many steps grow with a parameter that has no "
                "upper bound; give the sizes constants (or the parameter a max)",
                computations=(prod, cons), command=where or None, command_index=index)
        if user is not None:
            if reconv and needed is not None and user < needed:
                raise ScheduleError(
                    f"cannot stream {prod!r} with depth {user}: it would deadlock the "
                    f"dataflow region. In lockstep {cons!r} reads each value of {buf!r} "
                    f"{_words(lag)} after {prod!r} writes it, because it waits for the "
                    f"stream {f.because!r} (a longer path from the same stage); the FIFO "
                    f"must hold {needed} elements (at least depth={needed})",
                    computations=(prod, cons), command=where or None, command_index=index)
            out[buf] = Fifo(buf, prod, cons, lag, needed, user, reconv, f.because)
        else:
            out[buf] = Fifo(buf, prod, cons, lag, needed,
                            max(needed or DEFAULT_DEPTH, DEFAULT_DEPTH), reconv, f.because)
    return out


def _words(lag: tuple[int, ...]) -> str:
    """A lag in loop steps, in words (the last two loops: rows and columns)."""
    parts = [f"{v} iterations of loop level {k}" for k, v in enumerate(lag[:-2]) if v]
    if len(lag) >= 2:
        parts += [f"{lag[-2]} rows", f"{lag[-1]} columns"]
    else:
        parts += [f"{lag[-1]} iterations"]
    return " + ".join(parts)


def _needed(l1: Layer1, ts: TimeSpace, ph: Physical, prod: str, lag: tuple[int, ...],
            shift: list[int]) -> int | None:
    """Elements the producer writes in ``lag`` steps plus one: ``lanes × (Σ lag_k ×
    stride_k + 1)``, strides and lanes bounded from its (extended) domain."""
    dom = ph.writes[prod].domain()
    pipe = _pipe_dim(ts, prod)
    assert pipe is not None
    loops = _loops(ts)

    def extent(d: int) -> int | None:
        hi, lo = _bound(dom, d, l1.context), _bound(dom, d, l1.context, lo=True)
        return None if hi is None or lo is None else hi - lo + 1 + shift[d]

    lanes = 1
    for d in loops:
        if d > pipe:
            e = extent(d)
            if e is None:
                return None
            lanes *= max(e, 1)
    steps, stride = 1, 1
    for k in range(len(loops) - 1, -1, -1):
        d = loops[k]
        if d > pipe:
            continue
        if lag[k]:
            if stride is None:
                return None
            steps += lag[k] * stride
        e = extent(d)
        stride = None if e is None or stride is None else stride * max(e, 1)
    return lanes * steps
