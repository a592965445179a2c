"""The work behind Compile, Check and Lower: request bytes in, response bytes out.

This is what a worker process runs (and what the embedded middle-end runs in-process): it
decodes the request (checking it), lowers through the layers, checks legality, generates
and builds code, and packages the artifact. It knows nothing about gRPC or caching, so the
same function serves both paths and both produce the same artifact.

Replies are tagged: ``b"R"`` + a serialized response, or ``b"E"`` + a serialized
``Diagnostic``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..autosched import AutoSchedule, auto_schedule
from ..driver.layers import layers_sections
from ..driver.lowering import DEFAULT_MAX_OPS, Lowered, lower
from ..driver.targets import TargetRegistry
from ..ir.errors import MiddleEndError, TargetError
from ..ir.loopast import IExpr, IInt, IOp, IVar, Signature
from ..target import Artifact, SourceText, Target
from ..version import __version__
from ..wire import Limits, decode_request, parse_request
from ..wire.encode import ELEM, FILE_ROLE, KIND
from ..wire.v1 import middleend_pb2 as pb
from . import heap
from .diagnostics import diagnostic_of

KINDS = ("compile", "check", "lower")
_phase_log = logging.getLogger("middleend.service")


class _Timer:
    def __init__(self) -> None:
        self.phases: list[tuple[str, float]] = []

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time a phase for the response; also logged as it ends (``middleend -v``)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases.append((name, time.perf_counter() - t0))
            _phase_log.info("phase %s: %.1f ms", name, self.phases[-1][1] * 1e3)

    def fill(self, timings: Any) -> None:
        for name, s in self.phases:
            timings.add(phase=name, seconds=s)


def _lower(req: pb.Request, timer: _Timer, limits: Limits, max_ops: int,
           registry: TargetRegistry, resp: Any = None, force_check: bool = False
           ) -> tuple[Lowered, Target | None, dict[str, Any]]:
    """Decode, find the target, lower and check; the target is None only for a Check of
    a target this middle-end does not have (legality does not depend on it)."""
    with timer.phase("decode"):
        fn, opts = decode_request(req, limits)
    if force_check:
        opts["check_legality"] = True
    elif not opts["check_legality"] and resp is not None:
        resp.diagnostics.add(
            kind=pb.UNCHECKED_SCHEDULE, severity=pb.WARNING,
            message=f"function {fn.name!r}: the legality check was skipped "
                    "(skip_legality_check); the generated code may compute wrong results")
    target: Target | None
    if force_check:
        try:
            target = registry.lookup(opts["target"])
        except TargetError:
            target = None
    else:
        target = registry.get(opts["target"])
    if target is not None:
        opts["target_options"] = target.resolve_options(opts["target_options"])
    if opts["auto_schedule"]:
        with timer.phase("auto-schedule"):
            chosen = auto_schedule(fn, opts["target"], outputs=opts["outputs"],
                                   estimates=opts["estimates"],
                                   budget=opts["auto_schedule_budget_s"],
                                   ranks=opts["target_options"].get("ranks"))
        if resp is not None:
            report(chosen, resp.auto_schedule)
    if target is not None:
        try:
            target.check_commands(fn.commands.items)
        except TargetError as e:
            raise _with_alternatives(e, registry) from None
    ops = opts["max_isl_operations"]
    ops = max_ops if ops <= 0 else min(ops, max_ops)
    with timer.phase("lower"):
        extra = target.lowering(opts["target_options"]) if target is not None else {}
        low = lower(fn, outputs=opts["outputs"], check_legality=opts["check_legality"],
                    max_isl_ops=ops, **extra)
    if target is not None:
        try:
            target.check(low.program, opts["target_options"])
        except TargetError as e:
            raise _with_alternatives(e, registry) from None
    return low, target, opts


def report(chosen: AutoSchedule, out: Any) -> None:
    """Fill an ``AutoScheduleReport``."""
    out.python = chosen.python()
    out.report = str(chosen)
    out.search_seconds = chosen.search_s
    out.legality_checks = chosen.checks


def _with_alternatives(e: TargetError, registry: TargetRegistry) -> TargetError:
    """The refusal, plus which registered targets honour the tag or operation and whether
    they can build here (never a target that does not exist)."""
    if e.feature is None:
        return e
    kind, what = e.feature
    names = registry.honouring(**{kind: what})
    if not names:
        hint = f"; no registered target honours {kind} {what!r}"
    else:
        parts = []
        for n in names:
            a = registry.lookup(n).availability()
            parts.append(n if a.available else f"{n} (not available here: {a.detail})")
        hint = f"; {kind} {what!r} is honoured by: {', '.join(parts)}"
    return TargetError(f"{e}{hint}", target=e.target, computations=e.computations,
                       loop=e.loop, command=e.command, feature=e.feature)


def index_expr(e: IExpr, out: Any) -> Any:
    """Loop-AST index expression -> ``pb.IndexExpr`` (params lose their ``p_`` prefix)."""
    if isinstance(e, IInt):
        out.constant = e.value
    elif isinstance(e, IVar):
        out.param = e.name[2:] if e.name.startswith("p_") else e.name
    elif isinstance(e, IOp):
        out.op.op = e.op
        for a in e.args:
            index_expr(a, out.op.args.add())
    return out


def entry_point(sig: Signature, declaration: str, out: Any) -> Any:
    """The wire's EntryPoint of a kernel's signature."""
    out.symbol = sig.symbol
    out.c_declaration = declaration
    for p in sig.params:
        q = out.params.add(name=p)
        lo, hi = sig.param_bounds.get(p, (None, None))
        if lo is not None:
            q.min = lo
        if hi is not None:
            q.max = hi
    for b in sig.arguments:
        m = out.buffers.add(name=b.name, type=ELEM[b.dtype.name], kind=KIND[b.role],
                            fully_written=b.fully_written)
        for s in b.sizes:
            index_expr(s, m.sizes.add())
    for r in sig.requirements:
        q = out.requirements.add(buffer=r.buffer, message=r.message)
        index_expr(r.violated, q.violated)
    return out


def _sources_and_layers(low: Lowered, target: Target, options: dict[str, Any], resp: Any,
                        timer: _Timer) -> list[SourceText]:
    with timer.phase("codegen"):
        sources = target.generate(low.program, options)
    for src in sources:
        resp.sources.add(name=src.name, language=src.language, text=src.text)
    sec = layers_sections(low)
    resp.layers.layer1, resp.layers.layer2 = sec[0], sec[1]
    resp.layers.layer3, resp.layers.layer4 = sec[2], sec[3]
    return sources


def artifact_message(art: Artifact, out: Any) -> Any:
    """A target's Artifact as the wire's (each file with its digest)."""
    out.target = art.target
    for f in art.files:
        out.files.add(name=f.name, role=FILE_ROLE[f.role], content=f.content,
                      sha256=f.sha256)
    out.build_command = art.build_command
    for k, v in art.launch.items():
        out.launch[k] = v
    for k, v in art.options.items():
        out.options[k] = str(v)
    entry_point(art.signature, art.declaration, out.entry_point)
    return out


def run_compile(req: pb.Request, limits: Limits, max_ops: int,
                registry: TargetRegistry) -> pb.CompileResponse:
    timer = _Timer()
    resp = pb.CompileResponse(middleend_version=__version__)
    low, target, opts = _lower(req, timer, limits, max_ops, registry, resp)
    assert target is not None
    options = opts["target_options"]
    sources = _sources_and_layers(low, target, options, resp, timer)
    with timer.phase("build"):
        art, _log = target.build(low.program, sources, options)
    with timer.phase("package"):
        artifact_message(art, resp.artifact)
    timer.fill(resp.timings)
    return resp


def run_lower(req: pb.Request, limits: Limits, max_ops: int,
              registry: TargetRegistry) -> pb.LowerResponse:
    timer = _Timer()
    resp = pb.LowerResponse()
    low, target, opts = _lower(req, timer, limits, max_ops, registry, resp)
    assert target is not None
    _sources_and_layers(low, target, opts["target_options"], resp, timer)
    entry_point(Signature.of(low.program), target.declaration(low.program), resp.entry_point)
    timer.fill(resp.timings)
    return resp


def run_check(req: pb.Request, limits: Limits, max_ops: int,
              registry: TargetRegistry) -> pb.CheckResponse:
    """Legality only (an illegal schedule raises ScheduleError, like Compile); the check
    runs even if the request says to skip it, and needs no toolchain."""
    timer = _Timer()
    _lower(req, timer, limits, max_ops, registry, force_check=True)
    resp = pb.CheckResponse(legal=True)
    timer.fill(resp.timings)
    return resp


RUNNERS: dict[str, Callable[[pb.Request, Limits, int, TargetRegistry], Any]] = {
    "compile": run_compile, "check": run_check, "lower": run_lower}


def handle_request(kind: str, payload: bytes, limits: Limits | None = None,
                   max_ops: int = DEFAULT_MAX_OPS, registry: TargetRegistry | None = None
                   ) -> bytes:
    """Decode ``payload`` (a serialized Request), run ``kind``; a tagged reply."""
    if kind not in RUNNERS:
        return b"E" + pb.Diagnostic(kind=pb.INTERNAL, message=f"unknown request kind {kind!r}"
                                    ).SerializeToString()
    try:
        req = parse_request(payload, limits)
        resp = RUNNERS[kind](req, limits or Limits(), max_ops,
                             registry or TargetRegistry.discover())
        return b"R" + resp.SerializeToString()
    except (MiddleEndError, RecursionError, ValueError, TypeError, KeyError) as e:
        return b"E" + diagnostic_of(e).SerializeToString()


def task_kind(kind: str, max_ops: int, limits: Limits) -> str:
    """The worker task name: the request kind with the server's caps, which travel with
    each task so that workers need no configuration of their own."""
    return json.dumps({"kind": kind, "max_ops": max_ops, "limits": dataclasses.asdict(limits)})


def handle(kind: str, payload: bytes) -> bytes:
    """Worker entry point (``middleend.service.engine:handle``); ``kind`` comes from
    :func:`task_kind`. After a large request the worker gives its free heap back (see
    heap.py), so that a burst of them does not leave every worker at its peak."""
    task = json.loads(kind)
    try:
        return handle_request(task["kind"], payload, Limits(**task["limits"]),
                              task["max_ops"])
    finally:
        if len(payload) >= heap.MMAP_THRESHOLD:
            heap.trim()


def warmup() -> None:
    """Prepare a worker before the first request arrives: request-sized buffers mapped on
    their own (heap.py), ISL and every registered target's module imported."""
    import islpy  # noqa: F401

    heap.fix_mmap_threshold()

    registry = TargetRegistry.discover()
    for name in registry.names():
        registry.lookup(name)
