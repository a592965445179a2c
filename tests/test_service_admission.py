"""Issue 14, the share of workers and the memory of a loaded server: heavy requests cannot
starve small ones (admission.py), and a server's memory returns to its baseline after a
burst of large requests (heap.py, inflight.py).

The classification is checked on this project's own programs (small) and on requests
past each threshold (heavy); the admission policy with threads and short waits; and both
end to end against ``middleend serve`` processes of their own.
"""

from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from service_util import (
    ROOT,
    SERVICE,
    SMALL,
    assert_serving,
    blur_request,
    matmul_fn,
    serve_command,
    server_env,
    slow_request,
    small_fn,
    start_server,
)

import middleend as me
from middleend.api import examples, examples_gpu
from middleend.service.admission import (
    Admission,
    AdmissionConfig,
    AdmissionRefused,
    CostThresholds,
    domain_dims,
    heavy_reason,
    range_dims,
)
from middleend.service.client import connect
from middleend.service.workers import WorkerCancelled
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

T = CostThresholds()


def reason(req: pb.Request) -> str | None:
    return heavy_reason(req, req.ByteSize(), T)


# ---------------------------------------------------------------------------- classification


def test_dims_are_counted_from_the_text() -> None:
    assert domain_dims("[N] -> { S[i, j] : 0 <= i < N and 0 <= j < i }") == 2
    assert domain_dims("{ S[] }") == 0
    assert domain_dims("{ S[i] : exists (e = [(i)/2]: 2e = i) }") == 1
    assert range_dims("[N] -> { S[i] -> [0, i, 0] }") == 3
    assert range_dims("{ S[i, j] -> [(i + j), floor((i)/2), 0] }") == 3
    assert range_dims("{ S[i] }") == 0


def test_this_projects_programs_are_small() -> None:
    blur_gpu = examples_gpu.schedule_blur_gpu(examples.blur(), "figure3b").fn
    heat = examples_gpu.schedule_heat2d_gpu(examples.heat2d(), 16).fn
    for req in (SMALL, blur_request(), encode_request(matmul_fn()),
                encode_request(examples.sgemm_packed(256)), encode_request(blur_gpu, "gpu"),
                encode_request(heat, "gpu")):
        assert reason(req) is None, (req.function.name, reason(req))


def test_each_threshold_makes_a_request_heavy() -> None:
    big = pb.Request.FromString(slow_request(1000))
    assert "KiB, over 32 KiB" in (reason(big) or "")

    with me.Function("chain") as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        prev = me.Input("a", [n], me.float32)
        for k in range(T.computations + 1):
            prev = me.Computation(f"c{k}", [i], prev[i] * 2.0)
    assert reason(encode_request(f)) == f"{T.computations + 1} computations, over 64"

    deep = pb.Request()
    deep.CopyFrom(SMALL)
    comp = deep.function.computations[0]
    iters = ", ".join(f"i{k}" for k in range(10))
    comp.domain = f"{{ c[{iters}] : 0 <= i0 < 4 }}"
    del deep.function.commands[:]
    for k in range(0, 10, 2):  # five 2-D tiles: 10 + 10 loop dims
        t = deep.function.commands.add(computation="c").tile
        t.dims.extend([f"i{k}", f"i{k + 1}"])
    assert reason(deep) == ("computation 'c' has 20 loop dims (its domain's and those its "
                            "splits and tiles add), over 16")

    wide = pb.Request()
    wide.CopyFrom(SMALL)
    zeros = ", ".join(["0"] * 40)
    wide.function.commands.add(computation="c").set_schedule.isl_map = \
        f"[N] -> {{ c[i] -> [i, {zeros}] }}"
    assert reason(wide) == "a schedule map of 'c' has 41 time dims, over 32"

    many = pb.Request()
    many.CopyFrom(SMALL)
    for _ in range(T.commands):
        many.function.commands.add(computation="c").parallelize.dim = "i0"
    assert reason(many) == f"{T.commands + 1} commands, over 256"


# ---------------------------------------------------------------------------- the policy


def test_reserved_workers_default_and_bounds() -> None:
    cfg = AdmissionConfig()
    assert [cfg.reserved_of(w) for w in (1, 2, 4, 8, 16)] == [0, 1, 1, 2, 4]
    assert AdmissionConfig(reserved=0).reserved_of(3) == 0
    for bad in (2, -1):
        with pytest.raises(ValueError, match="--reserved-workers"):
            AdmissionConfig(reserved=bad).reserved_of(2)
    with pytest.raises(ValueError, match="--heavy-queue"):
        Admission(2, AdmissionConfig(queue=-1))


def test_a_server_cannot_reserve_every_worker(tmp_path: Path) -> None:
    proc = subprocess.run(serve_command("--port", "0", "--workers", "1",
                                        "--reserved-workers", "1"),
                          cwd=ROOT, env=server_env(tmp_path), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("middleend serve: --reserved-workers must be at least 0 "
                                   "and less than --workers (1), got 1")


def test_heavy_requests_take_only_their_share() -> None:
    adm = Admission(3, AdmissionConfig(reserved=1, queue=1, wait=0.3))
    assert adm.share == 2
    with adm.enter("big", 10.0), adm.enter("big", 10.0):
        assert adm.heavy_running() == 2
        with adm.enter(None, 10.0), adm.enter(None, 10.0):  # small ones enter at once
            pass
        with pytest.raises(AdmissionRefused, match=r"--heavy-wait.*heavy \(big\)"):
            with adm.enter("big", 10.0):
                pass
        with pytest.raises(AdmissionRefused, match="none became free"):  # its deadline
            with adm.enter("big", 0.05):
                pass
    with adm.enter("big", 10.0):  # room again
        assert adm.heavy_running() == 1


def test_a_full_queue_refuses_at_once_and_a_waiter_gets_the_freed_place() -> None:
    adm = Admission(2, AdmissionConfig(queue=1, wait=30.0))
    release, inside = threading.Event(), threading.Event()

    def waiter() -> None:
        with adm.enter("second", 30.0):
            inside.set()

    with adm.enter("first", 10.0):
        t = threading.Thread(target=waiter)
        t.start()
        while adm.waiting == 0:
            release.wait(0.01)
        with pytest.raises(AdmissionRefused, match=r"1 heavy requests already wait for "
                                                    r"one \(--heavy-queue\)"):
            with adm.enter("third", 30.0):
                pass
        assert not inside.is_set()
    t.join(10)
    assert inside.is_set() and adm.heavy_running() == 0


def test_waiting_heavy_requests_enter_in_arrival_order() -> None:
    adm = Admission(2, AdmissionConfig(queue=3, wait=30.0))
    order: list[str] = []
    go = threading.Event()

    def waiter(name: str) -> None:
        with adm.enter(name, 30.0):
            order.append(name)
            go.wait(0.05)

    with adm.enter("first", 10.0):
        threads = []
        for k, name in enumerate(("a", "b", "c")):
            threads.append(threading.Thread(target=waiter, args=(name,)))
            threads[-1].start()
            while adm.waiting < k + 1:
                go.wait(0.01)
    for t in threads:
        t.join(10)
    assert order == ["a", "b", "c"]


def test_a_waiting_heavy_request_leaves_when_its_client_cancels() -> None:
    adm = Admission(2, AdmissionConfig(queue=1, wait=30.0))
    gone = threading.Event()
    with adm.enter("first", 10.0):
        threading.Timer(0.1, gone.set).start()
        with pytest.raises(WorkerCancelled, match="cancelled by its caller"):
            with adm.enter("second", 30.0, gone.is_set):
                pass
    assert adm.waiting == 0


def test_a_small_request_that_runs_long_counts_as_heavy() -> None:
    adm = Admission(3, AdmissionConfig(reserved=1, queue=0, small_seconds=0.05))
    with adm.enter(None, 10.0), adm.enter("big", 10.0):
        assert adm.heavy_running() == 1
        time.sleep(0.1)  # past small_seconds: the small one now holds the share too
        assert adm.heavy_running() == 2
        with pytest.raises(AdmissionRefused, match="--heavy-queue"):
            with adm.enter("big", 10.0):
                pass


# ---------------------------------------------------------------------------- end to end


def test_heavy_requests_do_not_starve_a_small_compile(tmp_path: Path) -> None:
    """Two workers, one kept for small requests: of three heavy compiles (gcc needs
    minutes for them) one runs, one waits, one is refused at once; a small compile is
    served meanwhile and the health check says SERVING; the waiting one is refused when
    its wait runs out."""
    srv = start_server(tmp_path / "log", tmp_path / "cache", "--heavy-queue", "1",
                       "--heavy-wait", "4", workers=2)
    try:
        with connect(srv.address, timeout=120) as c:
            rpc = c.channel.unary_unary(f"/{SERVICE}/Compile", request_serializer=None,
                                        response_deserializer=None)
            heavy = [rpc.future(slow_request(4000 + k), timeout=300) for k in range(3)]
            first = _first_done(heavy, 60)
            assert first.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "(--heavy-queue)" in first.details() and "--reserved-workers" in \
                first.details() and "KiB, over 32 KiB" in first.details()
            kernel = small_fn("served", 5.0).compile(service=c)  # not cached: built now
            assert kernel.artifact.file("shared_object").content
            running = [h for h in heavy if not h.done()]
            assert running, "the heavy compiles finished: they did not saturate the share"
            assert c.health() == "SERVING"  # a worker is free for small requests
            waited = _first_done(running, 60)
            assert waited.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "--heavy-wait 4 s" in waited.details()
            for h in heavy:
                h.cancel()
            assert_serving(c)
    finally:
        srv.stop()


def _first_done(calls: list[grpc.Future], timeout: float) -> grpc.Future:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for call in calls:
            if call.done():
                return call
        time.sleep(0.05)
    raise AssertionError(f"none of {len(calls)} calls finished within {timeout} s")


TOLERANCE_MIB = 32


def test_memory_returns_to_baseline_after_large_requests(tmp_path: Path) -> None:
    """Two rounds of 6 concurrent 6 MiB requests (Compile: parsed by the server; Check:
    sent on to the worker) leave the server and its worker within 32 MiB of their memory
    before, once the server has trimmed its heap (~7 MiB here; without the fixed mmap
    threshold and the trim, the same load left 145-245 MiB more)."""
    srv = start_server(tmp_path / "log", tmp_path / "cache", "--max-message-bytes",
                       str(16 << 20), "--heavy-queue", "64", "--heavy-wait", "120", workers=1)
    limit = [("grpc.max_send_message_length", 16 << 20)]
    try:
        with connect(srv.address, timeout=120) as c, \
                grpc.insecure_channel(srv.address, options=limit) as ch:
            assert_serving(c)
            big = pb.Request()
            big.CopyFrom(SMALL)
            big.function.computations[0].domain += " " * (6 << 20)
            data = big.SerializeToString()
            calls = [ch.unary_unary(f"/{SERVICE}/{m}", request_serializer=None,
                                    response_deserializer=None) for m in ("Compile", "Check")]

            def send(k: int) -> grpc.StatusCode:
                try:
                    calls[k % 2](data, timeout=120)
                except grpc.RpcError as e:
                    return e.code()  # type: ignore[attr-defined, no-any-return]
                return grpc.StatusCode.OK

            base = srv.rss_mib()
            for _ in range(2):
                with ThreadPoolExecutor(6) as pool:
                    codes = set(pool.map(send, range(6)))
                assert codes == {grpc.StatusCode.RESOURCE_EXHAUSTED}  # the domain text cap
            end = time.monotonic() + 10  # the server trims once quiet (0.5 s)
            while srv.rss_mib() > base + TOLERANCE_MIB and time.monotonic() < end:
                time.sleep(0.25)
            after = srv.rss_mib()
            assert after <= base + TOLERANCE_MIB, (base, after)
            assert_serving(c)
    finally:
        srv.stop()


def test_calls_past_the_concurrency_cap_are_refused_at_once(tmp_path: Path) -> None:
    """With --max-concurrent-rpcs 2, of five concurrent heavy compiles three get
    RESOURCE_EXHAUSTED at once instead of queueing for a handler thread without bound;
    once the others are cancelled the server answers again."""
    srv = start_server(tmp_path / "log", tmp_path / "cache", "--max-concurrent-rpcs", "2",
                       "--heavy-queue", "8", "--heavy-wait", "120", workers=1)
    try:
        with connect(srv.address, timeout=120) as c:
            rpc = c.channel.unary_unary(f"/{SERVICE}/Compile", request_serializer=None,
                                        response_deserializer=None)
            calls = [rpc.future(slow_request(4000 + k), timeout=300) for k in range(5)]
            refused = []
            for _ in range(3):
                first = _first_done([x for x in calls if x not in refused], 60)
                assert first.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, first.details()
                refused.append(first)
            assert not any(x.done() for x in calls if x not in refused)
            for x in calls:
                x.cancel()
            deadline = time.monotonic() + 60
            while True:
                try:
                    assert_serving(c)
                    break
                except (grpc.RpcError, AssertionError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
    finally:
        srv.stop()
