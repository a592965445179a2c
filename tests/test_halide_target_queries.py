"""Halide's target queries (``target_arch_is``, ``target_os_is``, ``target_bits``,
``target_has_feature``, ``target_natural_vector_size``) answered for the machine the cpu
target builds for, against Halide's ``realize(sizes, hl.get_host_target())`` on this
machine: every arch, OS and feature Halide knows and the vector size of every type, in
values, an RDom extent, ``specialize`` conditions and a ``vectorize`` factor, under
several schedules; and the one-line refusals (a target that does not say which machine it
builds for, a feature Halide decides by CPU model where it may apply)."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, by_name

import middleend as me
from frontends.halide import UnsupportedHalideFeature, compile_pipeline
from frontends.halide.target_queries import _X86_BY_MODEL

HOST = hl.get_host_target()


def _vs_halide(f: hl.Func, sizes: list[int], inputs: list | None = None) -> None:
    inputs = inputs or []
    for p, v in inputs:
        p.set(hl.Buffer(v))
    ref = f.realize(sizes, HOST)
    assert_same(compile_pipeline(f).realize(sizes, **by_name(inputs)), [np.asarray(ref)])


def _table(queries: list[hl.Expr], schedule: str) -> hl.Func:
    """f(x) = the x-th query's value, as an int32 (a balanced sum of selects: a chain of
    125 would nest deeper than the wire format allows)."""
    x = hl.Var("x")
    terms = [hl.select(x == k, hl.i32(q), 0) for k, q in enumerate(queries)]
    while len(terms) > 1:
        terms = [terms[k] + terms[k + 1] if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
    f = hl.Func("queries")
    f[x] = terms[0]
    if schedule == "vectorized":
        f.vectorize(x, 8)
    elif schedule == "parallel":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        f.split(x, xo, xi, 16).parallel(xo)
    return f


def _model_features_here() -> set[str]:
    """The features Halide decides by CPU model that the compiler says may apply here
    (refused; on this test's AVX2 machine: none)."""
    m = me.target_machine("cpu")
    assert m is not None
    return {f for f, macro in _X86_BY_MODEL.items() if m.defines(macro)}


@pytest.mark.parametrize("schedule", ["plain", "vectorized", "parallel"])
def test_every_query_value(schedule: str) -> None:
    """Every arch, OS and feature (but FeatureEnd, which is no feature, and the model-
    decided ones where refused), the bits, and the vector size of every type."""
    skip = {"FeatureEnd"} | _model_features_here()
    qs = [hl.target_arch_is(v) for v in hl.TargetArch.__members__.values()]
    qs += [hl.target_os_is(v) for v in hl.TargetOS.__members__.values()]
    qs += [hl.target_has_feature(v) for n, v in hl.TargetFeature.__members__.items()
           if n not in skip]
    qs += [hl.target_bits()]
    qs += [hl.target_natural_vector_size(t) for t in (
        hl.UInt(8), hl.Int(16), hl.Int(32), hl.UInt(64), hl.Float(16), hl.Float(32),
        hl.Float(64), hl.Bool())]
    _vs_halide(_table(qs, schedule), [len(qs)])


def test_queries_in_rdom_specialize_and_vectorize(rng: np.random.Generator) -> None:
    """An RDom as long as a vector of uint8, a value chosen by a feature, specializations
    on the ISA and the arch, and a vector width from the query."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    r = hl.RDom([(0, hl.target_natural_vector_size(hl.UInt(8)))])
    f = hl.Func("f")
    f[x] = hl.target_bits()
    f[x] += inp[x + r.x] * hl.select(hl.target_has_feature(hl.TargetFeature.AVX2), 2, 3)
    f.specialize(hl.target_has_feature(hl.TargetFeature.AVX)).vectorize(
        x, hl.target_natural_vector_size(hl.Int(32)))
    f.update().specialize(hl.target_arch_is(hl.TargetArch.X86)).parallel(x)
    data = rng.integers(-1000, 1000, 200, dtype=np.int32)
    _vs_halide(f, [40], [(inp, data)])


def test_refusals() -> None:
    """One line each: the gpu target does not say which machine its code runs on; a
    feature Halide decides by model, where the compiler says it may apply."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    x = hl.Var("x")
    f = hl.Func("g")
    f[x] = x * hl.target_natural_vector_size(hl.Float(32))
    with pytest.raises(UnsupportedHalideFeature) as e:
        compile_pipeline(f, target="gpu", dialect="opencl")
    assert "\n" not in str(e.value)
    assert "target_natural_vector_size() on the gpu target, which does not say" in str(e.value)
    for feature in _model_features_here():
        g = hl.Func("h")
        g[x] = hl.select(hl.target_has_feature(hl.TargetFeature.__members__[feature]), 1, 0)
        with pytest.raises(UnsupportedHalideFeature, match="by the CPU's model"):
            compile_pipeline(g)
