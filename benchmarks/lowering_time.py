"""Lowering time: ``f.lower()`` (Layers I-IV, legality check, loop AST; no C compiler).

Times the schedules of ``blurxy.py`` (the chosen tiled one; target <= 0.5 s) and
``sgemm.py`` (both variants), best of N after a warm-up call. Each ``lower()`` call rebuilds
everything from the command log in a fresh ISL context, so repeated calls do the full work.

Then Halide's apps (``frontends/halide/apps.py``: bilateral grid, interpolate, local
Laplacian) against the number of stages (Funcs; pyramid levels for the last two), with no
schedule (every Func inlined, Halide's default) and with every stage ``compute_root``
(target: each under 2 s), and inlined but for an early stage computed at the output's rows
(``apps.INLINE_AT``: interpolate's first level, local Laplacian's float input); and a chain
of stencils with the output tiled (32 x 32) and every stage computed per tile, as an expert
schedules it (``apps.stencil_chain``: plain, with ``store_at`` the tile row, vectorized with
parallel tile rows), against its number of stages (target: 8 stages under 2 s). The anchor
is Halide's own lowering of the same pipeline (``Pipeline.compile_to_lowered_stmt``: bounds
inference, inlining, loop nests, no LLVM), interleaved with ours, best of N (N <= 3; once
where Halide takes over 10 s); ratio = ours / Halide. Inlined, a pyramid's expression grows
as 9^levels (interpolate) and 16^levels (local Laplacian) reads: Halide's lowering
substitutes it (15 s at 3 levels of interpolate), so Halide is not run past
:data:`HALIDE_INLINE_LEVELS`; ours keeps the large inlined bodies as functions
(``middleend/passes/inlining.py``) and grows with the number of stages.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import blurxy
import common
import halide as hl
import sgemm
from common import SummaryRow, best_of, print_table, short_error

import middleend as me
from frontends.halide import apps, compile_pipeline

BLUR_TARGET_S = 0.5
APP_TARGET_S = 2.0
# (app, schedule, pyramid levels or None): lowering time against the number of stages
APP_CASES: list[tuple[str, str, int | None]] = [
    ("bilateral_grid", "inline", None), ("bilateral_grid", "root", None),
    *(("interpolate", "root", n) for n in (2, 4, 6, 8, 10)),
    *(("interpolate", "inline", n) for n in (2, 3, 4, 6, 8, 10)),
    *(("local_laplacian", "root", n) for n in (2, 4, 6, 8)),
    *(("local_laplacian", "inline", n) for n in (2, 3, 4, 6, 8)),
    # inlined levels reading the first one, computed at the output's rows (compute_at)
    *(("interpolate", apps.INLINE_AT, n) for n in (2, 3, 4, 6, 8, 10)),
    *(("local_laplacian", apps.INLINE_AT, n) for n in (2, 3, 4, 6, 8)),
    # stages (not levels): every stage computed per tile of the output
    *(("stencil_chain", s, n) for s in (apps.TILED, apps.TILED_STORE_AT, apps.TILED_VECTORIZED)
      for n in (2, 4, 8, 12)),
]
# the deepest inlined pyramids Halide's own lowering is timed on (beyond, minutes)
HALIDE_INLINE_LEVELS = {"interpolate": 3, "local_laplacian": 2}

CASES: dict[str, Callable[[], me.Function]] = {
    f"blurxy {blurxy.CHOSEN} (tiled)": lambda: blurxy.VARIANTS[blurxy.CHOSEN](True).fn,
    "blurxy default": lambda: blurxy.VARIANTS["default"](True).fn,
    f"sgemm {sgemm.CHOSEN}": sgemm.VARIANTS[sgemm.CHOSEN][0],
    "sgemm direct": sgemm.VARIANTS["direct"][0],
}


def run(reps: int = common.DEFAULT_REPS) -> list[SummaryRow]:
    """Time ``lower()`` of every case; print a table; return the summary rows."""
    times: dict[str, float] = {}
    rows: list[list[object]] = []
    for name, make in CASES.items():
        try:
            fn = make()
            times[name] = best_of(fn.lower, reps)
            rows.append([name, f"{times[name]:.3f}"])
        except me.MiddleEndError as exc:
            rows.append([name, f"failed: {short_error(exc)}"])
    print_table(f"lowering time (f.lower(), no C compiler), best of {reps}",
                ["schedule", "seconds"], rows)
    blur = f"blurxy {blurxy.CHOSEN} (tiled)"
    out = []
    if blur in times:
        ok = "met" if times[blur] <= BLUR_TARGET_S else "MISSED"
        out.append(SummaryRow("lowering blurxy", "s", f"{times[blur]:.3f}",
                              f"{BLUR_TARGET_S} (target)", f"{BLUR_TARGET_S / times[blur]:.1f}",
                              f"target <= {BLUR_TARGET_S} s {ok}"))
    sg = f"sgemm {sgemm.CHOSEN}"
    if sg in times:
        out.append(SummaryRow("lowering sgemm", "s", f"{times[sg]:.3f}", "-", "-",
                              f"{sgemm.CHOSEN} schedule"))
    return out


def _app_lowerings(name: str, schedule: str, levels: int | None
                   ) -> tuple[apps.App, Callable[[], Any], Callable[[], Any]]:
    """The app, our ``lower()`` of its translated Function, and Halide's lowering."""
    if name == "stencil_chain":
        app = apps.stencil_chain(schedule=schedule, stages=levels or 8)
    else:
        kw = {} if levels is None else {"levels": levels}
        app = apps.APPS[name](schedule=schedule, **kw)
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    pipe = hl.Pipeline(app.output)
    args = [p for p, _ in app.inputs]
    out_dir = tempfile.mkdtemp(prefix="lowering_time_")

    def ours() -> Any:
        return built.fn.lower(outputs=built.outputs)

    def halide() -> Any:
        path = os.path.join(out_dir, "pipeline.stmt")
        pipe.compile_to_lowered_stmt(path, args, hl.StmtOutputFormat.Text)
        os.remove(path)

    return app, ours, halide


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_apps(reps: int) -> list[SummaryRow]:
    """Lowering time of Halide's apps vs. the number of stages, Halide's alongside."""
    reps = max(1, min(reps, 3))
    rows: list[list[object]] = []
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float literals taken as float32
        for name, schedule, levels in APP_CASES:
            label = [name, schedule, "-" if levels is None else levels]
            try:
                app, ours, halide = _app_lowerings(name, schedule, levels)
                ours()  # warm-up (imports, first-call caches)
                run_halide = schedule == "root" or name == "stencil_chain" or \
                    levels is None or levels <= HALIDE_INLINE_LEVELS[name]
                t_ours, t_hl = [], []
                for _ in range(reps):  # interleaved: load bursts hit both alike
                    t_ours.append(_timed(ours))
                    if run_halide and (not t_hl or min(t_hl) < 10.0):
                        t_hl.append(_timed(halide))
            except (me.MiddleEndError, hl.HalideError) as exc:
                rows.append([*label, "-", f"failed: {short_error(exc)}", "-", "-"])
                continue
            best = min(t_ours)
            worst = max(worst, best)
            if not t_hl:
                rows.append([*label, app.stages, f"{best:.3f}", "not run", "-"])
                continue
            anchor = min(t_hl)
            note = "" if len(t_hl) == reps else f" ({len(t_hl)} run)"
            rows.append([*label, app.stages, f"{best:.3f}", f"{anchor:.3f}{note}",
                         f"{best / anchor:.3g}"])  # inlined pyramids: far below 0.01
    print_table(f"Halide apps: lowering time vs. stages (ours f.lower(); Halide "
                f"compile_to_lowered_stmt), best of {reps}",
                ["app", "schedule", "levels", "stages", "ours s", "Halide s", "ratio"], rows)
    ok = "met" if worst <= APP_TARGET_S else "MISSED"
    return [SummaryRow("lowering Halide apps", "s", f"{worst:.3f}", f"{APP_TARGET_S} (target)",
                       f"{APP_TARGET_S / worst:.1f}" if worst else "-",
                       f"slowest app lowering; target <= {APP_TARGET_S} s {ok}")]


def main() -> None:
    reps = common.parse_args(__doc__.splitlines()[0]).reps
    run(reps)
    run_apps(reps)


if __name__ == "__main__":
    main()
