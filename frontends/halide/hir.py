"""The front-end's own, plain-Python image of a serialized Halide 21 pipeline.

:mod:`.reader` fills these from the FlatBuffers bytes of ``hl.serialize_pipeline``; the
translator reads only these, so the byte-level format stays in one module. Everything here
is immutable; enum-valued fields hold the schema's member names as strings (``"Parallel"``,
``"GuardWithIf"``, ``"Halide"``...), so a value the translator does not know is visible in
its error message instead of being a bare number.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class HType:
    """A Halide type: ``code`` is "int", "uint", "float", "handle" or "bfloat"."""

    code: str
    bits: int
    lanes: int = 1

    def __str__(self) -> str:
        s = f"{self.code}{self.bits}"
        return s if self.lanes == 1 else f"{s}x{self.lanes}"


@dataclass(frozen=True, slots=True)
class HRVar:
    """One dimension of a reduction domain: ``var`` runs over [min, min + extent)."""

    var: str
    min: HExpr
    extent: HExpr


@dataclass(frozen=True, slots=True)
class HRDom:
    """A reduction domain and its ``where`` predicate (None when it has none)."""

    vars: tuple[HRVar, ...]
    predicate: HExpr | None


@dataclass(frozen=True, slots=True, eq=False)
class HExpr:
    """An expression node; ``kind`` is the schema's union member name.

    * ``IntImm``/``UIntImm``/``FloatImm``/``StringImm``: ``value`` (and ``type``);
    * ``Cast``/``Reinterpret``: ``type``, ``args = (value,)``;
    * ``Add Sub Mul Div Mod Min Max EQ NE LT LE GT GE And Or``: ``args = (a, b)``;
      ``Not``: ``(a,)``; ``Select``: ``(condition, true_value, false_value)``
      (these carry no ``type``: Halide derives it from the operands);
    * ``Let``: ``name``, ``args = (value, body)``;
    * ``Call``: ``name``, ``args``, ``call_type`` ("Image", "Extern", "ExternCPlusPlus",
      "PureExtern", "Halide", "Intrinsic", "PureIntrinsic"), ``value_index``, ``func_index``,
      ``image_name``, ``param_name``, ``type``;
    * ``Variable``: ``name``, ``type``, ``param_name``, ``image_name``, ``rdom``;
    * ``UndefinedExpr``; the post-lowering kinds (``Load``, ``Ramp``, ``Broadcast``,
      ``Shuffle``, ``VectorReduce``) keep their kind and whatever fields apply.
    """

    kind: str
    type: HType | None = None
    args: tuple[HExpr, ...] = ()
    value: int | float | str | None = None
    name: str = ""
    call_type: str = ""
    value_index: int = 0
    func_index: int = -1
    param_name: str = ""
    image_name: str = ""
    rdom: HRDom | None = None


@dataclass(frozen=True, slots=True)
class HLoopLevel:
    """Where a Func is computed or stored. ``func_name`` "" with ``var_name`` "" means
    inlined; ``var_name == "__root"`` means root; otherwise the loop ``var_name`` (a short
    name, e.g. "xo") of stage ``stage_index`` (-1: not given) of ``func_name``."""

    func_name: str
    stage_index: int
    var_name: str
    is_rvar: bool
    locked: bool

    @property
    def is_inlined(self) -> bool:
        return self.var_name == "" and self.func_name == ""

    @property
    def is_root(self) -> bool:
        return self.var_name == "__root"

    @property
    def is_outermost(self) -> bool:
        """``Var.outermost()`` of a Func: outside all its loops, so realized once before
        the stage, which gives the values of a compute_root."""
        return self.var_name == "__outermost"


@dataclass(frozen=True, slots=True)
class HSplit:
    """``split_type``: "SplitVar" (old -> outer, inner by factor), "RenameVar" (old ->
    outer), "FuseVars" (inner, outer -> old). ``tail`` is the TailStrategy member name."""

    old_var: str
    outer: str
    inner: str
    factor: HExpr | None
    exact: bool
    tail: str
    split_type: str


@dataclass(frozen=True, slots=True)
class HDim:
    """One loop of a stage (stage dims are listed innermost first)."""

    var: str
    for_type: str
    device_api: str
    dim_type: str
    partition_policy: str = "Auto"


@dataclass(frozen=True, slots=True)
class HFusedPair:
    func_1: str
    func_2: str
    stage_1: int
    stage_2: int
    var_name: str


@dataclass(frozen=True, slots=True)
class HStageSchedule:
    rvars: tuple[HRVar, ...] = ()
    splits: tuple[HSplit, ...] = ()
    dims: tuple[HDim, ...] = ()
    prefetches: int = 0  # how many prefetch directives (the front-end refuses any)
    fuse_level: HLoopLevel | None = None
    fused_pairs: tuple[HFusedPair, ...] = ()
    touched: bool = False
    allow_race_conditions: bool = False
    atomic: bool = False


@dataclass(frozen=True, slots=True)
class HBound:
    """``Func.bound``/``align_bounds``/estimates: min and extent may be None."""

    var: str
    min: HExpr | None
    extent: HExpr | None
    modulus: HExpr | None
    remainder: HExpr | None


@dataclass(frozen=True, slots=True)
class HStorageDim:
    var: str
    alignment: HExpr | None
    bound: HExpr | None
    fold_factor: HExpr | None
    fold_forward: bool


@dataclass(frozen=True, slots=True)
class HFuncSchedule:
    store_level: HLoopLevel
    compute_level: HLoopLevel
    hoist_storage_level: HLoopLevel
    storage_dims: tuple[HStorageDim, ...] = ()
    bounds: tuple[HBound, ...] = ()
    estimates: tuple[HBound, ...] = ()
    wrappers: tuple[tuple[str, int], ...] = ()  # (func_name, func_index)
    memory_type: str = "Auto"
    memoized: bool = False
    async_: bool = False
    ring_buffer: HExpr | None = None


@dataclass(frozen=True, slots=True)
class HDefinition:
    """A pure definition (``is_init``) or an update: ``args`` are the left-hand side's
    index expressions, ``values`` one per Tuple element."""

    is_init: bool
    predicate: HExpr | None
    values: tuple[HExpr, ...]
    args: tuple[HExpr, ...]
    schedule: HStageSchedule
    specializations: tuple[HSpecialization, ...] = ()


@dataclass(frozen=True, slots=True)
class HSpecialization:
    """``stage.specialize(condition)``: ``definition`` is the stage again (the same values,
    args and predicate, Halide copies them) with the schedule used when ``condition`` holds
    at run time (and its own nested specializations). ``stage.specialize_fail(message)``
    is one whose ``failure_message`` is set (its condition is ``true``): reaching it is
    an error."""

    condition: HExpr
    definition: HDefinition
    failure_message: str = ""


@dataclass(frozen=True, slots=True)
class HExternArg:
    """One argument of a ``define_extern`` Func, in the extern's order: ``kind`` is "Func"
    (``name``: the Func), "Buffer" (``name``: a constant Buffer), "ImageParam" (``name``)
    or "Expr" (``expr``: a scalar argument)."""

    kind: str
    name: str = ""
    expr: HExpr | None = None


@dataclass(frozen=True, slots=True)
class HFunc:
    name: str
    origin_name: str
    output_types: tuple[HType, ...]
    args: tuple[str, ...]  # the pure Vars' names, dimension 0 (innermost) first
    schedule: HFuncSchedule
    init: HDefinition | None
    updates: tuple[HDefinition, ...]
    extern_function_name: str = ""
    extern_arguments: tuple[HExternArg, ...] = ()
    extern_mangling: str = "Default"  # NameMangling: "Default", "C" or "CPlusPlus"
    extern_device_api: str = "Host"  # the DeviceAPI member name
    traced: bool = False  # any of trace_loads / trace_stores / trace_realizations


@dataclass(frozen=True, slots=True)
class HBufferConstraint:
    min: HExpr | None
    extent: HExpr | None
    stride: HExpr | None


@dataclass(frozen=True, slots=True)
class HParameter:
    """An ImageParam (``is_buffer``) or a scalar Param."""

    name: str
    is_buffer: bool
    type: HType
    dimensions: int
    buffer_constraints: tuple[HBufferConstraint, ...] = ()
    scalar_default: HExpr | None = None
    scalar_min: HExpr | None = None
    scalar_max: HExpr | None = None


@dataclass(frozen=True, slots=True)
class HBufferDim:
    min: int
    extent: int
    stride: int


@dataclass(frozen=True, slots=True)
class HBuffer:
    """A constant ``hl.Buffer`` baked into the pipeline, with its raw bytes."""

    name: str
    type: HType
    dims: tuple[HBufferDim, ...]
    data: bytes


@dataclass(frozen=True, slots=True)
class HRequirement:
    """``Pipeline.add_requirement(condition, *message)``: ``message`` is Halide's error call
    (``halide_error_requirement_failed(stringify(condition), stringify(message...))``)."""

    condition: HExpr
    message: HExpr | None


@dataclass(frozen=True, slots=True)
class HPipeline:
    funcs: tuple[HFunc, ...]
    output_names: tuple[str, ...]
    func_names_in_order: tuple[str, ...]
    parameters: tuple[HParameter, ...]
    external_parameters: tuple[HParameter, ...]
    buffers: tuple[HBuffer, ...]
    halide_version: str
    serialization_version: str
    requirements: tuple[HRequirement, ...] = ()
    funcs_by_name: dict[str, HFunc] = field(default_factory=dict, compare=False)

    def func(self, name: str) -> HFunc:
        return self.funcs_by_name[name]
