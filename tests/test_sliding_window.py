"""A producer computed per row of its consumer's strip and allocated per strip (Halide's
``store_at`` outside ``compute_at``) is computed in a sliding window: each row computes
only what no earlier row of the same strip computed (its halo once per strip), so the
producer's instances are the strip's footprint, each once. Where a loop between the two
levels runs out of order (parallel), the window is not taken (and sharing the strip's
buffer across the cores is refused by the legality check)."""

from __future__ import annotations

from collections import Counter

import islpy as isl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

import middleend as me
from frontends.halide import apps, compile_pipeline
from middleend.ir.errors import ScheduleError

ROWS, COLS = 40, 24


def _blur(strip: int, alloc: str, vector: bool = False, parallel: str | None = None
          ) -> me.Function:
    """``out[y] = b[y] + b[y + 1] + b[y + 2]`` over ``ROWS`` rows in strips of ``strip``,
    ``b`` computed per row ``yi`` and allocated at ``alloc``."""
    with me.Function(f"slide_{strip}_{alloc}_{int(vector)}_{parallel}") as f:
        inp = me.Input("inp", [ROWS + 2, COLS], me.float32)
        y, x = me.Var("y", 0, ROWS + 2), me.Var("x", 0, COLS)
        b = me.Computation("b", [y, x], me.sqrt(inp[y, x] * inp[y, x] + 1.0))
        y2, x2 = me.Var("y", 0, ROWS), me.Var("x", 0, COLS)
        out = me.Computation("out", [y2, x2], b[y2, x2] + b[y2 + 1, x2] + b[y2 + 2, x2])
        out.split("y", strip, "yo", "yi")
        if vector:
            out.vectorize("x", 8)
        if parallel:
            out.parallelize(parallel)
        b.compute_at(out, "yi")
        b.allocate_at(out, alloc)
    return f


def _rows_computed(f: me.Function) -> Counter[int]:
    """How many times each row of ``b`` is computed (its extended domain's points)."""
    dom = f.lower().ts.comps["b"].ext_domain
    rows: Counter[int] = Counter()
    n = dom.dim(isl.dim_type.set)

    def add(p: isl.Point) -> None:
        if p.get_coordinate_val(isl.dim_type.set, n - 1).to_python() == 0:  # column 0
            rows[p.get_coordinate_val(isl.dim_type.set, n - 2).to_python()] += 1

    dom.foreach_point(add)
    return rows


def _reference(a: np.ndarray) -> np.ndarray:
    b = np.sqrt(a * a + np.float32(1))
    return b[:-2] + b[1:-1] + b[2:]


@pytest.mark.parametrize("strip", [8, 7])
@pytest.mark.parametrize("vector", [False, True])
def test_a_producer_allocated_per_strip_is_computed_once_per_strip(strip: int,
                                                                   vector: bool) -> None:
    """Allocated per strip: each strip computes its rows and its 2 halo rows once (rows
    shared by two strips twice, no row more); allocated per row, every row 3 times.
    Numpy's values either way, a last strip shorter than the others included."""
    a = np.random.default_rng(strip).random((ROWS + 2, COLS)).astype(np.float32)
    slid = _blur(strip, "yo", vector)
    counts = _rows_computed(slid)
    strips = -(-ROWS // strip)
    want: Counter[int] = Counter()
    for s in range(strips):
        for r in range(s * strip, min(s * strip + strip, ROWS) + 2):
            want[r] += 1
    assert counts == want
    per_row = _rows_computed(_blur(strip, "yi", vector))
    assert max(per_row.values()) == 3
    for f in (slid, _blur(strip, "yi", vector)):
        np.testing.assert_allclose(f.compile()(inp=a)["out"], _reference(a), rtol=1e-6)


def test_no_window_across_a_parallel_loop() -> None:
    """The rows of a strip on different cores: no window (each row would read rows
    another core computes); the strip's shared buffer is a race the check refuses."""
    with pytest.raises(ScheduleError, match="parallel"):
        _blur(8, "yo", parallel="yi").compile()
    f = _blur(8, "yi", parallel="yo")  # strips over the cores, a buffer per row: fine
    a = np.random.default_rng(1).random((ROWS + 2, COLS)).astype(np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["out"], _reference(a), rtol=1e-6)


def test_strips_over_the_cores_each_slide() -> None:
    """Strips in parallel, rows in order within each: every strip slides in a buffer of
    its own; numpy's values."""
    f = _blur(8, "yo", parallel="yo")
    assert max(_rows_computed(f).values()) <= 2
    a = np.random.default_rng(2).random((ROWS + 2, COLS)).astype(np.float32)
    np.testing.assert_allclose(f.compile()(inp=a)["out"], _reference(a), rtol=1e-6)


def _tile_rows_points(dom: isl.Set) -> Counter[tuple[int, ...]]:
    """How many times each (tile row, y, x) point is in a stage's extended domain (whose
    dims are the output's tile row and column, then the stage's y and x)."""
    seen: Counter[tuple[int, ...]] = Counter()

    def add(p: isl.Point) -> None:
        seen[tuple(p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in (0, 2, 3))] += 1

    dom.foreach_point(add)
    return seen


def test_every_stage_of_a_tiled_chain_slides_along_its_tile_row() -> None:
    """Six stencils (crosses and boxes) computed per 16 x 16 tile and stored per row of
    tiles, the last tiles clipped: each stage's window is a box, so no point of a stage is
    computed by two tiles of one row; Halide's values."""
    app = apps.stencil_chain(37, 45, stages=6, schedule=apps.TILED_STORE_AT, tile=16)
    k = compile_pipeline(app.output)
    built = k.translate(app.sizes, **app.by_name())
    comps = built.fn.lower(outputs=built.outputs).ts.comps
    outs = {o if isinstance(o, str) else o.name for o in built.outputs}
    stages = [c.name for c in built.fn.computations if c.name in comps and c.name not in outs]
    assert len(stages) == 5
    for name in stages:
        seen = _tile_rows_points(comps[name].ext_domain)
        assert seen and max(seen.values()) == 1, name
    assert_same(k.realize(app.sizes, **app.by_name()),
                halide_realize([app.output], app.sizes, app.inputs))


def test_a_window_in_a_folded_buffer_keeps_only_its_rows() -> None:
    """Folded to 3 rows (the stencil's height), the window's buffer is a line buffer:
    each row overwrites one no later row reads; numpy's values. Folded to 2, a row would
    overwrite one still read: refused, with the fold named."""
    a = np.random.default_rng(3).random((ROWS + 2, COLS)).astype(np.float32)
    f = _blur(8, "yo")
    f.computation("b").storage_fold(0, 3)
    np.testing.assert_allclose(f.compile()(inp=a)["out"], _reference(a), rtol=1e-6)
    g = _blur(8, "yo")
    g.computation("b").storage_fold(0, 2)
    with pytest.raises(ScheduleError, match="storage_fold"):
        g.compile()
