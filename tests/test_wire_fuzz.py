"""Mutated requests never crash the middle-end: each one is either served or refused with a
middle-end error (a malformed program, an illegal schedule, a cap) that names what is wrong.
Mutations are structural (a field set to a nearby or hostile value, a list element dropped
or duplicated, a domain edited), so most messages still parse and reach deep into the
decoder and the lowering."""

from __future__ import annotations

import random
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor as FD

import middleend as me
from middleend.api import examples as ex
from middleend.ir.errors import InvalidProgramError, MiddleEndError
from middleend.service.engine import handle_request
from middleend.wire import decode_request, encode_request, pb

NAMES = ["", "i", "j", "i0", "bx", "by", "c", "x;y", "__root__", "N", "9a", "a" * 70, "inp",
         "k", "C", "A", "me_x"]
DOMAIN_EDITS = ["", " and i < 0", "1", "]", " or j > 5", "N", ", z", "{", "exists"]
INTS = [0, 1, -1, 2, 3, 7, 1000, 2**31, -(2**31), 2**40]


def _programs() -> list[Any]:
    with me.Function("mm") as f:
        N = me.Param("N")
        i, j, k = me.Var("i", 0, N), me.Var("j", 0, N), me.Var("k", 0, N)
        A, B = me.Input("A", [N, N], me.float32), me.Input("B", [N, N], me.float32)
        C = me.Computation("C", [i, j], 0.0)
        u = C.update([i, j, k], A[i, k] * B[k, j])
        C.parallelize(i)
        u.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
        u.after(C, "j")
    return [encode_request(ex.schedule_blur(ex.blur()).fn), encode_request(ex.blur().fn),
            encode_request(ex.heat2d().fn), encode_request(ex.sgemm_packed(64)),
            encode_request(f)]


def _fields(msg: Any, out: list[tuple[Any, Any]]) -> None:
    for f, v in msg.ListFields():
        out.append((msg, f))
        if f.type == FD.TYPE_MESSAGE:
            for m in (v if f.is_repeated else [v]):
                _fields(m, out)


def _mutate(req: Any, rnd: random.Random) -> None:
    fields: list[tuple[Any, Any]] = []
    _fields(req, fields)
    msg, f = rnd.choice(fields)
    v = getattr(msg, f.name)
    if f.is_repeated:
        if len(v) and rnd.random() < 0.5:
            del v[rnd.randrange(len(v))]
        elif len(v) and f.type == FD.TYPE_MESSAGE:
            v.add().CopyFrom(v[rnd.randrange(len(v))])
        return
    if f.type == FD.TYPE_MESSAGE:
        msg.ClearField(f.name)
    elif f.type == FD.TYPE_STRING:
        if f.name == "domain":
            k = rnd.randrange(len(v) + 1)
            setattr(msg, f.name, v[:k] + rnd.choice(DOMAIN_EDITS) + v[k:])
        else:
            setattr(msg, f.name, rnd.choice(NAMES))
    elif f.type == FD.TYPE_BOOL:
        setattr(msg, f.name, not v)
    elif f.type == FD.TYPE_ENUM:
        setattr(msg, f.name, rnd.randrange(0, 20))
    elif f.type == FD.TYPE_DOUBLE:
        setattr(msg, f.name, rnd.choice([0.0, -1.0, 1e300, float("nan"), float("inf")]))
    else:
        lo, hi = (-(2**63), 2**64)
        if f.type in (FD.TYPE_UINT64, FD.TYPE_UINT32):
            lo = 0
        if f.type in (FD.TYPE_INT32, FD.TYPE_UINT32, FD.TYPE_SINT32):
            lo, hi = max(lo, -(2**31)), 2**31
        setattr(msg, f.name, rnd.choice([x for x in INTS if lo <= x < hi]))


@pytest.mark.parametrize("seed", range(8))
def test_mutated_requests_are_served_or_refused_clearly(seed: int) -> None:
    rnd = random.Random(seed)
    progs = _programs()
    outcomes: dict[str, int] = {}
    for _ in range(60):
        req = pb.Request()
        req.CopyFrom(rnd.choice(progs))
        for _ in range(rnd.randint(1, 3)):
            _mutate(req, rnd)
        data = req.SerializeToString()
        try:
            decode_request(pb.Request.FromString(data))
        except InvalidProgramError as e:
            assert e.field_path.startswith("function"), e
            outcomes["invalid"] = outcomes.get("invalid", 0) + 1
            continue
        except MiddleEndError as e:  # caps
            assert isinstance(e, me.ResourceLimitError), e
            continue
        kind = "compile" if rnd.random() < 0.3 else "lower"
        reply = handle_request(kind, data, max_ops=3_000_000)
        if reply[:1] == b"E":
            d = pb.Diagnostic.FromString(reply[1:])
            assert d.kind not in (pb.INTERNAL, pb.BUILD_FAILED), (d.message, d.build_log)
            assert d.message
            outcomes[pb.ErrorKind.Name(d.kind)] = outcomes.get(pb.ErrorKind.Name(d.kind), 0) + 1
        else:
            outcomes["served"] = outcomes.get("served", 0) + 1
    assert outcomes.get("invalid", 0) > 0, outcomes
