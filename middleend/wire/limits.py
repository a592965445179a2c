"""What a request may ask for, checked before it is decoded: the caps on its size
(:class:`Limits`), protobuf's nesting depth, and fields this server does not know.

Kept apart from :mod:`middleend.wire.decode` (which rebuilds the Function) because the
service parses and vets every request here before it reaches a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.errors import InvalidProgramError
from .v1 import middleend_pb2 as pb

# protobuf's decoder (upb) refuses a message nested deeper than 100 levels. An expression
# level is two (Expr -> Binary -> Expr), the deepest place an expression starts is 4 levels
# down (Request.function.commands[k].send.start) and a constant leaf adds one: 47 levels of
# expression always decode, and the decoder's own cap says so first.
PROTOBUF_MAX_DEPTH = 100
WIRE_MAX_EXPR_DEPTH = (PROTOBUF_MAX_DEPTH - 5) // 2  # 47


@dataclass(frozen=True)
class Limits:
    """Caps on what one request may ask for (a service must not be made to run out of
    memory or time by one message). ``max_expr_depth`` cannot exceed what the wire decodes
    (WIRE_MAX_EXPR_DEPTH)."""

    max_computations: int = 512
    max_dims: int = 16
    max_commands: int = 4096
    max_expr_nodes: int = 200_000
    max_expr_depth: int = WIRE_MAX_EXPR_DEPTH
    max_domain_chars: int = 20_000
    # time-space dims of a set_schedule or order map: the legality check's cost grows
    # about cubically with them (1,000 zero dims ran past 60 s); 2 * 16 loops + 1 fit
    max_schedule_dims: int = 64


def range_tuple_size(text: str) -> int | None:
    """How many dimensions the first ``-> [ ... ]`` tuple of a map's text has (commas at
    its own bracket level, plus one), or None where the text has no such tuple."""
    start = text.find("->", max(text.find("{"), 0))
    if start < 0:
        return None
    start = text.find("[", start)
    if start < 0:
        return None
    depth, count = 0, 1
    for ch in text[start:]:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0:
                return count
        elif ch == "," and depth == 1:
            count += 1
    return None


def parse_request(payload: bytes, limits: Limits | None = None) -> Any:
    """The ``pb.Request`` of serialized bytes, or InvalidProgramError (field path
    ``request``, or that of the first unknown field) saying why not: malformed bytes,
    nesting past protobuf's depth limit, fields this server does not know."""
    from google.protobuf.message import DecodeError

    try:
        req = pb.Request.FromString(payload)
    except DecodeError as e:
        if "MaxDepth" in str(e):
            depth = min((limits or Limits()).max_expr_depth, WIRE_MAX_EXPR_DEPTH)
            raise InvalidProgramError(
                f"messages nested deeper than protobuf's limit of {PROTOBUF_MAX_DEPTH} "
                f"levels: expressions may nest at most {depth} levels deep", "request") from None
        raise InvalidProgramError(f"not a middleend.v1.Request message ({e})",
                                  "request") from None
    check_known_fields(req)
    return req


def check_known_fields(msg: Any, path: str = "request") -> None:
    """Refuse a message with fields this server's ``middleend.v1`` does not define (a newer
    client's, or padding): ignoring them would compile something other than what was
    asked, and they would enter the cache key. Raises InvalidProgramError naming the
    first one's field number and path."""
    probe = type(msg)()
    probe.CopyFrom(msg)
    size = probe.ByteSize()
    probe.DiscardUnknownFields()
    if probe.ByteSize() == size:  # the common case, checked in C
        return
    where, number, name = _first_unknown(msg, path) or (path, 0, msg.DESCRIPTOR.full_name)
    raise InvalidProgramError(
        f"unknown field number {number} in a {name}: not part of middleend.v1 as this server "
        "knows it (a newer client's field?); remove it or upgrade the server", where)


def _first_unknown(msg: Any, path: str) -> tuple[str, int, str] | None:
    """The path, number and message type of the first unknown field (depth first)."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    stack = [(msg, "")]
    while stack:
        m, p = stack.pop()
        for f in UnknownFieldSet(m):
            return p[:-1] or path, f.field_number, m.DESCRIPTOR.full_name
        subs = []
        for fd, value in m.ListFields():
            if fd.type != fd.TYPE_MESSAGE:
                continue
            if fd.message_type.GetOptions().map_entry:
                if fd.message_type.fields_by_name["value"].type == fd.TYPE_MESSAGE:
                    subs.extend((v, f"{p}{fd.name}[{k!r}].") for k, v in value.items())
            elif fd.is_repeated:
                subs.extend((v, f"{p}{fd.name}[{k}].") for k, v in enumerate(value))
            else:
                subs.append((value, f"{p}{fd.name}."))
        stack.extend(reversed(subs))
    return None


__all__ = ["PROTOBUF_MAX_DEPTH", "WIRE_MAX_EXPR_DEPTH", "Limits", "check_known_fields",
           "parse_request", "range_tuple_size"]
