"""The papers' Halide benchmarks: Halide 21 vs. the same pipeline compiled by the middle-end.

Each pipeline (``frontends/halide/paper.py``) is built once with its expert schedule; Halide
JIT-compiles it, the middle-end compiles the very same Func objects through the Halide
front-end, so both sides run the same algorithm *and* the same schedule on the same data.
Timing is interleaved best-of-N in one process (``common.best_of_interleaved``); only the
ratios mean anything on a shared machine. ratio = ours ms / Halide ms (< 1: we are faster;
the issue's target is <= 1.0).

Two more rows give the fused schedules Halide cannot apply (the papers' point): for nb the
two outputs computed in one loop nest (``extra_schedule`` on the translated pipeline), for
rgbyuv420 the Y, U and V planes computed in one pass over 2x2 blocks (written with the
middle-end's API). They are compared with Halide's best schedule of the same pipeline.

The three programs Halide cannot express (ticket #2373, heat3D, edgeDetector) run against
numpy, from ``beyond.py``.

    python benchmarks/halide/compare.py [--reps N] [--rows R --cols C]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import common  # noqa: E402,F401  (sets up the import path)
import halide as hl  # noqa: E402
import numpy as np  # noqa: E402
from common import best_of_interleaved, print_table  # noqa: E402

import middleend as me  # noqa: E402
from frontends.halide import compile_pipeline  # noqa: E402
from frontends.halide.paper import ALL, Bench  # noqa: E402
from frontends.halide.translate import Built  # noqa: E402

ROWS, COLS = 2112, 3520


def halide_runner(b: Bench) -> Callable[[], object]:
    """Halide's JIT-compiled pipelines (compiled here, outside the timing)."""
    b.set_inputs()
    pipes = [(hl.Pipeline(funcs), sizes) for funcs, sizes in b.groups]
    for p, _ in pipes:
        p.compile_jit()

    def run() -> object:
        return [p.realize(sizes) for p, sizes in pipes]

    return run


def ours_runner(b: Bench, extra: Callable[[Built], None] | None = None
                ) -> Callable[[], object]:
    ks = [(compile_pipeline(funcs, extra_schedule=extra), sizes) for funcs, sizes in b.groups]
    for k, sizes in ks:
        k.realize(sizes, **b.inputs)  # compile outside the timing

    def run() -> object:
        return [k.realize(sizes, **b.inputs) for k, sizes in ks]

    return run


def check(b: Bench, ours: list[Any]) -> None:
    flat = [a for r in ours for a in (r if isinstance(r, list) else [r])]
    for a, ref in zip(flat, b.halide_realize(), strict=True):
        np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-5, err_msg=b.name)


def fuse_nb(b: Bench) -> Callable[[Built], None]:
    """nb fused: ``brightened`` in the loop nest of ``negative`` (same loops, one pass over
    the input); Halide has no command for fusing the loops of two outputs."""
    neg_name, bright_name = (f.name() for f in b.groups[0][0])

    def hook(built: Built) -> None:
        neg = built.comps[neg_name][0][0]
        bright = built.comps[bright_name][0][0]
        inner = list(built.loops[bright_name][0].values())[-1]
        bright.after(neg, inner)

    return hook


def rgbyuv420_fused(rows: int, cols: int) -> tuple[me.Function, list[me.Computation]]:
    """Y, U, V in one pass over 2x2 blocks: Y's rows split by 2 and U, V computed after
    each block row pair (same yo, xo loops); written with the middle-end's API."""
    with me.Function("yuv420_fused") as f:
        inp = me.Input("inp", [3, rows, cols], me.float32)
        y, x = me.Var("y", 0, rows), me.Var("x", 0, cols)
        hy, hx = me.Var("hy", 0, rows // 2), me.Var("hx", 0, cols // 2)
        w = (0.299, 0.587, 0.114)
        yp = me.Computation("y_plane", [y, x], sum(
            me.expr.wrap(w[k]) * inp[k, y, x] for k in range(3)))

        def avg(k: int) -> me.Expr:
            return (inp[k, 2 * hy, 2 * hx] + inp[k, 2 * hy, 2 * hx + 1]
                    + inp[k, 2 * hy + 1, 2 * hx] + inp[k, 2 * hy + 1, 2 * hx + 1]) * 0.25

        u = me.Computation("u_plane", [hy, hx], -0.147 * avg(0) - 0.289 * avg(1)
                           + 0.436 * avg(2) + 0.5)
        v = me.Computation("v_plane", [hy, hx], 0.615 * avg(0) - 0.515 * avg(1)
                           - 0.100 * avg(2) + 0.5)
        yp.split("y", 2, "yo", "yi")
        yp.parallelize("yo")
        yp.vectorize("x", 8, "xo", "xi")
        u.vectorize("hx", 8, "hxo", "hxi")
        v.vectorize("hx", 8, "hxo", "hxi")
        u.after(yp, "hy")
        v.after(u, "hxi")
    return f, [yp, u, v]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--cols", type=int, default=COLS)
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    rows: list[list[object]] = []
    for name, mk in ALL.items():
        if a.only and name not in a.only:
            continue
        b = mk(a.rows, a.cols, "expert")
        h, o = halide_runner(b), ours_runner(b)
        check(b, o())  # type: ignore[arg-type]
        t = best_of_interleaved({"halide": h, "ours": o}, reps=a.reps)
        rows.append([name, "expert (same)", f"{t['halide'] * 1e3:.2f}",
                     f"{t['ours'] * 1e3:.2f}", f"{t['ours'] / t['halide']:.2f}"])
    if not a.only or "nb" in a.only:
        best = {s: halide_runner(ALL["nb"](a.rows, a.cols, s)) for s in ("default", "expert")}
        b = ALL["nb"](a.rows, a.cols, "expert")
        fused = ours_runner(b, fuse_nb(b))
        check(b, fused())  # type: ignore[arg-type]
        t = best_of_interleaved({**best, "fused": fused}, reps=a.reps)
        hb = min(t["default"], t["expert"])
        rows.append(["nb", "fused (ours) vs Halide best", f"{hb * 1e3:.2f}",
                     f"{t['fused'] * 1e3:.2f}", f"{t['fused'] / hb:.2f}"])
    if not a.only or "rgbyuv420" in a.only:
        best = {s: halide_runner(ALL["rgbyuv420"](a.rows, a.cols, s))
                for s in ("default", "expert")}
        b = ALL["rgbyuv420"](a.rows, a.cols, "expert")
        fn, comps = rgbyuv420_fused(a.rows, a.cols)
        k = fn.compile(outputs=comps)
        img = b.inputs["inp"]
        res = k(inp=img)
        check(b, [[res[c.name] for c in comps]])

        def fused() -> object:
            return k(inp=img)

        t = best_of_interleaved({**best, "fused": fused}, reps=a.reps)
        hb = min(t["default"], t["expert"])
        rows.append(["rgbyuv420", "fused (ours) vs Halide best", f"{hb * 1e3:.2f}",
                     f"{t['fused'] * 1e3:.2f}", f"{t['fused'] / hb:.2f}"])
    print_table(f"Halide vs middle-end, {a.rows}x{a.cols} RGB float32 (ratio = ours / Halide)",
                ["benchmark", "schedule", "Halide ms", "ours ms", "ratio"], rows)
    try:
        import beyond  # type: ignore[import-not-found]
    except ImportError:
        return
    brows = [[n, f"{o:.2f}", f"{np_:.2f}", f"{np_ / o:.2f}"] for n, o, np_ in beyond.rows(a.reps)]
    print_table("Beyond Halide (ratio = numpy / ours)",
                ["benchmark", "ours ms", "numpy ms", "ratio"], brows)


if __name__ == "__main__":
    main()
