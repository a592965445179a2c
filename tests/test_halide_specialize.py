"""``specialize(cond)`` / ``specialize_fail(msg)`` against Halide's realize: the condition is
evaluated at each call (Params, input and output sizes), the first true branch's schedule is
used (nested ones the same way), the values never change, and one build serves every call
that takes the same branches; ``specialize_fail`` reached raises, as Halide does."""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

from frontends.halide import HalideCheckError, UnsupportedHalideFeature, compile_pipeline
from middleend import ScheduleError


def _vars(names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names.split()]


def _pair(a: hl.ImageParam, p: hl.Param) -> tuple[hl.Func, hl.Func]:
    x, y = _vars("x y")
    f, g = hl.Func("f"), hl.Func("g")
    f[x, y] = a[x, y] * 2 + hl.f32(p)
    g[x, y] = f[x, y] + f[x + 1, y] * 0.5
    return f, g


def _run(k, outs: list[hl.Func], sizes: list[int], inputs: list) -> None:
    """Ours and Halide's on the same inputs."""
    ours = k.realize(sizes, **{q.name(): v for q, v in inputs})
    assert_same(ours, halide_realize(outs, sizes, inputs))


def test_specialize_on_a_param(rng: np.random.Generator) -> None:
    """``f.specialize(p > 0).vectorize(x, 8)``: a Param read only in values stays a kernel
    argument; the branch, not its value, keys the build."""
    a, p = hl.ImageParam(hl.Float(32), 2, "a"), hl.Param(hl.Int(32), "p")
    f, g = _pair(a, p)
    x, y = g.args()
    f.compute_root().specialize(p > 0).vectorize(x, 8)
    g.specialize(p > 100).parallel(y)
    k = compile_pipeline(g)
    data = rng.random((9, 31), dtype=np.float32)
    for pv in (3, -2, 7, 0, 500, 3, -2):  # the choices are remembered per value of p
        _run(k, [g], [30, 9], [(a, data), (p, pv)])
    assert k.compiles == 3  # (f vectorized, g serial), (neither), (both)
    assert len(k._builds) == 3 and all(spec.index_values == () for spec in k._builds)


@pytest.mark.parametrize("size", [[64, 6], [19, 6]])
def test_specialize_on_the_output_and_input_sizes(size: list[int],
                                                  rng: np.random.Generator) -> None:
    """``out.width() >= 64`` (the output buffer, which realize supplies: not an input) and
    ``a.width()`` / ``a.dim(1).stride()`` of an ImageParam."""
    a, p = hl.ImageParam(hl.Float(32), 2, "a"), hl.Param(hl.Int(32), "p")
    f, g = _pair(a, p)
    x, y = g.args()
    xo, xi = _vars("xo xi")
    g.specialize(g.output_buffer().width() >= 64).split(x, xo, xi, 16).vectorize(xi, 8) \
        .parallel(y)
    f.compute_at(g, y).specialize((a.width() > 40) & (a.dim(1).stride() > 40)) \
        .vectorize(x, 4)
    k = compile_pipeline(g)
    assert g.name() not in k.input_names
    data = rng.random((size[1], size[0] + 1), dtype=np.float32)
    _run(k, [g], size, [(a, data), (p, 2)])
    (spec,) = k._builds
    big = size[0] >= 64
    assert spec.choices == ((f.name(), 0, (0,) if big else ()),
                            (g.name(), 0, (0,) if big else ()))


def test_nested_and_several_specializations_in_updates(rng: np.random.Generator) -> None:
    """Specializations of specializations, several per stage (the first true one wins), in
    a pure definition and an update, a Bool Param and a Tuple output's buffer."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p, b = hl.Param(hl.Int(32), "p"), hl.Param(hl.Bool(), "b")
    x, y, yo, yi = _vars("x y yo yi")
    r = hl.RDom([(0, 3)], "r")
    h, t = hl.Func("h"), hl.Func("t")
    h[x, y] = a[x, y]
    h[x, y] += a[x + r.x, y] * hl.f32(p)
    t[x, y] = (h[x, y] * 2, h[x, y] - 1)
    h.compute_root()
    s = h.specialize(p > 0)
    s.vectorize(x, 4)
    s.specialize(b).parallel(y)
    h.specialize(p < -5).split(y, yo, yi, 2)
    u = h.update(0).specialize(b)
    u.vectorize(x, 8)
    u.specialize(p == 3).parallel(y)
    t.specialize(t.output_buffers()[1].height() > 5).parallel(y)
    k = compile_pipeline(t)
    data = rng.random((8, 28), dtype=np.float32)  # Halide rounds x up to 24
    hn, tn = h.name(), t.name()
    want = {(3, True, 8): ((0, 0), (0, 0), (0,)), (3, False, 5): ((0,), (), ()),
            (-9, True, 8): ((1,), (0,), (0,)), (-1, False, 8): ((), (), (0,)),
            (4, True, 5): ((0, 0), (0,), ())}
    for (pv, bv, hh), paths in want.items():
        _run(k, [t], [21, hh], [(a, data[:hh]), (p, pv), (b, bv)])
        spec = list(k._builds)[-1]
        assert spec.choices == ((hn, 0, paths[0]), (hn, 1, paths[1]), (tn, 0, paths[2]))


def test_specialize_fail(rng: np.random.Generator) -> None:
    """Reached (no condition holds): Halide's error, with its message; not reached: the
    values."""
    a, p = hl.ImageParam(hl.Float(32), 2, "a"), hl.Param(hl.Int(32), "p")
    f, g = _pair(a, p)
    x, _ = g.args()
    g.specialize(g.output_buffer().width() % 8 == 0).vectorize(x, 8)
    g.specialize(p == 1)
    g.specialize_fail("width must be a multiple of 8 unless p is 1")
    k = compile_pipeline(g)
    data = rng.random((5, 25), dtype=np.float32)
    _run(k, [g], [24, 5], [(a, data), (p, 4)])
    _run(k, [g], [21, 5], [(a, data), (p, 1)])
    with pytest.raises(hl.HalideError, match="multiple of 8 unless p is 1"):
        halide_realize([g], [21, 5], [(a, data), (p, 4)])
    with pytest.raises(HalideCheckError, match=re.escape(
            f"Func {g.name()!r} pure definition: a schedule specialized with "
            "specialize_fail() was chosen: width must be a multiple of 8 unless p is 1")):
        k.realize([21, 5], a=data, p=4)
    assert k.compiles == 2


def test_refused_specializations() -> None:
    """An inlined Func's specialization (Halide refuses it too) and a condition that reads
    a Func (not translated) are refused at compile_pipeline, naming the Func."""
    a, p = hl.ImageParam(hl.Float(32), 2, "a"), hl.Param(hl.Int(32), "p")
    f, g = _pair(a, p)
    f.specialize(p > 0).vectorize(f.args()[0], 4)
    with pytest.raises(ScheduleError, match=re.escape(f"Func {f.name()!r} is computed inline "
                                                      "and has a specialize()")):
        compile_pipeline(g)
    a2 = hl.ImageParam(hl.Float(32), 2, "a2")
    f2, g2 = _pair(a2, p)
    f2.compute_root()
    g2.specialize(f2[0, 0] > 0.5)
    with pytest.raises(UnsupportedHalideFeature, match=re.escape(
            f"Func {g2.name()!r} pure definition: a specialize() condition that uses the "
            f"call {f2.name()!r}")):
        compile_pipeline(g2)


def test_a_param_split_factor_in_a_branch(rng: np.random.Generator) -> None:
    """A Param that is a split factor only in a specialized schedule still decides bounds:
    the build is specialized on its value too; the producer is computed at the consumer's
    rows in both branches."""
    a, p = hl.ImageParam(hl.Float(32), 2, "a"), hl.Param(hl.Int(32), "p")
    f, g = _pair(a, p)
    x, y = g.args()
    xo, xi = _vars("xo xi")
    f.compute_at(g, y)
    g.specialize(p > 1).split(x, xo, xi, p)
    k = compile_pipeline(g)
    assert k.index_params == {p.name()}
    data = rng.random((9, 31), dtype=np.float32)
    for pv in (4, 1, 3, 4):  # (Halide checks the factor is positive even when not taken)
        _run(k, [g], [30, 9], [(a, data), (p, pv)])
    assert k.compiles == 3
