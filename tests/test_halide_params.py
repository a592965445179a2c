"""Scalar Params of every Halide type, and zero-dimensional inputs, against Halide's own
realize: a Param used only in values is a scalar argument of the kernel (one build for all
its values), a Param used in an index or a bound is a constant of the build (one build per
value, as bounds inference needs it), whatever its type; values of the wrong kind are
refused naming the Param."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

from frontends.halide import HalideCheckError, compile_pipeline
from frontends.halide.apps import bilateral_grid_funcs


def _vars(names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names.split()]


_TYPES = {"f32": hl.Float(32), "f64": hl.Float(64), "i8": hl.Int(8), "i16": hl.Int(16),
          "i32": hl.Int(32), "i64": hl.Int(64), "u8": hl.UInt(8), "u16": hl.UInt(16),
          "u32": hl.UInt(32), "u64": hl.UInt(64), "b": hl.Bool()}

# two sets of values: extremes that wrap when combined with the Vars, and ordinary ones
_VALUES: list[dict[str, Any]] = [
    {"f32": -2.75, "f64": 1e-3, "i8": -128, "i16": 32000, "i32": -7, "i64": 2**40 + 3,
     "u8": 250, "u16": 65535, "u32": 2**32 - 5, "u64": 2**63 + 11, "b": True},
    {"f32": 0.1, "f64": -3.5, "i8": 17, "i16": -3, "i32": 123456, "i64": -9,
     "u8": 0, "u16": 3, "u32": 7, "u64": 1, "b": False},
]


def _typed(p: dict[str, hl.Param], a: hl.ImageParam) -> hl.Func:
    """One Tuple element per type, each in that type's own arithmetic (wrap-around
    included), and a float value that uses them all through floor, lerp and pow."""
    x, y = _vars("x y")
    f = hl.Func("typed")
    v = a[x, y]
    f[x, y] = (
        hl.lerp(hl.floor(v * p["f32"] * 8) / 8, v, hl.f32(0.25)) + hl.f32(p["f64"] * 2)
        + hl.pow(v, p["f32"] * p["f32"]) + hl.select(p["b"], v, -v),
        p["f64"] * hl.f64(x) - hl.f64(p["i64"]),
        p["i8"] + hl.cast(hl.Int(8), x * 37),
        p["i16"] * hl.cast(hl.Int(16), y + 3),
        p["i32"] * (x + 1) - y,
        p["i64"] * hl.i64(x - 2),
        p["u8"] + hl.cast(hl.UInt(8), x * 5),
        p["u16"] + hl.cast(hl.UInt(16), y),
        p["u32"] * hl.cast(hl.UInt(32), x + 1),
        p["u64"] + hl.cast(hl.UInt(64), x),
        hl.select(p["b"], x > y, x < 3),
    )
    return f


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_every_scalar_type_as_a_value(schedule: str, rng: np.random.Generator) -> None:
    """Every type Halide's Params have, used only in values: one build serves every value
    (the bilateral grid's ``r_sigma`` used to be refused as "must be an int")."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p = {n: hl.Param(t, f"p_{n}") for n, t in _TYPES.items()}
    f = _typed(p, a)
    if schedule == "vectorized":
        f.parallel(f.args()[1]).vectorize(f.args()[0], 8)
    av = rng.random((13, 21), dtype=np.float32) + np.float32(0.5)
    k = compile_pipeline(f)
    assert k.index_params == set()
    for vals in _VALUES:
        ours = k.realize([21, 13], a=av, **{f"p_{n}": v for n, v in vals.items()})
        ref = halide_realize([f], [21, 13], [(a, av)] + [(p[n], v) for n, v in vals.items()])
        assert_same(ours, ref)
    assert k.compiles == 1


@pytest.mark.parametrize("schedule", ["default", "root"])
def test_float_param_in_an_index_specializes(schedule: str, rng: np.random.Generator) -> None:
    """A float Param that decides an index (the bilateral grid's ``zi = val / r_sigma``)
    is a constant of the build, as Halide's bounds inference uses its value; a Param used
    only in values is not."""
    x, y, z = _vars("x y z")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    r_sigma, gain = hl.Param(hl.Float(32), "r_sigma"), hl.Param(hl.Float(32), "gain")
    grid, out = hl.Func("grid"), hl.Func("sliced")
    grid[x, y, z] = a[x, y] * hl.f32(z) + hl.f32(y)
    val = hl.clamp(a[x, y], 0.0, 1.0)
    zi = hl.i32(val * (1.0 / r_sigma) + 0.5)
    out[x, y] = grid[x, y, zi] * gain
    if schedule == "root":
        grid.compute_root().parallel(y)
        out.vectorize(x, 8)
    av = rng.random((11, 19), dtype=np.float32)
    k = compile_pipeline(out)
    assert k.index_params == {"r_sigma"}
    for rs, g, builds in [(0.1, 2.0, 1), (0.1, -1.5, 1), (0.25, 2.0, 2)]:
        inputs = [(a, av), (r_sigma, rs), (gain, g)]
        assert_same(k.realize([19, 11], a=av, r_sigma=rs, gain=g),
                    halide_realize([out], [19, 11], inputs))
        assert k.compiles == builds


def test_wrong_param_values_name_the_param(rng: np.random.Generator) -> None:
    """Each value that is not of the Param's type (or outside its range) is one
    HalideCheckError (a KernelArgumentError) naming the Param, before anything is built."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p = {n: hl.Param(t, f"p_{n}") for n, t in _TYPES.items()}
    k = compile_pipeline(_typed(p, a))
    good = {f"p_{n}": v for n, v in _VALUES[1].items()}
    av = rng.random((3, 4), dtype=np.float32)
    bad = [("p_i32", 2.5, "expected an int"), ("p_u8", 256, r"outside the type's range"),
           ("p_i8", -129, "outside"), ("p_u64", -1, "outside"), ("p_b", 2, "expected a bool"),
           ("p_f32", "0.5", "expected a number"), ("p_f64", None, "expected a number"),
           ("p_i64", True, "expected an int")]
    for name, v, match in bad:
        with pytest.raises(HalideCheckError, match=rf"Param '{name}' .*{match}"):
            k.realize([4, 3], a=av, **{**good, name: v})
    assert k.compiles == 0


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_zero_dimensional_inputs(schedule: str) -> None:
    """An ImageParam of dimension 0 (given a 0-d array or an hl.Buffer of a scalar) and a
    constant hl.Buffer of a scalar, read with ``[()]``."""
    x, = _vars("x")
    s = hl.ImageParam(hl.Float(32), 0, "s")
    c = hl.Buffer(np.array(3, dtype=np.int16))
    f = hl.Func("scaled")
    f[x] = s[()] * hl.f32(x) + hl.f32(c[()])
    if schedule == "vectorized":
        f.vectorize(x, 4)
    k = compile_pipeline(f)
    for v in (np.array(2.5, np.float32), hl.Buffer(np.array(-0.5, np.float32))):
        ref = halide_realize([f], [11], [(s, np.asarray(v))])
        assert_same(k.realize([11], s=v), ref)
    assert k.compiles == 1


def test_a_buffer_with_a_nonzero_min_is_refused() -> None:
    """Inputs are read with their mins at 0: an hl.Buffer that starts elsewhere is refused
    (instead of being read shifted)."""
    x, = _vars("x")
    a = hl.ImageParam(hl.Int(32), 1, "a")
    f = hl.Func("shifted")
    f[x] = a[x] * 2
    b = hl.Buffer(np.arange(8, dtype=np.int32))
    b.set_min([3])
    with pytest.raises(HalideCheckError, match=r"'a'.*mins are \[3\]"):
        compile_pipeline(f).realize([4], a=b)


def _bilateral_grid(inp: hl.ImageParam, r_sigma: hl.Param, schedule: str) -> hl.Func:
    """The bilateral grid (:func:`frontends.halide.apps.bilateral_grid_funcs`: its z
    index decided by ``r_sigma``, a float Param, the pipeline of the report "Param
    'r_sigma' must be an int") with its stages at root, or at root and parallel."""
    g = bilateral_grid_funcs(inp, r_sigma)
    x, y = g.output.args()
    xo, xi = hl.Var("xo"), hl.Var("xi")
    for f in (g.histogram, *g.blurs):
        f.compute_root()
    if schedule == "parallel":
        g.histogram.parallel(g.histogram.args()[2])
        for b in g.blurs:
            b.parallel(b.args()[1]).vectorize(b.args()[0], 4)
        g.output.split(x, xo, xi, 8).parallel(y).vectorize(xi)
    return g.output


@pytest.mark.parametrize("schedule", ["root", "parallel"])
def test_bilateral_grid(schedule: str, rng: np.random.Generator) -> None:
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    r_sigma = hl.Param(hl.Float(32), "r_sigma")
    out = _bilateral_grid(inp, r_sigma, schedule)
    img = rng.random((16, 24), dtype=np.float32)
    k = compile_pipeline(out)
    assert k.index_params == {"r_sigma"}
    rs = 0.1 if schedule == "root" else 0.25
    assert_same(k.realize([24, 16], inp=img, r_sigma=rs),
                halide_realize([out], [24, 16], [(inp, img), (r_sigma, rs)]), atol=1e-4)
