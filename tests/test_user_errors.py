"""User errors that used to escape as internal errors or miscompile (issue 14): each is a
DefinitionError or ScheduleError from the embedded API with a message that names the
computation or command and says what to do, and (for some) the service's answer is
INVALID_ARGUMENT or FAILED_PRECONDITION with no request text or server internals in it.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
import numpy as np
import pytest
from service_util import assert_serving, raw_call

import middleend as me
from middleend.ir.names import check_name
from middleend.service.client import RemoteClient
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

# ---------------------------------------------------------------------------- programs


def one_d(name: str = "f", domain: str | None = None, lo: int = 0, hi: int = 10
          ) -> me.Function:
    """S[i] = x[i] + 1 over [lo, hi), or over the ISL set ``domain``."""
    with me.Function(name) as f:
        i = me.Var("i", lo, hi)
        x = me.Input("x", [10], me.float32)
        me.Computation("S", [i], x[i] + 1, domain=domain)
    return f


def no_computation() -> me.Function:
    with me.Function("nothing") as f:
        me.Input("x", [10], me.float32)
    return f


def all_inlined() -> me.Function:
    with me.Function("allinl") as f:
        i = me.Var("i", 0, 10)
        x = me.Input("x", [10], me.float32)
        s = me.Computation("S", [i], x[i] + 1)
        t = me.Computation("T", [i], s[i] * 2)
        s.inline()
        t.inline()
    return f


def self_read(typed: bool = True) -> me.Function:
    with me.Function("selfread") as f:
        i = me.Var("i", 0, 10)
        s = me.Computation("S", [i], dtype=me.float32 if typed else None)
        s.set_expression(s[i] + 1 if typed else s[i])  # untyped: its type is its own
    return f


def shifted(amount: int, n_max: int | None = None) -> me.Function:
    with me.Function("shifted") as f:
        n = me.Param("N", min=1, max=n_max)
        i = me.Var("i", 0, n)
        x = me.Input("x", [n], me.float32)
        s = me.Computation("S", [i], x[i] + 1)
        s.shift(i, amount)
    return f


def skewed(factor: int, n_max: int | None = None) -> me.Function:
    with me.Function("skewed") as f:
        n = me.Param("N", min=1, max=n_max)
        i, j = me.Var("i", 0, n), me.Var("j", 0, n)
        x = me.Input("x", [n, n], me.float32)
        s = me.Computation("S", [i, j], x[i, j] * 2)
        s.skew(i, j, factor)
    return f


# ---------------------------------------------------------------------------- 1. domains


@pytest.mark.parametrize("make", [lambda: one_d(domain="{ S[i] : 1 = 0 }"),
                                  lambda: one_d(lo=5, hi=3)])
def test_empty_domain(make: Callable[[], me.Function]) -> None:
    with pytest.raises(me.DefinitionError, match=r"computation 'S': its iteration domain "
                       r".* is empty .* remove the computation or fix its bounds"):
        make().compile()


def test_unbounded_domain() -> None:
    with pytest.raises(me.DefinitionError, match=r"computation 'S': .* is unbounded; give "
                       "every iterator a lower and an upper bound"):
        one_d(domain="{ S[i] : 0 <= i }").compile()


def test_domain_beyond_64_bit_index_range() -> None:
    with me.Function("huge") as f:
        i = me.Var("i", 0, 10)
        x = me.Input("x", [10], me.float32)
        me.Computation("S", [i], x[0] + 1,
                       domain="{ S[i] : 0 <= i <= 9223372036854775000 }")
    with pytest.raises(me.DefinitionError, match="iterator 'i' reaches 2\\^62"):
        f.compile()


def test_param_bounds_beyond_64_bits() -> None:
    with me.Function("p"), pytest.raises(me.DefinitionError, match="beyond"):
        me.Param("N", max=2 ** 63)


# ---------------------------------------------------------------------------- 1. programs


def test_no_computation() -> None:
    with pytest.raises(me.DefinitionError, match="function 'nothing' has no computation"):
        no_computation().compile()


def test_every_computation_inlined() -> None:
    with pytest.raises(me.DefinitionError, match=r"every computation is inlined \(S, T\).*"
                       "remove inline\\(\\)"):
        all_inlined().compile()


@pytest.mark.parametrize("check", [True, False])
def test_computation_reading_itself_at_the_same_point(check: bool) -> None:
    with pytest.raises(me.DefinitionError, match=r"computation 'S' reads its own value at "
                       r"the point it computes .* read an earlier point \(e.g. S\[i - 1\]\)"):
        self_read().compile(check_legality=check)


def test_untyped_computation_reading_itself() -> None:
    f = self_read(typed=False)
    with pytest.raises(me.DefinitionError, match="computation 'S': its type depends on "
                       "itself.*dtype="):
        _ = f.computations[0].dtype  # was a RecursionError
    with pytest.raises(me.DefinitionError, match="'S': its type depends on itself|'S' "
                       "reads its own value"):
        f.compile()


def test_duplicate_outputs() -> None:
    with pytest.raises(me.DefinitionError, match="outputs: 'S' is listed twice"):
        one_d().compile(outputs=["S", "S"])


def test_a_recurrence_still_works() -> None:
    with me.Function("rec") as f:
        i = me.Var("i", 0, 10)
        x = me.Input("x", [10], me.float32)
        s0 = me.Computation("S0", [i], x[i], predicate=i < 1)
        s = me.Computation("S", [i], dtype=me.float32, predicate=i >= 1)
        s.set_expression(s[i - 1] + x[i])
        s.store_in(s0, [i])
    x = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(f.compile()(x=x)["S0"], np.cumsum(x))


# ---------------------------------------------------------------------------- 2. overflow


@pytest.mark.parametrize("make,what", [
    (lambda: shifted(2 ** 63 - 1), "shift amount 9223372036854775807"),
    (lambda: shifted(-(2 ** 63)), "shift amount -9223372036854775808"),
    (lambda: skewed(2 ** 63 - 1), "skew factor 9223372036854775807"),
])
def test_huge_schedule_constants_are_refused(make: Callable[[], me.Function],
                                             what: str) -> None:
    for check in (True, False):
        with pytest.raises(me.ScheduleError, match=f"the {what} exceeds the limit of "
                           "2\\^40") as info:
            make().compile(check_legality=check)
        assert info.value.command is not None and info.value.command_index == 0
        assert info.value.command.startswith("S.s")


def test_skew_overflowing_for_int32_params_is_refused() -> None:
    # 2^40 * i with i up to 2^31: beyond 2^62 for some N (N has no max: taken as int32)
    with pytest.raises(me.ScheduleError, match="loop 'j' of 'S' reaches 2\\^62.*int32") \
            as info:
        skewed(2 ** 40).compile()
    assert info.value.level == "j" and info.value.command_index == 0


def test_the_same_skew_with_a_bounded_param_works() -> None:
    k = skewed(2 ** 40, n_max=64).compile()
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(k(x=x)["S"], x * 2)


@pytest.mark.parametrize("amount", [1000, -1000])
def test_a_normal_shift_still_works(amount: int) -> None:
    k = shifted(amount).compile()
    x = np.arange(7, dtype=np.float32)
    np.testing.assert_array_equal(k(x=x)["S"], x + 1)


def test_a_normal_skew_still_works() -> None:
    k = skewed(3).compile()
    x = np.arange(25, dtype=np.float32).reshape(5, 5)
    np.testing.assert_array_equal(k(x=x)["S"], x * 2)


# ---------------------------------------------------------------------------- 3. names


@pytest.mark.parametrize("name", ["x\n", "x\r\n", "\nx", "x "])
def test_names_with_a_trailing_newline_are_refused(name: str) -> None:
    with pytest.raises(me.DefinitionError, match="invalid computation name"):
        check_name(name, "computation")


# ---------------------------------------------------------------------------- the service


def _untyped_self_read() -> pb.Request:
    req = encode_request(self_read())
    req.function.computations[0].type = pb.ELEM_TYPE_UNSPECIFIED
    return req


SERVICE_CASES = [
    ("empty", lambda: encode_request(one_d(domain="{ S[i] : 1 = 0 }")),
     grpc.StatusCode.INVALID_ARGUMENT, "is empty"),
    ("unbounded", lambda: encode_request(one_d(domain="{ S[i] : 0 <= i }")),
     grpc.StatusCode.INVALID_ARGUMENT, "is unbounded"),
    ("no computation", lambda: encode_request(no_computation()),
     grpc.StatusCode.INVALID_ARGUMENT, "has no computation"),
    ("all inlined", lambda: encode_request(all_inlined()),
     grpc.StatusCode.INVALID_ARGUMENT, "every computation is inlined"),
    ("self read", lambda: encode_request(self_read()),
     grpc.StatusCode.INVALID_ARGUMENT, "reads its own value"),
    ("untyped self read", _untyped_self_read,
     grpc.StatusCode.INVALID_ARGUMENT, "'S'"),
    ("shift 2^63-1", lambda: encode_request(shifted(2 ** 63 - 1)),
     grpc.StatusCode.FAILED_PRECONDITION, "exceeds the limit of 2^40"),
    ("shift -2^63", lambda: encode_request(shifted(-(2 ** 63))),
     grpc.StatusCode.FAILED_PRECONDITION, "exceeds the limit of 2^40"),
    ("skew 2^63-1", lambda: encode_request(skewed(2 ** 63 - 1)),
     grpc.StatusCode.FAILED_PRECONDITION, "exceeds the limit of 2^40"),
]


def test_service_answers_user_errors_with_the_right_status(client: RemoteClient,
                                                          channel: grpc.Channel) -> None:
    for label, make, want, text in SERVICE_CASES:
        req = make()
        code, details, diag = raw_call(channel, req.SerializeToString())
        assert code == want, (label, code, details[:300])
        assert text in details, (label, details[:300])
        assert diag is not None and diag.kind != pb.INTERNAL, label
        # no request JSON, worker task or server caps in what the client reads
        for leak in ('{"', "max_ops", "Traceback", "internal error", "AssertionError"):
            assert leak not in details, (label, leak, details[:300])
    # duplicate outputs through the wire
    req = encode_request(one_d())
    req.function.outputs.extend(["S", "S"])
    code, details, _ = raw_call(channel, req.SerializeToString())
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:300])
    assert "twice" in details or "duplicate" in details.lower(), details[:300]
    assert_serving(client)
