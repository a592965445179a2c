"""Legality-check time of many-stage pipelines: the check as it is against the same check
as it was before, which solved one dataflow problem for the whole program (now one per
buffer) and composed every read with the whole program's relations (the dependences and
the time-space -> instance map of every statement; now only the reading statement's and
the read buffer's writers'): each read's cost then grew with the number of statements,
the check as a whole quadratically. Both give the same dependences.

Cases: Halide's local Laplacian and interpolate (``frontends/halide/apps.py``) with every
stage ``compute_root``, against the number of pyramid levels. Both variants run on the same
analysed program (Layers I-IV built once), interleaved, best of N; ratio = whole / ours.
"""

from __future__ import annotations

import warnings
from typing import Any

import common
import islpy as isl
from common import SummaryRow, best_of_interleaved, print_table

from frontends.halide import apps, compile_pipeline
from middleend.driver import lowering
from middleend.passes import flow, legality

CASES = [("local_laplacian", n) for n in (2, 4, 6, 8, 10)] + [("interpolate", n)
                                                              for n in (4, 8, 12)]


class _Whole:
    """The previous way: no pieces, every read composed with the whole relations."""

    def __init__(self, deps: isl.UnionMap, ph: Any, l4: Any) -> None:
        self.by_sink = None
        self.exact = False
        self.ph = ph

    def tinv_of(self, names: list[str]) -> isl.UnionMap:
        return self.ph.tinv


def _checks(name: str, levels: int) -> tuple[int, Any, Any]:
    app = apps.APPS[name](schedule="root", levels=levels)
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    fn = built.fn
    a = lowering._analyse(fn, list(fn.commands.items), built.outputs,
                          lowering._new_ctx(lowering.DEFAULT_MAX_OPS))

    def ours() -> None:
        a.check()

    def whole() -> None:
        parts, group = legality.Parts, flow.flow_group
        legality.Parts = _Whole  # type: ignore[misc, assignment]
        flow.flow_group = lambda access: ""  # one dataflow problem
        try:
            a.check()
        finally:
            legality.Parts, flow.flow_group = parts, group  # type: ignore[misc]

    return len(fn.computations), ours, whole


def run(reps: int = common.DEFAULT_REPS) -> list[SummaryRow]:
    rows: list[list[object]] = []
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float literals taken as float32
        for name, levels in CASES:
            n, ours, whole = _checks(name, levels)
            best = best_of_interleaved({"ours": ours, "whole": whole}, max(1, reps // 2))
            worst = max(worst, best["ours"])
            rows.append([name, levels, n, f"{best['ours']:.3f}", f"{best['whole']:.3f}",
                         f"{best['whole'] / best['ours']:.2f}"])
    print_table("legality check vs. stages (all compute_root): ours and the whole-program "
                "check", ["app", "levels", "computations", "ours s", "whole s", "ratio"],
                rows)
    return [SummaryRow("legality check, many stages", "s", f"{worst:.3f}", "-", "-",
                       "slowest check of the cases")]


def main() -> None:
    run(common.parse_args(__doc__.splitlines()[0]).reps)


if __name__ == "__main__":
    main()
