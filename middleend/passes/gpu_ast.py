"""GPU facts a target needs from the loop AST, computed with ISL so that targets never
touch it: which hardware dimension each GPU loop maps to, how many iterations it has at
most (the grid's and the block's sizes), and each host/device copy as one bulk transfer
with the first and last element it moves.

Extents are maxima over every loop around the GPU loop inside its kernel, as functions of
the params and of the iterators of the host loops around the kernel (a kernel launched
in a time loop): a block loop's extent is the grid's size on that axis, evaluated by the
host at launch; a thread loop's must be a constant (the block's size), which a tile
gives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import islpy as isl

from ..ir.errors import ScheduleError
from ..ir.loopast import Alloc, Block, Box, For, IExpr, If, IInt, Node, Stmt, statements
from .placement import TimeSpace

GPU_LOOPS = ("gpu_block", "gpu_thread")
TRANSFERS = ("host_to_device", "device_to_host")


@dataclass(frozen=True)
class Leaf:
    comp: str
    domain: isl.Set  # the instances this leaf executes (extended domain)


def annotate(body: Node, ts: TimeSpace, leaves: Sequence[Leaf], context: isl.Set,
             iexpr: Callable[[isl.AstExpr], IExpr], kinds: Mapping[str, str | None],
             boxes: Mapping[str, isl.Set]) -> Node:
    """``body`` with GPU loops' axes and extents and bulk host/device copies.
    ``kinds``: statement -> its operation kind (None for computations); ``boxes``: each
    host/device copy -> the elements of its buffer, for its exactness; ``iexpr``
    translates an ISL expression."""
    return _Annotator(ts, leaves, context, iexpr, kinds, boxes).node(body, [], False)


class _Annotator:
    def __init__(self, ts: TimeSpace, leaves: Sequence[Leaf], context: isl.Set,
                 iexpr: Callable[[isl.AstExpr], IExpr], kinds: Mapping[str, str | None],
                 boxes: Mapping[str, isl.Set]) -> None:
        self.ts, self.leaves, self.context = ts, leaves, context
        self.iexpr, self.kinds, self.boxes = iexpr, kinds, boxes
        self.ntd = 2 * ts.depth + 1

    # ------------------------------------------------------------------ walk
    def node(self, n: Node, host: list[int], in_kernel: bool) -> Node:
        """``host``: the time-space dims of the host loops around ``n``."""
        if isinstance(n, For):
            transfer = self._transfer_root(n, in_kernel)
            if transfer is not None:
                return self._bulk(n, transfer, host)
            gpu = n.tag in GPU_LOOPS
            inside = in_kernel or gpu
            body = self.node(n.body, host if inside else [*host, n.dim], inside)
            if not gpu:
                return dataclasses.replace(n, body=body)
            axis = self._axis(n)
            extent = self._extent(n, host, constant=n.tag == "gpu_thread")
            return dataclasses.replace(n, body=body, axis=axis, extent=extent)
        if isinstance(n, Block):
            return Block(tuple(self.node(c, host, in_kernel) for c in n.body))
        if isinstance(n, If):
            els = self.node(n.orelse, host, in_kernel) if n.orelse is not None else None
            return If(n.cond, self.node(n.then, host, in_kernel), els)
        if isinstance(n, Alloc):
            return Alloc(n.buffer, self.node(n.body, host, in_kernel))
        if isinstance(n, Stmt) and self.kinds.get(n.comp) in TRANSFERS and not in_kernel:
            return self._bulk(n, n.comp, host)
        return n

    # ------------------------------------------------------------------ ISL helpers
    def _points(self, n: Node) -> isl.Set:
        """The time-space points of the statement instances under ``n``."""
        out: isl.Set | None = None
        for leaf in _leaf_ids(n):
            rec = self.leaves[leaf]
            t = rec.domain.apply(self.ts.comps[rec.comp].full)
            out = t if out is None else out.union(t)
        assert out is not None, "a loop without statements"
        return out

    def _as_params(self, s: isl.Set, host: list[int]) -> isl.Set:
        """``s`` with the host dims made params named after their loop iterators (``t<k>``,
        as the loop AST names them), so that expressions over them print as those."""
        for d in sorted(host, reverse=True):
            npar = s.dim(isl.dim_type.param)
            s = s.move_dims(isl.dim_type.param, npar, isl.dim_type.set, d, 1)
            s = s.set_dim_name(isl.dim_type.param, npar, f"t{d}")
        return s

    def _expr(self, pa: isl.PwAff) -> IExpr:
        ctx_set = isl.Set.universe(pa.get_domain_space()).intersect_params(
            self.context.align_params(pa.get_domain_space()))
        build = isl.AstBuild.from_context(ctx_set.params())
        return self.iexpr(build.expr_from_pw_aff(pa.gist_params(ctx_set.params())))

    # ------------------------------------------------------------------ GPU loops
    def _axis(self, f: For) -> int:
        """x (0) is the statements' last loop of this kind, y (1) the one before, z."""
        dyn = (f.dim - 1) // 2
        axes = {}
        for c in sorted(_comps(f)):
            dims = self.ts.gpu_dims(c, f.tag or "")
            if dyn in dims:
                axes[c] = len(dims) - 1 - dims.index(dyn)
        if len(set(axes.values())) != 1:
            raise ScheduleError(
                f"loop {f.name!r} maps the statements {sorted(axes)} to different GPU "
                f"dimensions ({axes}); give them the same {f.tag} loops",
                computations=tuple(sorted(axes)), level=f.name)
        axis = next(iter(axes.values()))
        if axis > 2:
            raise ScheduleError(f"loop {f.name!r}: more than three {f.tag} loops",
                                computations=tuple(sorted(axes)), level=f.name)
        return axis

    def _extent(self, f: For, host: list[int], constant: bool) -> IExpr:
        """The most iterations of ``f`` over the loops around it in the kernel."""
        pts = self._points(f)
        upto = pts.project_out(isl.dim_type.set, f.dim + 1, self.ntd - f.dim - 1)
        s = self._as_params(upto, host)
        n = s.dim(isl.dim_type.set)  # the loop's own dim is the last
        m = isl.Map.from_range(s).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, n - 1)
        lo = m.lexmin_pw_multi_aff().get_pw_aff(0)
        hi = m.lexmax_pw_multi_aff().get_pw_aff(0)
        span = hi.sub(lo).add_constant_val(isl.Val.one(s.get_ctx()))
        trips = isl.Map.from_pw_aff(span).range()
        most = trips.dim_max(0)
        if f.step != 1:
            most = most.add_constant_val(isl.Val.int_from_si(s.get_ctx(), f.step - 1)) \
                .div(isl.PwAff.val_on_domain(most.domain(),
                                             isl.Val.int_from_si(s.get_ctx(), f.step))) \
                .floor()
        if not constant:
            return self._expr(most.coalesce())
        bound = most.intersect_params(self.context.align_params(most.get_domain_space()))
        top = bound.max_val()
        if not top.is_int():
            raise ScheduleError(
                f"the GPU thread loop {f.name!r} of {', '.join(sorted(_comps(f)))} has no "
                "constant bound (its extent grows with the parameters): tile it so that "
                "the block has a fixed size", computations=tuple(sorted(_comps(f))),
                level=f.name)
        return IInt(int(top.to_python()))

    # ------------------------------------------------------------------ transfers
    def _transfer_root(self, f: For, in_kernel: bool) -> str | None:
        """The host/device copy whose own loops start at ``f``, if ``f`` holds nothing
        else."""
        if in_kernel:
            return None
        comps = _comps(f)
        if len(comps) != 1:
            return None
        (c,) = comps
        s = self.ts.comps[c]
        return c if self.kinds.get(c) in TRANSFERS and (f.dim - 1) // 2 >= s.n_outer \
            else None

    def _bulk(self, n: Node, op: str, host: list[int]) -> Stmt:
        """One Stmt for a copy's elements under ``n``: the first and last element, and
        whether the row-major range between them is exactly what it copies."""
        s = self.ts.comps[op]
        pts = self._as_params(self._points(n), host)
        own = [2 * (s.n_outer + q) + 1 for q in range(len(s.dims))]
        own = [d - sum(1 for h in host if h < d) for d in own]
        keep = set(own)
        elems = pts
        for d in range(pts.dim(isl.dim_type.set) - 1, -1, -1):
            if d not in keep:
                elems = elems.project_out(isl.dim_type.set, d, 1)
        elems = _anonymous(elems)
        first, last = elems.lexmin_pw_multi_aff(), elems.lexmax_pw_multi_aff()
        lo = tuple(self._expr(first.get_pw_aff(q)) for q in range(len(own)))
        hi = tuple(self._expr(last.get_pw_aff(q)) for q in range(len(own)))
        buf = _anonymous(self.boxes[op].align_params(elems.get_space()))
        between = isl.Set.from_pw_multi_aff(first).apply(
            isl.Map.lex_le(elems.get_space())).intersect(
            isl.Set.from_pw_multi_aff(last).apply(isl.Map.lex_ge(elems.get_space())))
        exact = between.intersect(buf).is_subset(elems)
        leaf = next(iter(_leaf_ids(n)), -1)
        return Stmt(op, (), leaf, Box(lo, hi, exact))


def _anonymous(s: isl.Set) -> isl.Set:
    s = s.reset_tuple_id()
    for q in range(s.dim(isl.dim_type.set)):
        s = s.set_dim_name(isl.dim_type.set, q, f"e{q}")
    return s


def _leaf_ids(n: Node) -> list[int]:
    return [s.leaf for s in statements(n)]


def _comps(n: Node) -> set[str]:
    return {s.comp for s in statements(n)}
