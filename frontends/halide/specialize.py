"""Halide's ``stage.specialize(cond)`` and ``stage.specialize_fail(message)``, chosen at call
time.

A specialization never changes values: Halide copies the stage's values, arguments and
predicate into it, and only its schedule differs (a copy of the stage's schedule when
``specialize`` was called, then whatever was added to it). Halide compiles every branch and
tests the conditions in order where the stage runs: the first that holds picks its
schedule (and then its own nested specializations are tested the same way), none picks the
stage's own; a ``specialize_fail`` (always the last, its condition ``true``) raises.

Our builds are already specialized per call (sizes, index Params), so the conditions, which
may read only Params and buffer sizes (Halide refuses a Var or an RVar in them), are
evaluated in Python at each call, with Halide's arithmetic (:mod:`.evaluate`); the branch
taken in each stage (a path of indices, not the Params' values) is part of the build's key,
and the translator sees the pipeline with each such stage replaced by its chosen
definition. One build serves every call that takes the same branches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from frontends.halide.errors import HalideCheckError, UnsupportedHalideFeature
from frontends.halide.evaluate import Env, Image, unsupported_node
from frontends.halide.evaluate import evaluate as ev
from frontends.halide.graph import definitions, walk
from frontends.halide.hir import HDefinition, HFunc, HParameter, HPipeline, HStageSchedule
from middleend import ScheduleError

# (Func, stage, the index of the specialization taken at each level, outermost first);
# a stage that takes its own schedule has the empty path
Choice = tuple[str, int, tuple[int, ...]]


def schedules(d: HDefinition) -> Iterator[HStageSchedule]:
    """The stage's schedule and those of all its specializations, nested ones included."""
    stack = [d]
    while stack:
        e = stack.pop()
        yield e.schedule
        stack.extend(s.definition for s in e.specializations)


def _conditions(d: HDefinition) -> Iterator[tuple[HDefinition, int]]:
    """(definition, index) of every specialization under ``d``."""
    stack = [d]
    while stack:
        e = stack.pop()
        for i, s in enumerate(e.specializations):
            yield e, i
            stack.append(s.definition)


def _stage_name(k: int) -> str:
    return "pure definition" if k == 0 else f"update {k - 1}"


class Specializations:
    """The specialized stages of one pipeline, and how to choose their branches."""

    def __init__(self, hp: HPipeline, order: Sequence[str], outputs: Sequence[str],
                 params: Mapping[str, HParameter], label: str) -> None:
        self.label = label
        self.stages: list[tuple[str, int, HDefinition]] = []
        for name in order:
            f = hp.func(name)
            for k, d in enumerate(definitions(f)):
                if d.specializations:
                    self.stages.append((name, k, d))
        # an output's buffer, as the conditions name it (out.width() is "out.extent.0";
        # the k-th buffer of a Tuple output is "out.k")
        self.out_buffers: list[tuple[str, int]] = []
        for name in outputs:
            f = hp.func(name)
            n = len(f.output_types)
            for b in ([name] if n == 1 else [f"{name}.{i}" for i in range(n)]):
                self.out_buffers.append((b, len(f.args)))
        named = frozenset(f"{b}.{what}.{d}" for b, dims in self.out_buffers
                          for what in ("min", "extent", "stride") for d in range(dims))
        # what the conditions read: the key of the cache of choices
        self.images: list[str] = []
        self.scalars: list[str] = []
        self._cache: dict[tuple, tuple[Choice, ...]] = {}
        for name, k, d in self.stages:
            f = hp.func(name)
            for e, i in _conditions(d):
                for n in walk(e.specializations[i].condition):
                    if n.kind != "Variable":
                        continue
                    base = n.name.partition(".")[0]
                    p = params.get(n.name if n.param_name == n.name else base)
                    if p is not None and p.name not in self.images + self.scalars:
                        (self.images if p.is_buffer else self.scalars).append(p.name)
            if k == 0 and _inlined(f, name in outputs):
                raise ScheduleError(
                    f"Func {name!r} is computed inline and has a specialize(); Halide "
                    "refuses this schedule too (\"scheduled inline, so it must not have any "
                    "specializations\"): compute it with compute_root or compute_at, or "
                    "specialize the Func that reads it", computations=(name,))
            for e, i in _conditions(d):
                bad = unsupported_node(e.specializations[i].condition, params, named)
                if bad is not None:
                    raise UnsupportedHalideFeature(name, k, f"a specialize() condition that "
                                                   f"uses {bad}")

    def choose(self, sizes: Sequence[int], images: Mapping[str, np.ndarray],
               scalars: Mapping[str, np.generic]) -> tuple[Choice, ...]:
        """The branch each specialized stage takes for these arguments; raises
        :class:`HalideCheckError` with the message of a ``specialize_fail`` reached.
        Remembered per value of what the conditions read (sizes, the shapes and strides of
        the images they name, the Params they name)."""
        if not self.stages:
            return ()
        key = (tuple(sizes), tuple((images[n].shape, images[n].strides, images[n].dtype.str)
                                   for n in self.images),
               tuple(scalars[n] for n in self.scalars))
        got = self._cache.get(key)
        if got is None:
            got = self._choose(sizes, images, scalars)
            if len(self._cache) >= 256:  # a float Param read by a condition: keep it small
                self._cache.clear()
            self._cache[key] = got
        return got

    def _choose(self, sizes: Sequence[int], images: Mapping[str, np.ndarray],
                scalars: Mapping[str, np.generic]) -> tuple[Choice, ...]:
        env = Env({n: Image.of(a) for n, a in images.items()}, dict(scalars),
                  named=self._output_sizes(sizes))
        out: list[Choice] = []
        for name, k, d in self.stages:
            path: list[int] = []
            while True:
                for i, s in enumerate(d.specializations):
                    if bool(ev(s.condition, env)):
                        if s.failure_message:
                            raise HalideCheckError(
                                f"Halide pipeline {self.label}: Func {name!r} "
                                f"{_stage_name(k)}: a schedule specialized with "
                                f"specialize_fail() was chosen: {s.failure_message}")
                        path.append(i)
                        d = s.definition
                        break
                else:
                    break
            out.append((name, k, tuple(path)))
        return tuple(out)

    def _output_sizes(self, sizes: Sequence[int]) -> dict[str, np.generic]:
        """``out.min.d``, ``out.extent.d``, ``out.stride.d`` of every output buffer: a
        realization from 0 into dense buffers of the sizes given."""
        named: dict[str, np.generic] = {}
        for b, dims in self.out_buffers:
            stride = 1
            for d in range(dims):
                ext = int(sizes[d]) if d < len(sizes) else 1
                named[f"{b}.min.{d}"] = np.int32(0)
                named[f"{b}.extent.{d}"] = np.int32(ext)
                named[f"{b}.stride.{d}"] = np.int32(stride)
                stride *= ext
        return named


def _inlined(f: HFunc, is_output: bool) -> bool:
    """Whether ``f`` is computed inline (as :func:`.schedule.plan_func_schedule` decides)."""
    return f.schedule.compute_level.is_inlined and not is_output and not f.updates


def with_choices(hp: HPipeline, choices: Sequence[Choice]) -> HPipeline:
    """``hp`` with each specialized stage replaced by the definition its branch takes (its
    specializations dropped: they are decided)."""
    if not choices:
        return hp
    by_func: dict[str, dict[int, tuple[int, ...]]] = {}
    for name, k, path in choices:
        by_func.setdefault(name, {})[k] = path
    funcs = []
    for f in hp.funcs:
        picks = by_func.get(f.name)
        if picks:
            defs = [_chosen(d, picks[k]) if k in picks else d
                    for k, d in enumerate(definitions(f))]
            f = dataclasses.replace(f, init=defs[0], updates=tuple(defs[1:]))
        funcs.append(f)
    return dataclasses.replace(hp, funcs=tuple(funcs),
                               funcs_by_name={f.name: f for f in funcs})


def _chosen(d: HDefinition, path: tuple[int, ...]) -> HDefinition:
    for i in path:
        d = d.specializations[i].definition
    return dataclasses.replace(d, specializations=())


def without_output_buffers(hp: HPipeline, outputs: Sequence[str]) -> HPipeline:
    """``hp`` without the output buffers that a condition names (``out.width()``): Halide
    serializes them as external buffer parameters, but realize supplies them, not the
    caller."""
    names = set()
    for name in outputs:
        n = len(hp.func(name).output_types)
        names |= {name} if n == 1 else {f"{name}.{i}" for i in range(n)}
    kept = tuple(p for p in hp.external_parameters if not (p.is_buffer and p.name in names))
    if len(kept) == len(hp.external_parameters):
        return hp
    return dataclasses.replace(hp, external_parameters=kept)
