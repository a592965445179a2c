"""The bytes of requests a server handles at once, bounded, and memory given back after
a burst of large ones.

Why: 32 concurrent 14 MiB requests, six rounds, grew a server from 1.0 to 1.5 GB that it
never gave back (issue 14): each request is copied while it is parsed, hashed and sent to
a worker, and glibc keeps freed memory in its arenas. Here a request waits while the
bytes in flight would pass the cap (it always runs when nothing else is in flight, so a
request under the message size cap is never refused for size alone), is refused with
RESOURCE_EXHAUSTED when its wait runs out, and when the last large request leaves, the
allocator is asked to return free memory to the system (``malloc_trim``, glibc only).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
import threading
import time
from collections.abc import Callable, Iterator

from ..wire.v1 import middleend_pb2 as pb
from .core import RequestFailed

LARGE = 1 << 20  # a request this big makes the server trim its heap once idle


def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc
        return None


class InFlight:
    """A budget of request bytes (``cap``; 0: none) shared by a server's handler threads."""

    def __init__(self, cap: int, max_wait: float = 30.0) -> None:
        self.cap = cap
        self.max_wait = max_wait
        self.used = 0
        self.large = False
        self._cond = threading.Condition()
        self._trim = _malloc_trim()

    @contextlib.contextmanager
    def hold(self, size: int, wait: float | None) -> Iterator[None]:
        """Count ``size`` bytes while the body runs; wait at most ``wait`` seconds (and
        ``max_wait``) for room, else raise RequestFailed (RESOURCE_LIMIT)."""
        limit = self.max_wait if wait is None else min(wait, self.max_wait)
        end = time.monotonic() + limit
        with self._cond:
            while self.cap and self.used and self.used + size > self.cap:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise RequestFailed(pb.Diagnostic(
                        kind=pb.RESOURCE_LIMIT,
                        message=f"the server is busy: {self.used >> 20} MiB of requests in "
                                f"flight, and this one ({size >> 20} MiB) would pass the cap "
                                f"of {self.cap >> 20} MiB (--max-inflight-bytes); retry later"))
                self._cond.wait(remaining)
            self.used += size
            self.large = self.large or size >= LARGE
        try:
            yield
        finally:
            with self._cond:
                self.used -= size
                self._cond.notify_all()
                trim = self.used == 0 and self.large
                if trim:
                    self.large = False
            if trim and self._trim is not None:
                self._trim(0)


__all__ = ["InFlight", "LARGE"]
