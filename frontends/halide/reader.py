"""Decode the bytes of ``hl.serialize_pipeline`` (Halide 21, serialization 18.0.1) into
:mod:`.hir` dataclasses.

This is the only module that knows Halide's FlatBuffers schema (``src/halide_ir.fbs`` at tag
v21.0.0); the translator sees plain dataclasses. Slot numbers below follow that schema's field
order, a union taking two slots (see :mod:`.fbs`). Expression trees are decoded with an
explicit stack, since Halide builds trees thousands of nodes deep (a long sum) and Python's
recursion limit would otherwise turn a valid pipeline into a crash.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TypeVar

from frontends.halide.errors import HalideFormatError
from frontends.halide.fbs import FbTable, FlatBufferError, root
from frontends.halide.hir import (
    HBound,
    HBuffer,
    HBufferConstraint,
    HBufferDim,
    HDefinition,
    HDim,
    HExpr,
    HExternArg,
    HFunc,
    HFuncSchedule,
    HFusedPair,
    HLoopLevel,
    HParameter,
    HPipeline,
    HRDom,
    HRequirement,
    HRVar,
    HSpecialization,
    HSplit,
    HStageSchedule,
    HStorageDim,
    HType,
)

SUPPORTED_SERIALIZATION_VERSION = "18.0.1"

_T = TypeVar("_T")

# Union members and enums, in schema declaration order (union tags count from 1).
_EXPR_KINDS = (
    "IntImm UIntImm FloatImm StringImm Cast Reinterpret Add Sub Mul Div Mod Min Max EQ NE LT LE"
    " GT GE And Or Not Select Load Ramp Broadcast Let Call Variable Shuffle VectorReduce"
    " UndefinedExpr"
).split()
_STMT_KINDS = (
    "LetStmt AssertStmt ProducerConsumer For Store Provide Allocate Free Realize Block"
    " IfThenElse Evaluate Prefetch Acquire Fork Atomic HoistedStorage UndefinedStmt"
).split()
_BINARY = frozenset("Add Sub Mul Div Mod Min Max EQ NE LT LE GT GE And Or".split())
_TYPE_CODES = ("int", "uint", "float", "handle", "bfloat")
_CALL_TYPES = "Image Extern ExternCPlusPlus PureExtern Halide Intrinsic PureIntrinsic".split()
_FOR_TYPES = "Serial Parallel Vectorized Unrolled Extern GPUBlock GPUThread GPULane".split()
_PARTITIONS = ("Auto", "Never", "Always")
_DEVICE_APIS = (
    "None Host Default_GPU CUDA OpenCL Metal Hexagon HexagonDma D3D12Compute Vulkan WebGPU"
).split()
_MANGLINGS = ("Default", "C", "CPlusPlus")
_EXTERN_ARG_TYPES = ("UndefinedArg", "FuncArg", "BufferArg", "ExprArg", "ImageParamArg")
_MEMORY_TYPES = "Auto Heap Stack Register GPUShared GPUTexture LockedCache VTCM AMXTile".split()
_TAIL_STRATEGIES = (
    "RoundUp GuardWithIf Predicate PredicateLoads PredicateStores ShiftInwards"
    " ShiftInwardsAndBlend RoundUpAndBlend Auto"
).split()
_SPLIT_TYPES = ("SplitVar", "RenameVar", "FuseVars")
_DIM_TYPES = ("PureVar", "PureRVar", "ImpureRVar")
_VECTOR_REDUCE_OPS = "Add SaturatingAdd Mul Min Max And Or".split()

# What corrupt bytes can raise while being walked; all become HalideFormatError.
_DECODE_ERRORS = (FlatBufferError, struct.error, IndexError, OverflowError)


def _enum(names: tuple[str, ...] | list[str], value: int, what: str) -> str:
    """Member name of an enum value; an unknown value means a newer or damaged schema."""
    if not 0 <= value < len(names):
        raise FlatBufferError(f"{what} has unknown value {value}")
    return names[value]


def _type(t: FbTable | None) -> HType | None:
    if t is None:
        return None
    code = _enum(_TYPE_CODES, t.get_int(0, "byte"), "Type.code")
    return HType(code, t.get_int(1, "ubyte"), t.get_int(2, "int32"))


# --- expressions -------------------------------------------------------------------------

_Child = tuple[int, FbTable | None]


def _children(kind: str, t: FbTable) -> list[_Child]:
    """The sub-expressions of one node, in the order :func:`_build` consumes them."""
    if kind in _BINARY or kind == "Ramp":
        return [t.union(0), t.union(2)]
    if kind in ("Cast", "Reinterpret", "Not", "Broadcast", "VectorReduce"):
        return [t.union(0)]
    if kind == "Select":
        return [t.union(0), t.union(2), t.union(4)]
    if kind == "Let":
        return [t.union(1), t.union(3)]
    if kind == "Call":
        return t.unions(1)
    if kind == "Shuffle":
        return t.unions(0)
    if kind == "Load":
        return [t.union(3), t.union(1)]  # index, predicate
    if kind == "Variable":
        rdom = t.table(4)
        if rdom is None or not rdom.get_bool(0):
            return []
        out: list[_Child] = []
        for rv in rdom.tables(1):
            out += [rv.union(1), rv.union(3)]
        out.append(rdom.union(2))
        return out
    return []


def _need(kind: str, parts: list[HExpr | None]) -> tuple[HExpr, ...]:
    """Operands that must be present: a missing one means the bytes are damaged."""
    if any(p is None for p in parts):
        raise FlatBufferError(f"a {kind} node lacks an operand")
    return tuple(p for p in parts if p is not None)


def _build(kind: str, t: FbTable, sub: list[HExpr | None]) -> HExpr:
    """One node from its table and its already decoded sub-expressions."""
    if kind == "IntImm":
        return HExpr(kind, _type(t.table(1)), value=t.get_int(0, "int64"))
    if kind == "UIntImm":
        return HExpr(kind, _type(t.table(1)), value=t.get_int(0, "uint64"))
    if kind == "FloatImm":
        return HExpr(kind, _type(t.table(1)), value=float(t.scalar(0, "float64", 0.0)))
    if kind == "StringImm":
        return HExpr(kind, value=t.string(0))
    if kind in ("Cast", "Reinterpret"):
        return HExpr(kind, _type(t.table(2)), args=_need(kind, sub))
    if kind in _BINARY or kind in ("Not", "Select"):
        return HExpr(kind, args=_need(kind, sub))
    if kind == "Let":
        return HExpr(kind, args=_need(kind, sub), name=t.string(0))
    if kind == "Call":
        return HExpr(
            kind,
            _type(t.table(8)),
            args=_need(kind, sub),
            name=t.string(0),
            call_type=_enum(_CALL_TYPES, t.get_int(3, "ubyte"), "Call.call_type"),
            func_index=t.get_int(4),
            value_index=t.get_int(5),
            image_name=t.string(6),
            param_name=t.string(7),
        )
    if kind == "Variable":
        rdom, rd = None, t.table(4)
        if sub and rd is not None:  # children: (min, extent) per RVar, then the predicate
            names = [rv.string(0) for rv in rd.tables(1)]
            mins_extents = _need("ReductionVariable", sub[:-1])
            rvars = tuple(
                HRVar(n, mins_extents[2 * i], mins_extents[2 * i + 1]) for i, n in enumerate(names)
            )
            rdom = HRDom(rvars, _defined(sub[-1]))
        return HExpr(
            kind,
            _type(t.table(1)),
            name=t.string(0),
            param_name=t.string(2),
            image_name=t.string(3),
            rdom=rdom,
        )
    # The rest only appear after lowering; best effort (Ramp/Broadcast: value = lanes).
    if kind == "Load":  # args = (index, predicate)
        args = tuple(s for s in sub if s is not None)
        names = {"name": t.string(0), "image_name": t.string(3), "param_name": t.string(4)}
        return HExpr(kind, _type(t.table(8)), args=args, **names)
    if kind in ("Ramp", "Broadcast"):
        return HExpr(kind, args=_need(kind, sub), value=t.get_int(4 if kind == "Ramp" else 2))
    if kind == "Shuffle":  # the lane indices are dropped
        return HExpr(kind, args=_need(kind, sub))
    if kind == "VectorReduce":
        op = _enum(_VECTOR_REDUCE_OPS, t.get_int(2, "ubyte"), "VectorReduce.reduction_op")
        return HExpr(kind, args=_need(kind, sub), name=op, value=t.get_int(3))
    return HExpr(kind)  # UndefinedExpr


def _expr(tag: int, t: FbTable | None) -> HExpr | None:
    """Decode one Expr union value (None for NONE) in post-order with an explicit stack."""
    if tag == 0 or t is None:
        return None
    # A frame: [kind, table, children, next child, decoded children].
    kind = _enum(_EXPR_KINDS, tag - 1, "Expr union tag")
    stack: list[list] = [[kind, t, _children(kind, t), 0, []]]
    # Halide never shares subtrees and every node is a table of at least 4 bytes, so more
    # nodes than that means offsets that alias: corrupt bytes that would decode
    # exponentially long instead of failing.
    budget = len(t.buf) // 4
    while True:
        frame = stack[-1]
        kind, table, kids, nxt, done = frame
        if nxt < len(kids):
            frame[3] = nxt + 1
            ctag, ctable = kids[nxt]
            if ctag == 0 or ctable is None:
                done.append(None)
            else:
                budget -= 1
                if budget < 0:
                    raise FlatBufferError("an expression has more nodes than the buffer holds")
                ckind = _enum(_EXPR_KINDS, ctag - 1, "Expr union tag")
                stack.append([ckind, ctable, _children(ckind, ctable), 0, []])
            continue
        node = _build(kind, table, done)
        stack.pop()
        if not stack:
            return node
        stack[-1][4].append(node)


def _defined(e: HExpr | None) -> HExpr | None:
    """An optional Expr: Halide writes an undefined one as NONE or as UndefinedExpr."""
    return None if e is None or e.kind == "UndefinedExpr" else e


def _opt_expr(t: FbTable, slot: int) -> HExpr | None:
    return _defined(_expr(*t.union(slot)))


def _req_expr(t: FbTable, slot: int, what: str) -> HExpr:
    e = _expr(*t.union(slot))
    if e is None:
        raise FlatBufferError(f"{what} is missing")
    return e


def _expr_vector(t: FbTable, slot: int, what: str) -> tuple[HExpr, ...]:
    return _need(what, [_expr(tag, e) for tag, e in t.unions(slot)])


# --- schedules and definitions -----------------------------------------------------------


def _loop_level(t: FbTable | None, what: str) -> HLoopLevel:
    if t is None:
        raise FlatBufferError(f"{what} is missing")
    return HLoopLevel(t.string(0), t.get_int(1), t.string(2), t.get_bool(3), t.get_bool(4))


def _rvar(t: FbTable) -> HRVar:
    name = t.string(0)
    return HRVar(name, _req_expr(t, 1, f"RVar {name} min"), _req_expr(t, 3, f"RVar {name} extent"))


def _split(t: FbTable) -> HSplit:
    return HSplit(
        old_var=t.string(0),
        outer=t.string(1),
        inner=t.string(2),
        factor=_opt_expr(t, 3),
        exact=t.get_bool(5),
        tail=_enum(_TAIL_STRATEGIES, t.get_int(6, "ubyte"), "Split.tail"),
        split_type=_enum(_SPLIT_TYPES, t.get_int(7, "ubyte"), "Split.split_type"),
    )


def _dim(t: FbTable) -> HDim:
    return HDim(
        var=t.string(0),
        for_type=_enum(_FOR_TYPES, t.get_int(1, "byte"), "Dim.for_type"),
        device_api=_enum(_DEVICE_APIS, t.get_int(2, "byte"), "Dim.device_api"),
        dim_type=_enum(_DIM_TYPES, t.get_int(3, "ubyte"), "Dim.dim_type"),
        partition_policy=_enum(_PARTITIONS, t.get_int(4, "byte"), "Dim.partition_policy"),
    )


def _stage_schedule(t: FbTable | None) -> HStageSchedule:
    if t is None:
        return HStageSchedule()
    fuse = t.table(4)
    fuse_ll = fuse.table(0) if fuse is not None else None
    return HStageSchedule(
        rvars=tuple(_rvar(r) for r in t.tables(0)),
        splits=tuple(_split(s) for s in t.tables(1)),
        dims=tuple(_dim(d) for d in t.tables(2)),
        prefetches=t.vector_len(3),
        fuse_level=None if fuse_ll is None else _loop_level(fuse_ll, "fuse level"),
        fused_pairs=tuple(
            HFusedPair(p.string(0), p.string(1), p.get_int(2), p.get_int(3), p.string(4))
            for p in t.tables(5)
        ),
        touched=t.get_bool(6),
        allow_race_conditions=t.get_bool(7),
        atomic=t.get_bool(8),
    )


def _definition(t: FbTable) -> HDefinition:
    return HDefinition(
        is_init=t.get_bool(0),
        predicate=_opt_expr(t, 1),
        values=_expr_vector(t, 3, "Definition.values"),
        args=_expr_vector(t, 5, "Definition.args"),
        schedule=_stage_schedule(t.table(7)),
        specializations=tuple(_specialization(s) for s in t.tables(8)),
    )


def _specialization(t: FbTable) -> HSpecialization:
    """One ``Specialization`` (condition, definition, failure_message); its definition's
    own specializations are read with it (nesting is as deep as the user wrote it)."""
    d = t.table(2)
    if d is None:
        raise FlatBufferError("a specialization without its definition")
    return HSpecialization(_req_expr(t, 0, "specialization condition"), _definition(d),
                           t.string(3))


def _bound(t: FbTable) -> HBound:
    return HBound(t.string(0), _opt_expr(t, 1), _opt_expr(t, 3), _opt_expr(t, 5), _opt_expr(t, 7))


def _func_schedule(t: FbTable | None) -> HFuncSchedule:
    if t is None:
        raise FlatBufferError("the FuncSchedule is missing")
    return HFuncSchedule(
        store_level=_loop_level(t.table(0), "store level"),
        compute_level=_loop_level(t.table(1), "compute level"),
        hoist_storage_level=_loop_level(t.table(2), "hoist storage level"),
        storage_dims=tuple(
            HStorageDim(
                s.string(0), _opt_expr(s, 1), _opt_expr(s, 3), _opt_expr(s, 5), s.get_bool(7)
            )
            for s in t.tables(3)
        ),
        bounds=tuple(_bound(b) for b in t.tables(4)),
        estimates=tuple(_bound(b) for b in t.tables(5)),
        wrappers=tuple((w.string(0), w.get_int(1)) for w in t.tables(6)),
        memory_type=_enum(_MEMORY_TYPES, t.get_int(7, "byte"), "FuncSchedule.memory_type"),
        memoized=t.get_bool(8),
        async_=t.get_bool(9),
        ring_buffer=_opt_expr(t, 10),
    )


def _extern_arg(t: FbTable, names: list[str]) -> HExternArg:
    """One ``define_extern`` argument; a Func is named through ``func_names_in_order``."""
    kind = _enum(_EXTERN_ARG_TYPES, t.get_int(0, "ubyte"), "ExternFuncArgument.arg_type")
    if kind == "FuncArg":
        k = t.get_int(1)
        if not 0 <= k < len(names):
            raise FlatBufferError(f"an extern argument names Func #{k}, missing from the "
                                  "serialized pipeline")
        return HExternArg("Func", names[k])
    if kind == "BufferArg":
        return HExternArg("Buffer", t.string(2))
    if kind == "ImageParamArg":
        return HExternArg("ImageParam", t.string(5))
    if kind == "ExprArg":
        return HExternArg("Expr", expr=_req_expr(t, 3, "an extern's Expr argument"))
    raise FlatBufferError("an undefined extern argument")


def _func(t: FbTable, names: list[str]) -> HFunc:
    init = t.table(7)
    return HFunc(
        name=t.string(0),
        origin_name=t.string(1),
        output_types=tuple(_req_type(o, "Func output type") for o in t.tables(2)),
        args=tuple(t.strings(5)),
        schedule=_func_schedule(t.table(6)),
        init=None if init is None else _definition(init),
        updates=tuple(_definition(u) for u in t.tables(8)),
        extern_function_name=t.string(12),
        extern_arguments=tuple(_extern_arg(a, names) for a in t.tables(11)),
        extern_mangling=_enum(_MANGLINGS, t.get_int(13, "ubyte"), "Func.extern_mangling"),
        extern_device_api=_enum(_DEVICE_APIS, t.get_int(14, "byte"),
                                "Func.extern_function_device_api"),
        traced=t.get_bool(17) or t.get_bool(18) or t.get_bool(19),
    )


# --- parameters, buffers, pipeline -------------------------------------------------------


def _parameter(t: FbTable) -> HParameter:
    name = t.string(4)
    return HParameter(
        name=name,
        is_buffer=t.get_bool(1),
        type=_req_type(t.table(2), f"Parameter {name}"),
        dimensions=t.get_int(3),
        buffer_constraints=tuple(
            HBufferConstraint(_opt_expr(c, 0), _opt_expr(c, 2), _opt_expr(c, 4))
            for c in t.tables(6)
        ),
        scalar_default=_opt_expr(t, 9),
        scalar_min=_opt_expr(t, 11),
        scalar_max=_opt_expr(t, 13),
    )


def _external_parameter(t: FbTable) -> HParameter:
    name = t.string(3)
    return HParameter(
        name, t.get_bool(0), _req_type(t.table(1), f"ExternalParameter {name}"), t.get_int(2)
    )


def _buffer(t: FbTable) -> HBuffer:
    name = t.string(1)
    dims = tuple(HBufferDim(d.get_int(0), d.get_int(1), d.get_int(2)) for d in t.tables(4))
    return HBuffer(name, _req_type(t.table(2), f"Buffer {name}"), dims, t.get_bytes(5))


def _requirement(tag: int, t: FbTable | None) -> HRequirement:
    """One of ``Pipeline.requirements``: Halide stores each as an AssertStmt."""
    kind = _enum(_STMT_KINDS, tag - 1, "Stmt union tag") if tag else "NONE"
    if kind != "AssertStmt" or t is None:
        raise FlatBufferError(f"a requirement is a {kind}, not an AssertStmt")
    return HRequirement(_req_expr(t, 0, "requirement condition"), _opt_expr(t, 2))


def _req_type(t: FbTable | None, what: str) -> HType:
    ty = _type(t)
    if ty is None:
        raise FlatBufferError(f"{what} has no type")
    return ty


def _each(
    tables: list[FbTable], decode: Callable[[FbTable], _T], what: str, name_slot: int
) -> tuple[_T, ...]:
    """Decode a list of named tables; a failure names the table (#index and name) so that a
    damaged pipeline can be traced to the Func or parameter it hit."""
    out: list[_T] = []
    for i, t in enumerate(tables):
        try:
            out.append(decode(t))
        except _DECODE_ERRORS as e:
            try:
                where = f"{what} #{i} {t.string(name_slot)!r}"
            except _DECODE_ERRORS:
                where = f"{what} #{i}"
            raise FlatBufferError(f"{where}: {e}") from e
    return tuple(out)


def read_pipeline(data: bytes) -> HPipeline:
    """Decode ``hl.serialize_pipeline(p)`` bytes; refuse other serialization versions,
    since the schema changes between them without any marker other than that string."""
    buf = bytes(data)
    try:
        p = root(buf)
        halide_version = p.string(8)
        version = p.string(9)
    except _DECODE_ERRORS as e:
        raise HalideFormatError(f"not a serialized Halide pipeline ({len(buf)} bytes): {e}") from e
    if not version:
        raise HalideFormatError(
            f"not a serialized Halide pipeline ({len(buf)} bytes): no serialization_version"
        )
    if version != SUPPORTED_SERIALIZATION_VERSION:
        raise HalideFormatError(
            f"unsupported Halide serialization version {version!r} (written by Halide "
            f"{halide_version!r}); this reader supports serialization version "
            f"{SUPPORTED_SERIALIZATION_VERSION!r} (Halide 21.0.x)"
        )
    try:
        names = p.strings(4)
        funcs = _each(p.tables(0), lambda t: _func(t, names), "Func", 0)
        pipeline = HPipeline(
            funcs=funcs,
            output_names=tuple(p.strings(1)),
            func_names_in_order=tuple(p.strings(4)),
            parameters=_each(p.tables(5), _parameter, "Parameter", 4),
            external_parameters=_each(p.tables(6), _external_parameter, "ExternalParameter", 3),
            buffers=_each(p.tables(7), _buffer, "Buffer", 1),
            halide_version=halide_version,
            serialization_version=version,
            requirements=tuple(_requirement(tag, t) for tag, t in p.unions(2)),
            funcs_by_name={f.name: f for f in funcs},
        )
    except _DECODE_ERRORS as e:
        raise HalideFormatError(
            f"corrupt or truncated Halide pipeline ({len(buf)} bytes, Halide {halide_version}): {e}"
        ) from e
    return pipeline
