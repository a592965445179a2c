"""The gRPC middle-end as deployed: ``middleend serve`` runs as a subprocess on loopback and
real gRPC clients (ours and raw grpc stubs) talk to it: health, reflection, compiles run
against numpy, embedded vs remote artifacts, concurrency, bad inputs, deadlines.

One module-scoped server (2 workers, its own cache dirs, a 1 MiB message cap, at most 64
computations) serves these tests. Every bad-input test also checks that the server still
answers afterwards (health + a Check that goes through a worker process). Restart, cache
corruption, tokens and worker crashes are in test_service_lifecycle.py.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from itertools import product
from pathlib import Path

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from service_util import (
    MAX_MESSAGE_BYTES,
    SERVICE,
    SMALL,
    ServerProcess,
    assert_serving,
    blur_fn,
    blur_ref,
    blur_request,
    cyclic_request,
    illegal_request,
    matmul_fn,
    raw_call,
    rename_everywhere,
    so_file,
)

from middleend.ir.errors import InvalidProgramError, ResourceLimitError, ScheduleError
from middleend.service.client import EmbeddedClient, RemoteClient, connect, kernel_of
from middleend.service.core import ServiceConfig
from middleend.service.diagnostics import ServiceError
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

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
    assert "me_parallel_for(" in blur.source

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
    """``req`` serialized, plus an unknown length-delimited field 100 (which a parser skips
    and the middle-end refuses) to make the message ``size`` bytes or more."""
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
    code, details, diag = raw_call(channel, under, "Check")
    # under the cap: it reaches the middle-end, which refuses the unknown padding field
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "unknown field number 100" in details and diag is not None

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
