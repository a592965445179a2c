"""Halide's bit counts, ``reinterpret``, the ``fast_*`` math functions, ``random_*`` and the
inverse hyperbolic functions against Halide's realize, under several schedules (inlined,
computed at root with a vector loop, split with a parallel loop)."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import STRICT, assert_same, by_name, check, halide_realize

from frontends.halide import compile_pipeline

_ALL = [(hl.UInt(8), np.uint8), (hl.Int(8), np.int8), (hl.UInt(16), np.uint16),
        (hl.Int(16), np.int16), (hl.UInt(32), np.uint32), (hl.Int(32), np.int32),
        (hl.UInt(64), np.uint64), (hl.Int(64), np.int64)]
_SCHEDULES = ["inline", "root_vectorized", "parallel_split"]


def _schedule(schedule: str, inner: list[hl.Func], out: hl.Func) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    if schedule == "root_vectorized":
        for g in inner:
            g.compute_root().vectorize(x, 8)
        out.vectorize(x, 8)
    elif schedule == "parallel_split":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        for g in inner:
            g.compute_at(out, y)
        out.split(x, xo, xi, 4).parallel(y).reorder(xi, y, xo)


@pytest.mark.parametrize("schedule", _SCHEDULES)
@pytest.mark.parametrize(("htype", "ntype"), _ALL, ids=lambda t: str(t))
def test_bit_counts(htype: hl.Type, ntype: type, schedule: str,
                    rng: np.random.Generator) -> None:
    """``popcount``, ``count_leading_zeros``, ``count_trailing_zeros`` of every integer
    type, in that type, on values spanning its range, zero (the width), -1 and single
    bits among them."""
    x, y = hl.Var("x"), hl.Var("y")
    # (Halide's Python Buffer has no uint64: those values come in as int64, same bits)
    a = hl.ImageParam(hl.Int(64) if ntype is np.uint64 else htype, 2, "a")
    v = hl.cast(htype, a[x, y])
    g = hl.Func("g")
    g[x, y] = hl.count_leading_zeros(v)
    f = hl.Func("counts")
    f[x, y] = (hl.popcount(v), g[x, y], hl.count_trailing_zeros(v),
               hl.popcount(v) + hl.count_trailing_zeros(v ^ hl.cast(htype, 1)))
    _schedule(schedule, [g], f)
    info = np.iinfo(ntype)
    data = rng.integers(info.min, info.max, (6, 16), dtype=ntype, endpoint=True)
    data[0, :8] = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 0, 0, 0]
    data[1, :] = [ntype(1) << ntype(k % htype.bits()) for k in range(0, 16 * 5, 5)]
    data = data.view(np.int64) if ntype is np.uint64 else data
    check(f, [16, 6], [(a, data)])


@pytest.mark.parametrize("schedule", _SCHEDULES)
def test_extract_and_concat_bits(schedule: str, rng: np.random.Generator) -> None:
    """``extract_bits`` (the bits from ``lsb`` up, zeros past the top: a logical shift of
    signed values too) into narrower, wider, signed and float types, at constant and
    computed positions, and ``concat_bits`` of two, four and eight parts (the first the
    lowest), signed and unsigned."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Int(32), 1, "a")
    s = hl.ImageParam(hl.UInt(8), 1, "s")
    v, lsb = a[x], hl.u32(s[x])
    g = hl.Func("g")
    g[x, y] = hl.extract_bits(hl.UInt(8), v, lsb)
    f = hl.Func("fields")
    f[x, y] = (g[x, y], hl.extract_bits(hl.Int(8), v, 28), hl.extract_bits(hl.UInt(16), v, 3),
               hl.extract_bits(hl.UInt(16), hl.u8(v), lsb % 12),
               hl.extract_bits(hl.Float(32), hl.i64(v) * 12345, lsb),
               hl.extract_bits(hl.Int(64), v, 0),
               hl.concat_bits([hl.u8(v), hl.u8(v >> 8)]),
               hl.concat_bits([hl.i8(v), hl.i8(lsb), hl.i8(v >> 24), hl.i8(-1)]),
               hl.concat_bits([hl.i16(v), hl.i16(v * 3), hl.i16(lsb), hl.i16(v >> 16)]),
               hl.concat_bits([hl.u8(v + k) for k in range(8)]))
    _schedule(schedule, [g], f)
    info = np.iinfo(np.int32)
    av = rng.integers(info.min, info.max, 16, dtype=np.int32, endpoint=True)
    av[:4] = [info.min, info.max, 0, -1]
    sv = rng.integers(0, 32, 16, dtype=np.uint8)
    sv[:4] = [0, 31, 24, 25]
    check(f, [16, 3], [(a, av), (s, sv)])


@pytest.mark.parametrize("schedule", ["inline", "root"])
def test_bit_counts_bound_an_index(schedule: str, rng: np.random.Generator) -> None:
    """A count is in [0, width], as Halide bounds it: a histogram of popcounts (a store
    index) and a table read at a count of leading zeros need no clamp."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.UInt(32), 1, "a")
    t = hl.ImageParam(hl.UInt(8), 1, "t")
    r = hl.RDom([(0, 64)])
    lead = hl.Func("lead")
    lead[x] = t[hl.i32(hl.count_leading_zeros(hl.u8(x)))]
    hist = hl.Func("hist")
    hist[x] = hl.u8(0)
    hist[hl.i32(hl.popcount(a[r]))] += lead[r.x % 16]
    if schedule == "root":
        lead.compute_root()
    av = rng.integers(0, 2**32 - 1, 64, dtype=np.uint32, endpoint=True)
    av[:2] = [0, 2**32 - 1]
    check(hist, [33], [(a, av), (t, np.arange(9, dtype=np.uint8) * 3 + 1)])


@pytest.mark.parametrize("schedule", _SCHEDULES)
def test_reinterpret(schedule: str, rng: np.random.Generator) -> None:
    """A float's bits as an integer of each signedness and back (the sign bit flipped
    through the integer: ``-x``, NaN and infinities kept), doubles and halves too, and
    between the two integer types of one width."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    d = hl.ImageParam(hl.Float(64), 2, "d")
    bits = hl.Func("bits")
    bits[x, y] = hl.reinterpret(hl.UInt(32), a[x, y])
    f = hl.Func("re")
    flipped = hl.reinterpret(hl.Float(32), bits[x, y] ^ hl.u32(0x80000000))
    f[x, y] = (bits[x, y], hl.reinterpret(hl.Int(32), a[x, y]), flipped,
               hl.reinterpret(hl.Int(64), d[x, y]),
               hl.reinterpret(hl.Float(64), hl.reinterpret(hl.Int(64), d[x, y]) + 1),
               hl.reinterpret(hl.Int(32), bits[x, y]),
               hl.reinterpret(hl.UInt(8), hl.cast(hl.Int(8), bits[x, y])),
               hl.reinterpret(hl.UInt(16), hl.cast(hl.Float(16), a[x, y])),
               hl.cast(hl.Float(32), hl.reinterpret(hl.Float(16), hl.u16(bits[x, y] >> 7))))
    _schedule(schedule, [bits], f)
    av = (rng.standard_normal((4, 16)) * 1e3).astype(np.float32)
    av[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.float32(1e-40), 1.0]
    dv = rng.standard_normal((4, 16)) * 1e30
    dv[0, :3] = [0.0, -1.0, np.inf]
    check(f, [16, 4], [(a, av), (d, dv)])


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized"])
def test_fast_exp_log_pow_bit_for_bit(schedule: str, rng: np.random.Generator) -> None:
    """Halide writes ``fast_exp``, ``fast_log``, ``fast_pow``, ``fast_sin`` and
    ``fast_cos`` as polynomials over the float's bits (``reinterpret``, shifts, masks):
    without contraction into FMAs on both sides (Halide's ``StrictFloat``, our
    ``fp_contract=False``) the values are Halide's bit for bit; Halide's default may fuse
    multiply-adds, a few ulps away."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    e = hl.Func("e")
    e[x, y] = hl.fast_exp(a[x, y])
    f = hl.Func("fast")
    pos = hl.abs(a[x, y]) + hl.f32(1e-3)
    f[x, y] = (e[x, y], hl.fast_log(pos), hl.fast_pow(pos, a[x, y] / 4),
               hl.fast_pow(a[x, y] * 0, a[x, y]), hl.fast_sin(a[x, y]), hl.fast_cos(a[x, y]))
    _schedule(schedule, [e], f)
    av = (rng.random((3, 16), dtype=np.float32) * 40 - 20).astype(np.float32)
    av[0, :4] = [0.0, 1.0, -1.0, 80.0]
    inputs = [(a, av)]
    k = compile_pipeline(f, fp_contract=False)
    ours = k.realize([16, 3], **by_name(inputs))
    ref = halide_realize([f], [16, 3], inputs, STRICT)
    for got, want in zip(ours, ref, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized"])
def test_fast_inverse_within_the_estimate_error(schedule: str,
                                                rng: np.random.Generator) -> None:
    """``fast_inverse`` and ``fast_inverse_sqrt`` are the exact ``1 / x`` and
    ``1 / sqrt(x)`` here; Halide's x86 code uses the ``rcpps`` / ``rsqrtps`` estimates,
    whose relative error Intel bounds by 1.5 * 2^-12 (3.7e-4): ours must be that close."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g = hl.Func("g")
    g[x, y] = hl.fast_inverse(a[x, y])
    f = hl.Func("inv")
    f[x, y] = (g[x, y], hl.fast_inverse_sqrt(a[x, y]))
    _schedule(schedule, [g], f)
    av = (rng.random((3, 16), dtype=np.float32) * 1e3 + 1e-3).astype(np.float32)
    av[0, :4] = [1.0, 3.0, 1e-30, 1e30]
    inputs = [(a, av)]
    ours = compile_pipeline(f).realize([16, 3], **by_name(inputs))
    ref = halide_realize([f], [16, 3], inputs)
    exact = [1 / av.astype(np.float64), 1 / np.sqrt(av.astype(np.float64))]
    for got, want, e in zip(ours, ref, exact, strict=True):
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1.5 * 2.0**-12)
        np.testing.assert_allclose(got, e, rtol=2.0**-23)


@pytest.mark.parametrize("schedule", _SCHEDULES)
def test_random_values_are_halides(schedule: str) -> None:
    """``random_float``, ``random_int`` and ``random_uint`` (Halide hashes the coordinates
    and the seed with integer arithmetic and ``reinterpret``): the same numbers, seeded and
    not, in a pure definition and read by another Func."""
    x, y = hl.Var("x"), hl.Var("y")
    g = hl.Func("g")
    g[x, y] = hl.random_float()
    f = hl.Func("rnd")
    f[x, y] = (g[x, y] + g[x + 1, y] * 2, hl.random_int(hl.Expr(7)), hl.random_uint())
    _schedule(schedule, [g], f)
    check(f, [16, 5])


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized"])
def test_inverse_hyperbolic_functions(schedule: str, rng: np.random.Generator) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    d = hl.ImageParam(hl.Float(64), 2, "d")
    g = hl.Func("g")
    g[x, y] = hl.asinh(a[x, y])
    f = hl.Func("hyp")
    f[x, y] = (g[x, y], hl.acosh(hl.abs(a[x, y]) + 1), hl.atanh(a[x, y] / 11),
               hl.asinh(d[x, y]) + hl.acosh(hl.abs(d[x, y]) + 1) + hl.atanh(d[x, y] / 11))
    _schedule(schedule, [g], f)
    av = (rng.random((3, 16), dtype=np.float32) * 20 - 10).astype(np.float32)
    check(f, [16, 3], [(a, av), (d, av.astype(np.float64))], target=STRICT)


def test_on_the_gpu_opencl(rng: np.random.Generator) -> None:
    """The bit counts (OpenCL C's built-ins; ``ctz`` from ``clz``, OpenCL 1.2 has none),
    ``reinterpret``, ``fast_exp`` and ``asinh`` in a gpu_tile'd Func: Halide's values (on
    the CPU, the same algorithm unscheduled) on PoCL's device."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    a = hl.ImageParam(hl.Int(32), 2, "a")
    b = hl.ImageParam(hl.Float(32), 2, "b")

    def alg() -> hl.Func:
        f = hl.Func("gpu")
        v, w = a[x, y], hl.cast(hl.UInt(64), a[x, y]) << 20
        f[x, y] = (hl.popcount(v), hl.count_leading_zeros(v), hl.count_trailing_zeros(v),
                   hl.i32(hl.count_leading_zeros(w) + hl.count_trailing_zeros(w) +
                          hl.popcount(w)),
                   hl.i32(hl.count_leading_zeros(hl.u8(v)) + hl.count_trailing_zeros(hl.i16(v))),
                   hl.reinterpret(hl.Int(32), b[x, y]), hl.fast_exp(b[x, y]),
                   hl.asinh(b[x, y]))
        return f

    f = alg()
    f.gpu_tile(x, y, xo, yo, xi, yi, 8, 4)
    info = np.iinfo(np.int32)
    av = rng.integers(info.min, info.max, (6, 13), dtype=np.int32, endpoint=True)
    av[0, :5] = [0, -1, 1, info.min, 256]
    bv = (rng.random((6, 13), dtype=np.float32) * 10 - 5).astype(np.float32)
    inputs = [(a, av), (b, bv)]
    k = compile_pipeline(f, target="gpu", dialect="opencl")
    assert_same(k.realize([13, 6], **by_name(inputs)), halide_realize([alg()], [13, 6], inputs))


@pytest.mark.parametrize("schedule", ["inline", "root_vectorized"])
def test_strict_float_bit_for_bit(schedule: str, rng: np.random.Generator) -> None:
    """``strict_float`` (Halide 21's ``strict_add``, ``strict_mul``, ``strict_min``,
    ``strict_lt``, ...) against Halide's default target: products added unfused, in the
    written order, NaN and signed zeros through min / max as Halide orders them; the
    kernel is built without FMAs though ``compile_pipeline`` was not asked to."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    v, w, u = a[x, y], a[x + 1, y], a[x + 2, y]
    g = hl.Func("g")
    g[x, y] = hl.strict_float(v * w + u * v - w / u)
    f = hl.Func("strict")
    f[x, y] = (g[x, y], hl.strict_float(hl.min(v, w) + hl.max(w, v)),
               hl.strict_float(hl.select((v < w) | (v <= u) | (u == w), v * u + w, -v)),
               hl.strict_float(hl.f64(v) * hl.f64(w) + hl.f64(u)))
    _schedule(schedule, [g], f)
    av = (rng.standard_normal((3, 18)) * 3).astype(np.float32)
    av[0, :6] = [np.nan, 1.0, -0.0, 0.0, np.nan, 2.0]
    inputs = [(a, av)]
    ours = compile_pipeline(f).realize([16, 3], **by_name(inputs))
    for got, want in zip(ours, halide_realize([f], [16, 3], inputs), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_integer_lerp_every_uint8_triple() -> None:
    """``lerp`` of uint8 values by a uint8 weight, all 2^24 triples (rounding halves up)."""
    x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
    f = hl.Func("lerp8")
    f[x, y, z] = hl.lerp(hl.u8(x), hl.u8(y), hl.u8(z))
    f.vectorize(x, 16)
    check(f, [256, 256, 256])


@pytest.mark.parametrize("htype", [hl.UInt(16), hl.Int(16)], ids=str)
def test_integer_lerp_uint16_corners(htype: hl.Type) -> None:
    """Every triple of uint16 / int16 corner values (0, 1, 2, the halves, the top ones) as
    values and as uint16 weights."""
    x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
    corners = [0, 1, 2, 3, 32766, 32767, 32768, 32769, 65533, 65534, 65535]
    vals = [hl.cast(htype, hl.u16(c)) for c in corners]
    f = hl.Func("corners")
    f[x, y, z] = hl.lerp(hl.mux(x, vals), hl.mux(y, vals), hl.mux(z, [hl.u16(c) for c in corners]))
    check(f, [len(corners)] * 3)


_LERP_VALUES = [(hl.UInt(8), np.uint8), (hl.Int(8), np.int8), (hl.UInt(16), np.uint16),
                (hl.Int(16), np.int16), (hl.UInt(32), np.uint32), (hl.Int(32), np.int32)]


@pytest.mark.parametrize("schedule", _SCHEDULES)
@pytest.mark.parametrize(("htype", "ntype"), _LERP_VALUES, ids=lambda t: str(t))
def test_integer_lerp(htype: hl.Type, ntype: type, schedule: str,
                      rng: np.random.Generator) -> None:
    """``lerp`` of every integer type of at most 32 bits by unsigned weights of every width
    (narrower ones scaled up, wider ones divided down) and float32 / float64 weights in
    [0, 1], on values spanning the type's range, the extremes and every weight's ends."""
    x, y = hl.Var("x"), hl.Var("y")
    a, b = hl.ImageParam(htype, 1, "a"), hl.ImageParam(htype, 1, "b")
    ws = [hl.ImageParam(hl.UInt(n), 1, f"w{n}") for n in (8, 16, 32)]
    wf = hl.ImageParam(hl.Float(32), 1, "wf")
    g = hl.Func("g")
    g[x, y] = hl.lerp(a[x], b[x], ws[0][x])
    f = hl.Func("lerps")
    f[x, y] = (g[x, y], hl.lerp(a[x], b[x], ws[1][x]), hl.lerp(a[x], b[x], ws[2][x]),
               hl.lerp(a[x], b[x], wf[x]), hl.lerp(a[x], b[x], hl.f64(wf[x]) * 0.75),
               hl.lerp(b[x], a[x], ws[1][x]))
    _schedule(schedule, [g], f)
    n = 64
    info = np.iinfo(ntype)
    av = rng.integers(info.min, info.max, n, dtype=ntype, endpoint=True)
    bv = rng.integers(info.min, info.max, n, dtype=ntype, endpoint=True)
    av[:6], bv[:6] = [info.min, info.max, 0, info.min, 1, info.max], \
        [info.max, info.min, info.max, info.min, 0, 0]
    inputs: list = [(a, av), (b, bv)]
    for p, nb in zip(ws, (8, 16, 32), strict=True):
        wv = rng.integers(0, 2**nb - 1, n, dtype=f"uint{nb}", endpoint=True)
        wv[:8] = [0, 2**nb - 1, 1, 2**nb - 2, 2 ** (nb - 1), 2 ** (nb - 1) - 1, 0, 2**nb - 1]
        inputs.append((p, wv))
    fv = rng.random(n, dtype=np.float32)
    fv[:8] = [0.0, 1.0, 0.5, 0.25, np.float32(1 / 3), 0.75, 1.0, 0.0]
    inputs.append((wf, fv))
    check(f, [n, 1], inputs)
