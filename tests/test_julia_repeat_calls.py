"""Repeated calls of a Julia kernel (:mod:`frontends.julia.repeat`): after a call of a
specialization, a call with arrays of the same shapes, dtypes and layouts (any Float64
values, the same Int values) is checked and made in C; anything else takes the ordinary
path. Every call is checked against the numpy reference, and the counter says which calls
were repeats, so the tests fail if the repeated path is never taken, taken when it must
not be, or runs the kernel on the wrong arguments."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from frontends.fastcall import OFF_ENV, stub_type
from frontends.julia import compile_source
from frontends.julia.paper import KERNELS, source
from middleend.ir.errors import KernelArgumentError

SRC = source()


@pytest.fixture(autouse=True, params=["c", "off"])
def path(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """"c": repeated calls go through the extension (it must build in CI); "off":
    ``MIDDLEEND_NO_FASTCALL=1``, every call takes the ordinary path."""
    if request.param == "off":
        monkeypatch.setenv(OFF_ENV, "1")
    else:
        monkeypatch.delenv(OFF_ENV, raising=False)
        if stub_type()[0] is None:
            if os.environ.get("CI"):
                pytest.fail(f"the fast-call extension must build in CI: {stub_type()[1]}")
            pytest.skip(stub_type()[1])
    return str(request.param)


def _check(name: str, args: tuple[Any, ...], want: dict[int, np.ndarray], what: str) -> None:
    for pos, ref in want.items():
        np.testing.assert_allclose(args[pos], ref, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name} argument {pos}, {what}")


def _fresh(name: str, seed: int) -> tuple[tuple[Any, ...], dict[int, np.ndarray]]:
    kd = KERNELS[name]
    args = kd.make(kd.small, np.random.default_rng(seed))
    return args, kd.reference(tuple(a.copy(order="K") if isinstance(a, np.ndarray) else a
                                    for a in args))


@pytest.mark.parametrize("schedule", [False, True], ids=["unscheduled", "scheduled"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_every_kernel_repeats_on_new_arrays_and_new_data(name: str, schedule: bool,
                                                         path: str) -> None:
    """Three calls on new arrays, then one on the last arrays refilled in place (and
    mm2's and gesummv's Float64 scalars changed): each gives numpy's result; every call
    after the first is a repeat where the extension is on, none where it is off."""
    k = compile_source(SRC, name, schedule=schedule)
    for seed in range(3):
        args, want = _fresh(name, seed)
        assert k(*args) is None
        _check(name, args, want, f"call {seed}")
    new, _ = _fresh(name, 9)
    again = tuple(np.copyto(a, b) or a if isinstance(a, np.ndarray) else
                  (b * 1.5 if isinstance(b, float) else b) for a, b in zip(args, new,
                                                                            strict=True))
    want = KERNELS[name].reference(tuple(a.copy(order="K") if isinstance(a, np.ndarray)
                                         else a for a in again))
    k(*again)
    _check(name, again, want, "refilled in place")
    assert k.repeats == (3 if path == "c" else 0)
    assert k.compiles == 1


def test_mistakes_after_repeated_calls_get_the_ordinary_errors() -> None:
    """After repeated calls, a read-only output, two outputs that are one array, a
    C-order matrix, a Float32 matrix, an Int or a Float32 for a Float64 and a missing
    argument are each refused with the first call's error; a numpy float64 is a Float64."""
    name = "gesummv!"
    k = compile_source(SRC, name)
    args, want = _fresh(name, 0)
    for _ in range(3):
        k(*args)
    _check(name, args, want, "repeated")
    repeats = k.repeats
    ro = args[0].copy()
    ro.flags.writeable = False
    bad = [("read-only", (ro, *args[1:])),
           ("overlap", (args[0], args[0], *args[2:])),
           ("Fortran-order", (*args[:2], np.ascontiguousarray(args[2]), *args[3:])),
           ("got Matrix{Float32}", (*args[:2], args[2].astype(np.float32, order="F"),
                                    *args[3:])),
           ("expected Float64, got Int64", (*args[:5], 2, args[6])),
           ("expected Float64, got Float32", (*args[:5], np.float32(2), args[6])),
           ("5 arguments given", args[:5])]
    for message, call in bad:
        with pytest.raises(KernelArgumentError, match=message.replace("{", r"\{")):
            k(*call)
    assert k.repeats == repeats
    args2, _ = _fresh(name, 1)
    call = (*args2[:5], np.float64(args2[5]), args2[6])
    want = KERNELS[name].reference(tuple(a.copy(order="K") if isinstance(a, np.ndarray)
                                         else a for a in call))
    k(*call)
    _check(name, call, want, "numpy float64 alpha")


def test_an_int_specialization_is_its_own_call() -> None:
    """jacobi1d's tsteps is a constant of its specialization: another value is another
    kernel (compiled, not a repeat), a numpy integer of the same value the same one
    (through the ordinary path), and each result is numpy's."""
    name = "jacobi1d!"
    k = compile_source(SRC, name)
    for t in (3, 3, 4, 3, np.int64(4), 4):
        args, _ = _fresh(name, 0)
        args = (args[0], args[1], t)
        want = KERNELS[name].reference((args[0].copy(), args[1].copy(), int(t)))
        k(*args)
        _check(name, args, want, f"tsteps {t!r}")
    assert k.compiles == 2
    if stub_type()[0] is not None:  # None with $MIDDLEEND_NO_FASTCALL set
        assert k.repeats == 3  # the second 3, the third 3 (stubs of both kept), the last 4
