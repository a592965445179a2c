"""Substituting the inlined functions of a lowered program back into its statements, for a
target that prints no functions (``Program.functions``; see ``middleend/passes/inlining.py``).

Such a target gets what every target got before inlined bodies could be functions: each
call replaced by the body at the call's point. The code is the same values; its size is
what substitution gives (exponential in a pyramid's depth, which is why the CPU target
prints functions instead), so a target calls this only where it cannot print calls.
"""

from __future__ import annotations

import dataclasses

from .expr import Expr, rebuild
from .loopast import (
    BufAccess,
    FnCall,
    InlineFunction,
    IterRef,
    LocalArg,
    LocalElement,
    Program,
)


def substitute_calls(program: Program) -> Program:
    """``program`` with every ``FnCall`` replaced by its function's body at its point and
    no functions; a program without functions is returned as is."""
    if not program.functions:
        return program
    funcs = {f.name: f for f in program.functions}

    def subst(e: Expr, repl: dict[str, Expr]) -> Expr:
        memo: dict[int, Expr] = {}

        def node(n: Expr) -> Expr | None:
            if isinstance(n, IterRef):
                return repl.get(n.name)
            if isinstance(n, BufAccess):
                idx = tuple(rebuild(i, node, memo) for i in n.indices)
                return dataclasses.replace(n, indices=idx)
            if isinstance(n, FnCall):
                return _body_at(funcs[n.fn], tuple(rebuild(a, node, memo) for a in n.args))
            if isinstance(n, LocalElement):
                return _local_element(n, [rebuild(a, node, memo) for a in n.children()])
            return None

        return rebuild(e, node, memo)

    def _local_element(n: LocalElement, kids: list[Expr]) -> Expr:
        # the statement's own read of the iteration's buffer, at its offsets
        k = len(n.indices)
        offs = kids[k:]
        names = tuple(o.offset_name for o in offs if isinstance(o, LocalArg))
        if len(names) == len(offs):
            return BufAccess(n.buffer, tuple(kids[:k]), n.type_, names, checked=True)
        return dataclasses.replace(n, indices=tuple(kids[:k]), offsets=tuple(offs))

    def _body_at(f: InlineFunction, args: tuple[Expr, ...]) -> Expr:
        return subst(f.body, dict(zip(f.params, args, strict=True)))

    def here(e: Expr | None) -> Expr | None:  # at the statement's own iterators
        return None if e is None else subst(e, {})

    stmts = {}
    for name, s in program.stmts.items():
        store = s.store if s.store is None else here(s.store)
        assert store is None or isinstance(store, BufAccess)
        atomic = s.atomic if s.atomic is None else (s.atomic[0], subst(s.atomic[1], {}))
        stmts[name] = dataclasses.replace(s, value=here(s.value), guard=here(s.guard),
                                          store=store, atomic=atomic)
    return dataclasses.replace(program, stmts=stmts, functions=())
