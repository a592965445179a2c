"""The embedded Python API (Layer I) and the scheduling language's entry points.

``with me.Function("blur") as f:`` opens a scope; Params, Vars, Inputs, Buffers and
Computations created inside register themselves with ``f``. The scope is held in a
``contextvars.ContextVar`` so that two threads building two functions do not see each other,
and nothing outlives the ``with`` block: there is no module-level registry.
"""

from __future__ import annotations

import contextvars
import keyword
import re
from collections.abc import Sequence
from typing import Any

from . import commands as cmd
from . import types as t
from .errors import DefinitionError, quoted
from .expr import Access, Expr, as_index_tuple, wrap
from .types import DType

_CURRENT: contextvars.ContextVar[Function | None] = contextvars.ContextVar(
    "middleend_function", default=None
)

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_C_RESERVED = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while bool main errno NULL
    min max floord abs""".split()
)

INPUT, OUTPUT, TEMPORARY, INOUT = "input", "output", "temporary", "inout"


def check_name(name: str, what: str) -> str:
    """Names reach generated C: they must be plain identifiers, not C keywords, and must
    not start with '_' (reserved for compiler-made names)."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise DefinitionError(
            f"invalid {what} name {quoted(name)}: use a letter followed by letters, digits or '_' "
            "(at most 64 characters)"
        )
    if name in _C_RESERVED or keyword.iskeyword(name) or name.startswith("me_"):
        raise DefinitionError(f"{what} name {quoted(name)} is reserved")
    return name


def current_function(what: str) -> Function:
    f = _CURRENT.get()
    if f is None:
        raise DefinitionError(f"{what} must be created inside `with me.Function(...)`")
    return f


def dim_name(d: Any) -> str:
    """A loop level given as a Var or a name (checked like every other name, since loop
    names reach the loop AST and the generated code's comments)."""
    if isinstance(d, Var):
        return d.name
    if isinstance(d, str):
        return check_name(d, "loop")
    raise DefinitionError(f"a loop level must be a me.Var or a name, not {d!r}")


class Param(Expr):
    """A symbolic integer constant (a parameter of the generated kernel). ``min``/``max``
    are assumptions the compiler may use (e.g. ``min=1`` makes ``x[0]`` of an N-element
    input a valid read); the kernel checks them on every call."""

    __slots__ = ("name", "fn", "min", "max")

    def __init__(self, name: str, min: int | None = None, max: int | None = None) -> None:
        self.fn = current_function("me.Param")
        self.name = check_name(name, "parameter")
        for v in (min, max):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise DefinitionError(f"parameter {name!r}: bounds must be ints, got {v!r}")
        if min is not None and max is not None and min > max:
            raise DefinitionError(f"parameter {name!r}: min {min} > max {max}")
        self.min, self.max = min, max
        self.fn._register("params", self)

    @property
    def dtype(self) -> DType:
        return t.int32


class Var(Expr):
    """An iterator ``lo <= v < hi``; bounds may use params and outer Vars. A Var without
    bounds only names a loop that a scheduling command creates."""

    __slots__ = ("name", "lo", "hi")

    def __init__(self, name: str, lo: Any = None, hi: Any = None) -> None:
        self.name = check_name(name, "iterator")
        if (lo is None) != (hi is None):
            raise DefinitionError(f"Var {name!r}: give both bounds or neither")
        self.lo = None if lo is None else wrap(lo)
        self.hi = None if hi is None else wrap(hi)

    @property
    def dtype(self) -> DType:
        return t.int32


class _Indexable:
    """Something that can be read with ``x[i, j]``: an Input, a Buffer or a Computation."""

    name: str
    dtype: DType

    def __getitem__(self, idx: Any) -> Expr:
        return Access(self, as_index_tuple(idx))


class Buffer(_Indexable):
    """A Layer III buffer. Reading ``buf[i, j]`` reads its current content (memory
    semantics, resolved by exact dataflow), unlike ``comp[i, j]`` which names a value."""

    def __init__(self, name: str, sizes: Sequence[Any], dtype: DType,
                 kind: str = TEMPORARY) -> None:
        self.fn = current_function("me.Buffer")
        self.name = check_name(name, "buffer")
        if kind not in (INPUT, OUTPUT, TEMPORARY, INOUT):
            raise DefinitionError(f"buffer {name!r}: kind must be input, output, inout or "
                                  "temporary")
        self.sizes = tuple(wrap(s) for s in sizes)
        self.dtype = dtype
        self.kind = kind
        self.fn._register("buffers", self)

    def __repr__(self) -> str:
        return f"Buffer({self.name})"


class Input(Buffer):
    """An input array of the kernel (a buffer of kind input)."""

    def __init__(self, name: str, sizes: Sequence[Any], dtype: DType) -> None:
        super().__init__(name, sizes, dtype, INPUT)


class Computation(_Indexable):
    """A Layer I computation: a domain (its Vars, an optional predicate) and an expression.
    The scheduling methods record commands; nothing is applied until compile time."""

    def __init__(self, name: str, iterators: Sequence[Var], expr: Any = None,
                 predicate: Any = None, dtype: DType | None = None,
                 domain: str | None = None, order: str | None = None) -> None:
        """``domain`` (ISL set text such as ``"[N] -> { S[i, j] : 0 <= j < i < N }"``)
        replaces the iterators' bounds; the wire format carries domains this way.

        ``order`` (ISL map text such as ``"{ S[t, i] -> [0, t, 1, i, 0] }"``) is this
        computation's place in a memory-based source program's sequential order (a Julia
        loop nest): memory reads then see the last write before them *in that order*
        instead of declaration order. Give it for every computation or for none."""
        self.fn = current_function("me.Computation")
        self.name = check_name(name, "computation")
        self.vars: tuple[Var, ...] = tuple(iterators)
        if domain is not None and not isinstance(domain, str):
            raise DefinitionError(f"computation {name!r}: domain must be ISL set text")
        self.domain = domain
        if order is not None and not isinstance(order, str):
            raise DefinitionError(f"computation {name!r}: order must be ISL map text")
        self.order = order
        for v in self.vars:
            if not isinstance(v, Var) or (v.lo is None and domain is None):
                raise DefinitionError(
                    f"computation {name!r}: iterator {v!r} needs bounds (me.Var(name, lo, hi))"
                )
        if len({v.name for v in self.vars}) != len(self.vars):
            raise DefinitionError(f"computation {name!r}: repeated iterator names")
        self.predicate = None if predicate is None else wrap(predicate)
        self._dtype = dtype
        self.expr: Expr | None = None
        self.fn._register("computations", self)
        if expr is not None:
            self.set_expression(expr)

    @property
    def dtype(self) -> DType:
        if self._dtype is not None:
            return self._dtype
        if self.expr is not None:
            return self.expr.dtype
        raise DefinitionError(f"computation {self.name!r} has neither an expression nor a type")

    def set_expression(self, e: Any) -> None:
        ex = wrap(e, self._dtype)
        if self._dtype is not None and ex.dtype != self._dtype:
            from .expr import Cast

            ex = Cast(self._dtype, ex)
        self.expr = ex

    def __repr__(self) -> str:
        return f"Computation({self.name})"

    # -- the scheduling language (Layer II) ------------------------------------------------
    def _log(self, c: cmd.Command) -> Computation:
        self.fn.commands.add(c)
        return self

    def interchange(self, a: Any, b: Any) -> Computation:
        return self._log(cmd.Interchange(self.name, dim_name(a), dim_name(b)))

    def split(self, dim: Any, factor: int, outer: Any, inner: Any) -> Computation:
        return self._log(cmd.Split(self.name, dim_name(dim), _pos(factor, "split"),
                                   dim_name(outer), dim_name(inner)))

    def tile(self, *args: Any) -> Computation:
        """``tile(i, j, t1, t2, i0, j0, i1, j1)`` or the 3-D form with 12 arguments."""
        if len(args) == 8:
            n = 2
        elif len(args) == 12:
            n = 3
        else:
            raise DefinitionError(f"{self.name}.tile takes 8 (2-D) or 12 (3-D) arguments")
        dims = tuple(dim_name(a) for a in args[:n])
        sizes = tuple(_pos(s, "tile") for s in args[n:2 * n])
        outers = tuple(dim_name(a) for a in args[2 * n:3 * n])
        inners = tuple(dim_name(a) for a in args[3 * n:4 * n])
        return self._log(cmd.Tile(self.name, dims, sizes, outers, inners))

    def shift(self, dim: Any, amount: int) -> Computation:
        return self._log(cmd.Shift(self.name, dim_name(dim), int(amount)))

    def skew(self, a: Any, b: Any, factor: int, new_a: Any = None,
             new_b: Any = None) -> Computation:
        na = dim_name(a if new_a is None else new_a)
        nb = dim_name(b if new_b is None else new_b)
        return self._log(cmd.Skew(self.name, dim_name(a), dim_name(b), int(factor), na, nb))

    def reverse(self, dim: Any) -> Computation:
        return self._log(cmd.Reverse(self.name, dim_name(dim)))

    def after(self, other: Computation, level: Any) -> Computation:
        return self._log(cmd.After(self.name, other.name, _level(level)))

    def before(self, other: Computation, level: Any) -> Computation:
        """``a.before(b, i)`` is ``b.after(a, i)`` (``i`` a loop of ``b``)."""
        return self._log(cmd.Before(self.name, other.name, _level(level)))

    def then(self, other: Computation, level: Any) -> Computation:
        """``a.then(b, i)`` is ``b.after(a, i)`` and returns ``b`` for chaining."""
        self._log(cmd.Then(self.name, other.name, _level(level)))
        return other

    def compute_at(self, consumer: Computation, level: Any) -> Computation:
        return self._log(cmd.ComputeAt(self.name, consumer.name, dim_name(level)))

    def inline(self) -> Computation:
        return self._log(cmd.Inline(self.name))

    def unroll(self, dim: Any, factor: int | None = None, outer: Any = None,
               inner: Any = None) -> Computation:
        d = dim_name(dim)
        return self._log(cmd.Unroll(
            self.name, d, None if factor is None else _pos(factor, "unroll"),
            dim_name(outer) if outer is not None else f"{d}_uo",
            dim_name(inner) if inner is not None else f"{d}_ui"))

    def vectorize(self, dim: Any, factor: int, outer: Any = None,
                  inner: Any = None) -> Computation:
        d = dim_name(dim)
        return self._log(cmd.Vectorize(
            self.name, d, _pos(factor, "vectorize"),
            dim_name(outer) if outer is not None else f"{d}_vo",
            dim_name(inner) if inner is not None else f"{d}_vi"))

    def parallelize(self, dim: Any) -> Computation:
        return self._log(cmd.Parallelize(self.name, dim_name(dim)))

    parallel = parallelize

    def gpu(self, *dims: Any) -> Computation:
        """Tag loops as GPU blocks (first half) and threads (second half), as in the paper."""
        names = tuple(dim_name(d) for d in dims)
        if not names or len(names) % 2:
            raise DefinitionError(f"{self.name}.gpu needs as many block loops as thread loops")
        h = len(names) // 2
        return self._log(cmd.Gpu(self.name, names[:h], names[h:]))

    def tile_gpu(self, i: Any, j: Any, t1: int, t2: int, i0: Any, j0: Any, i1: Any,
                 j1: Any) -> Computation:
        return self._log(cmd.TileGpu(self.name, dim_name(i), dim_name(j), _pos(t1, "tile"),
                                     _pos(t2, "tile"), dim_name(i0), dim_name(j0),
                                     dim_name(i1), dim_name(j1)))

    def distribute(self, dim: Any) -> Computation:
        return self._log(cmd.Distribute(self.name, dim_name(dim)))

    def pipeline(self, dim: Any) -> Computation:
        return self._log(cmd.Pipeline(self.name, dim_name(dim)))

    def set_schedule(self, isl_map: str) -> Computation:
        """Expert escape hatch: an ISL map from this computation's domain to its loops,
        e.g. ``"{bx[i,j,c] -> [j, i, c]}"``; it replaces the transformations so far."""
        if not isinstance(isl_map, str):
            raise DefinitionError(f"{self.name}.set_schedule takes ISL map text")
        return self._log(cmd.SetSchedule(self.name, isl_map))

    # -- data mapping (Layer III) ------------------------------------------------------
    def store_in(self, buffer: Buffer | Computation, indices: Sequence[Any] | None = None
                 ) -> Computation:
        """Store in ``buffer`` at ``indices``; a Computation as target means that
        computation's buffer. Affine indices give an exact access relation. Data-dependent
        ones (``[clamp(im[y, x], 0, 255)]``, a scatter ``[perm[i]]``) make a *may* write
        of any element of the buffer, bounds-checked at run time; such a computation cannot
        be read by value (read ``target.memory[...]`` instead) and the buffer is sized by
        its affine writers or its declaration."""
        idx = None if indices is None else tuple(wrap(i) for i in indices)
        return self._log(cmd.StoreIn(self.name, buffer.name, idx))

    def storage_fold(self, dim: int, factor: int) -> Computation:
        return self._log(cmd.StorageFold(self.name, int(dim), _pos(factor, "storage_fold")))

    def allocate_at(self, consumer: Computation, level: Any) -> Computation:
        return self._log(cmd.AllocateAt(self.name, consumer.name, _level(level)))

    @property
    def memory(self) -> _BufferOf:
        """The buffer this computation is stored in, read with memory semantics:
        ``hist.memory[idx]`` is the element's *current* content (whatever the last write
        before the reading instance left there, found by dataflow), whereas ``hist[b]`` is
        the value ``hist`` computed at instance ``b``. Updates read their buffer this way,
        and it is the only way to read elements written at data-dependent indices."""
        return _BufferOf(self)

    def update(self, iterators: Sequence[Var], body: Any, name: str | None = None,
               at: Sequence[Any] | None = None) -> Computation:
        """Concise ``acc += ...`` style update: a new computation over ``iterators`` stored
        in this computation's buffer whose value is ``body(prev)``, ``prev`` being the
        buffer's current element (a callable), or ``prev + body`` when ``body`` is an
        expression. The element is ``at`` (default: this computation's iterators), which
        may be data-dependent, e.g. a histogram ``hist.update([ry, rx], 1, at=[idx])``."""
        buf_idx = tuple(self.vars) if at is None else tuple(wrap(i) for i in at)
        upd = Computation(name or f"{self.name}_update{self.fn._next_update(self.name)}",
                          iterators, dtype=self.dtype)
        prev = _BufferOf(self)[buf_idx]
        upd.set_expression(body(prev) if callable(body) else prev + body)
        upd.store_in(self, buf_idx)
        return upd


class _BufferOf(_Indexable):
    """The buffer a computation is stored in, before Layer III decides what it is."""

    def __init__(self, comp: Computation) -> None:
        self.comp = comp
        self.name = comp.name
        self.dtype = comp.dtype


def _pos(v: Any, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise DefinitionError(f"{what} factor must be a positive int, got {v!r}")
    return v


def _level(level: Any) -> str:
    if isinstance(level, str) and level == cmd.ROOT:
        return cmd.ROOT
    return dim_name(level)


class Function:
    """A compilation unit: Layer I objects plus the ordered command log."""

    def __init__(self, name: str) -> None:
        self.name = check_name(name, "function")
        self.params: list[Param] = []
        self.buffers: list[Buffer] = []
        self.computations: list[Computation] = []
        self.commands = cmd.CommandLog()
        self._token: contextvars.Token[Function | None] | None = None
        self._updates: dict[str, int] = {}

    def __enter__(self) -> Function:
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None

    def _register(self, kind: str, obj: Any) -> None:
        names = {o.name for o in (*self.params, *self.buffers, *self.computations)}
        if obj.name in names:
            raise DefinitionError(f"function {self.name!r}: name {obj.name!r} defined twice")
        getattr(self, kind).append(obj)

    def _next_update(self, base: str) -> int:
        self._updates[base] = self._updates.get(base, 0) + 1
        return self._updates[base]

    def computation(self, name: str) -> Computation:
        for c in self.computations:
            if c.name == name:
                return c
        raise DefinitionError(f"function {self.name!r} has no computation {name!r}")

    def lower(self, outputs: Sequence[Any] | None = None, check_legality: bool = True) -> Any:
        """Lower through the four layers; returns the :class:`~middleend.lowering.Lowered`."""
        from .lowering import lower

        return lower(self, outputs=outputs, check_legality=check_legality)

    def layers(self, outputs: Sequence[Any] | None = None) -> str:
        """Layers I-IV in the ISL notation of the papers."""
        return self.lower(outputs=outputs).layers_text()

    def compile(self, target: str = "cpu", outputs: Sequence[Any] | None = None,
                check_legality: bool = True, service: Any = None,
                fp_contract: bool = False) -> Any:
        """Lower, check, generate and build; returns a callable kernel.

        The Function travels as a wire-format request to ``service``: None for the embedded
        in-process middle-end, a client from ``me.connect(...)``, or a ``"host:port"``.
        ``check_legality=False`` is the documented expert switch that skips the dependence
        check (the generated code may then be wrong); ``fp_contract=True`` allows fused
        multiply-add (float results may then differ from numpy's in the last bits)."""
        from .service.client import compile_via

        return compile_via(self, service, target=target, outputs=outputs,
                           check_legality=check_legality, fp_contract=fp_contract)
