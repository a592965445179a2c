"""``middleend serve``: the gRPC front of :class:`~middleend.service.core.Service`.

The three RPCs are registered with raw-bytes handlers: the request bytes go to a worker
process untouched (no parse-and-reserialize on the server thread), and a truncated or
malformed message is answered by our own decoder with INVALID_ARGUMENT and a reason,
instead of gRPC's generic deserialization failure. Health checking and server reflection
are the standard gRPC services. Listening anywhere but loopback requires a token; TLS is
offered with a certificate and key.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
import signal
import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ..wire.v1 import middleend_pb2 as pb
from . import heap
from .core import RequestFailed, Service, ServiceConfig
from .diagnostics import (
    DIAGNOSTIC_KEY,
    MAX_STATUS_BYTES,
    bounded,
    cut,
    status_of,
    status_text,
)
from .inflight import InFlight

SERVICE_NAME = "middleend.v1.MiddleEnd"
log = logging.getLogger("middleend.server")


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 50051  # 0: pick a free port (see Server.port)
    token: str | None = None
    tls_cert: bytes | None = None
    tls_key: bytes | None = None
    threads: int = 32
    max_message_bytes: int = 16 << 20
    max_inflight_bytes: int = 256 << 20  # request bytes handled at once (0: no cap)
    # RPCs admitted at once, running or queued for a handler thread (0: no cap): past it
    # gRPC answers RESOURCE_EXHAUSTED at once, so a flood cannot queue without bound
    max_concurrent_rpcs: int = 256
    busy_health_after: float = 1.0  # seconds every worker must stay busy: NOT_SERVING


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _TokenAuth(grpc.ServerInterceptor):
    """Every call but the health check needs ``authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

        def deny(request: Any, context: grpc.ServicerContext) -> None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "missing or wrong token: send metadata 'authorization: Bearer "
                          "<token>' (the server's --token-file / $MIDDLEEND_TOKEN)")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if details.method.startswith("/grpc.health.v1.Health/"):
            return continuation(details)
        for k, v in details.invocation_metadata or ():
            if k == "authorization" and isinstance(v, str) and v.startswith("Bearer ") and \
                    hmac.compare_digest(v[7:].encode(), self._token):
                return continuation(details)
        return self._deny


class _LiveHealth(health.HealthServicer):
    """The standard health service, whose Check first brings the status up to date (the
    watcher's last look may be 0.25 s old: a client that has just got its answer from the
    only worker would otherwise be told NOT_SERVING)."""

    def __init__(self, refresh: Callable[[], None]) -> None:
        super().__init__()
        self._refresh = refresh

    def Check(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._refresh()
        return super().Check(request, context)


NO_DEADLINE = 1e12  # seconds: gRPC reports "no deadline" as ~9.2e18 s remaining


def deadline_of(context: grpc.ServicerContext) -> float | None:
    """The seconds left before the client's deadline; None when it set none (gRPC then
    reports an infinite future, which no timer accepts: the service's default applies)."""
    left = context.time_remaining()
    if left is None or not math.isfinite(left) or left >= NO_DEADLINE:
        return None
    return left


class Server:
    """A running middle-end server; ``port`` is the bound port. Stop with :meth:`stop`."""

    def __init__(self, config: ServerConfig, service_config: ServiceConfig) -> None:
        if not is_loopback(config.host) and not config.token:
            raise ValueError(f"listening on {config.host} (not loopback) requires a token "
                             "(--token-file or $MIDDLEEND_TOKEN)")
        if (config.tls_cert is None) != (config.tls_key is None):
            raise ValueError("TLS needs both a certificate and a key")
        self.config = config
        heap.fix_mmap_threshold()  # before gRPC allocates: request buffers get returned
        self.service = Service(service_config)
        self.inflight = InFlight(config.max_inflight_bytes)
        self._stopping = threading.Event()
        opts = [("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.max_send_message_length", 256 << 20),
                ("grpc.so_reuseport", 0)]
        interceptors = [_TokenAuth(config.token)] if config.token else []
        self.grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=config.threads),
                                interceptors=interceptors, options=opts,
                                maximum_concurrent_rpcs=config.max_concurrent_rpcs or None)
        handlers = {name: grpc.unary_unary_rpc_method_handler(self._handler(kind))
                    for name, kind in (("Compile", "compile"), ("Check", "check"),
                                       ("Lower", "lower"))}
        self.grpc.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        self._serving = True
        self._health_lock = threading.Lock()
        self.health = _LiveHealth(self._refresh_health)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self.grpc)
        addr = f"{config.host}:{config.port}"
        if config.tls_cert is not None and config.tls_key is not None:
            creds = grpc.ssl_server_credentials(((config.tls_key, config.tls_cert),))
            self.port = self.grpc.add_secure_port(addr, creds)
        else:
            self.port = self.grpc.add_insecure_port(addr)
        if self.port == 0:
            raise OSError(f"cannot listen on {addr}")

    def _handler(self, kind: str) -> Callable[[bytes, grpc.ServicerContext], bytes]:
        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                deadline = deadline_of(context)
                with self.inflight.hold(len(request), deadline):
                    # a client that cancels (or disconnects) frees its worker at once
                    return self.service.call(kind, request, deadline,
                                             lambda: not context.is_active())
            except RequestFailed as e:
                d = bounded(e.diagnostic)
                text = status_text(d)
                context.set_trailing_metadata(((DIAGNOSTIC_KEY, d.SerializeToString()),))
                context.abort(status_of(d), text)
            except Exception as e:  # the server keeps answering whatever happens
                log.exception("%s request failed", kind)
                d = bounded(pb.Diagnostic(kind=pb.INTERNAL, message=f"internal error: {e}"))
                context.set_trailing_metadata(((DIAGNOSTIC_KEY, d.SerializeToString()),))
                context.abort(grpc.StatusCode.INTERNAL, cut(d.message, MAX_STATUS_BYTES))
            raise AssertionError("unreachable")  # pragma: no cover
        return handle

    def start(self) -> Server:
        self.grpc.start()
        self._set_health(serving=True)
        threading.Thread(target=self._watch, name="middleend-watch", daemon=True).start()
        return self

    def _set_health(self, serving: bool) -> None:
        status = (health_pb2.HealthCheckResponse.SERVING if serving
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        for name in ("", SERVICE_NAME):
            self.health.set(name, status)

    def _watch(self) -> None:
        """Four times a second: health follows the workers, NOT_SERVING once every worker
        has been busy for ``busy_health_after`` seconds (long requests must not hide behind
        SERVING; a short burst does not flap it), SERVING again as soon as one is free; and
        after a burst of large requests, free heap memory goes back to the system once the
        server is quiet (inflight.py)."""
        while not self._stopping.wait(0.25):
            self.inflight.trim_when_quiet()
            self._refresh_health()

    def _refresh_health(self) -> None:
        pool = self.service.pool
        if pool is None:
            return
        with self._health_lock:
            now = pool.busy_for() < self.config.busy_health_after
            if now != self._serving:
                self._serving = now
                self._set_health(now)

    def stop(self, grace: float = 2.0) -> None:
        self._stopping.set()
        self.health.enter_graceful_shutdown()
        self.grpc.stop(grace).wait()
        self.service.close()

    @staticmethod
    def catch_stop_signals() -> threading.Event:
        """An event that SIGINT or SIGTERM sets (from here on: call it before announcing
        the server, so that a supervisor's SIGTERM right after the serving line is a
        graceful stop, not a kill). Main thread only, as ``signal.signal`` asks."""
        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        return done

    def wait(self, done: threading.Event | None = None) -> None:
        """Block until ``done`` is set (default: until SIGINT/SIGTERM), then stop.

        Why the wait polls: Linux gives a process's signal to any thread that does not
        block it, often one of gRPC's, and CPython runs the Python handler only in the
        main thread, when that thread next runs bytecode. An untimed ``Event.wait`` sleeps
        in a C lock that such a signal never interrupts, so the server ignored SIGTERM for
        good (one stop in eight, on a loaded machine); waking every 0.2 s runs the handler
        within 0.2 s wherever the signal landed."""
        if done is None:
            done = self.catch_stop_signals()
        while not done.wait(0.2):
            pass
        self.stop()


def serve(config: ServerConfig, service_config: ServiceConfig) -> Server:
    """Start a server (returns once it listens)."""
    return Server(config, service_config).start()
