"""Targets the project plans but has not built yet. They are registered so that a user who
asks for one is told plainly that it does not exist yet (never sent to a target that does
not work), and so that the CPU target's refusal of a GPU tag can say which target will
honour it. Each entry here is replaced by the real plug-in when its issue lands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from middleend.ir.errors import TargetUnavailable
from middleend.ir.loopast import Program
from middleend.target import Artifact, Availability, Kernel, SourceText, Target


class PlannedTarget(Target):
    """A target that is declared but not implemented: always unavailable."""

    def __init__(self, name: str, summary: str, tags: frozenset[str],
                 operations: frozenset[str]) -> None:
        self.name = name  # type: ignore[misc]
        self.summary = summary  # type: ignore[misc]
        self.tags = tags  # type: ignore[misc]
        self.operations = operations  # type: ignore[misc]

    def availability(self) -> Availability:
        return Availability(False, "not implemented in this version of the middle-end")

    def _refuse(self) -> TargetUnavailable:
        return TargetUnavailable(f"target {self.name!r} is not implemented in this version "
                                 "of the middle-end", target=self.name)

    def identity(self) -> str:
        raise self._refuse()

    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        raise self._refuse()

    def build(self, program: Program, sources: list[SourceText],
              options: Mapping[str, Any]) -> tuple[Artifact, str]:
        raise self._refuse()

    def load(self, artifact: Artifact, **kernel_args: Any) -> Kernel:
        raise self._refuse()

