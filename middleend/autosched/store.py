"""Tuned plans, kept by the program's content hash, so that tuning the same program again
on the same machine is instant.

Tuning builds and times candidates for seconds to minutes; its outcome is a plan per
statement. The key is a hash of what decides the outcome: the program as the wire encodes
it (its Layer I and its commands before scheduling), the outputs, the target, the machine
model (ISA vector width, registers, caches, cores), the estimates, the shapes and types of
the inputs it was timed on, and the auto-scheduler's own source (a changed cost model or
plan space is a new key). The value is the plans, as JSON; a hit replays them through the
ordinary search (each still goes through the legality check), without building anything.
Files are written atomically (a temporary file renamed), so concurrent tunings of the
same program never read half a file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..ir.function import Function
from ..target.paths import cache_root, write_atomic
from ..version import __version__
from ..wire.encode import encode_function
from .cost import MachineModel
from .plan import Plan


@functools.lru_cache(maxsize=1)
def _own_source() -> str:
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def key(fn: Function, outputs: Sequence[Any] | None, target: str, m: MachineModel,
        estimates: Mapping[str, int], inputs: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(encode_function(fn, outputs).SerializeToString(deterministic=True))
    shapes = {k: (list(np.shape(v)), str(np.asarray(v).dtype)) for k, v in inputs.items()}
    h.update(json.dumps([target, dataclasses.asdict(m), dict(sorted(estimates.items())),
                         shapes, __version__, _own_source()], sort_keys=True).encode())
    return h.hexdigest()


def _path(k: str) -> Path:
    return cache_root() / "autosched" / f"{k}.json"


def load(k: str) -> dict[str, Plan] | None:
    """The plans stored under ``k``, None on a miss or an unreadable entry."""
    try:
        raw = json.loads(_path(k).read_text())
        return {n: Plan(tuple(p["order"]), tuple((v, int(s)) for v, s in p["tiles"]),
                        p["vector"], int(p["lanes"]), p["unroll"], p["parallel"],
                        p["contiguous"],
                        (p["block"][0], int(p["block"][1])) if p.get("block") else None,
                        bool(p.get("jam", False)))
                for n, p in raw.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(k: str, plans: Mapping[str, Plan]) -> None:
    path = _path(k)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({n: dataclasses.asdict(p) for n, p in plans.items()}, sort_keys=True)
    try:
        write_atomic(path, body)
    except OSError:
        pass  # a cache that cannot be written: the next tuning tunes again
