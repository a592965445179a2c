"""The ``store_in`` directive: an array stored with one copy per iteration of some loops
(array expansion), so that those loops stop carrying anything through it::

    store_in(sum, r)          # doitgen: each r its own sum vector; r can run in parallel
    store_in(sum, q % 8, r)   # ... and 8 of them along q (a storage fold of that dim)

The array's every access (by every statement, reads and writes) goes to a temporary
buffer with the named loops' counters as extra, outermost dimensions (Julia's dims stay
innermost and contiguous). A fold ``q % k`` keeps ``k`` copies along ``q`` (the middle-end's
``storage_fold``: the legality check then proves that no copy is overwritten while it is
still read under the schedule).

Expansion keeps the program's meaning only if no value flows through the array from one
iteration of those loops to another, and nothing reads what the array held before them;
both are checked with ISL's exact dataflow over the source's sequential order, and a
violation is refused naming the statements. When the array is an argument, its final
content is copied back from the copy its last writes went to (they must all lie in one
iteration of the loops, e.g. the last one), so the caller sees what Julia leaves there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.program import Program, Stmt, reads_of
from frontends.julia.scalars import sched_map
from middleend.ir.affine import AffineContext, access_map
from middleend.ir.expr import Expr
from middleend.ir.islutil import maps_of

Subscript = Callable[[Stmt, J.Ref], tuple[Expr | int, ...]]


@dataclass(frozen=True)
class Expansion:
    """``array`` stored in a buffer with ``loops`` (source loop ids, outermost first) as
    extra leading dimensions; ``folds[k]``: the fold factor of loop k, or None."""

    array: str
    loops: tuple[int, ...]
    folds: tuple[int | None, ...]
    line: int
    extents: tuple[tuple[int, int], ...]  # each loop's counter range (over every access)
    box: tuple[tuple[int, int], ...]  # the written elements (buffer indices), a box
    copy_back: tuple[int, ...] | None = None  # the loops' counter values of the last writes


def directive_loops(d: J.Call, fn: str) -> tuple[str, list[tuple[str, int | None]]]:
    """``store_in(X, l1, l2 % k, ...)`` as the array's name and ``(loop, fold)`` pairs."""
    def bad(what: str) -> UnsupportedJulia:
        return UnsupportedJulia(d.line, f"directive store_in: {what} (store_in(array, loop, "
                                "..., loop % k): one copy of the array per iteration of the "
                                "loops, k copies along a folded one)", fn)

    if len(d.args) < 2 or not isinstance(d.args[0], J.Name):
        raise bad("expected an array and at least one loop")
    out: list[tuple[str, int | None]] = []
    for a in d.args[1:]:
        if isinstance(a, J.Name):
            out.append((a.id, None))
        elif isinstance(a, J.Call) and a.fn == "%" and len(a.args) == 2 and \
                isinstance(a.args[0], J.Name) and isinstance(a.args[1], J.Num) and \
                a.args[1].type == "Int64" and int(a.args[1].value) >= 1:
            out.append((a.args[0].id, int(a.args[1].value)))
        else:
            raise bad("a loop argument that is neither a loop name nor `loop % k` with an "
                      "Int k >= 1")
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise bad(f"a loop named twice: {names}")
    return d.args[0].id, out


def accesses(s: Stmt, array: str) -> list[tuple[J.Ref, bool]]:
    """The statement's references to ``array``: (reference, is a write)."""
    out: list[tuple[J.Ref, bool]] = []

    def walk(e: J.Expr) -> None:
        stack = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, J.Ref):
                if x.array == array:
                    out.append((x, False))
                stack.extend(x.indices)
            elif isinstance(x, J.Call):
                stack.extend(x.args)
            elif isinstance(x, J.Compare):
                stack.extend(x.operands)
            elif isinstance(x, J.Logic):
                stack.extend([x.a, x.b])
            elif isinstance(x, J.Ternary):
                stack.extend([x.cond, x.a, x.b])
            elif isinstance(x, J.TupleExpr):
                stack.extend(x.items)

    n = s.node
    walk(n.value)
    for c in s.conds:
        walk(c.expr)
    if isinstance(n.target, J.Ref):
        for i in n.target.indices:
            walk(i)
        if n.target.array == array:
            out.append((n.target, True))
            if n.op != "=":
                out.append((n.target, False))
    return out


class Planner:
    """Checks one ``store_in`` against the program and finds its copy-back. ``subscript``
    translates a reference's indices (in the statement's scope) to middle-end indices."""

    def __init__(self, prog: Program, fn: str, domains: dict[int, isl.Set],
                 counters: dict[int, list[str]], guarded: set[int],
                 var_names: dict[int, list[str]], subscript: Subscript,
                 data_names: set[str]) -> None:
        self.prog, self.fn, self.domains, self.counters = prog, fn, domains, counters
        self.guarded, self.var_names, self.subscript = guarded, var_names, subscript
        self.data_names = data_names  # arrays and scalars: an index reading one is not affine

    def fail(self, line: int, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(line, f"directive store_in: {what}", self.fn)

    def plan(self, d: J.Call, is_argument: bool) -> Expansion:
        array, loops = directive_loops(d, self.fn)
        users = [s for s in self.prog.stmts if accesses(s, array)]
        if not users:
            raise self.fail(d.line, f"no statement accesses {array!r}")
        ids: list[int] = []
        for name, _ in loops:
            found = {lp.id for s in users for lp in s.loops if lp.var == name}
            common = [i for i in found if all(any(lp.id == i for lp in s.loops)
                                              for s in users)]
            if len(common) != 1:
                out = next((s for s in users if not any(lp.var == name for lp in s.loops)),
                           None)
                where = (f"line {out.node.line} is not in a loop {name!r}" if out else
                         f"they lie in {len(found)} different loops {name!r}")
                raise self.fail(d.line, f"every access of {array!r} must be inside one loop "
                                f"{name!r} ({where})")
            ids.append(common[0])
        depth = [lp.id for lp in users[0].loops]
        pos = [depth.index(i) for i in ids]
        deps, final, elems = self._flow(d, array, users)
        for m in maps_of(deps):
            for p in pos:
                if not _equal_at(m, p):
                    src = self.prog.stmts[int(m.get_tuple_name(isl.dim_type.in_)[1:])]
                    dst = self.prog.stmts[int(m.get_tuple_name(isl.dim_type.out)[1:])]
                    raise self.fail(d.line, f"a value of {array!r} written at line "
                                    f"{src.node.line} is read at line {dst.node.line} in "
                                    f"another iteration of loop {loops[pos.index(p)][0]!r}: "
                                    "one copy per iteration would lose it")
        back = self._copy_back(d, array, final, pos) if is_argument else None
        extents = []
        for p in pos:
            doms = [self.domains[s.index] for s in users if not self.domains[s.index].is_empty()]
            extents.append((min(x.dim_min_val(p).to_python() for x in doms),
                            max(x.dim_max_val(p).to_python() for x in doms)))
        box = tuple((elems.dim_min_val(k).to_python(), elems.dim_max_val(k).to_python())
                    for k in range(elems.dim(isl.dim_type.set)))
        if is_argument and not _box_set(elems, box).is_subset(elems):
            raise self.fail(d.line, f"{array!r} is an argument whose written elements are "
                            "not a box (the copy back would write the others)")
        return Expansion(array, tuple(ids), tuple(f for _, f in loops), d.line,
                         tuple(extents), box, back)

    def _access(self, s: Stmt, ref: J.Ref, array: str, name: str) -> isl.Map:
        for i in ref.indices:
            if reads_of(i) & self.data_names:
                raise self.fail(ref.line, f"a data-dependent index of {array!r} (the "
                                "expansion needs exact accesses)")
        idx = self.subscript(s, ref)
        dom = self.domains[s.index]
        space = isl.Space.create_from_names(dom.get_ctx(), set=self.var_names[s.index])
        ac = AffineContext(space.set_tuple_name(isl.dim_type.set, name))
        m = access_map(tuple(idx), ac, "X")
        if m is None:
            raise self.fail(ref.line, f"a non-affine index of {array!r} (the expansion "
                            "needs exact accesses)")
        for k, c in enumerate(self.counters[s.index]):
            m = m.set_dim_name(isl.dim_type.in_, k, c)
        return m.intersect_domain(dom.set_tuple_name(name))

    def _flow(self, d: J.Call, array: str, users: list[Stmt]
              ) -> tuple[isl.UnionMap, isl.UnionMap, isl.Set]:
        """The flow dependences through ``array`` among ``users`` (source -> sink), each
        written element's last write (``W[x] -> F[e]``), and the written elements."""
        ctx = self.domains[users[0].index].get_ctx()
        empty = isl.UnionMap.empty(isl.Space.params_alloc(ctx, 0))
        must, may, sinks, sched = empty, empty, empty, empty
        loops = max(len(s.loops) for s in self.prog.stmts)
        elems = None
        for s in users:
            for ref, write in accesses(s, array):
                tag = f"W{s.index}" if write else f"R{s.index}"
                m = self._access(s, ref, array, tag)
                if write:
                    elems = m.range() if elems is None else elems.union(m.range())
                    if s.index in self.guarded:
                        may = may.union(isl.UnionMap.from_map(m))
                    else:
                        must = must.union(isl.UnionMap.from_map(m))
                else:
                    sinks = sinks.union(isl.UnionMap.from_map(m))
            for tag in ("W", "R"):
                sched = sched.union(sched_map(ctx, s, loops, f"{tag}{s.index}",
                                               self.counters))
        if elems is None:
            raise self.fail(d.line, f"no statement writes {array!r}")
        info = isl.UnionAccessInfo.from_sink(sinks).set_must_source(must).set_may_source(may)
        flow = info.set_schedule_map(sched).compute_flow()
        nosrc = flow.get_may_no_source()
        if not nosrc.is_empty():
            k = min(int(m.get_tuple_name(isl.dim_type.in_)[1:]) for m in maps_of(nosrc))
            raise self.fail(d.line, f"line {self.prog.stmts[k].node.line} reads what "
                            f"{array!r} held before the loops (a copy per iteration would "
                            "not hold it)")
        # the final content: a read of every written element after everything
        end = max(s.pos[0] for s in self.prog.stmts) + 1
        rank = elems.dim(isl.dim_type.set)
        es = [f"e{k}" for k in range(rank)]
        fin = isl.Map.identity(isl.Space.map_from_set(elems.get_space())).intersect_domain(
            elems).set_tuple_name(isl.dim_type.in_, "F")
        sinkf = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(fin))
        fsched = isl.UnionMap.read_from_str(
            ctx, f"{{ F[{', '.join(es)}] -> [{end}{', 0' * (2 * loops)}] }}")
        last = sinkf.set_must_source(must).set_may_source(may).set_schedule_map(
            sched.union(fsched)).compute_flow().get_may_dependence()
        return flow.get_may_dependence(), last, elems.coalesce()

    def _copy_back(self, d: J.Call, array: str, last: isl.UnionMap, pos: list[int]
                   ) -> tuple[int, ...]:
        """The counters of the expansion loops in the one iteration holding every
        element's last write."""
        point: tuple[int, ...] | None = None
        for m in maps_of(last):
            dom = m.domain()
            for k in range(dom.dim(isl.dim_type.set) - 1, -1, -1):
                if k not in pos:
                    dom = dom.project_out(isl.dim_type.set, k, 1)
            vals = []
            for k in range(dom.dim(isl.dim_type.set)):
                lo, hi = dom.dim_min_val(k).to_python(), dom.dim_max_val(k).to_python()
                if lo != hi:
                    point = None
                    vals = []
                    break
                vals.append(lo)
            order = sorted(pos)  # the projection keeps the loops in nesting order
            got = tuple(vals[order.index(p)] for p in pos) if vals or not pos else None
            if got is None or (point is not None and got != point):
                raise self.fail(d.line, f"{array!r} is an argument whose last writes lie in "
                                "several iterations of the loops (its final content could "
                                "not be copied back from one copy)")
            point = got
        assert point is not None
        return point


def _equal_at(m: isl.Map, k: int) -> bool:
    eq = isl.Map.universe(m.get_space()).equate(isl.dim_type.in_, k, isl.dim_type.out, k)
    return m.is_subset(eq)


def _box_set(s: isl.Set, box: tuple[tuple[int, int], ...]) -> isl.Set:
    out = isl.Set.universe(s.get_space())
    for k, (lo, hi) in enumerate(box):
        out = out.lower_bound_val(isl.dim_type.set, k, isl.Val.int_from_si(s.get_ctx(), lo))
        out = out.upper_bound_val(isl.dim_type.set, k, isl.Val.int_from_si(s.get_ctx(), hi))
    return out
