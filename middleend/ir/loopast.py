"""The target-independent loop AST every backend consumes.

ISL's AST builder produces the loop nest; :mod:`middleend.astgen` translates it into these
small frozen records so that backends never touch islpy. Index and bound arithmetic
(:class:`IExpr`) is 64-bit integer arithmetic over loop iterators and parameters; statement
bodies stay Layer I expressions (:mod:`middleend.expr`) whose reads and writes have been
resolved to :class:`BufAccess` nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .expr import Expr
from .types import DType

if TYPE_CHECKING:
    from .distribution import Distribution

# --------------------------------------------------------------------------- index exprs


@dataclass(frozen=True)
class IExpr:
    """Integer expression over loop iterators and parameters."""


@dataclass(frozen=True)
class IInt(IExpr):
    value: int


@dataclass(frozen=True)
class IVar(IExpr):
    """A loop iterator (``_c<k>``), a parameter, or a statement-local name."""

    name: str


@dataclass(frozen=True)
class IOp(IExpr):
    """``op`` is one of: add sub mul neg, fdiv_q (floor division), pdiv_q (division of a
    non-negative by a positive), pdiv_r / zdiv_r (remainder, operands known non-negative /
    remainder compared to zero only), min max, select (cond, a, b), eq ne lt le gt ge, and or
    not."""

    op: str
    args: tuple[IExpr, ...]


IOPS = frozenset("add sub mul neg fdiv_q pdiv_q pdiv_r zdiv_r min max select eq ne lt le gt "
                 "ge and or not".split())


def ieval(e: IExpr, env: dict[str, int]) -> int:
    """Evaluate an index expression (used by the runtime to size arrays from params)."""
    if isinstance(e, IInt):
        return e.value
    if isinstance(e, IVar):
        return env[e.name]
    assert isinstance(e, IOp)
    a = [ieval(x, env) for x in e.args]
    op = e.op
    if op == "add":
        return a[0] + a[1]
    if op == "sub":
        return a[0] - a[1]
    if op == "mul":
        return a[0] * a[1]
    if op == "neg":
        return -a[0]
    if op in ("fdiv_q", "pdiv_q"):
        return a[0] // a[1]
    if op in ("pdiv_r", "zdiv_r"):
        return a[0] % a[1]
    if op == "min":
        return min(a)
    if op == "max":
        return max(a)
    if op == "select":
        return a[1] if a[0] else a[2]
    cmp = {"eq": a[0] == a[-1], "ne": a[0] != a[-1], "lt": a[0] < a[-1],
           "le": a[0] <= a[-1], "gt": a[0] > a[-1], "ge": a[0] >= a[-1]}
    if op in cmp:
        return int(cmp[op])
    if op == "and":
        return int(all(a))
    if op == "or":
        return int(any(a))
    if op == "not":
        return int(not a[0])
    raise ValueError(f"unknown index operator {op!r}")


def ivars(*es: IExpr | None) -> set[str]:
    """The variable names (iterators, params) index expressions use."""
    out: set[str] = set()
    stack = [e for e in es if e is not None]
    while stack:
        e = stack.pop()
        if isinstance(e, IVar):
            out.add(e.name)
        elif isinstance(e, IOp):
            stack.extend(e.args)
    return out


IJson = int | str | list  # type: ignore[type-arg]


def iexpr_json(e: IExpr) -> IJson:
    """An index expression as JSON (for a runtime plan that travels in an artifact):
    an int, a variable's name, or ``[op, args...]``."""
    if isinstance(e, IInt):
        return e.value
    if isinstance(e, IVar):
        return e.name
    assert isinstance(e, IOp)
    return [e.op, *(iexpr_json(a) for a in e.args)]


def iexpr_from_json(j: IJson) -> IExpr:
    """The inverse of :func:`iexpr_json`."""
    if isinstance(j, int):
        return IInt(j)
    if isinstance(j, str):
        return IVar(j)
    return IOp(j[0], tuple(iexpr_from_json(a) for a in j[1:]))


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True, eq=False)
class BufAccess(Expr):
    """A buffer element: ``buffer[indices]``. Indices are Layer I integer expressions over
    the statement's iterators (named as the computation's Vars); for a buffer allocated
    inside a loop the per-statement offsets ``offset_names`` (defined in the Stmt node) are
    subtracted. ``checked`` marks data-dependent indices the generated code must bounds-check
    (an out-of-bounds index is reported as a kernel error, never performed)."""

    buffer: str
    indices: tuple[Expr, ...]
    type_: DType
    offset_names: tuple[str, ...] | None = None
    checked: bool = False

    @property
    def dtype(self) -> DType:
        return self.type_

    def children(self) -> tuple[Expr, ...]:
        return self.indices


@dataclass(frozen=True, eq=False)
class IterRef(Expr):
    """A computation's iterator read as a value or index (int32 value, 64-bit index)."""

    name: str

    @property
    def dtype(self) -> DType:
        from .types import int32

        return int32


@dataclass(frozen=True, eq=False)
class ParamRef(Expr):
    name: str

    @property
    def dtype(self) -> DType:
        from .types import int32

        return int32


@dataclass(frozen=True, eq=False)
class FnCall(Expr):
    """A call of an inlined computation kept as a function (``Program.functions[fn]``) at
    the point ``args`` (64-bit indices, then the offsets of each of ``locals``). ``locals``
    are the loop-local buffers the function reads (``InlineFunction.locals``, the same
    order): the call passes the iteration's buffer of each as a typed pointer, the one in
    scope where the call is made (the statement's allocation, or the calling function's
    own parameter), so no address is ever carried as an integer."""

    fn: str
    args: tuple[Expr, ...]
    type_: DType
    locals: tuple[str, ...] = ()

    @property
    def dtype(self) -> DType:
        return self.type_

    def children(self) -> tuple[Expr, ...]:
        return self.args


@dataclass(frozen=True, eq=False)
class LocalArg(Expr):
    """An argument of a call (``FnCall``) made inside a loop-local buffer's allocation: one
    of the buffer's per-iteration offsets (``offset_name``, the C name the statement's code
    defines), so that the called function addresses the iteration's buffer (passed as a
    pointer, see ``FnCall.locals``) as the statement would."""

    buffer: str
    offset_name: str

    @property
    def dtype(self) -> DType:
        from .types import int64

        return int64


@dataclass(frozen=True, eq=False)
class LocalElement(Expr):
    """In an inlined function's body: an element of a loop-local buffer whose iteration's
    buffer its caller passes (a pointer parameter, see ``FnCall.locals``; ``offsets``: the
    function's offset parameters, see ``LocalArg``), at the logical ``indices``;
    bounds-checked like a ``BufAccess`` with ``checked``. Where the calls are substituted
    (``fncalls.py``) it becomes the statement's ``BufAccess``."""

    buffer: str
    indices: tuple[Expr, ...]
    type_: DType
    offsets: tuple[Expr, ...]

    @property
    def dtype(self) -> DType:
        return self.type_

    def children(self) -> tuple[Expr, ...]:
        return (*self.indices, *self.offsets)


@dataclass(frozen=True)
class InlineFunction:
    """An inlined computation's body as a function of its iterators ``params`` (named as
    IterRefs in ``body``): reads of non-local buffers (``checked``: bounds-checked at run
    time unless proven in bounds), of the loop-local buffers ``locals`` (``LocalElement``:
    each a ``const T*`` parameter, and its offsets the last of ``params``, after the
    iterators) and calls of other functions only."""

    name: str
    params: tuple[str, ...]
    body: Expr
    buffers: tuple[str, ...]  # the buffers its body reads directly
    locals: tuple[str, ...] = ()  # the loop-local buffers it reads, itself or in calls


@dataclass(frozen=True)
class StmtInfo:
    """What one statement does at one instance: ``store = value`` if ``guard`` holds.
    ``iters`` are its iterator names (bound per Stmt node).

    ``op`` is None for a computation, else the kind of Layer IV operation (see
    ``commands.OPERATION_KINDS``), created by ``command``: a ``copy`` stores ``value`` (an
    element of the source buffer) into ``store``; ``host_to_device``/``device_to_host``
    copy ``value`` to ``store``, the same element of one buffer in the other memory; a
    ``send`` reads ``value`` and a ``receive`` writes ``store`` (``peer`` is the other
    node, ``properties`` the command's); a ``barrier`` has neither."""

    comp: str
    iters: tuple[str, ...]
    store: BufAccess | None
    value: Expr | None
    guard: Expr | None = None
    op: str | None = None
    command: str = ""
    peer: Expr | None = None
    properties: tuple[str, ...] = ()
    device: bool = False  # runs on the GPU (inside a kernel)
    # on the device: (k, betas) where k is the position of its outermost GPU loop and betas
    # the constant dims before it; statements with equal keys share one GPU loop nest (one
    # kernel launch), even where ISL printed no loop for a GPU dim of one iteration, and
    # a loop at a position below k runs on the host around the kernel
    kernel: tuple[int, tuple[int, ...]] | None = None
    # comp.atomic(): (op, e), the statement is the atomic ``store = store op e`` (``value``
    # is that expression written out); ``op`` is a Binary's op or a bit intrinsic
    atomic: tuple[str, Expr] | None = None
    # comp.atomic(group=g): (k, takes, releases): a member of the critical section that
    # lock k guards; the group's first statement at a point takes it, its last releases it
    critical: tuple[int, bool, bool] | None = None


# --------------------------------------------------------------------------- loop nest


@dataclass(frozen=True)
class Node:
    pass


@dataclass(frozen=True)
class Block(Node):
    body: tuple[Node, ...]


@dataclass(frozen=True)
class For(Node):
    """``for (var = init; cond; var += step) body``. ``tag`` is None, 'parallel', 'vector',
    'unroll' (already unrolled by ISL when possible), 'gpu_block', 'gpu_thread',
    'distribute' or 'pipeline'. ``dim`` is the time-space dimension, ``name`` the loop's
    user-visible name (for messages and comments). ``hi`` is set when ``cond`` is the
    canonical ``var <= hi``."""

    var: str
    init: IExpr
    cond: IExpr
    step: int
    body: Node
    tag: str | None = None
    dim: int = -1
    name: str = ""
    hi: IExpr | None = None
    width: int | None = None  # 'vector': the vectorize factor; 'pipeline': the II
    command: str = ""  # the command that set ``tag``, as written (for a target's refusal)
    # GPU loops: ``axis`` 0/1/2 is x/y/z; ``extent`` the most iterations it has, over the
    # loops around it inside its kernel: for a block loop an expression of the params and
    # of the host loops' iterators (the grid's size), for a thread loop a constant
    axis: int | None = None
    extent: IExpr | None = None


@dataclass(frozen=True)
class If(Node):
    cond: IExpr
    then: Node
    orelse: Node | None = None


@dataclass(frozen=True)
class Stmt(Node):
    """One instance of ``comp``: binds its iterators (and the offsets of buffers allocated
    inside loops) from loop iterators, then executes the StmtInfo of ``comp``.

    A host/device copy is one Stmt for all its elements: ``box`` is then the first and
    the last element it copies (row-major order) and whether every element between them
    is one it copies (``exact``; when not, a target copying the whole range must not
    overwrite the others: it uploads the range first)."""

    comp: str
    bindings: tuple[tuple[str, IExpr], ...]
    leaf: int = -1  # which ISL leaf it came from (the compiler's bookkeeping)
    box: Box | None = None


@dataclass(frozen=True)
class Box:
    first: tuple[IExpr, ...]
    last: tuple[IExpr, ...]
    exact: bool


@dataclass(frozen=True)
class Alloc(Node):
    """Allocate ``buffer`` (its sizes are in the Program's BufferDecl) around ``body``."""

    buffer: str
    body: Node


@dataclass(frozen=True)
class BufferDecl:
    """``role``: 'input' / 'output' / 'inout' (kernel arguments; an inout one is read and
    written in place and must be passed by the caller) or 'temporary' (allocated by the
    kernel, at function entry if ``local`` is False, else by an Alloc node).

    ``memory``: 'host'; 'device' (a temporary only the device uses); 'both' (an argument
    the device uses: the caller's array and a device copy, with host/device copies
    between them); or a space it was tagged with: 'gpu_global', 'gpu_shared',
    'gpu_local', 'gpu_constant'."""

    name: str
    dtype: DType
    sizes: tuple[IExpr, ...]
    role: str
    local: bool = False
    fully_written: bool = True  # outputs only: False if some elements are never written
    memory: str = "host"
    # on-chip layout (the fpga target): (dim, factor, kind) per buffer.partition command,
    # and whether the buffer is a FIFO between its producer and its consumer (stream())
    partition: tuple[tuple[int, int, str], ...] = ()
    stream: bool = False
    depth: int = 0  # a FIFO's depth, sized from the schedule (0: the target's default)


@dataclass(frozen=True)
class Requirement:
    """A condition on the parameters the kernel checks before it runs: for the parameter
    values where ``violated`` (a 0/1 index expression over ``p_<param>``) holds, what
    ``message`` says happens (a write or a read outside ``buffer``), so the call is
    refused, naming the buffer, the index and its shape then. Halide checks its buffers'
    bounds at call time the same way: the program compiles for the values where it is
    valid."""

    buffer: str
    message: str
    violated: IExpr


@dataclass(frozen=True)
class Program:
    """A lowered function, ready for a backend."""

    name: str
    params: tuple[str, ...]
    buffers: tuple[BufferDecl, ...]
    body: Node
    stmts: dict[str, StmtInfo] = field(default_factory=dict)
    # parameter -> (min, max) assumed by the compiler; the runtime checks them
    param_bounds: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    # for a distributed target: windows, exchanges and tags for its number of ranks
    distribution: Distribution | None = None
    requirements: tuple[Requirement, ...] = ()  # checked per call (target/kernel.py)
    # inlined computations kept as functions, callees before callers (FnCall nodes)
    functions: tuple[InlineFunction, ...] = ()

    @property
    def arguments(self) -> tuple[BufferDecl, ...]:
        return tuple(b for b in self.buffers if b.role in ("input", "output", "inout"))


@dataclass(frozen=True)
class Signature:
    """What a caller needs to call a built kernel safely: the entry symbol, the params
    (with the bounds the compiler assumed) and the argument buffers with their sizes. It
    travels in the wire format's EntryPoint, so a kernel built remotely is checked exactly
    like one built here."""

    name: str
    symbol: str
    params: tuple[str, ...]
    arguments: tuple[BufferDecl, ...]
    param_bounds: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    requirements: tuple[Requirement, ...] = ()

    @staticmethod
    def of(program: Program) -> Signature:
        return Signature(program.name, f"me_{program.name}", program.params,
                         program.arguments, dict(program.param_bounds),
                         program.requirements)


def walk_loops(node: Node, loops: tuple[For, ...] = ()
               ) -> Iterator[tuple[Node, tuple[For, ...]]]:
    """Every node of a loop AST, outermost first, with the loops around it (the one
    traversal the passes and the targets share)."""
    yield node, loops
    if isinstance(node, For):
        yield from walk_loops(node.body, (*loops, node))
    elif isinstance(node, Block):
        for child in node.body:
            yield from walk_loops(child, loops)
    elif isinstance(node, If):
        yield from walk_loops(node.then, loops)
        if node.orelse is not None:
            yield from walk_loops(node.orelse, loops)
    elif isinstance(node, Alloc):
        yield from walk_loops(node.body, loops)


def walk_nodes(node: Node, loops: tuple[str, ...] = ()
               ) -> Iterator[tuple[Node, tuple[str, ...]]]:
    """:func:`walk_loops` with the loops' user-visible names (after ``loops``)."""
    for n, fors in walk_loops(node):
        yield n, (*loops, *(f.name or f.var for f in fors))


def statements(node: Node) -> list[Stmt]:
    """The statements under ``node``, in program order."""
    return [n for n, _ in walk_nodes(node) if isinstance(n, Stmt)]

