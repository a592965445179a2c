"""Stride-2 float reads of a vector loop (backends/cpu/deinterleave.py): read through
dense loads and shuffles where both members of a pair are read in every iteration, left
alone elsewhere; results equal numpy's bit for bit either way."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
from isa_harness import ISAS, build_and_run

import middleend as me
from backends.cpu.deinterleave import DEINT_C

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
    assert re.search(rf"me_deint3?_f{dtype.bits}\(&b_im\[", src)


@pytest.mark.parametrize(("n", "width", "offsets", "clamped"), [
    (40, 8, (-1, 0, 1), True),  # a 3-tap downsampling at repeat_edge's clamps
    (48, 16, (3, 4, 5), False),
    (40, 16, (0, 1, 2, 4), True),  # a triple and a lone read
])
def test_three_taps_share_one_even_array(n: int, width: int, offsets: tuple[int, ...],
                                         clamped: bool) -> None:
    """The third tap ``2 x + c + 2`` is a third array, the even elements one lane on,
    filled with the pair's (never read through the even array at ``x + 1``: an unaligned
    load across stores in flight); clamps that cannot bind inside the loop are seen
    through."""
    src, got, want = _down(n, width, offsets, clamped=clamped)
    np.testing.assert_array_equal(got, want)
    assert f"_s[{width}]" in src and "me_deint3_f32(&b_im[" in src
    assert not re.search(r"me_di\d+_e\[(\d+\] =|[^]]* \+ 1\])", src)


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


HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    int bad = 0;
    for (int w = 4; w <= 48; w += 4) {
        int64_t n = 2 * w + 1;  /* exactly what the triple helper may read: p[0 .. 2w] */
        float* p = malloc(n * sizeof *p);
        double* q = malloc(n * sizeof *q);
        float e[48], o[48], s[48];
        double de[48], dd[48], ds[48];
        for (int64_t i = 0; i < n; i++) {  /* -0.0 among them: copied, never computed */
            p[i] = i % 5 == 2 ? -0.0f : (float)i;
            q[i] = i % 5 == 2 ? -0.0 : (double)i;
        }
        if (w % 8 == 0) {
            me_deint3_f32(p, e, o, s, w);
            for (int k = 0; k < w; k++)
                bad += memcmp(&e[k], &p[2 * k], sizeof *p) != 0
                    || memcmp(&o[k], &p[2 * k + 1], sizeof *p) != 0
                    || memcmp(&s[k], &p[2 * k + 2], sizeof *p) != 0;
            me_deint_f32(p, e, o, w);
            for (int k = 0; k < w; k++) bad += e[k] != p[2 * k] || o[k] != p[2 * k + 1];
        }
        me_deint3_f64(q, de, dd, ds, w);
        for (int k = 0; k < w; k++)
            bad += memcmp(&de[k], &q[2 * k], sizeof *q) != 0
                || memcmp(&dd[k], &q[2 * k + 1], sizeof *q) != 0
                || memcmp(&ds[k], &q[2 * k + 2], sizeof *q) != 0;
        free(p); free(q);
    }
    printf("%d\n", bad);
    return bad != 0;
}
"""


@pytest.mark.parametrize("isa", ISAS)
def test_helpers_on_every_isa(isa: list[str], tmp_path: pathlib.Path) -> None:
    """The helpers' every path (8-float steps, and 16 where 512-bit vectors exist) gives
    the even, odd and shifted even elements bit for bit (a -0.0 kept) and the triple
    reads nothing past ``p[2 w]`` (AddressSanitizer on buffers of exactly that size);
    built for ISAs this machine may lack, run where it has them."""
    build_and_run("#include <stdint.h>\n" + DEINT_C + HARNESS, isa, tmp_path)
