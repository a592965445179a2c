"""A store index read from a computed Func (``hist[g[r.x, r.y]] += 1``), compared with
Halide's realize and numpy: the written region is bounded by the range of ``g``'s values
(its clamp), as Halide bounds it."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import UnsupportedHalideFeature, compile_pipeline


def _hist(im: hl.ImageParam, schedule: str, clamped: bool = True) -> hl.Func:
    x, y = hl.Var("x"), hl.Var("y")
    g = hl.Func("bin")
    v = hl.cast(hl.Int(32), im[x, y] * 64)
    g[x, y] = hl.clamp(v, 0, 63) if clamped else v
    h = hl.Func("hist")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    h[x] = 0
    h[g[r.x, r.y]] += 1
    if schedule == "root":
        g.compute_root().vectorize(x, 8)
    elif schedule == "at_row":
        g.compute_at(h, r.y)
        h.vectorize(x, 8)
    return h


@pytest.mark.parametrize("schedule", ["inline", "root", "at_row"])
def test_histogram_of_a_computed_func(schedule: str, rng: np.random.Generator) -> None:
    im = hl.ImageParam(hl.Float(32), 2, "im")
    data = rng.random((13, 27), dtype=np.float32)
    k = check(_hist(im, schedule), [64], [(im, data)])
    ref = np.bincount(np.clip((data * 64).astype(np.int32), 0, 63).ravel(), minlength=64)
    np.testing.assert_array_equal(k.realize([64], im=data), ref)


def test_two_level_index(rng: np.random.Generator) -> None:
    """The bin is a lookup in a Func whose values are clamped two Funcs up."""
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    q = hl.Func("quant")
    q[x, y] = hl.clamp(hl.i32(im[x, y]) // 16 - 2, 0, 11)
    lut = hl.Func("lut")
    lut[x] = 11 - x
    b = hl.Func("bin2")
    b[x, y] = lut[q[x, y]]
    h = hl.Func("hist2")
    r = hl.RDom([(0, im.width()), (0, im.height())], "r")
    h[x] = 0
    h[b[r.x, r.y]] += hl.i32(im[r.x, r.y])
    q.compute_root()
    check(h, [12], [(im, rng.integers(0, 256, (9, 14), dtype=np.uint8))])


def test_an_unclamped_func_index_is_refused(rng: np.random.Generator) -> None:
    """Halide would write wherever the values land; we cannot bound it: refused by name."""
    im = hl.ImageParam(hl.Float(32), 2, "im")
    h = _hist(im, "root", clamped=False)
    with pytest.raises(UnsupportedHalideFeature, match="cannot be bounded") as info:
        compile_pipeline(h).realize([64], im=rng.random((5, 7), dtype=np.float32))
    assert info.value.func == h.name()
