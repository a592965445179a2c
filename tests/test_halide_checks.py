"""Halide's own call-time checks, honoured: ``Pipeline.add_requirement``, the ImageParam
``dim(d)`` constraints (set_bounds, set_extent, set_min, set_stride) and Param ranges.
Each case is run by Halide and by the front-end on the same inputs: where Halide realizes,
we give its values (under two schedules); where Halide raises, we raise a HalideCheckError
with the same information (the requirement and its message; the input, the dimension and
the sizes; the Param and its bound), before anything is compiled."""

from __future__ import annotations

import re
from typing import Any

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

import middleend as me
from frontends.halide import HalideCheckError, UnsupportedHalideFeature, compile_pipeline


def _vars(names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names.split()]


def _halide_raises(pipe: hl.Pipeline, sizes: list[int], inputs: list[tuple[Any, Any]]) -> str:
    for p, v in inputs:
        p.set(hl.Buffer(v) if isinstance(p, hl.ImageParam) else v)
    with pytest.raises(hl.HalideError) as info:
        pipe.realize(sizes)
    return str(info.value)


def _ours_raises(k: Any, sizes: list[int], inputs: list[tuple[Any, Any]], *match: str) -> None:
    with pytest.raises(HalideCheckError) as info:
        k.realize(sizes, **{p.name(): v for p, v in inputs})
    for m in match:
        assert re.search(m, str(info.value)), (m, str(info.value))
    assert isinstance(info.value, me.KernelArgumentError)


@pytest.mark.parametrize("schedule", ["default", "parallel"])
def test_requirements(schedule: str, rng: np.random.Generator) -> None:
    """Two requirements, one with a message of strings and values: both hold -> Halide's
    values; either fails -> the failed condition and the message with its values."""
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p, s = hl.Param(hl.Int(32), "p"), hl.Param(hl.Float(32), "s")
    f = hl.Func("req")
    f[x, y] = a[x, y] * s + hl.f32(p)
    if schedule == "parallel":
        f.parallel(y).vectorize(x, 4)
    pipe = hl.Pipeline(f)
    pipe.add_requirement(p > 1, "p must exceed one, got", p, "with s =", s)
    pipe.add_requirement(a.width() % 4 == 0)
    k = compile_pipeline(pipe)
    av = rng.random((5, 12), dtype=np.float32)
    ok = [(a, av), (p, 3), (s, 0.5)]
    assert_same(k.realize([12, 5], a=av, p=3, s=0.5), halide_realize([f], [12, 5], ok))
    low = [(a, av), (p, 1), (s, 0.5)]
    assert "p must exceed one, got 1 with s = 0.500000" in _halide_raises(pipe, [12, 5], low)
    _ours_raises(k, [12, 5], low, r"requirement failed: p > 1: p must exceed one, got 1 "
                                  r"with s = 0\.500000$")
    odd = [(a, rng.random((5, 10), dtype=np.float32)), (p, 3), (s, 0.5)]
    _halide_raises(pipe, [8, 5], odd)
    _ours_raises(k, [8, 5], odd, r"requirement failed: \(a\.extent\.0 % 4\) == 0$")
    assert k.compiles == 1


@pytest.mark.parametrize("schedule", ["default", "vectorized"])
def test_dimension_constraints(schedule: str, rng: np.random.Generator) -> None:
    """interpolate's input: exactly 4 channels (set_bounds), square (an extent that is
    another dimension's); a 5-channel or non-square input is refused, as Halide does."""
    x, y, c = _vars("x y c")
    a = hl.ImageParam(hl.Float(32), 3, "rgba")
    a.dim(2).set_bounds(0, 4)
    a.dim(1).set_extent(a.dim(0).extent())
    f = hl.Func("premul")
    f[x, y, c] = a[x, y, c] * a[x, y, 3]
    if schedule == "vectorized":
        f.reorder(c, x, y).bound(c, 0, 4).unroll(c).vectorize(x, 4)
    k = compile_pipeline(f)
    good = [(a, rng.random((4, 9, 9), dtype=np.float32))]
    assert_same(k.realize([9, 9, 4], rgba=good[0][1]), halide_realize([f], [9, 9, 4], good))
    five = [(a, rng.random((5, 9, 9), dtype=np.float32))]
    assert "rgba.extent.2 (5) == 4" in _halide_raises(hl.Pipeline(f), [9, 9, 4], five)
    _ours_raises(k, [9, 9, 4], five, r"input 'rgba' dimension 2 \(numpy axis 0 of shape "
                                     r"\(5, 9, 9\)\) has extent 5, but the pipeline requires "
                                     r"rgba\.extent\.2 == 4")
    oblong = [(a, rng.random((4, 8, 9), dtype=np.float32))]
    _halide_raises(hl.Pipeline(f), [8, 8, 4], oblong)
    _ours_raises(k, [8, 8, 4], oblong, r"dimension 1 .* has extent 8, .* rgba\.extent\.1 == "
                                       r"rgba\.extent\.0 \(= 9\)")
    assert k.compiles == 1


def test_min_and_stride_constraints(rng: np.random.Generator) -> None:
    """set_min(1) cannot hold for an array (its mins are 0): refused by both. An
    interleaved layout (dim(0).set_stride(3), dim(2).set_stride(1)) accepts an interleaved
    array and refuses a planar one, as Halide does."""
    x, y, c = _vars("x y c")
    a = hl.ImageParam(hl.UInt(8), 3, "rgb")
    a.dim(0).set_stride(3)
    a.dim(2).set_stride(1).set_bounds(0, 3)
    f = hl.Func("gray")
    f[x, y] = (hl.u16(a[x, y, 0]) + a[x, y, 1] + a[x, y, 2]) // 3
    k = compile_pipeline(f)
    hwc = rng.integers(0, 256, (7, 10, 3), dtype=np.uint8)
    chw = np.transpose(hwc, (2, 0, 1))  # numpy axes (c, y, x), memory interleaved
    ref = [(a, chw)]
    assert_same(k.realize([10, 7], rgb=chw), halide_realize([f], [10, 7], ref))
    planar = [(a, np.ascontiguousarray(chw))]
    assert "rgb.stride.0 (1) == 3" in _halide_raises(hl.Pipeline(f), [10, 7], planar)
    _ours_raises(k, [10, 7], planar, r"input 'rgb' dimension 0 .* has stride 1, but the "
                                     r"pipeline requires rgb\.stride\.0 == 3")

    b = hl.ImageParam(hl.Float(32), 1, "b")
    b.dim(0).set_min(1)
    g = hl.Func("from_one")
    g[x] = b[x + 1]
    bad = [(b, rng.random(9, dtype=np.float32))]
    _halide_raises(hl.Pipeline(g), [4], bad)
    _ours_raises(compile_pipeline(g), [4], bad, r"has min 0, but .* b\.min\.0 == 1")


def test_param_ranges(rng: np.random.Generator) -> None:
    """``set_range(0, 10)``: 10 realizes, 11 and -1 are refused naming the Param and the
    bound it breaks."""
    x, = _vars("x")
    n = hl.Param(hl.Int(32), "n")
    n.set_range(0, 10)
    w = hl.Param(hl.Float(32), "w")
    w.set_min_value(0.5)
    f = hl.Func("ranged")
    f[x] = x * n + hl.i32(w)
    k = compile_pipeline(f)
    assert_same(k.realize([6], n=10, w=0.5), halide_realize([f], [6], [(n, 10), (w, 0.5)]))
    for nv, wv, match in [(11, 1.0, r"Param 'n' is 11 but must be at most 10"),
                          (-1, 1.0, r"Param 'n' is -1 but must be at least 0"),
                          (3, 0.25, r"Param 'w' is 0\.250000 but must be at least 0\.500000")]:
        inputs = [(n, nv), (w, wv)]
        _halide_raises(hl.Pipeline(f), [6], inputs)
        _ours_raises(k, [6], inputs, match)
    assert k.compiles == 1


def test_wrong_input_type_and_dimensions(rng: np.random.Generator) -> None:
    x, y = _vars("x y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = hl.Func("copy")
    f[x, y] = a[x, y]
    k = compile_pipeline(f)
    _ours_raises(k, [3, 3], [(a, np.zeros((3, 3), np.float64))],
                 r"ImageParam 'a' has type float32, got an array of float64")
    _ours_raises(k, [3, 3], [(a, np.zeros((3, 3, 1), np.float32))],
                 r"ImageParam 'a' has 2 dimension\(s\), got an array of shape \(3, 3, 1\)")
    assert k.compiles == 0


def test_a_check_that_cannot_be_evaluated_is_refused_at_compile() -> None:
    """A requirement is never skipped: one the front-end cannot evaluate (a call it does
    not know) is refused when the pipeline is compiled, naming what it uses."""
    x, = _vars("x")
    p = hl.Param(hl.Int(32), "p")
    f = hl.Func("f")
    f[x] = x + p
    pipe = hl.Pipeline(f)
    pipe.add_requirement((p ^ 3) > 1)
    with pytest.raises(UnsupportedHalideFeature, match="a requirement that uses the call "
                                                       "'bitwise_xor'"):
        compile_pipeline(pipe)
