"""A pool of worker processes for the service's heavy requests (ISL analysis, C compiler).

In separate processes, a crash in a C extension (segfault, ``os._exit``) or a runaway
computation costs one request, not the server: a dead worker is replaced, and a request past
its deadline is answered by killing its worker. Workers use the ``spawn`` context, never
``fork``: forking a process that runs gRPC threads is unsafe. They start eagerly in
``__init__`` (a broken environment fails at server start) and are long-lived (islpy is
imported once per worker). A script that creates a pool needs an ``if __name__ ==
"__main__":`` guard, since spawn re-imports it.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

_MAX_WAIT = 1e7  # seconds (~4 months): a longer timeout means none (poll() overflows)


class WorkerError(Exception):
    """Base of the errors ``WorkerPool.run`` raises about one request."""


class WorkerTaskError(WorkerError):
    """The handler raised in the worker; the worker survives. Carries the remote exception's
    type name, message and formatted traceback, since the exception itself stays there."""

    def __init__(self, type_name: str, message: str, traceback_text: str,
                 kind: str = "", pid: int | None = None) -> None:
        self.type_name, self.message, self.traceback_text = type_name, message, traceback_text
        self.kind, self.pid = kind, pid
        super().__init__(f"{kind or 'a'} request failed in worker process {pid}: "
                         f"{type_name}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the custom __init__
        return type(self), (self.type_name, self.message, self.traceback_text, self.kind,
                            self.pid)


class WorkerCrashed(WorkerError):
    """The worker process died while handling the request (it has been replaced)."""


class WorkerTimeout(WorkerError):
    """The request's timeout expired (its worker, if it had one, was killed and replaced)."""


class WorkerCancelled(WorkerError):
    """The caller gave up on the request (its worker was killed and replaced, so that a
    client that cancels frees the worker at once instead of at the deadline)."""


def _check_spec(spec: str, what: str) -> None:
    module, sep, name = spec.partition(":")
    if not sep or not all(p.isidentifier() for p in (*module.split("."), *name.split("."))):
        raise ValueError(f"{what} must look like 'package.module:function', got {spec!r}")


def _resolve(spec: str) -> Any:
    module, _, name = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _worker_main(conn: Connection, handler: str, warmup: str | None) -> None:
    """Worker loop: receive ``(kind, payload)``, reply ``("ok", bytes)`` or ``("err", type,
    message, traceback)``; ``None`` or EOF (the pool is gone) ends it. A startup failure
    (import, warmup) is replied to every request, so the pool does not respawn in a loop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    failure: tuple[str, str, str] | None = None
    try:
        if warmup is not None:
            _resolve(warmup)()
        fn = _resolve(handler)
    except Exception as exc:
        failure = (type(exc).__name__, f"worker startup failed: {exc}", traceback.format_exc())
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            message = None
        if message is None:
            return
        kind, payload = message
        conn.send(("ack",))  # taken: from here on, a death is this request's doing
        if failure is not None:
            conn.send(("err", *failure))
            continue
        try:
            result = fn(kind, payload)
            if not isinstance(result, bytes | bytearray | memoryview):
                raise TypeError(f"handler {handler} returned {type(result).__name__}, not bytes")
            reply: tuple[Any, ...] = ("ok", bytes(result))
        except Exception as exc:
            reply = ("err", type(exc).__name__, str(exc), traceback.format_exc())
        conn.send(reply)


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    tasks: int = 0


_CANCEL_POLL = 0.2  # seconds between two looks at whether the caller cancelled


class WorkerPool:
    """``size`` spawned worker processes running ``handler(kind, payload) -> bytes``;
    ``run`` is thread-safe. A worker is recycled after ``max_tasks_per_worker`` requests
    (``None``: never), which bounds the memory growth of long ISL sessions."""

    def __init__(self, handler: str, size: int = 2, *, warmup: str | None = None,
                 max_tasks_per_worker: int | None = 200) -> None:
        _check_spec(handler, "handler")
        if warmup is not None:
            _check_spec(warmup, "warmup")
        if size < 1 or (max_tasks_per_worker is not None and max_tasks_per_worker < 1):
            raise ValueError(f"size and max_tasks_per_worker must be >= 1, got {size} and "
                             f"{max_tasks_per_worker}")
        self._handler, self._warmup, self._size = handler, warmup, size
        self._max_tasks = max_tasks_per_worker
        self._ctx = multiprocessing.get_context("spawn")
        self._cond = threading.Condition()
        self._idle: deque[_Worker] = deque()
        self._workers: set[_Worker] = set()  # idle and busy
        self._missing = 0  # workers whose replacement failed to start; retried on demand
        self._busy_since: float | None = None  # since when no worker has been idle
        self._closed = False
        try:
            for _ in range(size):
                self._idle.append(self._spawn())
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        return self._size

    def pids(self) -> list[int]:
        """The pids of the current workers (idle and busy)."""
        with self._cond:
            return sorted(w.process.pid for w in self._workers if w.process.pid is not None)

    def run(self, kind: str, payload: bytes, timeout: float | None,
            cancelled: Callable[[], bool] | None = None, label: str | None = None) -> bytes:
        """Run one request on a free worker; ``timeout`` (seconds, ``None``: no limit) also
        covers the wait for a free worker and the warmup of a freshly started one.
        ``cancelled`` is asked a few times a second while the worker runs; once it says
        yes, the worker is killed and WorkerCancelled raised. ``label`` names the request
        in error messages (default ``kind``, which may carry what callers should not see)."""
        task, kind = kind, label or kind
        payload = bytes(payload)
        if timeout is not None and not timeout < _MAX_WAIT:  # also NaN, inf
            timeout = None  # more than any timer takes: no limit
        deadline = None if timeout is None else time.monotonic() + timeout
        for _ in range(self._size + 1):
            worker = self._acquire(kind, deadline, timeout)
            pid = worker.process.pid
            if cancelled is not None and cancelled():  # gave up while it waited: the
                self._release(worker)  # worker never saw it, so it need not be replaced
                raise WorkerCancelled(f"{kind} request cancelled by its caller while it "
                                      "waited for a worker")
            try:
                worker.conn.send((task, payload))
                ack = self._recv(worker, deadline)
            except (EOFError, OSError):  # died before taking the request: try another
                self._retire(worker, polite=False, grace=1.0)
                continue
            except BaseException:
                self._retire(worker, polite=False, grace=0.0)
                raise
            break
        else:
            raise WorkerCrashed(f"no worker process took the {kind} request (each died "
                                "before receiving it)")
        try:
            reply = self._reply(worker, deadline, cancelled) if ack is not None else None
        except WorkerCancelled:
            self._retire(worker, polite=False, grace=0.0)
            raise WorkerCancelled(f"{kind} request cancelled by its caller; killed worker "
                                  f"process {pid}") from None
        except (EOFError, OSError):
            code = self._retire(worker, polite=False, grace=1.0)
            if self._closed:
                raise RuntimeError(f"worker pool closed while handling a {kind} request") from None
            raise WorkerCrashed(f"worker process {pid} died (exit code {code}) "
                                f"while handling a {kind} request") from None
        except BaseException:  # interrupted mid-request: the worker's state is unknown
            self._retire(worker, polite=False, grace=0.0)
            raise
        if reply is None:
            self._retire(worker, polite=False, grace=0.0)
            raise WorkerTimeout(f"{kind} request exceeded its timeout of {timeout:g} s; "
                                f"killed worker process {pid}")
        worker.tasks += 1
        self._release(worker)
        if reply[0] == "ok":
            return reply[1]
        raise WorkerTaskError(*reply[1:], kind=kind, pid=pid)

    @classmethod
    def _reply(cls, worker: _Worker, deadline: float | None,
               cancelled: Callable[[], bool] | None) -> Any:
        """The worker's reply, or None past the deadline; raises WorkerCancelled as soon as
        ``cancelled()`` is true (checked every 0.2 s)."""
        if cancelled is None:
            return cls._recv(worker, deadline)
        while True:
            step = time.monotonic() + _CANCEL_POLL
            if worker.conn.poll(max(0.0, min(step, deadline or step) - time.monotonic())):
                return worker.conn.recv()
            if deadline is not None and time.monotonic() >= deadline:
                return None
            if cancelled():
                raise WorkerCancelled()

    @staticmethod
    def _recv(worker: _Worker, deadline: float | None) -> Any:
        """The worker's next message, or None if the deadline passes first."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        return worker.conn.recv() if worker.conn.poll(remaining) else None

    def close(self) -> None:
        """Stop every worker: a stop message, up to 2 s to exit, then terminate. A busy
        worker gets the same 2 s to finish; if killed, its ``run`` raises ``RuntimeError``."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            idle, self._idle = list(self._idle), deque()
            busy = [w for w in self._workers if w not in idle]
            self._cond.notify_all()
        for worker in idle:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        deadline = time.monotonic() + 2.0
        for worker in idle:
            self._retire(worker, polite=False, grace=max(0.0, deadline - time.monotonic()))
        for worker in busy:  # its conn belongs to the thread in run(), which then sees EOF
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.terminate()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_worker_main, name="middleend-worker", daemon=True,
                                    args=(child, self._handler, self._warmup))
        try:
            process.start()
        finally:
            child.close()  # so that the parent sees EOF when the worker dies
        worker = _Worker(process, parent)
        with self._cond:
            self._workers.add(worker)
        return worker

    def _acquire(self, kind: str, deadline: float | None, timeout: float | None) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("worker pool is closed")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise WorkerTimeout(f"no worker became free within the {timeout:g} s "
                                        f"timeout of a {kind} request")
                if self._idle:
                    worker = self._idle.popleft()
                    self._idle_changed()
                    return worker
                if self._missing:
                    self._missing -= 1
                    break
                self._cond.wait(remaining)
        return self._replace()

    def busy_for(self) -> float:
        """Seconds since every worker became busy (0 while one is idle): a server says
        NOT_SERVING once this passes a threshold, so that a balancer sends work elsewhere."""
        with self._cond:
            return 0.0 if self._busy_since is None else time.monotonic() - self._busy_since

    def _idle_changed(self) -> None:
        """Note when the last idle worker was taken (call with the lock held)."""
        if self._idle:
            self._busy_since = None
        elif self._busy_since is None:
            self._busy_since = time.monotonic()

    def _release(self, worker: _Worker) -> None:
        """Back to the idle queue, unless it is due for recycling or the pool is closed."""
        due = self._max_tasks is not None and worker.tasks >= self._max_tasks
        with self._cond:
            if not due and not self._closed:
                self._idle.append(worker)
                self._idle_changed()
                self._cond.notify()
                return
        self._retire(worker, polite=True, grace=2.0)

    def _retire(self, worker: _Worker, *, polite: bool, grace: float) -> int | None:
        """Stop ``worker`` (politely: a stop message first; then terminate, then kill), reap
        it, and replace it unless the pool is closed; returns its exit code."""
        if polite:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        process = worker.process
        process.join(grace)
        if process.is_alive():
            process.terminate()
            process.join(1.0)
            if process.is_alive():
                process.kill()
        process.join()
        worker.conn.close()
        with self._cond:
            self._workers.discard(worker)
            closed = self._closed
        if not closed:
            with contextlib.suppress(Exception):  # recorded in _missing by _replace
                self._release(self._replace())
        return process.exitcode

    def _replace(self) -> _Worker:
        """A fresh worker; if it cannot be started, the pool records the missing worker for
        the next ``_acquire`` to retry, so that a transient failure does not shrink it."""
        try:
            return self._spawn()
        except BaseException:
            with self._cond:
                self._missing += 1
                self._cond.notify()
            raise
