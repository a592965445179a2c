"""Three of Halide's apps, written from their public descriptions as ordinary Halide 21
pipelines, defined once for the tests (``tests/test_halide_apps.py``) and the lowering-time
benchmark (``benchmarks/lowering_time.py``): the bilateral grid (Chen, Paris and Durand),
interpolate (a premultiplied-alpha pyramid that fills holes) and the local Laplacian filter
(Paris, Hasinoff and Kautz); a chain of stencils scheduled per tile
(:func:`stencil_chain`); non-local means and a lens blur's gather, computed per output row
(:func:`nl_means`, :func:`lens_blur`). They live here, beside :mod:`.paper`, so that tests and
benchmarks build the very same pipelines without importing each other.

Each builder takes ``schedule``: ``"inline"`` (no schedule at all: Halide's default, every
Func inlined into the output except those with update definitions) or ``"root"`` (every
intermediate Func ``compute_root``, the simplest schedule that computes each stage once);
the bilateral grid, interpolate and the local Laplacian also take :data:`EXPERT`, the CPU
schedule of Halide's own app (the expert anchor of ``benchmarks/autoschedule.py``); and a
size parameter (pyramid levels) so that lowering time can be measured against the number
of stages. An :class:`App` carries the output, its realization sizes and inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import halide as hl
import numpy as np

SCHEDULES = ("inline", "root")
# interpolate and local Laplacian: every Func inlined but an early stage (interpolate's first
# level, local Laplacian's float input), computed at the output's rows (compute_at), which
# the inlined levels above read
INLINE_AT = "inline_at"


@dataclass
class App:
    """One pipeline: its output Func, the sizes to realize (Halide order), its inputs
    (ImageParam / Param, numpy array / number) and its number of Funcs (stages)."""

    name: str
    output: hl.Func
    sizes: list[int]
    inputs: list[tuple[Any, Any]]
    stages: int
    roots: list[hl.Func] = field(default_factory=list)

    def by_name(self) -> dict[str, Any]:
        return {p.name(): v for p, v in self.inputs}


def _vars(names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names.split()]


def _check_schedule(schedule: str, extra: tuple[str, ...] = ()) -> None:
    if schedule not in SCHEDULES + extra:
        raise ValueError(f"schedule must be one of {SCHEDULES + extra}, got {schedule!r}")


def _root(funcs: list[hl.Func], schedule: str) -> None:
    if schedule == "root":
        for f in funcs:
            f.compute_root()


def bilateral_grid(rows: int = 16, cols: int = 24, schedule: str = "inline",
                   r_sigma: float = 0.1, seed: int = 0) -> App:
    """A histogram of the image over (x/8, y/8, value/r_sigma) (value and weight in
    channel c = 0, 1), blurred along z, x and y (taps 1 4 6 4 1), then sliced at each pixel
    with trilinear interpolation and normalized. ``r_sigma`` is a float Param that decides
    the grid's z index. Inlined, every output pixel reads the histogram through
    2 x 8 x 125 data-dependent (clamped) accesses."""
    _check_schedule(schedule, (EXPERT,))
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    rs = hl.Param(hl.Float(32), "r_sigma")
    g = bilateral_grid_funcs(inp, rs)
    _root([g.histogram, *g.blurs, g.interpolated], schedule)
    if schedule == EXPERT:
        _bilateral_grid_expert(g)
    img = np.random.default_rng(seed).random((rows, cols), dtype=np.float32)
    return App("bilateral_grid", g.output, [cols, rows], [(inp, img), (rs, r_sigma)], 6)


def _vector_floats() -> int:
    """Halide's natural vector size of float32 on the JIT target (8 with AVX2, 16 with
    AVX-512), the width its apps' CPU schedules vectorize by."""
    return hl.get_jit_target_from_environment().natural_vector_size(hl.Float(32))


def _bilateral_grid_expert(g: Grid) -> None:
    """The CPU schedule of Halide's bilateral_grid app (its generator, written by Halide's
    authors): blurz per grid row with the histogram computed in it, blurx and blury per z
    slice, all vectorized along x, channels unrolled; the output per row, vectorized."""
    x, y, z, c = (hl.Var(n) for n in "xyzc")
    blurz, blurx, blury = g.blurs
    blurz.compute_root().reorder(c, z, x, y).parallel(y).vectorize(x, 8).unroll(c)
    g.histogram.compute_at(blurz, y)
    r = g.histogram.rvars(0)
    g.histogram.update().reorder(c, r[0], r[1], x, y).unroll(c)
    for b in (blurx, blury):
        b.compute_root().reorder(c, x, y, z).parallel(z).vectorize(x, 8).unroll(c)
    g.output.compute_root().parallel(y).vectorize(x, 8)


@dataclass
class Grid:
    """The bilateral grid's Funcs, for a caller that schedules them itself."""

    output: hl.Func
    histogram: hl.Func
    blurs: list[hl.Func]  # along z, x, y
    interpolated: hl.Func


def bilateral_grid_funcs(inp: hl.ImageParam, rs: hl.Param) -> Grid:
    """The bilateral grid's algorithm (no schedule) on a 2-D float input and the float
    Param ``rs`` (r_sigma)."""
    x, y, z, c = _vars("x y z c")
    s = 8
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    r = hl.RDom([(0, s), (0, s)], "r")
    val = hl.clamp(clamped[x * s + r.x - s // 2, y * s + r.y - s // 2], 0.0, 1.0)
    hist = hl.Func("histogram")
    hist[x, y, z, c] = hl.f32(0)
    hist[x, y, hl.i32(val * (1.0 / rs) + 0.5), c] += hl.select(c == 0, val, 1.0)
    src, blurs = hist, []
    for axis, name in ((2, "blurz"), (0, "blurx"), (1, "blury")):
        b = hl.Func(name)
        at = [hl.Expr(x), hl.Expr(y), hl.Expr(z), hl.Expr(c)]

        def tap(d: int, at: list[hl.Expr] = at, axis: int = axis, src: hl.Func = src) -> Any:
            sh = list(at)
            sh[axis] = sh[axis] + d
            return src[sh]

        b[x, y, z, c] = tap(-2) + 4.0 * tap(-1) + 6.0 * tap(0) + 4.0 * tap(1) + tap(2)
        blurs.append(b)
        src = b
    v = hl.clamp(clamped[x, y], 0.0, 1.0) * (1.0 / rs)
    zi = hl.i32(v)
    zf = v - hl.f32(zi)
    xf, yf = hl.f32(x % s) / s, hl.f32(y % s) / s
    gx, gy = x // s, y // s
    g = blurs[-1]

    def bil(zz: Any) -> Any:
        return hl.lerp(hl.lerp(g[gx, gy, zz, c], g[gx + 1, gy, zz, c], xf),
                       hl.lerp(g[gx, gy + 1, zz, c], g[gx + 1, gy + 1, zz, c], xf), yf)

    interp = hl.Func("interpolated")
    interp[x, y, c] = hl.lerp(bil(zi), bil(zi + 1), zf)
    out = hl.Func("bilateral_grid")
    out[x, y] = interp[x, y, 0] / interp[x, y, 1]
    return Grid(out, hist, blurs, interp)


def interpolate(rows: int = 16, cols: int = 24, levels: int = 4, schedule: str = "inline",
                seed: int = 0) -> App:
    """Halide's interpolate app: the RGBA input premultiplied by alpha, downsampled
    ``levels - 1`` times (separable 1 2 1), then upsampled back level by level, each level
    filling its holes (1 - alpha) with the coarser one, and normalized by alpha. Halide's
    app uses 10 levels; inlined, a level reads 9 points of the one below, so the inlined
    expression grows as 9^levels (Halide's own inlining too): keep ``levels`` small then.
    ``schedule`` may also be :data:`INLINE_AT` (the first level computed per output row)."""
    _check_schedule(schedule, (INLINE_AT, EXPERT))
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    p = interpolate_funcs(inp, levels)
    _root([*p.down, *p.downx[1:], *p.interp[1:], *p.upx[:-1], *p.up[:-1]], schedule)
    if schedule == INLINE_AT:
        p.down[0].compute_at(p.output, p.output.args()[1])
    if schedule == EXPERT:
        _interpolate_expert(p, cols, rows)
    img = np.random.default_rng(seed).random((4, rows, cols), dtype=np.float32)
    img[3] = 0.1 + 0.9 * img[3]  # alpha > 0: the normalization divides by it
    return App("interpolate", p.output, [cols, rows, 3], [(inp, img)], 5 * levels - 1)


def _interpolate_expert(p: Pyramid, cols: int, rows: int) -> None:
    """The CPU schedule of Halide's interpolate app (its generator): the downsampled levels
    but the last at the root in strips of 8 rows over the cores, the first level recomputed
    per row of the second (a clone of it, stored per strip); the output in strips of 32
    rows over the cores, vectorized along x with the channels unrolled, every
    interpolated level computed per output row, stored per strip."""
    x, y, c = p.output.args()
    xo, xi, yo, yi = (hl.Var(n) for n in ("xo", "xi", "yo", "yi"))
    vec = _vector_floats()
    for d in p.down[1:-1]:
        d.compute_root().never_partition([x]).reorder(x, c, y).split(y, yo, yi, 8) \
            .parallel(yo).vectorize(x, vec)
    first = p.down[0].clone_in(p.downx[1])
    first.store_at(p.down[1], yo).compute_at(p.down[1], yi).reorder(c, x, y).unroll(c) \
        .vectorize(x, vec).never_partition([y])
    p.output.bound(x, 0, cols).bound(y, 0, rows).bound(c, 0, 3).never_partition([y]) \
        .split(x, xo, xi, vec).split(y, yo, yi, 32).reorder(xi, c, xo, yi, yo).unroll(c) \
        .vectorize(xi).parallel(yo)
    for f in p.interp[1:]:
        f.store_at(p.output, yo).compute_at(p.output, yi).never_partition_all() \
            .vectorize(x, vec)


@dataclass
class Pyramid:
    """Interpolate's Funcs per level (``downx[0]``, ``upx[-1]`` and ``up[-1]`` are
    unused), for a caller that schedules them itself."""

    output: hl.Func
    down: list[hl.Func]
    downx: list[hl.Func]
    interp: list[hl.Func]
    upx: list[hl.Func]
    up: list[hl.Func]


def interpolate_funcs(inp: hl.ImageParam, levels: int) -> Pyramid:
    """Interpolate's algorithm (no schedule) on an RGBA float input, ``levels`` levels."""
    x, y, c = _vars("x y c")
    cl = hl.BoundaryConditions.repeat_edge(inp)
    ds, dx, it, ux, us = ([hl.Func(f"{n}{k}") for k in range(levels)]
                          for n in ("down", "downx", "interp", "upx", "up"))
    ds[0][x, y, c] = hl.select(c < 3, cl[x, y, c] * cl[x, y, 3], cl[x, y, 3])
    for k in range(1, levels):
        dx[k][x, y, c] = (ds[k - 1][x * 2 - 1, y, c] + 2.0 * ds[k - 1][x * 2, y, c]
                          + ds[k - 1][x * 2 + 1, y, c]) * 0.25
        ds[k][x, y, c] = (dx[k][x, y * 2 - 1, c] + 2.0 * dx[k][x, y * 2, c]
                          + dx[k][x, y * 2 + 1, c]) * 0.25
    it[levels - 1][x, y, c] = ds[levels - 1][x, y, c]
    for k in range(levels - 2, -1, -1):
        ux[k][x, y, c] = (it[k + 1][x // 2, y, c] + it[k + 1][(x + 1) // 2, y, c]) / 2
        us[k][x, y, c] = (ux[k][x, y // 2, c] + ux[k][x, (y + 1) // 2, c]) / 2
        it[k][x, y, c] = ds[k][x, y, c] + (1.0 - ds[k][x, y, 3]) * us[k][x, y, c]
    out = hl.Func("interpolate")
    out[x, y, c] = it[0][x, y, c] / it[0][x, y, 3]
    return Pyramid(out, ds, dx, it, ux, us)


def local_laplacian(rows: int = 16, cols: int = 24, levels: int = 4, schedule: str = "inline",
                    k_levels: int = 8, alpha: float = 0.5, beta: float = 1.0,
                    seed: int = 0) -> App:
    """The local Laplacian filter as Halide's app describes it: a 16-bit RGB input, its
    gray image, ``k_levels`` remapped copies (a detail-enhancing curve, a lookup table of
    the intensity difference) each decomposed into a Gaussian then a Laplacian pyramid of
    ``levels`` levels (1 3 3 1 down, 1/4 3/4 up); the output Laplacian pyramid takes, per
    pixel, the two copies around the gray image's own pyramid value (a data-dependent,
    clamped index) and interpolates; collapsed and applied to the color channels. Halide's
    app uses 8 levels. ``schedule`` may also be :data:`INLINE_AT` (the float input computed
    per output row) or :data:`EXPERT`."""
    _check_schedule(schedule, (INLINE_AT, EXPERT))
    x, y, c, k = _vars("x y c k")
    inp = hl.ImageParam(hl.UInt(16), 3, "inp")
    J = levels

    def downsample(f: hl.Func, name: str) -> hl.Func:
        r = [k] if f.dimensions() == 3 else []
        dx, dy = hl.Func(name + "_dx"), hl.Func(name)
        dx[[x, y, *r]] = (f[[2 * x - 1, y, *r]] + 3.0 * (f[[2 * x, y, *r]]
                          + f[[2 * x + 1, y, *r]]) + f[[2 * x + 2, y, *r]]) / 8.0
        dy[[x, y, *r]] = (dx[[x, 2 * y - 1, *r]] + 3.0 * (dx[[x, 2 * y, *r]]
                          + dx[[x, 2 * y + 1, *r]]) + dx[[x, 2 * y + 2, *r]]) / 8.0
        made.extend([dx, dy])
        return dy

    def upsample(f: hl.Func, name: str) -> hl.Func:
        r = [k] if f.dimensions() == 3 else []
        ux, uy = hl.Func(name + "_ux"), hl.Func(name)
        ux[[x, y, *r]] = (0.25 * f[[(x // 2) - 1 + 2 * (x % 2), y, *r]]
                          + 0.75 * f[[x // 2, y, *r]])
        uy[[x, y, *r]] = (0.25 * ux[[x, (y // 2) - 1 + 2 * (y % 2), *r]]
                          + 0.75 * ux[[x, y // 2, *r]])
        made.extend([ux, uy])
        return uy

    made: list[hl.Func] = []
    remap = hl.Func("remap")
    fx = hl.f32(x) / 256.0
    remap[x] = alpha * fx * hl.exp(-fx * fx / 2.0)
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    floating = hl.Func("floating")
    floating[x, y, c] = hl.f32(clamped[x, y, c]) / 65535.0
    gray = hl.Func("gray")
    gray[x, y] = (hl.f32(0.299) * floating[x, y, 0] + hl.f32(0.587) * floating[x, y, 1]
                 + hl.f32(0.114) * floating[x, y, 2])
    g0 = hl.Func("gPyramid0")
    level = k * hl.f32(1.0 / (k_levels - 1))
    idx = hl.clamp(hl.i32(gray[x, y] * float(k_levels - 1) * 256.0), 0, (k_levels - 1) * 256)
    g0[x, y, k] = beta * (gray[x, y] - level) + level + remap[idx - 256 * k]
    gp = [g0] + [hl.Func() for _ in range(1, J)]
    for j in range(1, J):
        gp[j] = downsample(gp[j - 1], f"gPyramid{j}")
    lp: list[hl.Func] = [hl.Func() for _ in range(J)]
    lp[J - 1] = gp[J - 1]
    for j in range(J - 2, -1, -1):
        up = upsample(gp[j + 1], f"gUp{j}")
        lp[j] = hl.Func(f"lPyramid{j}")
        lp[j][x, y, k] = gp[j][x, y, k] - up[x, y, k]
    ig = [gray] + [hl.Func() for _ in range(1, J)]
    for j in range(1, J):
        ig[j] = downsample(ig[j - 1], f"inGPyramid{j}")
    ol = []
    for j in range(J):
        lv = ig[j][x, y] * float(k_levels - 1)
        li = hl.clamp(hl.i32(lv), 0, k_levels - 2)
        lf = lv - hl.f32(li)
        o = hl.Func(f"outLPyramid{j}")
        o[x, y] = (1.0 - lf) * lp[j][x, y, li] + lf * lp[j][x, y, li + 1]
        ol.append(o)
    og = [hl.Func() for _ in range(J)]
    og[J - 1] = ol[J - 1]
    for j in range(J - 2, -1, -1):
        up = upsample(og[j + 1], f"outUp{j}")
        og[j] = hl.Func(f"outGPyramid{j}")
        og[j][x, y] = up[x, y] + ol[j][x, y]
    color = hl.Func("color")
    color[x, y, c] = (og[0][x, y] * (floating[x, y, c] + hl.f32(0.01))
                      / (gray[x, y] + hl.f32(0.01)))
    out = hl.Func("local_laplacian")
    out[x, y, c] = hl.u16(hl.clamp(color[x, y, c], 0.0, 1.0) * 65535.0)
    funcs = [remap, floating, gray, g0, *made, *lp[:J - 1], *ol, *og[:J - 1], color]
    _root(funcs, schedule)
    if schedule == INLINE_AT:
        floating.compute_at(out, y)
    if schedule == EXPERT:
        _local_laplacian_expert(remap, gray, ig, gp, og, out)
    img = np.random.default_rng(seed).integers(0, 65536, (3, rows, cols), dtype=np.uint16)
    return App("local_laplacian", out, [cols, rows, 3], [(inp, img)], len(funcs) + 1)


def _local_laplacian_expert(remap: hl.Func, gray: hl.Func, in_g: list[hl.Func],
                            g: list[hl.Func], out_g: list[hl.Func], out: hl.Func) -> None:
    """The CPU schedule of Halide 21's local_laplacian app (its generator): the lookup table
    and the gray image at the root; the first four levels of the input's and of the
    remapped copies' Gaussian pyramids at the root over the cores (the copies stored x, k,
    y and computed a row of every copy at a time), the output's Gaussian levels per output
    row in rolling buffers of 4 rows kept per strip of 64 rows; the output in those strips
    over the cores; every loop along x vectorized by 8 (the app's choice: its run is
    data-dependent loads, not arithmetic); levels from the fifth at the root unvectorized.
    The Laplacian levels, the upsamplings and the x passes stay inlined."""
    x, y, c, k = (hl.Var(n) for n in "xyck")
    yo = hl.Var("yo")
    remap.compute_root()
    out.reorder(c, x, y).split(y, yo, y, 64).parallel(yo).vectorize(x, 8)
    gray.compute_root().never_partition([y]).parallel(y, 32).vectorize(x, 8)
    for j in range(1, min(5, len(g))):
        in_g[j].compute_root().parallel(y, 32).vectorize(x, 8)
        g[j].compute_root().reorder_storage(x, k, y).reorder(k, y).parallel(y, 8) \
            .vectorize(x, 8)
        out_g[j].store_at(out, yo).compute_at(out, y).fold_storage(y, 4) \
            .vectorize(x, 8, hl.TailStrategy.RoundUp)
        if j > 1:
            in_g[j].never_partition_all()
            g[j].never_partition_all()
    out_g[0].compute_at(out, y).hoist_storage(out, yo).vectorize(x, 8, hl.TailStrategy.RoundUp)
    for j in range(5, len(g)):
        in_g[j].compute_root()
        g[j].compute_root().parallel(k)
        out_g[j].compute_root()


# the stencil chain's schedules beyond SCHEDULES: the output tiled, every other stage
# computed per tile (compute_at the tile's x loop), also with its storage hoisted to the
# tile row (store_at), and with the inner x loops vectorized and the tile rows parallel
TILED, TILED_STORE_AT, TILED_VECTORIZED = "tiled", "tiled_store_at", "tiled_vectorized"


def stencil_chain(rows: int = 100, cols: int = 100, stages: int = 8,
                  schedule: str = TILED, tile: int = 32, seed: int = 0) -> App:
    """A chain of ``stages`` stencils over a uint16 image clamped at its edges
    (``repeat_edge``), each reading the one before: a 5-point cross at even stages, a 3x3
    box at odd ones, each the mean of its points (wrapping sums, as uint16 does). Scheduled
    the way an expert writes it (:data:`TILED` and its variants): the output in
    ``tile`` x ``tile`` tiles and every stage computed per tile, over the tile grown by
    what the later stages read (overlapping tiles recompute their borders)."""
    _check_schedule(schedule, (TILED, TILED_STORE_AT, TILED_VECTORIZED))
    x, y, xo, yo, xi, yi = _vars("x y xo yo xi yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "inp")
    prev: hl.Func = hl.BoundaryConditions.repeat_edge(inp)
    funcs = []
    for k in range(stages):
        f = hl.Func(f"stage{k}")
        if k % 2 == 0:
            pts = [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)]
        else:
            pts = [(i, j) for j in (-1, 0, 1) for i in (-1, 0, 1)]
        total = prev[x + pts[0][0], y + pts[0][1]]
        for i, j in pts[1:]:
            total = total + prev[x + i, y + j]
        f[x, y] = total / len(pts)
        funcs.append(f)
        prev = f
    out = funcs[-1]
    _root(funcs[:-1], schedule)
    if schedule in (TILED, TILED_STORE_AT, TILED_VECTORIZED):
        out.tile(x, y, xo, yo, xi, yi, tile, tile)
        if schedule == TILED_VECTORIZED:
            out.parallel(yo).vectorize(xi, 8)
        for f in funcs[:-1]:
            if schedule == TILED_STORE_AT:
                f.store_at(out, yo)
            f.compute_at(out, xo)
            if schedule == TILED_VECTORIZED:
                f.vectorize(x, 8)
    img = np.random.default_rng(seed).integers(0, 60000, (rows, cols), dtype=np.uint16)
    return App("stencil_chain", out, [cols, rows], [(inp, img)], stages)


# nl_means and lens_blur: the output's rows split by 4 (parallel outer, vectorized x) and
# the stages computed at the split's loops, as Halide's own schedules of these apps do
EXPERT = "expert"


def nl_means(rows: int = 12, cols: int = 16, patch: int = 3, search: int = 5,
             sigma: float = 0.3, schedule: str = EXPERT, seed: int = 0) -> App:
    """Non-local means (Buades, Coll and Morel) on a 3-channel float image: each pixel the
    mean of the pixels in a ``search`` x ``search`` window, weighted by exp(-d / sigma^2)
    where d is the squared distance of their ``patch`` x ``patch`` neighbourhoods (summed
    over the channels, box-blurred along x then y). Channel 3 of the weighted sum holds the
    weights' total (a select on c), by which channels 0-2 are divided. :data:`EXPERT`
    computes the weighted sum per output row and the patch blurs per strip of 4 rows."""
    _check_schedule(schedule, (EXPERT,))
    x, y, c, dx, dy, yo, yi = _vars("x y c dx dy yo yi")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    cl = hl.BoundaryConditions.repeat_edge(inp)
    diff = hl.Func("diff")
    diff[x, y, dx, dy, c] = (cl[x, y, c] - cl[x + dx, y + dy, c]) ** 2
    dist = hl.Func("dist")
    dist[x, y, dx, dy] = hl.sum(diff[x, y, dx, dy, hl.RDom([(0, 3)])])
    rp = hl.RDom([(-(patch // 2), patch)])
    blur_x = hl.Func("blur_d_x")
    blur_x[x, y, dx, dy] = hl.sum(dist[x + rp, y, dx, dy])
    blur = hl.Func("blur_d")
    blur[x, y, dx, dy] = hl.sum(blur_x[x, y + rp, dx, dy])
    w = hl.Func("w")
    w[x, y, dx, dy] = hl.exp(-blur[x, y, dx, dy] / (sigma * sigma))
    rs = hl.RDom([(-(search // 2), search), (-(search // 2), search)])
    wsum = hl.Func("weighted_sum")
    wsum[x, y, c] = hl.sum(hl.select(
        c < 3, w[x, y, rs.x, rs.y] * cl[x + rs.x, y + rs.y, hl.min(c, 2)], w[x, y, rs.x, rs.y]))
    out = hl.Func("nl_means")
    out[x, y, c] = wsum[x, y, c] / wsum[x, y, 3]
    _root([diff, dist, blur_x, blur, w, wsum], schedule)
    if schedule == EXPERT:
        out.split(y, yo, yi, 4).parallel(yo).vectorize(x, 4)
        wsum.compute_at(out, yi).vectorize(x, 4)
        blur.compute_at(out, yo).vectorize(x, 4)
        blur_x.compute_at(out, yo).vectorize(x, 4)
    img = np.random.default_rng(seed).random((3, rows, cols), dtype=np.float32)
    return App("nl_means", out, [cols, rows, 3], [(inp, img)], 7)


def lens_blur(rows: int = 16, cols: int = 20, schedule: str = EXPERT, seed: int = 0) -> App:
    """A depth-of-field blur after Halide's lens_blur app, reduced to its gather: each pixel
    sums the colours of the pixels within a disc of radius 3 whose own circle of confusion
    (their depth / 64, 0-3) reaches it, and channel 3 counts them (a select on c); the
    output is the pixel plus that sum over the count plus one. :data:`EXPERT` computes
    the radii at root and the sums per output row, vectorized."""
    _check_schedule(schedule, (EXPERT,))
    x, y, c, yo, yi = _vars("x y c yo yi")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    depth = hl.ImageParam(hl.UInt(8), 2, "depth")
    cl = hl.BoundaryConditions.repeat_edge(inp)
    cd = hl.BoundaryConditions.repeat_edge(depth)
    rad = hl.Func("radius")
    rad[x, y] = hl.i32(cd[x, y]) / 64
    r = hl.RDom([(-3, 7), (-3, 7)])
    r.where(r.x * r.x + r.y * r.y <= 9)
    d2 = r.x * r.x + r.y * r.y
    reach = rad[x + r.x, y + r.y]
    inside = d2 <= reach * reach
    acc = hl.Func("gathered")
    acc[x, y, c] = hl.f32(0)
    acc[x, y, c] += hl.select(c < 3, hl.select(inside, cl[x + r.x, y + r.y, hl.min(c, 2)], 0.0),
                              hl.select(inside, 1.0, 0.0))
    out = hl.Func("lens_blur")
    out[x, y, c] = (acc[x, y, c] + cl[x, y, c]) / (acc[x, y, 3] + 1)
    _root([rad, acc], schedule)
    if schedule == EXPERT:
        out.split(y, yo, yi, 4).parallel(yo).vectorize(x, 4)
        rad.compute_root()
        acc.compute_at(out, yi).vectorize(x, 4)
        acc.update().vectorize(x, 4)
    rng = np.random.default_rng(seed)
    img = rng.random((3, rows, cols), dtype=np.float32)
    dep = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    return App("lens_blur", out, [cols, rows, 3], [(inp, img), (depth, dep)], 3)


APPS = {"bilateral_grid": bilateral_grid, "interpolate": interpolate,
        "local_laplacian": local_laplacian}
