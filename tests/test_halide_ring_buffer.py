"""Halide's ``ring_buffer(extent)`` against Halide's own realize: the values of every
realization are read in the iteration that produced it, whatever the extent, so they are
Halide's; the storage is one realization's, at the store level (frontends/halide/ring.py).
What Halide refuses (no hoist_storage, storage hoisted outside a parallel loop) and a
non-positive extent are refused in one line, as is storage hoisted inside its store level,
with or without a ring."""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest
from halide_util import check, halide_realize

import middleend as me
from frontends.halide import compile_pipeline


def _pipeline(rng: np.random.Generator, name: str
              ) -> tuple[hl.Func, hl.Func, list[hl.Var], list[tuple[hl.ImageParam, np.ndarray]]]:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p, c = hl.Func(f"{name}_p"), hl.Func(f"{name}_c")
    p[x, y] = a[x, y] * 2 + a[x + 1, y]
    c[x, y] = p[x, y] + p[x + 1, y + 1] * 3 - p[x, y + 2]
    return p, c, [x, y], [(a, rng.random((14, 21), dtype=np.float32))]


@pytest.mark.parametrize("schedule", ["root_y", "yo_yi_parallel", "store_y_compute_x"])
def test_ring_buffer(schedule: str, rng: np.random.Generator) -> None:
    p, c, (x, y), inputs = _pipeline(rng, f"rb_{schedule}")
    yo, yi = hl.Var("yo"), hl.Var("yi")
    if schedule == "root_y":
        p.compute_at(c, y).hoist_storage_root().ring_buffer(2)
        level = "y"
    elif schedule == "yo_yi_parallel":  # the parallel loop is outside the hoist level
        c.split(y, yo, yi, 4).parallel(yo)
        p.compute_at(c, yi).hoist_storage(c, yo).ring_buffer(3)
        level = "y_yi"
    else:
        p.compute_at(c, x).store_at(c, y).hoist_storage_root().ring_buffer(3)
        level = "y"
    k = check(c, [19, 11], inputs)
    built, _ = k.build([19, 11], a=inputs[0][1])
    # one realization's storage per iteration of the store level (a ring's copy); a name
    # Halide made unique in the process (name$1) is name_1 in ours, for p as for c (and
    # a storage copy may add a suffix of its own: p_1_2)
    pstem, stem = (re.escape(f.name().split("$")[0]) for f in (p, c))
    layers = built.fn.layers()
    allocs = [ln for ln in layers.splitlines() if re.match(rf"allocate {pstem}(_\d+)*\[", ln)]
    assert len(allocs) == 1 and re.search(rf" at loop {level} of {stem}\w*", allocs[0]), \
        (p.name(), c.name(), [ln for ln in layers.splitlines() if ln.startswith("allocate")])


def _refused(schedule: str, rng: np.random.Generator) -> tuple[hl.Func, list]:
    p, c, (x, y), inputs = _pipeline(rng, f"rbx_{schedule}")
    if schedule == "no_hoist":
        p.compute_at(c, y).ring_buffer(2)
    elif schedule == "root":
        p.compute_root().hoist_storage_root().ring_buffer(2)
    elif schedule == "parallel":
        c.parallel(y)
        p.compute_at(c, y).hoist_storage_root().ring_buffer(2)
    elif schedule == "hoist_inside":
        p.compute_at(c, x).store_at(c, y).hoist_storage(c, x).ring_buffer(2)
    elif schedule == "hoist_inside_no_ring":
        p.compute_at(c, y).hoist_storage(c, x)
    else:
        p.compute_at(c, y).hoist_storage_root().ring_buffer(0)
    return c, inputs


@pytest.mark.parametrize("schedule,message", [
    ("no_hoist", "stored and hoisted at the same level ({c}.y)"),
    ("root", "stored and hoisted at the same level (root)"),
    ("parallel", "hoisted (root) outside the parallel loop {c}.y"),
    ("hoist_inside", "hoist_storage({c}.x) is inside its store level ({c}.y)"),
    ("hoist_inside_no_ring", "hoist_storage({c}.x) is inside its store level ({c}.y)"),
])
def test_ring_buffer_refused_as_halide(schedule: str, message: str,
                                       rng: np.random.Generator) -> None:
    c, inputs = _refused(schedule, rng)
    with pytest.raises(hl.HalideError):
        halide_realize([c], [19, 11], inputs)
    k = compile_pipeline(c)
    # {c}: the consumer's name, or the unique one Halide's serialization gives it when the
    # process has seen the name before (name$1, ...: the full suite)
    name = re.escape(f"rbx_{schedule}_c") + r"(?:\$\d+)?"
    pattern = re.escape(message).replace(re.escape("{c}"), name)
    with pytest.raises(me.ScheduleError, match=pattern) as e:
        k.realize([19, 11], a=inputs[0][1])
    assert "\n" not in str(e.value)


def test_ring_buffer_extent_positive(rng: np.random.Generator) -> None:
    """Halide accepts ring_buffer(0) and computes garbage; refused here."""
    c, inputs = _refused("zero", rng)
    with pytest.raises(me.ScheduleError, match=r"ring_buffer\(0\): the extent must be a "
                       "positive integer"):
        compile_pipeline(c).realize([19, 11], a=inputs[0][1])


def test_ring_buffer_without_storage_of_its_own(rng: np.random.Generator) -> None:
    """On an output (stored in the caller's array) and on an inlined Func (no storage),
    Halide runs ring_buffer() without a hoist_storage, as it is nothing there; so do we."""
    p, c, _, inputs = _pipeline(rng, "rb_none")
    p.ring_buffer(2)
    c.ring_buffer(3)
    check(c, [19, 11], inputs)
