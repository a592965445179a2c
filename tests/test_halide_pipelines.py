"""Halide pipelines compiled by the middle-end's front-end give Halide's own results.

Every test realizes the same pipeline with Halide (``Pipeline.realize``, the reference) and
with ``compile_pipeline(...).realize`` on the same random inputs of odd sizes, usually under
two schedules (Halide's default and a scheduled variant), and compares: integers exactly,
float32 within rtol/atol 1e-5. Known front-end bugs are strict xfails with a minimal repro.
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, as_list, assert_same, check, halide_realize

from frontends.halide import compile_pipeline, paper

GUARD = hl.TailStrategy.GuardWithIf  # update stages cannot shift a vector tail inwards


def _vars(names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names.split()]


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


# ------------------------------------------------------------ the paper's benchmarks

_BENCH = ([(n, "default", 37, 263) for n in paper.ALL]
          + [(n, "default", 13, 21) for n in paper.ALL]
          + [(n, "expert", 37, 263) for n in paper.ALL])  # expert blurxy tiles x by 256


@pytest.mark.parametrize(("name", "schedule", "rows", "cols"), _BENCH,
                         ids=[f"{n}-{s}-{r}x{c}" for n, s, r, c in _BENCH])
def test_paper_benchmark(name: str, schedule: str, rows: int, cols: int) -> None:
    """Each ``Bench.groups`` entry realized by the front-end equals ``halide_realize()``."""
    b = paper.ALL[name](rows, cols, schedule)
    ours: list[np.ndarray] = []
    for funcs, sizes in b.groups:
        ours += as_list(compile_pipeline(funcs).realize(sizes, **b.inputs))
    ref = b.halide_realize()
    if name != "warpAffine":
        assert_same(ours, ref)
        return
    # Halide's fast-math code computes u = a00*x + a01*y + b0 as fma(a00, x, fma(a01, y, b0)):
    # 1 ulp of u (3e-5 at u ~ 270) in the bilinear weight du, times a pixel difference <= 1.
    assert_same(ours, ref, atol=6e-5)
    (funcs, sizes), = b.groups
    b.set_inputs()
    assert_same(ours, as_list(hl.Pipeline(funcs).realize(sizes, STRICT)))  # written order


# ------------------------------------------------------------ reductions

def _histogram(im: hl.ImageParam) -> hl.Func:
    x, = _vars("x")
    hist = hl.Func("hist")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    hist[x] = 0
    hist[hl.cast(hl.Int(32), im[r.x, r.y])] += 1
    return hist


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_histogram(schedule: str, rng: np.random.Generator) -> None:
    """A data-dependent scatter (RDom over the image extents) into a [256] output."""
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    hist = _histogram(im)
    if schedule == "vectorized":
        hist.vectorize(hist.args()[0], 8)
        hist.update(0).unscheduled()
    check(hist, [256], [(im, rng.integers(0, 256, (23, 41), dtype=np.uint8))])


@pytest.mark.parametrize("schedule", ["default", "scheduled"])
def test_cumulative_histogram(schedule: str, rng: np.random.Generator) -> None:
    """A consumer scan (RDom over 1..255) of a compute_root'd histogram."""
    x, = _vars("x")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    hist = _histogram(im)
    cdf = hl.Func("cdf")
    rr = hl.RDom([(1, 255)], "rr")
    cdf[x] = hist[x]
    cdf[rr.x] = cdf[rr.x - 1] + hist[rr.x]
    hist.compute_root()
    if schedule == "scheduled":
        hist.vectorize(x, 8)
        hist.update(0).unscheduled()
        cdf.vectorize(x, 8)
        cdf.update(0).unscheduled()
    check(cdf, [256], [(im, rng.integers(0, 256, (19, 37), dtype=np.uint8))])


@pytest.mark.parametrize("schedule", ["default", "parallel"])
def test_triangular_where_reduction(schedule: str, rng: np.random.Generator) -> None:
    """``r.where(r.x <= y)``: column prefix sums of an ImageParam (a triangular domain)."""
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    s = hl.Func("colsum")
    r = hl.RDom([(0, a.height())], "r")
    r.where(r.x <= y)
    s[x, y] = hl.f32(0)
    s[x, y] += a[x, r.x]
    if schedule == "parallel":
        s.parallel(y).vectorize(x, 4)
        s.update(0).parallel(y).vectorize(x, 4, GUARD)
    check(s, [29, 17], [(a, _f32(rng, 17, 29))])


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_where_on_a_pure_var(schedule: str, rng: np.random.Generator) -> None:
    """``r.where(x >= r.x)`` (prefix sums along x) and a 2-D triangle ``r.x <= r.y``."""
    x, = _vars("x")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p = hl.Func("prefix")
    r = hl.RDom([(0, a.width())], "r")
    r.where(x >= r.x)
    p[x] = hl.f32(0)
    p[x] += a[r.x, 3]
    t = hl.Func("tri")
    r2 = hl.RDom([(0, 17), (0, 17)], "r2")
    r2.where(r2.x <= r2.y)
    t[x] = hl.f32(0)
    t[x] += a[x, r2.y] * hl.f32(r2.x + 1)
    if schedule == "vectorized":
        p.update(0).vectorize(x, 8, GUARD)
        t.update(0).vectorize(x, 8, GUARD)
    inputs = [(a, _f32(rng, 17, 29))]
    check(p, [29], inputs)
    check(t, [29], inputs)


# ------------------------------------------------------------ Tuples

@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_tuple_output_and_consumer(schedule: str, rng: np.random.Generator) -> None:
    """A Tuple output of two types, and a Func reading both elements of a root Tuple."""
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    t = hl.Func("pair")
    t[x, y] = (a[x, y] * 2, hl.cast(hl.Int(16), x - 3 * y))
    g = hl.Func("from_pair")
    g[x, y] = t[x, y][0] + hl.f32(t[x, y][1])
    if schedule == "vectorized":
        t.parallel(y).vectorize(x, 8)
    inputs = [(a, _f32(rng, 17, 29))]
    check(t, [29, 17], inputs)
    t.compute_root()
    if schedule == "vectorized":
        g.parallel(y).vectorize(x, 8)
    check(g, [29, 17], inputs)


@pytest.mark.parametrize("schedule", ["default", "parallel"])
def test_tuple_reduction(schedule: str, rng: np.random.Generator) -> None:
    """Row min, max and count in one Tuple update (each element reads only itself)."""
    y, = _vars("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    mm = hl.Func("minmax")
    r = hl.RDom([(0, a.width())], "r")
    mm[y] = (hl.f32(10), hl.f32(-10), 0)
    mm[y] = (hl.min(mm[y][0], a[r.x, y]), hl.max(mm[y][1], a[r.x, y]), mm[y][2] + 1)
    if schedule == "parallel":
        mm.parallel(y)
        mm.update(0).parallel(y)
    check(mm, [17], [(a, _f32(rng, 17, 29))])


# ------------------------------------------------------------ narrow integer types

@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_uint8_saturating_and_wrapping(schedule: str, rng: np.random.Generator) -> None:
    """uint8 arithmetic wraps, widening to uint16/int16, saturating_cast back (3 channels)."""
    x, y, c = _vars("x y c")
    rgb = hl.ImageParam(hl.UInt(8), 3, "rgb")
    w, o = hl.Func("wide"), hl.Func("narrow")
    w[x, y, c] = (hl.cast(hl.UInt(16), rgb[x, y, c]) * 3
                  - hl.cast(hl.Int(16), rgb[x, y, c]) // 2)
    px = rgb[x, y, c]
    o[x, y, c] = (
        hl.saturating_cast(hl.UInt(8), hl.cast(hl.Int(16), w[x, y, c]) - 200)
        + (px + rgb[x, y, 2 - c]) * 7,  # wraps in uint8
        hl.saturating_cast(hl.UInt(8), hl.f32(px) * hl.f32(1.7) - 20),
        hl.saturating_cast(hl.Int(8), hl.cast(hl.Int(16), px) - rgb[x, y, 0]),
        px - rgb[x, y, 1],
        hl.cast(hl.Int(16), px) * 300,  # wraps in int16
    )
    if schedule == "vectorized":
        w.compute_root().parallel(c).vectorize(x, 16)
        o.reorder(x, y, c).parallel(y).vectorize(x, 16)
    check(o, [31, 19, 3], [(rgb, rng.integers(0, 256, (3, 19, 31), dtype=np.uint8))])


# ------------------------------------------------------------ boundary conditions

_BCS = ["repeat_edge", "constant_exterior", "mirror_image",
        "mirror_interior"]


@pytest.mark.parametrize("schedule", ["default", "tiled"])
@pytest.mark.parametrize("bc", _BCS)
def test_boundary_condition_stencil(bc: str, schedule: str, rng: np.random.Generator) -> None:
    """A 3x3 stencil with Halide's boundary conditions, realized over the whole input."""
    x, y, xo, yo, xi, yi = _vars("x y xo yo xi yi")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    make = getattr(hl.BoundaryConditions, bc)
    cl = make(a, hl.f32(0.5)) if bc == "constant_exterior" else make(a)
    st = hl.Func("stencil")
    st[x, y] = sum(cl[x + i, y + j] * hl.f32(1 + i + 3 * j)
                   for i in (-1, 0, 1) for j in (-1, 0, 1))
    if schedule == "tiled":
        st.tile(x, y, xo, yo, xi, yi, 8, 4).parallel(yo).vectorize(xi, 4)
    check(st, [29, 17], [(a, _f32(rng, 17, 29))])


def test_abs_in_an_index(rng: np.random.Generator) -> None:
    """The core of mirror_interior's index: ``a[i32(abs(x - 3)), y]`` (x in [0, 28])."""
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = hl.Func("absidx")
    f[x, y] = a[hl.cast(hl.Int(32), hl.abs(x - 3)), y]
    check(f, [29, 17], [(a, _f32(rng, 17, 29))])


# ------------------------------------------------------------ integer semantics, Params

def test_division_and_modulo(rng: np.random.Generator) -> None:
    """Euclidean / and % with negative numerators, constant and Param divisors (3, -4, 0:
    Halide gives 0 for x / 0 and x % 0); the Param is a value, so one build serves all."""
    x, = _vars("x")
    v = hl.ImageParam(hl.Int(32), 1, "v")
    d = hl.Param(hl.Int(32), "d")
    f = hl.Func("divmod")
    f[x] = (v[x] / d, v[x] % d, v[x] / 5, v[x] % -3, v[x] / -4, (x - 18) / 4, (x - 18) % 4,
            hl.cast(hl.UInt(8), x * 7) / hl.cast(hl.UInt(8), d * d),
            hl.f32(v[x]) % hl.f32(2.5))
    data = rng.integers(-50, 50, 37).astype(np.int32)
    k = compile_pipeline(f)
    for dv in (3, -4, 0, 7):
        inputs = [(v, data), (d, dv)]
        assert_same(k.realize([37], v=data, d=dv), halide_realize([f], [37], inputs))
    assert k.compiles == 1


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_scalar_params_and_specialization(schedule: str, rng: np.random.Generator) -> None:
    """A float Param and an int Param as values, an int Param as an index offset: only a
    new index Param value builds a new specialization."""
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    s, n, off = hl.Param(hl.Float(32), "s"), hl.Param(hl.Int(32), "n"), \
        hl.Param(hl.Int(32), "off")
    f = hl.Func("params")
    f[x, y] = a[x, y] * s + hl.f32(n) + a[x + off, y]
    if schedule == "vectorized":
        f.parallel(y).vectorize(x, 4)
    av = _f32(rng, 17, 29)
    k = compile_pipeline(f)
    assert k.index_params == {"off"}
    for sv, nv, ov, builds in [(1.5, 4, 2, 1), (-2.25, -3, 2, 1), (0.5, 7, 3, 2),
                               (1.5, 4, 2, 2), (1.0, 0, 0, 3)]:
        ours = k.realize([25, 17], a=av, s=sv, n=nv, off=ov)
        assert_same(ours, halide_realize([f], [25, 17], [(a, av), (s, sv), (n, nv), (off, ov)]))
        assert k.compiles == builds


# ------------------------------------------------------------ data-dependent reads

@pytest.mark.parametrize("schedule", ["default", "root"])
def test_lookup_tables(schedule: str, rng: np.random.Generator) -> None:
    """Tables indexed by uint8 image values (one clamped), inline or compute_root."""
    x, y, i = _vars("x y i")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    lut, lut2, o = hl.Func("lut"), hl.Func("lut2"), hl.Func("lookup")
    lut[i] = hl.sqrt(hl.f32(i)) * hl.f32(3)
    lut2[i] = i * i - 100
    px = hl.cast(hl.Int(32), im[x, y])
    o[x, y] = lut[px] + hl.f32(lut2[hl.clamp(px - 30, 0, 200)])
    if schedule == "root":
        lut.compute_root().vectorize(i, 8)
        lut2.compute_root()
        o.parallel(y).vectorize(x, 8)
    check(o, [41, 23], [(im, rng.integers(0, 256, (23, 41), dtype=np.uint8))])


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_clamped_float_gather(schedule: str, rng: np.random.Generator) -> None:
    """A gather at a float coordinate (floor, clamped into the image): the coordinate is
    computed exactly (x * 0.75 and a * 4 are exact), so FMA contraction cannot move it."""
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    u = hl.f32(x) * hl.f32(0.75) + a[x % 5, y % 17] * hl.f32(4)
    g = hl.Func("gather")
    g[x, y] = a[hl.clamp(hl.cast(hl.Int(32), hl.floor(u)) - 2, 0, a.width() - 1),
                hl.clamp(y * 2 - 5, 0, a.height() - 1)]
    if schedule == "vectorized":
        g.parallel(y).vectorize(x, 8)
    check(g, [33, 19], [(a, _f32(rng, 17, 29))])


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_math(schedule: str, rng: np.random.Generator) -> None:
    """sqrt, exp, floor, abs, lerp, select, min, max, mux (float), and int abs / select."""
    x, y = _vars("x y")
    b = hl.ImageParam(hl.Float(32), 2, "b")
    v = b[x, y]
    m, m2 = hl.Func("mathf"), hl.Func("mathi")
    m[x, y] = (hl.sqrt(hl.abs(v)) + hl.exp(v * hl.f32(0.25)) + hl.floor(v)
               + hl.lerp(v, hl.f32(2), hl.f32(0.3)) + hl.select(v > 0, v, -2 * v)
               + hl.min(v, 1) - hl.max(v, -1) + hl.mux(x % 3, [v, 2 * v, hl.f32(7)]))
    m2[x, y] = (hl.abs(hl.cast(hl.Int(32), hl.floor(v)) - 2), hl.select(x > y, x, -y) * 3)
    if schedule == "vectorized":
        m.parallel(y).vectorize(x, 8)
        m2.vectorize(x, 8)
    inputs = [(b, (_f32(rng, 17, 29) - np.float32(0.5)) * np.float32(8))]
    check(m, [29, 17], inputs)
    check(m2, [29, 17], inputs)


# ------------------------------------------------------------ compute_at / store_at

_PLACEMENTS = ["inline", "root", "at_y", "at_xo_tiled", "store_root_at_y", "store_root_at_xo",
               "store_yo_at_xo", "at_yi_unrolled", "reordered_at_x"]


def _place(placement: str, by: hl.Func, bx: hl.Func, v: dict[str, hl.Var]) -> None:
    x, y, xo, yo, xi, yi = (v[n] for n in ("x", "y", "xo", "yo", "xi", "yi"))
    if placement in ("at_xo_tiled", "store_root_at_xo", "store_yo_at_xo"):
        by.tile(x, y, xo, yo, xi, yi, 16, 8)
    if placement == "inline":
        bx.compute_inline()
    elif placement == "root":
        bx.compute_root().parallel(y).vectorize(x, 8)
        by.parallel(y).vectorize(x, 8)
    elif placement == "at_y":
        bx.compute_at(by, y)
    elif placement == "at_xo_tiled":
        bx.compute_at(by, xo).vectorize(x, 4)
    elif placement == "store_root_at_y":
        bx.store_root().compute_at(by, y)
    elif placement == "store_root_at_xo":
        bx.store_root().compute_at(by, xo)
    elif placement == "store_yo_at_xo":
        by.parallel(yo)
        bx.store_at(by, yo).compute_at(by, xo)
    elif placement == "at_yi_unrolled":
        by.split(y, yo, yi, 4).unroll(yi).parallel(yo)
        bx.compute_at(by, yi)
    else:
        by.reorder(y, x)
        bx.compute_at(by, x)


@pytest.mark.parametrize("placement", _PLACEMENTS)
def test_blur_placements(placement: str, rng: np.random.Generator) -> None:
    """A 2-stage blur with the producer inlined, at root, or at/stored at consumer loops."""
    v = {n: hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi")}
    x, y = v["x"], v["y"]
    a = hl.ImageParam(hl.Float(32), 2, "a")
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (a[x, y] + a[x + 1, y] + a[x + 2, y]) / 3
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    _place(placement, by, bx, v)
    check(by, [51, 39], [(a, _f32(rng, 41, 53))])


# ------------------------------------------------------------ fuse

_FUSES = ["xy_parallel", "yc_parallel", "split_then_fuse", "not_adjacent", "vectorized"]


@pytest.mark.parametrize("schedule", _FUSES)
def test_fuse(schedule: str, rng: np.random.Generator) -> None:
    """``fuse(inner, outer, fused)`` of pure Vars (adjacent or not, after a split), the
    fused loop parallel or vectorized, and of two RVars of an update."""
    x, y, c, xo, xi, f2 = _vars("x y c xo xi f2")
    a = hl.ImageParam(hl.Float(32), 3, "a")
    f = hl.Func("fused")
    f[x, y, c] = a[x, y, c] * 2 + hl.f32(x - y * c)
    if schedule == "xy_parallel":
        f.fuse(x, y, f2).parallel(f2)
    elif schedule == "yc_parallel":
        f.fuse(y, c, f2).parallel(f2).vectorize(x, 4)
    elif schedule == "split_then_fuse":
        f.split(x, xo, xi, 4).fuse(xo, y, f2).parallel(f2)
    elif schedule == "not_adjacent":
        f.fuse(x, c, f2)
    else:
        f.fuse(x, y, f2).vectorize(f2, 8)
    check(f, [13, 7, 3], [(a, _f32(rng, 3, 7, 13))])
    g = hl.Func("rsum")
    r = hl.RDom([(0, 3), (0, 4)], "r")
    g[x] = hl.f32(0)
    g[x] += a[x + r.x, r.y, 1]
    if schedule == "xy_parallel":
        g.update(0).fuse(r.x, r.y, hl.RVar("rxy"))
    check(g, [9], [(a, _f32(rng, 3, 4, 12))])
