"""Line buffers for stencils (the fpga target's ``comp.line_buffer(buffer)``).

A pipelined stencil such as a 3x3 convolution reads nine elements per iteration of its
column loop, eight of which it has read before: from an off-chip port that is nine reads
per element where one suffices. A line buffer keeps on chip the lines of ``buffer`` the
window still needs and a window of registers slides along the row, so that each iteration
reads one new element (per lane: the channels of an RGB pixel, say) and each element is
read once.

What this pass decides, with ISL on the scheduled accesses (time-space, see
:mod:`middleend.passes.physical`):

* the reads are a stencil over the scan of the pipelined loop ``P`` (and the loop ``R``
  directly around it, the rows): every reference is the first one translated by a constant
  offset (``A_k ∘ A_0⁻¹`` has one delta), one iteration of ``P`` moves the reads one
  element forward along one dimension of the buffer (its columns), one iteration of ``R``
  one element forward along another (its rows); anything else (reads at varying offsets,
  a scan that goes backwards, a vectorized scan) is refused with the reason;
* the reuse distance: the pairs of scan iterations that read the same element (any two
  references), as lexicographic distances in the scan (``deltas``). It must be a bounded
  set whatever the parameters and lie along ``R`` and ``P`` only; its lexicographic
  maximum ``(r, c)`` is how far back an element is still needed: the line buffer holds
  ``r`` lines and the window ``r + 1`` rows of ``c' + 1`` columns (``c'`` the largest
  column distance), that is ``r`` rows and ``c + 1`` elements live at once;
* the fill: the loops are extended by ``(r, c')`` so that each iteration reads the element
  its window needs next (the scan starts ``r`` rows and ``c'`` columns before the first
  instance), as a map from the extended scan to the buffer whose range must lie inside the
  buffer and which must be injective: each element is read from memory once.

The loop AST is then rewritten accordingly (:mod:`middleend.passes.linebuffer_ast`): the
scan extended by the window, plain ``line_buffer`` statements that move the window and the
lines and read the one new element, the consumer reading the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from .data import Layer3, box, named_buffer
from .dataflow import logical_access
from .layer1 import Layer1
from .layer4 import Layer4
from .placement import TimeSpace

WINDOW_LIMIT = 1024  # window registers (a complete partition makes one per element)


@dataclass(frozen=True)
class LinePlan:
    """What ISL decided for one ``line_buffer`` command. Offsets are per dimension of the
    buffer, relative to the consumer's first reference to it."""

    consumer: str
    buffer: str
    command: str  # as written
    index: int  # its position in the command log
    pipe_var: str  # the loop iterators of P and R in the loop AST (t<dim>)
    row_var: str | None
    col_dim: int
    row_dim: int | None
    lanes: tuple[int, ...]  # dims of the buffer that vary inside one iteration of P
    rows: int  # lines held (the reuse distance along R)
    cols: int  # the window's width minus one (the largest column distance)
    distance: tuple[int, int]  # the lexicographic maximum of the reuse distances (R, P)
    lo: tuple[int, ...]  # the smallest offset per dimension
    offsets: dict[int, tuple[int, ...]]  # read reference -> its offset
    fill: isl.Map  # extended scan point -> the element its iteration reads (injective)

    def summary(self) -> str:
        """The reuse distance and what it costs, in words (for messages and docs)."""
        r, c = self.distance
        return (f"reuse distance {r} rows + {c} columns: {r} lines of {self.buffer!r} on "
                f"chip and a {self.rows + 1}x{self.cols + 1} window")


def commands_of(commands: list[cmd.Command]) -> list[tuple[cmd.LineBuffer, int]]:
    """The line_buffer commands, each with its position in the log."""
    return [(c, k) for k, c in enumerate(commands) if isinstance(c, cmd.LineBuffer)]


def _free(s: isl.Set) -> isl.Set:
    """``s`` for some value of the parameters (they are projected out)."""
    return s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))


def _point(s: isl.Set) -> tuple[int, ...]:
    p = s.sample_point()
    return tuple(int(p.get_coordinate_val(isl.dim_type.set, j).to_python())
                 for j in range(s.dim(isl.dim_type.set)))


def _tmap(ctx: isl.Context, n: int, cons: list[str], params: isl.Space) -> isl.Map:
    """``{[t0..] -> [u0..] : cons}`` over ``n`` time-space dims, aligned with ``params``."""
    t = ", ".join(f"t{k}" for k in range(n))
    u = ", ".join(f"u{k}" for k in range(n))
    text = f"{{ [{t}] -> [{u}] : {' and '.join(cons) or 'true'} }}"
    return isl.Map.read_from_str(ctx, text).align_params(params)


def _step(ctx: isl.Context, n: int, d: int, by: int, params: isl.Space) -> isl.Map:
    return _tmap(ctx, n, [f"u{k} = t{k}" + (f" + {by}" if k == d else "")
                          for k in range(n)], params)


def plan(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace, c: cmd.LineBuffer,
         index: int) -> LinePlan:
    """Decide the line buffer of command ``c`` (number ``index`` in the log; see the
    module docstring), or refuse."""
    comp = c.comp
    where = f"{c.describe()} (command #{index})"

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(f"cannot line-buffer {c.buffer!r} for {comp!r} ({where}): "
                             f"{why}", computations=(comp,), command=c.describe(),
                             command_index=index)

    if comp not in l1.comps or comp not in ts.comps:
        raise refuse("it is not a (non-inlined) computation")
    buf = named_buffer(c.buffer, l3, where)
    info = l3.buffers[buf]
    if info.role not in ("input", "temporary"):
        raise refuse(f"{buf!r} is an {info.role} of the kernel (written by it); a line "
                     "buffer holds what a stage reads")
    if info.fold or info.alloc_at is not None or info.copy_of is not None:
        raise refuse(f"{buf!r} is folded, allocated in a loop or a copy; line-buffer the "
                     "buffer it holds instead")
    refs = [r for r in l1.comps[comp].reads if l4.buffer_of(l3, r) == buf]
    if not refs:
        raise refuse(f"it does not read {buf!r}")
    if any(r.access is None for r in refs):
        raise refuse(f"it reads {buf!r} at a data-dependent index (not a stencil)")
    s = ts.comps[comp]
    piped = [n for n, t in s.tags.items() if t == "pipeline" and n in s.dims]
    if not piped:
        raise refuse("it has no pipelined loop (pipeline the loop that scans the columns)")
    dyn = s.n_outer + s.dims.index(piped[0])
    ntd = 2 * ts.depth + 1
    d_p = 2 * dyn + 1
    d_r = d_p - 2 if dyn > 0 else None
    names = s.ext_dims
    p_name = names[dyn]
    r_name = names[dyn - 1] if dyn > 0 else None
    ctx, params = l1.ctx, l1.param_space
    assert s.full is not None and s.proj is not None
    to_t = s.full.reverse().apply_range(s.proj)  # T -> C[x]
    acc = [logical_access(l1, l3, r).set_tuple_name(isl.dim_type.out, buf) for r in refs]
    reads = [to_t.apply_range(a) for a in acc]  # T -> B[e]
    ndim = info.ndim

    # every reference is the first one translated by a constant offset
    offsets: dict[int, tuple[int, ...]] = {}
    for r, a in zip(refs, acc, strict=True):
        delta = _free(acc[0].reverse().apply_range(a).deltas())
        if not delta.is_singleton():
            raise refuse(f"it reads {buf!r} at offsets that vary from instance to instance "
                         f"({delta}): not a stencil")
        offsets[r.ref] = _point(delta)
    lo = tuple(min(o[j] for o in offsets.values()) for j in range(ndim))
    hi = tuple(max(o[j] for o in offsets.values()) for j in range(ndim))

    def direction(d: int, what: str) -> int | None:
        """The buffer dim one step of loop ``d`` moves the reads one element forward on."""
        step = _step(ctx, ntd, d, 1, params)
        moved = _free(reads[0].reverse().apply_range(step).apply_range(reads[0]).deltas())
        if moved.is_empty():
            return None
        if not moved.is_singleton():
            raise refuse(f"one iteration of its loop {what} moves its reads of {buf!r} by "
                         f"varying amounts ({moved}): not a scan")
        v = _point(moved)
        nz = [j for j in range(ndim) if v[j]]
        if not nz:
            return -1  # the loop does not move along the buffer at all
        if len(nz) != 1 or v[nz[0]] != 1:
            back = " backwards" if len(nz) == 1 and v[nz[0]] < 0 else ""
            raise refuse(f"one iteration of its loop {what} moves its reads of {buf!r} by "
                         f"{list(v)}{back}; a line buffer needs a scan that reads one "
                         "element further along one dimension per iteration (in scan "
                         "order, not vectorized)")
        return nz[0]

    col = direction(d_p, repr(p_name))
    if col is None:
        raise refuse(f"its pipelined loop {p_name!r} never runs a second iteration")
    if col < 0:
        raise refuse(f"every iteration of its pipelined loop {p_name!r} reads the same "
                     f"elements of {buf!r} (nothing to scan)")
    row = direction(d_r, repr(r_name)) if d_r is not None else None
    row = None if row is not None and row < 0 else row
    if row == col:
        raise refuse(f"its loops {r_name!r} and {p_name!r} scan the same dimension of "
                     f"{buf!r}")
    spans = [j for j in range(ndim) if hi[j] != lo[j]]
    if any(j not in (row, col) for j in spans):
        moves = [x for x in (row, col) if x is not None]
        raise refuse(f"its window spans dimension(s) {spans} of {buf!r}, but the scan of "
                     f"{r_name!r} and {p_name!r} moves along {moves} only: not a stencil "
                     "over the scan")

    # the reuse distance: scan iterations that read the same element, from any two refs
    scan = _tmap(ctx, ntd, [f"u{k} = t{k}" for k in range(d_p + 1)], params)
    scan = scan.project_out(isl.dim_type.out, d_p + 1, ntd - d_p - 1)  # T -> S
    by_scan = None
    for m in reads:
        x = scan.reverse().apply_range(m)
        by_scan = x if by_scan is None else by_scan.union(x)
    assert by_scan is not None
    pairs = by_scan.apply_range(by_scan.reverse())
    pairs = pairs.intersect(isl.Map.lex_lt(pairs.get_space().domain()))
    dist = _free(pairs.deltas())
    if not dist.is_bounded():
        raise refuse(f"the distance between two reads of one element of {buf!r} is not "
                     f"constant ({dist}): not a stencil")
    along = [k for k in (d_r, d_p) if k is not None]
    flat = isl.Set.read_from_str(ctx, "{ [" + ", ".join(f"s{k}" for k in range(d_p + 1))
                                 + "] : " + " and ".join(
                                     [f"s{k} = 0" for k in range(d_p + 1) if k not in along]
                                     or ["true"]) + " }")
    if not dist.is_subset(flat):
        raise refuse(f"it reads one element of {buf!r} again in another iteration of a loop "
                     f"outside {r_name!r} ({dist}): not a stencil over the scan")
    if dist.is_empty():
        rows, cols, far = 0, 0, (0, 0)
    else:
        rows = int(dist.dim_max_val(d_r).to_python()) if d_r is not None else 0
        cols = max(int(dist.dim_max_val(d_p).to_python()),
                   -int(dist.dim_min_val(d_p).to_python()))
        top = _point(dist.lexmax())
        far = (top[d_r] if d_r is not None else 0, top[d_p])
    want_rows = hi[row] - lo[row] if row is not None else 0
    if (rows, cols) != (want_rows, hi[col] - lo[col]):
        raise refuse(f"its window ({want_rows + 1}x{hi[col] - lo[col] + 1}) is not what the "
                     f"reuse distances ({dist}) need: not a stencil over the scan")
    if rows and d_r is None:
        raise refuse("it reuses across rows but has no loop around its pipelined loop")

    # the lanes: dims the reads of one iteration of P spread over (inner, unrolled loops)
    same = _tmap(ctx, ntd, [f"u{k} = t{k}" for k in range(d_p + 1)], params)
    inner = _free(reads[0].reverse().apply_range(same).apply_range(reads[0]).deltas())
    lanes = tuple(j for j in range(ndim) if j not in (row, col) and
                  not inner.is_subset(isl.Set.read_from_str(ctx, "{ [" + ", ".join(
                      f"e{k}" for k in range(ndim)) + f"] : e{j} = 0 }}")))

    # the fill: iteration T of the extended scan reads the newest element of the window of
    # the instance at T - (rows, cols), whose first reference reads base + lo
    newest = reads[0].apply_range(_translate(ctx, buf, ndim, hi, params))
    ext = isl.Map.from_basic_map(newest.affine_hull())
    if not ext.intersect_domain(newest.domain()).is_equal(newest):
        raise refuse(f"its reads of {buf!r} are not affine in the loops")
    shift = [0] * ntd
    if d_r is not None:
        shift[d_r] = rows
    shift[d_p] = cols
    grow = isl.Set.read_from_str(ctx, "{ [" + ", ".join(f"t{k}" for k in range(ntd)) + "] : "
                                 + " and ".join(f"0 <= t{k} <= {shift[k]}"
                                                for k in range(ntd)) + " }")
    dom = to_t.domain()
    ext_dom = dom.sum(grow.align_params(dom.get_space()))
    back = _tmap(ctx, ntd, [f"u{k} = t{k} - {shift[k]}" for k in range(ntd)], params)
    fill = back.intersect_domain(ext_dom).apply_range(ext)
    outside = fill.range().subtract(box(info, fill.range().get_space()))
    if not outside.intersect_params(l1.context).is_empty():
        raise refuse(f"the window's bounding box reaches elements outside {buf!r}: "
                     f"{outside}")
    if not fill.is_injective():
        raise refuse(f"several instances in one iteration of {p_name!r} read the same "
                     f"element of {buf!r} (an inner loop that does not index it)")
    return LinePlan(comp, buf, c.describe(), index, f"t{d_p}",
                    f"t{d_r}" if d_r is not None else None, col, row, lanes, rows, cols, far,
                    lo, offsets, fill)


def _translate(ctx: isl.Context, buf: str, n: int, by: tuple[int, ...],
               params: isl.Space) -> isl.Map:
    e = ", ".join(f"e{k}" for k in range(n))
    f = ", ".join(f"e{k} + {by[k]}" for k in range(n))
    return isl.Map.read_from_str(ctx, f"{{ {buf}[{e}] -> {buf}[{f}] }}").align_params(params)


def plans(l1: Layer1, l3: Layer3, l4: Layer4, ts: TimeSpace,
          commands: list[cmd.Command]) -> list[LinePlan]:
    """One plan per line_buffer command (refusing two for one consumer and buffer)."""
    out: list[LinePlan] = []
    for c, k in commands_of(commands):
        p = plan(l1, l3, l4, ts, c, k)
        for q in out:
            if q.consumer == p.consumer:
                again = "already line-buffers it" if q.buffer == p.buffer else \
                    f"already line-buffers {q.buffer!r} (one line buffer per stage)"
                raise ScheduleError(f"cannot line-buffer {p.buffer!r} for {p.consumer!r} "
                                    f"({c.describe()} (command #{k})): {p.consumer!r} "
                                    f"{again}", computations=(p.consumer,),
                                    command=c.describe(), command_index=k)
        out.append(p)
    return out
