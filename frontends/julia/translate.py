"""A flattened ``@acc`` function (:mod:`.program`) to a middle-end Function: Layer I
computations, the data mapping onto the user's arrays, and the commands that reproduce the
source's loop structure (plus the function's ``@schedule`` directives).

- Each assignment is a computation over its loops' counters. A unit-step loop's counter is
  the Julia index itself (``for i in 2:n`` is ``2 <= i <= n``); a loop ``a:s:b`` counts
  ``k = 0, 1, ...`` with ``i = a + s*k``, so every index stays exact for ISL.
- Arrays keep Julia's layout: ``A::Matrix`` of size (m, n) is the row-major buffer
  ``A[n][m]`` and ``A[i, j]`` its element ``[j-1][i-1]``, so the kernel works on the
  caller's memory. An array the function writes is an in/out buffer (updated in place;
  elements it does not write keep their values); the others are inputs.
- Reads of arrays are memory reads: the middle-end's exact dataflow finds the producing
  instance. Scalars follow :mod:`.scalars`.
- ``if`` conditions become predicates: the affine ones restrict the domain (exactly), the
  others guard the statement at run time.
- Statements sharing loops in the source share them in the generated code: consecutive
  computations are ordered with ``after`` at their deepest common loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

import middleend as me
from frontends.julia import jast as J
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.expand import Expansion, Planner
from frontends.julia.exprs import Array, Exprs, _ex, blocked
from frontends.julia.jtypes import ArgType, promote
from frontends.julia.localarrays import LocalArray
from frontends.julia.pack import Pack, copy_extent, plan_pack
from frontends.julia.program import (
    RESULT,
    Flattener,
    Program,
    Stmt,
    assigned_names,
    reads_of,
    written_names,
)
from frontends.julia.scalars import ScalarPlan, plan_scalars
from frontends.names import Namer
from middleend.ir.affine import AffineContext, try_set
from middleend.ir.expr import Cast, Const, Expr


@dataclass(frozen=True)
class Spec:
    """What a compiled kernel is specialized on: each argument's type, and the sizes of the
    arrays and values of the Int arguments (so every bound is a constant, as in Julia's
    ``@inbounds`` loops over known arrays, and ISL works on exact constants)."""

    types: tuple[ArgType, ...]
    sizes: tuple[tuple[int, ...] | None, ...]  # per argument: array sizes (Julia order)
    ints: tuple[int | None, ...]  # per argument: the value of an Int scalar


@dataclass
class Built:
    """The middle-end Function and how its kernel arguments map to the Julia arguments."""

    fn: me.Function
    outputs: list[str]
    buffer_of_arg: dict[int, str]  # Julia argument position (0-based) -> buffer name
    comps: dict[int, me.Computation] = field(default_factory=dict)  # stmt index -> comp
    names: dict[str, list[me.Computation]] = field(default_factory=dict)  # label -> comps
    loop_names: dict[int, list[str]] = field(default_factory=dict)  # stmt -> loop names
    loop_ids: dict[int, list[int]] = field(default_factory=dict)  # stmt -> source loop ids
    arrays: dict[str, me.Buffer] = field(default_factory=dict)  # Julia array -> buffer
    # each computation's top-level position, doubled (the front-end's own ones, packs
    # and copies back, lie between or after the statements'): the order of `after`s
    placed_at: dict[int, int] = field(default_factory=dict)
    # what ``return x`` returns: ("arg", position), ("array", buffer) or ("value", buffer)
    returns: tuple[str, int | str] | None = None


class Translator:
    def __init__(self, fn: J.Function, spec: Spec, stores: tuple[J.Call, ...] = ()) -> None:
        """``stores``: the ``store_in`` directives to apply (:mod:`.expand`)."""
        self.jf, self.spec, self.stores = fn, spec, stores
        self.names = Namer()
        self.loop_names = Namer()  # loops keep their Julia names, which directives use
        self.expanded: dict[str, tuple[Array, Expansion]] = {}  # store_in: array -> plan
        self.packs: list[Pack] = []
        self.pack_view: dict[str, Array] = {}  # a pack's copy as its array is read

    def fail(self, line: int, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(line, what, self.jf.name)

    # ------------------------------------------------------------------ entry
    def build(self) -> Built:
        jf, spec = self.jf, self.spec
        if len(jf.args) != len(spec.types):
            raise self.fail(jf.line, f"{len(spec.types)} argument types for "
                            f"{len(jf.args)} arguments")
        written = written_names(jf.body)  # arrays among them become in/out buffers
        # specialized on sizes and Int arguments: a statement may then run nowhere (a dead
        # branch, a loop over a zero-length array), as Julia allows: dropped, not refused
        with me.Function(self.names(jf.name.rstrip("!") or "f"),
                         allow_empty_domains=True) as fn:
            arrays: dict[str, Array] = {}
            fscalars: dict[str, me.Buffer] = {}
            consts: dict[str, int] = {}
            buffer_of_arg: dict[int, str] = {}
            for k, (a, t) in enumerate(zip(jf.args, spec.types, strict=True)):
                if t.ndim:
                    sizes = spec.sizes[k]
                    assert sizes is not None
                    bname = self.names(a.name)
                    dims = list(reversed(sizes))
                    buf = (me.Buffer(bname, dims, t.elem, kind="inout") if a.name in written
                           else me.Input(bname, dims, t.elem))
                    arrays[a.name] = Array(a.name, buf, tuple(sizes), t.elem)
                    buffer_of_arg[k] = bname
                elif t.elem.is_int and spec.ints[k] is not None:
                    consts[a.name] = int(spec.ints[k])  # type: ignore[arg-type]
                else:
                    bname = self.names(a.name)
                    fscalars[a.name] = me.Input(bname, [1], t.elem)
                    buffer_of_arg[k] = bname
            self.scalar_plan: dict[str, ScalarPlan] = {}
            self.built_outputs: list[str] = []
            ex = Exprs({}, consts, arrays, fscalars, self._no_scalar, set(), jf.name)
            self._module_consts(ex)
            self.ex = ex
            args = {a.name for a in jf.args}
            prog = Flattener(jf, ex, args, self._local_array).run()
            ex.scalars, ex.inlined = prog.scalars, prog.inlined
            self.ex, self.prog = ex, prog
            outputs = [arrays[n].buffer.name for n in arrays if n in written and n in args]
            outputs += self.built_outputs  # returned local arrays
            if not outputs and prog.returns != RESULT:
                raise self.fail(jf.line, "the function writes no array and returns no "
                                "value (its results must land in an array argument or be "
                                "returned)")
            built = Built(fn, outputs, buffer_of_arg)
            self.built = built
            self._loops(prog)
            self._analyse(prog)
            plans = [self._expansion(d, args) for d in self.stores if d.fn == "store_in"]
            self.depth = self._depth(prog, plans)
            self.packs = [self._pack(d) for d in self.stores if d.fn == "pack"]
            self._computations(prog)
            for plan in plans:
                self._finish_expansion(plan)
            built.returns = self._returns(prog)
            built.arrays = {n: a.buffer for n, a in self.ex.arrays.items()}
        return built

    def _local_array(self, arr: LocalArray) -> None:
        """A temporary buffer for ``z = zeros(...)``/``similar(...)``, laid out as the
        arguments are (dims reversed: column-major), which only the kernel sees (an
        output when the function returns it)."""
        last = self.jf.body[-1] if self.jf.body else None
        returned = isinstance(last, J.Return) and isinstance(last.value, J.Name) and \
            last.value.id == arr.name
        buf = me.Buffer(self.names(arr.name), list(reversed(arr.sizes)), arr.elem,
                        kind="output" if returned else "temporary")
        self.ex.arrays[arr.name] = Array(arr.name, buf, arr.sizes, arr.elem)
        if returned:
            self.built_outputs.append(buf.name)

    def _returns(self, prog: Program) -> tuple[str, int | str] | None:
        if prog.returns is None:
            return None
        if prog.returns == RESULT:
            return ("value", self.ex.arrays[RESULT].buffer.name)
        args = [a.name for a in self.jf.args]
        if prog.returns in args:
            return ("arg", args.index(prog.returns))
        return ("array", self.ex.arrays[prog.returns].buffer.name)

    def _module_consts(self, ex: Exprs) -> None:
        """The source's module-level ``const``s a function does not shadow (by an
        argument or a local): Ints join the compile-time constants, other values are
        translated where they are read."""
        shadowed = {a.name for a in self.jf.args} | set(assigned_names(self.jf.body))
        for name, value in self.jf.consts:
            if name in shadowed:
                continue
            v = ex.const_int(value)
            if v is not None:
                ex.consts[name] = v
            else:
                ex.consts.pop(name, None)  # a later `const` of the name wins
                ex.globals[name] = value

    def _no_scalar(self, name: str, line: int) -> Expr:
        raise self.fail(line, f"local {name!r} read where it cannot be (a loop bound?)")

    # ------------------------------------------------------------------ loops
    def _loops(self, prog: Program) -> None:
        """One me.Var per source loop (``self.var[id]``) and the value of its index."""
        self.var: dict[int, me.Var] = {}
        self.value: dict[int, Expr] = {}
        for s in prog.stmts:
            scope: dict[str, Expr] = {}
            for lp in s.loops:
                if lp.id not in self.var:
                    self.ex.loops = dict(scope)
                    lo = _ex(self.ex.index(lp.start))
                    hi = _ex(self.ex.index(lp.stop))
                    vname = self.loop_names(lp.var)
                    if lp.step == 1:
                        v = me.Var(vname, lo, hi + 1)
                        val: Expr = v
                    else:
                        trip = ((hi - lo) // lp.step + 1 if lp.step > 0
                                else (lo - hi) // (-lp.step) + 1)
                        v = me.Var(vname, 0, trip)
                        val = lo + v * lp.step
                    self.var[lp.id], self.value[lp.id] = v, _ex(val)
                scope[lp.var] = self.value[lp.id]

    def _scope(self, s: Stmt) -> dict[str, Expr]:
        return {lp.var: self.value[lp.id] for lp in s.loops}

    # ------------------------------------------------------------------ analysis
    def _analyse(self, prog: Program) -> None:
        """Each statement's exact domain (affine conditions included) for the scalar
        dataflow, and which statements run under a run-time condition."""
        ctx = isl.Context()
        domains: dict[int, isl.Set] = {}
        guarded: set[int] = set()
        reads: dict[int, set[str]] = {}
        counters: dict[int, list[str]] = {}
        for s in prog.stmts:
            vs = [self.var[lp.id] for lp in s.loops]
            counters[s.index] = [f"c{k}" for k in range(len(vs))]
            space = isl.Space.create_from_names(ctx, set=[v.name for v in vs]).set_tuple_name(
                isl.dim_type.set, f"S{s.index}")
            ac = AffineContext(space)
            dom = isl.Set.universe(space)
            for v in vs:
                lo, hi = try_set(v >= v.lo, ac), try_set(v < v.hi, ac)  # type: ignore[operator]
                if lo is None or hi is None:
                    raise self.fail(s.node.line, f"loop {v.name!r}: bounds not affine")
                dom = dom.intersect(lo).intersect(hi)
            self.ex.loops = self._scope(s)
            names = set()
            for c in s.conds:
                rd = reads_of(c.expr)
                names |= rd
                cs = None
                if not rd & (prog.scalars | set(self.ex.arrays) | set(self.ex.fscalars)):
                    cs = try_set(self.ex.cond(c.expr), ac)
                if cs is None:
                    guarded.add(s.index)
                else:
                    dom = dom.intersect(cs) if c.positive else dom.subtract(cs)
            domains[s.index] = _rename_dims(dom.coalesce(), counters[s.index])
            rd = reads_of(s.node.value) | names
            if isinstance(s.node.target, J.Ref):
                for i in s.node.target.indices:
                    rd |= reads_of(i)
            if s.node.op != "=" and isinstance(s.node.target, J.Name):
                rd.add(s.node.target.id)
            reads[s.index] = rd & prog.scalars
        self.domains, self.guarded, self.counters = domains, guarded, counters
        self.scalar_plan = plan_scalars(prog, domains, guarded, reads, counters)
        self.reads = reads

    # ------------------------------------------------------------------ computations
    def _computations(self, prog: Program) -> None:
        self.sbuf: dict[str, me.Buffer] = {}
        self._scalar_types(prog)
        for var, plan in self.scalar_plan.items():
            if plan.mode == "buffer":
                sizes = [hi - lo + 1 for lo, hi in plan.extents] or [1]
                self.sbuf[var] = me.Buffer(self.names(f"{var}"), sizes, self.stype[var])
        used_by_value = {p for plan in self.scalar_plan.values() if plan.mode == "value"
                         for p in plan.producer.values()}
        for s in prog.stmts:
            t = s.node.target
            if isinstance(t, J.Name) and self.scalar_plan[t.id].mode == "value" and \
                    s.index not in used_by_value:
                # a dead assignment: nothing reads it, but what it says must still be
                # something we translate (a refused construct is never silently dropped)
                self.ex.loops, self.ex.scalar = self._scope(s), self._read_scalar(s)
                self._rhs(s, None)
                continue
            self._computation(s)

    def _scalar_types(self, prog: Program) -> None:
        """The type each buffered scalar is stored as: Julia's promotion of every value
        assigned to it (``s = 0`` then ``s += x::Float64`` stores a Float64). Types of
        scalars feed each other, so this iterates to a fixpoint."""
        guess: dict[str, me.DType] = {}
        memo: dict[int, me.DType] = {}

        def read_type(name: str, s: Stmt) -> me.DType:
            plan = self.scalar_plan[name]
            if plan.mode == "value":
                return stmt_type(plan.producer[s.index])
            return guess.get(name, me.int64)

        def stmt_type(k: int) -> me.DType:
            if k not in memo:
                s = prog.stmts[k]
                saved = self.ex.loops, self.ex.scalar
                self.ex.loops = self._scope(s)
                self.ex.scalar = lambda n, line: Const(0, read_type(n, s))
                try:
                    memo[k] = self._rhs(s, None).dtype
                finally:
                    self.ex.loops, self.ex.scalar = saved
            return memo[k]

        buffered = [v for v, p in self.scalar_plan.items() if p.mode == "buffer"]
        for _ in range(4):
            memo.clear()
            new: dict[str, me.DType] = {}
            for var in buffered:
                t: me.DType | None = None
                for s in prog.stmts:
                    if getattr(s.node.target, "id", None) == var:
                        v = stmt_type(s.index)
                        t = v if t is None else promote(t, v)
                assert t is not None
                new[var] = t
            if new == guess:
                break
            guess = new
        self.stype = guess

    def _read_scalar(self, s: Stmt):  # type: ignore[no-untyped-def]
        def read(name: str, line: int) -> Expr:
            plan = self.scalar_plan[name]
            if plan.mode == "value":
                prod = self.prog.stmts[plan.producer[s.index]]
                comp = self.built.comps[prod.index]
                return comp[tuple(self.var[lp.id] for lp in prod.loops)]
            return self.sbuf[name][self._sindex(name, s)]
        return read

    def _sindex(self, name: str, s: Stmt) -> tuple[Expr, ...]:
        plan = self.scalar_plan[name]
        if not plan.loops:
            return (Const(0, me.int32),)
        by_id = {lp.id: self.var[lp.id] for lp in s.loops}
        return tuple(by_id[i] - lo for i, (lo, _) in zip(plan.loops, plan.extents,
                                                         strict=True))

    def _rhs(self, s: Stmt, current: Expr | None) -> Expr:
        """The value the statement stores: ``e`` or ``current op e``."""
        n = s.node
        v = self.ex.value(n.value)
        if n.op == "=":
            return v
        if current is None:
            t = n.target
            current = (self.ex.read(t) if isinstance(t, J.Ref)
                       else self.ex.scalar(t.id, n.line))  # type: ignore[union-attr]
        return _arith({"+=": "+", "-=": "-", "*=": "*", "/=": "/"}[n.op], current, v)

    def _order(self, cname: str, s: Stmt, vs: list[me.Var]) -> str:
        """The statement's place in Julia's execution order (the 2d+1 schedule: its
        position in each loop body, then that loop's counter), so memory reads see the
        write Julia's loops would have made last."""
        depth = self.depth
        outs: list[str] = []
        for d in range(depth + 1):  # top-level positions doubled: packs go in between
            outs.append(str(s.pos[d] * (2 if d == 0 else 1)) if d < len(s.pos) else "0")
            if d < depth:
                outs.append(vs[d].name if d < len(vs) else "0")
        return f"{{ {cname}[{', '.join(v.name for v in vs)}] -> [{', '.join(outs)}] }}"

    def _computation(self, s: Stmt) -> None:
        later = {p.array: self.pack_view[p.copy] for p in self.packs if 2 * s.pos[0] > p.at}
        if not later:
            self._statement(s)
            return
        saved = self.ex.arrays
        self.ex.arrays = {**saved, **later}  # reads after a pack read the copy
        try:
            self._statement(s)
        finally:
            saved.update((k, v) for k, v in self.ex.arrays.items() if k not in later)
            self.ex.arrays = saved

    def _statement(self, s: Stmt) -> None:
        n = s.node
        self.ex.loops = self._scope(s)
        self.ex.scalar = self._read_scalar(s)
        vs = [self.var[lp.id] for lp in s.loops]
        pred: Expr | None = None
        for c in s.conds:
            ce = self.ex.cond(c.expr)
            ce = ce if c.positive else ~ce
            pred = ce if pred is None else pred & ce
        val = self._rhs(s, None)
        t = n.target
        if isinstance(t, J.Ref) and t.array == RESULT:  # `return e`: typed by e
            buf = me.Buffer(self.names("result"), [1], val.dtype, kind="output")
            self.ex.arrays[RESULT] = Array(RESULT, buf, (1,), val.dtype)
            self.built.outputs.append(buf.name)
        if isinstance(t, J.Ref):
            arr = self.ex.arrays[t.array]
            dt = arr.elem
            idx = self.ex.subscript(arr, t)
        else:
            plan = self.scalar_plan[t.id]
            dt = self.stype.get(t.id, val.dtype)
            idx = self._sindex(t.id, s) if plan.mode == "buffer" else None
        if dt.is_int and val.dtype.is_float:
            raise self.fail(n.line, f"storing a {val.dtype.name} value in an integer "
                            f"{'array' if isinstance(t, J.Ref) else 'local'} (Julia raises "
                            "InexactError unless it is integral; convert explicitly)")
        if val.dtype != dt:
            val = Cast(dt, val)
        label = s.labels[0] if s.labels and n.label else None
        cname = self._fresh(label or f"S{s.index + 1}")
        comp = me.Computation(cname, vs, val, predicate=pred, dtype=dt,
                              order=self._order(cname, s, vs))
        if isinstance(t, J.Ref):
            comp.store_in(self.ex.arrays[t.array].buffer, idx)
        elif idx is not None:
            comp.store_in(self.sbuf[t.id], idx)
        self.built.comps[s.index] = comp
        self.built.placed_at[s.index] = 2 * s.pos[0]
        self.built.loop_names[s.index] = [v.name for v in vs]
        self.built.loop_ids[s.index] = [lp.id for lp in s.loops]
        for lab in s.labels:
            self.built.names.setdefault(lab, []).append(comp)


    # ------------------------------------------------------------------ store_in
    def _expansion(self, d: J.Call, args: set[str]) -> Expansion:
        """Checks ``store_in(X, loops...)`` and sends every access of ``X`` to its
        expanded buffer (the loops' counters as leading indices)."""
        name = d.args[0].id if d.args and isinstance(d.args[0], J.Name) else "?"
        arr = self.ex.arrays.get(name)
        if arr is None:
            raise self.fail(d.line, f"directive store_in: {name!r} is not an array")
        if arr.prefix:
            raise self.fail(d.line, f"directive store_in: {name!r} is stored twice")

        def subscript(s: Stmt, ref: J.Ref) -> tuple[Expr | int, ...]:
            self.ex.loops = self._scope(s)
            return self.ex.subscript(arr, ref)

        var_names = {s.index: [self.var[lp.id].name for lp in s.loops]
                     for s in self.prog.stmts}
        data = self.prog.scalars | set(self.ex.arrays) | set(self.ex.fscalars)
        plan = Planner(self.prog, self.jf.name, self.domains, self.counters, self.guarded,
                       var_names, subscript, data).plan(d, name in args)
        by_id = {lp.id: lp for s in self.prog.stmts for lp in s.loops}
        prefix = tuple(_ex(self.var[i] - lo) for i, (lo, _) in zip(plan.loops, plan.extents,
                                                                   strict=True))
        sizes = [hi - lo + 1 for lo, hi in plan.extents]
        buf = me.Buffer(self.names(f"{name}_{'_'.join(by_id[i].var for i in plan.loops)}"),
                        sizes + list(reversed(arr.sizes)), arr.elem)
        self.ex.arrays[name] = Array(name, buf, arr.sizes, arr.elem, prefix)
        self.expanded[name] = (arr, plan)
        return plan

    def _finish_expansion(self, plan: Expansion) -> None:
        """The storage folds, and the copy back into an argument's own memory."""
        arr, _ = self.expanded[plan.array]
        writers = [c for k, c in self.built.comps.items() if k < len(self.prog.stmts) and
                   isinstance(self.prog.stmts[k].node.target, J.Ref) and
                   self.prog.stmts[k].node.target.array == plan.array]
        for k, f in enumerate(plan.folds):
            if f is not None:
                writers[0].storage_fold(k, f)
        if plan.copy_back is None:
            return
        depth = self.depth
        vs = [me.Var(self.loop_names(f"{plan.array}_b{k}"), lo, hi + 1)
              for k, (lo, hi) in enumerate(plan.box)]
        at = tuple(_ex(c - lo) for c, (lo, _) in zip(plan.copy_back, plan.extents,
                                                      strict=True))
        src = self.ex.arrays[plan.array].buffer
        cname = self._fresh(f"{plan.array}_back")
        end = 2 * max(s.pos[0] for s in self.prog.stmts) + 2
        outs = [str(end)]
        for d in range(depth):
            outs += [vs[d].name if d < len(vs) else "0", "0"]
        order = f"{{ {cname}[{', '.join(v.name for v in vs)}] -> [{', '.join(outs)}] }}"
        comp = me.Computation(cname, vs, src[at + tuple(vs)], dtype=arr.elem, order=order)
        comp.store_in(arr.buffer, list(vs))
        k = len(self.prog.stmts) + len(self.built.comps)
        self.built.comps[k] = comp
        self.built.placed_at[k] = end
        self.built.loop_names[k] = [v.name for v in vs]
        self.built.loop_ids[k] = [-1 - 100 * k - j for j in range(len(vs))]

    def _depth(self, prog: Program, plans: list[Expansion]) -> int:
        """How many loops the order maps give room for: the deepest statement's, or more
        for a pack or a copy back with more dims (each runs a loop per dim)."""
        ranks = [len(self.ex.arrays[d.args[0].id].sizes) for d in self.stores
                 if d.fn == "pack" and d.args and isinstance(d.args[0], J.Name) and
                 d.args[0].id in self.ex.arrays]
        ranks += [len(p.box) for p in plans if p.copy_back is not None]
        return max([len(s.loops) for s in prog.stmts] + ranks)

    def _pack(self, d: J.Call) -> Pack:
        """``pack(A, At, dims...)``: the copy's buffer and the computation filling it
        (:mod:`.pack`), placed at its doubled top-level position."""
        arrays = self.ex.arrays
        p = plan_pack(d, self.prog, set(arrays), {n: len(a.sizes) for n, a in arrays.items()},
                      self.jf.name)
        src = arrays[p.array]
        if src.prefix:
            raise self.fail(d.line, f"directive pack: {p.array!r} is stored by store_in")
        sizes = tuple(copy_extent(src.sizes[q], b) for q, b in zip(p.perm, p.split, strict=True))
        buf = me.Buffer(self.names(p.copy), list(reversed(sizes)), src.elem)
        self.pack_view[p.copy] = Array(p.array, buf, src.sizes, src.elem, perm=p.perm,
                                       split=p.split, along=p.along,
                                       source=src if p.along else None)
        depth = self.depth
        # one loop per dim of the array, named after the copy's dim where it first
        # appears; that order (first innermost) writes the copy as contiguously as it can
        first = {q: k for k, q in reversed(list(enumerate(p.perm)))}
        at_src = {q: me.Var(self.loop_names(f"{p.copy}_{k + 1}"), 0, src.sizes[q])
                  for q, k in first.items()}
        order = [at_src[q] for q in sorted(first, key=lambda q: -first[q])]
        cname = self._fresh(p.copy)
        outs = [str(p.at)]
        for k in range(depth):
            outs += [order[k].name if k < len(order) else "0", "0"]
        comp = me.Computation(
            cname, order,
            src.buffer[tuple(at_src[q] for q in reversed(range(len(src.sizes))))],
            dtype=src.elem,
            order=f"{{ {cname}[{', '.join(v.name for v in order)}] -> [{', '.join(outs)}] }}")
        comp.store_in(buf, [blocked(at_src[q], b) for q, b in
                            reversed(list(zip(p.perm, p.split, strict=True)))])
        key = len(self.prog.stmts) * 4 + len(self.built.comps)
        self.built.comps[key] = comp
        self.built.loop_names[key] = [v.name for v in order]
        self.built.loop_ids[key] = [-1 - 100 * key - j for j in range(len(order))]
        self.built.names[p.copy] = [comp]
        self.built.placed_at[key] = p.at
        return p

    def _fresh(self, want: str) -> str:
        """A computation name no other one has: one labelled statement may become several
        computations (each side of ``x = c ? a : b``, each statement of a chained
        assignment), and a label may equal another statement's default name ``S<k>``."""
        key, k = want, 1
        while key in self.names.map:
            k += 1
            key = f"{want}_{k}"
        return self.names(key)


def _arith(op: str, a: Expr, b: Expr) -> Expr:
    t = promote(a.dtype, b.dtype)
    if op == "/" and not t.is_float:
        t = me.float64
    a = a if a.dtype == t else Cast(t, a)
    b = b if b.dtype == t else Cast(t, b)
    return a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b


def _rename_dims(dom: isl.Set, names: list[str]) -> isl.Set:
    for k, n in enumerate(names):
        dom = dom.set_dim_name(isl.dim_type.set, k, n)
    return dom
