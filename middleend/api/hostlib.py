"""Host C libraries for front-ends: a front-end that must run a little C of its own in
this process (the Halide front-end's call of an extern stage, ``halide_buffer_t`` and all)
builds it with a target's host compiler, found by name like every target, so that the
front-end never imports a backend."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..driver.targets import TargetRegistry


def host_library(source: str, target: str = "cpu", include_dirs: Sequence[str] = ()) -> Path:
    """The path of a shared library built from the C ``source`` by ``target`` (its
    compiler, flags and build cache; ``include_dirs``: more header directories);
    TargetError when that target builds none or is not available here."""
    return TargetRegistry.discover().get(target).build_host_library(source, include_dirs)
