"""The middle-end server's life: restart keeps the cache, a corrupted cache entry is
rebuilt, tokens, bind addresses, and killed workers (see test_service.py for the RPCs)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
from service_util import (
    ROOT,
    SMALL,
    ServerProcess,
    assert_serving,
    blur_ref,
    blur_request,
    raw_call,
    serve_command,
    server_env,
    small_fn,
    so_file,
    start_server,
    wait_for_workers,
)

from middleend.service.client import RemoteClient, connect, kernel_of
from middleend.service.diagnostics import ServiceError
from middleend.wire.encode import encode_request

# ---------------------------------------------------------------------------- 7. restart


def test_restart_keeps_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "artifacts"
    req = blur_request(28, 56)
    a = start_server(tmp_path / "a", cache, workers=1, cache_root=tmp_path / "root")
    try:
        with connect(a.address) as c:
            first = c.compile(req)
    finally:
        rc = a.stop()
    assert rc == 0, a.stderr()  # SIGTERM is a graceful stop
    assert first.cache_hit is False
    assert (cache / first.cache_key[:2] / f"{first.cache_key}.entry").is_file()

    b = start_server(tmp_path / "b", cache, workers=1, cache_root=tmp_path / "root")
    try:
        assert b.port > 0
        with connect(b.address) as c:
            again = c.compile(req)
    finally:
        b.stop()
    assert again.cache_hit is True
    assert again.cache_key == first.cache_key
    assert so_file(again).sha256 == so_file(first).sha256


def test_sigterm_that_a_grpc_thread_takes_still_stops_the_server(tmp_path: Path) -> None:
    """Linux gives a process's SIGTERM to any thread that does not block it; CPython runs
    the handler only in the main thread. Aimed (tgkill) at one of the server's other
    threads, the signal must still stop it, gracefully and within seconds: the
    server used to sleep in an untimed wait that such a signal never woke (CI, one stop
    in eight under load)."""
    tgkill = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)
    if tgkill is None:
        pytest.skip("this libc has no tgkill (glibc >= 2.30 has)")
    s = start_server(tmp_path / "s", tmp_path / "artifacts", workers=1)
    try:
        others = sorted(int(t.name) for t in Path(f"/proc/{s.pid}/task").iterdir()
                        if int(t.name) != s.pid)
        assert others, "the server runs gRPC threads beside its main thread"
        time.sleep(0.5)  # the main thread is in its wait by now
        assert tgkill(s.pid, others[-1], signal.SIGTERM) == 0, os.strerror(ctypes.get_errno())
        try:
            rc = s.proc.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server ignored a SIGTERM taken by thread {others[-1]}")
    finally:
        s.stop()
    assert rc == 0, s.stderr()


# ---------------------------------------------------------------------------- 8. corruption


def test_corrupted_cache_entry_is_rebuilt(server: ServerProcess, client: RemoteClient,
                                          rng: np.random.Generator) -> None:
    req = blur_request(12, 24)
    first = client.compile(req)
    assert first.cache_hit is False
    entry = server.cache_dir / first.cache_key[:2] / f"{first.cache_key}.entry"
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))

    rebuilt = client.compile(req)
    assert rebuilt.cache_hit is False
    assert rebuilt.cache_key == first.cache_key
    assert so_file(rebuilt).sha256 == so_file(first).sha256
    a = rng.standard_normal((40, 77, 3), dtype=np.float32)
    out = kernel_of(rebuilt, "blur")(inp=a)["by"]
    np.testing.assert_allclose(out, blur_ref(a), rtol=1e-5, atol=1e-6)
    assert entry.read_bytes() != bytes(data)  # rewritten

    third = client.compile(req)
    assert third.cache_hit is True
    assert so_file(third).sha256 == so_file(first).sha256


# ---------------------------------------------------------------------------- 9. token


def test_token_required_and_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIDDLEEND_TOKEN", raising=False)
    token = "s3cret-token-for-tests"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    s = start_server(tmp_path / "logs", tmp_path / "artifacts", "--host", "127.0.0.1",
                     "--token-file", str(token_file), workers=1)
    try:
        for bad in (None, "wrong-token"):
            with connect(s.address, token=bad) as c:
                assert c.health() == "SERVING"  # the health check needs no token
                with pytest.raises(ServiceError) as info:
                    c.check(SMALL)
                assert info.value.code == "UNAUTHENTICATED"
                with pytest.raises(ServiceError) as info:
                    c.compile(SMALL)
                assert info.value.code == "UNAUTHENTICATED"
        with grpc.insecure_channel(s.address) as ch:
            code, details, _ = raw_call(ch, SMALL.SerializeToString())
        assert code == grpc.StatusCode.UNAUTHENTICATED and "token" in details

        with connect(s.address, token=token) as c:
            assert c.check(SMALL).legal is True
            resp = c.compile(SMALL)
        x = np.arange(21, dtype=np.float32)
        out = kernel_of(resp, "twice")(a=x)["c"]
        np.testing.assert_allclose(out, x * 2 + 1, rtol=1e-6)
    finally:
        s.stop()


def test_public_address_without_token_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        serve_command("--host", "0.0.0.0", "--port", "0", "--workers", "1", "--cache-dir",
                      str(tmp_path / "artifacts")),
        cwd=ROOT, env=server_env(tmp_path / "root"), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "token" in proc.stderr
    assert "serving" not in proc.stdout


# ---------------------------------------------------------------------------- 10. crash


def _checks_after_killing_a_worker(server: ServerProcess, n: int
                                   ) -> tuple[int, list[BaseException | None]]:
    workers = wait_for_workers(server, 2)
    assert len(workers) == 2, workers
    victim = workers[0]
    os.kill(victim, signal.SIGKILL)
    # no waiting for it to die: a worker that has not acknowledged a request did not run it
    outcomes: list[BaseException | None] = []
    with connect(server.address, timeout=120) as c:
        for _ in range(n):
            try:
                assert c.check(SMALL).legal is True
                outcomes.append(None)
            except ServiceError as e:
                outcomes.append(e)
    return victim, outcomes


def test_killed_worker_is_replaced_and_the_server_keeps_serving(
        server: ServerProcess, client: RemoteClient, rng: np.random.Generator) -> None:
    victim, outcomes = _checks_after_killing_a_worker(server, 4)
    assert server.proc.poll() is None  # the server process is alive
    assert outcomes == [None] * 4  # the dead worker is noticed before it gets a request
    workers = wait_for_workers(server, 2)
    assert len(workers) == 2 and victim not in workers
    # a fresh compile (through a worker) still builds a correct kernel
    resp = client.compile(encode_request(small_fn("after_kill", 3.0)))
    assert resp.cache_hit is False
    x = rng.standard_normal(33, dtype=np.float32)
    np.testing.assert_allclose(kernel_of(resp, "after_kill")(a=x)["c"], x * 3 + 1, rtol=1e-6)
    assert_serving(client)


def test_no_request_is_lost_to_a_worker_killed_while_idle(server: ServerProcess) -> None:
    _, outcomes = _checks_after_killing_a_worker(server, 2)
    for e in outcomes:
        if e is not None:
            raise e
