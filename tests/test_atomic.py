"""``comp.atomic()`` in the Python API, against numpy: a histogram-like update at a
data-dependent index (``np.add.at`` / ``np.minimum.at`` as the reference) under a serial, a
parallel and a vectorized loop; a tag the target cannot honour, an update of another form
and a racy update without atomic() are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me


def _scatter(op: str, dtype: me.DType, schedule: str) -> tuple[me.Function, me.Computation]:
    with me.Function(f"scatter_{op}") as f:
        i, b = me.Var("i", 0, 300), me.Var("b", 0, 16)
        im = me.Input("im", [300], dtype)
        start = 0 if op == "add" else 1e9 if dtype.is_float else 1000
        h = me.Computation("h", [b], start, dtype=dtype)
        bin_ = me.cast(me.int32, im[i]) % 16
        value = h.memory[bin_] + im[i] if op == "add" else me.min(h.memory[bin_], im[i])
        u = me.Computation("u", [i], value, dtype=dtype)
        u.store_in(h, [bin_])
        u.atomic()
        if schedule == "parallel":
            u.split(i, 16, "io", "ii")
            u.parallelize("io")
        elif schedule == "vector":
            u.vectorize(i, 8)
        elif schedule == "gpu":
            u.gpu_blocks(i)
    return f, h


@pytest.mark.parametrize("schedule", ["serial", "parallel", "vector"])
@pytest.mark.parametrize(("op", "dtype"), [("add", me.int32), ("add", me.uint8),
                                           ("min", me.int16), ("add", me.float64),
                                           ("min", me.float32)], ids=str)
def test_atomic_scatter_matches_numpy(op: str, dtype: me.DType, schedule: str,
                                      rng: np.random.Generator) -> None:
    f, h = _scatter(op, dtype, schedule)
    data = rng.integers(0, 100, 300).astype(dtype.numpy)  # float sums of ints: exact
    ref = np.full(16, 0 if op == "add" else (1e9 if dtype.is_float else 1000),
                  dtype.numpy)
    (np.add if op == "add" else np.minimum).at(ref, data.astype(np.int64) % 16, data)
    # (the embedded middle-end receives the Function as a wire-format request too)
    np.testing.assert_array_equal(f.compile(outputs=[h])(im=data)["h"], ref)


def test_atomic_refusals() -> None:
    """A GPU loop is refused by the cpu target by name; ``b[i] = 2 *
    b[i]`` is not ``b[i] op e``; without atomic(), the parallel loop is illegal."""
    f, h = _scatter("add", me.int32, "gpu")
    with pytest.raises(me.TargetError, match="gpu_block"):
        f.compile(outputs=[h])
    with me.Function("twice") as g:
        i, b = me.Var("i", 0, 30), me.Var("b", 0, 4)
        im = me.Input("im", [30], me.int32)
        h2 = me.Computation("h", [b], 1, dtype=me.int32)
        u = me.Computation("u", [i], h2.memory[im[i] % 4] * 2 + 1, dtype=me.int32)
        u.store_in(h2, [im[i] % 4])
        u.atomic()
        u.parallelize(i)
    with pytest.raises(me.ScheduleError, match="'u' cannot be an atomic update"):
        g.lower(outputs=[h2])
    with me.Function("racy") as r:
        i, b = me.Var("i", 0, 30), me.Var("b", 0, 4)
        im = me.Input("im", [30], me.int32)
        h3 = me.Computation("h", [b], 0, dtype=me.int32)
        u = me.Computation("u", [i], h3.memory[im[i] % 4] + 1, dtype=me.int32)
        u.store_in(h3, [im[i] % 4])
        u.parallelize(i)
    with pytest.raises(me.ScheduleError, match="tagged parallel but carries a dependence"):
        r.lower(outputs=[h3])
