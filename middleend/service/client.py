"""Clients of the middle-end: embedded (in-process) and remote (gRPC), one interface.

``f.compile(...)`` encodes the Function as a ``Request`` and hands it to a client; the
embedded client runs the very same :class:`~middleend.service.core.Service` in-process, so
an embedded and a remote compile of one program go through the same message path and give
the same artifact. Errors come back as the middle-end's own exception types.
"""

from __future__ import annotations

import abc
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc

from ..driver.lowering import lower
from ..driver.targets import TargetRegistry
from ..ir.errors import DefinitionError, ResourceLimitError
from ..ir.loopast import BufferDecl, IExpr, IInt, IOp, IVar, Requirement, Signature
from ..target import Artifact, ArtifactFile, Kernel
from ..wire.decode import KINDS, TYPES
from ..wire.encode import FILE_ROLE, encode_request
from ..wire.v1 import middleend_pb2 as pb
from ..wire.v1 import middleend_pb2_grpc as pb_grpc
from .core import RequestFailed, Service, ServiceConfig
from .diagnostics import DIAGNOSTIC_KEY, ServiceError, error_of

_RESPONSES = {"compile": pb.CompileResponse, "check": pb.CheckResponse,
              "lower": pb.LowerResponse}


class Client(abc.ABC):
    """The interface both clients share: ``compile``, ``check`` and ``lower`` take a
    ``pb.Request`` and return the response message, raising middle-end exceptions.
    ``registry`` holds the targets that load what comes back (the cpu target maps a
    shared object, a GPU target would create a device queue)."""

    registry: TargetRegistry

    def compile(self, req: pb.Request) -> pb.CompileResponse:
        return self._call("compile", req)

    def check(self, req: pb.Request) -> pb.CheckResponse:
        return self._call("check", req)

    def lower(self, req: pb.Request) -> pb.LowerResponse:
        return self._call("lower", req)

    @abc.abstractmethod
    def _call(self, kind: str, req: pb.Request) -> Any:
        """Send one request of ``kind`` (compile, check, lower); the response message."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection or the in-process service's workers."""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EmbeddedClient(Client):
    """The in-process middle-end: serialized request in, serialized response out."""

    def __init__(self, config: ServiceConfig | None = None,
                 registry: TargetRegistry | None = None) -> None:
        self.service = Service(config, registry)
        self.registry = self.service.registry

    def _call(self, kind: str, req: pb.Request) -> Any:
        try:
            data = self.service.call(kind, req.SerializeToString())
        except RequestFailed as e:
            raise error_of(e.diagnostic) from None
        return _RESPONSES[kind].FromString(data)

    def close(self) -> None:
        self.service.close()


class RemoteClient(Client):
    """A gRPC connection to ``middleend serve``. ``token`` is sent as ``authorization:
    Bearer <token>``; ``tls_ca`` (PEM bytes or a path) switches to TLS."""

    def __init__(self, target: str, token: str | None = None,
                 tls_ca: bytes | str | Path | None = None, timeout: float | None = 600.0,
                 max_message_bytes: int = 256 << 20) -> None:
        opts = [("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes)]
        if tls_ca is not None:
            pem = tls_ca if isinstance(tls_ca, bytes) else Path(tls_ca).read_bytes()
            self.channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(pem), opts)
        else:
            self.channel = grpc.insecure_channel(target, opts)
        self.target = target
        self.timeout = timeout
        self.registry = TargetRegistry.discover()
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.stub = pb_grpc.MiddleEndStub(self.channel)

    def _call(self, kind: str, req: pb.Request) -> Any:
        rpc = {"compile": self.stub.Compile, "check": self.stub.Check,
               "lower": self.stub.Lower}[kind]
        try:
            return rpc(req, timeout=self.timeout, metadata=self.metadata)
        except grpc.RpcError as e:
            raise remote_error(e, self.target) from None

    def health(self, service: str = "") -> str:
        """The standard health check's status name (``SERVING`` when ready)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        stub = health_pb2_grpc.HealthStub(self.channel)
        resp = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)

    def close(self) -> None:
        self.channel.close()


def remote_error(e: grpc.RpcError, target: str) -> Exception:
    """The middle-end exception for a failed RPC: the diagnostic in the trailing metadata
    when the server sent one, else one built from the status code."""
    trailing = e.trailing_metadata() or ()  # type: ignore[attr-defined]
    for k, v in trailing:
        if k == DIAGNOSTIC_KEY:
            return error_of(pb.Diagnostic.FromString(v))
    code = e.code()  # type: ignore[attr-defined]
    detail = e.details()  # type: ignore[attr-defined]
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return ResourceLimitError(f"middle-end at {target}: {detail}")
    return ServiceError(f"middle-end at {target}: {code.name}: {detail}", code.name)


def connect(target: str, token: str | None = None, tls_ca: bytes | str | Path | None = None,
            timeout: float | None = 600.0) -> RemoteClient:
    """A client of the middle-end service at ``host:port``; the token defaults to
    ``$MIDDLEEND_TOKEN``."""
    return RemoteClient(target, token or os.environ.get("MIDDLEEND_TOKEN"), tls_ca, timeout)


# ---------------------------------------------------------------------------- artifacts


def signature_of(ep: pb.EntryPoint, name: str) -> Signature:
    """The runtime's Signature from the wire's EntryPoint (checked: it comes from afar)."""
    params = tuple(p.name for p in ep.params)
    bounds = {p.name: (p.min if p.HasField("min") else None,
                       p.max if p.HasField("max") else None)
              for p in ep.params if p.HasField("min") or p.HasField("max")}
    args = []
    for b in ep.buffers:
        if b.type not in TYPES or KINDS.get(b.kind) not in ("input", "output", "inout"):
            raise DefinitionError(f"artifact entry point: bad buffer {b.name!r}")
        args.append(BufferDecl(b.name, TYPES[b.type],
                               tuple(_iexpr(s) for s in b.sizes), KINDS[b.kind],
                               fully_written=b.fully_written))
    reqs = tuple(Requirement(r.buffer, r.message, _iexpr(r.violated))
                 for r in ep.requirements)
    return Signature(name, ep.symbol, params, tuple(args), bounds, reqs)


def _iexpr(m: pb.IndexExpr) -> IExpr:
    which = m.WhichOneof("node")
    if which == "constant":
        return IInt(m.constant)
    if which == "param":
        return IVar(f"p_{m.param}")
    if which == "op":
        return IOp(m.op.op, tuple(_iexpr(a) for a in m.op.args))
    raise DefinitionError("artifact entry point: empty index expression")


_ROLES = {v: k for k, v in FILE_ROLE.items()}


def artifact_of(art: pb.Artifact, name: str) -> Artifact:
    """The target's Artifact from the wire's, every file checked against its digest (an
    artifact that travelled, or came from a cache, must arrive intact)."""
    files = []
    for f in art.files:
        if f.role not in _ROLES:
            raise DefinitionError(f"artifact file {f.name!r}: unknown role {f.role}")
        if hashlib.sha256(f.content).hexdigest() != f.sha256:
            raise DefinitionError(f"artifact file {f.name}: digest mismatch (corrupted)")
        files.append(ArtifactFile(f.name, _ROLES[f.role], f.content))
    return Artifact(art.target, tuple(files), signature_of(art.entry_point, name),
                    art.entry_point.c_declaration, art.build_command, dict(art.options),
                    dict(art.launch))


def kernel_of(resp: pb.CompileResponse, name: str,
              inspect: Callable[[], Any] | None = None,
              registry: TargetRegistry | None = None) -> Kernel:
    """A callable Kernel from a Compile response, loaded by the target that built it."""
    art = artifact_of(resp.artifact, name)
    target = (registry or TargetRegistry.discover()).lookup(art.target)
    src = resp.sources[0].text if resp.sources else ""
    k = target.load(art, source=src, cache_key=resp.cache_key, inspect=inspect)
    k.timings = tuple(resp.timings)
    k.diagnostics = tuple(resp.diagnostics)  # warnings (errors were raised)
    # what schedule="auto" chose, as Python statements on a Function ``f`` ("" otherwise)
    k.auto_schedule = resp.auto_schedule.python if resp.HasField("auto_schedule") else ""
    return k


def compile_via(fn: Any, service: Client | str | None = None, target: str = "cpu",
                outputs: Sequence[Any] | None = None, check_legality: bool = True,
                **options: Any) -> Kernel:
    """Compile ``fn`` for ``target`` (with the target's ``options``) through ``service`` (a
    Client, a ``host:port``, or None for the embedded middle-end) and load the result."""
    req = encode_request(fn, target, outputs, check_legality, **options)
    if isinstance(service, Client):
        client, own = service, False
    elif isinstance(service, str):
        client, own = connect(service), True
    elif service is None:
        client, own = EmbeddedClient(), True
    else:
        raise DefinitionError(f"service must be a client, 'host:port' or None, not "
                              f"{service!r}")
    try:
        resp = client.compile(req)
    finally:
        if own:
            client.close()

    def inspect() -> Any:
        return lower(fn, outputs=outputs, check_legality=check_legality)

    # an auto-scheduled kernel's layers are those of the schedule the service chose, which
    # only the service saw: no inspection from here (the kernel says so when asked)
    auto = options.get("schedule") == "auto"
    return kernel_of(resp, fn.name, None if auto else inspect, client.registry)
