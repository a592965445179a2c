"""The bytes of requests a server handles at once, bounded, and memory given back after
a burst of large ones.

Why: 32 concurrent 14 MiB requests, six rounds, grew a server from 1.0 to 1.5 GB that it
never gave back (issue 14): each request is copied while it is parsed, hashed and sent to
a worker. Here a request waits while the bytes in flight would pass the cap (it always
runs when nothing else is in flight, so a request under the message size cap is never
refused for size alone), and is refused with RESOURCE_EXHAUSTED when its wait runs out.
What the allocator keeps after a burst is given back by :meth:`InFlight.trim_when_quiet`,
which the server calls from its watcher thread: trimming from the handler itself came too
early, since gRPC still holds the request's buffers until the handler has returned (see
heap.py for the allocator side).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from ..wire.v1 import middleend_pb2 as pb
from . import heap
from .core import RequestFailed

LARGE = 1 << 20  # a request this big makes the server trim its heap once quiet


class InFlight:
    """A budget of request bytes (``cap``; 0: none) shared by a server's handler threads."""

    def __init__(self, cap: int, max_wait: float = 30.0) -> None:
        self.cap = cap
        self.max_wait = max_wait
        self.used = 0
        self.large = False  # a large request has been handled since the last trim
        self._left = 0.0  # when the last request left (time.monotonic())
        self._cond = threading.Condition()

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
                self._left = time.monotonic()
                self._cond.notify_all()

    def trim_when_quiet(self, quiet: float = 0.5) -> bool:
        """Give free heap memory back to the system once large requests have been handled
        and nothing has been in flight for ``quiet`` seconds; True when it trimmed."""
        with self._cond:
            if not self.large or self.used or time.monotonic() - self._left < quiet:
                return False
            self.large = False
        heap.trim()
        return True


__all__ = ["InFlight", "LARGE"]
