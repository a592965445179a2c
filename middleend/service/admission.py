"""Which requests may take which workers: heavy requests cannot starve small ones.

Why (issue 14): two expensive requests (a ``set_schedule`` with hundreds of zero dims, a sum
of thousands of sines that gcc takes minutes over) held both workers of a server while
every other client waited and the health check said SERVING. Caps bound each request's
time, not the harm while it runs. So each request is classified before dispatch, from what
it asks for, counted on the message without ISL (:func:`heavy_reason`, thresholds in
:class:`CostThresholds`); heavy requests may occupy at most ``workers - reserved`` workers
(the *heavy share*), and the ``reserved`` others stay free for small requests whatever
heavy ones arrive. A heavy request that finds the share full waits in a bounded queue for
a bounded time, then is refused with RESOURCE_EXHAUSTED naming the limit; one that finds
the queue full is refused at once (waiting requests hold the server's handler threads).

The classification is an estimate: a request that looks small can still run long (gcc on a
12-deep loop nest of tiny trip counts took 30 s for a 700-byte request). Such a request
counts in the heavy share once it has run ``small_seconds``, so that it lets no further
heavy request in; it keeps its worker until it ends or its deadline passes, and while every
worker stays busy the health check says NOT_SERVING (server.py).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..wire.v1 import middleend_pb2 as pb
from .workers import WorkerCancelled

_CANCEL_POLL = 0.2  # seconds between two looks at whether a waiting request's client left


@dataclass(frozen=True)
class CostThresholds:
    """A request past any of these is heavy. Measured on this project's programs: the
    examples (blur, matmul, sgemm, heat) are under 2 KiB, 4 computations, 30 commands
    and 7 loop dims; a sum of 600 sines (32 KiB) takes gcc ~2 s, 1,000 (57 KiB) 6 s;
    64 chained computations compile in 1.8 s, 256 in 18 s; a 16-deep tiled nest in 1 s,
    24-deep in 30 s."""

    request_bytes: int = 32 << 10  # the serialized request: expression nodes, mostly
    computations: int = 64
    commands: int = 256
    loop_dims: int = 16  # per computation: its domain's dims plus those splits/tiles add
    schedule_dims: int = 32  # the time dims of a set_schedule or order map


def _tuple_dims(text: str, start: int) -> int:
    """The dims of the first ``[...]`` tuple at or after ``start`` (0 when none)."""
    begin = text.find("[", max(start, 0))
    if begin < 0:
        return 0
    depth, count, blank = 0, 1, True
    for ch in text[begin:]:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0:
                return 0 if blank else count
        elif ch == "," and depth == 1:
            count += 1
        elif not ch.isspace():
            blank = False
    return count


def domain_dims(text: str) -> int:
    """Dims of a set's tuple: ``[N] -> { S[i, j] : ... }`` has 2."""
    return _tuple_dims(text, text.find("{"))


def range_dims(text: str) -> int:
    """Dims of a map's range tuple: ``{ S[i] -> [0, i, 0] }`` has 3."""
    brace = text.find("{")
    arrow = text.find("->", max(brace, 0))
    return _tuple_dims(text, arrow) if brace >= 0 and arrow >= 0 else 0


_ADDED_DIMS = {"split": 1, "vectorize": 1, "tile_gpu": 2}


def heavy_reason(req: pb.Request, size: int, t: CostThresholds) -> str | None:
    """Why the request is heavy (the measure, its value and the threshold), or None when it
    is small. Cheap: it counts fields and brackets, never calls ISL."""
    fn = req.function
    if size > t.request_bytes:
        return f"the request is {size >> 10} KiB, over {t.request_bytes >> 10} KiB"
    if len(fn.computations) > t.computations:
        return f"{len(fn.computations)} computations, over {t.computations}"
    if len(fn.commands) > t.commands:
        return f"{len(fn.commands)} commands, over {t.commands}"
    dims = {c.name: domain_dims(c.domain) for c in fn.computations}
    maps = [(c.name, c.order) for c in fn.computations if c.order]
    for c in fn.commands:
        kind = c.WhichOneof("command")
        if c.computation not in dims or kind is None:
            continue
        if kind == "tile":
            dims[c.computation] += len(c.tile.dims)
        elif kind == "unroll":
            dims[c.computation] += c.unroll.HasField("factor")
        elif kind == "set_schedule":
            maps.append((c.computation, c.set_schedule.isl_map))
        else:
            dims[c.computation] += _ADDED_DIMS.get(kind, 0)
    for name, n in dims.items():
        if n > t.loop_dims:
            return (f"computation {name!r} has {n} loop dims (its domain's and those its "
                    f"splits and tiles add), over {t.loop_dims}")
    for name, text in maps:
        n = range_dims(text)
        if n > t.schedule_dims:
            return f"a schedule map of {name!r} has {n} time dims, over {t.schedule_dims}"
    return None


class AdmissionRefused(Exception):
    """A heavy request found the heavy share and its queue full (the message names the
    limit); the service answers RESOURCE_EXHAUSTED."""


@dataclass(frozen=True)
class AdmissionConfig:
    """``reserved``: workers kept for small requests (None: a quarter of them, at least
    one where there are two or more; with one worker nothing can be kept). ``queue``:
    heavy requests that may wait for the share at once; ``wait``: how long each may
    wait (seconds, also bounded by its deadline); ``small_seconds``: after this long a
    small request counts as heavy."""

    reserved: int | None = None
    queue: int = 4
    wait: float = 30.0
    small_seconds: float = 10.0
    thresholds: CostThresholds = field(default_factory=CostThresholds)

    def reserved_of(self, workers: int) -> int:
        if self.reserved is None:
            return max(1, workers // 4) if workers >= 2 else 0
        if not 0 <= self.reserved < workers:
            raise ValueError(f"--reserved-workers must be at least 0 and less than --workers "
                             f"({workers}), got {self.reserved}")
        return self.reserved


@dataclass(eq=False)
class _Ticket:
    start: float
    heavy: bool


class Admission:
    """The heavy share of a pool of ``workers``; thread-safe. A request holds a ticket
    (:meth:`enter`) from before it asks the pool for a worker until it has its answer."""

    def __init__(self, workers: int, config: AdmissionConfig | None = None) -> None:
        self.config = config or AdmissionConfig()
        if self.config.queue < 0 or not self.config.wait >= 0:
            raise ValueError(f"--heavy-queue and --heavy-wait must be >= 0, got "
                             f"{self.config.queue} and {self.config.wait}")
        self.workers = workers
        self.reserved = self.config.reserved_of(workers)
        self.share = workers - self.reserved
        self._queue: deque[_Ticket] = deque()  # heavy requests waiting, first come first
        self._running: set[_Ticket] = set()
        self._cond = threading.Condition()

    @property
    def waiting(self) -> int:
        """Heavy requests waiting for the share."""
        return len(self._queue)

    def heavy_running(self) -> int:
        """Requests holding the heavy share: the heavy ones, and small ones that have run
        for ``small_seconds``."""
        with self._cond:
            return self._heavy_running(time.monotonic())

    def _heavy_running(self, now: float) -> int:
        late = now - self.config.small_seconds
        return sum(1 for t in self._running if t.heavy or t.start <= late)

    def _refusal(self, why: str, reason: str) -> AdmissionRefused:
        return AdmissionRefused(
            f"the server is busy with heavy requests: the {self.share} of its {self.workers} "
            f"workers that take them are taken ({self.reserved} kept for small requests, "
            f"--reserved-workers), and {why}; this request is heavy ({reason}): retry "
            "later, or make it smaller")

    @contextlib.contextmanager
    def enter(self, heavy: str | None, timeout: float,
              cancelled: Callable[[], bool] | None = None) -> Iterator[None]:
        """Hold a ticket while the body runs. ``heavy``: why the request is heavy (None: it
        is small, and enters at once). A heavy request waits at most ``timeout`` (and the
        configured wait) for room in the share; raises AdmissionRefused when the queue is
        full or the wait runs out, WorkerCancelled as soon as ``cancelled()`` says its
        client gave up (asked every 0.2 s)."""
        now = time.monotonic()
        ticket = _Ticket(now, heavy is not None)
        with self._cond:
            if heavy is not None and (self._queue or self._heavy_running(now) >= self.share):
                if len(self._queue) >= self.config.queue:
                    raise self._refusal(f"{len(self._queue)} heavy requests already wait "
                                        "for one (--heavy-queue)", heavy)
                end = now + min(max(timeout, 0.0), self.config.wait)
                self._queue.append(ticket)
                try:
                    while self._queue[0] is not ticket or \
                            self._heavy_running(time.monotonic()) >= self.share:
                        remaining = end - time.monotonic()
                        if remaining <= 0:
                            raise self._refusal(
                                f"none became free within {time.monotonic() - now:.3g} s "
                                f"(--heavy-wait {self.config.wait:g} s)", heavy)
                        self._cond.wait(min(remaining, _CANCEL_POLL))
                        if cancelled is not None and cancelled():
                            raise WorkerCancelled(f"a heavy request ({heavy}) cancelled by "
                                                  "its caller while it waited for a worker")
                finally:
                    self._queue.remove(ticket)
                    self._cond.notify_all()  # the next in line may go
            ticket.start = time.monotonic()
            self._running.add(ticket)
        try:
            yield
        finally:
            with self._cond:
                self._running.discard(ticket)
                self._cond.notify_all()


__all__ = ["Admission", "AdmissionConfig", "AdmissionRefused", "CostThresholds",
           "domain_dims", "heavy_reason", "range_dims"]
