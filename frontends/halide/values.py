"""The range of a Func's values, for bounds inference of an index that reads it.

A histogram of a computed Func (``hist[g[r.x, r.y]] += 1`` with ``g = clamp(..., 0, 255)``)
writes the bins ``g``'s values can take; Halide bounds them by the range of ``g``'s
definition, and so do we: interval arithmetic over every definition of the Func (the pure
one and the updates), its Vars over the ranges of the call's arguments (a lookup table read
at a clamped index), the Funcs it calls bounded the same way (recursively; a Func reading
itself only through its type's range). An unclamped value stays unbounded and the index is
refused as before, naming the Func.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import middleend as me
from frontends.halide import bounds as bd
from frontends.halide.exprs import translate
from frontends.halide.graph import definitions
from frontends.names import Namer

if TYPE_CHECKING:
    from frontends.halide.translate import Translator

Key = tuple[str, int, tuple[bd.Interval, ...]]


def value_range(tr: Translator, name: str, vi: int, args: tuple[bd.Interval, ...],
                busy: frozenset[str] = frozenset()) -> bd.Interval:
    """Inclusive bounds of element ``vi`` of Func ``name`` at arguments in the ranges
    ``args`` (Halide order; None: unbounded on that side)."""
    key: Key = (name, vi, args)
    got = tr.value_ranges.get(key)
    if got is not None:
        return got
    if name in busy:  # a Func reading its own values: only its type bounds them
        return (None, None)  # (producers form no other cycle, so caching below is exact)
    f = tr.hp.func(name)
    out: bd.Interval | None = None
    for k, d in enumerate(definitions(f)):
        namer = Namer()
        vars_ = {n: me.Var(namer(n)) for n in (*f.args, *(rv.var for rv in d.schedule.rvars))}
        ranges = {vars_[n].name: a for n, a in zip(f.args, args, strict=True)
                  if a[0] is not None and a[1] is not None}
        rec: list[tuple[str, int, tuple[me.Expr, ...]]] = []
        scope = tr._scope(name, k, dict(vars_), rec, busy=busy | {name})
        e = translate(d.values[vi], scope)
        lo, hi = bd.interval(e, ranges)  # type: ignore[arg-type]
        if lo is None or hi is None:  # the called Funcs' values, only when needed
            lo, hi = bd.interval(e, ranges, deep=True)  # type: ignore[arg-type]
        out = (lo, hi) if out is None else (
            None if lo is None or out[0] is None else min(lo, out[0]),
            None if hi is None or out[1] is None else max(hi, out[1]))
    assert out is not None
    tr.value_ranges[key] = out
    return out
