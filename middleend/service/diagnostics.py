"""Errors across the wire: exception <-> ``Diagnostic`` <-> gRPC status code.

The middle-end's exceptions carry the context a user acts on (computations, the violated
dependence, the command and its index, the field path). They cross process and network
boundaries as ``Diagnostic`` messages and come back as the same exception types, so a
front-end handles an embedded and a remote compile the same way.
"""

from __future__ import annotations

import grpc

from ..ir.errors import (
    BuildError,
    DefinitionError,
    InvalidProgramError,
    MiddleEndError,
    ResourceLimitError,
    ScheduleError,
    TargetError,
    TargetUnavailable,
    UnproducedReadError,
)
from ..wire.v1 import middleend_pb2 as pb

DIAGNOSTIC_KEY = "middleend-diagnostic-bin"

STATUS = {
    pb.INVALID_PROGRAM: grpc.StatusCode.INVALID_ARGUMENT,
    pb.UNPRODUCED_READ: grpc.StatusCode.INVALID_ARGUMENT,
    pb.ILLEGAL_SCHEDULE: grpc.StatusCode.FAILED_PRECONDITION,
    pb.UNSUPPORTED_TARGET: grpc.StatusCode.UNIMPLEMENTED,
    pb.TARGET_UNAVAILABLE: grpc.StatusCode.UNIMPLEMENTED,
    pb.RESOURCE_LIMIT: grpc.StatusCode.RESOURCE_EXHAUSTED,
    pb.BUILD_FAILED: grpc.StatusCode.INTERNAL,
    pb.INTERNAL: grpc.StatusCode.INTERNAL,
    pb.DEADLINE: grpc.StatusCode.DEADLINE_EXCEEDED,
}


class ServiceError(MiddleEndError):
    """A request failed in the service for a reason that is not the program's (a worker
    crashed, the deadline passed, the caller is not authenticated)."""

    def __init__(self, message: str, code: str = "INTERNAL") -> None:
        self.code = code
        super().__init__(message)


def diagnostic_of(exc: BaseException) -> pb.Diagnostic:
    """The wire form of an exception raised while handling a request."""
    d = pb.Diagnostic(message=str(exc), severity=pb.ERROR)
    if isinstance(exc, UnproducedReadError):
        d.kind = pb.UNPRODUCED_READ
        d.computations.extend([exc.computation, exc.target])
        d.dependence = exc.unproduced
    elif isinstance(exc, InvalidProgramError):
        d.kind, d.field_path, d.message = pb.INVALID_PROGRAM, exc.field_path, exc.reason
    elif isinstance(exc, ScheduleError):
        d.kind = pb.ILLEGAL_SCHEDULE
        d.message = str(exc).split("\n")[0]
        d.computations.extend(exc.computations)
        d.dependence = exc.dependence or ""
        d.command = exc.command or ""
        d.level = exc.level or ""
        if exc.command_index is not None:
            d.command_index = exc.command_index
    elif isinstance(exc, DefinitionError):
        d.kind = pb.INVALID_PROGRAM
    elif isinstance(exc, TargetUnavailable):
        d.kind = pb.TARGET_UNAVAILABLE
    elif isinstance(exc, TargetError):
        d.kind = pb.UNSUPPORTED_TARGET
        d.computations.extend(exc.computations)
        d.level = exc.loop or ""
        d.command = exc.command or ""
    elif isinstance(exc, ResourceLimitError):
        d.kind = pb.RESOURCE_LIMIT
    elif isinstance(exc, BuildError):
        d.kind, d.build_log = pb.BUILD_FAILED, exc.log
        d.message = str(exc).split("\n")[0]
    else:
        d.kind = pb.INTERNAL
        d.message = f"internal error ({type(exc).__name__}): {exc}"
    return d


def error_of(d: pb.Diagnostic) -> MiddleEndError:
    """The exception a Diagnostic stands for (the inverse of :func:`diagnostic_of`)."""
    k = d.kind
    if k == pb.UNPRODUCED_READ and len(d.computations) == 2:
        return UnproducedReadError(d.computations[0], d.computations[1], d.dependence,
                                   message=d.message)
    if k == pb.INVALID_PROGRAM:
        if d.field_path:
            return InvalidProgramError(d.message, d.field_path)
        return DefinitionError(d.message)
    if k == pb.ILLEGAL_SCHEDULE:
        return ScheduleError(d.message, computations=tuple(d.computations),
                             dependence=d.dependence or None, command=d.command or None,
                             command_index=d.command_index if d.HasField("command_index")
                             else None, level=d.level or None)
    if k == pb.TARGET_UNAVAILABLE:
        return TargetUnavailable(d.message)
    if k == pb.UNSUPPORTED_TARGET:
        return TargetError(d.message, computations=tuple(d.computations),
                           loop=d.level or None, command=d.command or None)
    if k == pb.RESOURCE_LIMIT:
        return ResourceLimitError(d.message)
    if k == pb.BUILD_FAILED:
        return BuildError(d.message, [], d.build_log)
    if k == pb.DEADLINE:
        return ServiceError(d.message, "DEADLINE_EXCEEDED")
    return ServiceError(d.message, "INTERNAL")


# gRPC rejects a response whose headers and trailers exceed 16 KiB (and some of those over
# 8 KiB, at random). On the wire the status message is percent-encoded (a non-ASCII byte
# takes 3) and the binary trailer base64 (4 per 3 bytes), so both are bounded in bytes
# after UTF-8 encoding: 1 KiB of message (<= 3 KiB sent) and 3 KiB of Diagnostic (4 KiB).
MAX_STATUS_BYTES = 1024
MAX_DIAGNOSTIC_BYTES = 3072
MAX_FIELD = 1024  # bytes of one text field of a bounded Diagnostic, at first
_TEXT_FIELDS = ("message", "dependence", "command", "field_path", "level", "build_log")


def cut(text: str, limit: int) -> str:
    """``text`` if its UTF-8 encoding fits in ``limit`` bytes; else its longest prefix that
    fits with a note of the cut, ending on a character boundary."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    note = f"... [cut: {len(data)} bytes in all]"
    keep = data[:max(0, limit - len(note))].decode("utf-8", "ignore")  # drops a split char
    return keep + note


def bounded(d: pb.Diagnostic) -> pb.Diagnostic:
    """A copy of ``d`` that fits in gRPC trailing metadata (MAX_DIAGNOSTIC_BYTES once
    serialized): long text fields are cut, with a note, the longest first, so that the
    client always receives the diagnostic."""
    out = pb.Diagnostic()
    out.CopyFrom(d)
    for f in _TEXT_FIELDS:
        setattr(out, f, cut(getattr(out, f), MAX_FIELD))
    del out.computations[:]
    out.computations.extend(cut(c, 64) for c in d.computations[:16])
    while out.ByteSize() > MAX_DIAGNOSTIC_BYTES:
        f = max(_TEXT_FIELDS, key=lambda f: len(getattr(out, f).encode()))
        size = len(getattr(out, f).encode())
        if size <= 64:  # nothing long is left to cut
            del out.computations[:]
            break
        setattr(out, f, cut(getattr(out, f), size // 2))
    return out


def status_of(d: pb.Diagnostic) -> grpc.StatusCode:
    return STATUS.get(d.kind, grpc.StatusCode.INTERNAL)


def status_text(d: pb.Diagnostic) -> str:
    """The status message: what a user reads first, so it names where and what."""
    parts = [d.message]
    if d.field_path:
        parts = [f"{d.field_path}: {d.message}"]
    if d.computations:
        parts.append("computations: " + ", ".join(d.computations))
    if d.dependence:
        parts.append(("unproduced: " if d.kind == pb.UNPRODUCED_READ else "dependence: ")
                     + d.dependence)
    if d.command:
        idx = f" (command #{d.command_index})" if d.HasField("command_index") else ""
        parts.append(f"broken by: {d.command}{idx}")
    return cut("\n  ".join(parts), MAX_STATUS_BYTES)
