"""``Func.in_()`` / ``in_(g)`` / ``clone_in(g)``: calls redirected to the wrapper Funcs.

The serialized pipeline holds each wrapper as an ordinary Func (an identity ``f_in_g``
calling ``f``, or a copy of ``f``'s definition for ``clone_in``), but the calls still name
``f``: Halide substitutes them while lowering, from ``f``'s list of wrappers (a consumer's
name, "" for the global wrapper, and the wrapper's index in ``func_names_in_order``). This
module does the same substitution on our image of the pipeline, so that a wrapper is a Func
like any other and can be scheduled apart from ``f``: a call to ``f`` in ``g`` goes to
``f``'s wrapper for ``g``, else to its global wrapper; calls inside ``f``'s own wrappers keep
calling ``f``.
"""

from __future__ import annotations

from dataclasses import replace

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import rebuild
from frontends.halide.hir import HDefinition, HExpr, HFunc, HPipeline


def apply_wrappers(hp: HPipeline) -> HPipeline:
    """``hp`` with every call to a wrapped Func redirected as Halide does; ``hp`` itself
    when no Func has a wrapper."""
    # wrapped Func -> consumer ("" for every other) -> wrapper Func
    table: dict[str, dict[str, str]] = {}
    for f in hp.funcs:
        for consumer, index in f.schedule.wrappers:
            if not 0 <= index < len(hp.func_names_in_order):
                raise UnsupportedHalideFeature(f.name, None, f"a wrapper #{index} missing "
                                               "from the serialized pipeline")
            table.setdefault(f.name, {})[consumer] = hp.func_names_in_order[index]
    if not table:
        return hp
    wrappers = {w for by in table.values() for w in by.values()}
    index = {n: k for k, n in enumerate(hp.func_names_in_order)}
    funcs = []
    for g in hp.funcs:
        redirect = {} if g.name in wrappers else {
            f: by[g.name] if g.name in by else by[""]
            for f, by in table.items() if f != g.name and (g.name in by or "" in by)}
        funcs.append(_redirected(g, redirect, index) if redirect else g)
    return replace(hp, funcs=tuple(funcs), funcs_by_name={f.name: f for f in funcs})


def _redirected(g: HFunc, redirect: dict[str, str], index: dict[str, int]) -> HFunc:
    def definition(d: HDefinition) -> HDefinition:
        pred = None if d.predicate is None else _rewrite(d.predicate, redirect, index)
        return replace(d, predicate=pred,
                       values=tuple(_rewrite(v, redirect, index) for v in d.values),
                       args=tuple(_rewrite(a, redirect, index) for a in d.args))

    init = None if g.init is None else definition(g.init)
    return replace(g, init=init, updates=tuple(definition(d) for d in g.updates))


def _rewrite(root: HExpr, redirect: dict[str, str], index: dict[str, int]) -> HExpr:
    """``root`` with Halide calls to a key of ``redirect`` renamed (its operands only)."""
    def rename(n: HExpr) -> HExpr:
        if n.kind == "Call" and n.call_type == "Halide" and n.name in redirect:
            w = redirect[n.name]
            return replace(n, name=w, func_index=index.get(w, -1))
        return n
    return rebuild(root, finish=rename, rdoms=False)
