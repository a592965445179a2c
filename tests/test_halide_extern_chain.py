"""``define_extern`` beyond one stage (frontends/halide/externs.py): externs reading other
externs' outputs (directly and through Funcs, several deep, two at once), Tuple externs,
Tuple Func arguments and ``compute_at`` of an extern, against Halide's own realize with the
same extern symbols. The C functions honour their bounds queries (the box filter asks for
one more row and column on each side, the blend a region shifted by one) and log each real
call's output region, so the regions the bounds queries propagate through a chain are
compared with Halide's as well as the values."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import warnings
from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import BUFFER_T_C, assert_same, halide_realize

from frontends.halide import UnsupportedHalideFeature, compile_pipeline
from frontends.halide.errors import IgnoredHalideDirective
from frontends.halide.extern_call import ExternStageError

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="needs a C compiler")

_SOURCE = BUFFER_T_C + r"""
#define AT(b, T, x, y) (((T *)(b)->host)[((x) - (b)->dim[0].min) * (b)->dim[0].stride \
                                          + ((y) - (b)->dim[1].min) * (b)->dim[1].stride])
#define FOR_OUT(o) for (int y = (o)->dim[1].min; y < (o)->dim[1].min + (o)->dim[1].extent; y++) \
                   for (int x = (o)->dim[0].min; x < (o)->dim[0].min + (o)->dim[0].extent; x++)

/* every real call: (extern id, x min, x extent, y min, y extent) */
int32_t xc_log[256][5];
int32_t xc_count;
static void note(int id, const buf_t *o) {
    if (xc_count < 256) {
        int32_t *r = xc_log[xc_count];
        r[0] = id; r[1] = o->dim[0].min; r[2] = o->dim[0].extent;
        r[3] = o->dim[1].min; r[4] = o->dim[1].extent;
    }
    xc_count++;
}
static void same_region(buf_t *in, const buf_t *out, int dx) {
    for (int d = 0; d < 2; d++) {
        in->dim[d].min = out->dim[d].min + (d == 0 ? dx : 0);
        in->dim[d].extent = out->dim[d].extent;
    }
}

/* the mean of the 3x3 box around each point: asks for one more on each side */
int xc_box3(buf_t *in, buf_t *out) {
    if (out->host == NULL) {
        for (int d = 0; d < 2; d++) {
            in->dim[d].min = out->dim[d].min - 1;
            in->dim[d].extent = out->dim[d].extent + 2;
        }
        return 0;
    }
    if (in->type.code != 2 || in->type.bits != 32) return 90;
    note(1, out);
    FOR_OUT(out) {
        float s = 0.0f;
        for (int j = -1; j <= 1; j++)
            for (int i = -1; i <= 1; i++) s += AT(in, float, x + i, y + j);
        AT(out, float, x, y) = s / 9.0f;
    }
    return 0;
}

/* pointwise: in^2 - 0.5 */
int xc_square(buf_t *in, buf_t *out) {
    if (out->host == NULL) { same_region(in, out, 0); return 0; }
    note(2, out);
    FOR_OUT(out) { float v = AT(in, float, x, y); AT(out, float, x, y) = v * v - 0.5f; }
    return 0;
}

/* a(x, y) * w + b(x + 1, y): two inputs, the second asked one to the right */
int xc_blend(buf_t *a, buf_t *b, float w, buf_t *out) {
    if (out->host == NULL) { same_region(a, out, 0); same_region(b, out, 1); return 0; }
    note(3, out);
    FOR_OUT(out) AT(out, float, x, y) = AT(a, float, x, y) * w + AT(b, float, x + 1, y);
    return 0;
}

/* two outputs (a Tuple extern): min and 10 * max of in(x, y), in(x + 1, y) */
int xc_minmax(buf_t *in, buf_t *lo, buf_t *hi) {
    if (lo->host == NULL) {
        same_region(in, lo, 0);
        in->dim[0].extent += 1;
        return 0;
    }
    if (hi->type.code != 0 || hi->dim[0].min != lo->dim[0].min) return 91;
    note(4, lo);
    FOR_OUT(lo) {
        float u = AT(in, float, x, y), v = AT(in, float, x + 1, y);
        AT(lo, float, x, y) = u < v ? u : v;
        AT(hi, int32_t, x, y) = (int32_t)(10.0f * (u > v ? u : v));
    }
    return 0;
}

/* a float and an int32 input (a Tuple Func's two elements): a - 2 * b */
int xc_pair(buf_t *a, buf_t *b, buf_t *out) {
    if (out->host == NULL) { same_region(a, out, 0); same_region(b, out, 0); return 0; }
    if (a->type.code != 2 || b->type.code != 0) return 92;
    note(5, out);
    FOR_OUT(out) AT(out, float, x, y) = AT(a, float, x, y) - 2.0f * (float)AT(b, int32_t, x, y);
    return 0;
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    d = tmp_path_factory.mktemp("extern_chain")
    src, so = d / "xc.c", d / "libxc.so"
    src.write_text(_SOURCE)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc is not None
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True)
    return ctypes.CDLL(str(so), mode=ctypes.RTLD_GLOBAL)  # as Halide's JIT needs


def _calls(lib: ctypes.CDLL) -> list[tuple[int, ...]]:
    """The real calls logged since the last time, sorted (and the log emptied)."""
    count = ctypes.c_int32.in_dll(lib, "xc_count")
    rows = (ctypes.c_int32 * 5 * 256).in_dll(lib, "xc_log")
    got = sorted(tuple(rows[k]) for k in range(min(count.value, 256)))
    count.value = 0
    return got


def _one_line(e: BaseException) -> str:
    s = str(e)
    assert "\n" not in s and "Traceback" not in s, s
    return s


def _compile(out: hl.Func | list[hl.Func]) -> object:
    """compile_pipeline, with no warning (a warning is for compute_at only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredHalideDirective)
        return compile_pipeline(out)


def _chain(im: hl.ImageParam) -> dict[str, hl.Func]:
    """g -> a = box3(g) -> m (a Func reading a) -> c = box3(m) -> b = square(c) -> h,
    which also reads a: three externs, one reading another directly, one through m."""
    x, y = hl.Var("x"), hl.Var("y")
    fs = {n: hl.Func(n) for n in ("g", "a", "m", "c", "b", "h")}
    g, a, m, c, b, h = fs.values()
    g[x, y] = im[x + 3, y + 3] * 0.5 + hl.f32(x - 2 * y)
    a.define_extern("xc_box3", [g], hl.Float(32), 2)
    m[x, y] = a[x, y] * 2 - a[x, y + 1]
    c.define_extern("xc_box3", [m], hl.Float(32), 2)
    b.define_extern("xc_square", [c], hl.Float(32), 2)
    h[x, y] = b[x, y] + a[x + 1, y] * 0.25
    g.compute_root()  # Halide refuses an inlined Func (or extern) read by an extern
    m.compute_root()
    c.compute_root()
    return fs


def _all_root(fs: dict[str, hl.Func]) -> None:
    fs["a"].compute_root()
    fs["b"].compute_root()


def _a_inlined_h_vectorized(fs: dict[str, hl.Func]) -> None:
    fs["h"].vectorize(hl.Var("x"), 4)  # a at h's and m's innermost loops, per point (Halide)
    fs["m"].parallel(hl.Var("y"))


def _tiled_parallel(fs: dict[str, hl.Func]) -> None:
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    fs["a"].compute_root()
    fs["b"].compute_root()
    fs["h"].tile(x, y, xo, yo, xi, yi, 4, 3).parallel(yo)
    fs["g"].parallel(y).vectorize(x, 4)


@pytest.mark.parametrize("schedule", [_all_root, _a_inlined_h_vectorized, _tiled_parallel])
def test_chain_of_externs(lib: ctypes.CDLL, rng: np.random.Generator,
                          schedule: Callable[[dict[str, hl.Func]], None]) -> None:
    """Three externs in a chain (c reads a through m, b reads c's output directly) under
    three schedules; the region each bounds query asks for grows the producers' regions
    (a: two more rows and columns on each side than h)."""
    im = hl.ImageParam(hl.Float(32), 2, "im")
    fs = _chain(im)
    schedule(fs)
    data = rng.random((17, 16), dtype=np.float32)
    kern = _compile(fs["h"])
    for size in ([10, 8], [7, 10]):
        im.set(hl.Buffer(data))
        ref = halide_realize([fs["h"]], size, [])
        assert_same(kern.realize(size, im=data), ref)


def test_chain_regions_are_halides(lib: ctypes.CDLL, rng: np.random.Generator) -> None:
    """Every extern computed at root: each is called once, over the region Halide's
    bounds inference gives it (a's is the union of what m and h read), in both."""
    im = hl.ImageParam(hl.Float(32), 2, "im")
    fs = _chain(im)
    _all_root(fs)
    data = rng.random((17, 16), dtype=np.float32)
    kern = _compile(fs["h"])
    _calls(lib)
    im.set(hl.Buffer(data))
    ref = halide_realize([fs["h"]], [10, 8], [])
    theirs = _calls(lib)
    assert_same(kern.realize([10, 8], im=data), ref)
    ours = _calls(lib)
    # a: x in [-1, 11) (m's box filter) and y in [-1, 10) (m reads a at y + 1)
    assert theirs == sorted([(1, -1, 12, -1, 11), (1, 0, 10, 0, 8), (2, 0, 10, 0, 8)])
    assert ours == theirs


def test_extern_reading_two_externs(lib: ctypes.CDLL) -> None:
    """blend(box3(g), square(q), w) with a float Param: the second input is asked one
    column to the right, which moves square's region and then q's."""
    x, y = hl.Var("x"), hl.Var("y")
    w = hl.Param(hl.Float(32), "w", 1.0)
    g, q, a, s, e, h = (hl.Func(n) for n in ("g", "q", "a", "s", "e", "h"))
    g[x, y] = hl.f32(x * y % 7) - 0.25 * hl.f32(y)
    q[x, y] = hl.f32((x + 3 * y) % 5) * 0.5
    a.define_extern("xc_box3", [g], hl.Float(32), 2)
    s.define_extern("xc_square", [q], hl.Float(32), 2)
    e.define_extern("xc_blend", [a, s, w], hl.Float(32), 2)
    h[x, y] = e[x, y] - e[x + 2, y + 1]
    for f in (g, q, a, s, e):
        f.compute_root()
    kern = _compile(h)
    for wv in (0.5, -3.0):
        w.set(wv)
        _calls(lib)
        ref = halide_realize([h], [9, 6], [])
        theirs = _calls(lib)
        assert_same(kern.realize([9, 6], w=wv), ref)
        assert _calls(lib) == theirs
        assert (2, 1, 11, 0, 7) in theirs  # square: e's region moved one to the right


def test_tuple_extern(lib: ctypes.CDLL, rng: np.random.Generator) -> None:
    """An extern with two outputs (float, int32), read element by element, and as the
    input of another extern (its two buffers cropped to the region asked)."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    g, t, r, u = (hl.Func(n) for n in ("g", "t", "r", "u"))
    g[x, y] = im[x, y] * 3.0 - hl.f32(y)
    t.define_extern("xc_minmax", [g], [hl.Float(32), hl.Int(32)], 2)
    r.define_extern("xc_pair", [t], hl.Float(32), 2)
    u[x, y] = t[x, y][0] + hl.f32(t[x, y + 1][1]) * r[x + 1, y]
    g.compute_root()
    t.compute_root()
    data = rng.random((12, 11), dtype=np.float32)
    im.set(hl.Buffer(data))
    for outs in ([u], [t], [r, t]):
        ref = halide_realize(outs, [8, 9], [])
        assert_same(_compile(outs).realize([8, 9], im=data), ref)


def test_tuple_func_argument(lib: ctypes.CDLL) -> None:
    """A Tuple Func read by an extern: one buffer per element, as Halide passes it, each
    computed over the region asked."""
    x, y = hl.Var("x"), hl.Var("y")
    p, q, h = hl.Func("p"), hl.Func("q"), hl.Func("h")
    p[x, y] = hl.Tuple([hl.f32(x + y) * 0.5, x * y - 3])
    q.define_extern("xc_pair", [p], hl.Float(32), 2)
    h[x, y] = q[x, y] + q[x + 1, y + 2]
    p.compute_root()
    for vec in (False, True):
        if vec:
            p.vectorize(x, 4)
            h.vectorize(x, 4)
        ref = halide_realize([h], [9, 5], [])
        assert_same(_compile(h).realize([9, 5]), ref)


def test_compute_at_of_an_extern(lib: ctypes.CDLL, rng: np.random.Generator) -> None:
    """compute_at(h, y) of an extern (and of the Func it reads): Halide calls it per row,
    ours once at root over the rows' union, with one warning each; the values are equal."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    g, a, h = hl.Func("g"), hl.Func("a"), hl.Func("h")
    g[x, y] = im[x + 1, y + 1] + hl.f32(x)
    a.define_extern("xc_box3", [g], hl.Float(32), 2)
    h[x, y] = a[x, y] * 2 + a[x, y + 1]
    g.compute_root()
    a.compute_at(h, y)
    data = rng.random((10, 9), dtype=np.float32)
    im.set(hl.Buffer(data))
    for both in (False, True):
        if both:
            g.compute_at(h, y)
        _calls(lib)
        ref = halide_realize([h], [6, 5], [])
        assert len(_calls(lib)) == 5  # Halide: one call per row of h
        with pytest.warns(IgnoredHalideDirective) as got:
            kern = compile_pipeline(h)
        said = [str(w.message) for w in got]
        assert len(said) == 1 + both, said
        assert "compute_at(h" in said[0] and "extern stage is computed at root" in said[0]
        assert_same(kern.realize([6, 5], im=data), ref)
        assert _calls(lib) == [(1, 0, 6, 0, 6)]


def test_chain_mistakes(lib: ctypes.CDLL, rng: np.random.Generator) -> None:
    """A user's mistakes in a chain, each one line: the first extern left inlined (Halide
    refuses it, in the same words), a chain whose bounds queries ask for more of an
    ImageParam than it holds, compute_at of an extern at a Func that does not use it (Halide
    refuses both too), and a symbol missing."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Float(32), 2, "im")
    a, b, h = hl.Func("a"), hl.Func("b"), hl.Func("h")
    a.define_extern("xc_box3", [im], hl.Float(32), 2)
    b.define_extern("xc_box3", [a], hl.Float(32), 2)
    h[x, y] = b[x, y] + 1.0
    data = rng.random((8, 8), dtype=np.float32)
    im.set(hl.Buffer(data))
    with pytest.raises(hl.HalideError, match="cannot be scheduled to be computed inline"):
        h.realize([4, 4])
    with pytest.raises(UnsupportedHalideFeature) as ex:
        compile_pipeline(h)
    assert re.search(r"Func a(\$\d+)? cannot be scheduled to be computed inline, because it "
                     r"is used in the externally-computed function b(\$\d+)?$",
                     _one_line(ex.value))
    a.compute_root()
    kern = _compile(h)
    with pytest.raises(hl.HalideError, match="Input buffer im is accessed at -2"):
        halide_realize([h], [4, 4], [])  # b asks a for [-1, 5), a asks im for [-2, 6)
    with pytest.raises(ExternStageError) as se:
        kern.realize([4, 4], im=data)
    assert "asks for [-2, 6) of dimension 0 of ImageParam 'im' (argument 0), which holds " \
           "[0, 8)" in _one_line(se.value)
    z = hl.Func("z")
    z[x, y] = x + y
    b.compute_at(z, y)  # z does not use b
    with pytest.raises(hl.HalideError, match="is computed at the following invalid location"):
        h.realize([4, 4])
    with pytest.raises(UnsupportedHalideFeature) as ex:
        compile_pipeline(h)
    assert re.search(r"compute_at\(z(\$\d+)?, y\) of the extern stage: an invalid location, "
                     r"since 'z(\$\d+)?' does not use 'b(\$\d+)?'$", _one_line(ex.value))
    c = hl.Func("c")
    c.define_extern("xc_no_such_symbol", [a], hl.Float(32), 2)
    with pytest.raises(ExternStageError) as me:
        _compile(c).realize([3, 3], im=data)
    assert "symbol 'xc_no_such_symbol' not found" in _one_line(me.value)
