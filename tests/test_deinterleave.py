"""Stride-2 float reads of a vector loop (backends/cpu/deinterleave.py): read through
dense loads and shuffles where both members of a pair are read in every iteration, left
alone elsewhere; results equal numpy's bit for bit either way."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me

ROWS = 5


def _down(n: int, width: int, offsets: tuple[int, ...], dtype: me.DType = me.float32,
          parallel: bool = False, guard: bool = False, clamped: bool = False
          ) -> tuple[str, np.ndarray, np.ndarray]:
    """d[y, x] = (im[y, 2 x + o] over ``offsets``, each earlier term weighted 0.75) * 0.5,
    x vectorized by
    ``width``; ``clamped``: each read's column clamped to the row, as Halide's
    repeat_edge does (a no-op here: loop partitioning leaves it out of the interior);
    returns the kernel's C, its result and numpy's."""
    cols = 2 * n + max(offsets) + 1
    with me.Function("down") as f:
        y, x = me.Var("y", 0, ROWS), me.Var("x", 0, n)
        im = me.Input("im", [ROWS, cols], dtype)
        def col(o: int) -> me.Expr:
            return me.clamp(2 * x + o, 0, cols - 1) if clamped else 2 * x + o

        total = im[y, col(offsets[0])]
        for o in offsets[1:]:
            total = total * 0.75 + im[y, col(o)]  # weights tell the reads apart
        # a data-dependent predicate is a run-time guard (true for this data)
        d = me.Computation("d", [y, x], total * 0.5, dtype=dtype,
                           predicate=im[y, 0] >= 0 if guard else None)
        d.vectorize(x, width)
        if parallel:
            d.parallelize(y)
    k = f.compile(outputs=[d])
    data = np.random.default_rng(7).random((ROWS, cols)).astype(dtype.numpy)
    got = k(im=data)["d"]
    xs = 2 * np.arange(n)
    picked = [data[:, np.clip(xs + o, 0, cols - 1) if clamped else xs + o] for o in offsets]
    want = picked[0]
    for p in picked[1:]:
        want = want * dtype.numpy.type(0.75) + p
    want = want * dtype.numpy.type(0.5)
    return k.source, got, want


@pytest.mark.parametrize(("n", "width", "offsets", "parallel", "dtype"), [
    (40, 8, (0, 1), False, me.float32),  # 5 full vectors
    (37, 8, (0, 1), True, me.float32),  # a tail of 5, not deinterleaved
    (48, 16, (3, 4), False, me.float32),  # 16 lanes, an odd start
    (48, 24, (0, 1), False, me.float32),  # AVX-512: one step of 16 floats, one of 8
    (36, 12, (1, 2), False, me.float64),  # AVX-512: one step of 8 doubles, one of 4
    (40, 8, (0, 1, 2), False, me.float32),  # a pair and a lone read
    (40, 8, (1, 0), False, me.float32),  # the odd member read first
    (40, 4, (0, 1), False, me.float64),
    (37, 8, (1, 2, 3), True, me.float64),
])
def test_pairs_are_deinterleaved(n: int, width: int, offsets: tuple[int, ...],
                                 parallel: bool, dtype: me.DType) -> None:
    src, got, want = _down(n, width, offsets, dtype=dtype, parallel=parallel)
    np.testing.assert_array_equal(got, want)
    assert f"me_deint_f{dtype.bits}(&b_im[" in src


@pytest.mark.parametrize(("n", "width", "offsets", "clamped"), [
    (40, 8, (-1, 0, 1), True),  # a 3-tap downsampling at repeat_edge's clamps
    (48, 16, (3, 4, 5), False),
    (40, 16, (0, 1, 2, 4), True),  # a triple and a lone read
])
def test_three_taps_share_one_even_array(n: int, width: int, offsets: tuple[int, ...],
                                         clamped: bool) -> None:
    """The third tap ``2 x + c + 2`` is the even array one lane on, one element longer
    (the loop's last lane reads it); clamps that cannot bind inside the loop are seen
    through."""
    src, got, want = _down(n, width, offsets, clamped=clamped)
    np.testing.assert_array_equal(got, want)
    assert f"_e[{width + 1}]" in src and "me_deint_f32(&b_im[" in src


def test_four_taps_are_two_pairs() -> None:
    """Taps c .. c + 3 are two pairs, not a triple and a lone read gcc loads again (a
    triple where a clamp at the left edge leaves three taps linear)."""
    src, got, want = _down(40, 8, (-1, 0, 1, 2), clamped=True)
    np.testing.assert_array_equal(got, want)
    interior = [p for p in src.split("/* loop ") if "me_deint_f32(&b_im[" in p]
    assert any(p.count("_e[8] __attribute__") == 2 for p in interior)


@pytest.mark.parametrize(("width", "offsets", "kwargs"), [
    (8, (0,), {}),  # a lone even read: the dense load would read past it
    (8, (0, 2), {}),  # two even reads
    (4, (0, 1), {}),  # fewer lanes than one shuffle step
    (3, (0, 1), {"dtype": me.float64}),  # not a multiple of one step
    (8, (0, 1), {"guard": True}),  # a guard: maybe not read in every iteration
])
def test_other_reads_are_left_alone(width: int, offsets: tuple[int, ...],
                                    kwargs: dict[str, object]) -> None:
    n = 40
    src, got, want = _down(n, width, offsets, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, want)
    assert "me_deint_" not in src
