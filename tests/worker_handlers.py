"""Request handlers for tests/test_worker_pool.py, imported by the spawned worker processes
(the test puts this directory on PYTHONPATH, which spawned children inherit)."""

from __future__ import annotations

import ctypes
import os
import time

_warmed = False


def warm() -> None:
    """Warmup hook: records that it ran in this process."""
    global _warmed
    _warmed = True


def handle(kind: str, payload: bytes) -> bytes:
    """echo / raise / crash / segfault / sleep / pid / warmed, as their names say."""
    if kind == "echo":
        return payload
    if kind == "raise":
        raise ValueError("boom")
    if kind == "crash":
        os._exit(3)
    if kind == "segfault":
        ctypes.string_at(0)
    if kind == "sleep":
        time.sleep(float(payload))
        return b"done"
    if kind == "pid":
        return str(os.getpid()).encode()
    if kind == "warmed":
        return b"yes" if _warmed else b"no"
    raise KeyError(f"unknown kind {kind!r}")
