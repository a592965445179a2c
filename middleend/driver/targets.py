"""The registry of targets, keyed by name.

Targets are discovered through the ``middleend.targets`` entry-point group (the project's
``pyproject.toml`` registers its own in ``backends/``; another distribution can add one
without touching the middle-end). An entry point names either a :class:`Target` subclass
or a :class:`~middleend.target.base.Target` instance. A registry is an immutable value built
by :meth:`TargetRegistry.discover`; whoever needs one (a Service, the CLI) holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata

from ..ir.errors import TargetError
from ..target.base import Availability, Target

GROUP = "middleend.targets"


@dataclass(frozen=True)
class TargetStatus:
    """One line of ``middleend targets``."""

    name: str
    summary: str
    available: bool
    detail: str
    tags: tuple[str, ...]
    operations: tuple[str, ...]
    options: tuple[str, ...]


class TargetRegistry:
    """Targets by name; each is loaded (imported and instantiated) on first use."""

    def __init__(self, loaders: Mapping[str, Callable[[], object]]) -> None:
        self._loaders = dict(loaders)
        self._loaded: dict[str, Target] = {}

    @classmethod
    def discover(cls) -> TargetRegistry:
        """The targets registered by the installed distributions."""
        eps = metadata.entry_points(group=GROUP)
        return cls({ep.name: ep.load for ep in eps})

    def names(self) -> list[str]:
        return sorted(self._loaders)

    def _load(self, name: str) -> Target:
        if name not in self._loaded:
            obj = self._loaders[name]()
            target = obj() if isinstance(obj, type) and issubclass(obj, Target) else obj
            if not isinstance(target, Target) or target.name != name:
                raise TargetError(f"the entry point {name!r} of group {GROUP!r} is not a "
                                  f"middle-end target named {name!r}: {obj!r}", target=name)
            self._loaded[name] = target
        return self._loaded[name]

    def lookup(self, name: str) -> Target:
        """The target called ``name`` (whether or not it is available here)."""
        if name not in self._loaders:
            known = ", ".join(self.names()) or "none (is the middleend package installed?)"
            raise TargetError(f"unknown target {name!r} (registered targets: {known})",
                              target=name)
        return self._load(name)

    def get(self, name: str) -> Target:
        """The target called ``name``, which must be available here (else
        TargetUnavailable, naming the missing tool and how to install it)."""
        target = self.lookup(name)
        target.require()
        return target

    def statuses(self) -> list[TargetStatus]:
        out = []
        for n in self.names():
            t = self._load(n)
            a: Availability = t.availability()
            out.append(TargetStatus(n, t.summary, a.available,
                                    t.describe() if a.available else
                                    a.detail + (f" ({a.install})" if a.install else ""),
                                    tuple(sorted(t.tags)), tuple(sorted(t.operations)),
                                    tuple(o.name for o in t.options)))
        return out

    def honouring(self, tag: str | None = None, operation: str | None = None) -> list[str]:
        """The registered targets that declare ``tag`` / ``operation``."""
        return [n for n in self.names()
                if (tag is None or tag in self._load(n).tags)
                and (operation is None or operation in self._load(n).operations)]
