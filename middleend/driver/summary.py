"""What a scheduling policy needs to know of a program, as plain numbers: each statement's
loops with their trip counts, and each of its memory accesses as the elements it moves by
per step of each loop.

Why a summary and not the layers themselves: an automatic scheduler (``middleend.autosched``)
ranks thousands of candidate loop nests in milliseconds, so its cost model works on ints
and floats, not on ISL objects. The numbers come from ISL here, exactly where they can:
the trip counts from each domain with the parameters fixed at their estimates, the strides
from the affine forms of the Layer III access relations (a floor division ``fld(i, 1000)``
moves by 1/1000 per step of ``i``; a data-dependent index is "unknown": a new cache line
per step). The policy never sees a pass, and everything it proposes goes through the same
legality check as a user's commands (:func:`middleend.driver.lowering.check_commands`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from ..ir import commands as cmd
from ..ir import expr as ex
from ..ir.errors import DefinitionError
from ..ir.expr import Binary, Call, Expr, Unary
from ..ir.function import Function
from ..passes.dataflow import logical_access, read_buffer
from ..passes.layer1 import build_layer1
from .lowering import DEFAULT_MAX_OPS, Analysis, _analyse, _new_ctx

# the trip count assumed for a loop whose bound is a parameter without an estimate
DEFAULT_ESTIMATE = 1024
# a stride standing for "a new cache line every step" (a data-dependent index)
UNKNOWN_STRIDE = 1 << 20


@dataclass(frozen=True)
class Access:
    """One access of a statement: ``strides[k]`` is how many elements of ``buffer`` it
    moves by per step of the statement's loop ``k`` (0: the same element; 1: the next
    one), ``spans[d][k]`` the same per buffer dimension ``d`` (for footprints)."""

    buffer: str
    write: bool
    strides: tuple[float, ...]
    spans: tuple[tuple[float, ...], ...]
    elem_bytes: int
    dim_sizes: tuple[int, ...]  # the buffer's sizes under the estimates (row-major)
    offsets: tuple[float, ...] = ()  # per buffer dimension, the index's constant term
    # (loop k, period c, elements per step): an index ``mod(v, c)`` along loop k, which
    # ``strides`` counts as still (it comes back every c steps) but which moves by the
    # given stride inside an aligned block of c (atax's ``yq[mod(i, 8), j]``)
    wraps: tuple[tuple[int, int, float], ...] = ()
    # P > 0: the buffer is stored in panels (a copy_at with panel=P): dim 0 is the panel,
    # the last dim's index divided by P (its spans all 0: :func:`cost._lines` counts the
    # panels a box of the last dim's index crosses), the last dim its index modulo P
    panel: int = 0
    floating: bool = False  # the buffer's elements are floats (upsampled reads: cost.py)
    # the loops along which an index goes through a floor division (``x / 2``, or
    # ``2 (x / 2)`` where a downsampling reads an upsampling): the elements it moves by
    # differ from step to step, ``strides`` holding their average (1 for ``2 (x / 2)``,
    # which no vector load reads); a wrap (above) is not among them
    uneven: frozenset[int] = frozenset()

    def wrap(self, k: int) -> tuple[int, float] | None:
        """The period and the stride inside it of this access along loop ``k``."""
        return next(((c, s) for kk, c, s in self.wraps if kk == k), None)


class SelfDeps:
    """The distances ``x - y`` between an instance ``x`` of a statement and each earlier
    instance ``y`` of itself whose value or memory it reads (the exact dataflow's
    sources), with the parameters at their estimates: which loop orders keep every one of
    them lexicographically positive, and which loops carry none. Exact for these flow
    dependences; the legality check also sees the others (reads of other statements, the
    memory a later write must not clobber), so this only steers the search."""

    def __init__(self, deltas: isl.Set | None, n: int) -> None:
        self.deltas, self.n = deltas, n
        self._memo: dict[tuple[Any, ...], bool] = {}

    def _some(self, zero: Sequence[int], test: tuple[int, str]) -> bool:
        """Whether some distance is 0 along ``zero`` and ``test[1]`` ("<0", "!=0") along
        loop ``test[0]``."""
        key = (tuple(sorted(zero)), test)
        got = self._memo.get(key)
        if got is None:
            assert self.deltas is not None
            names = [f"d{k}" for k in range(self.n)]
            cons = [f"d{k} = 0" for k in sorted(zero)]
            k, op = test
            cons.append(f"d{k} < 0" if op == "<0" else f"(d{k} < 0 or d{k} > 0)")
            cond = isl.Set(f"{{ [{', '.join(names)}] : {' and '.join(cons)} }}",
                           context=self.deltas.get_ctx())
            got = not self.deltas.intersect(cond).is_empty()
            self._memo[key] = got
        return got

    def keeps_order(self, order: Sequence[int]) -> bool:
        """Whether the loops in ``order`` (statement dimensions, outermost first; the
        others inside, in their own order) keep every distance positive."""
        if self.deltas is None:
            return True
        full = list(order) + [k for k in range(self.n) if k not in order]
        return not any(self._some(full[:p], (full[p], "<0")) for p in range(self.n))

    def parallel(self, outer: Sequence[int], k: int) -> bool:
        """Whether loop ``k`` carries no distance once the loops ``outer`` are fixed."""
        return self.deltas is None or not self._some(outer, (k, "!=0"))


@dataclass(frozen=True)
class Stmt:
    """A statement (a computation that is not inlined) and its loops, outermost first."""

    name: str
    vars: tuple[str, ...]
    extents: tuple[int, ...]  # trip counts under the estimates (the bounding box)
    lows: tuple[int | None, ...]  # constant lower bounds (None: a parametric one)
    accesses: tuple[Access, ...]
    ops: int  # arithmetic operations per instance
    # loops the stored element does not move with while the statement reads what it
    # writes: an accumulation along them (their order matters; legality decides)
    reductions: frozenset[str]
    points: int  # instances under the estimates (of the bounding box)
    deps: SelfDeps = field(default_factory=lambda: SelfDeps(None, 0), compare=False,
                           repr=False)
    box: bool = True  # the domain (under the estimates) is its bounding box
    calls: int = 0  # of those operations, calls of a math library function (:data:`LIBM`)

    def period(self, v: str) -> int:
        """The period along ``v`` of a reduction whose stored element cycles (``yq[mod(i,
        8), j] += ...``: 8), inside which ``v`` carries no sum; 0 if none."""
        if v not in self.reductions:
            return 0
        w = self.accesses[0].wrap(self.vars.index(v))
        return w[0] if w else 0


@dataclass(frozen=True)
class Summary:
    stmts: tuple[Stmt, ...]  # in declaration order
    estimates: Mapping[str, int]

    def stmt(self, name: str) -> Stmt:
        return next(s for s in self.stmts if s.name == name)


def estimates_for(fn: Function, given: Mapping[str, int] | None) -> dict[str, int]:
    """Each parameter's value for the cost model: the given one, else its declared
    ``max`` when that is small, else :data:`DEFAULT_ESTIMATE` (at least its ``min``)."""
    given = dict(given or {})
    out: dict[str, int] = {}
    for p in fn.params:
        if p.name in given:
            v = given.pop(p.name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise DefinitionError(f"estimate of parameter {p.name!r}: an int, got {v!r}")
            out[p.name] = v
            continue
        v = DEFAULT_ESTIMATE
        if p.max is not None:
            v = min(v, p.max)
        if p.min is not None:
            v = max(v, p.min)
        out[p.name] = v
    if given:
        raise DefinitionError(f"estimates given for unknown parameters: {sorted(given)} "
                              f"(function {fn.name!r} has {[p.name for p in fn.params]})")
    return out


def summarize(fn: Function, estimates: Mapping[str, int] | None = None,
              outputs: Sequence[Any] | None = None,
              commands: Sequence[cmd.Command] | None = None,
              max_isl_ops: int = DEFAULT_MAX_OPS) -> Summary:
    """The summary of ``fn`` under ``commands`` (its own command log by default; only the
    data-mapping commands matter: store_in decides which buffer a statement writes)."""
    est = estimates_for(fn, estimates)
    a = _analyse(fn, list(fn.commands.items if commands is None else commands), outputs,
                 _new_ctx(max_isl_ops))
    return _summary(a, est)


def domain_box(fn: Function, name: str, commands: Sequence[cmd.Command],
               estimates: Mapping[str, int] | None = None,
               max_isl_ops: int = DEFAULT_MAX_OPS) -> list[tuple[int, int]] | None:
    """The bounding box ``[(lo, hi), ...]`` (inclusive) of computation ``name``'s domain
    under ``commands`` with the parameters at their estimates; None where it has no
    domain there (inlined into its readers) or an unbounded one."""
    est = estimates_for(fn, estimates)
    l1 = build_layer1(fn, _new_ctx(max_isl_ops), list(commands))
    c = l1.comps.get(name)
    if c is None:
        return None
    dom = _fix(c.domain, est)
    if dom.is_empty():
        return None
    out = []
    for k in range(len(c.vars)):
        lo, hi = dom.dim_min(k).min_val(), dom.dim_max(k).max_val()
        if not (lo.is_int() and hi.is_int()):
            return None
        out.append((int(lo.to_python()), int(hi.to_python())))
    return out


def _fix(s: isl.Set | isl.Map, est: Mapping[str, int]) -> Any:
    for name, v in est.items():
        k = s.find_dim_by_name(isl.dim_type.param, name)
        if k >= 0:
            s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), v))
    return s


def _const(pa: isl.PwAff, est: Mapping[str, int], what: str) -> int:
    """The constant value of ``pa`` with the parameters fixed (its maximum, if it is still
    piecewise), for trip counts and buffer sizes."""
    dom = _fix(pa.domain(), est)
    if dom.is_empty():
        return 0
    v = pa.intersect_domain(dom).max_val()
    if not v.is_int():
        raise DefinitionError(f"{what}: no finite value under the estimates {dict(est)}")
    return int(v.to_python())


def _affine_rows(m: isl.Map, n_in: int
                 ) -> tuple[list[list[float]], list[dict[int, tuple[int, float]]],
                            frozenset[int]] | None:
    """Per output dimension of ``m`` (an access), the coefficient of each input dimension
    in its affine form (a floor division counts its numerator's coefficients over its
    denominator), then its constant term; its wraps (:func:`_wraps`); and the input
    dimensions along which it is uneven (:attr:`Access.uneven`); None when an index is
    not affine."""
    try:
        pma = m.as_pw_multi_aff()
    except isl.Error:
        return None
    rows: list[list[float]] = []
    wraps: list[dict[int, tuple[int, float]]] = []
    uneven: set[int] = set()
    for d in range(pma.dim(isl.dim_type.out)):
        pieces = pma.get_pw_aff(d).get_pieces()
        if not pieces:
            return None
        # a clamped index (a boundary condition: min(max(x - 1, 0), N - 1)) is x - 1
        # inside and constant at the edges: the moving piece is the one that matters
        cands = [(_coefficients(aff, n_in), aff) for _, aff in pieces]
        row, aff = max(cands, key=lambda r: sum(abs(c) for c in r[0]))
        rows.append(row + [_num(aff.get_constant_val())])
        wraps.append(_wraps(aff, n_in, row))
        uneven |= _uneven(aff, n_in) - set(wraps[-1])
    return rows, wraps, frozenset(uneven)


def _uneven(aff: isl.Aff, n_in: int) -> set[int]:
    """The input dimensions that a floor division of ``aff`` (one with a coefficient in
    it) depends on."""
    out: set[int] = set()
    for q in range(aff.dim(isl.dim_type.div)):
        if not _num(aff.get_coefficient_val(isl.dim_type.div, q)):
            continue
        div = aff.get_div(q)
        out |= {k for k in range(n_in)
                if _num(div.get_coefficient_val(isl.dim_type.in_, k))}
        out |= _uneven(div, n_in)
    return out


def _wraps(aff: isl.Aff, n_in: int, row: Sequence[float]) -> dict[int, tuple[int, float]]:
    """The input dimensions ``k`` along which ``aff`` is ``mod(x_k, c)``-like: a direct
    coefficient that a floor division's cancels (``x - 8 floor(x / 8)``), as loop k ->
    (c, the direct coefficient)."""
    out: dict[int, tuple[int, float]] = {}
    for k in range(n_in):
        direct = _num(aff.get_coefficient_val(isl.dim_type.in_, k))
        if not direct or row[k]:
            continue
        for q in range(aff.dim(isl.dim_type.div)):
            inner = _num(aff.get_div(q).get_coefficient_val(isl.dim_type.in_, k))
            if 0 < abs(inner) < 1 and abs(round(1 / abs(inner)) * abs(inner) - 1) < 1e-9:
                out[k] = (round(1 / abs(inner)), direct)
                break
    return out


def _num(v: isl.Val) -> float:
    return v.get_num_si() / v.get_den_val().get_num_si()


def _coefficients(aff: isl.Aff, n_in: int) -> list[float]:
    row = [_num(aff.get_coefficient_val(isl.dim_type.in_, k)) for k in range(n_in)]
    for q in range(aff.dim(isl.dim_type.div)):
        c = _num(aff.get_coefficient_val(isl.dim_type.div, q))
        if c:
            div = aff.get_div(q)
            inner = _coefficients(div, n_in)
            row = [x + c * y for x, y in zip(row, inner, strict=True)]
    return row


def value_nodes(e: Expr) -> list[Expr]:
    """The nodes of ``e`` that compute values: not those of the accesses' indices (index
    arithmetic, which gcc strength-reduces), whatever the type (a uint16 pipeline's work
    is integer arithmetic)."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        n = stack.pop()
        out.append(n)
        if not isinstance(n, ex.Access):
            stack.extend(n.children())
    return out


# the intrinsics the C targets call from the math library, element by element (gcc
# vectorizes none of them without -ffast-math): an ``exp`` is some 20 cycles per value
LIBM = frozenset({"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                  "tanh", "exp", "log", "pow", "erf", "asinh", "acosh", "atanh"})


def _ops(e: Expr | None, funcs: Mapping[str, Any] | None = None,
         memo: dict[str, int] | None = None, only: frozenset[str] | None = None) -> int:
    """Arithmetic on values (:func:`value_nodes`), a node per operation, with the work of
    the inlined computations it calls (``funcs``: Layer I's called functions) at every
    call; ``only``: count just the calls of these intrinsics (``memo`` per ``only``)."""
    if e is None:
        return 0
    memo = {} if memo is None else memo
    total = 0
    for n in value_nodes(e):
        if isinstance(n, (Binary, Unary, Call)):
            total += 1 if only is None or isinstance(n, Call) and n.fn in only else 0
        elif funcs and isinstance(n, ex.Access) and getattr(n.target, "name", None) in funcs:
            name = n.target.name
            if name not in memo:
                memo[name] = 0  # a cycle (refused by inlining anyway) ends here
                memo[name] = _ops(funcs[name].expr, funcs, memo, only)
            total += memo[name]
    return total


def _summary(a: Analysis, est: Mapping[str, int]) -> Summary:
    l1, l3 = a.l1, a.l3
    sizes: dict[str, tuple[int, ...]] = {}
    for b in l3.buffers.values():
        sizes[b.name] = tuple(max(1, _const(s, est, f"buffer {b.name!r}")) for s in b.sizes)
    reads_by_comp: dict[str, list[Any]] = {}
    for r in a.exp.reads:
        reads_by_comp.setdefault(r.comp, []).append(r)
    stmts: list[Stmt] = []
    memo: dict[str, int] = {}
    calls_memo: dict[str, int] = {}  # the same, counting only LIBM calls
    for n in l1.declared:
        c = l1.comps.get(n)
        if c is None or n in a.l4.ops:
            continue
        nv = len(c.vars)
        dom = _fix(c.domain, est)
        if dom.is_empty():
            continue
        exts, lows = [], []
        for k in range(nv):
            lo = dom.dim_min(k).min_val()
            hi = dom.dim_max(k).max_val()
            exts.append(max(1, int(hi.to_python()) - int(lo.to_python()) + 1))
            cl = c.domain.dim_min(k)
            pieces = cl.get_pieces()
            lows.append(int(pieces[0][1].get_constant_val().to_python())
                        if len(pieces) == 1 and pieces[0][1].is_cst() else None)
        accs: list[Access] = []
        wbuf = l3.store[n]
        wacc = _access(l3.logical[n], wbuf, True, nv, sizes, l3)
        accs.append(wacc)
        for r in reads_by_comp.get(n, []):
            buf = read_buffer(l3, r)
            accs.append(_access(logical_access(l1, l3, r), buf, False, nv, sizes, l3))
        own = [x for x in accs[1:] if x.buffer == wbuf]
        # a floor division (``sp[fld(i, 1000), j]``) keeps the element for many steps:
        # a reduction along ``i`` too, for the model (the legality check is exact)
        red = frozenset(v for k, v in enumerate(c.vars)
                        if own and all(abs(row[k]) < 1 for row in wacc.spans))
        points = 1
        for e in exts:
            points *= e
        stmts.append(Stmt(n, tuple(c.vars), tuple(exts), tuple(lows), tuple(accs),
                          max(1, _ops(c.expr, l1.functions, memo)), red, points,
                          SelfDeps(_self_deltas(a, n, est), nv), bool(dom.is_box()),
                          _ops(c.expr, l1.functions, calls_memo, LIBM)))
    return Summary(tuple(stmts), dict(est))


def _self_deltas(a: Analysis, n: str, est: Mapping[str, int]) -> isl.Set | None:
    """The distances of ``n``'s dependences on itself (None: it has none), anonymous and
    with the parameters fixed, ready for :class:`SelfDeps`."""
    out: isl.Set | None = None
    for r in a.exp.reads:
        if r.comp != n or r.ref not in a.exp.sources:
            continue
        maps: list[isl.Map] = []
        a.exp.sources[r.ref].foreach_map(maps.append)
        for m in maps:
            if m.get_tuple_name(isl.dim_type.out) != n:
                continue
            d = _fix(m.reverse().deltas(), est)  # reader minus writer
            d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param))
            out = d if out is None else out.union(d)
    if out is None or out.is_empty():
        return None
    return isl.Set(str(out.coalesce()).replace(f"{n}[", "["))


def _access(m: isl.Map, buf: str, write: bool, nv: int,
            sizes: Mapping[str, tuple[int, ...]], l3: Any) -> Access:
    dims = sizes[buf]
    elem = max(1, l3.buffers[buf].dtype.bits // 8)
    got = _affine_rows(m, nv)
    bstrides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        bstrides[d] = bstrides[d + 1] * dims[d + 1]
    if got is None or len(got[0]) != len(dims):
        unknown = tuple(float(UNKNOWN_STRIDE) for _ in range(nv))
        return Access(buf, write, unknown, _partial_spans(m, nv, len(dims)), elem, dims)
    rows, wraps, uneven = got
    strides = tuple(sum(rows[d][k] * bstrides[d] for d in range(len(dims)))
                    for k in range(nv))
    wrapped = tuple((k, c, s * bstrides[d]) for d, w in enumerate(wraps)
                    for k, (c, s) in sorted(w.items()))
    return Access(buf, write, strides, tuple(tuple(r[:nv]) for r in rows), elem, dims,
                  tuple(r[nv] for r in rows), wrapped,
                  floating=l3.buffers[buf].dtype.is_float, uneven=uneven)


def _partial_spans(m: isl.Map, nv: int, ndims: int) -> tuple[tuple[float, ...], ...]:
    """The spans of an access whose index is not affine as a whole: a dimension whose own
    index is affine keeps its row (the local Laplacian's ``lPyramid[x, y, k(gray)]``
    still walks its planes along ``x`` and ``y``); a data-dependent one moves anywhere in
    its range at every step (:data:`UNKNOWN_STRIDE` along every loop, which
    :func:`..autosched.cost._lines` caps at the dimension's size). Its strides stay
    unknown: loading it is a gather whichever loop runs in vectors."""
    unknown = tuple(float(UNKNOWN_STRIDE) for _ in range(nv))
    rows: list[tuple[float, ...]] = []
    for d in range(ndims):
        one = m.project_out(isl.dim_type.out, d + 1, ndims - d - 1) \
            .project_out(isl.dim_type.out, 0, d)
        got = _affine_rows(one, nv) if one.is_single_valued() else None
        rows.append(tuple(got[0][0][:nv]) if got is not None else unknown)
    return tuple(rows)
