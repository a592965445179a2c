"""Keeping a server's memory at its baseline after large requests (glibc's malloc).

Why (issue 14): six rounds of 32 concurrent 14 MiB requests grew a server from 1.0 to
1.5 GB that it never gave back. glibc serves a block of at least ``M_MMAP_THRESHOLD``
bytes with a mapping of its own, unmapped on free; smaller blocks come from arenas it
keeps. The threshold starts at 128 KiB but rises to the size of every mapped block freed,
up to 32 MiB: after the first 14 MiB request was freed, every later request buffer (gRPC's
receive buffer, the bytes object, the parsed message, the copy sent to a worker) came from
the arenas, where fragmentation kept the pages (65 -> 325 MiB for the server process alone,
4 rounds of 32). Fixing the threshold turns that adjustment off, so request-sized buffers
are always mapped and go back to the system when freed (65 -> 72 MiB); ``malloc_trim``
then returns what the arenas still hold once the server is quiet.

Both are glibc's: elsewhere (musl, macOS) these functions do nothing and say so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
MMAP_THRESHOLD = 1 << 20  # blocks this big are mapped on their own, and unmapped on free


def _glibc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):  # not glibc
        return None
    return libc


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Serve every block of ``threshold`` bytes or more with its own mapping from now on
    (in this process), instead of from arenas that keep freed pages; False where the C
    library is not glibc. Call it early: blocks allocated before stay where they are."""
    libc = _glibc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, threshold) == 1


def trim() -> bool:
    """Give the free pages of every arena back to the system (``malloc_trim(0)``); True
    when some memory was released."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1


__all__ = ["MMAP_THRESHOLD", "fix_mmap_threshold", "trim"]
