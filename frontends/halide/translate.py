"""A read Halide pipeline (:mod:`.hir`) to a middle-end Function: Layer I plus commands.

One Func becomes one computation per Tuple element for its pure definition and one per
element for each update, stored into the pure computation's buffer (``store_in``), in order.
ImageParams and constant Buffers become inputs. A scalar Param that indexes or bounds
something is a constant of the build (see :func:`.index_params.index_params`); any other is a value
argument of the kernel: a parameter (int32) or a scalar input, Layer I's zero-dimensional
input (every other type). The build is specialized on the sizes (output and input extents)
and those index Params, which makes every bound a constant that ISL handles exactly;
:mod:`.pipeline` keeps one build per specialization.
The schedule is translated by :mod:`.schedule`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl
import numpy as np

import middleend as me
from frontends.halide import bounds as bd
from frontends.halide.copies import define_copy, storage_order
from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.exprs import Scope, const, dtype_of, translate
from frontends.halide.fusewith import fuse_with
from frontends.halide.graph import (
    definitions,
    exprs_of,
    producer_order,
    reads_a_sibling,
)
from frontends.halide.hir import HBound, HBuffer, HDefinition, HExpr, HFunc, HPipeline
from frontends.halide.outputs import OutputRegions, output_regions
from frontends.halide.placement import Placement, place
from frontends.halide.rvars import stage_order
from frontends.halide.schedule import OUTERMOST, StagePlan, plan_func_schedule, schedule_stage
from frontends.halide.specialize import Choice, with_choices
from frontends.halide.values import value_range
from frontends.names import Namer
from middleend.ir.affine import AffineContext
from middleend.ir.expr import Expr, wrap


@dataclass(frozen=True)
class Spec:
    """What one build is specialized on (Halide dimension order throughout)."""

    sizes: tuple[int, ...]
    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    index_values: tuple[tuple[str, int | float | bool], ...]  # the Params of index_params
    choices: tuple[Choice, ...] = ()  # the branch of each specialize()d stage
    # per output Func, the region of the out= arrays given when they are larger than
    # realize(sizes)'s (min, extent per dimension): Halide computes over the whole buffer
    out_regions: tuple[tuple[tuple[int, int], ...], ...] | None = None


@dataclass
class Built:
    """The Function and how to call its kernel for a realization."""

    fn: me.Function
    outputs: list[me.Computation]
    inputs: dict[str, str]  # ImageParam name -> input name
    scalars: dict[str, tuple[str, str, me.DType]]  # Param -> (our name, param|scalar, type)
    constants: dict[str, np.ndarray]  # our input name -> data of a constant hl.Buffer
    comps: dict[str, list[list[me.Computation]]] = field(default_factory=dict)
    loops: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """Per Halide Func: computations ``[stage][tuple element]`` and, per stage, Halide loop
    names to the computations' loop names, outermost loop first (for ``extra_schedule``)."""
    regions: OutputRegions | None = None  # where each output array lies, its result key
    stages: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Every computation's Halide Func and stage (temporaries and copies included), to name
    them in errors the middle-end raises about a computation."""


@dataclass
class Stage:
    """The iterators of one stage: Halide names (outermost first), their Vars, and the
    inclusive ranges keyed by the Vars' (middle-end) names."""

    names: list[str]
    vars: dict[str, me.Var]
    ranges: dict[str, tuple[int, int]]


@dataclass
class FuncInfo:
    f: HFunc
    box: list[tuple[int, int]] | None = None
    inline: bool = False
    comps: list[list[me.Computation]] = field(default_factory=list)  # [stage][value]
    stage_vars: list[dict[str, me.Var]] = field(default_factory=list)
    plans: list[StagePlan] = field(default_factory=list)
    storage: list[me.Buffer] = field(default_factory=list)  # per value, when offset
    # realizations 1.. of a Func computed in several stages of its consumer: per copy, the
    # computations (one per value) and their buffers (when offset)
    copies: list[list[me.Computation]] = field(default_factory=list)
    copy_storage: list[list[me.Buffer]] = field(default_factory=list)
    copy_updates: list[list[list[me.Computation]]] = field(default_factory=list)  # [r][k-1][v]
    # per update stage whose Tuple elements read each other: the elements' new values,
    # computed before any element is written (Halide evaluates a Tuple update's right-hand
    # sides, then stores); fi.comps[k] then copy them into the Func's buffers
    temps: dict[int, list[me.Computation]] = field(default_factory=dict)
    copy_temps: list[dict[int, list[me.Computation]]] = field(default_factory=list)  # [r]

    def realization(self, r: int, k: int) -> list[me.Computation]:
        """The computations of stage ``k`` of realization ``r`` (0: the Func's own), in
        their order at a point: an update's new values first where it has them."""
        if r == 0:
            return self.temps.get(k, []) + self.comps[k]
        if k == 0:
            return self.copies[r - 1]
        return self.copy_temps[r - 1].get(k, []) + self.copy_updates[r - 1][k - 1]

    def stage_comps(self, k: int) -> list[me.Computation]:
        """The computations of stage ``k`` of every realization (one loop nest each, under
        the same schedule)."""
        return [c for r in range(len(self.copies) + 1) for c in self.realization(r, k)]


class Translator:
    def __init__(self, hp: HPipeline, outputs: list[str], spec: Spec) -> None:
        self.hp = hp = with_choices(hp, spec.choices)
        self.outputs = outputs
        self.spec = spec
        self.order = producer_order(hp, outputs)
        self.info = {n: FuncInfo(hp.func(n)) for n in self.order}
        self.params = {p.name: p for p in hp.external_parameters}
        self.index_values = dict(spec.index_values)
        self.input_shapes = dict(spec.inputs)
        # per image, the box bounds inference found read; None: read only by stages that
        # have no point in this specialization (still an argument, its type checked)
        self.input_req: dict[str, list[tuple[int, int]] | None] = {}
        # Funcs that a stage with no point calls (``RDom(0, n)`` with ``n = 0``, a ``where``
        # that never holds): one nothing else reads is realized over nothing, as in Halide
        self.read_by_empty: set[str] = set()
        self.names = Namer()
        self.value_ranges: dict[tuple[str, int, tuple[bd.Interval, ...]], bd.Interval] = {}
        # every computation's place in Halide's sequential order: (Func, stage, slot)
        self.seq: list[tuple[me.Computation, tuple[int, int, int]]] = []
        self.copy_ctx = 0  # the realization an update's reads of its own Func read

    # ----------------------------------------------------------------- bounds inference
    def infer_bounds(self) -> None:
        for name in self.outputs:
            fi = self.info[name]
            if len(fi.f.args) != len(self.spec.sizes):
                raise UnsupportedHalideFeature(
                    name, None, f"realizing a {len(fi.f.args)}-d output with "
                    f"{len(self.spec.sizes)} sizes")
            fi.box = [(0, s - 1) for s in self.spec.sizes]
        if self.spec.out_regions is not None:
            for name, region in zip(self.outputs, self.spec.out_regions, strict=True):
                self.info[name].box = [(m, m + e - 1) for m, e in region]
        for name in reversed(self.order):
            fi = self.info[name]
            if fi.box is None and name in self.read_by_empty:
                fi.box = [(0, -1)] * len(fi.f.args)  # its stages then have no point either
            for b in fi.f.schedule.bounds:
                self._apply_bound(fi, b)
            if fi.box is None:  # read by no stage, not even one without a point
                raise UnsupportedHalideFeature(name, None, "a Func no stage reads")
            self._grow_by_updates(fi)
            for k in range(len(definitions(fi.f))):
                self._record_calls(fi, k)

    def _apply_bound(self, fi: FuncInfo, b: HBound) -> None:
        """``Func.bound``: the realized region of that dimension is exactly the bound."""
        f = fi.f
        if b.min is None or b.extent is None or b.modulus is not None:
            raise UnsupportedHalideFeature(f.name, None, "align_bounds / align_extent")
        k = f.args.index(b.var)
        lo = self._const(b.min, f.name)
        ext = self._const(b.extent, f.name)
        if fi.box is None:
            raise UnsupportedHalideFeature(f.name, None, f"bound({b.var}) on a Func no stage "
                                           "reads")
        need = fi.box[k]
        if need[0] <= need[1] and (need[0] < lo or need[1] > lo + ext - 1):
            raise UnsupportedHalideFeature(
                f.name, None, f"bound({b.var}, {lo}, {ext}) smaller than the region its "
                f"consumers read, {need}")
        fi.box[k] = (lo, lo + ext - 1)

    def _const(self, e: HExpr, func: str) -> int:
        scope = self._scope(func, 0, {}, record=None)
        v = translate(e, scope)
        iv = bd.interval(v, {})
        if iv[0] is None or iv[0] != iv[1]:
            raise UnsupportedHalideFeature(func, None, f"a bound that is not a constant: {v!r}")
        return int(iv[0])

    def stage(self, fi: FuncInfo, k: int) -> Stage:
        """The iterators of stage ``k``: pure Vars over the Func's box (only those an update
        names on its left-hand side), then the RVars over their RDom."""
        f, d = fi.f, definitions(fi.f)[k]
        assert fi.box is not None
        names: list[str] = []
        ranges: list[tuple[int, int]] = []
        for pos in reversed(range(len(f.args))):
            a = d.args[pos]
            if k == 0 or (a.kind == "Variable" and a.name == f.args[pos] and not a.param_name):
                names.append(f.args[pos])
                ranges.append(fi.box[pos])
        if any(sp.old_var == OUTERMOST for sp in d.schedule.splits):
            names.insert(0, OUTERMOST)  # gpu_single_thread(): Halide's loop of one iteration
            ranges.insert(0, (0, 0))
        if k > 0:
            for rv in reversed(d.schedule.rvars):
                lo = self._const(rv.min, f.name)
                names.append(rv.var)
                ranges.append((lo, lo + self._const(rv.extent, f.name) - 1))
        namer = Namer()
        vars_ = {n: me.Var(namer(n)) for n in names}
        return Stage(names, vars_, {vars_[n].name: r for n, r in zip(names, ranges,
                                                                      strict=True)})

    def _bounds_stage(self, fi: FuncInfo, k: int
                      ) -> tuple[Stage, Scope, list[tuple[str, int, tuple[Expr, ...]]],
                                 isl.Set, AffineContext]:
        """Stage ``k`` for the bounds pass: a scope that records calls, and the ISL domain."""
        d = definitions(fi.f)[k]
        st = self.stage(fi, k)
        rec: list[tuple[str, int, tuple[Expr, ...]]] = []
        scope = self._scope(fi.f.name, k, dict(st.vars), record=rec)
        pred = self._predicate(d, scope)
        dom, ac, _ = bd.stage_domain([st.vars[n].name for n in st.names], st.ranges, pred)
        return st, scope, rec, dom, ac

    def _grow_by_updates(self, fi: FuncInfo) -> None:
        """Halide realizes what an update writes too (a histogram's bins, say), and what it
        reads of its own Func (``f[x, r] = f[x, r - 1] + 1`` from ``r = 0`` reads
        ``f[x, -1]``, which the pure definition then computes). Every stage here runs its
        pure Vars over the one box, so growth by one update widens the others' domains:
        passes until the box holds still (one per update suffices unless updates feed
        each other's growth, as ``f[r, y] = f[r + y, y]`` with ``f[x, s] = f[x, s + x]``
        would without end; a read left outside is then the middle-end's unproduced read).
        An output's box grows so too: Halide's bounds query sizes the output buffer over
        it, and ``realize(sizes)`` returns the realized part (:mod:`.outputs`)."""
        n = len(definitions(fi.f))
        for _ in range(n):
            before = list(fi.box or ())
            for k in range(1, n):
                for box in self._update_footprints(fi, k):
                    fi.box = bd.hull(fi.box, box)
            if fi.box == before:
                return

    def _update_footprints(self, fi: FuncInfo, k: int) -> list[list[tuple[int, int]]]:
        """What update ``k`` writes and reads of its own Func over its current domain, as
        boxes in Halide dimension order."""
        st, scope, rec, dom, ac = self._bounds_stage(fi, k)
        d = definitions(fi.f)[k]
        lhs = self._footprint(fi.f.name, k, [translate(a, scope) for a in d.args], dom, ac,
                              st.ranges)
        boxes = [] if lhs is None else [lhs]
        for root in exprs_of(d):
            translate(root, scope)
        for callee, _vi, args in rec:
            if callee == fi.f.name:
                got = self._footprint(fi.f.name, k, list(reversed(args)), dom, ac, st.ranges)
                if got is not None:
                    boxes.append(got[::-1])
        return boxes

    def _footprint(self, func: str, k: int, idx: list[Expr], dom: isl.Set, ac: AffineContext,
                   ranges: dict[str, tuple[int, int]]) -> list[tuple[int, int]] | None:
        out = []
        for e in idx:
            try:
                r = bd.index_range(e, dom, ac, ranges)
            except bd.Unbounded as ex:
                raise UnsupportedHalideFeature(func, k, f"an index whose range cannot be "
                                               f"bounded ({ex}); clamp it") from None
            if r is None:
                return None
            out.append(r)
        return out

    def _record_calls(self, fi: FuncInfo, k: int) -> None:
        """Grow the boxes of the Funcs and images stage ``k`` reads."""
        st, scope, rec, dom, ac = self._bounds_stage(fi, k)
        for root in exprs_of(definitions(fi.f)[k]):
            translate(root, scope)
        ranges = st.ranges
        for callee, _vi, args in rec:
            if callee == fi.f.name:
                continue
            box = self._footprint(fi.f.name, k, list(reversed(args)), dom, ac, ranges)
            if box is None:  # the stage has no point: it reads nothing
                if callee.startswith("image:"):
                    self.input_req.setdefault(callee[6:], None)
                else:
                    self.read_by_empty.add(callee)
                continue
            box.reverse()  # back to Halide order
            if callee.startswith("image:"):
                img = callee[6:]
                self.input_req[img] = bd.hull(self.input_req.get(img), box)
            else:
                ci = self.info[callee]
                ci.box = bd.hull(ci.box, box)

    def _predicate(self, d: HDefinition, scope: Scope) -> Expr | None:
        p = d.predicate
        if p is None or (p.kind == "UIntImm" and p.value == 1):
            return None
        return translate(p, scope)

    # ----------------------------------------------------------------- scopes
    def _scope(self, func: str, stage: int, vars_: dict[str, Expr],
               record: list[tuple[str, int, tuple[Expr, ...]]] | None,
               busy: frozenset[str] = frozenset()) -> Scope:
        def call(name: str, vi: int, args: tuple[Expr, ...]) -> Expr:
            if record is not None:
                record.append((name, vi, args))
                return bd.Opaque(dtype_of(self.hp.func(name).output_types[vi], func, stage),
                                 lambda rs: value_range(self, name, vi, tuple(
                                     bd.interval(a, rs, deep=True) for a in args), busy))
            return self._func_access(func, stage, name, vi, args)

        def image(name: str, args: tuple[Expr, ...]) -> Expr:
            if record is not None:
                record.append(("image:" + name, 0, args))
                return bd.Opaque(self._image_type(name, func, stage))
            return self._image_access(name, args)

        return Scope(func, stage, dict(vars_), call, image, lambda e: self._param_variable(
            e, func, stage, record is not None), funcs=self.hp.func)

    def _image_type(self, name: str, func: str, stage: int) -> me.DType:
        p = self.params.get(name)
        if p is not None:
            return dtype_of(p.type, func, stage)
        for b in self.hp.buffers:
            if b.name == name:
                return dtype_of(b.type, func, stage)
        raise UnsupportedHalideFeature(func, stage, f"a read of an unknown image {name!r}")

    def _param_variable(self, e: HExpr, func: str, stage: int, bounds_pass: bool) -> Expr:
        name = e.name
        if "." in name:  # buffer metadata: inp.extent.0, inp.min.1, inp.stride.0
            base, _, rest = name.partition(".")
            what, _, dim = rest.partition(".")
            shape = self.input_shapes.get(base)
            if shape is None or not dim.isdigit() or int(dim) >= len(shape):
                raise UnsupportedHalideFeature(func, stage, f"the buffer property {name!r}")
            k = int(dim)
            if what == "min":
                return wrap(0)
            if what == "extent":
                return wrap(shape[k])
            if what == "stride":
                return wrap(int(np.prod(shape[:k], dtype=np.int64)))
            raise UnsupportedHalideFeature(func, stage, f"the buffer property {name!r}")
        if name in self.index_values:
            return const(self.index_values[name], dtype_of(e.type, func, stage))
        dt = dtype_of(e.type, func, stage)
        if bounds_pass:
            return bd.Opaque(dt)
        return self._scalar_value(name, dt)

    # filled in by build()
    def _func_access(self, func: str, stage: int, name: str, vi: int,
                     args: tuple[Expr, ...]) -> Expr:
        ci = self.info[name]
        r = self.copy_ctx if name == func else self.placement.copy_for(name, func, stage)
        target = (ci.comps[0] if r == 0 else ci.copies[r - 1])[vi]
        idx = tuple(reversed(args))
        if len(definitions(ci.f)) == 1:  # by value (at the one point of a gpu_single_thread)
            return target[(0, *idx) if OUTERMOST in ci.stage_vars[0] else idx]
        if ci.storage:
            bufs = ci.storage if r == 0 else ci.copy_storage[r - 1]
            return bufs[vi][tuple(self._storage_index(ci, list(idx)))]
        return target.memory[idx]

    def _needs_buffer(self, fi: FuncInfo) -> bool:
        """A Func whose region does not start at 0, or whose storage order was changed
        (reorder_storage), is stored in a buffer of its own, at an offset / permuted (the
        middle-end's default buffers start at index 0, in the computation's loop order)."""
        assert fi.box is not None
        if fi.inline:
            return False
        return any(lo != 0 for lo, _ in fi.box) or storage_order(fi) != list(
            reversed(range(len(fi.f.args))))

    def _storage_index(self, fi: FuncInfo, idx: list[Expr]) -> list[Expr]:
        """Buffer indices of the element at Halide coordinates ``idx`` (given outermost
        first, i.e. in reverse Halide order)."""
        assert fi.box is not None
        h = list(reversed(idx))
        out = []
        for p in storage_order(fi):
            lo = fi.box[p][0]
            out.append(h[p] - lo if lo else h[p])
        return out

    def _image_access(self, name: str, args: tuple[Expr, ...]) -> Expr:
        return self.images[name][tuple(reversed(args))]

    def _scalar_value(self, name: str, dt: me.DType) -> Expr:
        got = self.scalar_exprs.get(name)
        if got is None:
            ours = self.names(name)
            if dt == me.int32:
                got = me.Param(ours)
                self.scalars[name] = (ours, "param", dt)
            else:  # Layer I's scalar input: a zero-dimensional input of its type
                got = me.Input(ours, [], dt)[()]
                self.scalars[name] = (ours, "scalar", dt)
            self.scalar_exprs[name] = got
        return got

    # ----------------------------------------------------------------- Layer I
    def build(self, fname: str) -> Built:
        self.infer_bounds()
        self._check_inputs()
        self.scalars: dict[str, tuple[str, str, me.DType]] = {}
        self.scalar_exprs: dict[str, Expr] = {}
        self.images: dict[str, me.Input] = {}
        inputs: dict[str, str] = {}
        constants: dict[str, np.ndarray] = {}
        # specialized on sizes and index Params, a stage may have no point (RDom(0, n) with
        # n = 0, a where that never holds), where Halide runs none: the middle-end drops it
        with me.Function(self.names(fname), allow_empty_domains=True) as fn:
            for img in self.input_req:
                ours = self.names(img)
                p = self.params.get(img)
                if p is not None:
                    shape = tuple(reversed(self.input_shapes[img]))
                    self.images[img] = me.Input(ours, list(shape), dtype_of(p.type, None, None))
                    inputs[img] = ours
                    continue
                b = next(b for b in self.hp.buffers if b.name == img)
                arr = _buffer_array(b)
                self.images[img] = me.Input(ours, list(arr.shape), dtype_of(b.type, None, None))
                constants[ours] = arr
            for name in self.order:
                plan_func_schedule(self.info[name], name in self.outputs)
            self.placement = Placement(self.info)
            for name in self.order:
                if self.placement.computed_at(name) and len(self.placement.stages(name)) > 1:
                    self.placement.check_copies(name)
            for name in self.order:
                self._define(self.info[name])
            if any(fi.temps for fi in self.info.values()):
                self._program_order()
            for name in self.order:
                fi = self.info[name]
                for k, d in enumerate(definitions(fi.f)):
                    if fi.inline and (d.schedule.splits or any(
                            dm.for_type != "Serial" for dm in d.schedule.dims)):
                        raise UnsupportedHalideFeature(
                            name, k, "loop directives on a Func that is computed inline "
                            "(schedule it with compute_root or compute_at)")
                    if not fi.inline:
                        schedule_stage(self, fi, k)
            # consumers first: a producer computed at a loop that its consumer inherits
            # from its own compute_at is then ordered inside that loop, before it
            for name in reversed(self.order):
                place(self, self.info[name])
            for name in self.order:
                if not self.info[name].inline:
                    fuse_with(self, self.info[name])
        outs = [c for n in self.outputs for c in self.info[n].comps[0]]
        comps = {n: fi.comps for n, fi in self.info.items()}
        loops = {n: [{h: p.loops[h] for h in p.order} for p in fi.plans]
                 for n, fi in self.info.items()}
        stages = {c.name: (self.order[fpos], k) for c, (fpos, k, _) in self.seq}
        return Built(fn, outs, inputs, self.scalars, constants, comps, loops,
                     output_regions(self.info, self.outputs, self.spec.sizes), stages)

    def _check_inputs(self) -> None:
        for img, box in self.input_req.items():
            if img not in self.params:
                continue
            shape = self.input_shapes.get(img)
            if shape is None:
                raise UnsupportedHalideFeature(None, None, f"no image given for {img!r}")
            if box is None:  # read only where nothing is computed: Halide checks no bound
                continue
            for k, ((lo, hi), ext) in enumerate(zip(box, shape, strict=True)):
                if lo < 0 or hi >= ext:
                    raise me.DefinitionError(
                        f"Halide pipeline reads input {img!r} at [{lo}, {hi}] in dimension "
                        f"{k}, but the image given covers [0, {ext - 1}] (add a boundary "
                        "condition or give a larger image)")

    def _define(self, fi: FuncInfo) -> None:
        f = fi.f
        base = self.names(f.name)
        for k, d in enumerate(definitions(f)):
            st = self.stage(fi, k)
            names, vars_ = st.names, st.vars
            fi.stage_vars.append(vars_)
            scope = self._scope(f.name, k, dict(vars_), record=None)
            its = [me.Var(v.name, st.ranges[v.name][0], st.ranges[v.name][1] + 1)
                   for v in (vars_[n] for n in names)]
            pred = self._predicate(d, scope)
            comps = []
            cnames = [base if len(d.values) == 1 else f"{base}_{vi}"
                      for vi in range(len(d.values))]
            cnames = [self.names(n if k == 0 else f"{n}_s{k}") for n in cnames]
            exprs = [translate(v, scope) for v in d.values]
            if k > 0 and reads_a_sibling(f, d, k):
                fi.temps[k] = [me.Computation(
                    self.names(f"{n}_new"), its, e, predicate=pred,
                    dtype=dtype_of(f.output_types[vi], f.name, k))
                    for vi, (n, e) in enumerate(zip(cnames, exprs, strict=True))]
                exprs = [t[tuple(its)] for t in fi.temps[k]]
                mins = [st.ranges[v.name][0] for v in its]
                if min(mins, default=0) < 0:
                    # an RDom from a negative min (hl.argmax(a[x + r]) over [-2, 2]): its
                    # buffer starts at 0, each dimension shifted by its iterator's min
                    for t in fi.temps[k]:
                        t.store_in(me.Buffer(self.names(f"{t.name}_buf"), [
                            st.ranges[v.name][1] - min(m, 0) + 1 for v, m in zip(
                                its, mins, strict=True)], t.dtype), [
                            v - m if m < 0 else v for v, m in zip(its, mins, strict=True)])
            for vi, (cname, expr) in enumerate(zip(cnames, exprs, strict=True)):
                dt = dtype_of(f.output_types[vi], f.name, k)
                if k == 0 and (self._needs_buffer(fi) or OUTERMOST in names):
                    assert fi.box is not None
                    fi.storage.append(me.Buffer(self.names(f"{cname}_buf"), [
                        fi.box[p][1] - fi.box[p][0] + 1 for p in storage_order(fi)], dt))
                c = me.Computation(cname, its, expr, predicate=pred, dtype=dt)
                if k == 0 and fi.storage:
                    c.store_in(fi.storage[vi], self._storage_index(fi, [
                        vars_[n] for n in names if n != OUTERMOST]))
                elif k > 0:
                    idx = [translate(a, scope) for a in reversed(d.args)]
                    if fi.storage:
                        c.store_in(fi.storage[vi], self._storage_index(fi, idx))
                    else:
                        c.store_in(fi.comps[0][vi], idx)
                comps.append(c)
            fpos, n = self.order.index(f.name), len(d.values)
            self.seq.extend((t, (fpos, k, vi)) for vi, t in enumerate(fi.temps.get(k, [])))
            self.seq.extend((c, (fpos, k, vi + (n if k in fi.temps else 0)))
                            for vi, c in enumerate(comps))
            fi.comps.append(comps)
        if self.placement.computed_at(f.name):
            for r in range(1, len(self.placement.stages(f.name))):
                define_copy(self, fi, r)

    def _program_order(self) -> None:
        """Give every computation its place in Halide's sequential order: Funcs producers
        first, each Func's stages in order, each stage's points in order and, at each point,
        its computations in order (an update whose Tuple elements read each other computes
        every new value before storing any). The middle-end's memory reads then see what
        Halide's do; by default it runs each computation's whole domain in turn."""
        keys = {(fpos, k): stage_order(self, self.info[self.order[fpos]], k)
                for _, (fpos, k, _) in self.seq}  # a reordered argmax: as scheduled
        outs = {}
        for c, (fpos, k, slot) in self.seq:
            dims = [v.name for v in c.vars]
            key = keys[(fpos, k)]
            outs[c.name] = [str(fpos), str(k), *(dims if key is None else [
                e.format(*dims) for e in key]), str(slot)]
        width = max(len(o) for o in outs.values())
        for c, _ in self.seq:
            o = outs[c.name] + ["0"] * (width - len(outs[c.name]))
            c.order = f"{{ {c.name}[{', '.join(v.name for v in c.vars)}] -> [{', '.join(o)}] }}"


def _buffer_array(b: HBuffer) -> np.ndarray:
    """A constant hl.Buffer's data as a C-ordered numpy array (numpy axis order)."""
    dt = dtype_of(b.type, None, None)
    dims = b.dims
    flat = np.frombuffer(b.data, dtype=dt.numpy.newbyteorder("<"))
    shape = [d.extent for d in dims]
    strides = [d.stride * dt.numpy.itemsize for d in dims]
    arr = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides)
    return np.ascontiguousarray(arr.transpose(tuple(reversed(range(len(dims))))))
