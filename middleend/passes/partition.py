"""Loop partitioning: split a loop into a prologue, a steady state and an epilogue so that
in the steady state the index clamps of its statements cannot bind.

Why: boundary conditions (Halide's ``repeat_edge``, a ``clamp`` in a Julia kernel) put a
``min``/``max`` on every read of the inner loop; the loads are then gathers that gcc will
not vectorize, and a 3x3 convolution runs several times slower than the same schedule in
Halide, which partitions its loops the same way. Only the split points are decided here,
heuristically; whether a clamp is dropped is decided when the statement is printed, from
the ranges of the loops around it (:mod:`middleend.ir.intervals`), so a split can never
change a result: executing the iterations of one loop as three consecutive loops is the
same program.

Loops are split only where that is certainly the same program for every target: step 1,
the canonical ``var <= hi`` bound, no tag other than ``parallel`` (vector and unrolled
loops are left whole: their enclosing loop is split instead), and no statement on a
device or loop that another target maps (GPU, MPI, FPGA) below them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from fractions import Fraction

from ..ir.expr import Binary, Cast, Const, Expr, Unary
from ..ir.intervals import Interval, iexpr_interval, loop_range
from ..ir.loopast import (
    Alloc,
    Block,
    BufAccess,
    For,
    IExpr,
    If,
    IInt,
    IOp,
    IterRef,
    IVar,
    Node,
    Program,
    Stmt,
    StmtInfo,
    walk_loops,
    walk_nodes,
)

# Most statements below a loop that is split (each split copies them three times).
MAX_STATEMENTS = 48
# Most splits on one path from the root (3^depth copies of the innermost statements).
MAX_DEPTH = 3
_SPLITTABLE_TAGS = (None, "parallel")
_HOST_TAGS = (None, "parallel", "vector", "unroll")

Linear = dict[str, int]  # loop iterator (or "" for the constant) -> coefficient


def _lin_add(a: Linear, b: Linear, sign: int = 1) -> Linear:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
    return out


def _ilinear(e: IExpr) -> Linear | None:
    """``e`` as an affine form over loop iterators, or None."""
    if isinstance(e, IInt):
        return {"": e.value}
    if isinstance(e, IVar):
        return {e.name: 1}
    if isinstance(e, IOp) and e.op in ("add", "sub") and len(e.args) == 2:
        a, b = _ilinear(e.args[0]), _ilinear(e.args[1])
        return None if a is None or b is None else _lin_add(a, b, 1 if e.op == "add" else -1)
    if isinstance(e, IOp) and e.op == "neg":
        a = _ilinear(e.args[0])
        return None if a is None else {k: -v for k, v in a.items()}
    if isinstance(e, IOp) and e.op == "mul" and len(e.args) == 2:
        return _lin_mul(_ilinear(e.args[0]), _ilinear(e.args[1]))
    return None


def _lin_mul(a: Linear | None, b: Linear | None) -> Linear | None:
    """``a * b`` when one of them is a constant (the product stays affine), else None."""
    if a is None or b is None:
        return None
    for x, y in ((a, b), (b, a)):
        if set(x) <= {""}:
            c = x.get("", 0)
            return {k: c * v for k, v in y.items()}
    return None


@dataclasses.dataclass(frozen=True)
class _Clamp:
    """``form <= bound`` (``upper``) or ``form >= bound`` must hold for a clamp to be a
    no-op; ``form`` is affine over loop iterators."""

    form: Linear
    upper: bool
    bound: int


class _Clamps:
    """The clamps of one statement's indices, as affine conditions over loop iterators."""

    def __init__(self, iters: Mapping[str, Linear]) -> None:
        self.iters = iters
        self.found: list[_Clamp] = []
        # nodes visited (an inlined pipeline's expression shares subtrees: each is scanned
        # once) and clamps recorded (each once)
        self._seen: set[int] = set()
        self._indexed: set[int] = set()
        self._linear: dict[int, Linear | None] = {}
        self._keys: set[tuple[object, ...]] = set()

    def _record(self, c: _Clamp) -> None:
        key = (tuple(sorted(c.form.items())), c.upper, c.bound)
        if key not in self._keys:
            self._keys.add(key)
            self.found.append(c)

    def linear(self, e: Expr) -> Linear | None:
        """The affine form of an integer index expression, assuming its clamps do not
        bind (each one met is recorded). Memoized per node (callers never mutate it)."""
        if id(e) in self._linear:
            return self._linear[id(e)]
        out = self._linear[id(e)] = self._linear_of(e)
        return out

    def _linear_of(self, e: Expr) -> Linear | None:
        if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return {"": e.value}
        if isinstance(e, IterRef):
            return self.iters.get(e.name)
        if isinstance(e, Unary) and e.op == "neg":
            a = self.linear(e.a)
            return None if a is None else {k: -v for k, v in a.items()}
        if isinstance(e, Cast) and e.type_.is_int and e.a.dtype.is_int:
            return self.linear(e.a)
        if not (isinstance(e, Binary) and e.type_.is_int):
            return None
        if e.op in ("add", "sub"):
            a, b = self.linear(e.a), self.linear(e.b)
            return None if a is None or b is None else _lin_add(a, b, 1 if e.op == "add"
                                                               else -1)
        if e.op == "mul":
            return _lin_mul(self.linear(e.a), self.linear(e.b))
        if e.op in ("min", "max"):
            a, b = self.linear(e.a), self.linear(e.b)
            if a is None or b is None:
                return None
            for x, y in ((a, b), (b, a)):
                if set(y) <= {""}:  # min(x, const): the clamp binds unless x <= const
                    self._record(_Clamp(x, e.op == "min", y.get("", 0)))
                    return x
        return None

    def scan(self, e: Expr) -> None:
        """Record the clamps in every index of every buffer access under ``e``."""
        stack = [e]
        while stack:
            x = stack.pop()
            if id(x) in self._seen:
                continue
            self._seen.add(id(x))
            if isinstance(x, BufAccess):
                for ix in x.indices:
                    self._index(ix)
            stack.extend(x.children())

    def _index(self, e: Expr) -> None:
        if id(e) in self._indexed:
            return
        self._indexed.add(id(e))
        if self.linear(e) is None:  # not affine: look for affine clamps inside it
            for c in e.children():
                if not isinstance(c, BufAccess):
                    self._index(c)


def _steady(form: Linear, upper: bool, bound: int, var: str,
            env: Mapping[str, Interval]) -> tuple[int | None, int | None] | None:
    """The range of ``var`` where ``form <= bound`` (``upper``) or ``form >= bound`` holds
    for every value of the other iterators in ``env``: (first, last), None meaning
    unbounded on that side; None if it never depends on ``var``."""
    a = form.get(var, 0)
    if a == 0:
        return None
    rest = iexpr_interval(_as_iexpr({k: v for k, v in form.items() if k != var}), env)
    if rest is None:
        return None
    # upper: a*var + rest_hi <= bound; lower: a*var + rest_lo >= bound
    k = Fraction(bound - (rest[1] if upper else rest[0]), a)
    if (a > 0) == upper:  # var <= k
        return None, math.floor(k)
    return math.ceil(k), None


def _as_iexpr(form: Linear) -> IExpr:
    out: IExpr = IInt(form.get("", 0))
    for k, v in form.items():
        if k and v:
            out = IOp("add", (out, IOp("mul", (IInt(v), IVar(k)))))
    return out


def _stmts_below(n: Node, env: dict[str, Interval]
                 ) -> Iterator[tuple[Stmt, dict[str, Interval]]]:
    """Each statement under ``n`` with the ranges of the loops around it (inner loops'
    ranges computed over every value of the outer ones)."""
    for x, fors in walk_loops(n):
        if not isinstance(x, Stmt):
            continue
        ranges = dict(env)
        for f in fors:
            rng = loop_range(f, ranges)
            if rng is None:
                ranges.pop(f.var, None)
            else:
                ranges[f.var] = rng
        yield x, ranges


class _Partitioner:
    def __init__(self, program: Program) -> None:
        self.stmts: Mapping[str, StmtInfo] = program.stmts

    def _host_only(self, n: Node) -> bool:
        for x, _ in walk_nodes(n):
            if isinstance(x, For) and x.tag not in _HOST_TAGS:
                return False
            if isinstance(x, Stmt):
                info = self.stmts.get(x.comp)
                if info is None or info.device or info.op not in (None, "copy"):
                    return False
        return True

    def node(self, n: Node, env: dict[str, Interval], depth: int) -> Node:
        if isinstance(n, Block):
            return Block(tuple(self.node(c, env, depth) for c in n.body))
        if isinstance(n, If):
            return If(n.cond, self.node(n.then, env, depth),
                      None if n.orelse is None else self.node(n.orelse, env, depth))
        if isinstance(n, Alloc):
            return Alloc(n.buffer, self.node(n.body, env, depth))
        if isinstance(n, For):
            return self._for(n, env, depth)
        return n

    def _inner(self, f: For, env: dict[str, Interval], rng: Interval | None,
               depth: int) -> For:
        inner = {**env, f.var: rng} if rng is not None else \
            {k: v for k, v in env.items() if k != f.var}
        return dataclasses.replace(f, body=self.node(f.body, inner, depth))

    def _for(self, f: For, env: dict[str, Interval], depth: int) -> Node:
        rng = loop_range(f, env)
        split = self._split_points(f, env, rng) if depth < MAX_DEPTH else None
        if split is None or rng is None:
            return self._inner(f, env, rng, depth)
        first, last = split
        pieces: list[Node] = []
        if first > rng[0]:
            pieces.append(self._piece(f, None, first - 1, env, (rng[0], first - 1), depth))
        pieces.append(self._piece(f, first, last, env, (first, last), depth))
        if last < rng[1]:
            pieces.append(self._piece(f, last + 1, None, env, (last + 1, rng[1]), depth))
        return Block(tuple(pieces))

    def _piece(self, f: For, lo: int | None, hi: int | None, env: dict[str, Interval],
               rng: Interval, depth: int) -> For:
        """``f`` restricted to ``lo <= var <= hi`` (None: the loop's own bound)."""
        assert f.hi is not None
        init = f.init if lo is None else _max(f.init, lo)
        top = f.hi if hi is None else _min(f.hi, hi)
        piece = dataclasses.replace(f, init=init, hi=top, cond=IOp("le", (IVar(f.var), top)))
        return self._inner(piece, env, rng, depth + 1)

    def _split_points(self, f: For, env: dict[str, Interval], rng: Interval | None
                      ) -> Interval | None:
        """Where the clamps below ``f`` that depend on its iterator cannot bind, when that
        is a proper, non-empty part of its range."""
        if rng is None or f.tag not in _SPLITTABLE_TAGS or f.step != 1 or f.hi is None:
            return None
        if not self._host_only(f.body):
            return None
        below = list(_stmts_below(f.body, {**env, f.var: rng}))
        if not below or len(below) > MAX_STATEMENTS:
            return None
        first, last = rng
        found = False
        for s, loops in below:
            info = self.stmts[s.comp]
            iters: dict[str, Linear] = {}
            for name, e in s.bindings:
                form = _ilinear(e)
                if form is not None and name.startswith("v_"):
                    iters[name[2:]] = form
            clamps = _Clamps(iters)
            for e in (info.value, info.store, info.guard):
                if e is not None:
                    clamps.scan(e)
            for c in clamps.found:
                side = _steady(c.form, c.upper, c.bound, f.var, loops)
                if side is None:
                    continue
                found = True
                if side[0] is not None:
                    first = max(first, side[0])
                if side[1] is not None:
                    last = min(last, side[1])
        if not found or first > last or (first, last) == rng:
            return None
        return first, last


def _max(a: IExpr, b: int) -> IExpr:
    return IInt(max(a.value, b)) if isinstance(a, IInt) else IOp("max", (a, IInt(b)))


def _min(a: IExpr, b: int) -> IExpr:
    return IInt(min(a.value, b)) if isinstance(a, IInt) else IOp("min", (a, IInt(b)))


def partition_loops(program: Program) -> Program:
    """``program`` with its loops split where clamps stop binding (see the module)."""
    body = _Partitioner(program).node(program.body, {}, 0)
    return dataclasses.replace(program, body=body)


__all__ = ["MAX_DEPTH", "MAX_STATEMENTS", "partition_loops"]
