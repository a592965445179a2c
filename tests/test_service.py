"""The gRPC middle-end as deployed: ``middleend serve`` runs as a subprocess on loopback and
real gRPC clients (ours and raw grpc stubs) talk to it.

One module-scoped server (2 workers, its own cache dirs, a 1 MiB message cap) serves most
tests; the restart, token and bind-address tests start their own. Every bad-input test
also checks that the server still answers afterwards (health + a Check that goes through
a worker process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import product
from pathlib import Path

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from service_util import ROOT, ServerProcess, serve_command, server_env, start_server

import middleend as me
from middleend import examples
from middleend.errors import InvalidProgramError, ResourceLimitError, ScheduleError
from middleend.service.client import EmbeddedClient, RemoteClient, connect, kernel_of
from middleend.service.core import ServiceConfig
from middleend.service.diagnostics import DIAGNOSTIC_KEY, ServiceError
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

SERVICE = "middleend.v1.MiddleEnd"
MAX_MESSAGE_BYTES = 1 << 20  # the module server's --max-message-bytes


# ---------------------------------------------------------------------------- programs


def blur_fn(ti: int = 32, tj: int = 256) -> me.Function:
    """The papers' blurxy with the tuned schedule (tiles ti x tj, bx computed per tile row
    into a private buffer, i0 parallel, j vectorized by 8); sizes are Params N, M."""
    return examples.schedule_blur(examples.blur(), ti=ti, tj=tj).fn


def blur_request(ti: int = 32, tj: int = 256) -> pb.Request:
    return encode_request(blur_fn(ti, tj))


def blur_ref(a: np.ndarray) -> np.ndarray:
    three = np.float32(3)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / three
    return (bx[:-2] + bx[1:-1] + bx[2:]) / three


def matmul_fn(t: int = 16) -> me.Function:
    """C = A @ B (N x K times K x M) as an init plus an update over k; both tiled t x t,
    the update's loops i0 j0 k i1 j1 with j1 vectorized, fused at j0, i0 parallel."""
    with me.Function("mm") as f:
        n, k_, m = me.Param("N"), me.Param("K"), me.Param("M")
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("k", 0, k_)
        a = me.Input("A", [n, k_], me.float32)
        b = me.Input("B", [k_, m], me.float32)
        init = me.Computation("C", [i, j], 0.0)
        upd = me.Computation("upd", [i, j, k], dtype=me.float32)
        upd.set_expression(upd[i, j, k - 1] + a[i, k] * b[k, j])
        upd.store_in(init, [i, j])
        for c in (init, upd):
            c.tile("i", "j", t, t, "i0", "j0", "i1", "j1")
        upd.interchange("j1", "k")
        upd.interchange("i1", "k")
        upd.vectorize("j1", 8)
        upd.after(init, "j0")
        init.parallelize("i0")
        upd.parallelize("i0")
    return f


def small_fn(name: str = "twice", scale: float = 2.0) -> me.Function:
    """c[i] = a[i] * scale + 1: the cheapest program that still goes through a worker."""
    with me.Function(name) as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        a = me.Input("a", [n], me.float32)
        c = me.Computation("c", [i], a[i] * scale + 1.0)
        c.split(i, 8, "i0", "i1")
    return f


SMALL = encode_request(small_fn())


def illegal_request() -> pb.Request:
    """A matmul update parallelized along k, the loop that carries its reduction."""
    with me.Function("scan") as f:
        n = me.Param("N")
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, n), me.Var("k", 0, n)
        a = me.Input("A", [n, n], me.float32)
        init = me.Computation("C", [i, j], 0.0)
        upd = me.Computation("c1", [i, j, k], dtype=me.float32)
        upd.set_expression(upd[i, j, k - 1] + a[i, k] * a[k, j])
        upd.store_in(init, [i, j])
        upd.after(init, "j")
        upd.parallelize("k")
    return encode_request(f)


def cyclic_request() -> pb.Request:
    """A.compute_at(B) and B.compute_at(A): each is to be computed inside the other."""
    with me.Function("cyc") as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        x = me.Input("x", [n], me.float32)
        a = me.Computation("A", [i], x[i] * 2.0)
        b = me.Computation("B", [i], a[i] + 1.0)
        a.compute_at(b, "i")
        b.compute_at(a, "i")
    return encode_request(f)


def rename_everywhere(msg: Message, old: str, new: str) -> None:
    """Replace every string field equal to ``old`` (names and references) in ``msg``."""
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_MESSAGE:
            for sub in (value if fd.is_repeated else [value]):
                rename_everywhere(sub, old, new)
        elif fd.type == fd.TYPE_STRING and not fd.is_repeated and value == old:
            setattr(msg, fd.name, new)


# ---------------------------------------------------------------------------- helpers


def so_file(resp: pb.CompileResponse) -> pb.ArtifactFile:
    files = [f for f in resp.artifact.files if f.role == pb.SHARED_OBJECT]
    assert len(files) == 1, [f.name for f in resp.artifact.files]
    return files[0]


def raw_call(channel: grpc.Channel, payload: bytes, method: str = "Compile",
             timeout: float = 120.0) -> tuple[grpc.StatusCode, str, pb.Diagnostic | None]:
    """Send raw request bytes; the status code, its message and the diagnostic trailer."""
    rpc = channel.unary_unary(f"/{SERVICE}/{method}", request_serializer=None,
                              response_deserializer=None)
    try:
        rpc(payload, timeout=timeout)
    except grpc.RpcError as e:
        diag = None
        for k, v in e.trailing_metadata() or ():  # type: ignore[attr-defined]
            if k == DIAGNOSTIC_KEY:
                diag = pb.Diagnostic.FromString(v)
        return e.code(), e.details() or "", diag  # type: ignore[attr-defined]
    return grpc.StatusCode.OK, "", None


def assert_serving(client: RemoteClient) -> None:
    """The server answers: the health check, and a Check that needs a worker process."""
    assert client.health() == "SERVING"
    assert client.health(SERVICE) == "SERVING"
    assert client.check(SMALL).legal is True


def wait_for_workers(server: ServerProcess, n: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        pids = server.worker_pids()
        if len(pids) == n or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("service")
    s = start_server(base / "logs", base / "artifacts", "--max-message-bytes",
                     str(MAX_MESSAGE_BYTES), "--max-computations", "64", workers=2,
                     cache_root=base / "root")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[RemoteClient]:
    c = connect(server.address, timeout=120)
    yield c
    c.close()


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    ch = grpc.insecure_channel(server.address)
    yield ch
    ch.close()


# ---------------------------------------------------------------------------- 1. health


def test_health_and_reflection(server: ServerProcess, client: RemoteClient,
                               channel: grpc.Channel) -> None:
    assert server.workers == 2
    assert client.health() == "SERVING"
    assert client.health(SERVICE) == "SERVING"
    stub = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.RpcError) as info:  # the standard health service's answer
        stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND

    refl = reflection_pb2_grpc.ServerReflectionStub(channel)
    reqs = [reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE)]
    listed, described = list(refl.ServerReflectionInfo(iter(reqs), timeout=10))
    names = {s.name for s in listed.list_services_response.service}
    assert SERVICE in names
    assert "grpc.health.v1.Health" in names
    files = [descriptor_pb2.FileDescriptorProto.FromString(b)
             for b in described.file_descriptor_response.file_descriptor_proto]
    services = {f"{f.package}.{s.name}": s for f in files for s in f.service}
    methods = {m.name: (m.input_type, m.output_type) for m in services[SERVICE].method}
    assert methods == {
        "Compile": (".middleend.v1.Request", ".middleend.v1.CompileResponse"),
        "Check": (".middleend.v1.Request", ".middleend.v1.CheckResponse"),
        "Lower": (".middleend.v1.Request", ".middleend.v1.LowerResponse"),
    }


# ---------------------------------------------------------------------------- 2. run


def test_blur_and_matmul_compiled_remotely_match_numpy(server: ServerProcess,
                                                       client: RemoteClient,
                                                       rng: np.random.Generator) -> None:
    # blur: by is 68 x 298, tiled 32 x 256 and vectorized by 8: partial tiles and vectors
    blur = blur_fn().compile(service=client)
    a = rng.standard_normal((70, 300, 3), dtype=np.float32)
    out = blur(inp=a)
    assert list(out) == ["by"]
    assert out["by"].dtype == np.float32 and out["by"].shape == (68, 298, 3)
    np.testing.assert_allclose(out["by"], blur_ref(a), rtol=1e-5, atol=1e-6)
    assert "#pragma omp parallel for" in blur.source

    # matmul through a "host:port" string; 67 x 45 times 45 x 53 with 16 x 16 tiles
    mm = matmul_fn(16).compile(service=server.address)
    for n, k, m in [(67, 45, 53), (5, 3, 9)]:
        x = rng.integers(-4, 5, (n, k)).astype(np.float32)  # exact in float32
        y = rng.standard_normal((k, m), dtype=np.float32)
        c = mm(A=x, B=y)["C"]
        assert c.shape == (n, m)
        np.testing.assert_allclose(c, x.astype(np.float64) @ y, rtol=1e-5, atol=1e-5)

    # Lower and Check answer for the same program
    low = client.lower(encode_request(matmul_fn(16)))
    assert "mm" in low.entry_point.symbol
    assert [b.name for b in low.entry_point.buffers] == ["A", "B", "C"]
    assert client.check(encode_request(matmul_fn(16))).legal is True


# ---------------------------------------------------------------------------- 3. embedded


def test_embedded_and_remote_give_the_same_artifact(client: RemoteClient, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the embedded side builds from scratch: its own artifact cache and C build cache
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path / "embedded-root"))
    req = blur_request(20, 40)
    with EmbeddedClient(ServiceConfig(cache_dir=tmp_path / "embedded-artifacts")) as emb:
        local = emb.compile(req)
    remote = client.compile(req)
    assert not local.cache_hit
    assert local.cache_key == remote.cache_key and len(local.cache_key) == 64
    assert so_file(local).sha256 == so_file(remote).sha256
    assert so_file(local).content == so_file(remote).content
    assert [s.text for s in local.sources] == [s.text for s in remote.sources]
    assert local.sources[0].text  # not two empty strings
    assert {f.name: f.sha256 for f in local.artifact.files} == \
        {f.name: f.sha256 for f in remote.artifact.files}
    assert local.artifact.entry_point == remote.artifact.entry_point
    assert local.layers == remote.layers


# ---------------------------------------------------------------------------- 4. concurrency


def test_16_concurrent_compiles_then_all_cache_hits(client: RemoteClient,
                                                    rng: np.random.Generator) -> None:
    tiles = list(product((8, 16, 24, 40), (16, 32, 64, 128)))
    reqs = [blur_request(ti, tj) for ti, tj in tiles]
    with ThreadPoolExecutor(max_workers=16) as ex:
        first = list(ex.map(client.compile, reqs))
    assert [r.cache_hit for r in first] == [False] * 16
    keys = [r.cache_key for r in first]
    assert len(set(keys)) == 16
    sources = [r.sources[0].text for r in first]
    assert len(set(sources)) == 16  # 16 different schedules, 16 different kernels

    with ThreadPoolExecutor(max_workers=16) as ex:
        second = list(ex.map(client.compile, reqs))
    assert [r.cache_hit for r in second] == [True] * 16
    assert [r.cache_key for r in second] == keys
    assert [so_file(r).sha256 for r in second] == [so_file(r).sha256 for r in first]
    assert all([t.phase for t in r.timings] == ["cache"] for r in second)

    a = rng.standard_normal((45, 150, 3), dtype=np.float32)
    ref = blur_ref(a)
    for (ti, tj), resp in zip(tiles, second, strict=True):
        out = kernel_of(resp, "blur")(inp=a)["by"]
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6, err_msg=f"{ti}x{tj}")


# ---------------------------------------------------------------------------- 5. bad inputs


def test_malformed_domain(client: RemoteClient, channel: grpc.Channel) -> None:
    req = blur_request()
    req.function.computations[1].domain = "[N, M] -> { by[i, j, c] : 0 <= i < N and"
    code, details, diag = raw_call(channel, req.SerializeToString())
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert diag is not None and diag.kind == pb.INVALID_PROGRAM
    assert diag.field_path == "function.computations[1].domain"
    assert "computations[" in details and "domain" in details and "not an ISL set" in details
    with pytest.raises(InvalidProgramError) as info:
        client.compile(req)
    assert info.value.field_path == "function.computations[1].domain"
    assert_serving(client)


def test_command_on_unknown_computation(client: RemoteClient, channel: grpc.Channel) -> None:
    req = blur_request()
    req.function.commands[2].computation = "nope"
    code, details, diag = raw_call(channel, req.SerializeToString())
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert diag is not None and diag.field_path == "function.commands[2].computation"
    assert "unknown computation 'nope'" in details
    with pytest.raises(InvalidProgramError) as info:
        client.check(req)
    assert info.value.field_path == "function.commands[2].computation"
    assert_serving(client)


def test_cyclic_compute_at(client: RemoteClient, channel: grpc.Channel) -> None:
    req = cyclic_request()
    code, details, diag = raw_call(channel, req.SerializeToString())
    # the server answers FAILED_PRECONDITION (an illegal schedule, kind ILLEGAL_SCHEDULE)
    assert code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert "cyclic" in details
    assert diag is not None and diag.kind == pb.ILLEGAL_SCHEDULE
    assert set(diag.computations) == {"A", "B"}
    # blamed: the command that closed the cycle (the second compute_at)
    assert diag.HasField("command_index") and diag.command_index == 1
    assert diag.command.startswith("B.compute_at(")
    with pytest.raises(ScheduleError, match="cyclic"):
        client.compile(req)
    assert_serving(client)


def test_illegal_schedule_names_the_dependence_and_command(client: RemoteClient,
                                                           channel: grpc.Channel) -> None:
    req = illegal_request()
    payload = req.SerializeToString()
    for method in ("Compile", "Check"):
        code, details, diag = raw_call(channel, payload, method)
        assert code == grpc.StatusCode.FAILED_PRECONDITION, (method, details)
        assert diag is not None and diag.kind == pb.ILLEGAL_SCHEDULE
        assert diag.HasField("command_index")
        cmd = req.function.commands[diag.command_index]
        assert (cmd.computation, cmd.WhichOneof("command"), cmd.parallelize.dim) == \
            ("c1", "parallelize", "k")
        assert diag.command == "c1.parallelize(dim='k')"
        assert diag.dependence.startswith("[N] -> { c1[i, j, k] -> c1[")
        assert "k' > k" in diag.dependence
        assert "carries a dependence" in details
    with pytest.raises(ScheduleError) as info:
        client.compile(req)
    err = info.value
    assert err.command_index == diag.command_index and err.command == diag.command
    assert err.dependence == diag.dependence
    assert_serving(client)


def test_oversized_domain_is_resource_exhausted(client: RemoteClient,
                                                channel: grpc.Channel) -> None:
    req = blur_request()
    dims = [f"d{k}" for k in range(40)]
    req.function.computations[0].domain = (
        f"[N, M] -> {{ bx[{', '.join(dims)}] : "
        + " and ".join(f"0 <= {d} < 4" for d in dims) + " }")
    code, details, diag = raw_call(channel, req.SerializeToString())
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert diag is not None and diag.kind == pb.RESOURCE_LIMIT
    assert "40 dims exceed the cap of 16" in details
    with pytest.raises(ResourceLimitError, match="40 dims"):
        client.compile(req)
    assert_serving(client)


def test_injection_in_a_computation_name(client: RemoteClient, channel: grpc.Channel) -> None:
    evil = 'a;system("x")'
    req = blur_request()
    rename_everywhere(req.function, "bx", evil)
    comp = req.function.computations[0]
    comp.domain = comp.domain.replace("bx[", f"{evil}[")
    assert comp.name == evil and req.function.commands[2].computation == evil
    code, details, diag = raw_call(channel, req.SerializeToString())
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert diag is not None and diag.field_path == "function.computations[0].name"
    assert "invalid computation name" in details
    with pytest.raises(InvalidProgramError) as info:
        client.compile(req)
    assert info.value.field_path == "function.computations[0].name"
    assert_serving(client)


@pytest.mark.parametrize("mangle", ["half", "flipped", "garbage"])
def test_corrupt_request_bytes(client: RemoteClient, channel: grpc.Channel,
                               mangle: str) -> None:
    data = blur_request().SerializeToString()
    if mangle == "half":
        payload = data[:len(data) // 2]
    elif mangle == "flipped":  # the first field's length prefix now overruns the message
        payload = data[:1] + b"\xff\xff\xff\xff\x0f" + data[3:]
    else:
        payload = b"\x0a\xff\xff\xff\xff\x0f" + bytes(range(256))
    for method in ("Compile", "Check", "Lower"):
        code, details, diag = raw_call(channel, payload, method)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (method, details)
        assert diag is not None and diag.field_path == "request"
        assert "not a middleend.v1.Request message" in details
    assert_serving(client)


def padded(req: pb.Request, size: int) -> bytes:
    """``req`` serialized, plus an unknown length-delimited field 100 (which a parser skips)
    to make the message ``size`` bytes or more."""
    data = req.SerializeToString()
    n = max(0, size - len(data))
    length = bytearray()
    while True:
        length.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    return data + b"\xa2\x06" + bytes(length) + b"p" * max(0, size - len(data))


def test_message_over_the_size_cap(client: RemoteClient, channel: grpc.Channel) -> None:
    under = padded(SMALL, MAX_MESSAGE_BYTES - 4096)
    assert pb.Request.FromString(under).function == SMALL.function  # unknown field skipped
    code, details, _ = raw_call(channel, under, "Check")
    assert code == grpc.StatusCode.OK, details  # under the cap: served normally

    over = padded(SMALL, MAX_MESSAGE_BYTES + 4096)
    code, details, diag = raw_call(channel, over, "Check")
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
    assert "larger than max" in details and diag is None  # refused by gRPC itself
    big = pb.Request()
    big.CopyFrom(SMALL)
    big.function.computations[0].domain += " " * (MAX_MESSAGE_BYTES + 1000)
    with pytest.raises(ResourceLimitError, match="larger than max"):
        client.compile(big)
    assert_serving(client)


def test_long_invalid_name_gets_invalid_argument(client: RemoteClient,
                                                 channel: grpc.Channel) -> None:
    req = pb.Request()
    req.CopyFrom(SMALL)
    req.function.name = "n" * 20_000  # names are capped at 64 characters
    code, details, diag = raw_call(channel, req.SerializeToString())
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:200])
    assert diag is not None and diag.field_path == "function.name"


def test_server_caps_reach_the_workers(client: RemoteClient, channel: grpc.Channel) -> None:
    """`serve --max-computations 64`: the cap is applied where requests are decoded."""
    req = pb.Request()
    req.CopyFrom(SMALL)
    base = req.function.computations[0]
    for k in range(65):
        c = req.function.computations.add()
        c.CopyFrom(base)
        c.name = f"x{k}"
        c.domain = base.domain.replace(f"{base.name}[", f"x{k}[", 1)
    code, details, diag = raw_call(channel, req.SerializeToString(), "Check")
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
    assert "cap of 64" in details and diag is not None and diag.kind == pb.RESOURCE_LIMIT
    assert_serving(client)


# ---------------------------------------------------------------------------- 6. deadline


def test_deadline_exceeded(server: ServerProcess, client: RemoteClient,
                           channel: grpc.Channel) -> None:
    req = blur_request(48, 96)  # never compiled before: needs lowering and gcc
    t0 = time.monotonic()
    code, details, _ = raw_call(channel, req.SerializeToString(), timeout=0.05)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED, details
    assert time.monotonic() - t0 < 5.0

    hasty = connect(server.address, timeout=0.05)
    try:
        with pytest.raises(ServiceError) as info:
            hasty.compile(blur_request(56, 96))
        assert info.value.code == "DEADLINE_EXCEEDED"
    finally:
        hasty.close()

    assert_serving(client)
    resp = client.compile(req)  # the abandoned compile left nothing in the cache
    assert resp.cache_hit is False and so_file(resp).content


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
