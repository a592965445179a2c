"""The papers' benchmarks that Halide cannot express, in the middle-end's Python API.

* ``ticket2373``: Halide issue #2373. ``RDom r(0, 32); r.where(x >= r)`` reads
  ``input(x - r, y)``: Halide bounds ``x - r`` with intervals, ignores the correlation between
  ``x`` and ``r`` and asserts on a read left of the image. Here the domain is the exact ISL set
  ``{ acc[y, x, r] : 0 <= r < K and r <= x < W }``, so no read leaves the input.
* ``heat3d``: the 3-D heat equation with time steps (Tiramisu/Halide paper). ``heat3d(t)``
  reads ``heat3d(t - 1)``: a cyclic dataflow through one buffer, which Halide's DAG model
  refuses; the time dimension is folded (``t % 2``), two planes in memory.
* ``edge_detector``: ring blur ``R`` of ``Img``, then Roberts edges written back into
  ``Img``: ``R`` is written by statement 1 and read by 2, ``Img`` written by 2 and read by 1,
  a dependence cycle that Halide cannot express.

Each builder takes ``shape`` (constant sizes) or None (``me.Param`` sizes) and returns a
dataclass holding the Function and its computations; ``schedule_*`` apply the tuned CPU
schedules of ``benchmarks/halide/beyond.py``; ``*_ref`` are the numpy references (the
benchmarks' anchors). Everything is float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.expr import call, cast
from ..ir.function import OUTPUT, Buffer, Computation, Input, Param, Var
from ..ir.types import float32
from .function import Function

# ----------------------------------------------------------------------------- ticket #2373

WINDOW = 32  # the RDom extent of the ticket


@dataclass
class Ticket2373:
    """``out`` (zeros) then ``acc``, the update over the triangular domain, stored in out."""

    fn: Function
    out: Computation
    acc: Computation
    window: int


def ticket2373(shape: tuple[int, int] | None = None, window: int = WINDOW) -> Ticket2373:
    """``out[y, x] = sum(inp[y, x - r] for r in [0, window) if r <= x)``.

    The ticket's program stores ``input(x - r, y)`` into a volume ``volume(x, y, r)``; at
    2112 x 3520 x 32 floats that volume is 950 MB, so the variant here reduces over ``r``
    instead of storing each plane: a causal (trailing) box sum of ``window`` pixels along a
    row, truncated at the left border, i.e. the same triangular domain (``r.where(x >= r)``),
    the same read ``inp[y, x - r]``, and a result that means something. ``window`` is a
    compile-time constant (32, as the ticket's RDom); the image sizes are Params or
    ``shape`` = (rows, cols)."""
    with Function("ticket2373") as f:
        h, w = (Param("H"), Param("W")) if shape is None else shape
        y, x, r = Var("y", 0, h), Var("x", 0, w), Var("r", 0, window)
        inp = Input("inp", [h, w], float32)
        out = Computation("out", [y, x], cast(float32, 0))
        acc = Computation("acc", [y, x, r], dtype=float32, predicate=x >= r)
        acc.set_expression(acc[y, x, r - 1] + inp[y, x - r])  # r = 0 reads out's 0 (the φ)
        acc.store_in(out, [y, x])
    return Ticket2373(f, out, acc, window)


def schedule_ticket2373(p: Ticket2373, vf: int = 16) -> Ticket2373:
    """Rows in parallel; in a row, ``r`` outside ``x`` (interchange: legal, the chain only
    runs along ``r``) so that the inner loop ``x in [r, W)`` is a contiguous, vectorized
    ``out[y, x] += inp[y, x - r]`` over one row that stays in L1; ``out``'s zeroing of the
    row is fused into the same ``y`` iteration."""
    p.acc.interchange("x", "r")
    p.acc.vectorize("x", vf)
    p.out.vectorize("x", vf)
    p.acc.after(p.out, "y")
    p.out.parallelize("y")
    return p


def ticket2373_ref(a: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """The anchor: one vectorized shifted-slice add per ``r`` in the same summation order
    as the kernel (so the results are bit-identical), in place on the output."""
    out = np.zeros_like(a)
    w = a.shape[1]
    for r in range(min(window, w)):
        np.add(out[:, r:], a[:, :w - r], out=out[:, r:])
    return out


# ----------------------------------------------------------------------------- heat3d


@dataclass
class Heat3D:
    """``faces`` copy the input's border into both planes of ``buf``; ``h0`` is time step 0
    (from ``inp``), ``h`` the steps 1 .. T-1, step t stored in ``buf[t % 2]``."""

    fn: Function
    faces: tuple[Computation, Computation, Computation]
    h0: Computation
    h: Computation


def heat3d(shape: tuple[int, int, int] | None = None, steps: int | None = None,
           a: float = 0.4, b: float = 0.1) -> Heat3D:
    """The paper's heat3d on the interior of an X x Y x Z grid (z contiguous)::

        heat3d(x, y, z, 0) = a * in(x, y, z) + b * (the 6 neighbours in in)
        heat3d(x, y, z, t) = a * heat3d(x, y, z, t - 1) + b * (the 6 neighbours at t - 1)

    for t < T (``steps``, a Param when None); the border keeps the input's value (fixed
    boundary), so the result of the last step is ``buf[(T - 1) % 2]`` in full. The border is
    copied by three computations over disjoint faces (x = 0 or X-1; y = ...; z = ...), each
    a two-piece ISL set (one predicate over all six faces, a union of overlapping pieces,
    makes the exact legality check exceed its ISL budget with Params)."""
    with Function("heat3d") as f:
        X, Y, Z = (Param("X"), Param("Y"), Param("Z")) if shape is None else shape
        T = Param("T", min=1) if steps is None else steps
        s = Var("s", 0, 2)
        x, y, z = Var("x", 0, X), Var("y", 0, Y), Var("z", 0, Z)
        xi, yi, zi = Var("x", 1, X - 1), Var("y", 1, Y - 1), Var("z", 1, Z - 1)
        inp = Input("inp", [X, Y, Z], float32)
        buf = Buffer("buf", [2, X, Y, Z], float32, kind=OUTPUT)
        faces = []
        for name, its, v, n in (("face_x", (x, y, z), x, X), ("face_y", (xi, y, z), y, Y),
                                ("face_z", (xi, yi, z), z, Z)):
            fc = Computation(name, [s, *its], inp[its], predicate=(v == 0) | (v == n - 1))
            fc.store_in(buf, [s, *its])
            faces.append(fc)

        def stencil(u: Any, *pre: Any) -> Any:
            return a * u[(*pre, xi, yi, zi)] + b * (
                u[(*pre, xi + 1, yi, zi)] + u[(*pre, xi - 1, yi, zi)]
                + u[(*pre, xi, yi + 1, zi)] + u[(*pre, xi, yi - 1, zi)]
                + u[(*pre, xi, yi, zi + 1)] + u[(*pre, xi, yi, zi - 1)])

        h0 = Computation("h0", [xi, yi, zi], stencil(inp))
        h0.store_in(buf, [0, xi, yi, zi])
        t = Var("t", 1, T)
        h = Computation("h", [t, xi, yi, zi], dtype=float32)
        # h[t - 1] outside h's domain (t = 1, or the border) reads buf: h0's or a face's value
        h.set_expression(stencil(h, t - 1))
        h.store_in(buf, [t % 2, xi, yi, zi])
    return Heat3D(f, (faces[0], faces[1], faces[2]), h0, h)


def schedule_heat3d(p: Heat3D, vf: int = 16, ty: int = 0) -> Heat3D:
    """Within each time step the x planes run in parallel and z (contiguous) is vectorized;
    ``t`` stays sequential (it carries the dependence: the check refuses
    ``h.parallelize("t")``). ``ty`` > 0 also splits y into strips of ``ty`` rows, inside x."""
    for c in (p.h0, p.h):
        if ty:
            c.split("y", ty, "y0", "y1")
        c.vectorize("z", vf)
        c.parallelize("x")
    for fc in p.faces:
        fc.vectorize("z", vf)
    return p


def heat3d_ref(a: np.ndarray, steps: int, ca: float = 0.4, cb: float = 0.1) -> np.ndarray:
    """The anchor: the same ``steps`` Jacobi steps with numpy slices (two planes, swapped),
    summing the neighbours in the kernel's order."""
    fa, fb = np.float32(ca), np.float32(cb)
    u, v = a.copy(), a.copy()
    c = (slice(1, -1),) * 3
    for _ in range(steps):
        m = u[2:, 1:-1, 1:-1] + u[:-2, 1:-1, 1:-1]
        m += u[1:-1, 2:, 1:-1]
        m += u[1:-1, :-2, 1:-1]
        m += u[1:-1, 1:-1, 2:]
        m += u[1:-1, 1:-1, :-2]
        m *= fb
        np.multiply(u[c], fa, out=v[c])
        v[c] += m
        u, v = v, u
    return u


# ----------------------------------------------------------------------------- edgeDetector


@dataclass
class EdgeDetector:
    """``load`` puts the image in the in/out buffer ``Img``; ``R`` the ring blur (reads
    Img), ``out`` the Roberts edges (reads R, writes Img): the cycle R -> out -> Img -> R."""

    fn: Function
    load: Computation
    R: Computation
    out: Computation


def edge_detector(shape: tuple[int, int] | None = None) -> EdgeDetector:
    """The paper's edgeDetector on an RGB float32 image (rows x cols x 3)::

        R(i, j)   = (the 8 neighbours of Img(i, j), the ring) / 8        1 <= i < N-1, ...
        Img(i, j) = |R(i, j) - R(i+1, j+1)| + |R(i+1, j) - R(i, j+1)|    1 <= i < N-2, ...

    ``Img`` is an output Buffer read through memory (``img[i, j, c]``), so that ``R`` sees
    its content when it runs. The middle-end has no in/out buffer (a read of an output
    buffer's initial content is an UnproducedReadError and an Input cannot be written), so
    ``load`` copies the input image into ``Img`` first."""
    with Function("edge") as f:
        n, m = (Param("N"), Param("M")) if shape is None else shape
        inp = Input("inp", [n, m, 3], float32)
        img = Buffer("Img", [n, m, 3], float32, kind=OUTPUT)
        c = Var("c", 0, 3)
        ia, ja = Var("i", 0, n), Var("j", 0, m)
        load = Computation("load", [ia, ja, c], inp[ia, ja, c])
        load.store_in(img, [ia, ja, c])
        i, j = Var("i", 1, n - 1), Var("j", 1, m - 1)
        ring = (img[i - 1, j - 1, c] + img[i - 1, j, c] + img[i - 1, j + 1, c]
                + img[i, j - 1, c] + img[i, j + 1, c]
                + img[i + 1, j - 1, c] + img[i + 1, j, c] + img[i + 1, j + 1, c])
        R = Computation("R", [i, j, c], ring / 8)
        io, jo = Var("i", 1, n - 2), Var("j", 1, m - 2)
        out = Computation("out", [io, jo, c],
                          call("abs", R[io, jo, c] - R[io + 1, jo + 1, c])
                          + call("abs", R[io + 1, jo, c] - R[io, jo + 1, c]))
        out.store_in(img, [io, jo, c])
    return EdgeDetector(f, load, R, out)


def schedule_edge_detector(p: EdgeDetector, vf: int = 16) -> EdgeDetector:
    """The tuned schedule: one sequential pass over rows, j vectorized with the 3 channels
    innermost (contiguous [j][c] elements, as in blurxy). Iteration k loads row k + 1,
    blurs row k and writes the edges of row k - 1 (shifts -1 / +1, fused with ``after``);
    R then needs only 2 rows (``storage_fold``), so the pass reads the input once and writes
    Img once. Legal only because out row k - 1 runs after R row k has read Img row k - 1:
    the check refuses the fusion without the shifts, and refuses a parallel k (out row k
    overwrites what R row k + 1 reads: a loop-carried anti-dependence). Being memory bound,
    it beats the parallel three-pass schedule (:func:`schedule_edge_parallel`) on 2 cores."""
    p.load.shift("i", -1)
    p.out.shift("i", 1)
    p.R.after(p.load, "i")
    p.out.after(p.R, "i")
    p.R.storage_fold(0, 2)
    for comp in (p.load, p.R, p.out):
        comp.vectorize("j", vf)
    return p


def schedule_edge_parallel(p: EdgeDetector, vf: int = 8) -> EdgeDetector:
    """Three separate passes (load, R, out), each over rows in parallel, j vectorized with
    c innermost: the parallel schedule the cycle allows (a fused row loop cannot be
    parallel), at the cost of a full-size R and three sweeps over memory."""
    for comp in (p.load, p.R, p.out):
        comp.vectorize("j", vf)
        comp.parallelize("i")
    return p


def edge_detector_ref(a: np.ndarray) -> np.ndarray:
    """The anchor: ring blur then Roberts edges with numpy slices (same summation order)."""
    img = a.copy()
    r = a[:-2, :-2] + a[:-2, 1:-1]
    for di, dj in ((0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2)):
        r += a[di:a.shape[0] - 2 + di, dj:a.shape[1] - 2 + dj]
    r /= np.float32(8)  # R[k] is the blur at row/col k + 1
    d1 = r[:-1, :-1] - r[1:, 1:]
    np.abs(d1, out=d1)
    d2 = r[1:, :-1] - r[:-1, 1:]
    np.abs(d2, out=d2)
    np.add(d1, d2, out=img[1:-2, 1:-2])
    return img
