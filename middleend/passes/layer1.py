"""Layer I in ISL: each computation's iteration domain (exact, possibly non-rectangular and
parametric) and its reads as access relations. Inlining happens here, as a substitution of
Layer I expressions, before any analysis sees the program.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field

import islpy as isl

from ..ir import commands as cmd
from ..ir.affine import (
    AffineContext,
    NonAffine,
    access_relation,
    to_pw_aff,
    try_pw_aff,
    try_set,
)
from ..ir.errors import DefinitionError, quoted
from ..ir.expr import (
    Access,
    Binary,
    Expr,
    share_common,
    walk,
    walk_shared,
    wrap,
)
from ..ir.function import Buffer, Computation, Function, Param, Var, _BufferOf
from ..ir.islutil import out_of_index_range, quota_error
from . import empty, inlining
from .footprint import Footprints


@dataclass
class Read:
    """One read reference of a computation. ``kind`` is 'value' (a computation's instance)
    or 'memory' (a buffer's current content; ``target`` is then a buffer name, or a
    computation name whose buffer is meant when ``of_comp``). ``access`` is None when an
    index is not quasi-affine; ``bound`` is then the over-approximation the analyses use
    (exact along the affine indices, any element along the data-dependent ones).

    The relation is built in ISL on first use, from ``indices`` (each index's exact
    quasi-affine form, None for a data-dependent one) and ``domain``: reads of a kernel's
    inputs are needed by few passes (on the CPU only the bounds check, which works per
    index), and an inlined pipeline has thousands of distinct ones (Halide's interpolate
    app inlined over 3 levels: 1677), each a product of clamps whose pieces multiply."""

    ref: int
    comp: str
    kind: str
    target: str
    node: Access
    of_comp: bool
    # every occurrence of this reference in the computation's expressions (``node`` is the
    # first): occurrences with the same relation are one reference (see ``_reads``)
    nodes: list[Access]
    indices: tuple[isl.PwAff | None, ...]
    index_keys: tuple[str | None, ...]  # the indices' ISL text (None: data-dependent)
    domain: isl.Set  # the reading computation's domain
    ctx: AffineContext = field(repr=False)
    _relation: isl.Map | None = field(default=None, repr=False)

    @property
    def exact(self) -> bool:
        """Whether every index is quasi-affine (``access`` is then the exact relation)."""
        return all(pa is not None for pa in self.indices)

    @property
    def bound(self) -> isl.Map:
        if self._relation is None:
            m, _ = access_relation(list(self.indices), self.ctx, self.target)
            self._relation = m.intersect_domain(self.domain)
        return self._relation

    @property
    def access(self) -> isl.Map | None:
        return self.bound if self.exact else None


@dataclass
class Comp:
    """A Layer I computation in ISL form."""

    name: str
    vars: list[str]
    domain: isl.Set
    expr: Expr
    guard: Expr | None
    ctx: AffineContext
    reads: list[Read] = field(default_factory=list)
    source: Computation | None = None
    # the indices of its store_in (None: identity). They are Layer I expressions like the
    # body: data-dependent ones read memory, so their reads are reads of the computation.
    store_index: tuple[Expr, ...] | None = None


@dataclass
class Layer1:
    ctx: isl.Context
    params: list[str]
    param_space: isl.Space
    comps: dict[str, Comp]
    declared: list[str]
    inlined: list[str]
    buffers: dict[str, Buffer]
    context: isl.Set  # the parameter values assumed (Param min/max)
    # the same with a parameter's missing min/max taken from int32 (a Param is an int32):
    # the values over which index arithmetic must fit in 64 bits (see check_index_range)
    index_context: isl.Set | None = None
    # the inlined computations kept as called functions (see :mod:`.inlining`), by name:
    # their bodies (reads of inputs, of stages in whole buffers, calls) and domains; the
    # statements' reads through calls are in their ``reads`` (see ``_call_reads``)
    functions: dict[str, Comp] = field(default_factory=dict)
    # computations dropped for an empty domain (Function.allow_empty_domains, see
    # :mod:`.empty`), in declaration order, each with the buffer or computation its
    # values would be stored in (itself without store_in: Layer III keeps its buffer)
    dropped: dict[str, Comp] = field(default_factory=dict)
    dropped_into: dict[str, str] = field(default_factory=dict)

    def reads_of(self, consumer: str, producer: str) -> isl.Map | None:
        """All instances of ``producer`` that ``consumer`` reads by value, per instance."""
        c, p = self.comps[consumer], self.comps[producer]
        out: isl.Map | None = None
        for r in c.reads:
            if r.kind != "value" or r.target != producer:
                continue
            if r.access is not None:
                m = r.access.intersect_domain(c.domain)
            else:
                assert r.bound is not None
                m = r.bound.intersect_domain(c.domain).intersect_range(p.domain)
            out = m if out is None else out.union(m)
        return out

    def text(self) -> str:
        from ..ir.printing import expr_str

        lines = []
        for n in self.declared:
            c = self.comps[n]
            g = f" if {expr_str(c.guard)}" if c.guard is not None else ""
            lines.append(f"{c.domain} : {expr_str(c.expr)}{g}")
        for d in self.dropped.values():
            lines.append(f"(dropped: nothing to compute) {d.domain}")
        for n in self.inlined:
            f = self.functions.get(n)
            lines.append(f"(inlined) {n}" if f is None else
                         f"(inlined, a function) {f.domain} : {expr_str(f.expr)}")
        return "\n".join(lines)


def param_space(ctx: isl.Context, params: list[str]) -> isl.Space:
    sp = isl.Space.params_alloc(ctx, len(params))
    for k, p in enumerate(params):
        sp = sp.set_dim_name(isl.dim_type.param, k, p)
    return sp


def comp_space(pspace: isl.Space, name: str, vars_: list[str]) -> isl.Space:
    sp = isl.Space.set_alloc(pspace.get_ctx(), pspace.dim(isl.dim_type.param), len(vars_))
    for k in range(pspace.dim(isl.dim_type.param)):
        sp = sp.set_dim_name(isl.dim_type.param, k, pspace.get_dim_name(isl.dim_type.param, k))
    for k, v in enumerate(vars_):
        sp = sp.set_dim_name(isl.dim_type.set, k, v)
    return sp.set_tuple_name(isl.dim_type.set, name)


def build_layer1(fn: Function, ctx: isl.Context, commands: list[cmd.Command]) -> Layer1:
    params = [p.name for p in fn.params]
    pspace = param_space(ctx, params)
    context = isl.Set.universe(pspace)
    for k, p in enumerate(fn.params):
        if p.min is not None:
            context = context.lower_bound_val(isl.dim_type.param, k,
                                              isl.Val.int_from_si(ctx, p.min))
        if p.max is not None:
            context = context.upper_bound_val(isl.dim_type.param, k,
                                              isl.Val.int_from_si(ctx, p.max))
    index_context = int32_context(fn.params, context)
    inline = list(dict.fromkeys(c.comp for c in commands if isinstance(c, cmd.Inline)))
    if not fn.computations:
        raise DefinitionError(f"function {fn.name!r} has no computation: there is nothing "
                              "to compute (add a me.Computation)")
    comps: dict[str, Comp] = {}
    dropped: dict[str, Comp] = {}
    for c in fn.computations:
        if c.expr is None:
            raise DefinitionError(f"computation {c.name!r} has no expression "
                                  "(pass one or call set_expression)")
        got = _domain(c, pspace, context)
        if fn.allow_empty_domains and c.name not in inline and got.domain.is_empty():
            dropped[c.name] = got
            continue
        comps[c.name] = got
        _check_domain(got, index_context, empty_ok=fn.allow_empty_domains)
    for c in commands:
        if isinstance(c, cmd.StoreIn) and c.comp in comps:
            comps[c.comp].store_index = _store_index(comps[c.comp], c)
    table: dict[object, Expr] = {}
    for c in comps.values():
        _share(c, table)
        c.reads = _reads(c, comps, dropped=dropped)
        _check_self_reads(c)
    for name in inline:
        if name not in comps:
            raise DefinitionError(f"{name}.inline(): unknown computation {name!r}")
    functions: dict[str, Comp] = {}
    if inline:
        functions = inlining.inline(comps, inline, commands)
        via: dict[str, dict[ReadKey, int]] = {}
        for c in [*functions.values(), *comps.values()]:
            _share(c, table)
        # computations computed or allocated at a loop: read through calls where placed
        at_loop = {n for n in comps if inlining.storage_of(n, commands) == "loop"}
        calls = _CallReads(functions, via, Footprints(functions), at_loop)
        for c in comps.values():
            c.reads = _reads(c, comps, calls, dropped)
    declared = [c.name for c in fn.computations if c.name not in inline
                and c.name not in dropped]
    if dropped:  # after inlining: also what a statement reads through an inlined one
        gone = {n: quoted(str(d.domain)) for n, d in dropped.items()}
        for c in [*(comps[n] for n in declared), *functions.values()]:
            empty.refuse_value_reads(c.name, [c.expr, c.guard, *(c.store_index or ())],
                                     gone)
    if not declared and not dropped:
        raise DefinitionError(f"function {fn.name!r}: every computation is inlined "
                              f"({', '.join(inline)}), so nothing is computed; remove "
                              "inline() from the computation(s) whose values are the outputs")
    stores = empty.storage_names(commands)
    into = {n: empty.into(n, set(dropped), stores) for n in dropped}
    return Layer1(ctx, params, pspace, {n: comps[n] for n in declared}, declared, inline,
                  {b.name: b for b in fn.buffers}, context, index_context, functions,
                  dropped, into)


INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def int32_context(params: Sequence[Param], context: isl.Set) -> isl.Set:
    """``context`` with each parameter's missing min or max taken from int32's range (a
    Param is an int32: a kernel's sizes and parameters are assumed to fit in one)."""
    ctx = context.get_ctx()
    out = context
    for k, p in enumerate(params):
        if p.min is None:
            out = out.lower_bound_val(isl.dim_type.param, k, isl.Val.int_from_si(ctx, INT32_MIN))
        if p.max is None:
            out = out.upper_bound_val(isl.dim_type.param, k, isl.Val.int_from_si(ctx, INT32_MAX))
    return out


def _check_domain(c: Comp, index_context: isl.Set, empty_ok: bool = False) -> None:
    """A domain must have points, be bounded and fit 64-bit index arithmetic. An empty
    one is refused (written by hand, it is a mistake) unless ``empty_ok``: the program
    was specialized by a front-end (``Function.allow_empty_domains``; the empty
    computations it makes are dropped before this check, inlined ones stay)."""
    dom = c.domain
    if dom.is_empty() and empty_ok:
        return
    if dom.is_empty():
        raise DefinitionError(
            f"computation {c.name!r}: its iteration domain {quoted(str(dom))} is empty for "
            "every parameter value allowed, so it computes nothing; remove the computation "
            "or fix its bounds or predicate")
    if not dom.is_bounded():
        raise DefinitionError(
            f"computation {c.name!r}: its iteration domain {quoted(str(dom))} is unbounded; "
            "give every iterator a lower and an upper bound (constants, params or outer "
            "iterators)")
    k = out_of_index_range(dom, index_context)
    if k is not None:
        raise DefinitionError(
            f"computation {c.name!r}: iterator {c.vars[k]!r} reaches 2^62 in absolute value "
            f"for some parameter values (parameters without min/max are assumed to be int32); "
            "index arithmetic is 64-bit: bound the domain or the parameters (me.Param(name, "
            "min=, max=))")


def var_domain(c: Computation, pspace: isl.Space) -> isl.Set:
    """The domain the iterators' bounds define (before the predicate and the params'
    assumptions), or the ISL text the computation was given."""
    return domain_of(c.name, c.vars, c.domain, pspace)


def domain_of(name: str, vars_: Sequence[Var], text: str | None, pspace: isl.Space,
              what: str = "computation") -> isl.Set:
    """The iteration domain of a statement (a computation, or an operation with its own
    iterators): the ISL set ``text`` when given, else the set the Vars' bounds define."""
    names = [v.name for v in vars_]
    if text:
        return _parse_domain(name, names, text, pspace, what)
    ac = AffineContext(comp_space(pspace, name, names))
    dom = ac.universe()
    for v in vars_:
        _check_names(v.lo, names, name, f"lower bound of {v.name}")
        _check_names(v.hi, names, name, f"upper bound of {v.name}")
        try:
            lo = to_pw_aff(v.lo, ac)
            hi = to_pw_aff(v.hi, ac)
        except NonAffine as e:
            raise DefinitionError(f"{what} {name!r}: bounds of {v.name!r} must be "
                                  f"affine in params and outer iterators ({e})") from None
        x = ac.name(v.name)
        dom = dom.intersect(lo.le_set(x)).intersect(x.lt_set(hi))
    return dom


def _parse_domain(name: str, names: list[str] | None, text: str, pspace: isl.Space,
                  what: str) -> isl.Set:
    """``text`` as a set ``name[names]`` (any dim names when ``names`` is None)."""
    try:
        dom = isl.Set.read_from_str(pspace.get_ctx(), text)
    except isl.Error as e:
        quota = quota_error(pspace.get_ctx(), e, lambda c: isl.Set.read_from_str(c, text))
        if quota is not None:
            raise quota from None  # the lowering reports its bound
        raise DefinitionError(f"{what} {name!r}: malformed ISL domain "
                              f"{quoted(text)} ({e})") from None
    sp = dom.get_space()
    got = [sp.get_dim_name(isl.dim_type.set, k) for k in range(dom.dim(isl.dim_type.set))]
    if dom.get_tuple_name() != name or (names and got != names) or not all(got):
        raise DefinitionError(f"{what} {name!r}: the domain must be a set "
                              f"{name}[{', '.join(names or ['i', '...'])}] with named "
                              f"dims, got {quoted(text)}")
    known = {pspace.get_dim_name(isl.dim_type.param, k)
             for k in range(pspace.dim(isl.dim_type.param))}
    extra = [sp.get_dim_name(isl.dim_type.param, k) for k in range(dom.dim(isl.dim_type.param))
             if sp.get_dim_name(isl.dim_type.param, k) not in known]
    if extra:
        raise DefinitionError(f"{what} {name!r}: the domain uses unknown parameters "
                              f"{extra}")
    return dom.align_params(pspace).set_tuple_name(name)


def _conjuncts(e: Expr) -> list[Expr]:
    """The operands of a tree of ``and``s, left to right."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Binary) and x.op == "and":
            stack.extend([x.b, x.a])
        else:
            out.append(x)
    return out


def _domain(c: Computation, pspace: isl.Space, context: isl.Set) -> Comp:
    names = [v.name for v in c.vars]
    ac = AffineContext(comp_space(pspace, c.name, names))
    dom = var_domain(c, pspace)
    guard = None
    assert c.expr is not None
    _check_names(c.expr, names, c.name, "expression")
    if c.predicate is not None:
        _check_names(c.predicate, names, c.name, "predicate")
        # each affine conjunct restricts the domain exactly; the others guard at run time
        # (``i > 1 and A[i-1] > 0`` never evaluates A[0], and A[0] is not read at all)
        rest: list[Expr] = []
        for part in _conjuncts(c.predicate):
            s = try_set(part, ac)
            if s is None:
                rest.append(part)
            else:
                dom = dom.intersect(s)
        for part in rest:
            guard = part if guard is None else Binary("and", guard, part, part.dtype)
    return Comp(c.name, names, dom.intersect_params(context).coalesce(), c.expr, guard, ac,
                source=c)


def _store_index(c: Comp, store: cmd.StoreIn) -> tuple[Expr, ...] | None:
    """The (last) store_in's indices of ``c``, checked: they may only use its iterators,
    and a data-dependent one must be an integer (it is evaluated as a subscript)."""
    if store.indices is None:
        return None
    idx = tuple(wrap(i) for i in store.indices)
    what = f"{c.name}.store_in({store.buffer})"
    for k, e in enumerate(idx):
        _check_names(e, c.vars, c.name, f"index {k} of {what}")
        if try_pw_aff(e, c.ctx) is None and not e.dtype.is_int:
            raise DefinitionError(f"{what}: index {k} is a data-dependent "
                                  f"{e.dtype.name} expression; a subscript must be an integer "
                                  "(use me.cast)")
    return idx


def _check_names(e: Expr, names: list[str], comp: str, where: str) -> None:
    for n in walk(e):
        if isinstance(n, Var) and n.name not in names:
            raise DefinitionError(f"computation {comp!r}: {where} uses iterator {n.name!r}, "
                                  f"which is not one of its iterators {names}")
        if isinstance(n, Param) and n.fn is not None and n.name not in {
                p.name for p in n.fn.params}:
            raise DefinitionError(f"computation {comp!r}: unknown parameter {n.name!r}")


@dataclass
class _CallReads:
    """What :func:`_call_reads` needs: the functions, what each reads (``via``, filled
    on use), their footprints, and the computations placed at a loop."""

    funcs: dict[str, Comp]
    via: dict[str, dict[ReadKey, int]]
    footprints: Footprints
    at_loop: set[str]


def _reads(c: Comp, comps: dict[str, Comp], through: _CallReads | None = None,
           dropped: Container[str] = ()) -> list[Read]:
    """The read references of ``c``, one per distinct access relation.

    Occurrences whose indices give the same relation (the same target, the same exact
    affine index functions, data-dependent indices at the same positions) are one
    reference with several ``nodes``: every analysis sees a reference only through its
    relation (``access``, or ``bound`` when an index is data-dependent), so they would
    give the same answers for each, while an inlined pipeline repeats the same reads
    thousands of times (Halide's bilateral grid inlined: 2000 reads of its grid through
    the same 72 relations). Each distinct index expression is converted to ISL once
    (repeated ones are one object after ``_share``)."""
    out: list[Read] = []
    groups: dict[tuple[object, ...], Read] = {}
    seen: set[int] = set()
    # by identity: after ``_share`` equal index expressions are one object
    affs: dict[int, tuple[isl.PwAff | None, str | None]] = {}

    def index(ix: Expr) -> tuple[isl.PwAff | None, str | None]:
        got = affs.get(id(ix))
        if got is None:
            pa = try_pw_aff(ix, c.ctx)
            got = affs[id(ix)] = (pa, None if pa is None else str(pa.coalesce()))
        return got

    calls: list[Access] = []
    roots = [c.expr] if c.guard is None else [c.expr, c.guard]
    roots += list(c.store_index or ())
    for n in (m for root in roots for m in walk_shared(root)):
        if not isinstance(n, Access) or id(n) in seen:
            continue
        seen.add(id(n))
        t = n.target
        if through and isinstance(t, Computation) and t.name in through.funcs:
            calls.append(n)
            continue
        if isinstance(t, Computation):
            if t.name in dropped:
                continue  # refused where a statement with instances reads it (build_layer1)
            if t.name not in comps:
                raise DefinitionError(f"computation {c.name!r} reads unknown {t.name!r}")
            if len(n.indices) != len(comps[t.name].vars):
                raise DefinitionError(
                    f"computation {c.name!r} reads {t.name!r} with {len(n.indices)} indices; "
                    f"it has {len(comps[t.name].vars)} dims")
            kind, target, of_comp = "value", t.name, False
        elif isinstance(t, _BufferOf):
            kind, target, of_comp = "memory", t.comp.name, True
        elif isinstance(t, Buffer):
            if len(n.indices) != len(t.sizes):
                raise DefinitionError(f"computation {c.name!r} reads buffer {t.name!r} with "
                                      f"{len(n.indices)} indices; it has {len(t.sizes)} dims")
            kind, target, of_comp = "memory", t.name, False
        else:  # pragma: no cover - Access targets are built by the API only
            raise DefinitionError(f"computation {c.name!r}: cannot read {t!r}")
        ixs = [index(ix) for ix in n.indices]
        key = (kind, target, of_comp, tuple(text for _, text in ixs))
        same = groups.get(key)
        if same is not None:
            same.nodes.append(n)
            continue
        r = Read(-1, c.name, kind, target, n, of_comp, [n], tuple(pa for pa, _ in ixs),
                 tuple(text for _, text in ixs), c.domain, c.ctx)
        groups[key] = r
        out.append(r)
    if calls:
        assert through is not None
        out += _call_reads(c, calls, comps, through)
    return out


def _call_reads(c: Comp, calls: list[Access], comps: dict[str, Comp], through: _CallReads
                ) -> list[Read]:
    """``c``'s reads through the inlined functions it calls, one per input buffer or
    computation they read: any element of the input, any instance of the computation (as
    a data-dependent index reads). This is the one place where exactness is relaxed:
    nothing writes an input, so no dependence changes there; a computation read through a
    function (one no command stores elsewhere, computes at a loop or copies: see
    :mod:`.inlining`) is taken as read whole by each instance of ``c``, so a schedule
    that interleaves its instances with ``c``'s (``c.after(P, i)``, fusing their loops)
    is refused even where ``c`` reads only instances computed earlier; computing it
    before ``c`` (at root, Halide's compute_root) is what such a schedule does. The bounds
    check of input reads made through calls is the functions' code's, at run time, where
    the printer cannot prove a subscript in bounds (a clamped one, as boundary conditions
    give, needs none). A computation computed or allocated at a loop is the exception:
    it is computed per iteration for what is read there, so its reads through calls are
    the calls' footprints (:mod:`.footprint`), hulls of the instances read."""
    funcs, via = through.funcs, through.via
    nodes: dict[ReadKey, list[Access]] = {}
    for n in calls:
        for key in _function_reads(funcs[n.target.name], funcs, via):
            nodes.setdefault(key, []).append(n)
    out = []
    for (kind, target, of_comp, rank), ns in nodes.items():
        if kind == "value" and target not in comps:
            continue  # a dropped computation: refused in build_layer1
        m = None
        if kind == "value" and target in through.at_loop:
            m = through.footprints.of_calls(c, ns, target)
        if m is None:
            m, _ = access_relation([None] * rank, c.ctx, target)
        m = m.intersect_domain(c.domain)
        if kind == "value":
            m = m.intersect_range(comps[target].domain)
        out.append(Read(-1, c.name, kind, target, ns[0], of_comp, ns, (None,) * rank,
                        (None,) * rank, c.domain, c.ctx, m))
    return out


ReadKey = tuple[str, str, bool, int]  # kind, target, of_comp, number of indices


def _function_reads(f: Comp, funcs: dict[str, Comp], via: dict[str, dict[ReadKey, int]]
                    ) -> dict[ReadKey, int]:
    """What the inlined function ``f`` reads, itself or through its calls: input buffers
    and computations' values, as (kind, name, False, number of indices)."""
    got = via.get(f.name)
    if got is None:
        got = {}
        for n in walk_shared(f.expr):
            if isinstance(n, Access):
                t = n.target
                if isinstance(t, Computation) and t.name in funcs:
                    got.update(_function_reads(funcs[t.name], funcs, via))
                else:
                    kind = "value" if isinstance(t, Computation) else "memory"
                    got[(kind, t.name, False, len(n.indices))] = 0
        via[f.name] = got
    return got


def _share(c: Comp, table: dict[object, Expr]) -> None:
    """Repeated subexpressions of ``c`` as one node each (:func:`share_common`), whether
    the front-end shared them or the wire format rebuilt them apart: every later pass
    then sees the same program either way (the C printer computes a shared float value
    once)."""
    c.expr = share_common(c.expr, table)
    if c.guard is not None:
        c.guard = share_common(c.guard, table)
    # (store indices stay the objects Layer III prints: its reads are found by identity)


def _check_self_reads(c: Comp) -> None:
    """A value cannot depend on itself: ``S[i] = S[i] + 1`` reads the instance being
    computed (a recurrence reads an earlier one, ``S[i - 1]``)."""
    for r in c.reads:
        if r.kind != "value" or r.target != c.name or r.access is None:
            continue
        same = r.access.intersect(isl.Map.identity(r.access.get_space()))
        if not same.is_empty():
            raise DefinitionError(
                f"computation {c.name!r} reads its own value at the point it computes "
                f"({same.domain()}): a value cannot depend on itself; read an earlier point "
                f"(e.g. {c.name}[i - 1]), another computation, or the buffer's current "
                f"content ({c.name}.memory[...])")
