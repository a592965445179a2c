"""Halide's own checks, made at call time as Halide makes them: ``Pipeline.add_requirement``,
the ImageParam constraints (``dim(d).set_min/set_extent/set_bounds/set_stride``), the Param
ranges (``set_range``/``set_min_value``/``set_max_value``), and the types and dimensions of
the inputs.

Halide compiles them into its pipeline as assertions. They read only Params and the shapes of
the inputs (Halide refuses a requirement that reads a Func), so we evaluate them in Python
before the kernel is built or called, with Halide's arithmetic (integers wrap at their width,
``/`` and ``%`` are Euclidean, float32 rounds). A violated check raises
:class:`~.errors.HalideCheckError` with what Halide's message says, in our words: the
requirement and its message, or the input, the dimension and the sizes.

The requirements are in the serialized pipeline; the constraints and ranges are not (Halide
serializes an ImageParam or Param bound at call time as a name and a type only), so they are
read from the live ``hl.Parameter`` objects that ``hl.serialize_pipeline(get_params=True)``
hands back, each expression turned into our own form through a small serialized pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import halide as hl
import numpy as np

from frontends.halide.errors import HalideCheckError, UnsupportedHalideFeature
from frontends.halide.evaluate import (
    Env,
    Image,
    expr_text,
    message_text,
    np_type,
    unsupported_node,
    value_text,
)
from frontends.halide.evaluate import evaluate as ev
from frontends.halide.hir import HExpr, HParameter, HPipeline, HRequirement
from frontends.halide.reader import read_pipeline

_DIM_PROPS = ("min", "extent", "stride")


@dataclass(frozen=True)
class DimConstraint:
    """``name.what.dim == expr`` for an ImageParam."""

    param: str
    dim: int
    what: str  # "min", "extent" or "stride"
    expr: HExpr


@dataclass(frozen=True)
class ParamRange:
    param: str
    lo: HExpr | None
    hi: HExpr | None


@dataclass(frozen=True)
class Checks:
    """Every check of one pipeline, in the order Halide makes them (requirements first)."""

    label: str  # the pipeline, for messages (its outputs)
    params: Mapping[str, HParameter] = field(repr=False)
    requirements: tuple[HRequirement, ...] = ()
    dims: tuple[DimConstraint, ...] = ()
    ranges: tuple[ParamRange, ...] = ()
    image_types: dict[str, np.dtype] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "image_types", {n: np_type(p.type) for n, p in
                                                 self.params.items() if p.is_buffer})

    def run(self, images: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
        """Raise :class:`HalideCheckError` for the first check the inputs violate.
        ``images``: the ImageParams' arrays as given (numpy axes), ``scalars``: the Params'
        values (already of their types, see :func:`scalar_value`)."""
        for name, arr in images.items():
            self._check_image(name, arr)
        if not (self.requirements or self.ranges or self.dims):
            return
        env = Env({n: Image.of(a) for n, a in images.items()}, dict(scalars))
        for r in self.requirements:
            if not bool(ev(r.condition, env)):
                msg = message_text(r.message, env) if r.message is not None else ""
                raise HalideCheckError(
                    f"Halide pipeline {self.label}: requirement failed: "
                    f"{expr_text(r.condition)}" + (f": {msg}" if msg else ""))
        for rg in self.ranges:
            v = scalars[rg.param]
            for bound, word, bad in ((rg.lo, "least", np.less), (rg.hi, "most", np.greater)):
                if bound is None:
                    continue
                b = ev(bound, env)
                if bool(bad(v, b)):
                    raise HalideCheckError(
                        f"Halide pipeline {self.label}: Param {rg.param!r} is "
                        f"{value_text(v)} but must be at {word} {value_text(b)}")
        for c in self.dims:
            img = env.images[c.param]
            actual = img.prop(c.what, c.dim)
            want = ev(c.expr, env)
            if actual is None or int(want) != actual:
                shape = images[c.param].shape
                got = ("not a whole number of elements" if actual is None else str(actual))
                raise HalideCheckError(
                    f"Halide pipeline {self.label}: input {c.param!r} dimension {c.dim} "
                    f"(numpy axis {len(shape) - 1 - c.dim} of shape {shape}) has {c.what} "
                    f"{got}, but the pipeline requires {c.param}.{c.what}.{c.dim} == "
                    f"{expr_text(c.expr)} (= {value_text(want)})")

    def _check_image(self, name: str, arr: np.ndarray) -> None:
        p = self.params[name]
        want = self.image_types[name]
        if arr.ndim != p.dimensions:
            raise HalideCheckError(
                f"Halide pipeline {self.label}: ImageParam {name!r} has {p.dimensions} "
                f"dimension(s), got an array of shape {arr.shape}")
        if arr.dtype != want:
            raise HalideCheckError(
                f"Halide pipeline {self.label}: ImageParam {name!r} has type {p.type}, got "
                f"an array of {arr.dtype}")


def build_checks(hp: HPipeline, live: Mapping[str, Any], label: str) -> Checks:
    """The checks of ``hp``; ``live``: the ``hl.Parameter`` of each external parameter
    (from ``hl.serialize_pipeline(..., get_params=True)``). Refuses, naming it, a check
    the evaluator cannot evaluate, rather than skipping it."""
    params = {p.name: p for p in hp.external_parameters}
    wanted: list[tuple[str, int, str, Any]] = []  # (param, dim or -1, what, hl.Expr)
    for name, lp in sorted(live.items()):
        if name not in params:
            continue
        if lp.is_buffer():
            for d in range(lp.dimensions()):
                for what in _DIM_PROPS:
                    e = getattr(lp, f"{what}_constraint")(d)
                    if e.defined():
                        wanted.append((name, d, what, e))
        else:
            for what, e in (("lo", lp.min_value()), ("hi", lp.max_value())):
                if e.defined():
                    wanted.append((name, -1, what, e))
    exprs = _read_exprs([w[3] for w in wanted])
    dims: list[DimConstraint] = []
    lo_hi: dict[str, dict[str, HExpr]] = {}
    for (name, d, what, _), e in zip(wanted, exprs, strict=True):
        if d >= 0:
            if what == "stride" and d == 0 and _is_int(e, 1):
                continue  # Halide's default for every ImageParam; our copy is dense anyway
            dims.append(DimConstraint(name, d, what, e))
        else:
            lo_hi.setdefault(name, {})[what] = e
    ranges = tuple(ParamRange(n, b.get("lo"), b.get("hi")) for n, b in sorted(lo_hi.items()))
    checks = Checks(label, params, hp.requirements, tuple(dims), ranges)
    for r in checks.requirements:
        _evaluable(r.condition, params, "a requirement")
        if r.message is not None:
            _evaluable(r.message, params, "a requirement's message")
    for c in checks.dims:
        _evaluable(c.expr, params, f"the {c.what} constraint of {c.param!r} dimension {c.dim}")
    for rg in checks.ranges:
        for e in (rg.lo, rg.hi):
            if e is not None:
                _evaluable(e, params, f"the range of Param {rg.param!r}")
    return checks


def _is_int(e: HExpr, v: int) -> bool:
    return e.kind in ("IntImm", "UIntImm") and e.value == v


def _evaluable(e: HExpr, params: Mapping[str, HParameter], what: str) -> None:
    bad = unsupported_node(e, params)
    if bad is not None:
        raise UnsupportedHalideFeature(None, None, f"{what} that uses {bad}")


def _read_exprs(exprs: list[Any]) -> list[HExpr]:
    """Our form of live ``hl.Expr``s: each the value of a zero-dimensional Func of a
    pipeline serialized for the purpose."""
    if not exprs:
        return []
    funcs = []
    for k, e in enumerate(exprs):
        f = hl.Func(f"check_{k}")
        f[()] = e
        funcs.append(f)
    hp = read_pipeline(hl.serialize_pipeline(hl.Pipeline(funcs)))
    out = []
    for f in funcs:
        d = hp.func(f.name()).init
        assert d is not None
        out.append(d.values[0])
    return out


__all__ = ["Checks", "build_checks"]
