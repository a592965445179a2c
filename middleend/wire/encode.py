"""Python API -> wire format: a :class:`~middleend.function.Function` as a ``Request``.

Every front-end ends here (the Python API directly; Halide and Julia through the API), so
one encoder defines what the middle-end receives. Domains travel as ISL text computed from
the iterators' bounds; expressions as typed trees; commands one message each, in the order
they were written (diagnostics index that list).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import islpy as isl

from .. import commands as cmd
from ..errors import DefinitionError
from ..expr import Access, Binary, Call, Cast, Const, Expr, Select, Unary
from ..function import INPUT, Buffer, Computation, Function, Param, Var, _BufferOf
from ..layer1 import param_space, var_domain
from ..types import DType
from .v1 import middleend_pb2 as pb

ELEM = {"int8": pb.INT8, "int16": pb.INT16, "int32": pb.INT32, "int64": pb.INT64,
        "uint8": pb.UINT8, "uint16": pb.UINT16, "uint32": pb.UINT32, "uint64": pb.UINT64,
        "float32": pb.FLOAT32, "float64": pb.FLOAT64, "bool": pb.BOOL}
BINARY = {"add": pb.ADD, "sub": pb.SUB, "mul": pb.MUL, "div": pb.DIV, "floordiv": pb.FLOORDIV,
          "mod": pb.MOD, "min": pb.MIN, "max": pb.MAX, "lt": pb.LT, "le": pb.LE, "gt": pb.GT,
          "ge": pb.GE, "eq": pb.EQ, "ne": pb.NE, "and": pb.AND, "or": pb.OR}
UNARY = {"neg": pb.NEG, "not": pb.NOT}
KIND = {"input": pb.INPUT, "output": pb.OUTPUT, "temporary": pb.TEMPORARY, "inout": pb.INOUT}


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


def encode_command(c: cmd.Command, out: Any) -> Any:
    """One internal command record -> one ``pb.Command`` (same field names by design)."""
    out.computation = c.comp
    msg = getattr(out, c.kind)
    msg.SetInParent()
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
    out = pb.Function(name=fn.name)
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
        encode_command(c, out.commands.add())
    for o in outputs or ():
        out.outputs.append(o if isinstance(o, str) else o.name)
    return out


def encode_request(fn: Function, target: str = "cpu", outputs: Sequence[Any] | None = None,
                   check_legality: bool = True, fp_contract: bool = False,
                   max_isl_operations: int = 0) -> Any:
    """A complete ``pb.Request`` (the message Compile, Check and Lower take)."""
    req = pb.Request()
    req.function.CopyFrom(encode_function(fn, outputs))
    if target == "cpu":
        req.target.cpu.fp_contract = fp_contract
    elif target in ("gpu", "mpi", "fpga"):
        getattr(req.target, target).SetInParent()
    else:
        raise DefinitionError(f"unknown target {target!r} (known: cpu, gpu, mpi, fpga)")
    req.options.skip_legality_check = not check_legality
    req.options.max_isl_operations = max_isl_operations
    return req
