"""``Func.define_extern`` on the cpu target (frontends/halide/externs.py and
frontends/halide/extern_call.py), against Halide's own realize: the extern stages are C
functions compiled here with the C compiler into a library loaded with RTLD_GLOBAL, as
Halide's JIT needs; they use strides and mins (so a wrong buffer is a wrong value), and
one asks in its bounds query for more than its output region. Also the one-line errors:
a non-zero return code, a missing symbol, a bounds query asking outside an ImageParam, and
the refusals. Chains of externs, Tuple externs and ``compute_at`` of an extern:
tests/test_halide_extern_chain.py."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import halide as hl
import numpy as np
import pytest
from halide_util import BUFFER_T_C, assert_same, halide_realize

from frontends.halide import UnsupportedHalideFeature, compile_pipeline
from frontends.halide.extern_call import ExternStageError

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="needs a C compiler")

_SOURCE = BUFFER_T_C + r"""

/* A bounds query: the output's host is NULL (a Func input's too; an ImageParam input is a
   copy of the real buffer, its host kept, as Halide passes it). */
/* out(x, y) = 2 * in(x, y) + k over the output region; asks for the same region */
int xt_scale_add(buf_t *in, int32_t k, buf_t *out) {
    if (out->host == NULL) {
        for (int d = 0; d < 2; d++) {
            in->dim[d].min = out->dim[d].min;
            in->dim[d].extent = out->dim[d].extent;
        }
        return 0;
    }
    if (in->type.code != 2 || in->type.bits != 32 || out->dimensions != 2) return 99;
    const float *src = (const float *)in->host;
    float *dst = (float *)out->host;
    for (int y = out->dim[1].min; y < out->dim[1].min + out->dim[1].extent; y++)
        for (int x = out->dim[0].min; x < out->dim[0].min + out->dim[0].extent; x++) {
            float v = src[(x - in->dim[0].min) * in->dim[0].stride
                          + (y - in->dim[1].min) * in->dim[1].stride];
            dst[(x - out->dim[0].min) * out->dim[0].stride
                + (y - out->dim[1].min) * out->dim[1].stride] = 2.0f * v + (float)k;
        }
    return 0;
}

/* out(x) = in(x - 1) * s + in(x + 1): asks for one more element on each side */
int xt_neighbours(buf_t *in, double s, buf_t *out) {
    if (out->host == NULL) {
        in->dim[0].min = out->dim[0].min - 1;
        in->dim[0].extent = out->dim[0].extent + 2;
        return 0;
    }
    const int32_t *src = (const int32_t *)in->host;
    int32_t *dst = (int32_t *)out->host;
    for (int x = out->dim[0].min; x < out->dim[0].min + out->dim[0].extent; x++)
        dst[(x - out->dim[0].min) * out->dim[0].stride] =
            (int32_t)(src[(x - 1 - in->dim[0].min) * in->dim[0].stride] * s)
            + src[(x + 1 - in->dim[0].min) * in->dim[0].stride];
    return 0;
}

/* rounds its output region out to multiples of 4 (Halide then computes that region) and
   asks for the same of its input; out(x) = 10 * in(x) + x */
int xt_round4(buf_t *in, buf_t *out) {
    if (out->host == NULL) {
        int lo = out->dim[0].min, hi = out->dim[0].min + out->dim[0].extent;
        lo = lo >= 0 ? lo / 4 * 4 : -((-lo + 3) / 4 * 4);
        hi = hi >= 0 ? (hi + 3) / 4 * 4 : -(-hi / 4 * 4);
        out->dim[0].min = in->dim[0].min = lo;
        out->dim[0].extent = in->dim[0].extent = hi - lo;
        return 0;
    }
    if (out->dim[0].min % 4 || out->dim[0].extent % 4) return 98;
    for (int x = out->dim[0].min; x < out->dim[0].min + out->dim[0].extent; x++)
        ((int32_t *)out->host)[(x - out->dim[0].min) * out->dim[0].stride] =
            10 * ((const int32_t *)in->host)[(x - in->dim[0].min) * in->dim[0].stride] + x;
    return 0;
}

int xt_fails(buf_t *in, buf_t *out) { return out->host == NULL ? 0 : 3; }

/* out(x, y) = in(min(x, w - 1), min(y, h - 1)) + 100 * w + 10 * h + m: the sizes of the
   image it is given, passed as Expr arguments (a wrong size is a wrong value) */
int xt_sizes(buf_t *in, int32_t w, int32_t h, int32_t m, buf_t *out) {
    if (out->host == NULL) return 0;
    const float *src = (const float *)in->host;
    float *dst = (float *)out->host;
    for (int y = out->dim[1].min; y < out->dim[1].min + out->dim[1].extent; y++)
        for (int x = out->dim[0].min; x < out->dim[0].min + out->dim[0].extent; x++) {
            int xx = x < w - 1 ? x : w - 1, yy = y < h - 1 ? y : h - 1;
            float v = src[(xx - in->dim[0].min) * in->dim[0].stride
                          + (yy - in->dim[1].min) * in->dim[1].stride];
            dst[(x - out->dim[0].min) * out->dim[0].stride
                + (y - out->dim[1].min) * out->dim[1].stride] = v + 100 * w + 10 * h + m;
        }
    return 0;
}
"""


@pytest.fixture(scope="module")
def externs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("externs")
    src, lib = d / "xt.c", d / "libxt.so"
    src.write_text(_SOURCE)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc is not None
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    return lib


def _one_line(e: BaseException) -> str:
    s = str(e)
    assert "\n" not in s and "Traceback" not in s, s
    return s


def _plain(h: hl.Func, e: hl.Func, g: hl.Func, x: hl.Var, y: hl.Var) -> None:
    g.compute_root()  # Halide refuses an inlined Func read by an extern


def _root_vector(h: hl.Func, e: hl.Func, g: hl.Func, x: hl.Var, y: hl.Var) -> None:
    e.compute_root()
    g.compute_root()
    h.vectorize(x, 4)


def _tiled_parallel(h: hl.Func, e: hl.Func, g: hl.Func, x: hl.Var, y: hl.Var) -> None:
    xo, yo, xi, yi = (hl.Var(n) for n in ("xo", "yo", "xi", "yi"))
    e.compute_root()
    h.tile(x, y, xo, yo, xi, yi, 4, 3).parallel(yo)
    g.compute_root().parallel(y)


@pytest.mark.parametrize("schedule", [_plain, _root_vector, _tiled_parallel])
def test_scale_add_of_a_func(externs: Path, rng: np.random.Generator,
                             schedule: Callable[..., None]) -> None:
    """An extern reading a Func of the pipeline (itself reading an ImageParam), with a
    scalar Param, read by a downstream Func at shifted points, under three schedules."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    k = hl.Param(hl.Int(32), "k", 0)
    g = hl.Func("g")
    g[x, y] = im[x + 1, y] * 0.5 + hl.f32(x - y)
    e = hl.Func("e")
    e.define_extern("xt_scale_add", [g, k], hl.Float(32), 2)
    h = hl.Func("h")
    h[x, y] = e[x, y] + e[x + 2, y + 1] * 3
    schedule(h, e, g, x, y)
    data = rng.random((12, 16), dtype=np.float32)
    kern = compile_pipeline(h)
    for kv in (5, -2):
        k.set(kv)
        im.set(hl.Buffer(data))
        ref = halide_realize([h], [11, 9], [])
        assert_same(kern.realize([11, 9], im=data, k=kv), ref)


def test_extern_asks_for_more_than_its_output(externs: Path) -> None:
    """The bounds query asks for [min - 1, max + 1] of its input: the input Func is
    computed over exactly that; a float64 scalar; the extern is an output itself."""
    x = hl.Var("x")
    s = hl.Param(hl.Float(64), "s", 1.0)
    g = hl.Func("g")
    g[x] = x * x - 3 * x
    g.compute_root()
    e = hl.Func("e")
    e.define_extern("xt_neighbours", [g, s], hl.Int(32), 1)
    h = hl.Func("h")
    h[x] = e[x - 2] + e[x + 3]
    s.set(2.5)
    for out in (h, e):
        ref = halide_realize([out], [10], [])
        assert_same(compile_pipeline(out).realize([10], s=2.5), ref)


def test_bounds_query_rounding_the_output(externs: Path) -> None:
    """An extern whose bounds query rounds its output region up (Halide computes the
    rounded region and asks again for the inputs), of a Func and of a constant Buffer."""
    x = hl.Var("x")
    g = hl.Func("g")
    g[x] = x * x - 7
    g.compute_root()
    buf = hl.Buffer(np.arange(20, dtype=np.int32) * 3 - 5)
    for src in (g, buf):
        e = hl.Func("e")
        e.define_extern("xt_round4", [src], hl.Int(32), 1)
        h = hl.Func("h")
        h[x] = e[x + 1] + e[x - 2] if src is g else e[x + 1] * 2
        ref = halide_realize([h], [7], [])
        assert_same(compile_pipeline(h).realize([7]), ref)


def test_two_externs_and_a_func_read_on_both_sides(externs: Path) -> None:
    """Two extern stages in one pipeline, one reading a Func the output also reads."""
    x = hl.Var("x")
    s = hl.Param(hl.Float(64), "s", 1.0)
    g = hl.Func("g")
    g[x] = x * 3 - 11
    g.compute_root()
    q = hl.Func("q")
    q[x] = x % 5
    q.compute_root()
    e1 = hl.Func("e1")
    e1.define_extern("xt_round4", [g], hl.Int(32), 1)
    e1.compute_root()
    e2 = hl.Func("e2")
    e2.define_extern("xt_neighbours", [q, s], hl.Int(32), 1)
    h = hl.Func("h")
    h[x] = e1[x + 1] + g[x] * e2[x - 1]
    s.set(-1.5)
    ref = halide_realize([h], [9], [])
    assert_same(compile_pipeline(h).realize([9], s=-1.5), ref)


def test_extern_of_an_image_param(externs: Path, rng: np.random.Generator) -> None:
    """An ImageParam passed to the extern whole; a bounds query asking outside it is one
    line, as Halide refuses it."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    k = hl.Param(hl.Int(32), "k", 0)
    e = hl.Func("e")
    e.define_extern("xt_scale_add", [im, k], hl.Float(32), 2)
    h = hl.Func("h")
    h[x, y] = e[x, y] - e[x + 1, y]
    data = rng.random((6, 9), dtype=np.float32)
    im.set(hl.Buffer(data))
    k.set(4)
    ref = halide_realize([h], [8, 6], [])
    kern = compile_pipeline(h)
    assert_same(kern.realize([8, 6], im=data, k=4), ref)
    with pytest.raises(hl.HalideError, match="Input buffer im is accessed at 9"):
        halide_realize([h], [9, 6], [])  # Halide refuses it too
    with pytest.raises(ExternStageError) as ex:
        kern.realize([9, 6], im=data, k=4)  # reads e up to x = 9, im holds x < 9
    assert "[0, 10) of dimension 0 of ImageParam 'im'" in _one_line(ex.value)


@pytest.mark.parametrize("shape", [(6, 9), (4, 13)])
def test_extern_arguments_of_an_image_params_sizes(
        externs: Path, shape: tuple[int, int], rng: np.random.Generator) -> None:
    """``im.width()``, ``im.dim(1).extent()`` and arithmetic of a stride, a min and a Param
    as Expr arguments: Halide evaluates them at each call, and so does the front-end, from
    the image given (two shapes). Refused before as ``Variable 'im.extent.0'``."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    k = hl.Param(hl.Int(32), "k", 0)
    e = hl.Func("e")
    e.define_extern("xt_sizes", [im, im.width(), im.dim(1).extent(),
                                 im.dim(1).stride() * k - im.dim(0).min() + im.height() // 2],
                    hl.Float(32), 2)
    h = hl.Func("h")
    h[x, y] = e[x, y] * 2
    data = rng.random(shape, dtype=np.float32)
    im.set(hl.Buffer(data))
    k.set(3)
    sizes = [shape[1] + 2, shape[0]]  # reads past the image's width: clamped by w
    ref = halide_realize([h], sizes, [])
    assert_same(compile_pipeline(h).realize(sizes, im=data, k=3), ref)


def test_non_zero_return_code(externs: Path) -> None:
    x = hl.Var("x")
    g = hl.Func("g")
    g[x] = hl.f32(x)
    g.compute_root()
    e = hl.Func("e")
    e.define_extern("xt_fails", [g], hl.Float(32), 1)
    with pytest.raises(hl.HalideError, match="returned non-zero value: 3"):
        e.realize([4])  # Halide's own behaviour
    with pytest.raises(ExternStageError) as ex:
        compile_pipeline(e).realize([4])
    assert re.fullmatch(r"extern stage 'e(\$\d+)?': xt_fails\(\) returned 3 in its call",
                        _one_line(ex.value))


def test_missing_symbol(externs: Path) -> None:
    x = hl.Var("x")
    g = hl.Func("g")
    g[x] = hl.f32(x)
    g.compute_root()
    e = hl.Func("e")
    e.define_extern("xt_no_such_function", [g], hl.Float(32), 1)
    with pytest.raises(ExternStageError) as ex:
        compile_pipeline(e).realize([4])
    assert "symbol 'xt_no_such_function' not found" in _one_line(ex.value)


def test_refusals(externs: Path) -> None:
    x, y = hl.Var("x"), hl.Var("y")
    g = hl.Func("g")
    g[x] = hl.f32(x)
    e = hl.Func("e")
    e.define_extern("xt_fails", [g], hl.Float(32), 1)
    h = hl.Func("h")
    h[x, y] = e[x] + hl.f32(y)
    with pytest.raises(hl.HalideError, match="cannot be scheduled to be computed inline"):
        h.realize([3, 2])  # Halide's refusal of an inlined g; ours:
    with pytest.raises(UnsupportedHalideFeature, match="cannot be scheduled to be computed "
                       "inline, because it is used in the externally-computed function e"):
        compile_pipeline(h)
    g.compute_root()
    e.compute_root()
    e2 = hl.Func("e2")
    e2.define_extern("xt_fails", [g], hl.Float(32), 1, hl.NameMangling.CPlusPlus)
    with pytest.raises(UnsupportedHalideFeature, match="C\\+\\+ name mangling") as ex:
        compile_pipeline(e2)
    _one_line(ex.value)
    f2 = hl.Func("f2")
    f2.define_extern("xt_fails", [g, hl.Expr(x)], hl.Float(32), 1)  # a Var, not a Param
    with pytest.raises(UnsupportedHalideFeature, match="only constants and scalar Params, an "):
        compile_pipeline(f2)
    f3 = hl.Func("f3")
    f3.define_extern("xt_fails", [g, hl.Expr(x) + 1], hl.Float(32), 1)  # a computed Expr
    with pytest.raises(UnsupportedHalideFeature) as ex:
        compile_pipeline(f3)
    assert _one_line(ex.value).endswith(
        "define_extern(xt_fails) with the Expr argument Add (only constants and scalar "
        "Params, an ImageParam's sizes, and arithmetic of them)"), ex.value
