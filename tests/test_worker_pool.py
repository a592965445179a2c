"""WorkerPool: replies, remote exceptions, crashes, timeouts, concurrency, recycling, close."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from middleend.service.workers import (
    WorkerCancelled,
    WorkerCrashed,
    WorkerError,
    WorkerPool,
    WorkerTaskError,
    WorkerTimeout,
)

HANDLER = "worker_handlers:handle"
TESTS_DIR = str(Path(__file__).resolve().parent)


@pytest.fixture(autouse=True)
def _handlers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spawned workers inherit os.environ, so PYTHONPATH lets them import worker_handlers."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", TESTS_DIR if not path else f"{TESTS_DIR}{os.pathsep}{path}")


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(HANDLER, size=2) as p:
        yield p


def _pid(pool: WorkerPool) -> int:
    return int(pool.run("pid", b"", timeout=10))


def test_echo_round_trip(pool: WorkerPool) -> None:
    assert pool.run("echo", b"hello \x00 world", timeout=10) == b"hello \x00 world"
    assert pool.size == 2
    assert len(pool.pids()) == 2


def test_task_error_keeps_the_worker() -> None:
    with WorkerPool(HANDLER, size=1) as pool:
        before = _pid(pool)
        with pytest.raises(WorkerTaskError, match="boom") as info:
            pool.run("raise", b"", timeout=10)
        err = info.value
        assert isinstance(err, WorkerError)
        assert (err.type_name, err.message, err.kind, err.pid) == ("ValueError", "boom", "raise",
                                                                   before)
        assert "Traceback" in err.traceback_text and "boom" in err.traceback_text
        assert _pid(pool) == before
        assert pool.pids() == [before]


def test_crash_is_reported_and_the_worker_replaced(pool: WorkerPool) -> None:
    with pytest.raises(WorkerCrashed, match=r"died \(exit code 3\) while handling a crash"):
        pool.run("crash", b"", timeout=10)
    assert pool.run("echo", b"after", timeout=10) == b"after"
    pids = pool.pids()
    assert len(pids) == 2
    for pid in pids:
        os.kill(pid, 0)  # alive


def test_timeout_kills_and_replaces_the_worker() -> None:
    with WorkerPool(HANDLER, size=1) as pool:
        old = _pid(pool)
        start = time.monotonic()
        with pytest.raises(WorkerTimeout, match=r"sleep request exceeded its timeout of 1 s"):
            pool.run("sleep", b"30", timeout=1)
        assert time.monotonic() - start < 3
        assert pool.run("echo", b"after", timeout=10) == b"after"
        assert pool.pids() != [old] and len(pool.pids()) == 1


def test_concurrent_requests_share_the_workers(pool: WorkerPool) -> None:
    payloads = [f"request {i}".encode() * (i + 1) for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as ex:
        results = list(ex.map(lambda p: pool.run("echo", p, timeout=10), payloads))
    assert results == payloads
    assert len(pool.pids()) == 2


def test_waiting_for_a_free_worker_counts_against_the_timeout() -> None:
    with WorkerPool(HANDLER, size=1) as pool, ThreadPoolExecutor(max_workers=1) as ex:
        busy = ex.submit(pool.run, "sleep", b"1.5", 10)
        time.sleep(0.3)
        with pytest.raises(WorkerTimeout, match=r"no worker became free within the 0.3 s"):
            pool.run("echo", b"x", timeout=0.3)
        assert busy.result() == b"done"


def test_busy_for_counts_from_when_the_last_worker_was_taken() -> None:
    with WorkerPool(HANDLER, size=1) as pool, ThreadPoolExecutor(max_workers=1) as ex:
        assert pool.busy_for() == 0.0
        busy = ex.submit(pool.run, "sleep", b"1.0", 10)
        time.sleep(0.5)
        assert pool.busy_for() > 0.0
        assert busy.result() == b"done"
        assert pool.busy_for() == 0.0


def test_a_request_cancelled_while_it_waits_leaves_the_worker_alone() -> None:
    """Its client gave up before a worker took it: refused without killing the worker
    (which never saw it), unlike a request cancelled while it runs."""
    with WorkerPool(HANDLER, size=1) as pool:
        before = pool.pids()
        with pytest.raises(WorkerCancelled, match="while it waited"):
            pool.run("echo", b"x", timeout=10, cancelled=lambda: True, label="check")
        assert pool.pids() == before
        assert pool.run("echo", b"y", timeout=10) == b"y"


def test_label_names_the_request_in_errors_instead_of_the_task() -> None:
    with WorkerPool(HANDLER, size=1) as pool:
        with pytest.raises(WorkerCrashed) as info:
            pool.run("crash", b"", timeout=10, label="compile")
        assert "compile request" in str(info.value) and "crash" not in str(info.value)


def test_worker_is_recycled_after_max_tasks() -> None:
    with WorkerPool(HANDLER, size=1, max_tasks_per_worker=2) as pool:
        first = _pid(pool)
        assert _pid(pool) == first
        third = _pid(pool)
        assert third != first
        assert _pid(pool) == third


def test_warmup_runs_in_each_worker() -> None:
    with WorkerPool(HANDLER, size=1, warmup="worker_handlers:warm") as pool:
        assert pool.run("warmed", b"", timeout=10) == b"yes"


def test_handler_import_failure_is_a_task_error() -> None:
    with WorkerPool("worker_handlers:no_such_function", size=1) as pool:
        with pytest.raises(WorkerTaskError, match="worker startup failed") as info:
            pool.run("echo", b"", timeout=10)
        assert info.value.type_name == "AttributeError"


@pytest.mark.parametrize("spec", ["worker_handlers", "worker_handlers:", ":handle", "a b:c"])
def test_malformed_handler_is_rejected(spec: str) -> None:
    with pytest.raises(ValueError, match="package.module:function"):
        WorkerPool(spec)


def test_close_is_idempotent_and_final() -> None:
    pool = WorkerPool(HANDLER, size=2)
    pids = pool.pids()
    pool.close()
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.run("echo", b"", timeout=1)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_segfault_is_a_crash(pool: WorkerPool) -> None:
    with pytest.raises(WorkerCrashed, match=r"died \(exit code -11\) while handling a segfault"):
        pool.run("segfault", b"", timeout=10)
    assert pool.run("echo", b"ok", timeout=10) == b"ok"


def test_close_while_busy_stops_the_request() -> None:
    pool = WorkerPool(HANDLER, size=1)
    with ThreadPoolExecutor(max_workers=1) as ex:
        busy = ex.submit(pool.run, "sleep", b"30", None)
        time.sleep(0.5)
        start = time.monotonic()
        pool.close()
        with pytest.raises(RuntimeError, match="closed while handling a sleep request"):
            busy.result(timeout=10)
        assert time.monotonic() - start < 5
    assert pool.pids() == []


def test_a_worker_killed_while_idle_loses_no_request() -> None:
    """A request goes to a worker that died idle (even one still dying): it did not
    acknowledge the request, so the pool runs it on a replacement instead of failing it."""
    import signal

    with WorkerPool(HANDLER, size=1) as pool:
        for _ in range(3):
            victim = _pid(pool)
            os.kill(victim, signal.SIGKILL)  # no wait: the kill races the next request
            assert pool.run("echo", b"still here", timeout=30) == b"still here"
            assert victim not in pool.pids()
