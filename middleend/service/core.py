"""The service without its transport: cache, worker dispatch, caps, deadlines.

The gRPC server and the embedded (in-process) client both call :meth:`Service.call` with
the serialized request, so the one message path is exercised either way. Compile responses
are cached by the hash of the normalized request, the C compiler's identity, the flags and
the middle-end's own build id (a hash of its sources), so a hit is always the artifact the
same request would build now.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..driver.lowering import DEFAULT_MAX_OPS
from ..driver.targets import TargetRegistry
from ..ir.errors import InvalidProgramError, MiddleEndError
from ..target.paths import cache_root
from ..wire import Limits
from ..wire.decode import decode_target, parse_request
from ..wire.v1 import middleend_pb2 as pb
from .admission import Admission, AdmissionConfig, AdmissionRefused, heavy_reason
from .cache import ArtifactCache
from .diagnostics import diagnostic_of
from .engine import KINDS, handle_request, task_kind
from .workers import (
    WorkerCancelled,
    WorkerCrashed,
    WorkerPool,
    WorkerTaskError,
    WorkerTimeout,
)

_ROOT = Path(__file__).resolve().parents[2]


class RequestFailed(Exception):
    """A request was refused or failed; ``diagnostic`` says why (see diagnostics.py)."""

    def __init__(self, diagnostic: pb.Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(diagnostic.message)


def default_cache_root() -> Path:
    """The artifact cache, ``<cache root>/artifacts``."""
    return cache_root() / "artifacts"


@dataclass(frozen=True)
class ServiceConfig:
    """``workers=0`` runs requests in the calling process (the embedded middle-end);
    a server uses worker processes so that a crash or a runaway request stays contained."""

    cache_dir: Path | None = None
    cache_max_bytes: int = 1 << 30
    workers: int = 0
    max_isl_ops: int = DEFAULT_MAX_OPS
    default_timeout: float = 600.0  # seconds, for a request that sets no deadline
    max_timeout: float = 3600.0  # a longer deadline is cut to this
    limits: Limits = field(default_factory=Limits)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)  # with workers


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """A hash of the middle-end's and backends' sources: a code change invalidates the
    cache without anyone having to remember to bump a version. Hashed once per process:
    the code a process runs is what it imported, whatever the files say later, and each
    in-process compile makes a new service (hashing ~300 files took ~10 ms of each)."""
    h = hashlib.sha256()
    for pkg in ("middleend", "backends"):
        for p in sorted((_ROOT / pkg).rglob("*")):
            if p.suffix in (".py", ".h", ".c") and "__pycache__" not in p.parts:
                h.update(str(p.relative_to(_ROOT)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


class Service:
    """Handles serialized requests; thread-safe (the server calls it from many threads)."""

    def __init__(self, config: ServiceConfig | None = None,
                 registry: TargetRegistry | None = None) -> None:
        """``registry``: the targets (default: those the installed distributions register).
        A registry given here serves in-process requests only; worker processes find their
        targets from the installed entry points."""
        self.config = config or ServiceConfig()
        self.cache = ArtifactCache(self.config.cache_dir or default_cache_root(),
                                   self.config.cache_max_bytes)
        self._build_id = build_id()
        self.registry = registry or TargetRegistry.discover()
        self._identities: dict[str, str] = {}  # target name -> its toolchain's identity
        self.pool: WorkerPool | None = None
        self.admission: Admission | None = None
        if self.config.workers > 0:
            self.admission = Admission(self.config.workers, self.config.admission)
            self.pool = WorkerPool("middleend.service.engine:handle", self.config.workers,
                                   warmup="middleend.service.engine:warmup")

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests
    def cache_key(self, req: pb.Request) -> str | None:
        """The artifact cache's key of a Compile request: the normalized request, the
        middle-end's sources and the target's toolchain (compiler, host ISA). None when
        the target is unknown or unavailable here: the request then fails uncached."""
        name, _ = decode_target(req.target)
        if name not in self._identities:
            try:
                self._identities[name] = self.registry.get(name).identity()
            except MiddleEndError:
                return None
        norm = pb.Request()
        norm.CopyFrom(req)
        norm.options.max_isl_operations = 0  # bounds the work, not the result
        return ArtifactCache.key_for(b"compile", self._build_id + "\0" + self._identities[name],
                                     norm.SerializeToString(deterministic=True))

    def call(self, kind: str, payload: bytes, timeout: float | None = None,
             cancelled: Callable[[], bool] | None = None) -> bytes:
        """Serve one request; returns the serialized response or raises RequestFailed."""
        if kind not in KINDS:
            raise RequestFailed(pb.Diagnostic(kind=pb.INTERNAL,
                                              message=f"unknown request kind {kind!r}"))
        key, heavy = None, None
        if kind == "compile" or self.admission is not None:
            t0 = time.perf_counter()
            try:
                req = parse_request(payload, self.config.limits)  # known fields only
            except InvalidProgramError as e:
                raise RequestFailed(diagnostic_of(e)) from None
            if kind == "compile":
                key = self.cache_key(req)
                hit = self.cache.get(key) if key is not None else None
                if hit is not None:
                    resp = pb.CompileResponse.FromString(hit)
                    resp.cache_hit = True
                    del resp.timings[:]
                    resp.timings.add(phase="cache", seconds=time.perf_counter() - t0)
                    return resp.SerializeToString()
            if self.admission is not None:
                heavy = heavy_reason(req, len(payload), self.config.admission.thresholds)
            del req
        reply = self._run(kind, payload, timeout, cancelled, heavy)
        if reply[:1] == b"E":
            raise RequestFailed(pb.Diagnostic.FromString(reply[1:]))
        body = reply[1:]
        if key is not None:
            resp = pb.CompileResponse.FromString(body)
            resp.cache_key = key
            body = resp.SerializeToString()
            self.cache.put(key, body)
        return body

    def time_limit(self, timeout: float | None) -> float:
        """The seconds a request may take: the server's default when it sets no deadline
        (None, or not a finite number), else its deadline cut to the server's maximum."""
        if timeout is None or not math.isfinite(timeout):
            return self.config.default_timeout
        return min(max(timeout, 0.0), self.config.max_timeout)

    def _run(self, kind: str, payload: bytes, timeout: float | None,
             cancelled: Callable[[], bool] | None = None, heavy: str | None = None) -> bytes:
        """Run on a worker (in-process without a pool). ``heavy``: why the request is
        heavy, which makes it wait for the heavy share of the workers (admission.py)."""
        ops = self.config.max_isl_ops
        if self.pool is None or self.admission is None:
            return handle_request(kind, payload, self.config.limits, ops, self.registry)
        limit = self.time_limit(timeout)
        end = time.monotonic() + limit
        try:
            with self.admission.enter(heavy, limit, cancelled):
                return self.pool.run(task_kind(kind, ops, self.config.limits), payload,
                                     max(0.0, end - time.monotonic()), cancelled, label=kind)
        except AdmissionRefused as e:
            raise RequestFailed(pb.Diagnostic(kind=pb.RESOURCE_LIMIT, message=str(e))) from None
        except WorkerCancelled as e:
            raise RequestFailed(pb.Diagnostic(kind=pb.DEADLINE, message=str(e))) from None
        except WorkerTimeout:
            raise RequestFailed(pb.Diagnostic(
                kind=pb.DEADLINE, message=f"{kind} request did not finish within its "
                                          f"deadline ({limit:.3g} s); its worker was stopped"
            )) from None
        except (WorkerCrashed, WorkerTaskError) as e:
            raise RequestFailed(pb.Diagnostic(kind=pb.INTERNAL, message=str(e))) from None
