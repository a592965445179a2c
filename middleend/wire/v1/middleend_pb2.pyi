from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ElemType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELEM_TYPE_UNSPECIFIED: _ClassVar[ElemType]
    INT8: _ClassVar[ElemType]
    INT16: _ClassVar[ElemType]
    INT32: _ClassVar[ElemType]
    INT64: _ClassVar[ElemType]
    UINT8: _ClassVar[ElemType]
    UINT16: _ClassVar[ElemType]
    UINT32: _ClassVar[ElemType]
    UINT64: _ClassVar[ElemType]
    FLOAT32: _ClassVar[ElemType]
    FLOAT64: _ClassVar[ElemType]
    BOOL: _ClassVar[ElemType]
    FLOAT16: _ClassVar[ElemType]

class BinaryOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BINARY_OP_UNSPECIFIED: _ClassVar[BinaryOp]
    ADD: _ClassVar[BinaryOp]
    SUB: _ClassVar[BinaryOp]
    MUL: _ClassVar[BinaryOp]
    DIV: _ClassVar[BinaryOp]
    FLOORDIV: _ClassVar[BinaryOp]
    MOD: _ClassVar[BinaryOp]
    MIN: _ClassVar[BinaryOp]
    MAX: _ClassVar[BinaryOp]
    LT: _ClassVar[BinaryOp]
    LE: _ClassVar[BinaryOp]
    GT: _ClassVar[BinaryOp]
    GE: _ClassVar[BinaryOp]
    EQ: _ClassVar[BinaryOp]
    NE: _ClassVar[BinaryOp]
    AND: _ClassVar[BinaryOp]
    OR: _ClassVar[BinaryOp]

class UnaryOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNARY_OP_UNSPECIFIED: _ClassVar[UnaryOp]
    NEG: _ClassVar[UnaryOp]
    NOT: _ClassVar[UnaryOp]

class AccessKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACCESS_KIND_UNSPECIFIED: _ClassVar[AccessKind]
    VALUE: _ClassVar[AccessKind]
    MEMORY: _ClassVar[AccessKind]
    PREVIOUS: _ClassVar[AccessKind]

class BufferKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUFFER_KIND_UNSPECIFIED: _ClassVar[BufferKind]
    INPUT: _ClassVar[BufferKind]
    OUTPUT: _ClassVar[BufferKind]
    TEMPORARY: _ClassVar[BufferKind]
    INOUT: _ClassVar[BufferKind]

class MemorySpace(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_SPACE_UNSPECIFIED: _ClassVar[MemorySpace]
    HOST: _ClassVar[MemorySpace]
    GPU_GLOBAL: _ClassVar[MemorySpace]
    GPU_SHARED: _ClassVar[MemorySpace]
    GPU_LOCAL: _ClassVar[MemorySpace]
    GPU_CONSTANT: _ClassVar[MemorySpace]
    FPGA_LOCAL: _ClassVar[MemorySpace]

class FileRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_ROLE_UNSPECIFIED: _ClassVar[FileRole]
    SHARED_OBJECT: _ClassVar[FileRole]
    HEADER: _ClassVar[FileRole]
    SOURCE: _ClassVar[FileRole]
    BUILD_LOG: _ClassVar[FileRole]
    KERNEL_SOURCE: _ClassVar[FileRole]
    SCRIPT: _ClassVar[FileRole]
    EXECUTABLE: _ClassVar[FileRole]

class ErrorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_KIND_UNSPECIFIED: _ClassVar[ErrorKind]
    INVALID_PROGRAM: _ClassVar[ErrorKind]
    UNPRODUCED_READ: _ClassVar[ErrorKind]
    ILLEGAL_SCHEDULE: _ClassVar[ErrorKind]
    UNSUPPORTED_TARGET: _ClassVar[ErrorKind]
    RESOURCE_LIMIT: _ClassVar[ErrorKind]
    BUILD_FAILED: _ClassVar[ErrorKind]
    INTERNAL: _ClassVar[ErrorKind]
    DEADLINE: _ClassVar[ErrorKind]
    UNCHECKED_SCHEDULE: _ClassVar[ErrorKind]
    TARGET_UNAVAILABLE: _ClassVar[ErrorKind]

class Severity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEVERITY_UNSPECIFIED: _ClassVar[Severity]
    ERROR: _ClassVar[Severity]
    WARNING: _ClassVar[Severity]
ELEM_TYPE_UNSPECIFIED: ElemType
INT8: ElemType
INT16: ElemType
INT32: ElemType
INT64: ElemType
UINT8: ElemType
UINT16: ElemType
UINT32: ElemType
UINT64: ElemType
FLOAT32: ElemType
FLOAT64: ElemType
BOOL: ElemType
FLOAT16: ElemType
BINARY_OP_UNSPECIFIED: BinaryOp
ADD: BinaryOp
SUB: BinaryOp
MUL: BinaryOp
DIV: BinaryOp
FLOORDIV: BinaryOp
MOD: BinaryOp
MIN: BinaryOp
MAX: BinaryOp
LT: BinaryOp
LE: BinaryOp
GT: BinaryOp
GE: BinaryOp
EQ: BinaryOp
NE: BinaryOp
AND: BinaryOp
OR: BinaryOp
UNARY_OP_UNSPECIFIED: UnaryOp
NEG: UnaryOp
NOT: UnaryOp
ACCESS_KIND_UNSPECIFIED: AccessKind
VALUE: AccessKind
MEMORY: AccessKind
PREVIOUS: AccessKind
BUFFER_KIND_UNSPECIFIED: BufferKind
INPUT: BufferKind
OUTPUT: BufferKind
TEMPORARY: BufferKind
INOUT: BufferKind
MEMORY_SPACE_UNSPECIFIED: MemorySpace
HOST: MemorySpace
GPU_GLOBAL: MemorySpace
GPU_SHARED: MemorySpace
GPU_LOCAL: MemorySpace
GPU_CONSTANT: MemorySpace
FPGA_LOCAL: MemorySpace
FILE_ROLE_UNSPECIFIED: FileRole
SHARED_OBJECT: FileRole
HEADER: FileRole
SOURCE: FileRole
BUILD_LOG: FileRole
KERNEL_SOURCE: FileRole
SCRIPT: FileRole
EXECUTABLE: FileRole
ERROR_KIND_UNSPECIFIED: ErrorKind
INVALID_PROGRAM: ErrorKind
UNPRODUCED_READ: ErrorKind
ILLEGAL_SCHEDULE: ErrorKind
UNSUPPORTED_TARGET: ErrorKind
RESOURCE_LIMIT: ErrorKind
BUILD_FAILED: ErrorKind
INTERNAL: ErrorKind
DEADLINE: ErrorKind
UNCHECKED_SCHEDULE: ErrorKind
TARGET_UNAVAILABLE: ErrorKind
SEVERITY_UNSPECIFIED: Severity
ERROR: Severity
WARNING: Severity

class Expr(_message.Message):
    __slots__ = ("constant", "iterator", "param", "binary", "unary", "select", "cast", "call", "access")
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    ITERATOR_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    BINARY_FIELD_NUMBER: _ClassVar[int]
    UNARY_FIELD_NUMBER: _ClassVar[int]
    SELECT_FIELD_NUMBER: _ClassVar[int]
    CAST_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    ACCESS_FIELD_NUMBER: _ClassVar[int]
    constant: Constant
    iterator: str
    param: str
    binary: Binary
    unary: Unary
    select: Select
    cast: Cast
    call: Call
    access: Access
    def __init__(self, constant: _Optional[_Union[Constant, _Mapping]] = ..., iterator: _Optional[str] = ..., param: _Optional[str] = ..., binary: _Optional[_Union[Binary, _Mapping]] = ..., unary: _Optional[_Union[Unary, _Mapping]] = ..., select: _Optional[_Union[Select, _Mapping]] = ..., cast: _Optional[_Union[Cast, _Mapping]] = ..., call: _Optional[_Union[Call, _Mapping]] = ..., access: _Optional[_Union[Access, _Mapping]] = ...) -> None: ...

class Constant(_message.Message):
    __slots__ = ("type", "int_value", "uint_value", "float_value", "bool_value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    UINT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    type: ElemType
    int_value: int
    uint_value: int
    float_value: float
    bool_value: bool
    def __init__(self, type: _Optional[_Union[ElemType, str]] = ..., int_value: _Optional[int] = ..., uint_value: _Optional[int] = ..., float_value: _Optional[float] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class Binary(_message.Message):
    __slots__ = ("op", "a", "b", "type")
    OP_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    op: BinaryOp
    a: Expr
    b: Expr
    type: ElemType
    def __init__(self, op: _Optional[_Union[BinaryOp, str]] = ..., a: _Optional[_Union[Expr, _Mapping]] = ..., b: _Optional[_Union[Expr, _Mapping]] = ..., type: _Optional[_Union[ElemType, str]] = ...) -> None: ...

class Unary(_message.Message):
    __slots__ = ("op", "a")
    OP_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    op: UnaryOp
    a: Expr
    def __init__(self, op: _Optional[_Union[UnaryOp, str]] = ..., a: _Optional[_Union[Expr, _Mapping]] = ...) -> None: ...

class Select(_message.Message):
    __slots__ = ("condition", "if_true", "if_false")
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    IF_TRUE_FIELD_NUMBER: _ClassVar[int]
    IF_FALSE_FIELD_NUMBER: _ClassVar[int]
    condition: Expr
    if_true: Expr
    if_false: Expr
    def __init__(self, condition: _Optional[_Union[Expr, _Mapping]] = ..., if_true: _Optional[_Union[Expr, _Mapping]] = ..., if_false: _Optional[_Union[Expr, _Mapping]] = ...) -> None: ...

class Cast(_message.Message):
    __slots__ = ("type", "a")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    type: ElemType
    a: Expr
    def __init__(self, type: _Optional[_Union[ElemType, str]] = ..., a: _Optional[_Union[Expr, _Mapping]] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ("function", "args", "type")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    function: str
    args: _containers.RepeatedCompositeFieldContainer[Expr]
    type: ElemType
    def __init__(self, function: _Optional[str] = ..., args: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., type: _Optional[_Union[ElemType, str]] = ...) -> None: ...

class Access(_message.Message):
    __slots__ = ("kind", "target", "indices")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    kind: AccessKind
    target: str
    indices: _containers.RepeatedCompositeFieldContainer[Expr]
    def __init__(self, kind: _Optional[_Union[AccessKind, str]] = ..., target: _Optional[str] = ..., indices: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ...) -> None: ...

class Param(_message.Message):
    __slots__ = ("name", "min", "max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    min: int
    max: int
    def __init__(self, name: _Optional[str] = ..., min: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class Buffer(_message.Message):
    __slots__ = ("name", "sizes", "type", "kind", "memory_space")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZES_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    sizes: _containers.RepeatedCompositeFieldContainer[Expr]
    type: ElemType
    kind: BufferKind
    memory_space: MemorySpace
    def __init__(self, name: _Optional[str] = ..., sizes: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., type: _Optional[_Union[ElemType, str]] = ..., kind: _Optional[_Union[BufferKind, str]] = ..., memory_space: _Optional[_Union[MemorySpace, str]] = ...) -> None: ...

class Computation(_message.Message):
    __slots__ = ("name", "domain", "expression", "predicate", "type", "order")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    name: str
    domain: str
    expression: Expr
    predicate: Expr
    type: ElemType
    order: str
    def __init__(self, name: _Optional[str] = ..., domain: _Optional[str] = ..., expression: _Optional[_Union[Expr, _Mapping]] = ..., predicate: _Optional[_Union[Expr, _Mapping]] = ..., type: _Optional[_Union[ElemType, str]] = ..., order: _Optional[str] = ...) -> None: ...

class Interchange(_message.Message):
    __slots__ = ("a", "b")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ...) -> None: ...

class Fuse(_message.Message):
    __slots__ = ("outer", "inner", "fused")
    OUTER_FIELD_NUMBER: _ClassVar[int]
    INNER_FIELD_NUMBER: _ClassVar[int]
    FUSED_FIELD_NUMBER: _ClassVar[int]
    outer: str
    inner: str
    fused: str
    def __init__(self, outer: _Optional[str] = ..., inner: _Optional[str] = ..., fused: _Optional[str] = ...) -> None: ...

class Split(_message.Message):
    __slots__ = ("dim", "factor", "outer", "inner")
    DIM_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    OUTER_FIELD_NUMBER: _ClassVar[int]
    INNER_FIELD_NUMBER: _ClassVar[int]
    dim: str
    factor: int
    outer: str
    inner: str
    def __init__(self, dim: _Optional[str] = ..., factor: _Optional[int] = ..., outer: _Optional[str] = ..., inner: _Optional[str] = ...) -> None: ...

class Tile(_message.Message):
    __slots__ = ("dims", "sizes", "outers", "inners")
    DIMS_FIELD_NUMBER: _ClassVar[int]
    SIZES_FIELD_NUMBER: _ClassVar[int]
    OUTERS_FIELD_NUMBER: _ClassVar[int]
    INNERS_FIELD_NUMBER: _ClassVar[int]
    dims: _containers.RepeatedScalarFieldContainer[str]
    sizes: _containers.RepeatedScalarFieldContainer[int]
    outers: _containers.RepeatedScalarFieldContainer[str]
    inners: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, dims: _Optional[_Iterable[str]] = ..., sizes: _Optional[_Iterable[int]] = ..., outers: _Optional[_Iterable[str]] = ..., inners: _Optional[_Iterable[str]] = ...) -> None: ...

class Shift(_message.Message):
    __slots__ = ("dim", "amount")
    DIM_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    dim: str
    amount: int
    def __init__(self, dim: _Optional[str] = ..., amount: _Optional[int] = ...) -> None: ...

class Skew(_message.Message):
    __slots__ = ("a", "b", "factor", "new_a", "new_b")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    NEW_A_FIELD_NUMBER: _ClassVar[int]
    NEW_B_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    factor: int
    new_a: str
    new_b: str
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ..., factor: _Optional[int] = ..., new_a: _Optional[str] = ..., new_b: _Optional[str] = ...) -> None: ...

class Reverse(_message.Message):
    __slots__ = ("dim",)
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: str
    def __init__(self, dim: _Optional[str] = ...) -> None: ...

class After(_message.Message):
    __slots__ = ("other", "level")
    OTHER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    other: str
    level: str
    def __init__(self, other: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class Before(_message.Message):
    __slots__ = ("other", "level")
    OTHER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    other: str
    level: str
    def __init__(self, other: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class Then(_message.Message):
    __slots__ = ("other", "level")
    OTHER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    other: str
    level: str
    def __init__(self, other: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class ComputeAt(_message.Message):
    __slots__ = ("consumer", "level")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    level: str
    def __init__(self, consumer: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class Inline(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Unroll(_message.Message):
    __slots__ = ("dim", "factor", "outer", "inner")
    DIM_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    OUTER_FIELD_NUMBER: _ClassVar[int]
    INNER_FIELD_NUMBER: _ClassVar[int]
    dim: str
    factor: int
    outer: str
    inner: str
    def __init__(self, dim: _Optional[str] = ..., factor: _Optional[int] = ..., outer: _Optional[str] = ..., inner: _Optional[str] = ...) -> None: ...

class Vectorize(_message.Message):
    __slots__ = ("dim", "factor", "outer", "inner")
    DIM_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    OUTER_FIELD_NUMBER: _ClassVar[int]
    INNER_FIELD_NUMBER: _ClassVar[int]
    dim: str
    factor: int
    outer: str
    inner: str
    def __init__(self, dim: _Optional[str] = ..., factor: _Optional[int] = ..., outer: _Optional[str] = ..., inner: _Optional[str] = ...) -> None: ...

class Parallelize(_message.Message):
    __slots__ = ("dim",)
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: str
    def __init__(self, dim: _Optional[str] = ...) -> None: ...

class Atomic(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: str
    def __init__(self, group: _Optional[str] = ...) -> None: ...

class Commute(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetSchedule(_message.Message):
    __slots__ = ("isl_map",)
    ISL_MAP_FIELD_NUMBER: _ClassVar[int]
    isl_map: str
    def __init__(self, isl_map: _Optional[str] = ...) -> None: ...

class Gpu(_message.Message):
    __slots__ = ("blocks", "threads")
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    blocks: _containers.RepeatedScalarFieldContainer[str]
    threads: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, blocks: _Optional[_Iterable[str]] = ..., threads: _Optional[_Iterable[str]] = ...) -> None: ...

class TileGpu(_message.Message):
    __slots__ = ("i", "j", "t1", "t2", "i0", "j0", "i1", "j1")
    I_FIELD_NUMBER: _ClassVar[int]
    J_FIELD_NUMBER: _ClassVar[int]
    T1_FIELD_NUMBER: _ClassVar[int]
    T2_FIELD_NUMBER: _ClassVar[int]
    I0_FIELD_NUMBER: _ClassVar[int]
    J0_FIELD_NUMBER: _ClassVar[int]
    I1_FIELD_NUMBER: _ClassVar[int]
    J1_FIELD_NUMBER: _ClassVar[int]
    i: str
    j: str
    t1: int
    t2: int
    i0: str
    j0: str
    i1: str
    j1: str
    def __init__(self, i: _Optional[str] = ..., j: _Optional[str] = ..., t1: _Optional[int] = ..., t2: _Optional[int] = ..., i0: _Optional[str] = ..., j0: _Optional[str] = ..., i1: _Optional[str] = ..., j1: _Optional[str] = ...) -> None: ...

class Distribute(_message.Message):
    __slots__ = ("dim",)
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: str
    def __init__(self, dim: _Optional[str] = ...) -> None: ...

class Pipeline(_message.Message):
    __slots__ = ("dim", "ii")
    DIM_FIELD_NUMBER: _ClassVar[int]
    II_FIELD_NUMBER: _ClassVar[int]
    dim: str
    ii: int
    def __init__(self, dim: _Optional[str] = ..., ii: _Optional[int] = ...) -> None: ...

class StoreIn(_message.Message):
    __slots__ = ("buffer", "indices", "identity")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    buffer: str
    indices: _containers.RepeatedCompositeFieldContainer[Expr]
    identity: bool
    def __init__(self, buffer: _Optional[str] = ..., indices: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., identity: _Optional[bool] = ...) -> None: ...

class StorageFold(_message.Message):
    __slots__ = ("dim", "factor")
    DIM_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    dim: int
    factor: int
    def __init__(self, dim: _Optional[int] = ..., factor: _Optional[int] = ...) -> None: ...

class Expand(_message.Message):
    __slots__ = ("loops", "folds", "name")
    LOOPS_FIELD_NUMBER: _ClassVar[int]
    FOLDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    loops: _containers.RepeatedScalarFieldContainer[str]
    folds: _containers.RepeatedScalarFieldContainer[int]
    name: str
    def __init__(self, loops: _Optional[_Iterable[str]] = ..., folds: _Optional[_Iterable[int]] = ..., name: _Optional[str] = ...) -> None: ...

class AllocateAt(_message.Message):
    __slots__ = ("consumer", "level")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    level: str
    def __init__(self, consumer: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class CopyAt(_message.Message):
    __slots__ = ("level", "src", "dst", "name", "order", "panel", "along")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    PANEL_FIELD_NUMBER: _ClassVar[int]
    ALONG_FIELD_NUMBER: _ClassVar[int]
    level: str
    src: str
    dst: str
    name: str
    order: _containers.RepeatedScalarFieldContainer[int]
    panel: int
    along: str
    def __init__(self, level: _Optional[str] = ..., src: _Optional[str] = ..., dst: _Optional[str] = ..., name: _Optional[str] = ..., order: _Optional[_Iterable[int]] = ..., panel: _Optional[int] = ..., along: _Optional[str] = ...) -> None: ...

class BarrierAt(_message.Message):
    __slots__ = ("level", "name")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    level: str
    name: str
    def __init__(self, level: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class DistributeBuffer(_message.Message):
    __slots__ = ("dim",)
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: int
    def __init__(self, dim: _Optional[int] = ...) -> None: ...

class Exchange(_message.Message):
    __slots__ = ("buffer", "level", "name")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    buffer: str
    level: str
    name: str
    def __init__(self, buffer: _Optional[str] = ..., level: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Scatter(_message.Message):
    __slots__ = ("name", "root")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    name: str
    root: int
    def __init__(self, name: _Optional[str] = ..., root: _Optional[int] = ...) -> None: ...

class Gather(_message.Message):
    __slots__ = ("name", "root")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    name: str
    root: int
    def __init__(self, name: _Optional[str] = ..., root: _Optional[int] = ...) -> None: ...

class HostToDevice(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CacheSharedAt(_message.Message):
    __slots__ = ("consumer", "level", "name")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    level: str
    name: str
    def __init__(self, consumer: _Optional[str] = ..., level: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CacheLocalAt(_message.Message):
    __slots__ = ("consumer", "level", "name")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    level: str
    name: str
    def __init__(self, consumer: _Optional[str] = ..., level: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class TagMemory(_message.Message):
    __slots__ = ("space",)
    SPACE_FIELD_NUMBER: _ClassVar[int]
    space: MemorySpace
    def __init__(self, space: _Optional[_Union[MemorySpace, str]] = ...) -> None: ...

class DeviceToHost(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class PartitionBuffer(_message.Message):
    __slots__ = ("dim", "factor", "scheme")
    DIM_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    dim: int
    factor: int
    scheme: str
    def __init__(self, dim: _Optional[int] = ..., factor: _Optional[int] = ..., scheme: _Optional[str] = ...) -> None: ...

class Stream(_message.Message):
    __slots__ = ("depth",)
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    depth: int
    def __init__(self, depth: _Optional[int] = ...) -> None: ...

class LineBuffer(_message.Message):
    __slots__ = ("buffer",)
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    buffer: str
    def __init__(self, buffer: _Optional[str] = ...) -> None: ...

class Send(_message.Message):
    __slots__ = ("domain", "buffer", "start", "size", "peer", "properties")
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    domain: str
    buffer: str
    start: _containers.RepeatedCompositeFieldContainer[Expr]
    size: _containers.RepeatedCompositeFieldContainer[Expr]
    peer: Expr
    properties: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, domain: _Optional[str] = ..., buffer: _Optional[str] = ..., start: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., size: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., peer: _Optional[_Union[Expr, _Mapping]] = ..., properties: _Optional[_Iterable[str]] = ...) -> None: ...

class Receive(_message.Message):
    __slots__ = ("domain", "buffer", "start", "size", "peer", "properties", "matching")
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    domain: str
    buffer: str
    start: _containers.RepeatedCompositeFieldContainer[Expr]
    size: _containers.RepeatedCompositeFieldContainer[Expr]
    peer: Expr
    properties: _containers.RepeatedScalarFieldContainer[str]
    matching: str
    def __init__(self, domain: _Optional[str] = ..., buffer: _Optional[str] = ..., start: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., size: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., peer: _Optional[_Union[Expr, _Mapping]] = ..., properties: _Optional[_Iterable[str]] = ..., matching: _Optional[str] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("computation", "interchange", "split", "tile", "shift", "skew", "reverse", "after", "before", "then", "compute_at", "inline", "unroll", "vectorize", "parallelize", "set_schedule", "gpu", "tile_gpu", "distribute", "pipeline", "fuse", "atomic", "commute", "store_in", "storage_fold", "allocate_at", "expand", "copy_at", "barrier_at", "host_to_device", "device_to_host", "send", "receive", "cache_shared_at", "cache_local_at", "tag_memory", "distribute_buffer", "exchange", "scatter", "gather", "partition_buffer", "stream", "line_buffer")
    COMPUTATION_FIELD_NUMBER: _ClassVar[int]
    INTERCHANGE_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    TILE_FIELD_NUMBER: _ClassVar[int]
    SHIFT_FIELD_NUMBER: _ClassVar[int]
    SKEW_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    THEN_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_AT_FIELD_NUMBER: _ClassVar[int]
    INLINE_FIELD_NUMBER: _ClassVar[int]
    UNROLL_FIELD_NUMBER: _ClassVar[int]
    VECTORIZE_FIELD_NUMBER: _ClassVar[int]
    PARALLELIZE_FIELD_NUMBER: _ClassVar[int]
    SET_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    TILE_GPU_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    FUSE_FIELD_NUMBER: _ClassVar[int]
    ATOMIC_FIELD_NUMBER: _ClassVar[int]
    COMMUTE_FIELD_NUMBER: _ClassVar[int]
    STORE_IN_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FOLD_FIELD_NUMBER: _ClassVar[int]
    ALLOCATE_AT_FIELD_NUMBER: _ClassVar[int]
    EXPAND_FIELD_NUMBER: _ClassVar[int]
    COPY_AT_FIELD_NUMBER: _ClassVar[int]
    BARRIER_AT_FIELD_NUMBER: _ClassVar[int]
    HOST_TO_DEVICE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TO_HOST_FIELD_NUMBER: _ClassVar[int]
    SEND_FIELD_NUMBER: _ClassVar[int]
    RECEIVE_FIELD_NUMBER: _ClassVar[int]
    CACHE_SHARED_AT_FIELD_NUMBER: _ClassVar[int]
    CACHE_LOCAL_AT_FIELD_NUMBER: _ClassVar[int]
    TAG_MEMORY_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTE_BUFFER_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    SCATTER_FIELD_NUMBER: _ClassVar[int]
    GATHER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_BUFFER_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    LINE_BUFFER_FIELD_NUMBER: _ClassVar[int]
    computation: str
    interchange: Interchange
    split: Split
    tile: Tile
    shift: Shift
    skew: Skew
    reverse: Reverse
    after: After
    before: Before
    then: Then
    compute_at: ComputeAt
    inline: Inline
    unroll: Unroll
    vectorize: Vectorize
    parallelize: Parallelize
    set_schedule: SetSchedule
    gpu: Gpu
    tile_gpu: TileGpu
    distribute: Distribute
    pipeline: Pipeline
    fuse: Fuse
    atomic: Atomic
    commute: Commute
    store_in: StoreIn
    storage_fold: StorageFold
    allocate_at: AllocateAt
    expand: Expand
    copy_at: CopyAt
    barrier_at: BarrierAt
    host_to_device: HostToDevice
    device_to_host: DeviceToHost
    send: Send
    receive: Receive
    cache_shared_at: CacheSharedAt
    cache_local_at: CacheLocalAt
    tag_memory: TagMemory
    distribute_buffer: DistributeBuffer
    exchange: Exchange
    scatter: Scatter
    gather: Gather
    partition_buffer: PartitionBuffer
    stream: Stream
    line_buffer: LineBuffer
    def __init__(self, computation: _Optional[str] = ..., interchange: _Optional[_Union[Interchange, _Mapping]] = ..., split: _Optional[_Union[Split, _Mapping]] = ..., tile: _Optional[_Union[Tile, _Mapping]] = ..., shift: _Optional[_Union[Shift, _Mapping]] = ..., skew: _Optional[_Union[Skew, _Mapping]] = ..., reverse: _Optional[_Union[Reverse, _Mapping]] = ..., after: _Optional[_Union[After, _Mapping]] = ..., before: _Optional[_Union[Before, _Mapping]] = ..., then: _Optional[_Union[Then, _Mapping]] = ..., compute_at: _Optional[_Union[ComputeAt, _Mapping]] = ..., inline: _Optional[_Union[Inline, _Mapping]] = ..., unroll: _Optional[_Union[Unroll, _Mapping]] = ..., vectorize: _Optional[_Union[Vectorize, _Mapping]] = ..., parallelize: _Optional[_Union[Parallelize, _Mapping]] = ..., set_schedule: _Optional[_Union[SetSchedule, _Mapping]] = ..., gpu: _Optional[_Union[Gpu, _Mapping]] = ..., tile_gpu: _Optional[_Union[TileGpu, _Mapping]] = ..., distribute: _Optional[_Union[Distribute, _Mapping]] = ..., pipeline: _Optional[_Union[Pipeline, _Mapping]] = ..., fuse: _Optional[_Union[Fuse, _Mapping]] = ..., atomic: _Optional[_Union[Atomic, _Mapping]] = ..., commute: _Optional[_Union[Commute, _Mapping]] = ..., store_in: _Optional[_Union[StoreIn, _Mapping]] = ..., storage_fold: _Optional[_Union[StorageFold, _Mapping]] = ..., allocate_at: _Optional[_Union[AllocateAt, _Mapping]] = ..., expand: _Optional[_Union[Expand, _Mapping]] = ..., copy_at: _Optional[_Union[CopyAt, _Mapping]] = ..., barrier_at: _Optional[_Union[BarrierAt, _Mapping]] = ..., host_to_device: _Optional[_Union[HostToDevice, _Mapping]] = ..., device_to_host: _Optional[_Union[DeviceToHost, _Mapping]] = ..., send: _Optional[_Union[Send, _Mapping]] = ..., receive: _Optional[_Union[Receive, _Mapping]] = ..., cache_shared_at: _Optional[_Union[CacheSharedAt, _Mapping]] = ..., cache_local_at: _Optional[_Union[CacheLocalAt, _Mapping]] = ..., tag_memory: _Optional[_Union[TagMemory, _Mapping]] = ..., distribute_buffer: _Optional[_Union[DistributeBuffer, _Mapping]] = ..., exchange: _Optional[_Union[Exchange, _Mapping]] = ..., scatter: _Optional[_Union[Scatter, _Mapping]] = ..., gather: _Optional[_Union[Gather, _Mapping]] = ..., partition_buffer: _Optional[_Union[PartitionBuffer, _Mapping]] = ..., stream: _Optional[_Union[Stream, _Mapping]] = ..., line_buffer: _Optional[_Union[LineBuffer, _Mapping]] = ...) -> None: ...

class Function(_message.Message):
    __slots__ = ("name", "params", "inputs", "computations", "commands", "buffers", "outputs", "allow_empty_domains")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_EMPTY_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    name: str
    params: _containers.RepeatedCompositeFieldContainer[Param]
    inputs: _containers.RepeatedCompositeFieldContainer[Buffer]
    computations: _containers.RepeatedCompositeFieldContainer[Computation]
    commands: _containers.RepeatedCompositeFieldContainer[Command]
    buffers: _containers.RepeatedCompositeFieldContainer[Buffer]
    outputs: _containers.RepeatedScalarFieldContainer[str]
    allow_empty_domains: bool
    def __init__(self, name: _Optional[str] = ..., params: _Optional[_Iterable[_Union[Param, _Mapping]]] = ..., inputs: _Optional[_Iterable[_Union[Buffer, _Mapping]]] = ..., computations: _Optional[_Iterable[_Union[Computation, _Mapping]]] = ..., commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ..., buffers: _Optional[_Iterable[_Union[Buffer, _Mapping]]] = ..., outputs: _Optional[_Iterable[str]] = ..., allow_empty_domains: _Optional[bool] = ...) -> None: ...

class CpuOptions(_message.Message):
    __slots__ = ("fp_contract",)
    FP_CONTRACT_FIELD_NUMBER: _ClassVar[int]
    fp_contract: bool
    def __init__(self, fp_contract: _Optional[bool] = ...) -> None: ...

class GpuOptions(_message.Message):
    __slots__ = ("arch", "dialect", "fp_contract", "max_threads_per_block", "shared_memory_kib")
    ARCH_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    FP_CONTRACT_FIELD_NUMBER: _ClassVar[int]
    MAX_THREADS_PER_BLOCK_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEMORY_KIB_FIELD_NUMBER: _ClassVar[int]
    arch: str
    dialect: str
    fp_contract: bool
    max_threads_per_block: int
    shared_memory_kib: int
    def __init__(self, arch: _Optional[str] = ..., dialect: _Optional[str] = ..., fp_contract: _Optional[bool] = ..., max_threads_per_block: _Optional[int] = ..., shared_memory_kib: _Optional[int] = ...) -> None: ...

class MpiOptions(_message.Message):
    __slots__ = ("ranks", "fp_contract")
    RANKS_FIELD_NUMBER: _ClassVar[int]
    FP_CONTRACT_FIELD_NUMBER: _ClassVar[int]
    ranks: int
    fp_contract: bool
    def __init__(self, ranks: _Optional[int] = ..., fp_contract: _Optional[bool] = ...) -> None: ...

class FpgaOptions(_message.Message):
    __slots__ = ("part", "clock_mhz", "fp_contract")
    PART_FIELD_NUMBER: _ClassVar[int]
    CLOCK_MHZ_FIELD_NUMBER: _ClassVar[int]
    FP_CONTRACT_FIELD_NUMBER: _ClassVar[int]
    part: str
    clock_mhz: float
    fp_contract: bool
    def __init__(self, part: _Optional[str] = ..., clock_mhz: _Optional[float] = ..., fp_contract: _Optional[bool] = ...) -> None: ...

class NamedTarget(_message.Message):
    __slots__ = ("name", "options")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    options: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Target(_message.Message):
    __slots__ = ("cpu", "gpu", "mpi", "fpga", "named")
    CPU_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    MPI_FIELD_NUMBER: _ClassVar[int]
    FPGA_FIELD_NUMBER: _ClassVar[int]
    NAMED_FIELD_NUMBER: _ClassVar[int]
    cpu: CpuOptions
    gpu: GpuOptions
    mpi: MpiOptions
    fpga: FpgaOptions
    named: NamedTarget
    def __init__(self, cpu: _Optional[_Union[CpuOptions, _Mapping]] = ..., gpu: _Optional[_Union[GpuOptions, _Mapping]] = ..., mpi: _Optional[_Union[MpiOptions, _Mapping]] = ..., fpga: _Optional[_Union[FpgaOptions, _Mapping]] = ..., named: _Optional[_Union[NamedTarget, _Mapping]] = ...) -> None: ...

class Options(_message.Message):
    __slots__ = ("skip_legality_check", "max_isl_operations", "auto_schedule", "estimates", "auto_schedule_budget_s")
    class EstimatesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    SKIP_LEGALITY_CHECK_FIELD_NUMBER: _ClassVar[int]
    MAX_ISL_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    AUTO_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    ESTIMATES_FIELD_NUMBER: _ClassVar[int]
    AUTO_SCHEDULE_BUDGET_S_FIELD_NUMBER: _ClassVar[int]
    skip_legality_check: bool
    max_isl_operations: int
    auto_schedule: bool
    estimates: _containers.ScalarMap[str, int]
    auto_schedule_budget_s: float
    def __init__(self, skip_legality_check: _Optional[bool] = ..., max_isl_operations: _Optional[int] = ..., auto_schedule: _Optional[bool] = ..., estimates: _Optional[_Mapping[str, int]] = ..., auto_schedule_budget_s: _Optional[float] = ...) -> None: ...

class Request(_message.Message):
    __slots__ = ("function", "target", "options")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    function: Function
    target: Target
    options: Options
    def __init__(self, function: _Optional[_Union[Function, _Mapping]] = ..., target: _Optional[_Union[Target, _Mapping]] = ..., options: _Optional[_Union[Options, _Mapping]] = ...) -> None: ...

class IndexExpr(_message.Message):
    __slots__ = ("constant", "param", "op")
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    constant: int
    param: str
    op: IndexOp
    def __init__(self, constant: _Optional[int] = ..., param: _Optional[str] = ..., op: _Optional[_Union[IndexOp, _Mapping]] = ...) -> None: ...

class IndexOp(_message.Message):
    __slots__ = ("op", "args")
    OP_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    op: str
    args: _containers.RepeatedCompositeFieldContainer[IndexExpr]
    def __init__(self, op: _Optional[str] = ..., args: _Optional[_Iterable[_Union[IndexExpr, _Mapping]]] = ...) -> None: ...

class EntryParam(_message.Message):
    __slots__ = ("name", "min", "max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    min: int
    max: int
    def __init__(self, name: _Optional[str] = ..., min: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class EntryBuffer(_message.Message):
    __slots__ = ("name", "type", "sizes", "kind", "fully_written")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FULLY_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: ElemType
    sizes: _containers.RepeatedCompositeFieldContainer[IndexExpr]
    kind: BufferKind
    fully_written: bool
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[ElemType, str]] = ..., sizes: _Optional[_Iterable[_Union[IndexExpr, _Mapping]]] = ..., kind: _Optional[_Union[BufferKind, str]] = ..., fully_written: _Optional[bool] = ...) -> None: ...

class EntryRequirement(_message.Message):
    __slots__ = ("buffer", "message", "violated")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VIOLATED_FIELD_NUMBER: _ClassVar[int]
    buffer: str
    message: str
    violated: IndexExpr
    def __init__(self, buffer: _Optional[str] = ..., message: _Optional[str] = ..., violated: _Optional[_Union[IndexExpr, _Mapping]] = ...) -> None: ...

class EntryPoint(_message.Message):
    __slots__ = ("symbol", "c_declaration", "params", "buffers", "requirements")
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    C_DECLARATION_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    symbol: str
    c_declaration: str
    params: _containers.RepeatedCompositeFieldContainer[EntryParam]
    buffers: _containers.RepeatedCompositeFieldContainer[EntryBuffer]
    requirements: _containers.RepeatedCompositeFieldContainer[EntryRequirement]
    def __init__(self, symbol: _Optional[str] = ..., c_declaration: _Optional[str] = ..., params: _Optional[_Iterable[_Union[EntryParam, _Mapping]]] = ..., buffers: _Optional[_Iterable[_Union[EntryBuffer, _Mapping]]] = ..., requirements: _Optional[_Iterable[_Union[EntryRequirement, _Mapping]]] = ...) -> None: ...

class ArtifactFile(_message.Message):
    __slots__ = ("name", "role", "content", "sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: FileRole
    content: bytes
    sha256: str
    def __init__(self, name: _Optional[str] = ..., role: _Optional[_Union[FileRole, str]] = ..., content: _Optional[bytes] = ..., sha256: _Optional[str] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("target", "files", "entry_point", "build_command", "launch", "options")
    class LaunchEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TARGET_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    ENTRY_POINT_FIELD_NUMBER: _ClassVar[int]
    BUILD_COMMAND_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    target: str
    files: _containers.RepeatedCompositeFieldContainer[ArtifactFile]
    entry_point: EntryPoint
    build_command: str
    launch: _containers.ScalarMap[str, str]
    options: _containers.ScalarMap[str, str]
    def __init__(self, target: _Optional[str] = ..., files: _Optional[_Iterable[_Union[ArtifactFile, _Mapping]]] = ..., entry_point: _Optional[_Union[EntryPoint, _Mapping]] = ..., build_command: _Optional[str] = ..., launch: _Optional[_Mapping[str, str]] = ..., options: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Layers(_message.Message):
    __slots__ = ("layer1", "layer2", "layer3", "layer4")
    LAYER1_FIELD_NUMBER: _ClassVar[int]
    LAYER2_FIELD_NUMBER: _ClassVar[int]
    LAYER3_FIELD_NUMBER: _ClassVar[int]
    LAYER4_FIELD_NUMBER: _ClassVar[int]
    layer1: str
    layer2: str
    layer3: str
    layer4: str
    def __init__(self, layer1: _Optional[str] = ..., layer2: _Optional[str] = ..., layer3: _Optional[str] = ..., layer4: _Optional[str] = ...) -> None: ...

class SourceFile(_message.Message):
    __slots__ = ("name", "language", "text")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    name: str
    language: str
    text: str
    def __init__(self, name: _Optional[str] = ..., language: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class PhaseTiming(_message.Message):
    __slots__ = ("phase", "seconds")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    phase: str
    seconds: float
    def __init__(self, phase: _Optional[str] = ..., seconds: _Optional[float] = ...) -> None: ...

class Diagnostic(_message.Message):
    __slots__ = ("kind", "message", "computations", "dependence", "command_index", "command", "level", "field_path", "build_log", "severity")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_INDEX_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    FIELD_PATH_FIELD_NUMBER: _ClassVar[int]
    BUILD_LOG_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    kind: ErrorKind
    message: str
    computations: _containers.RepeatedScalarFieldContainer[str]
    dependence: str
    command_index: int
    command: str
    level: str
    field_path: str
    build_log: str
    severity: Severity
    def __init__(self, kind: _Optional[_Union[ErrorKind, str]] = ..., message: _Optional[str] = ..., computations: _Optional[_Iterable[str]] = ..., dependence: _Optional[str] = ..., command_index: _Optional[int] = ..., command: _Optional[str] = ..., level: _Optional[str] = ..., field_path: _Optional[str] = ..., build_log: _Optional[str] = ..., severity: _Optional[_Union[Severity, str]] = ...) -> None: ...

class AutoScheduleReport(_message.Message):
    __slots__ = ("python", "report", "search_seconds", "legality_checks")
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LEGALITY_CHECKS_FIELD_NUMBER: _ClassVar[int]
    python: str
    report: str
    search_seconds: float
    legality_checks: int
    def __init__(self, python: _Optional[str] = ..., report: _Optional[str] = ..., search_seconds: _Optional[float] = ..., legality_checks: _Optional[int] = ...) -> None: ...

class CompileResponse(_message.Message):
    __slots__ = ("diagnostics", "layers", "sources", "artifact", "cache_key", "cache_hit", "timings", "middleend_version", "auto_schedule")
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    MIDDLEEND_VERSION_FIELD_NUMBER: _ClassVar[int]
    AUTO_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    layers: Layers
    sources: _containers.RepeatedCompositeFieldContainer[SourceFile]
    artifact: Artifact
    cache_key: str
    cache_hit: bool
    timings: _containers.RepeatedCompositeFieldContainer[PhaseTiming]
    middleend_version: str
    auto_schedule: AutoScheduleReport
    def __init__(self, diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ..., layers: _Optional[_Union[Layers, _Mapping]] = ..., sources: _Optional[_Iterable[_Union[SourceFile, _Mapping]]] = ..., artifact: _Optional[_Union[Artifact, _Mapping]] = ..., cache_key: _Optional[str] = ..., cache_hit: _Optional[bool] = ..., timings: _Optional[_Iterable[_Union[PhaseTiming, _Mapping]]] = ..., middleend_version: _Optional[str] = ..., auto_schedule: _Optional[_Union[AutoScheduleReport, _Mapping]] = ...) -> None: ...

class CheckResponse(_message.Message):
    __slots__ = ("legal", "diagnostics", "timings")
    LEGAL_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    legal: bool
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    timings: _containers.RepeatedCompositeFieldContainer[PhaseTiming]
    def __init__(self, legal: _Optional[bool] = ..., diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ..., timings: _Optional[_Iterable[_Union[PhaseTiming, _Mapping]]] = ...) -> None: ...

class LowerResponse(_message.Message):
    __slots__ = ("diagnostics", "layers", "sources", "entry_point", "timings", "auto_schedule")
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    ENTRY_POINT_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    AUTO_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    layers: Layers
    sources: _containers.RepeatedCompositeFieldContainer[SourceFile]
    entry_point: EntryPoint
    timings: _containers.RepeatedCompositeFieldContainer[PhaseTiming]
    auto_schedule: AutoScheduleReport
    def __init__(self, diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ..., layers: _Optional[_Union[Layers, _Mapping]] = ..., sources: _Optional[_Iterable[_Union[SourceFile, _Mapping]]] = ..., entry_point: _Optional[_Union[EntryPoint, _Mapping]] = ..., timings: _Optional[_Iterable[_Union[PhaseTiming, _Mapping]]] = ..., auto_schedule: _Optional[_Union[AutoScheduleReport, _Mapping]] = ...) -> None: ...
