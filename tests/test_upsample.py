"""Float reads at half the rate of a vector loop (backends/cpu/upsample.py): ``im[x / 2]``
read through a dense load and a shuffle into a local array filled before the loop, left
alone where that does not apply; results equal numpy's bit for bit either way."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from isa_harness import ISAS, build_and_run

import middleend as me
from backends.cpu.upsample import UPSAMPLE_C

ROWS = 6


def _up(n: int, width: int, offsets: tuple[int, ...], dtype: me.DType = me.float32,
        start: int = 0, guard: bool = False, tiled: bool = False
        ) -> tuple[str, np.ndarray, np.ndarray]:
    """u[y, x] = (im[y / 2, (x + o) / 2] over ``offsets``, each earlier term weighted
    0.75) for ``start <= x < n``, x vectorized by ``width``; ``tiled``: ``im`` a producer
    computed per row of ``u`` into a buffer stored per row (its offsets). Returns the
    kernel's C, its result (the columns from ``start``) and numpy's."""
    cols = (n + max(offsets)) // 2 + 1
    with me.Function("up") as f:
        y, x = me.Var("y", 0, ROWS), me.Var("x", start, n)
        src = me.Input("src", [ROWS // 2, cols], dtype)
        if tiled:
            py, px = me.Var("py", 0, ROWS // 2), me.Var("px", 0, cols)
            im = me.Computation("im", [py, px], src[py, px] * 2.0, dtype=dtype)
        else:
            im = src
        total = im[y // 2, (x + offsets[0]) // 2]
        for o in offsets[1:]:
            total = total * 0.75 + im[y // 2, (x + o) // 2]  # weights tell the reads apart
        u = me.Computation("u", [y, x], total, dtype=dtype,
                           predicate=src[0, 0] >= 0 if guard else None)
        u.vectorize(x, width)
        if tiled:
            im.compute_at(u, y)
    k = f.compile(outputs=[u])
    data = np.random.default_rng(3).random((ROWS // 2, cols)).astype(dtype.numpy)
    got = k(src=data)["u"][:, start:]
    base = data * dtype.numpy.type(2.0) if tiled else data
    xs = np.arange(start, n)
    rows = np.arange(ROWS) // 2
    want = base[rows][:, (xs + offsets[0]) // 2]
    for o in offsets[1:]:
        want = want * dtype.numpy.type(0.75) + base[rows][:, (xs + o) // 2]
    return k.source, got, want


@pytest.mark.parametrize(("n", "width", "offsets", "kwargs"), [
    (40, 8, (0, 1), {}),  # 5 full vectors, even and odd starts
    (37, 8, (0, 1), {}),  # a tail of 5, read as it is
    (48, 16, (1, 3), {}),  # 16 lanes, two odd starts
    (48, 24, (0, 1), {}),  # AVX-512: one step of 16 floats, one of 8
    (36, 12, (0, 1), {"dtype": me.float64}),  # AVX-512: one step of 8 doubles, one of 4
    (40, 4, (1, 0), {"dtype": me.float64}),
    (43, 8, (0, 1), {"start": 3}),  # the loop starts at an odd x
    (40, 8, (0, 1), {"tiled": True}),  # a buffer stored per row: its offsets
])
def test_half_rate_reads_are_upsampled(n: int, width: int, offsets: tuple[int, ...],
                                       kwargs: dict[str, object]) -> None:
    src, got, want = _up(n, width, offsets, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, want)
    bits = kwargs.get("dtype", me.float32).bits  # type: ignore[union-attr]
    assert f"me_up2_f{bits}(&b_{'im' if kwargs.get('tiled') else 'src'}[" in src


@pytest.mark.parametrize(("width", "kwargs"), [
    (4, {}),  # fewer float lanes than one shuffle step
    (10, {"dtype": me.float64}),  # not a multiple of one step (and no tail)
    (8, {"dtype": me.int32}),  # integers: no helper
    (8, {"guard": True}),  # a guard: maybe not read in every iteration
])
def test_other_reads_are_left_alone(width: int, kwargs: dict[str, object]) -> None:
    src, got, want = _up(40, width, (0, 1), **kwargs)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, want)
    assert "me_up2_" not in src


HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    int bad = 0;
    for (int w = 4; w <= 48; w += 4) for (int odd = 0; odd < 2; odd++) {
        int64_t need = (w - 1 + odd) / 2 + 1;  /* exactly what the helper may read */
        float* p = malloc(need * sizeof *p);
        double* q = malloc(need * sizeof *q);
        float o[48]; double d[48];
        for (int64_t i = 0; i < need; i++) { p[i] = (float)i; q[i] = (double)i; }
        if (w % 8 == 0) {
            me_up2_f32(p, o, w, odd);
            for (int k = 0; k < w; k++) bad += o[k] != p[(k + odd) / 2];
        }
        me_up2_f64(q, d, w, odd);
        for (int k = 0; k < w; k++) bad += d[k] != q[(k + odd) / 2];
        free(p); free(q);
    }
    printf("%d\n", bad);
    return bad != 0;
}
"""


@pytest.mark.parametrize("isa", ISAS)
def test_helpers_on_every_isa(isa: list[str], tmp_path: pathlib.Path) -> None:
    """The helpers' every path (8-float steps, and 16 where 512-bit vectors exist) gives
    ``p[(k + odd) / 2]`` and reads no element past the last one needed (AddressSanitizer
    on buffers of exactly that size); built for ISAs this machine may lack, run where it
    has them."""
    build_and_run("#include <stdint.h>\n" + UPSAMPLE_C + HARNESS, isa, tmp_path)
