"""The papers' Halide benchmarks as ordinary Halide 21 pipelines, defined once for the tests
and ``benchmarks/halide``. Each builder takes ``schedule``: ``"default"`` (Halide's
default: everything inlined into the root loops of the outputs) or ``"expert"`` (the
hand-written CPU schedule both Halide and the middle-end run in the benchmarks).

Images are RGB float32 in planar layout: numpy ``(3, rows, cols)``, i.e. Halide
``in(x, y, c)`` with x the column; heat2D's is single-channel, numpy ``(rows, cols)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import halide as hl
import numpy as np

# float32 lanes of the host's vectors (8 with AVX2, 16 with AVX-512): the expert schedules
# vectorize at the machine's width on both sides, never at a width assumed for one ISA
VEC = hl.get_host_target().natural_vector_size(hl.Float(32))


@dataclass
class Bench:
    """A benchmark: one or more realizations (``groups``: output Funcs realized together,
    with their sizes in Halide order) over the same inputs."""

    name: str
    groups: list[tuple[list[hl.Func], list[int]]]
    params: dict[str, Any]  # name -> ImageParam / Param
    inputs: dict[str, Any] = field(default_factory=dict)  # name -> numpy array / number

    def set_inputs(self) -> None:
        for n, p in self.params.items():
            v = self.inputs[n]
            p.set(hl.Buffer(v) if isinstance(p, hl.ImageParam) else v)

    def halide_realize(self) -> list[np.ndarray]:
        """Halide's own results (the reference), one array per output Func, in order."""
        self.set_inputs()
        out: list[np.ndarray] = []
        for funcs, sizes in self.groups:
            r = hl.Pipeline(funcs).realize(sizes)
            out.extend([np.asarray(r)] if isinstance(r, hl.Buffer) else
                       [np.asarray(b) for b in r])
        return out


def _vars(*names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names]


def _image(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((3, rows, cols), dtype=np.float32)


def _dot(w: tuple[float, float, float], ch: Any) -> Any:
    return hl.f32(w[0]) * ch(0) + hl.f32(w[1]) * ch(1) + hl.f32(w[2]) * ch(2)


def _luma(inp: Any, x: Any, y: Any) -> Any:
    return _dot((0.299, 0.587, 0.114), lambda k: inp[x, y, k])


def _rows_parallel(f: hl.Func, x: hl.Var, y: hl.Var, c: hl.Var | None = None) -> None:
    if c is not None:
        f.reorder(x, y, c)
    f.parallel(y).vectorize(x, VEC)


def cvt_color(rows: int, cols: int, schedule: str = "default") -> Bench:
    x, y = _vars("x", "y")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    gray = hl.Func("gray")
    gray[x, y] = _luma(inp, x, y)
    if schedule == "expert":
        _rows_parallel(gray, x, y)
    return Bench("cvtColor", [([gray], [cols, rows])], {"inp": inp}, {"inp": _image(rows, cols)})


def conv2d(rows: int, cols: int, schedule: str = "default") -> Bench:
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    kern = hl.ImageParam(hl.Float(32), 2, "kernel")
    cl = hl.BoundaryConditions.repeat_edge(inp)
    out = hl.Func("conv")
    e = hl.f32(0.0)
    for j in range(3):
        for i in range(3):
            e = e + kern[i, j] * cl[x + i - 1, y + j - 1, c]
    out[x, y, c] = e
    if schedule == "expert":
        _rows_parallel(out, x, y, c)
    k = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float32) / 16
    return Bench("conv2D", [([out], [cols, rows, 3])], {"inp": inp, "kernel": kern},
                 {"inp": _image(rows, cols), "kernel": k})


def gaussian(rows: int, cols: int, schedule: str = "default") -> Bench:
    x, y, c, xo, yo, xi, yi = _vars("x", "y", "c", "xo", "yo", "xi", "yi")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    cl = hl.BoundaryConditions.repeat_edge(inp)
    w = [hl.f32(v) for v in (0.0625, 0.25, 0.375, 0.25, 0.0625)]
    gx, gy = hl.Func("gx"), hl.Func("gy")
    gx[x, y, c] = sum(w[k] * cl[x + k - 2, y, c] for k in range(5))
    gy[x, y, c] = sum(w[k] * gx[x, y + k - 2, c] for k in range(5))
    if schedule == "expert":
        gy.reorder(x, y, c).split(y, yo, yi, 32).parallel(yo).vectorize(x, VEC)
        gx.compute_at(gy, yo).vectorize(x, VEC)
    return Bench("gaussian", [([gy], [cols, rows, 3])], {"inp": inp},
                 {"inp": _image(rows, cols)})


def warp_affine(rows: int, cols: int, schedule: str = "default") -> Bench:
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    # dyadic coefficients: the source coordinates are then exact in float32 whatever the
    # evaluation order (at x ~ 3500 one float32 ulp is 2.4e-4 pixel, enough to move the
    # bilinear weights visibly if two compilers round the products differently)
    a00, a01, a10, a11, b0, b1 = (hl.f32(v) for v in (
        63 / 64, 11 / 64, -10 / 64, 62 / 64, 11.5, -7.25))
    u = a00 * hl.f32(x) + a01 * hl.f32(y) + b0
    v = a10 * hl.f32(x) + a11 * hl.f32(y) + b1
    fu, fv = hl.floor(u), hl.floor(v)
    iu, iv = hl.i32(fu), hl.i32(fv)
    du, dv = u - fu, v - fv
    w, h = inp.width() - 1, inp.height() - 1

    def px(i: Any, j: Any) -> Any:
        return inp[hl.clamp(i, 0, w), hl.clamp(j, 0, h), c]

    out = hl.Func("warp")
    out[x, y, c] = ((1 - dv) * ((1 - du) * px(iu, iv) + du * px(iu + 1, iv))
                    + dv * ((1 - du) * px(iu, iv + 1) + du * px(iu + 1, iv + 1)))
    if schedule == "expert":
        _rows_parallel(out, x, y, c)
    return Bench("warpAffine", [([out], [cols, rows, 3])], {"inp": inp},
                 {"inp": _image(rows, cols)})


def blurxy(rows: int, cols: int, schedule: str = "default") -> Bench:
    x, y, c, xo, yo, xi, yi = _vars("x", "y", "c", "xo", "yo", "xi", "yi")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y, c] = (inp[x, y, c] + inp[x + 1, y, c] + inp[x + 2, y, c]) / 3
    by[x, y, c] = (bx[x, y, c] + bx[x, y + 1, c] + bx[x, y + 2, c]) / 3
    if schedule == "expert":
        by.reorder(x, y, c).tile(x, y, xo, yo, xi, yi, 256, 32).parallel(yo)
        by.vectorize(xi, VEC)
        bx.compute_at(by, xo).vectorize(x, VEC)
    return Bench("blurxy", [([by], [cols - 2, rows - 2, 3])], {"inp": inp},
                 {"inp": _image(rows, cols)})


def nb(rows: int, cols: int, schedule: str = "default") -> Bench:
    """Negative and brightened images of one input (4 stages: a luma, a normalized copy,
    and the two outputs, which both read the input and the luma)."""
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    luma, norm = hl.Func("luma"), hl.Func("norm")
    neg, bright = hl.Func("negative"), hl.Func("brightened")
    luma[x, y] = _luma(inp, x, y)
    norm[x, y, c] = inp[x, y, c] / (luma[x, y] + hl.f32(1.0))
    neg[x, y, c] = hl.f32(1.0) - norm[x, y, c]
    bright[x, y, c] = hl.min(norm[x, y, c] * hl.f32(1.5) + hl.f32(0.1), hl.f32(1.0))
    if schedule == "expert":
        for f in (neg, bright):
            _rows_parallel(f, x, y, c)
        luma.compute_root().parallel(y).vectorize(x, VEC)
    return Bench("nb", [([neg, bright], [cols, rows, 3])], {"inp": inp},
                 {"inp": _image(rows, cols)})


def rgbyuv420(rows: int, cols: int, schedule: str = "default") -> Bench:
    """RGB to YUV 4:2:0: Y at full resolution, U and V from 2x2 blocks (three outputs)."""
    x, y = _vars("x", "y")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")

    yf, uf, vf = hl.Func("y_plane"), hl.Func("u_plane"), hl.Func("v_plane")
    yf[x, y] = _luma(inp, x, y)

    def avg(ch: int) -> Any:
        return (inp[2 * x, 2 * y, ch] + inp[2 * x + 1, 2 * y, ch] + inp[2 * x, 2 * y + 1, ch]
                + inp[2 * x + 1, 2 * y + 1, ch]) * hl.f32(0.25)

    uf[x, y] = _dot((-0.147, -0.289, 0.436), avg) + hl.f32(0.5)
    vf[x, y] = _dot((0.615, -0.515, -0.100), avg) + hl.f32(0.5)
    if schedule == "expert":
        for f in (yf, uf, vf):
            f.parallel(y).vectorize(x, VEC)
    half = [cols // 2, rows // 2]
    return Bench("rgbyuv420", [([yf], [cols, rows]), ([uf], half), ([vf], half)],
                 {"inp": inp}, {"inp": _image(rows, cols)})


def heat2d(rows: int, cols: int, schedule: str = "default") -> Bench:
    """One step of the 2-D heat equation on a single-channel float32 image (numpy
    ``(rows, cols)``), on the interior: ``out(x, y) = alpha * in(x, y) + beta * (in(x - 1, y)
    + in(x + 1, y) + in(x, y - 1) + in(x, y + 1))`` for 1 <= x < cols - 1, 1 <= y < rows - 1,
    stored from (0, 0) like blurxy's output (so out[x, y] is the point in[x + 1, y + 1])."""
    x, y = _vars("x", "y")
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    alpha, beta = hl.Param(hl.Float(32), "alpha"), hl.Param(hl.Float(32), "beta")
    out = hl.Func("heat2d")
    xc, yc = x + 1, y + 1
    out[x, y] = alpha * inp[xc, yc] + beta * (inp[xc - 1, yc] + inp[xc + 1, yc]
                                              + inp[xc, yc - 1] + inp[xc, yc + 1])
    if schedule == "expert":
        _rows_parallel(out, x, y)
    img = np.random.default_rng(0).random((rows, cols), dtype=np.float32)
    return Bench("heat2D", [([out], [cols - 2, rows - 2])],
                 {"inp": inp, "alpha": alpha, "beta": beta},
                 {"inp": img, "alpha": 0.6, "beta": 0.1})


ALL = {"cvtColor": cvt_color, "conv2D": conv2d, "gaussian": gaussian,
       "warpAffine": warp_affine, "blurxy": blurxy, "nb": nb, "rgbyuv420": rgbyuv420,
       "heat2D": heat2d}
