"""The Funcs a realization needs and their producer-consumer order.

``func_names_in_order`` in the serialized pipeline is alphabetical, so the order is rebuilt
from the calls themselves: a Func comes after every Func it calls (its own recursive calls
in updates excepted), and the outputs are the roots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.hir import HDefinition, HExpr, HFunc, HPipeline


def exprs_of(d: HDefinition) -> Iterator[HExpr]:
    """The expression roots of a definition: values, left-hand-side args, predicate."""
    yield from d.values
    yield from d.args
    if d.predicate is not None:
        yield d.predicate


def walk(root: HExpr) -> Iterator[HExpr]:
    """Every node of ``root`` (iteratively: serialized trees can be deep), RDom bounds and
    predicates of reduction variables included."""
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def children(e: HExpr, rdoms: bool = True) -> list[HExpr]:
    """``e``'s operands, and with ``rdoms`` the bounds and predicate of its RDom."""
    out = list(e.args)
    if rdoms and e.rdom is not None:
        for rv in e.rdom.vars:
            out += (rv.min, rv.extent)
        if e.rdom.predicate is not None:
            out.append(e.rdom.predicate)
    return out


def rebuild(root: HExpr, substitute: Callable[[HExpr], HExpr | None] = lambda n: None,
            finish: Callable[[HExpr], HExpr] = lambda n: n, rdoms: bool = True) -> HExpr:
    """``root`` rebuilt bottom-up: a node for which ``substitute`` gives an expression is
    replaced by it (and not entered); every other node gets its rebuilt operands (and,
    with ``rdoms``, RDom bounds), then ``finish``. Iterative, because serialized trees can
    be deeper than Python's recursion limit; a subtree shared by several parents is
    rebuilt once, and a node whose parts did not change is kept as it is."""
    done: dict[int, HExpr] = {}
    stack: list[tuple[HExpr, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        if not expanded:
            if (got := substitute(n)) is not None:
                done[id(n)] = got
                continue
            stack.append((n, True))
            stack.extend((c, False) for c in children(n, rdoms) if id(c) not in done)
            continue
        args = tuple(done[id(a)] for a in n.args)
        rdom = n.rdom
        if rdoms and rdom is not None:
            rdom = dataclasses.replace(rdom, vars=tuple(
                dataclasses.replace(rv, min=done[id(rv.min)], extent=done[id(rv.extent)])
                for rv in rdom.vars), predicate=None if rdom.predicate is None
                else done[id(rdom.predicate)])
        changed = any(a is not b for a, b in zip(args, n.args, strict=True)) or (
            n.rdom is not None and rdom != n.rdom)
        done[id(n)] = finish(dataclasses.replace(n, args=args, rdom=rdom) if changed else n)
    return done[id(root)]


def definitions(f: HFunc) -> list[HDefinition]:
    """The stages of ``f``: the pure definition, then the updates in order."""
    if f.init is None:
        raise UnsupportedHalideFeature(f.name, None, "a Func without a definition")
    return [f.init, *f.updates]


def callees(f: HFunc) -> set[str]:
    out: set[str] = set()
    for d in definitions(f):
        for root in exprs_of(d):
            for n in walk(root):
                if n.kind == "Call" and n.call_type == "Halide" and n.name != f.name:
                    out.add(n.name)
    return out


def producer_order(p: HPipeline, outputs: list[str]) -> list[str]:
    """Funcs reachable from ``outputs``, every producer before its consumers."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1 = on the path, 2 = done
    for root in outputs:
        stack: list[tuple[str, list[str]]] = []
        if state.get(root) == 2:
            continue
        state[root] = 1
        stack.append((root, sorted(callees(_func(p, root)))))
        while stack:
            name, todo = stack[-1]
            if not todo:
                stack.pop()
                state[name] = 2
                order.append(name)
                continue
            nxt = todo.pop()
            s = state.get(nxt)
            if s == 1:
                raise UnsupportedHalideFeature(name, None, f"a call cycle through {nxt!r}")
            if s is None:
                state[nxt] = 1
                stack.append((nxt, sorted(callees(_func(p, nxt)))))
    return order


def _func(p: HPipeline, name: str) -> HFunc:
    try:
        return p.func(name)
    except KeyError:
        raise UnsupportedHalideFeature(name, None, "a call to a Func missing from the "
                                       "serialized pipeline") from None


def reads_a_sibling(f: HFunc, d: HDefinition, k: int) -> bool:
    """Whether a Tuple update's element reads another element of the Func: then every
    element must see the values from before the update (Halide's semantics), which the
    elements computed one after the other would not give."""
    if len(d.values) > 1 and any(n.kind == "Call" and n.name == f.name for a in (
            *d.args, *([d.predicate] if d.predicate is not None else [])) for n in walk(a)):
        raise UnsupportedHalideFeature(f.name, k, "a Tuple update whose store index or "
                                       "predicate reads the Func itself")
    for vi, v in enumerate(d.values):
        for n in walk(v):
            if n.kind == "Call" and n.call_type == "Halide" and n.name == f.name and \
                    n.value_index != vi:
                return True
    return False
