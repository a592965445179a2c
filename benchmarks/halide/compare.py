"""The papers' Halide benchmarks: Halide 21 vs. the same pipeline compiled by the middle-end.

Each pipeline (``frontends/halide/paper.py``: the 7 RGB pipelines and heat2D) is built once
with its expert schedule; Halide JIT-compiles it, the middle-end compiles the very same Func
objects through the Halide front-end, so both sides run the same algorithm *and* the same
schedule on the same input arrays. Both sides write into outputs preallocated once outside
the timing: Halide ``Pipeline.realize(buffers)`` with ``hl.Buffer`` views of numpy arrays,
ours ``realize(sizes, out=arrays)``, as a user who calls a pipeline in a loop would (an
allocating call pays for the page faults of a fresh output, 89 MB for a 2112x3520 RGB
float32 image, on every call). The allocating figures (``realize(sizes)`` on both sides)
are printed beside them, timed in the same run.

Before timing, every output of both sides (preallocated and allocating) is checked against
Halide's own ``realize``. Timing: ``common.samples_interleaved``, all candidates of a row
alternating in one process, one untimed warm-up call per turn; printed: the best of N per
side, its spread ((median - best) / best), and ratio = ours ms / Halide ms (< 1: we are
faster; the issue's target is <= 1.0), and the ratio of the medians. Only the ratios mean
anything on a shared machine. ``--busy`` runs the whole benchmark beside a process that
spins at the same priority (``common.busy_neighbour``): the loaded-machine figure, where the
median ratio is the one to read (the best call of a side is whichever one the scheduler
happened to spare; single best-of-N ratios of one code ranged 0.57-1.40 in such runs).

Two more rows give the fused schedules Halide cannot apply (the papers' point): for nb the
two outputs computed in one loop nest (``extra_schedule`` on the translated pipeline), for
rgbyuv420 the Y, U and V planes computed in one pass over 2x2 blocks (written with the
middle-end's API; its kernel called with the preallocated outputs by name). They are
compared with Halide's best schedule (default or expert, the faster in this run) of the
same pipeline.

The three programs Halide cannot express (ticket #2373, heat3D, edgeDetector) run against
numpy, from ``beyond.py``.

    python benchmarks/halide/compare.py [--reps N] [--rows R --cols C] [--only NAME ...]
        [--busy] [--fma]"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import common  # noqa: E402,F401  (sets up the import path)
import halide as hl  # noqa: E402
import numpy as np  # noqa: E402
from common import (  # noqa: E402
    BUSY_HELP,
    MIN_REPS,
    busy_neighbour,
    median_ratio,
    print_table,
    samples_interleaved,
    spread,
)

import middleend as me  # noqa: E402
from frontends.halide import compile_pipeline  # noqa: E402
from frontends.halide.paper import ALL, Bench  # noqa: E402
from frontends.halide.translate import Built  # noqa: E402

ROWS, COLS = 2112, 3520


@dataclass
class Runner:
    """One side of a row: ``pre`` writes into outputs preallocated once (``outs``, numpy
    arrays; Halide's ``hl.Buffer``s wrap them), ``alloc`` allocates its outputs per call."""

    pre: Callable[[], list[Any]]
    alloc: Callable[[], list[Any]]
    outs: list[np.ndarray]


def _as_list(r: Any) -> list[np.ndarray]:
    return [np.asarray(r)] if isinstance(r, hl.Buffer | np.ndarray) else [np.asarray(x)
                                                                          for x in r]


def halide_runner(b: Bench, strict: bool = False) -> Runner:
    """Halide's JIT-compiled pipelines (compiled here, outside the timing); ``pre`` is
    ``Pipeline.realize(buffer_or_list)``, ``alloc`` is ``Pipeline.realize(sizes)``.
    ``strict``: built for the host target with ``strict_float``, Halide's float semantics
    made ours (no reassociation, no fused multiply-adds): the same values bit for bit."""
    b.set_inputs()
    pipes = []
    outs: list[np.ndarray] = []
    target = hl.get_jit_target_from_environment()
    if strict:
        target = target.with_feature(hl.TargetFeature.StrictFloat)
    for funcs, sizes in b.groups:
        p = hl.Pipeline(funcs)
        p.compile_jit(target)
        arrays = [np.empty_like(a) for a in _as_list(p.realize(sizes))]
        bufs = [hl.Buffer(a) for a in arrays]  # views of the arrays (axes reversed)
        pipes.append((p, sizes, bufs[0] if len(bufs) == 1 else bufs))
        outs += arrays

    def pre() -> list[Any]:
        for p, _, dst in pipes:
            p.realize(dst)
        return outs

    def alloc() -> list[Any]:
        return [p.realize(sizes) for p, sizes, _ in pipes]

    return Runner(pre, alloc, outs)


def ours_runner(b: Bench, extra: Callable[[Built], None] | None = None,
                fp_contract: bool = False) -> Runner:
    """The same Funcs through the front-end; ``pre`` is ``realize(sizes, out=...)``
    (``fp_contract``: built with fused multiply-adds allowed, as Halide builds by
    default)."""
    ks = []
    outs: list[np.ndarray] = []
    for funcs, sizes in b.groups:
        k = compile_pipeline(funcs, extra_schedule=extra, fp_contract=fp_contract)
        arrays = [np.empty_like(a) for a in _as_list(k.realize(sizes, **b.inputs))]
        ks.append((k, sizes, arrays[0] if len(arrays) == 1 else arrays))
        outs += arrays

    def pre() -> list[Any]:
        for k, sizes, dst in ks:
            k.realize(sizes, out=dst, **b.inputs)
        return outs

    def alloc() -> list[Any]:
        return [k.realize(sizes, **b.inputs) for k, sizes, _ in ks]

    return Runner(pre, alloc, outs)


def check(name: str, ref: list[np.ndarray], runner: Runner, exact: bool = False) -> None:
    """The preallocated outputs (NaN before) after one ``pre`` call, and one ``alloc``
    call's results, equal Halide's ``b.halide_realize()`` (``exact``: bit for bit, for
    Halide's own runs of the same schedule)."""
    for a in runner.outs:
        a.fill(np.nan)
    for got in (runner.pre(), runner.alloc()):
        flat = [a for r in got for a in _as_list(r)]
        assert len(flat) == len(ref), (name, len(flat), len(ref))
        for a, want in zip(flat, ref, strict=True):
            if exact:
                np.testing.assert_array_equal(a, want, err_msg=name)
            else:
                np.testing.assert_allclose(a, want, rtol=1e-4, atol=1e-5, err_msg=name)


def timed_row(name: str, schedule: str, halide: dict[str, Runner], ours: Runner,
              reps: int, fma: Runner | None = None,
              strict: Runner | None = None) -> list[object]:
    """Time all the candidates interleaved in one run (preallocated and allocating, ours
    and each Halide schedule, ``fma``, ours built with fused multiply-adds, and
    ``strict``, Halide built with strict_float, if given); the Halide figure is the best
    of its schedules."""
    fns: dict[str, Callable[[], object]] = {}
    if fma is not None:
        fns["ours fma"] = fma.pre
    if strict is not None:
        fns["halide strict"] = strict.pre
    for s, r in halide.items():
        fns[f"halide {s}"] = r.pre
        fns[f"halide {s} alloc"] = r.alloc
    fns["ours"], fns["ours alloc"] = ours.pre, ours.alloc
    t = samples_interleaved(fns, reps=reps)
    hs = min((f"halide {s}" for s in halide), key=lambda n: min(t[n]))
    ha = min((f"halide {s} alloc" for s in halide), key=lambda n: min(t[n]))
    h, o = min(t[hs]), min(t["ours"])
    h_a, o_a = min(t[ha]), min(t["ours alloc"])
    return [name, schedule, f"{h * 1e3:.2f}", f"{spread(t[hs]) * 100:.0f}%",
            f"{o * 1e3:.2f}", f"{spread(t['ours']) * 100:.0f}%", f"{o / h:.2f}",
            f"{median_ratio(t['ours'], t[hs]):.2f}",
            f"{h_a * 1e3:.2f}", f"{o_a * 1e3:.2f}", f"{o_a / h_a:.2f}",
            f"{min(t['ours fma']) / h:.2f}" if fma is not None else "-",
            f"{o / min(t['halide strict']):.2f}" if strict is not None else "-"]


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
        yp = me.Computation("y_plane", [y, x], w[0] * inp[0, y, x] + w[1] * inp[1, y, x]
                            + w[2] * inp[2, y, x])

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
    ap.add_argument("--busy", action="store_true", help=BUSY_HELP)
    ap.add_argument("--fma", action="store_true",
                    help="also time ours built with fused multiply-adds (fp_contract), as "
                    "Halide builds by default: the fma ratio column")
    ap.add_argument("--strict", action="store_true",
                    help="also time Halide built with strict_float (no reassociation, no "
                    "fused multiply-adds: our float semantics; its outputs must equal ours "
                    "bit for bit): the strict ratio column")
    a = ap.parse_args()
    with busy_neighbour(a.busy):
        run(a)


def run(a: argparse.Namespace) -> None:
    """Build, check and time every row of ``a``'s selection, then print the tables."""
    rows: list[list[object]] = []
    for name, mk in ALL.items():
        if a.only and name not in a.only:
            continue
        b = mk(a.rows, a.cols, "expert")
        ref = b.halide_realize()
        h, o = halide_runner(b), ours_runner(b)
        check(name, ref, h, exact=True)
        check(name, ref, o)
        of = ours_runner(b, fp_contract=True) if a.fma else None
        if of is not None:
            check(name + " fma", ref, of)
        st = halide_runner(b, strict=True) if a.strict else None
        if st is not None:  # the same semantics on both sides: the same bits
            check(name + " strict_float", [x.copy() for x in o.pre()], st, exact=True)
        rows.append(timed_row(name, "expert (same)", {"expert": h}, o, a.reps, of, st))
    if not a.only or "nb" in a.only:
        b = ALL["nb"](a.rows, a.cols, "expert")
        ref = b.halide_realize()
        best = {}
        for s in ("default", "expert"):
            bs = ALL["nb"](a.rows, a.cols, s)
            bs.inputs = b.inputs  # the very same arrays on every side
            best[s] = halide_runner(bs)
            check("nb " + s, ref, best[s], exact=s == "expert")
        fused = ours_runner(b, fuse_nb(b))
        check("nb fused", ref, fused)
        rows.append(timed_row("nb", "fused (ours) vs Halide best", best, fused, a.reps))
    if not a.only or "rgbyuv420" in a.only:
        b = ALL["rgbyuv420"](a.rows, a.cols, "expert")
        ref = b.halide_realize()
        best = {}
        for s in ("default", "expert"):
            bs = ALL["rgbyuv420"](a.rows, a.cols, s)
            bs.inputs = b.inputs
            best[s] = halide_runner(bs)
            check("rgbyuv420 " + s, ref, best[s], exact=s == "expert")
        fn, comps = rgbyuv420_fused(a.rows, a.cols)
        k = fn.compile(outputs=comps)
        img = b.inputs["inp"]
        names = [c.name for c in comps]
        dst = {n: np.empty_like(r) for n, r in zip(names, ref, strict=True)}

        def pre() -> list[Any]:
            k(inp=img, **dst)
            return list(dst.values())

        def alloc() -> list[Any]:
            res = k(inp=img)
            return [res[n] for n in names]

        ours = Runner(pre, alloc, list(dst.values()))
        check("rgbyuv420 fused", ref, ours)
        rows.append(timed_row("rgbyuv420", "fused (ours) vs Halide best", best, ours, a.reps))
    print_table(f"Halide vs middle-end, {a.rows}x{a.cols} float32 images, best of "
                f"{max(a.reps, MIN_REPS)} interleaved (ratio = ours / Halide)",
                ["benchmark", "schedule", "Halide ms", "spread", "ours ms", "spread", "ratio",
                 "median ratio", "alloc Halide ms", "alloc ours ms", "alloc ratio",
                 "fma ratio", "strict ratio"], rows)
    print("ms, ratio: both sides write into outputs preallocated once (Halide "
          "realize(buffers), ours realize(out=)); spread: (median - best) / best of that side;"
          "\nmedian ratio: ours' median over Halide's (the figure to read with --busy"
          + (", as in this run" if a.busy else "") + ");"
          "\nfma ratio (--fma): ours built with fused multiply-adds, as Halide builds by "
          "default (x86 with FMA: its code has vfmadd), over Halide's time;"
          "\nstrict ratio (--strict): ours over Halide built with strict_float (our float "
          "semantics: its outputs equal ours bit for bit, checked);"
          "\nalloc: both sides allocate their outputs per call (realize(sizes)), timed in the "
          "same interleaved run.", flush=True)
    try:
        import beyond  # type: ignore[import-not-found]
    except ImportError:
        return
    brows = [[n, f"{o:.2f}", f"{np_:.2f}", f"{np_ / o:.2f}"] for n, o, np_ in beyond.rows(a.reps)]
    print_table("Beyond Halide (ratio = numpy / ours)",
                ["benchmark", "ours ms", "numpy ms", "ratio"], brows)


if __name__ == "__main__":
    main()
