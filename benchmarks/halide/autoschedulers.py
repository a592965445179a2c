"""Halide 21's own autoschedulers applied to a Halide pipeline: the anchor side of the
auto-scheduler benchmark (``benchmarks/autoschedule.py``), which compares the middle-end's
auto-scheduler with the schedules Halide finds by itself for the same Funcs.

:func:`autoschedule` sets the estimates an autoscheduler needs (outputs from ``sizes``,
inputs from their arrays), runs one of :data:`AUTOSCHEDULERS` on the pipeline, JIT-compiles
it and returns an :class:`Anchored`: a callable that realizes into outputs preallocated once
(as compare.py's Halide side does, so that no call pays for a fresh output's page faults)
and the seconds the search and the compile took. An autoscheduler that refuses (Anderson2021
on a CPU target: it schedules for GPUs only) gives ``run=None`` and its reason.

An autoscheduler writes its schedule into the Funcs themselves: build each pipeline fresh,
unscheduled (``paper`` ``schedule="default"``, ``apps`` ``schedule="inline"``), per call.

    python benchmarks/halide/autoschedulers.py [--rows R --cols C] [--only NAME ...]
        [--scheduler NAME ...] [--strict]

checks every autoscheduler on every paper pipeline and app against Halide's default
schedule (the apps: every stage ``compute_root``, the default's values in far less time) and
prints search seconds and the best-of-5 call time."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import common  # noqa: E402,F401  (sets up the import path)
import halide as hl  # noqa: E402
import numpy as np  # noqa: E402
from common import best_of, print_table, short_error  # noqa: E402

from frontends.halide.apps import APPS  # noqa: E402
from frontends.halide.paper import ALL, Bench  # noqa: E402

AUTOSCHEDULERS: tuple[str, ...] = ("Mullapudi2016", "Adams2019", "Li2018", "Anderson2021")

# hl.Param is unhashable (pybind11 gives it an __eq__ that builds an Expr), so inputs may
# also come as (param, value) pairs, the form apps.App.inputs has
Inputs = Mapping[Any, object] | Sequence[tuple[Any, object]]


@dataclass
class Anchored:
    """One autoscheduler's result on one pipeline. ``run`` realizes into ``outputs`` (numpy
    views of the ``hl.Buffer``s it writes, allocated once) and returns them; ``None`` when
    the autoscheduler (or the compile) refused, with the reason in ``why``."""

    name: str
    run: Callable[[], object] | None
    outputs: list[np.ndarray]
    search_s: float  # wall seconds of apply_autoscheduler + compile_jit
    why: str = ""
    schedule: str = ""  # the autoscheduler's schedule, as C++ source (for reports)


@functools.cache
def load_plugin(name: str) -> None:
    """Load ``name``'s plugin from the halide wheel, once per process (loading registers
    the autoscheduler with libHalide; a second dlopen of the same file is a no-op, so the
    cache only saves the call). The wheel ships the plugins beside libHalide: found from
    ``halide.__file__``, wherever the wheel is installed."""
    lib = Path(hl.__file__).resolve().parent / "lib64"
    path = next(iter(sorted(lib.glob(f"libautoschedule_{name.lower()}.*"))), None)
    if path is None:
        raise FileNotFoundError(f"no {name} plugin in {lib}")
    hl.load_plugin(str(path))


def _llc_bytes() -> int | None:
    """The last-level cache's size from sysfs (Linux), None where it cannot be read."""
    best: tuple[int, int] | None = None
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((d / "level").read_text())
            text = (d / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        size = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
        if best is None or level > best[0]:
            best = (level, size)
    return best[1] if best else None


def machine_params(name: str) -> dict[str, object]:
    """The machine parameters each plugin parses (names from its ParamParser in Halide
    v21.0.0's sources). All take ``parallelism`` (their default, 16, assumes a 16-core
    machine); Mullapudi2016 also models the last-level cache (default 16 MiB) and leaves
    ``balance`` (load / arithmetic cost, default 40) at its default: nothing here measures
    it. Adams2019 and Anderson2021 use the cost-model weights built into the plugins."""
    params: dict[str, object] = {"parallelism": os.cpu_count() or 1}
    llc = _llc_bytes()
    if name == "Mullapudi2016" and llc:
        params["last_level_cache_size"] = llc
    return params


def _scalar(p: hl.Param, value: object) -> object:
    """``value`` as the Python type of ``p``'s Halide type (Param's setters are overloaded
    per type; pybind11 would pick the first overload that converts)."""
    t = p.type()
    return bool(value) if t.is_bool() else float(value) if t.is_float() else int(value)


def _why(exc: BaseException) -> str:
    return short_error(exc, limit=200).replace("HalideError: Error: ", "")


def autoschedule(outputs: list[hl.Func], sizes: list[int], inputs: Inputs, name: str,
                 target: hl.Target | None = None) -> Anchored:
    """Apply autoscheduler ``name`` to the pipeline of ``outputs`` (sizes in Halide order,
    starting at 0) on ``inputs`` (ImageParam -> numpy array, in numpy order: a (rows, cols)
    array is the Halide buffer (cols, rows); Param -> number), JIT-compile it for
    ``target`` (the JIT's host target by default) and preallocate its outputs. The
    inputs are set on every call of ``run`` (the Params are shared by every pipeline built
    on them), from ``hl.Buffer``s made once. Halide errors give ``run=None``."""
    target = target or hl.get_jit_target_from_environment()
    pairs = list(inputs.items()) if isinstance(inputs, Mapping) else list(inputs)
    sets: list[tuple[Any, object]] = []
    for p, v in pairs:
        if isinstance(p, hl.ImageParam):
            arr = np.asarray(v)
            p.set_estimates([(0, e) for e in reversed(arr.shape)])
            sets.append((p, hl.Buffer(arr)))
        else:
            p.set_estimate(_scalar(p, v))
            sets.append((p, _scalar(p, v)))
    for f in outputs:
        f.set_estimates([(0, s) for s in sizes])
    start = time.perf_counter()
    try:
        load_plugin(name)
        pipe = hl.Pipeline(outputs)
        res = pipe.apply_autoscheduler(target, hl.AutoschedulerParams(name, machine_params(name)))
        pipe.compile_jit(target)
    except (hl.HalideError, OSError) as exc:
        return Anchored(name, None, [], time.perf_counter() - start, _why(exc))
    search_s = time.perf_counter() - start
    bufs = [hl.Buffer(f.type(), sizes) for f in outputs]
    arrays = [np.asarray(b) for b in bufs]  # views, numpy order
    dst: hl.Buffer | list[hl.Buffer] = bufs[0] if len(bufs) == 1 else bufs

    def run() -> list[np.ndarray]:
        for p, v in sets:
            p.set(v)
        pipe.realize(dst)
        return arrays

    try:
        run()  # the first call surfaces runtime errors (bounds, allocation) here
    except hl.HalideError as exc:
        return Anchored(name, None, [], search_s, _why(exc), res.schedule_source)
    return Anchored(name, run, arrays, search_s, schedule=res.schedule_source)


def autoschedule_bench(make: Callable[[], Bench], name: str,
                       target: hl.Target | None = None) -> Anchored:
    """A paper benchmark autoscheduled group by group (each group is a realization of its
    own: rgbyuv420's Y, U and V), each on a fresh ``make()`` (an unscheduled build, e.g.
    ``lambda: ALL[n](rows, cols, schedule="default")``): the groups of one build share
    their ImageParam, whose wrapper Func an autoscheduler may schedule (Li2018 does), and a
    second search on the same Func fails on the first one's splits. ``run`` calls the
    groups in order; its outputs are those of ``Bench.halide_realize()``, in order."""
    parts = []
    for g in range(len(make().groups)):
        b = make()
        funcs, sizes = b.groups[g]
        inputs = [(p, b.inputs[n]) for n, p in b.params.items()]
        parts.append(autoschedule(funcs, sizes, inputs, name, target))
    search_s = sum(a.search_s for a in parts)
    failed = next((a for a in parts if a.run is None), None)
    if failed is not None:
        return Anchored(name, None, [], search_s, failed.why)
    runs = [a.run for a in parts if a.run is not None]
    outs = [o for a in parts for o in a.outputs]

    def run() -> list[np.ndarray]:
        for r in runs:
            r()
        return outs

    return Anchored(name, run, outs, search_s, schedule="\n".join(a.schedule for a in parts))


def _reference(kind: str, build: Callable[..., Any], rows: int, cols: int,
               target: hl.Target) -> list[np.ndarray]:
    """Halide's own result, what ``Bench.halide_realize()`` computes but for ``target``:
    a paper pipeline unscheduled (Halide's default); an app with every stage
    ``compute_root`` (the default's values: Halide's realize of inlined interpolate ran
    over 5 minutes at 512x768, 9^levels points per pixel, and of inlined local_laplacian
    it segfaulted, even at 16x24)."""
    if kind == "paper":
        b = build(rows, cols, schedule="default")
        b.set_inputs()
        groups = b.groups
    else:
        app = build(rows, cols, schedule="root")
        for p, v in app.inputs:
            p.set(hl.Buffer(np.asarray(v)) if isinstance(p, hl.ImageParam) else _scalar(p, v))
        groups = [([app.output], app.sizes)]
    out: list[np.ndarray] = []
    for funcs, sizes in groups:
        r = hl.Pipeline(funcs).realize(sizes, target)
        out += [np.asarray(r)] if isinstance(r, hl.Buffer) else [np.asarray(x) for x in r]
    return out


def _verdict(got: list[np.ndarray], want: list[np.ndarray]) -> str:
    """"yes", or how the outputs differ from the reference."""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want, strict=True)):
        return "NO (shapes)"
    errs = [float(np.max(np.abs(g.astype(np.float64) - w)))
            for g, w in zip(got, want, strict=True) if not np.allclose(g, w, rtol=1e-4, atol=1e-5)]
    return "yes" if not errs else f"NO (max err {max(errs):.3g})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="a paper pipeline or app (repeatable; default: all)")
    ap.add_argument("--scheduler", action="append", choices=AUTOSCHEDULERS,
                    help="an autoscheduler (repeatable; default: all four)")
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--cols", type=int, default=768)
    ap.add_argument("--strict", action="store_true",
                    help="build both sides with strict_float (no fused multiply-adds): the "
                         "autoschedules' results then equal the reference bit for bit")
    args = ap.parse_args()
    target = hl.get_jit_target_from_environment()
    if args.strict:
        target = target.with_feature(hl.TargetFeature.StrictFloat)
    builders: dict[str, tuple[str, Callable[..., Any]]] = {
        **{n: ("paper", f) for n, f in ALL.items()}, **{n: ("app", f) for n, f in APPS.items()}}
    unknown = set(args.only or ()) - set(builders)
    if unknown:
        ap.error(f"unknown pipeline(s) {sorted(unknown)}; known: {sorted(builders)}")
    rows: list[list[object]] = []
    notes: list[str] = []
    for pname, (kind, build) in builders.items():
        if args.only and pname not in args.only:
            continue
        ref = _reference(kind, build, args.rows, args.cols, target)
        for sname in args.scheduler or AUTOSCHEDULERS:
            if kind == "paper":  # fresh, unscheduled: the schedule lands on the Funcs
                a = autoschedule_bench(
                    functools.partial(build, args.rows, args.cols, schedule="default"), sname,
                    target)
            else:
                app = build(args.rows, args.cols, schedule="inline")
                a = autoschedule([app.output], app.sizes, app.inputs, sname, target)
            if a.run is None:
                rows.append([pname, sname, f"{a.search_s:.2f}", "-", "refused"])
                notes.append(f"{pname} / {sname}: {a.why}")
                continue
            for o in a.outputs:
                o.fill(0)
            a.run()
            ok = _verdict(a.outputs, ref)
            ms = best_of(a.run, reps=5) * 1e3
            rows.append([pname, sname, f"{a.search_s:.2f}", f"{ms:.2f}", ok])
            print(f"{pname:16s} {sname:14s} search {a.search_s:7.2f} s  call {ms:8.2f} ms  "
                  f"{ok}", flush=True)
    strict = ", strict_float" if args.strict else ""
    print_table(f"Halide autoschedulers, {args.rows}x{args.cols}, parallelism "
                f"{os.cpu_count()}{strict}",
                ["pipeline", "autoscheduler", "search s", "call ms", "equals default"], rows)
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
