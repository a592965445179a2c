"""The function's ``@schedule`` directives as middle-end commands, and the ``after``
commands that keep the source's loop structure.

A directive names a statement by its ``@name`` label (a label on a ``for`` or ``if`` names
every statement inside) and loops by their Julia variables::

    @schedule begin
        tile(S, i, j, 32, 32)      # loops i0, j0, i1, j1 (or name them: 4 more args)
        parallelize(S, i0)
        vectorize(S, j1, 8)
        after(T, S, root)
    end

To order statements the way the source nests them, the translator tracks each
computation's loops through the directives: two consecutive statements share their
leading loops when those loops came from the same source loops through the same
transformations (a tiled statement next to an untiled one shares none of the tiled loops).
Statements a directive places explicitly (``after``, ``before``, ``compute_at``) are left
where the directive puts them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import middleend as me
from frontends.julia import jast as J
from frontends.julia import machine_ints
from frontends.julia.errors import UnsupportedJulia
from middleend.target.base import Machine


@dataclass
class Dim:
    name: str
    sig: str  # what the loop is: the source loop id, then each transformation


def _names(args: tuple[J.Expr, ...], line: int, fn: str,
           machine: Callable[[], Machine | None]) -> list[str | int]:
    """The directive's arguments: names as strings, Int expressions (literals and the
    machine queries of :mod:`.machine_ints`) as their values."""
    out: list[str | int] = []
    for a in args:
        if isinstance(a, J.Name):
            out.append(a.id)
            continue
        why = machine_ints.problem(a)
        if why is None:
            try:
                out.append(machine_ints.value(a, machine))
                continue
            except ValueError as e:
                why = str(e)
        raise UnsupportedJulia(line, why, fn)
    return out


class Scheduler:
    """Applies directives to the computations of one translated function."""

    def __init__(self, fn: str, comps: list[me.Computation], labels: dict[str, list],
                 dims: dict[str, list[Dim]], arrays: dict[str, me.Buffer],
                 machine: Callable[[], Machine | None] = lambda: None) -> None:
        self.fn, self.comps, self.labels, self.dims = fn, comps, labels, dims
        self.machine = machine  # the target's machine, asked by vector_lanes(T) & co.
        self.arrays = arrays  # Julia array name -> its buffer (copy_at's source)
        self.placed: set[str] = set()  # ordered by an after/before directive
        self.nested: set[str] = set()  # placed inside another's loops by compute_at
        # after/before directives as (later, earlier, loop, directive), applied by order()
        self.explicit: list[tuple[me.Computation, me.Computation, object, J.Call]] = []
        self.by_name = {c.name: c for c in comps}

    def fail(self, d: J.Call, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(d.line, f"directive {d.fn}: {what}", self.fn)

    def targets(self, d: J.Call, label: str | int) -> list[me.Computation]:
        if not isinstance(label, str):
            raise self.fail(d, "the first argument must be a statement label")
        got = self.labels.get(label) or ([self.by_name[label]] if label in self.by_name
                                          else None)
        if not got:
            raise self.fail(d, f"no statement labelled {label!r} (label statements with "
                            f"`@name {label} ...`; labels: {sorted(self.labels)})")
        return list(got)

    def one(self, d: J.Call, label: str | int) -> me.Computation:
        got = self.targets(d, label)
        if len(got) != 1:
            raise self.fail(d, f"{label!r} names {len(got)} statements; name one")
        return got[0]

    def apply(self, d: J.Call) -> None:
        k = d.fn
        if k in ("store_in", "pack"):
            return  # applied by the translator: they change where accesses go
        a = _names(d.args, d.line, self.fn, self.machine)
        if not a:
            raise self.fail(d, "no arguments")
        try:
            if k == "copy_at":
                self._copy(d, a)
                return
            if k in ("after", "before", "compute_at", "allocate_at"):
                self._relative(d, a)
                return
            for c in self.targets(d, a[0]):
                self._one(d, k, c, a[1:])
        except me.DefinitionError as e:
            raise self.fail(d, str(e)) from None

    def _relative(self, d: J.Call, a: list[str | int]) -> None:
        if len(a) != 3 or not isinstance(a[2], str):
            raise self.fail(d, f"takes (statement, other statement, loop), got {a}")
        c, o = self.one(d, a[0]), self.one(d, a[1])
        level = me.ROOT if a[2] == "root" else a[2]
        if d.fn == "after":
            self.explicit.append((c, o, level, d))
            self.placed.add(c.name)
        elif d.fn == "before":  # c.before(o, level) is o.after(c, level)
            self.explicit.append((o, c, level, d))
            self.placed.add(o.name)
        elif d.fn == "compute_at":
            c.compute_at(o, level)
            self.placed.add(c.name)
            self.nested.add(c.name)
        else:
            c.allocate_at(o, level)

    def _copy(self, d: J.Call, a: list[str | int]) -> None:
        """``copy_at(S, loop, A, Ap)``: in each iteration of ``S``'s loop, copy what ``S``
        reads of array ``A`` below it into a new buffer ``Ap``, and read it there. ``Ap``
        then names the copy in later directives; its loops are ``Ap_0, Ap_1, ...``, the
        outermost first (Julia's last index: memory order)."""
        if len(a) != 4 or not all(isinstance(x, str) for x in a):
            raise self.fail(d, f"takes (statement, loop, array, new buffer name), got {a}")
        c = self.one(d, a[0])
        level, src, dst = str(a[1]), str(a[2]), str(a[3])
        buf = self.arrays.get(src)
        if buf is None:
            raise self.fail(d, f"{src!r} is not an array (arrays: {sorted(self.arrays)})")
        if dst in self.labels or dst in self.arrays or dst in self.by_name:
            raise self.fail(d, f"{dst!r} already names a statement or an array")
        if level not in [x.name for x in self.dims[c.name]]:
            raise self.fail(d, f"{c.name!r} has no loop {level!r} (its loops: "
                            f"{[x.name for x in self.dims[c.name]]})")
        op = me.copy_at(c, level, buf, dst)
        self.labels[dst] = [op]
        self.dims[op.name] = [Dim(f"{dst}_{r}", f"copy:{dst}#{r}")
                              for r in range(len(buf.sizes))]

    def _one(self, d: J.Call, k: str, c: me.Computation, a: list[str | int]) -> None:
        dims = self.dims[c.name]

        def pos(n: str | int) -> int:
            for q, x in enumerate(dims):
                if x.name == n:
                    return q
            raise self.fail(d, f"{c.name!r} has no loop {n!r} (its loops: "
                            f"{[x.name for x in dims]})")

        def strs(xs: list[str | int]) -> list[str]:
            if not all(isinstance(x, str) for x in xs):
                raise self.fail(d, f"expected loop names, got {xs}")
            return [str(x) for x in xs]

        def ints(xs: list[str | int]) -> list[int]:
            if not all(isinstance(x, int) for x in xs):
                raise self.fail(d, f"expected Int factors, got {xs}")
            return [int(x) for x in xs]

        if k == "tile" and len(a) in (4, 8):
            i, j = strs(a[:2])
            ti, tj = ints(a[2:4])
            names = strs(a[4:]) if len(a) == 8 else [f"{i}0", f"{j}0", f"{i}1", f"{j}1"]
            c.tile(i, j, ti, tj, *names)
            p, q = pos(i), pos(j)
            sig = f"tile({dims[p].sig},{dims[q].sig},{ti},{tj})"
            new = [Dim(n, f"{sig}#{r}") for r, n in enumerate(names)]
            lo = min(p, q)
            rest = [x for r, x in enumerate(dims) if r not in (p, q)]
            dims[:] = rest[:lo] + new + rest[lo:]
        elif k == "tile" and len(a) in (6, 12):
            i, j, kk = strs(a[:3])
            sizes = ints(a[3:6])
            names = strs(a[6:]) if len(a) == 12 else [f"{i}0", f"{j}0", f"{kk}0", f"{i}1",
                                                      f"{j}1", f"{kk}1"]
            c.tile(i, j, kk, *sizes, *names)
            ps = [pos(i), pos(j), pos(kk)]
            sig = f"tile({','.join(dims[p].sig for p in ps)},{sizes})"
            new = [Dim(n, f"{sig}#{r}") for r, n in enumerate(names)]
            lo = min(ps)
            rest = [x for r, x in enumerate(dims) if r not in ps]
            dims[:] = rest[:lo] + new + rest[lo:]
        elif k == "split" and len(a) in (2, 4):
            (i,), (f,) = strs(a[:1]), ints(a[1:2])
            names = strs(a[2:]) if len(a) == 4 else [f"{i}0", f"{i}1"]
            c.split(i, f, *names)
            self._replace(dims, pos(i), names, f"split{f}")
        elif k == "interchange" and len(a) == 2:
            i, j = strs(a)
            c.interchange(i, j)
            p, q = pos(i), pos(j)
            dims[p], dims[q] = dims[q], dims[p]
        elif k in ("parallelize", "parallel") and len(a) == 1:
            c.parallelize(strs(a)[0])
        elif k == "vectorize" and len(a) in (2, 4):
            (i,), (f,) = strs(a[:1]), ints(a[1:2])
            names = strs(a[2:]) if len(a) == 4 else [f"{i}_vo", f"{i}_vi"]
            c.vectorize(i, f, *names)
            self._replace(dims, pos(i), names, f"vec{f}")
        elif k == "unroll" and len(a) in (1, 2, 4):
            (i,) = strs(a[:1])
            if len(a) == 1:
                c.unroll(i)
            else:
                (f,) = ints(a[1:2])
                names = strs(a[2:]) if len(a) == 4 else [f"{i}_uo", f"{i}_ui"]
                c.unroll(i, f, *names)
                self._replace(dims, pos(i), names, f"unroll{f}")
        elif k == "skew" and len(a) in (3, 5):
            i, j = strs(a[:2])
            (f,) = ints(a[2:3])
            names = strs(a[3:]) if len(a) == 5 else [i, j]
            c.skew(i, j, f, *names)
            p, q = pos(i), pos(j)
            dims[p] = Dim(names[0], f"skew({dims[p].sig})")
            dims[q] = Dim(names[1], f"skew({dims[q].sig},{f})")
        elif k == "shift" and len(a) == 2:
            (i,), (n,) = strs(a[:1]), ints(a[1:])
            c.shift(i, n)
            p = pos(i)
            dims[p] = Dim(i, f"shift({dims[p].sig},{n})")
        elif k == "reverse" and len(a) == 1:
            (i,) = strs(a)
            c.reverse(i)
            p = pos(i)
            dims[p] = Dim(i, f"rev({dims[p].sig})")
        else:
            raise self.fail(d, f"unknown directive or wrong arguments {a} (directives: "
                            "tile, split, interchange, parallelize, vectorize, unroll, "
                            "skew, shift, reverse, after, before, compute_at, allocate_at, "
                            "store_in, copy_at, pack)")

    @staticmethod
    def _replace(dims: list[Dim], p: int, names: list[str], how: str) -> None:
        old = dims[p]
        dims[p:p + 1] = [Dim(n, f"{how}({old.sig})#{r}") for r, n in enumerate(names)]

    def order(self) -> None:
        """``after`` between each statement a directive does not place and the one before
        it in the source (skipping those computed inside another's loops), at the
        deepest loop they still share; and the ``after``/``before`` directives.

        Why they are applied here, each once its reference statement is in place: the
        middle-end places a statement right after the other one *as it stands then*, so
        ``after(Y, T, i10)`` written before T itself was moved (the source order puts T
        after its initialization) would leave Y behind, sharing no loop with T."""
        rels: dict[str, tuple[me.Computation, me.Computation, object, J.Call | None]] = {}
        chain = [c for c in self.comps if c.name not in self.nested]
        for prev, cur in zip(chain, chain[1:], strict=False):
            if cur.name in self.placed:
                continue
            a, b = self.dims[prev.name], self.dims[cur.name]
            k = 0
            while k < min(len(a), len(b)) and a[k].sig == b[k].sig and \
                    a[k].name == b[k].name:
                k += 1
            rels[cur.name] = (cur, prev, me.ROOT if k == 0 else b[k - 1].name, None)
        for later, earlier, level, d in self.explicit:  # the last one written wins
            rels.pop(later.name, None)
            rels[later.name] = (later, earlier, level, d)
        pending = list(rels.values())
        while pending:  # by identity: a Computation's == builds an expression
            waiting = {id(q[0]) for q in pending}
            ready = [r for r in pending if id(r[1]) not in waiting] or pending  # a cycle
            for later, earlier, level, d in ready:
                try:
                    later.after(earlier, level)
                except me.DefinitionError as e:
                    if d is None:
                        raise
                    raise self.fail(d, str(e)) from None
            done = {id(r) for r in ready}
            pending = [r for r in pending if id(r) not in done]
