"""Helpers of tests/test_halide_*.py: realize a Halide pipeline with Halide itself and with
the middle-end's front-end on the same inputs, and compare (Halide is the reference)."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np

from frontends.halide import HalideKernel, compile_pipeline

# The C declarations of Halide's buffer ABI (HalideRuntime.h's halide_buffer_t and
# halide_dimension_t, under short names) that the tests' extern stages are written against
BUFFER_T_C = r"""
#include <stdint.h>
#include <stddef.h>
typedef struct { int32_t min, extent, stride; uint32_t flags; } dim_t;
typedef struct { uint8_t code, bits; uint16_t lanes; } type_t;
typedef struct { uint64_t device; const void *device_interface; uint8_t *host;
                 uint64_t flags; type_t type; int32_t dimensions; dim_t *dim;
                 void *padding; } buf_t;
"""

# (hl.ImageParam or hl.Param, numpy array or Python number) pairs (Params are unhashable)
Inputs = list[tuple[Any, Any]]

# Halide's JIT target, and the same with strict_float: by default Halide's LLVM code
# reassociates and contracts float arithmetic into FMAs (a00*x + a01*y + b0 runs as
# fma(a00, x, fma(a01, y, b0))); the front-end evaluates in the written order, which is what
# Halide computes with StrictFloat.
STRICT = hl.get_jit_target_from_environment().with_feature(hl.TargetFeature.StrictFloat)


def as_list(r: Any) -> list[np.ndarray]:
    """An array or a list of arrays (ours), or a Buffer / Realization (Halide's), as a list."""
    if isinstance(r, hl.Buffer):
        return [np.asarray(r)]
    if isinstance(r, np.ndarray):
        return [r]
    return [np.asarray(b) for b in r]


def set_inputs(inputs: Inputs) -> None:
    for p, v in inputs:
        p.set(hl.Buffer(v) if isinstance(p, hl.ImageParam) else v)


def halide_realize(outputs: list[hl.Func], sizes: list[int], inputs: Inputs,
                   target: hl.Target | None = None) -> list[np.ndarray]:
    """Halide's own result (the reference), one array per output / Tuple element."""
    set_inputs(inputs)
    pipe = hl.Pipeline(outputs)
    r = pipe.realize(sizes) if target is None else pipe.realize(sizes, target)
    return as_list(r)


def by_name(inputs: Inputs) -> dict[str, Any]:
    return {p.name(): v for p, v in inputs}


def assert_same(ours: Any, ref: list[np.ndarray], atol: float = 1e-5) -> None:
    """Same count, shapes and dtypes; integers exactly equal, floats within 1e-5."""
    got = as_list(ours)
    assert len(got) == len(ref), (len(got), len(ref))
    for k, (a, b) in enumerate(zip(got, ref, strict=True)):
        assert a.dtype == b.dtype, (k, a.dtype, b.dtype)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        if a.dtype.kind in "iub":
            bad = np.argwhere(a != b)
            assert bad.size == 0, (k, f"{len(bad)} differ, first at {bad[:3].tolist()}",
                                   a[tuple(bad[0])], b[tuple(bad[0])])
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=atol, err_msg=f"output {k}")


def check(outputs: hl.Func | list[hl.Func], sizes: list[int], inputs: Inputs | None = None,
          target: hl.Target | None = None, **compile_kw: Any) -> HalideKernel:
    """Compile with the front-end, realize, compare with Halide; return the kernel."""
    outs = outputs if isinstance(outputs, list) else [outputs]
    inputs = inputs or []
    k = compile_pipeline(outs, **compile_kw)
    ours = k.realize(sizes, **by_name(inputs))
    assert_same(ours, halide_realize(outs, sizes, inputs, target))
    return k
