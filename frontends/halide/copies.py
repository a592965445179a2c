"""The extra realizations of a Func computed at a loop of several stages of its consumer.

Halide realizes ``p.compute_at(c, x)`` once per stage of ``c`` that uses ``p`` (tutorial
lesson 9), recomputing it each time. Realization 0 is the Func's own computations; each
further one is a copy of every stage (the pure definition and the updates, in order) under
new names, into buffers of its own, so that each realization is computed, updated and read
in its own stage's loops. An update's reads of the Func itself read its own realization.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import middleend as me
from frontends.halide.exprs import dtype_of, translate
from frontends.halide.graph import definitions

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo, Translator


def define_copy(tr: Translator, fi: FuncInfo, r: int) -> None:
    """Realization ``r`` (>= 1) of ``fi``: its stages again, under new names (``_at{r}``),
    into their own buffers; fills ``fi.copies``, ``fi.copy_updates``, ``fi.copy_storage``
    and ``fi.copy_temps`` (an update whose Tuple elements read each other computes its
    new values first, as the Func's own realization does)."""
    f = fi.f
    fpos, n = tr.order.index(f.name), len(f.output_types)
    bufs: list[me.Buffer] = []
    stages: list[list[me.Computation]] = []
    temps: dict[int, list[me.Computation]] = {}
    tr.copy_ctx = r  # the updates' reads of the Func read this realization
    try:
        for k, d in enumerate(definitions(f)):
            st = tr.stage(fi, k)
            scope = tr._scope(f.name, k, dict(st.vars), record=None)
            its = [me.Var(v.name, st.ranges[v.name][0], st.ranges[v.name][1] + 1)
                   for v in (st.vars[nm] for nm in st.names)]
            pred = tr._predicate(d, scope)
            comps = []
            exprs = [translate(v, scope) for v in d.values]
            if k in fi.temps:  # the new values, from this realization's previous ones
                temps[k] = [me.Computation(tr.names(f"{t.name}_at{r}"), its, e,
                                           predicate=pred,
                                           dtype=dtype_of(f.output_types[vi], f.name, k))
                            for vi, (t, e) in enumerate(zip(fi.temps[k], exprs, strict=True))]
                exprs = [t[tuple(its)] for t in temps[k]]
            for vi, e in enumerate(exprs):
                cname = tr.names(f"{fi.comps[k][vi].name}_at{r}")
                dt = dtype_of(f.output_types[vi], f.name, k)
                c = me.Computation(cname, its, e, predicate=pred, dtype=dt)
                if k == 0 and fi.storage:
                    assert fi.box is not None
                    b = me.Buffer(tr.names(f"{cname}_buf"), [
                        fi.box[p][1] - fi.box[p][0] + 1 for p in storage_order(fi)], dt)
                    c.store_in(b, tr._storage_index(fi, [st.vars[nm] for nm in st.names]))
                    bufs.append(b)
                elif k > 0:
                    idx = [translate(a, scope) for a in reversed(d.args)]
                    if bufs:
                        c.store_in(bufs[vi], tr._storage_index(fi, idx))
                    else:
                        c.store_in(stages[0][vi], idx)
                comps.append(c)
            # at a point, this realization's new values, then its stores (its slots follow
            # the Func's own: 2n per realization where the update has new values)
            m = 2 * n if k in temps else n
            tr.seq.extend((t, (fpos, k, m * r + vi)) for vi, t in enumerate(temps.get(k, [])))
            tr.seq.extend((c, (fpos, k, m * r + m - n + vi)) for vi, c in enumerate(comps))
            stages.append(comps)
            if k == 0:  # read by the updates (through _func_access)
                fi.copies.append(comps)
                fi.copy_storage.append(bufs)
    finally:
        tr.copy_ctx = 0
    fi.copy_updates.append(stages[1:])
    fi.copy_temps.append(temps)


def storage_order(fi: FuncInfo) -> list[int]:
    """Halide argument positions of the storage dimensions, outermost first."""
    dims = [sd.var for sd in fi.f.schedule.storage_dims]
    if not dims:
        return list(reversed(range(len(fi.f.args))))
    return [fi.f.args.index(v) for v in reversed(dims)]
