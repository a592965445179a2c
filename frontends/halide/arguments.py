"""The arguments of a Halide pipeline's ``realize``, checked and split into arrays
(ImageParams) and numpy scalars of their Params' types: shared by an ordinary pipeline
(:mod:`.pipeline`) and one split around extern stages (:mod:`.externs`), which must
accept and refuse the same arguments with the same messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import halide as hl
import numpy as np

from frontends.halide.checks import Checks
from frontends.halide.errors import HalideCheckError
from frontends.halide.evaluate import ScalarKind
from frontends.halide.hir import HParameter
from middleend.ir.errors import KernelArgumentError


def split_arguments(params: Mapping[str, HParameter], kinds: Mapping[str, ScalarKind],
                    inputs: Mapping[str, Any], outputs: object, label: str
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.generic]]:
    """``(images, scalars)`` of ``inputs``; errors name the input and the pipeline
    (``outputs``, ``label``)."""
    images: dict[str, np.ndarray] = {}
    scalars: dict[str, np.generic] = {}
    for name, p in sorted(params.items()):
        if name not in inputs:
            raise KernelArgumentError(f"Halide pipeline {outputs}: missing "
                                      f"{'ImageParam' if p.is_buffer else 'Param'} "
                                      f"{name!r}; it needs {sorted(params)}")
        v = inputs[name]
        if not p.is_buffer:
            scalars[name] = kinds[name].value(v, label)
            continue
        if isinstance(v, hl.Buffer):
            mins = [v.dim(d).min() for d in range(v.dimensions())]
            if any(mins):
                raise HalideCheckError(
                    f"Halide pipeline {label}: ImageParam {name!r}: an hl.Buffer whose "
                    f"mins are {mins} (only buffers with every min 0 are supported: "
                    "pass the array)")
        images[name] = np.asarray(v)
    return images, scalars


def realize_arguments(params: Mapping[str, HParameter], kinds: Mapping[str, ScalarKind],
                      checks: Checks, inputs: Mapping[str, Any], outputs: object,
                      label: str) -> tuple[dict[str, np.ndarray], dict[str, np.generic]]:
    """What ``realize_with`` does with its inputs before building anything: unknown names
    refused, :func:`split_arguments`, then the pipeline's own checks (requirements, input
    bounds) run on the values."""
    unknown = sorted(set(inputs) - set(params))
    if unknown:
        raise KernelArgumentError(f"unknown input(s) {unknown}; the pipeline takes "
                                  f"{sorted(params)}")
    images, scalars = split_arguments(params, kinds, inputs, outputs, label)
    checks.run(images, scalars)
    return images, scalars
