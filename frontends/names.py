"""Source-language names to middle-end names (shared by the front-ends).

Halide names carry dots, dollars and leading underscores (``x.xi.v0``, ``r$x``, ``_0``,
``f$1``) and Julia names may carry ``!`` or Unicode; the middle-end accepts only plain
identifiers that are not C keywords (they reach generated code). A :class:`Namer` makes a
valid, unique name for each source name in one scope and remembers the mapping, so error
messages can show both.
"""

from __future__ import annotations

import re

from middleend.ir.errors import DefinitionError
from middleend.ir.names import check_name

_BAD = re.compile(r"[^A-Za-z0-9_]")


def _valid(name: str) -> bool:
    try:
        check_name(name, "name")
    except DefinitionError:
        return False
    return True


class Namer:
    """Valid, unique identifiers for the source names of one scope."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.map: dict[str, str] = {}
        self.taken: set[str] = set() if taken is None else set(taken)

    def __call__(self, halide_name: str) -> str:
        got = self.map.get(halide_name)
        if got is not None:
            return got
        base = _BAD.sub("_", halide_name)[:48] or "h"
        if not base[0].isalpha():
            base = "h" + base
        name, k = base, 1
        while name in self.taken or not _valid(name):
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        self.map[halide_name] = name
        return name

    def alias(self, halide_name: str, existing: str) -> None:
        """``halide_name`` names the same thing as the already mapped ``existing``."""
        self.map[halide_name] = self.map[existing]
