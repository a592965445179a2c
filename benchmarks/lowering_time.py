"""Lowering time: ``f.lower()`` (Layers I-IV, legality check, loop AST; no C compiler).

Times the schedules of ``blurxy.py`` (the chosen tiled one; target <= 0.5 s) and
``sgemm.py`` (both variants), best of N after a warm-up call. Each ``lower()`` call rebuilds
everything from the command log in a fresh ISL context, so repeated calls do the full work.
"""

from __future__ import annotations

from collections.abc import Callable

import blurxy
import common
import sgemm
from common import SummaryRow, best_of, print_table, short_error

import middleend as me

BLUR_TARGET_S = 0.5

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


def main() -> None:
    run(common.parse_args(__doc__.splitlines()[0]).reps)


if __name__ == "__main__":
    main()
