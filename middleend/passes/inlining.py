"""Inlining (``c.inline()``): an inlined computation's body replaces its reads, either by
substitution or, where substitution would multiply the program, as a call.

Substitution rewrites every read ``P[f(x)]`` into P's body with P's iterators replaced by
``f(x)``. Through a pyramid of inlined stages this is exponential however the nodes are
shared, because the substituted bodies are distinct functions of the consumer's iterators:
Halide's interpolate inlined over L levels reads its level-0 Func at about 16^L distinct
quasi-affine index tuples (19 247 distinct (stage, index) pairs at 4 levels, 338 223 at 5),
and every later pass pays for each. A *call* keeps P's body once, as a function of P's
iterators, and the consumer keeps ``P[f(x)]``: the program grows with the number of stages.
The values are the same (the body is evaluated at the same point, with the same
operations); the C printer emits a function per called body.

A body becomes a call when, substituted, it would have more than :data:`EXPANSION_LIMIT`
distinct nodes and it reads only kernel inputs, values of computations a function can
address (:func:`storage_of`) and other called bodies. Those are the computations kept in
a whole buffer of their own (no command but loop transformations, orderings and a
store_in at affine indices names them: Halide's compute_root Funcs) and those computed or
allocated at a loop of a consumer (compute_at, allocate_at: Halide's compute_at Funcs),
whose buffer per iteration a call made inside that iteration passes to the function as
a typed pointer and its offsets (:mod:`.program`, ``FnCall.locals``, ``LocalArg``). A
folded or copied computation, or one with a memory tag, lives where only the reading
statement's code can address it, so bodies reading it are substituted, as are the
bodies under the limit: small pipelines lower to the same code.

What the analyses see of a call is in :mod:`.layer1` (``_call_reads``): per reading
statement, one read of each input or computation its calls reach. For a computation
computed or allocated at a loop it is the calls' footprint (:mod:`.footprint`: per
function, the simple hull of what its body reads, composed through the calls), since
compute_at computes per iteration what is read there; a hull holds every instance read
and a few more near clamped edges, which are then computed too. For the others it is
any element or instance, handled as a data-dependent read is. This is the one
over-approximation: the exact composition of the calls' relations with the bodies' reads
costs what substitution cost (unions of thousands of clamped pieces). For inputs nothing
is lost (nothing writes them; their reads are bounds-checked at run time unless the
printer proves a subscript in bounds, as it does a clamped one). A computation in a whole
buffer so read must be computed entirely before the reading statement, which its being
kept in a whole buffer already implies for a Halide compute_root Func; a schedule
interleaving the two (``after`` at a loop: fusing them) is refused although it may be
legal.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..ir import commands as cmd
from ..ir.errors import DefinitionError
from ..ir.expr import Access, Expr, rebuild, walk_shared, wrap
from ..ir.function import INPUT, Buffer, Computation, Var

if TYPE_CHECKING:
    from .layer1 import Comp

# A substituted body with more distinct nodes than this becomes a call (when it may): a
# blur or a boundary condition stays far under it; a pyramid's levels pass it every level
# or two (Halide's interpolate: 1 function at 2 levels, 9 at 10). At 3000 the called bodies
# are larger and fewer: lowering interpolate inlined at 10 levels took 1.4 s instead of
# 0.2 s and its C was 1 MB instead of 0.2 MB (gcc 7.6 s instead of 1.0 s).
EXPANSION_LIMIT = 500


def inline(comps: dict[str, Comp], inline_names: list[str], commands: list[cmd.Command],
           limit: int | None = None) -> dict[str, Comp]:
    """Substitute or call every computation of ``inline_names`` in the others, which stay
    in ``comps``; return those kept as called functions (their bodies with their own
    inlined producers substituted or called in turn). ``limit``: :data:`EXPANSION_LIMIT`
    unless given."""
    limit = EXPANSION_LIMIT if limit is None else limit
    for name in inline_names:
        _check_inlinable(comps, name, commands)
    inl = {n: comps[n] for n in inline_names}
    plain = {n for n in comps if n not in inl and storage_of(n, commands) != "other"}
    bodies: dict[str, Expr] = {}
    called: set[str] = set()

    def body(name: str, stack: tuple[str, ...]) -> Expr:
        """``name``'s expression with its own inlined producers substituted, once."""
        got = bodies.get(name)
        if got is None:
            if name in stack:
                raise DefinitionError(f"inlining cycle among {list(stack)}")
            got = bodies[name] = subst(inl[name].expr, (*stack, name))
            if _size(got, limit) > limit and _callable(got, called, plain):
                called.add(name)
        return got

    def subst(e: Expr, stack: tuple[str, ...] = ()) -> Expr:
        # shared subtrees stay shared (memo): a pipeline inlined through several levels
        # repeats its producers' bodies, and the expression costs its distinct nodes
        memo: dict[int, Expr] = {}

        def f(n: Expr) -> Expr | None:
            if isinstance(n, Access) and isinstance(n.target, Computation) and \
                    n.target.name in inl:
                p = inl[n.target.name]
                idx = tuple(rebuild(ix, f, memo) for ix in n.indices)
                b = body(p.name, stack)
                if p.name in called:
                    return Access(n.target, idx)
                return _replace_vars(b, dict(zip(p.vars, idx, strict=True)))
            return None

        return rebuild(e, f, memo)

    for c in comps.values():
        if c.name not in inl:
            c.expr = subst(c.expr)
            if c.guard is not None:
                c.guard = subst(c.guard)
            if c.store_index is not None:
                c.store_index = tuple(subst(e) for e in c.store_index)
    for n in inline_names:
        del comps[n]
    out = {}
    for n in inline_names:  # declaration order, callees of a body before it or after
        if n in called:
            inl[n].expr = bodies[n]
            out[n] = inl[n]
    return out


def _check_inlinable(comps: dict[str, Comp], name: str, commands: list[cmd.Command]) -> None:
    p = comps[name]
    if p.guard is not None:
        raise DefinitionError(f"{name}.inline(): a computation with a non-affine "
                              "predicate cannot be inlined")
    if any(isinstance(c, (cmd.StoreIn, cmd.ComputeAt)) and c.comp == name for c in commands):
        raise DefinitionError(f"{name}.inline(): an inlined computation cannot also be "
                              "stored or computed at a loop level")
    for c in comps.values():
        for r in c.reads:
            if r.kind == "value" and r.target == name and r.access is not None:
                outside = r.access.range().subtract(p.domain)
                if not outside.is_empty():
                    raise DefinitionError(
                        f"{name}.inline(): {c.name!r} reads {name!r} outside its domain "
                        f"at {outside}")


def _size(e: Expr, limit: int) -> int:
    """The number of distinct nodes of ``e``, counted up to just past ``limit``."""
    k = 0
    for _ in walk_shared(e):
        k += 1
        if k > limit:
            break
    return k


def _callable(e: Expr, called: set[str], plain: set[str]) -> bool:
    """Whether a body may be a function: it reads only kernel inputs, values of ``plain``
    computations (in a whole buffer, or in a buffer per iteration its callers pass it)
    and other called bodies."""
    for n in walk_shared(e):
        if isinstance(n, Access):
            t = n.target
            if isinstance(t, Computation):
                if t.name not in called and t.name not in plain:
                    return False
            elif not isinstance(t, Buffer) or t.kind != INPUT:
                return False
    return True


# the commands that leave a computation's values in its own whole buffer, at their
# logical index, for the whole kernel (loop transformations and orderings)
_PLACEMENT_ONLY = (cmd.Interchange, cmd.Split, cmd.Fuse, cmd.Tile, cmd.Shift, cmd.Skew,
                   cmd.Reverse, cmd.After, cmd.Unroll, cmd.Vectorize, cmd.Parallelize)


def storage_of(name: str, commands: list[cmd.Command]) -> str:
    """Where a function finds ``name``'s values: ``"whole"`` (its own whole buffer, at the
    logical index or an affine store_in index: nothing but loop transformations, orderings
    and such a store_in names it), ``"loop"`` (computed or allocated at a loop of a
    consumer: a buffer per iteration, which the calls made there pass to the function, see
    :mod:`.program`) or ``"other"`` (a fold, a copy, a memory tag...: only the statement's
    code addresses it, so bodies reading it are substituted)."""
    out = "whole"
    for c in commands:
        if isinstance(c, _PLACEMENT_ONLY):
            continue
        if isinstance(c, cmd.StoreIn) and c.comp == name and not any(
                isinstance(n, Access) for i in c.indices or () for n in walk_shared(wrap(i))):
            continue  # another whole buffer, at an affine index (Layer III maps it)
        if isinstance(c, (cmd.ComputeAt, cmd.AllocateAt)):
            if c.comp == name:
                out = "loop"
            continue  # a consumer's own storage does not change
        if any(getattr(c, f.name) == name for f in dataclasses.fields(c)):
            return "other"
    return out


def _replace_vars(e: Expr, repl: dict[str, Expr]) -> Expr:
    return rebuild(e, lambda n: repl.get(n.name) if isinstance(n, Var) else None, {})
