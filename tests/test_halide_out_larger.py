"""``realize(sizes, out=arrays)`` with arrays larger than ``realize(sizes)`` returns, against
Halide's ``Pipeline.realize(buffers)``, which computes every output over the whole buffer
it is given: the values everywhere (NaN or -7 before), for one output, several outputs of
different regions (one starting below 0, where Halide's buffer has ``set_min``) and a
Tuple output. Element 0 of an array stays at the min of its region under ``realize(sizes)``;
the extents are the arrays'. Refused in one line, as Halide refuses the buffers: an array
smaller in some dimension, an output array too small for what the other (larger) outputs
read of it, Tuple elements of different shapes; and, not run here, a larger array with
``define_extern`` stages."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import halide as hl
import numpy as np
import pytest
from halide_util import BUFFER_T_C, assert_same, set_inputs

from frontends.halide import compile_pipeline
from middleend.ir.errors import KernelArgumentError


def _halide_into(outputs: list[hl.Func], dst: list[np.ndarray],
                 mins: list[list[int]] | None = None) -> None:
    """Halide's realize into numpy arrays (with ``set_min`` where ``mins`` says)."""
    bufs = [hl.Buffer(d) for d in dst]
    for b, m in zip(bufs, mins or [], strict=False):
        b.set_min(m)
    hl.Pipeline(outputs).realize(bufs)


def _one_line(e: pytest.ExceptionInfo[BaseException]) -> str:
    s = str(e.value)
    assert "\n" not in s, s
    return s


def _blur(a: hl.ImageParam, schedule: str) -> hl.Func:
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("blur")
    f[x, y] = (a[x, y] + a[x + 1, y] * 2 + a[x, y + 1]) * 0.25 + hl.f32(x - 3 * y)
    if schedule == "tiled":
        xo, yo, xi, yi = (hl.Var(n) for n in ("xo", "yo", "xi", "yi"))
        f.tile(x, y, xo, yo, xi, yi, 8, 4).parallel(yo).vectorize(xi, 4)
    return f


@pytest.mark.parametrize("schedule", ["default", "tiled"])
def test_one_output_larger(schedule: str, rng: np.random.Generator) -> None:
    """A 2-D output realized with sizes [9, 5] into a (7, 13) array: every element is
    computed, as Halide does; the build is reused, and the build of realize(sizes), which
    only places element 0, is not compiled."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = _blur(a, schedule)
    av = rng.random((8, 14), dtype=np.float32)
    set_inputs([(a, av)])
    ref = np.full((7, 13), np.nan, np.float32)
    _halide_into([f], [ref])
    k = compile_pipeline(f)
    for _ in range(2):
        dst = np.full((7, 13), np.nan, np.float32)
        got = k.realize([9, 5], out=dst, a=av)
        assert got is dst
        assert_same([dst], [ref])
    assert k.compiles == 1
    assert_same([k.realize([13, 7], a=av)], [ref])  # the same as realize over its shape


def test_several_outputs_larger() -> None:
    """u reads t at x + 1: with sizes [10] t's region is [0, 10]; arrays of 12 and 15
    elements compute u over [0, 11] and t over [0, 14] (Halide's values), and arrays of
    12 and 13 (t just covering what u reads) too."""
    x = hl.Var("x")
    t, u = hl.Func("t"), hl.Func("u")
    t[x] = x * 2
    u[x] = t[x + 1] + 1
    k = compile_pipeline([u, t])
    for nu, nt in ((12, 15), (12, 13), (10, 20)):
        ref = [np.full(nu, -7, np.int32), np.full(nt, -7, np.int32)]
        _halide_into([u, t], ref)
        dst = [np.full(nu, -7, np.int32), np.full(nt, -7, np.int32)]
        got = k.realize([10], out=dst)
        assert got[0] is dst[0] and got[1] is dst[1]
        assert_same(dst, ref)


def test_region_below_zero_larger() -> None:
    """u reads t at x - 1: t's region starts at -1, so element 0 of t's array is t(-1)
    (Halide's buffer with set_min(-1)); a 14-element array covers [-1, 12]."""
    x = hl.Var("x")
    t, u = hl.Func("t"), hl.Func("u")
    t[x] = x * 2 + 1
    u[x] = t[x - 1] * 3
    t.compute_root()
    k = compile_pipeline([u, t])
    ref = [np.full(12, -7, np.int32), np.full(14, -7, np.int32)]
    _halide_into([u, t], ref, [[0], [-1]])
    dst = [np.full(12, -7, np.int32), np.full(14, -7, np.int32)]
    k.realize([10], out=dst)
    assert_same(dst, ref)


def test_tuple_output_larger(rng: np.random.Generator) -> None:
    """A Tuple output of two types into two (6, 11) arrays."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    t = hl.Func("pair")
    t[x, y] = (a[x, y] * 2, hl.cast(hl.Int(16), x - 3 * y))
    t.parallel(y).vectorize(x, 4)
    av = rng.random((6, 11), dtype=np.float32)
    set_inputs([(a, av)])
    ref = [np.zeros((6, 11), np.float32), np.zeros((6, 11), np.int16)]
    _halide_into([t], ref)
    dst = [np.full((6, 11), np.nan, np.float32), np.full((6, 11), -1, np.int16)]
    compile_pipeline(t).realize([4, 3], out=dst, a=av)
    assert_same(dst, ref)


def test_refusals() -> None:
    """Each in one line, before anything is compiled; Halide refuses the same buffers."""
    x, y = hl.Var("x"), hl.Var("y")
    t, u = hl.Func("t"), hl.Func("u")
    t[x] = x * 2
    u[x] = t[x + 1] + 1
    k = compile_pipeline([u, t])
    # t's array holds [0, 10], but u's array of 12 reads t over [0, 12]
    with pytest.raises(hl.HalideError, match=r"Output buffer t\S* is accessed at 12"):
        _halide_into([u, t], [np.zeros(12, np.int32), np.zeros(11, np.int32)])
    with pytest.raises(KernelArgumentError) as e:
        k.realize([10], out=[np.zeros(12, np.int32), np.zeros(11, np.int32)])
    assert "realize out= for output 't" in _one_line(e)
    assert "covers [(0, 10)]" in str(e.value) and "over [(0, 12)]" in str(e.value)
    # smaller than realize(sizes)'s region
    with pytest.raises(KernelArgumentError, match=r"expected int32 with shape \(11,\)"):
        k.realize([10], out=[np.zeros(10, np.int32), np.zeros(10, np.int32)])
    assert k.compiles == 0
    # larger in one dimension, smaller in the other
    f = hl.Func("f")
    f[x, y] = x + y
    kf = compile_pipeline(f)
    with pytest.raises(KernelArgumentError, match=r"expected int32 with shape \(4, 5\)"):
        kf.realize([5, 4], out=np.zeros((3, 9), np.int32))
    with pytest.raises(KernelArgumentError, match=r"expected int32 with shape \(4, 5\)"):
        kf.realize([5, 4], out=np.zeros((4, 5, 1), np.int32))
    # the elements of a Tuple output must share one region
    p = hl.Func("p")
    p[x] = (x * 2, hl.f32(x))
    with pytest.raises(hl.HalideError, match="Constraint violated"):
        _halide_into([p], [np.zeros(10, np.int32), np.zeros(12, np.float32)])
    with pytest.raises(KernelArgumentError) as e:
        compile_pipeline(p).realize([10], out=[np.zeros(10, np.int32),
                                               np.zeros(12, np.float32)])
    assert "Tuple output 'p" in _one_line(e) and "have shape (10,)" in str(e.value)


_EXTERN = BUFFER_T_C + r"""
/* out(x) = in(x) + 1, asking for its output region of its input */
int h6_plus_one(buf_t *in, buf_t *out) {
    if (out->host == NULL) {
        in->dim[0].min = out->dim[0].min;
        in->dim[0].extent = out->dim[0].extent;
        return 0;
    }
    for (int x = 0; x < out->dim[0].extent; x++)
        ((int32_t *)out->host)[x * out->dim[0].stride] = 1 +
            ((const int32_t *)in->host)[(x + out->dim[0].min - in->dim[0].min)
                                        * in->dim[0].stride];
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_extern_stage_larger_refused(tmp_path: Path) -> None:
    """With define_extern stages a larger array is refused in one line (their bounds
    queries are asked for the realized region); the exact size still runs."""
    src, lib = tmp_path / "h6.c", tmp_path / "libh6.so"
    src.write_text(_EXTERN)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    x = hl.Var("x")
    g = hl.Func("g")
    g[x] = x * 3
    g.compute_root()
    e = hl.Func("e")
    e.define_extern("h6_plus_one", [g], hl.Int(32), 1)
    h = hl.Func("h")
    h[x] = e[x] * 2
    k = compile_pipeline(h)
    ref = np.zeros(8, np.int32)
    _halide_into([h], [ref])
    dst = np.zeros(8, np.int32)
    k.realize([8], out=dst)
    assert_same([dst], [ref])
    with pytest.raises(KernelArgumentError) as ei:
        k.realize([8], out=np.zeros(10, np.int32))
    assert "define_extern" in _one_line(ei)
