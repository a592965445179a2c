"""Small helpers over islpy's list types (they are not Python iterables), and over ISL's
errors."""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl


def maps_of(u: isl.UnionMap) -> list[isl.Map]:
    """The maps of a union map, one per pair of tuple spaces."""
    ml = u.get_map_list()
    return [ml.get_at(k) for k in range(ml.n_map())]


def sets_of(u: isl.UnionSet) -> list[isl.Set]:
    """The sets of a union set, one per tuple space."""
    sl = u.get_set_list()
    return [sl.get_at(k) for k in range(sl.n_set())]


# Index arithmetic in generated code is 64-bit: every iterator, loop bound and time-space
# coordinate must stay well inside int64 for every admissible parameter value. The margin
# (2^62 instead of 2^63) leaves room for the sums and products of bounds ISL generates
# (``floord(N + c, 32)``, ``ub + 1``) around a value that fits.
INDEX_LIMIT = 2 ** 62


def out_of_index_range(points: isl.Set, index_context: isl.Set,
                       limit: int = INDEX_LIMIT) -> int | None:
    """The first dim of ``points`` that reaches ``limit`` in absolute value for some
    parameter value of ``index_context`` (None when every dim stays inside)."""
    pts = points.intersect_params(index_context.align_params(points.get_space()))
    ctx = pts.get_ctx()
    lim = isl.Val(str(limit), context=ctx)
    for k in range(pts.dim(isl.dim_type.set)):
        hi = pts.lower_bound_val(isl.dim_type.set, k, lim)
        lo = pts.upper_bound_val(isl.dim_type.set, k, lim.neg())
        if not hi.is_empty() or not lo.is_empty():
            return k
    return None


_REREAD_OPS = 1_000_000


def exhausted(ctx: isl.Context) -> bool:
    """Whether ``ctx`` is past its operation bound (ISL reports some failures under the
    bound as, say, a syntax error in text the middle-end wrote): a trivial read fails."""
    try:
        isl.Set.read_from_str(ctx, "{ [0] }")
    except isl.Error:
        return True
    return False


def quota_error(ctx: isl.Context, error: isl.Error,
                parse: Callable[[isl.Context], object]) -> isl.Error | None:
    """When reading text in ``ctx`` failed with ``error``, an error saying ISL ran out of
    its operation bound if that is why (None if the text is malformed). ISL reports an
    exhausted bound during parsing as a syntax error at times, and the bound counts the
    operations of the whole context, so the text is read again in a fresh context with
    the bound the wire decoder reads domains under (or ``ctx``'s, if larger): it succeeds
    when only the bound was in the way."""
    cap = ctx.get_max_operations()
    if not cap:
        return None
    if "operations" not in str(error):
        fresh = isl.Context()
        fresh.set_max_operations(max(cap, _REREAD_OPS))
        try:
            parse(fresh)
        except isl.Error as again:
            if "operations" not in str(again):
                return None
    return isl.Error(f"maximal number of operations exceeded ({error})")


def exact_hull(m: isl.Map) -> isl.Map:
    """``m`` as one basic map when its simple hull holds no other point (the same set,
    written as one convex piece), else ``m`` unchanged.

    Why: the footprint of a stencil over a tile is a union of shifted copies of the
    consumer's region (5 or 9 per stage); ISL's coalescing leaves several overlapping
    pieces, and each stage of a chain multiplies them (45 for the first of 4 stages of a
    tiled chain), which the dataflow analysis then pays for per pair of pieces (13 s).
    The integer points of such a union are often those of one convex polyhedron (a tile
    grown by a cross or a box is an octagon), and ``is_equal`` decides exactly whether
    they are, so the result is always the same set as ``m``."""
    if m.n_basic_map() <= 1:
        return m
    h = isl.Map.from_basic_map(m.simple_hull())
    if h.is_equal(m):
        return h
    # the simple hull (facets of the pieces' own directions) is cheap and often enough;
    # pieces whose union's corners are cut diagonally by no piece need the convex hull,
    # which is not tried on pieces with integer divisions (x // 2: the points of a lattice,
    # seldom a convex set's, and the hull took 0.3 s of an interpolate's lowering)
    # nor on pieces on different affine subspaces ({c = 3} beside {c = i0}, a Tuple-like
    # select's channels): their hull is exact only when it is thin, where the simple hull
    # is exact already, and ISL lifts them to twice the dimensions to find it (an
    # nl_means footprint of 11 dims: 40 s, past 2e8 operations)
    pieces = [m.get_basic_map_list().get_at(k) for k in range(m.n_basic_map())]
    if any(p.dim(isl.dim_type.div) for p in pieces):
        return m
    flat = pieces[0].affine_hull()
    if not all(p.affine_hull().is_equal(flat) for p in pieces[1:]):
        return m
    return bounded_convex_hull(m)


# ISL's convex hull is exponential in the dimension, and no cheap test says beforehand
# when it is: the tiled stencil chain's octagons (8 stages, 32 x 32 tiles) take 64k-128k
# operations each, so the bound leaves them ample room; a hull given up costs ~0.14 s
HULL_OPS = 1_000_000


def bounded_convex_hull(m: isl.Map, max_ops: int = HULL_OPS) -> isl.Map:
    """``m``'s convex hull if it holds exactly ``m``'s points, found within ``max_ops``
    ISL operations, else ``m``.

    Why a context of its own: the operation bound of ``m``'s context counts the whole
    lowering, so a hull past its own budget would fail the lowering instead of only
    giving up the rewrite; the text of a map is exact, so reading it there and the hull
    back here changes no point."""
    ctx = isl.Context()
    ctx.set_max_operations(max_ops)
    try:
        there = isl.Map.read_from_str(ctx, str(m))
        h = isl.Map.from_basic_map(there.convex_hull())
        if not h.is_equal(there):
            return m
        text = str(h)
    except isl.Error:
        return m
    return isl.Map.read_from_str(m.get_ctx(), text)
