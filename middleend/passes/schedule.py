"""Layer II: the time-space placement of every computation, built from the command log.

Each loop transformation is one ISL map composed onto the computation's schedule (its
domain -> its loops). Ordering (after/before/then, compute_at) is resolved at the end into
the constant ("beta") dimensions of one shared time-space ``[b0, l0, b1, l1, ..., bL]``: all
computations are ordered by the lexicographic order of their time-space points, as in the
papers. Tags are kept apart from the maps, per computation and loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from ..ir.islutil import out_of_index_range, quota_error

# --------------------------------------------------------------------------- range maps


def _range_map(ctx: isl.Context, n: int, outs: list[str], cons: str = "") -> isl.Map:
    """``{ [d0..d(n-1)] -> [outs] : cons }``; built only from generated names and ints."""
    ins = ", ".join(f"d{k}" for k in range(n))
    body = f"{{ [{ins}] -> [{', '.join(outs)}]" + (f" : {cons}" if cons else "") + " }"
    return isl.Map.read_from_str(ctx, body)


@dataclass
class CompSchedule:
    """Schedule state of one computation while commands are applied."""

    name: str
    domain: isl.Set  # the Layer I domain
    sched: isl.Map  # domain -> anonymous loop space
    dims: list[str]
    tags: dict[str, str] = field(default_factory=dict)
    widths: dict[str, int] = field(default_factory=dict)  # vector: factor; pipeline: II
    origins: dict[str, str] = field(default_factory=dict)  # tagged loop -> command that did it
    atomic: str = ""  # the atomic() command that made each instance one atomic update
    group: tuple[str, str] = ("", "")  # atomic(group=g): (g, the command)
    commute: str = ""  # the commute() command that lets its instances run in any order
    # filled at finalize
    ext_domain: isl.Set | None = None  # domain with compute_at outer dims prepended
    n_outer: int = 0
    proj: isl.Map | None = None  # ext_domain -> domain
    ext_sched: isl.Map | None = None  # ext_domain -> loops (outer loops first)
    ext_dims: list[str] = field(default_factory=list)
    betas: list[int] = field(default_factory=list)
    outer_of: str | None = None  # the statement whose outer loops it shares (compute_at, ...)
    full: isl.Map | None = None  # ext_domain -> time-space

    def pos(self, d: str, c: cmd.Command) -> int:
        if d not in self.dims:
            raise ScheduleError(
                f"{c.describe()}: computation {self.name!r} has no loop {d!r}; its loops are "
                f"{self.dims}", computations=(self.name,), command=c.describe())
        return self.dims.index(d)

    def fresh(self, names: Iterable[str], c: cmd.Command, replacing: Iterable[str] = ()) -> None:
        keep = set(self.dims) - set(replacing)
        seen: set[str] = set()
        for n in names:
            if n in keep or n in seen:
                raise ScheduleError(
                    f"{c.describe()}: loop name {n!r} already used by {self.name!r} "
                    f"(loops {self.dims})", computations=(self.name,), command=c.describe())
            seen.add(n)

    def apply(self, m: isl.Map, dims: list[str]) -> None:
        self.sched = self.sched.apply_range(m)
        self.dims = dims


def initial(name: str, domain: isl.Set, vars_: list[str]) -> CompSchedule:
    """The identity schedule: one loop per iterator, in declaration order."""
    m = isl.Map.identity(domain.get_space().map_from_set()).intersect_domain(domain)
    return CompSchedule(name, domain, m.reset_tuple_id(isl.dim_type.out), list(vars_))


def apply_command(s: CompSchedule, c: cmd.Command, origin: str = "") -> None:
    """Apply one loop-transformation or tagging command to ``s`` (ordering commands are
    handled by :func:`finalize`); ``origin`` (the command as written, with its index) is
    remembered for the loops it tags, so that a target refusing a tag can name it."""
    before = dict(s.tags)
    _apply(s, c)
    for loop, tag in s.tags.items():
        if before.get(loop) != tag:
            s.origins[loop] = origin or c.describe()


# The largest constant a loop transformation may use (a shift amount, a skew factor, a
# split, tile, unroll or vector size). Generated loops compute with 64-bit indices; 2^40
# is far beyond any useful schedule and keeps ``N + amount`` or ``factor * i`` of int32
# parameters and iterators from overflowing (check_index_range checks the result).
MAX_SCHEDULE_CONSTANT = 2 ** 40


def _constants(c: cmd.Command) -> list[tuple[str, int]]:
    if isinstance(c, cmd.Shift):
        return [("shift amount", c.amount)]
    if isinstance(c, cmd.Skew):
        return [("skew factor", c.factor)]
    if isinstance(c, (cmd.Split, cmd.Vectorize)) or (
            isinstance(c, cmd.Unroll) and c.factor is not None):
        return [(f"{c.kind} factor", c.factor)]  # type: ignore[attr-defined]
    if isinstance(c, cmd.Tile):
        return [("tile size", x) for x in c.sizes]
    if isinstance(c, cmd.TileGpu):
        return [("tile size", c.t1), ("tile size", c.t2)]
    return []


def check_constants(name: str, c: cmd.Command) -> None:
    """Refuse a schedule constant whose magnitude could overflow 64-bit index arithmetic."""
    for what, v in _constants(c):
        if abs(v) > MAX_SCHEDULE_CONSTANT:
            raise ScheduleError(
                f"{c.describe()}: the {what} {v} exceeds the limit of 2^40 "
                f"({MAX_SCHEDULE_CONSTANT}) in absolute value; generated loops use 64-bit "
                "index arithmetic, which such a constant could overflow",
                computations=(name,), command=c.describe())


def check_index_range(s: CompSchedule, c: cmd.Command, index_context: isl.Set) -> None:
    """After ``c``, every loop of ``s`` must stay within +-2^62 for every admissible
    parameter value (parameters without min/max: int32), or 64-bit loop bounds overflow."""
    k = out_of_index_range(s.sched.range(), index_context)
    if k is not None:
        loop = s.dims[k]
        raise ScheduleError(
            f"{c.describe()}: loop {loop!r} of {s.name!r} reaches 2^62 in absolute value for "
            "some parameter values (parameters without min/max are taken as int32), which "
            "overflows 64-bit index arithmetic; use a smaller constant or bound the "
            "parameters (me.Param(name, min=, max=))",
            computations=(s.name,), command=c.describe(), level=loop)


def _apply(s: CompSchedule, c: cmd.Command) -> None:
    check_constants(s.name, c)
    ctx = s.domain.get_ctx()
    n = len(s.dims)
    d = [f"d{k}" for k in range(n)]
    if isinstance(c, cmd.Interchange):
        a, b = s.pos(c.a, c), s.pos(c.b, c)
        outs = list(d)
        outs[a], outs[b] = outs[b], outs[a]
        names = list(s.dims)
        names[a], names[b] = names[b], names[a]
        s.apply(_range_map(ctx, n, outs), names)
    elif isinstance(c, (cmd.Split, cmd.Vectorize)) or (
            isinstance(c, cmd.Unroll) and c.factor is not None):
        _split(s, c, c.dim, c.factor, c.outer, c.inner)  # type: ignore[arg-type]
        if isinstance(c, cmd.Vectorize):
            s.tags[c.inner] = "vector"
            s.widths[c.inner] = c.factor
        elif isinstance(c, cmd.Unroll):
            s.tags[c.inner] = "unroll"
    elif isinstance(c, cmd.Unroll):
        p = s.pos(c.dim, c)
        check_unrollable(s.sched.range(), p, s.name, c.dim, c.describe())
        s.tags[c.dim] = "unroll"
    elif isinstance(c, cmd.Fuse):
        _fuse(s, c)
    elif isinstance(c, cmd.Tile):
        _tile(s, c)
    elif isinstance(c, cmd.Shift):
        p = s.pos(c.dim, c)
        outs = list(d)
        outs[p] = f"d{p} + ({c.amount})"
        s.apply(_range_map(ctx, n, outs), list(s.dims))
    elif isinstance(c, cmd.Skew):
        a, b = s.pos(c.a, c), s.pos(c.b, c)
        if a == b:
            raise ScheduleError(f"{c.describe()}: skew needs two different loops",
                                computations=(s.name,), command=c.describe())
        s.fresh([c.new_a, c.new_b], c, replacing=[c.a, c.b])
        outs = list(d)
        outs[b] = f"d{b} + {c.factor} * d{a}"
        names = list(s.dims)
        names[a], names[b] = c.new_a, c.new_b
        s.apply(_range_map(ctx, n, outs), names)
        _rename(s, {c.a: c.new_a, c.b: c.new_b})
    elif isinstance(c, cmd.Reverse):
        p = s.pos(c.dim, c)
        outs = list(d)
        outs[p] = f"-d{p}"
        s.apply(_range_map(ctx, n, outs), list(s.dims))
    elif isinstance(c, cmd.Parallelize):
        s.pos(c.dim, c)
        s.tags[c.dim] = "parallel"
    elif isinstance(c, cmd.Gpu):
        _tag(s, c, c.blocks, "gpu_block")
        _tag(s, c, c.threads, "gpu_thread")
    elif isinstance(c, cmd.TileGpu):
        _tile(s, cmd.Tile(c.comp, (c.i, c.j), (c.t1, c.t2), (c.i0, c.j0), (c.i1, c.j1)), c)
        _tag(s, c, (c.i0, c.j0), "gpu_block")
        _tag(s, c, (c.i1, c.j1), "gpu_thread")
    elif isinstance(c, cmd.Distribute):
        _tag(s, c, (c.dim,), "distribute")
    elif isinstance(c, cmd.Pipeline):
        _tag(s, c, (c.dim,), "pipeline")
        s.widths[c.dim] = c.ii
    elif isinstance(c, cmd.SetSchedule):
        _set_schedule(s, c)
    elif isinstance(c, cmd.Atomic) and c.group:  # a member of a critical section
        s.group = (c.group, c.describe())
    elif isinstance(c, cmd.Atomic):
        s.atomic = c.describe()
    elif isinstance(c, cmd.Commute):
        s.commute = c.describe()
    else:  # pragma: no cover - dispatch is exhaustive for SCHEDULE_COMMANDS
        raise ScheduleError(f"unsupported command {c.describe()}", command=c.describe())


def _split(s: CompSchedule, c: cmd.Command, dim: str, f: int, outer: str, inner: str) -> None:
    p = s.pos(dim, c)
    s.fresh([outer, inner], c, replacing=[dim])
    n = len(s.dims)
    outs = [f"d{k}" for k in range(p)] + ["o", "i"] + [f"d{k}" for k in range(p + 1, n)]
    m = _range_map(s.domain.get_ctx(), n, outs, f"o = floor(d{p} / {f}) and i = d{p} - {f} * o")
    names = s.dims[:p] + [outer, inner] + s.dims[p + 1:]
    s.apply(m, names)
    _rename(s, {dim: outer})  # a tag (and vector width) on a split loop stays outside


def _fuse(s: CompSchedule, c: cmd.Fuse) -> None:
    """``fused = E * outer + inner - lo``, where ``[lo, lo + E)`` holds every value the inner
    loop takes over the whole domain: one-to-one and order-preserving, so the instances,
    their order and the legality check are those of the two loops. The extent must be a
    constant (bounded for every parameter value); tags go on the fused loop, afterwards."""
    po, pi = s.pos(c.outer, c), s.pos(c.inner, c)
    if pi != po + 1:
        raise ScheduleError(f"{c.describe()}: loop {c.inner!r} must be directly inside "
                            f"{c.outer!r} (loops {s.dims})", computations=(s.name,),
                            command=c.describe())
    for loop in (c.outer, c.inner):
        if loop in s.tags:
            raise ScheduleError(f"{c.describe()}: loop {loop!r} is already tagged "
                                f"{s.tags[loop]}; tag the fused loop instead",
                                computations=(s.name,), command=c.describe(), level=loop)
    s.fresh([c.fused], c, replacing=[c.outer, c.inner])
    rng = s.sched.range()
    lo, hi = rng.dim_min_val(pi), rng.dim_max_val(pi)
    if not (lo.is_int() and hi.is_int()):
        raise ScheduleError(f"{c.describe()}: the extent of loop {c.inner!r} is not bounded "
                            f"by constants ({lo}..{hi}); fusing needs one",
                            computations=(s.name,), command=c.describe(), level=c.inner)
    lo_i, extent = lo.to_python(), hi.to_python() - lo.to_python() + 1
    n = len(s.dims)
    outs = ([f"d{k}" for k in range(po)] + [f"{extent} * d{po} + d{pi} - ({lo_i})"]
            + [f"d{k}" for k in range(pi + 1, n)])
    s.apply(_range_map(s.domain.get_ctx(), n, outs), s.dims[:po] + [c.fused] + s.dims[pi + 1:])


def _rename(s: CompSchedule, mapping: dict[str, str]) -> None:
    """Loop renames keep the loops' tags, vector widths and tag origins with them."""
    for d in (s.tags, s.widths, s.origins):
        renamed = {mapping.get(k, k): v for k, v in d.items()}
        d.clear()
        d.update(renamed)


def _tile(s: CompSchedule, c: cmd.Tile, written: cmd.Command | None = None) -> None:
    """Tile ``c.dims``; errors name ``written`` (e.g. the tile_gpu the user wrote)."""
    w = written or c
    ps = [s.pos(x, w) for x in c.dims]
    if ps != list(range(ps[0], ps[0] + len(ps))):
        raise ScheduleError(
            f"{w.describe()}: tiled loops must be consecutive and in order; loops of "
            f"{s.name!r} are {s.dims}", computations=(s.name,), command=w.describe())
    s.fresh(list(c.outers) + list(c.inners), w, replacing=c.dims)
    for x, f, o, i in zip(c.dims, c.sizes, c.outers, c.inners, strict=True):
        _split(s, w, x, f, o, i)
    p0 = ps[0]
    k = len(c.dims)
    n = len(s.dims)
    order = [p0 + 2 * q for q in range(k)] + [p0 + 2 * q + 1 for q in range(k)]
    perm = list(range(p0)) + order + list(range(p0 + 2 * k, n))
    s.apply(_range_map(s.domain.get_ctx(), n, [f"d{q}" for q in perm]),
            [s.dims[q] for q in perm])


def _tag(s: CompSchedule, c: cmd.Command, dims: Iterable[str], tag: str) -> None:
    for dn in dims:
        s.pos(dn, c)
        s.tags[dn] = tag


def _set_schedule(s: CompSchedule, c: cmd.SetSchedule) -> None:
    ctx = s.domain.get_ctx()
    try:
        m = isl.Map.read_from_str(ctx, c.isl_map)
    except isl.Error as e:
        quota = quota_error(ctx, e, lambda x: isl.Map.read_from_str(x, c.isl_map))
        if quota is not None:
            raise quota from None  # the lowering reports its bound
        raise ScheduleError(f"{c.describe()}: malformed ISL map: {e}", computations=(s.name,),
                            command=c.describe()) from None
    if m.get_tuple_name(isl.dim_type.in_) != s.name or \
            m.dim(isl.dim_type.in_) != s.domain.dim(isl.dim_type.set):
        raise ScheduleError(
            f"{c.describe()}: the map's domain must be {s.name}[...] with "
            f"{s.domain.dim(isl.dim_type.set)} dims", computations=(s.name,),
            command=c.describe())
    m = m.intersect_domain(s.domain)
    if not m.is_single_valued() or not m.is_injective():
        raise ScheduleError(f"{c.describe()}: a schedule must be a one-to-one function",
                            computations=(s.name,), command=c.describe())
    if not m.domain().is_equal(s.domain):
        raise ScheduleError(f"{c.describe()}: the map does not cover the whole domain "
                            f"{s.domain}", computations=(s.name,), command=c.describe())
    n = m.dim(isl.dim_type.out)
    names = []
    for k in range(n):
        nm = m.get_dim_name(isl.dim_type.out, k)
        names.append(nm if nm and nm not in names else f"s{k}")
    m = m.reset_tuple_id(isl.dim_type.out)
    for k in range(n):
        m = m.set_dim_name(isl.dim_type.out, k, f"d{k}")
    s.sched = m
    s.dims = names
    s.tags = {}
    s.widths = {}
    s.origins = {}


MAX_UNROLL = 1024


def unroll_extent(rng: isl.Set, d: int) -> int | None:
    """The most dim ``d`` of the time-space points ``rng`` spans (its greatest minus its
    least value), or None where no constant bounds it: the copies an unrolled loop at
    ``d`` needs, less one."""
    ntd = rng.dim(isl.dim_type.set)
    upto = rng.project_out(isl.dim_type.set, d + 1, ntd - d - 1)
    ext = upto.dim_max(d).max_val().sub(upto.dim_min(d).min_val())
    return int(ext.to_python()) if ext.is_int() else None


def check_unrollable(rng: isl.Set, d: int, comp: str, loop: str,
                     command: str | None = None) -> None:
    """An unrolled loop needs a trip count bounded by a constant; refuse others (and huge
    ones) with an error that names the loop."""
    ext = unroll_extent(rng, d)
    if ext is None or ext + 1 > MAX_UNROLL:
        raise ScheduleError(f"cannot unroll loop {loop!r} of {comp!r}: its trip count is not "
                            f"bounded by a constant <= {MAX_UNROLL} (split it first: "
                            f"unroll({loop}, factor))", computations=(comp,), level=loop,
                            command=command)
