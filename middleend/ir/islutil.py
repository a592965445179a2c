"""Small helpers over islpy's list types (they are not Python iterables)."""

from __future__ import annotations

import islpy as isl


def maps_of(u: isl.UnionMap) -> list[isl.Map]:
    """The maps of a union map, one per pair of tuple spaces."""
    ml = u.get_map_list()
    return [ml.get_at(k) for k in range(ml.n_map())]


def sets_of(u: isl.UnionSet) -> list[isl.Set]:
    """The sets of a union set, one per tuple space."""
    sl = u.get_set_list()
    return [sl.get_at(k) for k in range(sl.n_set())]
