"""The statements of an ``@acc`` function, flattened: each assignment with the loops around
it, the conditions it runs under and its place in the sequential order.

This is the memory-based program (Julia's) the translator must turn into Layer I. Two
rewrites keep its meaning when statements become separately scheduled computations:

- ``x = c ? a : b`` becomes ``if c; x = a; else; x = b; end``: Julia evaluates only the
  chosen side, so ``i > 1 ? A[i-1] : 0`` must never read ``A[0]``;
- an ``if`` whose condition reads something its body writes first snapshots the condition
  in a Bool temporary, since each statement of the body re-evaluates its guard.

Integer locals assigned outside every loop from compile-time values (``n = size(A, 1)``,
``N, M = size(A)``) become constants; such a name may be bound again, at the top level, to
the same value (``ni, nk = size(A)`` then ``nk, nj = size(B)``; a different value is
refused, naming both), and ``_`` binds nothing. An Int local assigned once in a loop from
loop variables and constants (``j = i + d``) is the expression itself wherever it is read
afterwards in that loop (so it may bound an inner loop and index affinely). Every other
local is a scalar.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.exprs import Exprs
from frontends.julia.localarrays import (
    LocalArray,
    is_allocation,
    local_array,
    refuse_misplaced,
    zero_fill,
)


@dataclass(frozen=True)
class Loop:
    """One ``for`` of the source: ``var`` takes ``start, start+step, ...`` while not past
    ``stop``. ``id`` tells apart two loops over the same variable."""

    id: int
    var: str
    start: J.Expr
    step: int
    stop: J.Expr
    line: int
    label: str | None


@dataclass(frozen=True)
class Cond:
    expr: J.Expr
    positive: bool


@dataclass
class Stmt:
    """An assignment in context. ``pos[d]`` is its place in the body of its d-th loop
    (``pos[0]`` at the top level): with the loop counters it gives the sequential order."""

    index: int
    node: J.Assign
    loops: tuple[Loop, ...]
    conds: tuple[Cond, ...]
    pos: tuple[int, ...]
    labels: tuple[str, ...]  # its own label, then those of the loops/ifs around it


@dataclass
class Program:
    function: J.Function
    stmts: list[Stmt] = field(default_factory=list)
    consts: dict[str, int] = field(default_factory=dict)
    scalars: set[str] = field(default_factory=set)
    # locals replaced by their defining expression (``j = i + d``): name -> line
    inlined: dict[str, int] = field(default_factory=dict)
    # ``return x``: the array returned, or RESULT (a value stored by a last statement)
    returns: str | None = None


RESULT = "#result"  # the one-element array ``return <value>`` stores into: no Julia name


_INDEX_OPS = frozenset({"+", "-", "*", "÷", "div", "%", "rem", "fld", "mod", "cld", "min",
                        "max"})


def substitute(e: J.Expr, env: dict[str, J.Expr]) -> J.Expr:
    """``e`` with every name of ``env`` replaced by its expression."""
    if not env:
        return e
    if isinstance(e, J.Name):
        return env.get(e.id, e)
    if isinstance(e, J.Ref):
        return replace(e, indices=tuple(substitute(i, env) for i in e.indices))
    if isinstance(e, J.Call):
        return replace(e, args=tuple(substitute(a, env) for a in e.args))
    if isinstance(e, J.Compare):
        return replace(e, operands=tuple(substitute(a, env) for a in e.operands))
    if isinstance(e, J.Logic):
        return replace(e, a=substitute(e.a, env), b=substitute(e.b, env))
    if isinstance(e, J.Ternary):
        return replace(e, cond=substitute(e.cond, env), a=substitute(e.a, env),
                       b=substitute(e.b, env))
    if isinstance(e, J.Range):
        return replace(e, start=substitute(e.start, env), stop=substitute(e.stop, env),
                       step=None if e.step is None else substitute(e.step, env))
    if isinstance(e, J.TupleExpr):
        return replace(e, items=tuple(substitute(a, env) for a in e.items))
    return e


def _substitute_stmt(s: J.Stmt, env: dict[str, J.Expr]) -> J.Stmt:
    """The statement's own expressions substituted (its nested bodies are substituted as
    the flattener reaches them, with the scope they see)."""
    if not env:
        return s
    if isinstance(s, J.Assign):
        t = s.target
        if isinstance(t, J.Ref):
            t = replace(t, indices=tuple(substitute(i, env) for i in t.indices))
        return replace(s, target=t, value=substitute(s.value, env))
    if isinstance(s, J.For):
        return replace(s, iter=substitute(s.iter, env))
    if isinstance(s, J.If):
        return replace(s, cond=substitute(s.cond, env))
    return s


def assigned_names(body: tuple[J.Stmt, ...]) -> dict[str, int]:
    """How many assignments each local name has (tuple targets count for each name)."""
    out: dict[str, int] = {}
    for s in _walk(body):
        if isinstance(s, J.Assign):
            for n in _target_names(s.target):
                out[n] = out.get(n, 0) + 1
    return out


def _walk(body: tuple[J.Stmt, ...]):  # type: ignore[no-untyped-def]
    for s in body:
        yield s
        if isinstance(s, J.For):
            yield from _walk(s.body)
        elif isinstance(s, J.If):
            yield from _walk(s.then)
            yield from _walk(s.orelse)


def _target_names(t: J.Expr) -> list[str]:
    if isinstance(t, J.Name):
        return [t.id]
    if isinstance(t, J.TupleExpr):
        return [n for x in t.items for n in _target_names(x)]
    return []


def reads_of(e: J.Expr) -> set[str]:
    """Every name an expression reads (arrays by name, scalars, loop variables)."""
    out: set[str] = set()
    stack: list[J.Expr] = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, J.Name):
            out.add(x.id)
        elif isinstance(x, J.Ref):
            out.add(x.array)
            stack.extend(x.indices)
        elif isinstance(x, J.Call):
            stack.extend(x.args)
        elif isinstance(x, J.Compare):
            stack.extend(x.operands)
        elif isinstance(x, (J.Logic, J.Ternary)):
            stack.extend([x.a, x.b] + ([x.cond] if isinstance(x, J.Ternary) else []))
        elif isinstance(x, J.Range):
            stack.extend([x.start, x.stop] + ([x.step] if x.step is not None else []))
        elif isinstance(x, J.TupleExpr):
            stack.extend(x.items)
    return out


def written_names(body: tuple[J.Stmt, ...]) -> set[str]:
    out: set[str] = set()
    for s in _walk(body):
        if isinstance(s, J.Assign):
            out.update(_target_names(s.target))
            if isinstance(s.target, J.Ref):
                out.add(s.target.array)
    return out


def _tuple_values(v: J.Expr, n: int, ex: Exprs) -> list[J.Expr | int | None]:
    """The values ``n`` names get from ``v``: ``size(A)``'s sizes, a tuple's items, or (a
    single name) ``v`` itself; None for each when the front-end cannot tell."""
    if n == 1:
        return [v]
    if isinstance(v, J.Call) and v.fn == "size" and len(v.args) == 1 and \
            isinstance(v.args[0], J.Name) and v.args[0].id in ex.arrays and \
            len(ex.arrays[v.args[0].id].sizes) == n:
        return list(ex.arrays[v.args[0].id].sizes)
    if isinstance(v, J.TupleExpr) and len(v.items) == n:
        return list(v.items)
    return [None] * n


class Flattener:
    """Builds a :class:`Program` from a function body; ``ex`` evaluates compile-time Ints
    (its ``consts`` grows as constant locals are found)."""

    def __init__(self, fn: J.Function, ex: Exprs, arg_names: set[str],
                 new_array: Callable[[LocalArray], None] | None = None) -> None:
        self.fn, self.ex, self.args = fn, ex, arg_names
        self.new_array = new_array  # makes a local array's buffer (the translator)
        self.prog = Program(fn, consts=ex.consts)
        self.counts = assigned_names(fn.body)
        self.counts.pop("_", None)  # `_, n = size(A)`: `_` binds nothing
        # names every assignment of which is a plain top-level one: constants if Ints
        self.top_only = {n for n in self.counts if all(
            any(x is s for x in fn.body) and s.op == "=" for s in _walk(fn.body)
            if isinstance(s, J.Assign) and n in _target_names(s.target))}
        self.top_only -= self.runtime_bound()
        self.bound_at: dict[str, int] = {}  # constant name -> line of its first binding
        self.ids = itertools.count()
        self.tmp = itertools.count(1)
        self.active: set[str] = set()  # loop variables in scope
        self.env: dict[str, J.Expr] = {}  # inlined locals in scope (`j = i + d`)

    def fail(self, line: int, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(line, what, self.fn.name)

    def run(self) -> Program:
        self.block(self.fn.body, (), (), (), [0], ())
        return self.prog

    def block(self, body: tuple[J.Stmt, ...], loops: tuple[Loop, ...],
              conds: tuple[Cond, ...], pos: tuple[int, ...], counter: list[int],
              labels: tuple[str, ...]) -> None:
        for s in body:
            s = _substitute_stmt(s, self.env)
            if isinstance(s, J.Return):
                if loops or conds or s is not body[-1] or body is not self.fn.body:
                    raise self.fail(s.line, "return before the end of the function")
                if s.value is not None:
                    self.result(s, counter, labels)
                continue
            if isinstance(s, J.Unsupported):
                raise self.fail(s.line, s.construct)
            if isinstance(s, J.Assign):
                self.assign(s, loops, conds, pos, counter, labels)
            elif isinstance(s, J.For):
                self.loop(s, loops, conds, pos, counter, labels)
            elif isinstance(s, J.If):
                self.branch(s, loops, conds, pos, counter, labels)
            else:
                raise self.fail(getattr(s, "line", 0), f"statement {type(s).__name__}")

    def assign(self, s: J.Assign, loops: tuple[Loop, ...], conds: tuple[Cond, ...],
               pos: tuple[int, ...], counter: list[int], labels: tuple[str, ...]) -> None:
        names = _target_names(s.target)
        for n in names:
            if n in self.args:
                raise self.fail(s.line, f"assignment to argument {n!r} (rebinding an "
                                "argument; assign to its elements or use a local)")
            if n in self.active:
                raise self.fail(s.line, f"assignment to loop variable {n!r}")
        if isinstance(s.target, J.TupleExpr):
            self.tuple_assign(s, loops, conds)
            return
        if is_allocation(s.value):
            if loops or conds or s.op != "=" or not isinstance(s.target, J.Name) or \
                    self.counts.get(s.target.id) != 1 or self.new_array is None:
                raise refuse_misplaced(s.line, self.fn.name)
            assert isinstance(s.value, J.Call)
            arr = local_array(s.target.id, s.value, self.ex)
            self.new_array(arr)
            if arr.zeroed:
                fill = zero_fill(arr, s.line)
                self.loop(replace(fill, label=s.label) if s.label else fill, loops, conds,
                          pos, counter, labels)
            return
        if isinstance(s.target, J.Name) and not loops and not conds and s.op == "=" and \
                s.target.id in self.top_only and s.target.id not in self.prog.scalars:
            v = self.ex.const_int(s.value)
            if v is not None or s.target.id in self.prog.consts:
                self.bind_const(s.target.id, v, s.line)
                return
        if isinstance(s.target, J.Name) and loops and not conds and s.op == "=" and \
                not s.label and self.counts.get(s.target.id) == 1 and \
                self.index_pure(s.value):
            self.env[s.target.id] = s.value  # read as its expression from here on
            self.prog.inlined[s.target.id] = s.line
            return
        if isinstance(s.value, J.Ternary) and s.op == "=":
            # Julia evaluates one side only: a statement per side, under the condition
            a = J.Assign(s.target, "=", s.value.a, s.line, s.label)
            b = J.Assign(s.target, "=", s.value.b, s.line, s.label)
            self.branch(J.If(s.value.cond, (a,), (b,), s.line), loops, conds, pos, counter,
                        labels)
            return
        if isinstance(s.target, J.Name):
            self.prog.scalars.add(s.target.id)
        elif not isinstance(s.target, J.Ref):
            raise self.fail(s.line, "assignment target")
        if s.op not in ("=", "+=", "-=", "*=", "/="):
            raise self.fail(s.line, f"update operator {s.op}")
        own = (s.label,) if s.label else ()
        self.prog.stmts.append(Stmt(len(self.prog.stmts), s, loops, conds,
                                    pos + (counter[0],), own + labels))
        counter[0] += 1

    def result(self, s: J.Return, counter: list[int], labels: tuple[str, ...]) -> None:
        """``return A`` of an array names it as the result; ``return e`` stores ``e`` in a
        one-element array (RESULT) after everything else."""
        v = s.value
        assert v is not None
        if isinstance(v, J.Name) and v.id in self.ex.arrays:
            self.prog.returns = v.id
            return
        self.prog.returns = RESULT
        one = J.Num(1, "Int64", s.line)
        self.assign(J.Assign(J.Ref(RESULT, (one,), s.line), "=", v, s.line), (), (), (),
                    counter, labels)

    def tuple_assign(self, s: J.Assign, loops: tuple[Loop, ...],
                     conds: tuple[Cond, ...]) -> None:
        """``N, M = size(A)``: constants from an array's sizes, nothing else."""
        t = s.target
        assert isinstance(t, J.TupleExpr)
        v = s.value
        sizes: list[int | None] = []
        if isinstance(v, J.Call) and v.fn == "size" and len(v.args) == 1 and \
                isinstance(v.args[0], J.Name) and v.args[0].id in self.ex.arrays:
            sizes = list(self.ex.arrays[v.args[0].id].sizes)
        elif isinstance(v, J.TupleExpr):
            sizes = [self.ex.const_int(x) for x in v.items]
        if loops or conds or s.op != "=" or not sizes or None in sizes:
            raise self.fail(s.line, "tuple assignment other than `a, b = size(A)` or a "
                            "tuple of constant Ints at the top level")
        if len(t.items) != len(sizes):
            raise self.fail(s.line, f"{len(t.items)} names for {len(sizes)} values")
        for item, n in zip(t.items, sizes, strict=True):
            if not isinstance(item, J.Name) or (item.id != "_" and (
                    item.id not in self.top_only or item.id in self.prog.scalars)):
                raise self.fail(s.line, "size names must be plain names, bound only at "
                                "the top level of the function")
            if item.id != "_":
                self.bind_const(item.id, n, s.line)

    def runtime_bound(self) -> set[str]:
        """The top-level names some binding of which is not a compile-time Int (``n = 5``
        then ``n = x[1] * 2``): ordinary locals, not constants. Found by evaluating the
        top-level bindings in order on a scratch copy of the constants."""
        saved, scratch = self.ex.consts, dict(self.ex.consts)
        out: set[str] = set()
        self.ex.consts = scratch
        try:
            for s in self.fn.body:
                if not isinstance(s, J.Assign) or s.op != "=":
                    continue
                targets = (s.target.items if isinstance(s.target, J.TupleExpr)
                           else (s.target,))
                values = _tuple_values(s.value, len(targets), self.ex)
                for t, v in zip(targets, values, strict=True):
                    if not isinstance(t, J.Name) or t.id not in self.top_only:
                        continue
                    try:
                        got = self.ex.const_int(v) if isinstance(v, J.Expr) else v
                    except UnsupportedJulia:
                        got = None
                    if got is None:
                        out.add(t.id)
                        scratch.pop(t.id, None)
                    else:
                        scratch[t.id] = got
        finally:
            self.ex.consts = saved
        return out

    def bind_const(self, name: str, value: int | None, line: int) -> None:
        """``name`` is the constant ``value``; binding it again must give the same value:
        the kernel is specialized on one value per name (Julia would just rebind it)."""
        old = self.prog.consts.get(name)
        if old is None:
            assert value is not None
            self.prog.consts[name] = value
            self.bound_at[name] = line
        elif value != old:
            now = "a value not known at compile time" if value is None else value
            raise self.fail(line, f"{name!r} bound again to {now}, but it is {old} since "
                            f"line {self.bound_at[name]} (a size or constant name must keep "
                            "one value: here the arrays' sizes disagree)")

    def index_pure(self, e: J.Expr) -> bool:
        """Whether ``e`` is Int arithmetic on loop variables in scope and constants (its
        value is then fixed for the rest of the iteration that assigns it)."""
        if self.ex.const_int(e) is not None:
            return True
        if isinstance(e, J.Name):
            return e.id in self.active
        if isinstance(e, J.Call) and e.fn in _INDEX_OPS:
            return all(self.index_pure(a) for a in e.args)
        return False

    def loop(self, s: J.For, loops: tuple[Loop, ...], conds: tuple[Cond, ...],
             pos: tuple[int, ...], counter: list[int], labels: tuple[str, ...]) -> None:
        if s.var in self.active or s.var in self.args or s.var in self.counts:
            raise self.fail(s.line, f"loop variable {s.var!r} shadows another name")
        start, step, stop = self.range_of(s.iter, s.line)
        lp = Loop(next(self.ids), s.var, start, step, stop, s.line, s.label)
        self.active.add(s.var)
        inner = [0]
        own = (s.label,) if s.label else ()
        env = dict(self.env)  # a local assigned in the body lives as long as the body
        try:
            self.block(s.body, loops + (lp,), conds, pos + (counter[0],), inner,
                       own + labels)
        finally:
            self.active.discard(s.var)
            self.env = env
        counter[0] += 1

    def range_of(self, it: J.Expr, line: int) -> tuple[J.Expr, int, J.Expr]:
        if isinstance(it, J.Range):
            step = 1 if it.step is None else self.ex.const_int(it.step)
            if step is None or step == 0:
                raise self.fail(line, "a loop step that is not a nonzero constant Int")
            return it.start, step, it.stop
        one = J.Num(1, "Int64", line)
        if isinstance(it, J.Call) and it.fn == "axes" and len(it.args) == 2:
            return one, 1, J.Call("size", it.args, line)
        if isinstance(it, J.Call) and it.fn in ("eachindex", "axes") and len(it.args) == 1 \
                and isinstance(it.args[0], J.Name) and it.args[0].id in self.ex.arrays:
            arr = self.ex.arrays[it.args[0].id]
            if len(arr.sizes) != 1:
                raise self.fail(line, f"{it.fn} of a {len(arr.sizes)}-d array (linear "
                                "indexing)")
            return one, 1, J.Call("length", it.args, line)
        raise self.fail(line, "loop over something other than a range a:b, a:s:b, "
                        "axes(A, d) or eachindex(v)")

    def branch(self, s: J.If, loops: tuple[Loop, ...], conds: tuple[Cond, ...],
               pos: tuple[int, ...], counter: list[int], labels: tuple[str, ...]) -> None:
        cond = s.cond
        touched = reads_of(cond) & (written_names(s.then) | written_names(s.orelse))
        if touched:
            # snapshot: every statement of the body re-evaluates its guard
            tmp = f"cond{next(self.tmp)}_L{s.line}"
            while tmp in self.counts or tmp in self.args:
                tmp += "_"
            self.counts[tmp] = 1
            snap = J.Assign(J.Name(tmp, s.line), "=", cond, s.line)
            self.prog.scalars.add(tmp)
            self.prog.stmts.append(Stmt(len(self.prog.stmts), snap, loops, conds,
                                        pos + (counter[0],), labels))
            counter[0] += 1
            cond = J.Name(tmp, s.line)
        own = (s.label,) if s.label else ()
        self.block(s.then, loops, conds + (Cond(cond, True),), pos, counter, own + labels)
        self.block(s.orelse, loops, conds + (Cond(cond, False),), pos, counter,
                   own + labels)
