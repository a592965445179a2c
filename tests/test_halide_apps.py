"""Halide's apps (``frontends/halide/apps.py``: bilateral grid, interpolate, local Laplacian,
written from their public descriptions) with no schedule (everything inlined, Halide's
default) and with every stage ``compute_root``: Halide's own ``realize`` is the reference.

Lowering cost is guarded by ISL's operation count, not by time: an inlined pipeline must
lower within a tenth of the middle-end's default bound (the bilateral grid inlined went past
the whole bound when every repeated read was its own relation).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from halide_util import STRICT, assert_same, halide_realize

from frontends.halide import IgnoredHalideDirective, apps, compile_pipeline
from middleend.driver.lowering import DEFAULT_MAX_OPS, lower


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """Halide warns that Python float literals are float32 (the apps mean them so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _lower_within(app: apps.App, max_ops: int) -> None:
    built = compile_pipeline(app.output).translate(app.sizes, **app.by_name())
    lower(built.fn, outputs=built.outputs, max_isl_ops=max_ops)


@pytest.mark.parametrize("schedule", [*apps.SCHEDULES, apps.EXPERT])
def test_bilateral_grid(schedule: str) -> None:
    app = apps.bilateral_grid(12, 20, schedule=schedule, r_sigma=0.1)
    k = compile_pipeline(app.output)
    assert_same(k.realize(app.sizes, **app.by_name()),
                halide_realize([app.output], app.sizes, app.inputs), atol=1e-4)


@pytest.mark.parametrize(("schedule", "levels"), [("inline", 2), ("root", 5),
                                                  (apps.EXPERT, 4)])
def test_interpolate(schedule: str, levels: int) -> None:
    """The expert schedule's strips of 32 rows need at least 32 of them (Halide shifts a
    last strip inwards), hence its larger image."""
    rows, cols = (37, 53) if schedule == apps.EXPERT else (16, 24)
    app = apps.interpolate(rows, cols, levels=levels, schedule=schedule)
    k = compile_pipeline(app.output)
    assert_same(k.realize(app.sizes, **app.by_name()),
                halide_realize([app.output], app.sizes, app.inputs), atol=1e-4)


def _within_one(ours: np.ndarray, ref: np.ndarray) -> None:
    """The same uint16 image but for values one apart in under 1 % of the pixels."""
    assert ours.dtype == ref.dtype == np.uint16 and ours.shape == ref.shape
    diff = np.abs(ours.astype(np.int32) - ref.astype(np.int32))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01, (diff.max(), (diff > 0).sum())


def test_local_laplacian() -> None:
    """uint16 results within 1 of Halide's: Halide's ``exp`` is its own polynomial, not
    libm's, and the remapping curve's last bits move a few rounded values by one."""
    app = apps.local_laplacian(16, 24, levels=4, schedule="root")
    k = compile_pipeline(app.output, fp_contract=False)
    ours = k.realize(app.sizes, **app.by_name())
    (ref,) = halide_realize([app.output], app.sizes, app.inputs, STRICT)
    _within_one(ours, ref)


def test_local_laplacian_expert_schedule() -> None:
    """Halide's own app schedule (pyramid levels at the root over the cores, the output's
    levels in rolling buffers of 4 rows per strip of 64 output rows, everything vectorized
    by 8, with RoundUp tails): within 1 of Halide's root build, as above. 70 rows: Halide
    itself refuses the fold factor of 4 on fewer than about 64. The folds are not honoured
    (each level's rows are kept whole per strip) and say so."""
    app = apps.local_laplacian(70, 53, levels=4, schedule=apps.EXPERT)
    with pytest.warns(IgnoredHalideDirective, match="fold_storage"):
        k = compile_pipeline(app.output, fp_contract=False)
    ours = k.realize(app.sizes, **app.by_name())
    ref_app = apps.local_laplacian(70, 53, levels=4, schedule="root")
    (ref,) = halide_realize([ref_app.output], ref_app.sizes, ref_app.inputs, STRICT)
    _within_one(ours, ref)


def test_local_laplacian_inlined_equals_computed_at_root() -> None:
    """With no schedule, the same values as every stage computed at root (checked against
    Halide above) to the last bit: the same float operations in the same order, without
    contraction (Halide's own JIT of the inlined pyramid takes 10-20 s, so it is not the
    reference here)."""
    got = []
    for schedule in apps.SCHEDULES:
        app = apps.local_laplacian(16, 24, levels=2, schedule=schedule)
        got.append(compile_pipeline(app.output, fp_contract=False).realize(
            app.sizes, **app.by_name()))
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize(("name", "kw"), [
    ("bilateral_grid", {}),
    ("interpolate", {"levels": 3}),
    ("local_laplacian", {"levels": 2}),
])
def test_inlined_apps_lower_within_a_tenth_of_the_isl_bound(name: str, kw: dict) -> None:
    """Every read the inlined expression repeats is one relation, built once, and the
    inputs' relations are built only where a pass needs them: far below the bound."""
    app = apps.APPS[name](schedule="inline", **kw)
    _lower_within(app, DEFAULT_MAX_OPS // 10)


@pytest.mark.parametrize("schedule", [apps.TILED, apps.TILED_STORE_AT, apps.TILED_VECTORIZED])
def test_tiled_stencil_chain(schedule: str) -> None:
    """A chain of 6 stencils (crosses and boxes) on a clamped image, the output in 16 x 16
    tiles (the last ones clipped) and every stage computed per tile: Halide's values."""
    app = apps.stencil_chain(37, 45, stages=6, schedule=schedule, tile=16)
    k = compile_pipeline(app.output)
    assert_same(k.realize(app.sizes, **app.by_name()),
                halide_realize([app.output], app.sizes, app.inputs))


@pytest.mark.parametrize("schedule", [apps.TILED, apps.TILED_VECTORIZED])
def test_tiled_stencil_chain_lowers_within_a_tenth_of_the_isl_bound(schedule: str) -> None:
    """8 stages per 32 x 32 tile: each stage's per-tile region is one convex piece and the
    check's dataflow a join (it went past the whole bound when the overlapping pieces of
    each stage's footprint multiplied through the chain)."""
    _lower_within(apps.stencil_chain(100, 107, stages=8, schedule=schedule), DEFAULT_MAX_OPS // 10)


@pytest.mark.parametrize("name", ["nl_means", "lens_blur"])
@pytest.mark.parametrize("schedule", ["inline", apps.EXPERT])
def test_select_on_channel_apps(name: str, schedule: str) -> None:
    """nl_means and lens_blur: a sum whose channel 3 (a select on c) holds the weights,
    computed at the output's rows: Halide's values."""
    app = {"nl_means": apps.nl_means, "lens_blur": apps.lens_blur}[name](schedule=schedule)
    k = compile_pipeline(app.output)
    assert_same(k.realize(app.sizes, **app.by_name()),
                halide_realize([app.output], app.sizes, app.inputs, STRICT), atol=1e-5)


@pytest.mark.parametrize("name", ["nl_means", "lens_blur"])
def test_select_on_channel_apps_lower_within_a_tenth_of_the_isl_bound(name: str) -> None:
    """The per-row footprint of the weighted sum is two pieces ({c = 3} and {c = x's
    channel}) of 8-11 dimensions: their convex hull, tried to write them as one piece,
    went past the whole bound (40 s for nl_means's); it is no longer tried on pieces on
    different affine subspaces, and any convex hull runs under a budget of its own."""
    app = {"nl_means": apps.nl_means, "lens_blur": apps.lens_blur}[name](schedule=apps.EXPERT)
    _lower_within(app, DEFAULT_MAX_OPS // 10)
