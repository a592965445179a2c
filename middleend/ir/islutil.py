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
    # the simple hull (facets of the pieces' own directions) is cheap and often enough;
    # pieces whose union's corners are cut diagonally by no piece need the convex hull,
    # which is not tried on pieces with integer divisions (x // 2: the points of a lattice,
    # seldom a convex set's, and the hull took 0.3 s of an interpolate's lowering)
    bms = m.get_basic_map_list()
    divs = any(bms.get_at(k).dim(isl.dim_type.div) for k in range(bms.n_basic_map()))
    for hull in (m.simple_hull,) if divs else (m.simple_hull, m.convex_hull):
        h = isl.Map.from_basic_map(hull())
        if h.is_equal(m):
            return h
    return m
