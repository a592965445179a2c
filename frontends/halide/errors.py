"""Errors of the Halide front-end. Each names where in the pipeline the problem is, so a
user can find the Func, the stage and the construct without reading our code."""

from __future__ import annotations

from middleend.ir.errors import KernelArgumentError, MiddleEndError


class HalideFrontendError(MiddleEndError):
    """Base of the Halide front-end's errors."""


class HalideFormatError(HalideFrontendError):
    """The serialized pipeline cannot be read: wrong serialization version, truncated or
    corrupted bytes, or a table that does not match Halide 21's schema."""


class UnsupportedHalideFeature(HalideFrontendError):
    """A construct of the pipeline that the front-end does not translate. Raised instead of
    dropping it, since a directive silently ignored would give wrong code or a wrong
    benchmark. ``func`` is the Func's name, ``stage`` is 0 for the pure definition and k
    for the k-th update (None when the construct is not tied to a stage)."""

    def __init__(self, func: str | None, stage: int | None, construct: str) -> None:
        self.func = func
        self.stage = stage
        self.construct = construct
        where = "pipeline" if func is None else f"Func {func!r}"
        if func is not None and stage is not None:
            where += " pure definition" if stage == 0 else f" update {stage - 1}"
        super().__init__(f"unsupported Halide feature in {where}: {construct}")


class HalideCheckError(HalideFrontendError, KernelArgumentError):
    """A check Halide makes when a pipeline is called failed: a ``Pipeline.add_requirement``
    condition is false, an input breaks its ImageParam's ``dim(d)`` constraints or has the
    wrong type or dimensions, or a Param is outside its ``set_range``. Halide raises at
    that point too; the message gives the same information (the requirement and its
    message, or the input, dimension and sizes)."""


class IgnoredHalideDirective(UserWarning):
    """A directive that cannot change a pipeline's values, accepted and not honoured:
    ``memoize()`` (a cache across calls), ``fold_storage()`` (a smaller buffer),
    ``align_storage()`` / ``bound_storage()`` (a padded one), the
    ``trace_*`` calls and ``print`` / ``print_when`` (output on the side), ``prefetch()``,
    ``store_in(MemoryType...)`` (where a buffer lives) and ``async()`` (a producer in a
    thread of its own). Warned about at
    ``compile_pipeline``, once per Func and directive, so nobody waits for output that
    never comes."""
