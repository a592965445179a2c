"""Storage outside a parallel or vectorized loop that a Func is computed in: each schedule
is realized by Halide itself first; what Halide refuses ("stored outside the
parallel/vectorized/gpu_block loop ... a potential race condition") must be refused by
the front-end in one line, and what Halide accepts must give Halide's values."""

from __future__ import annotations

import re
from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import check, halide_realize

import middleend as me
from frontends.halide import compile_pipeline

V = dict[str, hl.Var]


def _vars() -> V:
    return {n: hl.Var(n) for n in ("x", "y", "xo", "xi")}


SCHEDULES: dict[str, Callable[[hl.Func, hl.Func, hl.Func, V], None]] = {
    "store_y_compute_xi_vector": lambda h, f, g, v: (
        f.split(v["x"], v["xo"], v["xi"], 8).vectorize(v["xi"]),
        g.store_at(f, v["y"]).compute_at(f, v["xi"])),
    "store_xo_compute_xi_vector": lambda h, f, g, v: (
        f.split(v["x"], v["xo"], v["xi"], 8).vectorize(v["xi"]),
        g.store_at(f, v["xo"]).compute_at(f, v["xi"])),
    "compute_xi_vector": lambda h, f, g, v: (
        f.split(v["x"], v["xo"], v["xi"], 8).vectorize(v["xi"]), g.compute_at(f, v["xi"])),
    "store_y_compute_xo_vector_inside": lambda h, f, g, v: (
        f.split(v["x"], v["xo"], v["xi"], 8).vectorize(v["xi"]),
        g.store_at(f, v["y"]).compute_at(f, v["xo"])),
    "store_root_compute_x_parallel_y": lambda h, f, g, v: (
        f.parallel(v["y"]), g.store_root().compute_at(f, v["x"])),
    "store_root_compute_y_parallel_y": lambda h, f, g, v: (
        f.parallel(v["y"]), g.store_root().compute_at(f, v["y"])),
    "store_y_compute_x_parallel_y": lambda h, f, g, v: (
        f.parallel(v["y"]), g.store_at(f, v["y"]).compute_at(f, v["x"])),
    "store_y_compute_xi_parallel_xo": lambda h, f, g, v: (
        f.split(v["x"], v["xo"], v["xi"], 8).parallel(v["xo"]),
        g.store_at(f, v["y"]).compute_at(f, v["xi"])),
    "hoist_root_compute_x_parallel_y": lambda h, f, g, v: (
        f.parallel(v["y"]), g.hoist_storage_root().compute_at(f, v["x"])),
    "hoist_y_compute_x_parallel_y": lambda h, f, g, v: (
        f.parallel(v["y"]), g.hoist_storage(f, v["y"]).compute_at(f, v["x"])),
    # the consumer computed in a parallel loop of its own consumer: storage at root is
    # outside that loop too
    "store_root_consumer_in_parallel": lambda h, f, g, v: (
        h.parallel(v["y"]), f.compute_at(h, v["y"]), g.store_root().compute_at(f, v["x"])),
    "store_y_consumer_in_parallel": lambda h, f, g, v: (
        h.parallel(v["y"]), f.compute_at(h, v["y"]),
        g.store_at(f, v["y"]).compute_at(f, v["x"])),
}


def _pipeline(name: str) -> tuple[hl.Func, hl.ImageParam]:
    v = _vars()
    x, y = v["x"], v["y"]
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g, f, h = hl.Func("prod"), hl.Func("cons"), hl.Func("out")
    g[x, y] = a[x, y] + 1
    f[x, y] = g[x, y] * g[x + 1, y]
    h[x, y] = f[x, y] - f[x, y + 1]
    f.compute_root()  # unless the schedule computes it at a loop of out
    SCHEDULES[name](h, f, g, v)
    return h, a


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_refused_exactly_where_halide_refuses(name: str, rng: np.random.Generator) -> None:
    h, a = _pipeline(name)
    data = rng.random((18, 36), dtype=np.float32)
    try:
        halide_realize([h], [32, 16], [(a, data)])
    except hl.HalideError as e:
        assert "potential race condition" in str(e)
        h, a = _pipeline(name)  # Halide's failed lowering stays attached to its Funcs
        with pytest.raises(me.ScheduleError, match="but computed within it.*a potential "
                           "race condition, which Halide refuses too") as info:
            compile_pipeline(h).realize([32, 16], a=data)
        assert "\n" not in str(info.value)
        # the loop Halide names (the Funcs rebuilt: their unique suffixes differ)
        loop = re.sub(r"\$\d+", "", str(e).split("loop over ", 1)[1].split(" ", 1)[0])
        assert f"loop {loop} " in re.sub(r"\$\d+", "", str(info.value))
        return
    check(h, [32, 16], [(a, data)])
