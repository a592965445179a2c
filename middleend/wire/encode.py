"""Python API -> wire format: a :class:`~middleend.function.Function` as a ``Request``.

Every front-end ends here (the Python API directly; Halide and Julia through the API), so
one encoder defines what the middle-end receives. Domains travel as ISL text computed from
the iterators' bounds; expressions as typed trees; commands one message each, in the order
they were written (diagnostics index that list).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import DefinitionError, TargetError
from ..ir.expr import Access, Binary, Call, Cast, Const, Expr, Select, Unary
from ..ir.function import INPUT, Buffer, Computation, Function, Param, Var, _BufferOf
from ..ir.types import DType
from ..passes.layer1 import domain_of, param_space, var_domain
from .v1 import middleend_pb2 as pb

ELEM = {"int8": pb.INT8, "int16": pb.INT16, "int32": pb.INT32, "int64": pb.INT64,
        "uint8": pb.UINT8, "uint16": pb.UINT16, "uint32": pb.UINT32, "uint64": pb.UINT64,
        "float32": pb.FLOAT32, "float64": pb.FLOAT64, "bool": pb.BOOL,
        "float16": pb.FLOAT16}
BINARY = {"add": pb.ADD, "sub": pb.SUB, "mul": pb.MUL, "div": pb.DIV, "floordiv": pb.FLOORDIV,
          "mod": pb.MOD, "min": pb.MIN, "max": pb.MAX, "lt": pb.LT, "le": pb.LE, "gt": pb.GT,
          "ge": pb.GE, "eq": pb.EQ, "ne": pb.NE, "and": pb.AND, "or": pb.OR}
UNARY = {"neg": pb.NEG, "not": pb.NOT}
KIND = {"input": pb.INPUT, "output": pb.OUTPUT, "temporary": pb.TEMPORARY, "inout": pb.INOUT}
SPACE = {"gpu_global": pb.GPU_GLOBAL, "gpu_shared": pb.GPU_SHARED, "gpu_local": pb.GPU_LOCAL,
         "gpu_constant": pb.GPU_CONSTANT}
FILE_ROLE = {"shared_object": pb.SHARED_OBJECT, "header": pb.HEADER, "source": pb.SOURCE,
             "build_log": pb.BUILD_LOG, "kernel_source": pb.KERNEL_SOURCE,
             "script": pb.SCRIPT, "executable": pb.EXECUTABLE}


def elem(dt: DType) -> int:
    return ELEM[dt.name]


def encode_expr(e: Expr, out: Any) -> Any:
    """Fill ``out`` (a ``pb.Expr``) from ``e``; returns ``out``."""
    if isinstance(e, Var):
        out.iterator = e.name
    elif isinstance(e, Param):
        out.param = e.name
    elif isinstance(e, Const):
        c = out.constant
        c.type = elem(e.type_)
        if e.type_.is_bool:
            c.bool_value = bool(e.value)
        elif e.type_.is_float:
            c.float_value = float(e.value)
        elif e.type_.kind == "uint":
            c.uint_value = int(e.value)
        else:
            c.int_value = int(e.value)
    elif isinstance(e, Binary):
        b = out.binary
        b.op, b.type = BINARY[e.op], elem(e.type_)
        encode_expr(e.a, b.a)
        encode_expr(e.b, b.b)
    elif isinstance(e, Unary):
        out.unary.op = UNARY[e.op]
        encode_expr(e.a, out.unary.a)
    elif isinstance(e, Select):
        encode_expr(e.cond, out.select.condition)
        encode_expr(e.a, out.select.if_true)
        encode_expr(e.b, out.select.if_false)
    elif isinstance(e, Cast):
        out.cast.type = elem(e.type_)
        encode_expr(e.a, out.cast.a)
    elif isinstance(e, Call):
        out.call.function, out.call.type = e.fn, elem(e.type_)
        for a in e.args:
            encode_expr(a, out.call.args.add())
    elif isinstance(e, Access):
        t = e.target
        acc = out.access
        if isinstance(t, Computation):
            acc.kind = pb.VALUE
        elif isinstance(t, _BufferOf):
            acc.kind = pb.PREVIOUS
        elif isinstance(t, Buffer):
            acc.kind = pb.MEMORY
        else:
            raise DefinitionError(f"cannot encode a read of {t!r}")
        acc.target = t.name
        for i in e.indices:
            encode_expr(i, acc.indices.add())
    else:
        raise DefinitionError(f"cannot encode expression node {type(e).__name__}")
    return out


def _buffer(b: Buffer, out: Any) -> None:
    out.name, out.type, out.kind = b.name, elem(b.dtype), KIND[b.kind]
    out.memory_space = pb.HOST
    for s in b.sizes:
        encode_expr(s, out.sizes.add())


def _send(c: cmd.Send, msg: Any, pspace: isl.Space) -> None:
    """Send/Receive: the iteration domain as ISL text, the box and the peer as trees."""
    msg.domain = c.domain or str(domain_of(c.comp, c.iterators, None, pspace))
    msg.buffer = c.buffer
    for e in c.start:
        encode_expr(e, msg.start.add())
    for e in c.size:
        encode_expr(e, msg.size.add())
    encode_expr(c.peer, msg.peer)
    msg.properties.extend(c.properties)
    if isinstance(c, cmd.Receive):
        msg.matching = c.matching


def encode_command(c: cmd.Command, out: Any, pspace: isl.Space | None = None) -> Any:
    """One internal command record -> one ``pb.Command`` (same field names by design).
    ``pspace`` (the function's params) is needed for the domain of a send/receive."""
    out.computation = c.comp
    msg = getattr(out, c.kind)
    msg.SetInParent()
    if isinstance(c, cmd.Send):
        if pspace is None:
            raise DefinitionError(f"{c.describe()}: encoding it needs the function's params")
        _send(c, msg, pspace)
        return out
    if isinstance(c, cmd.TagMemory):
        msg.space = SPACE[c.space]
        return out
    if isinstance(c, cmd.StoreIn):
        msg.buffer = c.buffer
        msg.identity = c.indices is None
        for i in c.indices or ():
            encode_expr(i, msg.indices.add())
        return out
    for f in dataclasses.fields(c):
        if f.name == "comp":
            continue
        v = getattr(c, f.name)
        if v is None:
            continue
        if isinstance(v, tuple):
            getattr(msg, f.name).extend(v)
        else:
            setattr(msg, f.name, v)
    return out


def encode_function(fn: Function, outputs: Sequence[Any] | None = None) -> Any:
    """The ``pb.Function`` of ``fn``; ``outputs`` as for :meth:`Function.compile`."""
    out = pb.Function(name=fn.name, allow_empty_domains=fn.allow_empty_domains)
    for p in fn.params:
        q = out.params.add(name=p.name)
        if p.min is not None:
            q.min = p.min
        if p.max is not None:
            q.max = p.max
    for b in fn.buffers:
        _buffer(b, out.inputs.add() if b.kind == INPUT else out.buffers.add())
    ctx = isl.Context()
    pspace = param_space(ctx, [p.name for p in fn.params])
    for c in fn.computations:
        m = out.computations.add(name=c.name)
        m.domain = c.domain if c.domain is not None else str(var_domain(c, pspace))
        if c.expr is None:
            raise DefinitionError(f"computation {c.name!r} has no expression "
                                  "(pass one or call set_expression)")
        encode_expr(c.expr, m.expression)
        if c.predicate is not None:
            encode_expr(c.predicate, m.predicate)
        if c._dtype is not None:
            m.type = elem(c._dtype)
        if c.order is not None:
            m.order = c.order
    for c in fn.commands.items:
        encode_command(c, out.commands.add(), pspace)
    for o in outputs or ():
        out.outputs.append(o if isinstance(o, str) else o.name)
    return out


RUNTIME_RANKS, RUNTIME_RANKS_WIRE = "runtime", -1  # mpi's ranks read at run time


def encode_target(target: str, options: Mapping[str, Any], out: Any) -> Any:
    """The target and its options into ``out`` (a ``pb.Target``). Targets the wire format
    has a message for set its fields by name (an unknown option is refused here, with the
    options the message has); any other registered target travels by name, its options as
    text."""
    if not isinstance(target, str) or not target:
        raise DefinitionError(f"target must be a target's name, got {target!r}")
    field = out.DESCRIPTOR.fields_by_name.get(target)
    if field is None or field.message_type is None or target == "named":
        named = out.named
        named.name = target
        for k, v in options.items():
            named.options[str(k)] = str(v)
        return out
    msg = getattr(out, target)
    msg.SetInParent()
    for k, v in options.items():
        if target == "mpi" and k == "ranks" and v == RUNTIME_RANKS:
            v = RUNTIME_RANKS_WIRE
        if k not in msg.DESCRIPTOR.fields_by_name:
            known = ", ".join(msg.DESCRIPTOR.fields_by_name) or "none"
            raise TargetError(f"target {target!r} has no option {k!r} (its options: "
                              f"{known})", target=target)
        fd = msg.DESCRIPTOR.fields_by_name[k]
        if (v == 0 and isinstance(v, (int, float)) and not isinstance(v, bool)
                and not fd.has_presence):
            # proto3 sends a number field at 0 as unset: the target would take its
            # default, not the 0 the user wrote, so a 0 is refused here instead
            raise TargetError(f"target {target!r}: option {k!r} cannot be 0 (a request "
                              "reads 0 as unset; leave the option out for its default)",
                              target=target)
        try:
            setattr(msg, k, v)
        except (TypeError, ValueError) as e:
            raise TargetError(f"target {target!r}: bad value {v!r} for option {k!r} ({e})",
                              target=target) from None
    return out


SCHEDULES = (None, "auto")  # what ``schedule=`` takes: the commands as given, or automatic


def encode_request(fn: Function, target: str = "cpu", outputs: Sequence[Any] | None = None,
                   check_legality: bool = True, max_isl_operations: int = 0,
                   schedule: str | None = None, estimates: Mapping[str, int] | None = None,
                   budget: float | None = None, **options: Any) -> Any:
    """A complete ``pb.Request`` (the message Compile, Check and Lower take); ``options``
    are the target's (e.g. ``fp_contract=True`` for cpu). ``schedule="auto"`` asks the
    middle-end to schedule the program itself (with the parameter ``estimates`` for its
    cost model, in at most ``budget`` seconds)."""
    if schedule not in SCHEDULES:
        raise DefinitionError(f"function {fn.name!r}: schedule must be None or 'auto', got "
                              f"{schedule!r}")
    if schedule is None and (estimates is not None or budget is not None):
        raise DefinitionError(f"function {fn.name!r}: estimates and budget are for "
                              "schedule='auto'")
    req = pb.Request()
    req.function.CopyFrom(encode_function(fn, outputs))
    encode_target(target, options, req.target)
    req.options.skip_legality_check = not check_legality
    req.options.max_isl_operations = max_isl_operations
    if schedule == "auto":
        req.options.auto_schedule = True
        for k, v in sorted((estimates or {}).items()):
            if not isinstance(k, str) or not isinstance(v, int) or isinstance(v, bool):
                raise DefinitionError(f"function {fn.name!r}: estimates map parameter names "
                                      f"to ints, got {k!r}: {v!r}")
            req.options.estimates[k] = v
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, (int, float)) or \
                    not 0 < budget < float("inf"):
                raise DefinitionError(f"function {fn.name!r}: budget must be a positive "
                                      f"number of seconds, got {budget!r}")
            req.options.auto_schedule_budget_s = float(budget)
    return req
