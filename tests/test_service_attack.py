"""The service under attack (issue 14): requests that set no deadline or an absurd one,
diagnostics too long for gRPC metadata, unknown protobuf fields, deep expression trees,
names with a trailing newline, and a token file that is missing or empty.

The RPC tests share the module-scoped server of conftest.py (2 workers, 1 MiB message cap,
at most 64 computations); each also checks that the server still answers afterwards.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import grpc
import pytest
from service_util import (
    ROOT,
    SMALL,
    ServerProcess,
    assert_serving,
    raw_call,
    rename_everywhere,
    serve_command,
    server_env,
    slow_request,
    small_fn,
    so_file,
    start_server,
)

import middleend as me
from middleend.ir.errors import InvalidProgramError, TargetError
from middleend.service.client import EmbeddedClient, RemoteClient, connect
from middleend.service.core import Service, ServiceConfig
from middleend.service.diagnostics import (
    MAX_DIAGNOSTIC_BYTES,
    MAX_STATUS_BYTES,
    bounded,
    cut,
    status_text,
)
from middleend.wire import Limits, parse_request
from middleend.wire.decode import WIRE_MAX_EXPR_DEPTH
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb


def copy(req: pb.Request) -> pb.Request:
    out = pb.Request()
    out.CopyFrom(req)
    return out


def diag_of(code_details_diag: tuple[grpc.StatusCode, str, pb.Diagnostic | None]
            ) -> pb.Diagnostic:
    code, details, diag = code_details_diag
    assert diag is not None, (code, details[:300])
    return diag


# ---------------------------------------------------------------------------- 1. deadlines


def test_no_deadline_and_a_huge_one_get_the_servers_limits(
        channel: grpc.Channel, client: RemoteClient) -> None:
    req = encode_request(small_fn("nodeadline", 3.0)).SerializeToString()
    rpc = channel.unary_unary("/middleend.v1.MiddleEnd/Compile", request_serializer=None,
                              response_deserializer=None)
    first = pb.CompileResponse.FromString(rpc(req))  # no deadline at all
    assert so_file(first).content and first.cache_hit is False
    for timeout in (1e9, 1e8):
        again = pb.CompileResponse.FromString(rpc(req, timeout=timeout))
        assert again.cache_key == first.cache_key
    other = encode_request(small_fn("hugedeadline", 4.0)).SerializeToString()
    resp = pb.CompileResponse.FromString(rpc(other, timeout=1e9))  # built, not a hit
    assert so_file(resp).content and resp.cache_hit is False
    assert_serving(client)


def test_time_limit_default_and_cap() -> None:
    svc = Service(ServiceConfig(default_timeout=60.0, max_timeout=120.0))
    try:
        assert svc.time_limit(None) == 60.0
        assert svc.time_limit(float("inf")) == 60.0
        assert svc.time_limit(float("nan")) == 60.0
        assert svc.time_limit(1e9) == 120.0
        assert svc.time_limit(5.0) == 5.0
        assert svc.time_limit(-1.0) == 0.0
    finally:
        svc.close()


# ---------------------------------------------------------------------------- 2. diagnostics


def test_cut_counts_utf8_bytes_and_keeps_characters_whole() -> None:
    assert cut("abc", 10) == "abc"
    text = "é" * 5000  # 10000 bytes
    short = cut(text, 1001)
    assert len(short.encode()) <= 1001
    assert short.startswith("é" * 100) and short.endswith("[cut: 10000 bytes in all]")
    short.encode("utf-8", "strict")  # no half character
    assert "\ufffd" not in short


def test_a_huge_non_ascii_diagnostic_reaches_the_client(client: RemoteClient,
                                                        channel: grpc.Channel) -> None:
    req = copy(SMALL)
    req.function.commands.add(computation="c").set_schedule.isl_map = "é" * 5000
    code, details, diag = raw_call(channel, req.SerializeToString(), "Check")
    assert code == grpc.StatusCode.INVALID_ARGUMENT or code == \
        grpc.StatusCode.FAILED_PRECONDITION, (code, details[:300])
    assert diag is not None  # the trailer arrived (it was dropped: "Stream removed")
    assert len(details.encode()) <= MAX_STATUS_BYTES and "bytes in all]" in details
    assert diag.ByteSize() <= MAX_DIAGNOSTIC_BYTES
    assert diag.command_index == 1 and "é" in diag.command
    with pytest.raises(me.MiddleEndError, match="bytes in all"):
        client.check(req)
    assert_serving(client)


def test_bounded_fits_every_field_at_once() -> None:
    long = "ü" * 20_000
    d = pb.Diagnostic(kind=pb.BUILD_FAILED, message=long, dependence=long, command=long,
                      field_path=long, level=long, build_log=long,
                      computations=["ж" * 500] * 40)
    b = bounded(d)
    assert b.ByteSize() <= MAX_DIAGNOSTIC_BYTES
    assert len(status_text(b).encode()) <= MAX_STATUS_BYTES
    assert b.message.startswith("ü") and b.kind == pb.BUILD_FAILED


# ---------------------------------------------------------------------------- 3. unknown fields


def with_unknown(data: bytes, number: int = 100, value: bytes = b"pad") -> bytes:
    """``data`` plus a length-delimited field ``number`` (< 2048) no message defines."""
    key = (number << 3) | 2
    return data + bytes([(key & 0x7F) | 0x80, key >> 7, len(value)]) + value


def test_unknown_top_level_field_is_refused(client: RemoteClient,
                                            channel: grpc.Channel) -> None:
    plain = SMALL.SerializeToString()
    for method in ("Compile", "Check", "Lower"):
        code, details, diag = raw_call(channel, with_unknown(plain), method)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (method, details)
        assert diag is not None and diag.field_path == "request"
        assert "unknown field number 100" in details
    # two requests that differ only in an unknown field no longer mean two cache entries
    with pytest.raises(InvalidProgramError, match="unknown field number 100"):
        client.compile(pb.Request.FromString(with_unknown(plain, value=b"other")))
    assert_serving(client)


def test_unknown_nested_field_is_refused_with_its_path(channel: grpc.Channel) -> None:
    req = copy(SMALL)
    expr = req.function.computations[0].expression
    expr.MergeFromString(with_unknown(b"", 1000, b"x"))
    code, details, diag = raw_call(channel, req.SerializeToString(), "Compile")
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert diag is not None and diag.field_path == "function.computations[0].expression"
    assert "unknown field number 1000 in a middleend.v1.Expr" in details


def test_parse_request_accepts_known_fields() -> None:
    assert parse_request(SMALL.SerializeToString()) == SMALL


# ---------------------------------------------------------------------------- 4. nesting


def nested(depth: int) -> pb.Request:
    """SMALL with c's expression -(-(...(1.0))): the constant ``depth`` levels down."""
    req = copy(SMALL)
    leaf = pb.Expr()
    leaf.constant.type = pb.FLOAT32
    leaf.constant.float_value = 1.0
    for _ in range(depth):
        up = pb.Expr()
        up.unary.op = pb.NEG
        up.unary.a.CopyFrom(leaf)
        leaf = up
    req.function.computations[0].expression.CopyFrom(leaf)
    return req


def test_limits_and_wire_agree_on_the_depth() -> None:
    assert Limits().max_expr_depth == WIRE_MAX_EXPR_DEPTH == 47


def test_nesting_at_the_cap_works_one_over_is_refused(client: RemoteClient,
                                                      channel: grpc.Channel) -> None:
    ok = nested(WIRE_MAX_EXPR_DEPTH)
    resp = client.compile(ok)
    assert so_file(resp).content
    for depth in (WIRE_MAX_EXPR_DEPTH + 1, WIRE_MAX_EXPR_DEPTH + 2, 200, 1000):
        code, details, diag = raw_call(channel, nested(depth).SerializeToString())
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (depth, details)
        assert f"at most {WIRE_MAX_EXPR_DEPTH} levels" in details or \
            f"limit of {WIRE_MAX_EXPR_DEPTH} levels" in details, (depth, details)
        assert "not a middleend.v1.Request" not in details
    assert_serving(client)


def test_nesting_through_the_embedded_service() -> None:
    with EmbeddedClient() as c:
        c.check(nested(WIRE_MAX_EXPR_DEPTH))
        for depth in (WIRE_MAX_EXPR_DEPTH + 1, 300):
            with pytest.raises(InvalidProgramError, match=f"{WIRE_MAX_EXPR_DEPTH} levels"):
                c.check(nested(depth))


# ---------------------------------------------------------------------------- 5. names


def test_trailing_newline_in_names_refused_by_the_api() -> None:
    with me.Function("nl"):
        n = me.Param("N")
        i = me.Var("i", 0, n)
        with pytest.raises(me.DefinitionError, match="invalid"):
            me.Input("a\n", [n], me.float32)
        a = me.Input("a", [n], me.float32)
        with pytest.raises(me.DefinitionError, match="invalid computation name"):
            me.Computation("x\n", [i], a[i] * 2.0)


def test_trailing_newline_in_a_c_identifier_refused() -> None:
    from backends.clike.cexpr import ident

    assert ident("x_1") == "x_1"
    for bad in ("x\n", "x\n\n", "\nx", "x y"):
        with pytest.raises(TargetError, match="invalid C"):
            ident(bad)


@pytest.mark.parametrize("old, path", [("c", "function.computations[0].name"),
                                       ("a", "function.inputs[0]")])
def test_trailing_newline_in_names_refused_by_the_service(
        client: RemoteClient, channel: grpc.Channel, old: str, path: str) -> None:
    req = copy(SMALL)
    rename_everywhere(req.function, old, old + "\n")
    if old == "c":
        comp = req.function.computations[0]
        comp.domain = comp.domain.replace("c[", "c\n[", 1)
    code, details, diag = raw_call(channel, req.SerializeToString(), "Check")
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert diag is not None and diag.field_path.startswith(path), diag.field_path
    assert "invalid" in details and "name" in details
    with EmbeddedClient() as c, pytest.raises(InvalidProgramError) as info:
        c.check(req)
    assert info.value.field_path.startswith(path)
    assert_serving(client)


# ---------------------------------------------------------------------------- 6. token file


@pytest.mark.parametrize("case", ["missing", "empty", "blank"])
def test_bad_token_file_refuses_to_start(tmp_path: Path, case: str) -> None:
    token = tmp_path / "token"
    if case == "empty":
        token.write_text("")
    elif case == "blank":
        token.write_text("  \n")
    proc = subprocess.run(serve_command("--port", "0", "--workers", "1", "--token-file",
                                        str(token)),
                          cwd=ROOT, env=server_env(tmp_path / "root"), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "serving" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "--token-file" in lines[0] and str(token) in lines[0]
    assert ("No such file" in lines[0]) if case == "missing" else ("empty" in lines[0])


def test_empty_token_env_refuses_to_start(tmp_path: Path) -> None:
    env = server_env(tmp_path / "root")
    env["MIDDLEEND_TOKEN"] = ""
    proc = subprocess.run(serve_command("--port", "0", "--workers", "1"), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and "MIDDLEEND_TOKEN" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr



# ---------------------------------------------------------------------------- schedule dims

@pytest.mark.parametrize("where", ["set_schedule", "order"])
def test_schedule_maps_with_too_many_dims_are_refused_at_once(
        client: RemoteClient, channel: grpc.Channel, where: str) -> None:
    """1,000 time dimensions used to keep a worker busy past a minute (the legality check
    grows about cubically with them); the decoder refuses the map before any analysis."""
    count = 1000 if where == "set_schedule" else 2000  # 2,000: past ISL's parsing quota
    zeros = ", ".join(["0"] * count)
    req = copy(SMALL)
    if where == "set_schedule":
        req.function.commands.add(computation="c").set_schedule.isl_map = \
            f"[N] -> {{ c[i] -> [i, {zeros}] }}"
    else:
        req.function.computations[0].order = f"[N] -> {{ c[i] -> [{zeros}, i] }}"
    code, details, _ = raw_call(channel, req.SerializeToString(), "Check")
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details[:300])
    assert f"{count + 1} time dimensions exceed the cap of 64 (max_schedule_dims)" in details
    assert_serving(client)


def test_schedule_map_under_the_cap_still_works(client: RemoteClient) -> None:
    req = copy(SMALL)
    del req.function.commands[:]
    req.function.commands.add(computation="c").set_schedule.isl_map = \
        "[N] -> { c[i] -> [0, i, 0] }"
    assert client.check(req) is not None


# ---------------------------------------------------------------------------- bytes in flight

def test_bytes_in_flight_are_bounded() -> None:
    """A request that would pass the in-flight cap waits for room, and is refused with a
    resource error naming the cap when its wait runs out; alone it always runs."""
    import threading

    from middleend.service.core import RequestFailed
    from middleend.service.inflight import InFlight

    budget = InFlight(cap=10 << 20, max_wait=0.3)
    with budget.hold(20 << 20, None):  # bigger than the cap, but alone: runs
        assert budget.used == 20 << 20
    assert budget.used == 0
    entered = threading.Event()
    leave = threading.Event()

    def holder() -> None:
        with budget.hold(8 << 20, None):
            entered.set()
            leave.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    assert entered.wait(5)
    with pytest.raises(RequestFailed) as info:
        with budget.hold(4 << 20, 10.0):
            pass
    assert info.value.diagnostic.kind == pb.RESOURCE_LIMIT
    assert "--max-inflight-bytes" in info.value.diagnostic.message
    leave.set()
    t.join(5)
    with budget.hold(4 << 20, 1.0):  # room again
        assert budget.used == 4 << 20


# ---------------------------------------------------------------------------- cancellation

def test_a_cancelled_request_frees_its_worker(server: ServerProcess, client: RemoteClient,
                                              channel: grpc.Channel) -> None:
    """The client gives up: its worker (and the compiler under it) is stopped within a
    second, not at the request's deadline, and the pool gets a fresh worker."""
    import time

    before = set(server.worker_pids())
    rpc = channel.unary_unary("/middleend.v1.MiddleEnd/Compile",
                              request_serializer=lambda b: b, response_deserializer=lambda b: b)
    call = rpc.future(slow_request(3000), timeout=300)
    time.sleep(2.0)  # in a worker by now, lowering or compiling
    assert not call.done()
    call.cancel()
    end = time.monotonic() + 15
    while time.monotonic() < end and before <= set(server.worker_pids()):
        time.sleep(0.1)
    assert not before <= set(server.worker_pids()), "no worker was stopped"
    assert_serving(client)


def test_health_says_not_serving_while_every_worker_is_busy(tmp_path: Path) -> None:
    """With its only worker busy for a second (a second request waiting), the server says
    NOT_SERVING (a balancer then sends work elsewhere); SERVING again once the worker is
    free."""
    import time

    srv = start_server(tmp_path / "log", tmp_path / "cache", workers=1)
    try:
        with connect(srv.address) as c:
            assert c.health() == "SERVING"
            rpc = c.channel.unary_unary("/middleend.v1.MiddleEnd/Compile",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
            calls = [rpc.future(slow_request(3000 + k), timeout=300) for k in range(2)]

            def wait_for(status: str) -> bool:
                end = time.monotonic() + 10
                while time.monotonic() < end:
                    if c.health() == status:
                        return True
                    time.sleep(0.1)
                return False

            assert wait_for("NOT_SERVING")
            for call in calls:
                call.cancel()
            assert wait_for("SERVING")
            assert_serving(c)
    finally:
        srv.stop()
