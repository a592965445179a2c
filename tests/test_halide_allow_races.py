"""``allow_race_conditions()`` against Halide's realize. Halide's own check of a parallel or
vectorized RVar is syntactic; the directive silences it. Here the exact legality check
decides: a loop it proves race-free runs (Halide's values, deterministic in both); a loop
that really races, whose result Halide leaves to the race, is refused in one line naming
the Func, the stage, the loop and the dependence."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check

from frontends.halide import UnsupportedHalideFeature, compile_pipeline


def _a() -> hl.ImageParam:
    return hl.ImageParam(hl.Float(32), 2, "a")


def _data(rng: np.random.Generator) -> np.ndarray:
    return rng.random((16, 32), dtype=np.float32)


@pytest.mark.parametrize("loop", ["parallel", "vectorize", "split_parallel"])
def test_a_scatter_without_a_race_runs(loop: str, rng: np.random.Generator) -> None:
    """``f[2 * r.x + 1] = ...``: Halide cannot prove the RVar's stores distinct (it refuses
    the loop without the directive); they are, and the legality check proves it."""
    x = hl.Var("x")
    a = _a()
    r = hl.RDom([(0, 12)])
    f = hl.Func(f"ar_scatter_{loop}")
    f[x] = -1.0
    f[2 * r.x + 1] = a[r.x, 3] * 2
    u = f.update().allow_race_conditions()
    if loop == "parallel":
        u.parallel(r.x)
    elif loop == "vectorize":
        u.vectorize(r.x, 4)
    else:
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        u.split(r.x, ro, ri, 5).parallel(ro).vectorize(ri)
    check(f, [26], [(a, _data(rng))])


def test_an_accumulation_into_distinct_elements_runs(rng: np.random.Generator) -> None:
    """``f[r.x + 2] += a[r.x, y]`` over a parallel RDom loop: each instance its own
    element (read and written), no race."""
    x, y = hl.Var("x"), hl.Var("y")
    a = _a()
    r = hl.RDom([(0, 8)])
    f = hl.Func("ar_accumulate")
    f[x, y] = a[x, y]
    f[r.x + 2, y] = f[r.x + 2, y] + a[r.x, y]
    f.update().allow_race_conditions().parallel(r.x).parallel(y)
    check(f, [12, 6], [(a, _data(rng))])


def test_the_directive_without_a_concurrent_loop_changes_nothing(
        rng: np.random.Generator) -> None:
    """On the pure definition and on an update with no parallel loop (refused before)."""
    x, y = hl.Var("x"), hl.Var("y")
    a = _a()
    f = hl.Func("ar_serial")
    f[x, y] = a[x, y] + 1
    f[x, y] += 1
    f.allow_race_conditions().parallel(y)
    f.update(0).allow_race_conditions()
    check(f, [17, 9], [(a, _data(rng))])


def _racing(kind: str) -> hl.Func:
    x = hl.Var("x")
    a = _a()
    f = hl.Func(f"ar_race_{kind}")
    f[x] = 0.0
    if kind == "scatter":  # two RVar values per element, in parallel
        r = hl.RDom([(0, 8)])
        f[r.x % 2] = a[r.x, 0]
        f.update().allow_race_conditions().parallel(r.x)
    elif kind == "sum":  # every lane adds into f[0]
        r = hl.RDom([(0, 8)])
        f[0] += a[r.x, 0]
        f.update().allow_race_conditions().vectorize(r.x)
    else:  # a scan: each instance reads the one before
        r = hl.RDom([(1, 7)])
        f[r.x] = f[r.x - 1] + a[r.x, 0]
        f.update().allow_race_conditions().parallel(r.x)
    f.compile_jit()  # Halide accepts each of these
    return f


@pytest.mark.parametrize(("kind", "tag"), [("scatter", "parallel"), ("sum", "vector"),
                                           ("scan", "parallel")])
def test_a_real_race_is_refused_in_one_line(kind: str, tag: str) -> None:
    f = _racing(kind)
    with pytest.raises(UnsupportedHalideFeature) as info:
        compile_pipeline(f).realize([8], a=np.zeros((2, 8), np.float32))
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert info.value.func == f.name() and info.value.stage == 1
    assert f"allow_race_conditions() where the {tag} loop" in msg, msg
    assert "carry the dependence {" in msg and "atomic()" in msg, msg
