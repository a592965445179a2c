"""The middle-end's auto-scheduler against the anchors, side by side in one run.

Halide: each paper pipeline (``frontends/halide/paper.py``) and app (``apps.py``) is built
without a schedule (Halide's default) and compiled three ways on the same input arrays:
ours (``compile_pipeline(..., schedule="auto")``), each of Halide 21's four autoschedulers
(``halide/autoschedulers.py``: the plugins of the pip wheel, with the machine's core count
and last-level cache), and the expert schedule where one exists (the paper pipelines'
``schedule="expert"``; the bilateral grid's, interpolate's and the local Laplacian's, the
CPU schedules of Halide's own apps; the stencil chain per tile, vectorized, over the
cores), Halide-compiled. Every side writes into outputs preallocated once; every output is
checked against Halide's own realize of the unscheduled pipeline (for the apps: every stage
at the root) before anything is timed; a Halide autoscheduler whose output differs is shown
as "wrong" and not timed (ours or the expert differing stops the run).

Julia: each PolyBench kernel (``frontends/julia/kernels.jl``) compiled with
``schedule="auto"``, with no schedule, and with its hand-written ``@schedule`` (the
expert), against numpy's formulation (``frontends/julia/paper.py``), all on the same
arrays, results checked against the numpy reference first.

Timing: ``common.samples_interleaved``, every candidate of a row taking turns, best of N;
only the ratios mean anything on a shared machine (ratio = ours / anchor; below 1: ours
faster). "search s" is the wall time of the scheduling itself (in a cache of the run's
own, so nothing comes from an earlier run): ours, the auto-schedule phase of the compile
(the analytical mode: no candidate is built); Halide's, its ``apply_autoscheduler`` and
the JIT compile.

The apps' reference is Halide's realize of the same app with every stage at the root
(Halide's JIT of the inlined interpolate runs for over 25 minutes).

    python benchmarks/autoschedule.py [--reps 5] [--only NAME,...] [--rows R --cols C]
        [--skip-halide] [--skip-julia] [--small] [--tune]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "halide"))

import common  # noqa: E402,F401  (sets up the import path)
import halide as hl  # noqa: E402
import numpy as np  # noqa: E402
from autoschedulers import AUTOSCHEDULERS, Anchored, autoschedule, autoschedule_bench  # noqa: E402
from common import print_table, samples_interleaved  # noqa: E402

from frontends.halide import apps as happs  # noqa: E402
from frontends.halide import compile_pipeline  # noqa: E402
from frontends.halide.paper import ALL, Bench  # noqa: E402
from frontends.julia import compile_source  # noqa: E402
from frontends.julia.paper import KERNELS, source  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
# local_laplacian only with --only: Adams2019 searches it for 6 minutes here (and every
# Halide schedule's uint16 output moves by up to 193 from its root build's in ~300 pixels:
# float rounding spread by the pyramid; halide/autoschedulers.py --strict shows it)
APPS = ("bilateral_grid", "interpolate", "stencil_chain")
BUILDERS = {**happs.APPS, "stencil_chain": happs.stencil_chain}
WRONG = "its output differs from Halide's own"  # an anchor left out of the timing
# the share of an app's elements that may differ by more than 1 from Halide's root build
# (see _same)
LOOSE = {"local_laplacian": 1e-3}
# the apps' expert schedules: Halide's own apps' CPU schedules; the stencil chain tiled as
# an expert writes it, every stage per tile, the tiles' rows over the cores, vectorized
EXPERTS = {"bilateral_grid": happs.EXPERT, "interpolate": happs.EXPERT,
           "local_laplacian": happs.EXPERT, "stencil_chain": happs.TILED_VECTORIZED}


def _as_list(r: Any) -> list[np.ndarray]:
    return [np.asarray(r)] if isinstance(r, hl.Buffer | np.ndarray) else [np.asarray(x)
                                                                          for x in r]


def _app_reference(app: happs.App) -> list[np.ndarray]:
    """Halide's own realize of the app (its inputs set first): built with every stage
    compute_root, the same values as the unscheduled app's (tests/test_halide_apps.py),
    which Halide's JIT takes over 25 minutes to run for interpolate."""
    _app_reference_inputs(app)
    return [np.asarray(hl.Pipeline([app.output]).realize(app.sizes))]


def _app_expert(app: happs.App, name: str, ref: list[np.ndarray]) -> Callable[[], object]:
    """An app with its own (expert) schedule, Halide-compiled, into an output preallocated
    once; its output checked against ``ref`` first."""
    _app_reference_inputs(app)
    p = hl.Pipeline([app.output])
    p.compile_jit(hl.get_jit_target_from_environment())
    first = np.asarray(p.realize(app.sizes))
    _same(name, "the expert schedule", [first], ref, LOOSE.get(name, 0.0))
    dst = hl.Buffer(np.empty_like(first))

    def run() -> None:
        _app_reference_inputs(app)
        p.realize(dst)

    return run


def _app_reference_inputs(app: happs.App) -> None:
    for p, v in app.inputs:
        if isinstance(p, hl.ImageParam):
            p.set(hl.Buffer(np.asarray(v)))
        else:
            t = p.type()
            p.set(float(v) if t.is_float() else int(v))


def _search_s(kernel: Any) -> float:
    return sum(t.seconds for t in getattr(kernel, "timings", ()) if t.phase == "auto-schedule")


def _same(name: str, who: str, got: list[np.ndarray], want: list[np.ndarray],
          spread: float = 0.0) -> None:
    """``got`` equals ``want``: floats within RTOL / ATOL, integers within 1, and with
    ``spread``, integers further off allowed in that share of the elements (the local
    Laplacian: Halide's ``exp`` is its own polynomial and its schedules reassociate float
    sums; a value one ulp away picks the next entry of the remapping table or the next
    pyramid level, which moves the pixel by up to 193: in 300 of the 5.6 million pixels
    between Halide's schedules, in 27 of 180000 between ours at the root and Halide's
    strict_float build at 300 x 200)."""
    assert len(got) == len(want), (name, who, len(got), len(want))
    for g, w in zip(got, want, strict=True):
        what = ""
        if w.dtype.kind in "iu":
            d = np.abs(g.astype(np.int64) - w.astype(np.int64))
            share = float((d > 1).mean()) if d.size else 0.0
            ok = share <= spread
            what = f" ({share:.2e} of the elements off by more than 1, up to {d.max()})"
        else:
            ok = np.allclose(g, w, rtol=RTOL, atol=ATOL)
        if not ok:
            raise AssertionError(f"{name}: {who}'s output differs from Halide's{what}")


def _ours(groups: list[tuple[list[hl.Func], list[int]]], inputs: dict[str, Any]
          ) -> tuple[Callable[[], object], list[np.ndarray], float]:
    """Our auto-scheduled kernels of ``groups`` (compiled here): a call into outputs
    preallocated once, the outputs, the search seconds."""
    parts, outs, search = [], [], 0.0
    for funcs, sizes in groups:
        k = compile_pipeline(funcs, schedule="auto")
        first = _as_list(k.realize(sizes, **inputs))
        search += _search_s(k.build(sizes, **inputs)[1])
        arrays = [np.empty_like(a) for a in first]
        parts.append((k, sizes, arrays[0] if len(arrays) == 1 else arrays))
        outs += arrays

    def run() -> list[np.ndarray]:
        for k, sizes, dst in parts:
            k.realize(sizes, out=dst, **inputs)
        return outs

    return run, outs, search


def _expert(b: Bench) -> Callable[[], object]:
    b.set_inputs()
    pipes = []
    for funcs, sizes in b.groups:
        p = hl.Pipeline(funcs)
        p.compile_jit(hl.get_jit_target_from_environment())
        bufs = [hl.Buffer(a) for a in (np.empty_like(x) for x in _as_list(p.realize(sizes)))]
        pipes.append((p, bufs[0] if len(bufs) == 1 else bufs))

    def run() -> None:
        b.set_inputs()
        for p, dst in pipes:
            p.realize(dst)

    return run


def _row(name: str, ours: tuple[Callable[[], object], list[np.ndarray], float],
         anchors: dict[str, Anchored], expert: Callable[[], object] | None,
         reps: int) -> list[object]:
    fns: dict[str, Callable[[], object]] = {"ours": ours[0]}
    for s, a in anchors.items():
        if a.run is not None:
            fns[s] = a.run
    if expert is not None:
        fns["expert"] = expert
    t = {k: min(v) for k, v in samples_interleaved(fns, reps=reps).items()}
    row: list[object] = [name, f"{t['ours'] * 1e3:.2f}", f"{ours[2]:.2f}"]
    for s in AUTOSCHEDULERS:
        a = anchors[s]
        row.append(f"{t[s] * 1e3:.2f} ({a.search_s:.1f}s)" if s in t
                   else "wrong" if a.why == WRONG else "refused")
    done = [s for s in AUTOSCHEDULERS if s in t]
    if done:
        best = min(done, key=lambda s: t[s])
        row += [best, f"{t['ours'] / t[best]:.2f}"]
    else:
        row += ["-", "-"]
    row += ([f"{t['expert'] * 1e3:.2f}", f"{t['ours'] / t['expert']:.2f}"]
            if "expert" in t else ["-", "-"])
    return row


def halide_rows(a: argparse.Namespace, names: list[str]) -> list[list[object]]:
    rows: list[list[object]] = []
    for name in names:
        if name in ALL:
            def make(n: str = name) -> Bench:
                return ALL[n](a.rows, a.cols, schedule="default")
            ref = make().halide_realize()
            b = make()
            ours = _ours(b.groups, b.inputs)
            anchors = {s: autoschedule_bench(make, s) for s in AUTOSCHEDULERS}
            expert: Callable[[], object] | None = _expert(ALL[name](a.rows, a.cols,
                                                                    schedule="expert"))
        else:
            kw = {"levels": 4} if name in ("interpolate", "local_laplacian") else {}
            app = BUILDERS[name](a.rows, a.cols, schedule="inline", **kw)
            ref = _app_reference(BUILDERS[name](a.rows, a.cols, schedule="root", **kw))
            ours = _ours([([app.output], app.sizes)], app.by_name())
            anchors = {}
            for s in AUTOSCHEDULERS:
                fresh = BUILDERS[name](a.rows, a.cols, schedule="inline", **kw)
                anchors[s] = autoschedule([fresh.output], fresh.sizes, fresh.inputs, s)
            expert = _app_expert(BUILDERS[name](a.rows, a.cols, schedule=EXPERTS[name], **kw),
                                 name, ref) if name in EXPERTS else None
        ours[0]()
        _same(name, "ours (auto)", ours[1], ref, LOOSE.get(name, 0.0))
        for s, anc in list(anchors.items()):
            if anc.run is not None:
                anc.run()
                try:
                    _same(name, s, anc.outputs, ref, LOOSE.get(name, 0.0))
                except AssertionError as e:  # an anchor's wrong result is shown, not timed
                    print(f"{e}: not timed", flush=True)
                    anchors[s] = dataclasses.replace(anc, run=None, why=WRONG)
        rows.append(_row(name, ours, anchors, expert, a.reps))
        print(f"{name}: checked and timed", flush=True)
    return rows


def _fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(x.copy(order="K") if isinstance(x, np.ndarray) else x for x in args)


def julia_rows(a: argparse.Namespace, names: list[str]) -> list[list[object]]:
    rows: list[list[object]] = []
    src = source()
    for n in names:
        kd = KERNELS[n]
        args = kd.make(kd.small if a.small else kd.large, np.random.default_rng(0))
        kinds: dict[str, bool | str] = {"auto": "auto", "unsched": False, "expert": True}
        if a.tune:
            kinds["tuned"] = "tune"  # tuned on the first call's arguments, outside the timing
        ks = {k: compile_source(src, n, schedule=v) for k, v in kinds.items()}
        data = {k: _fresh(args) for k in ks}
        for k, kern in ks.items():
            kern(*data[k])  # compiles, outside the timing
        want = kd.reference(args)
        for k in ks:
            for pos, ref in want.items():
                if not np.allclose(data[k][pos], ref, rtol=1e-9, atol=1e-9):
                    raise AssertionError(f"{n} {k}: argument {pos} differs from numpy's")
        search = _search_s(ks["auto"].compiled(ks["auto"].spec_of(args)).kernel)
        fns: dict[str, Callable[[], object]] = {
            k: (lambda kern=kern, x=data[k]: kern(*x)) for k, kern in ks.items()}
        if kd.numpy is not None:
            fns["numpy"] = lambda f=kd.numpy, x=args: f(x)
        t = {k: min(v) for k, v in samples_interleaved(fns, reps=a.reps).items()}
        npy = t.get("numpy")
        rows.append([n, f"{t['auto'] * 1e3:.3f}", f"{search:.2f}",
                     f"{npy * 1e3:.3f}" if npy else "-",
                     f"{t['auto'] / npy:.2f}" if npy else "-",
                     f"{t['unsched'] * 1e3:.3f}", f"{t['unsched'] / t['auto']:.2f}x",
                     f"{t['expert'] * 1e3:.3f}", f"{t['auto'] / t['expert']:.2f}"]
                    + ([f"{t['tuned'] * 1e3:.3f}",
                        f"{t['tuned'] / npy:.2f}" if npy else "-"] if a.tune else []))
        print(f"{n}: checked and timed", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated pipeline / kernel names")
    ap.add_argument("--rows", type=int, default=1056)
    ap.add_argument("--cols", type=int, default=1760)
    ap.add_argument("--skip-halide", action="store_true")
    ap.add_argument("--skip-julia", action="store_true")
    ap.add_argument("--tune", action="store_true",
                    help="also the Julia kernels with schedule='tune' (built and timed on "
                         "the benchmark's arrays first: minutes)")
    ap.add_argument("--small", action="store_true",
                    help="the Julia kernels at the tests' small sizes (a quick check)")
    a = ap.parse_args()
    only = [x for x in a.only.split(",") if x]
    bad = [n for n in only if n not in {*ALL, *BUILDERS, *KERNELS}]
    if bad:
        ap.error(f"--only: no pipeline or kernel {', '.join(map(repr, bad))} (pipelines: "
                 f"{', '.join(sorted(ALL))}; apps: {', '.join(BUILDERS)}; kernels: "
                 f"{', '.join(KERNELS)})")
    # an app outside the default run (local_laplacian) runs when --only names it
    apps = [*APPS, *(n for n in only if n in BUILDERS and n not in APPS)]
    # a fresh cache, so that every compile searches (a kernel built by an earlier run is a
    # cache hit, with no search to time)
    scratch = tempfile.TemporaryDirectory(prefix="autoschedule-bench-")
    os.environ["MIDDLEEND_CACHE_DIR"] = scratch.name
    warnings.simplefilter("ignore", RuntimeWarning)  # Halide's float32 literal warnings
    if not a.skip_halide:
        for title, group in (("paper pipelines", sorted(ALL)), ("apps", apps)):
            names = [n for n in group if not only or n in only]
            if not names:
                continue
            rows = halide_rows(a, names)
            print_table(f"Halide {title} at {a.cols}x{a.rows}, best of {a.reps} "
                        "interleaved, ms (ratio = ours auto / anchor; < 1: ours faster)",
                        ["pipeline", "ours auto", "search s", *AUTOSCHEDULERS,
                         "best Halide AS", "ratio", "expert", "ratio"], rows)
    if not a.skip_julia:
        names = [n for n in KERNELS if not only or n in only]
        rows = julia_rows(a, names)
        print_table(f"Julia PolyBench kernels, best of {a.reps} interleaved, ms (ratio = ours "
                    "auto / anchor; < 1: ours faster)",
                    ["kernel", "auto", "search s", "numpy", "ratio", "unsched",
                     "auto speedup", "expert", "ratio"]
                    + (["tuned", "tuned/numpy"] if a.tune else []), rows)


if __name__ == "__main__":
    main()
