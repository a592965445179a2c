"""Parameter assumptions (``me.Param(name, min=, max=)``): the compiler may rely on them and
the kernel refuses calls that break them."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me


def _first_plus(lo: int | None) -> me.Function:
    """y[z] = x[0] + 1 over one point: valid only if x has an element, i.e. N >= 1."""
    with me.Function("first") as f:
        N = me.Param("N", min=lo)
        z = me.Var("z", 0, 1)
        x = me.Input("x", [N], me.float32)
        me.Computation("y", [z], x[0] + 1)
    return f


def test_read_of_first_element_needs_n_at_least_one() -> None:
    with pytest.raises(me.DefinitionError, match="outside its bounds"):
        _first_plus(None).compile()


def test_min_bound_makes_the_read_valid_and_is_checked_at_run_time() -> None:
    k = _first_plus(1).compile()
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(k(x=x)["y"], [x[0] + 1])
    with pytest.raises(me.KernelArgumentError, match="N=0"):
        k(x=np.zeros(0, np.float32))


def test_max_bound_is_checked_at_run_time() -> None:
    with me.Function("capped") as f:
        N = me.Param("N", min=1, max=4)
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.int32)
        me.Computation("y", [i], x[i] * 2)
    k = f.compile()
    np.testing.assert_array_equal(k(x=np.arange(4, dtype=np.int32))["y"], np.arange(4) * 2)
    with pytest.raises(me.KernelArgumentError, match="N=5"):
        k(x=np.arange(5, dtype=np.int32))


def test_bounds_must_be_ordered_ints() -> None:
    with me.Function("bad"), pytest.raises(me.DefinitionError):
        me.Param("N", min=3, max=2)
    with me.Function("bad2"), pytest.raises(me.DefinitionError):
        me.Param("N", min=1.5)  # type: ignore[arg-type]


def _prefix_sums() -> me.Function:
    """out[0] = 0 (a write that is outside ``out`` exactly when N <= 0), then the running
    sum out[i] = out[i - 1] + x[i] for 0 < i < N."""
    with me.Function("prefix") as f:
        N = me.Param("N")
        i = me.Var("i", 1, N)
        x = me.Input("x", [N], me.float64)
        out = me.Buffer("out", [N], me.float64, kind=me.OUTPUT)
        first = me.Computation("first", [], 0.0, dtype=me.float64)
        first.store_in(out, [0])
        rest = me.Computation("rest", [i], first.memory[i - 1] + x[i])
        rest.store_in(out, [i])
    return f


def test_write_out_of_bounds_for_some_values_is_checked_at_call_time() -> None:
    """Like Halide: the program compiles; the kernel refuses N <= 0 (where `first` would
    write out[0] of an empty buffer), naming the buffer, the index and its sizes."""
    k = _prefix_sums().compile()
    x = np.random.default_rng(0).random(9)
    got = k(x=x)["out"]
    want = np.concatenate([[0.0], np.cumsum(x[1:])])
    np.testing.assert_allclose(got, want)
    with pytest.raises(me.KernelArgumentError) as e:
        k(x=np.zeros(0))
    msg = str(e.value)
    for part in ("'first' writes", "out[0] : N <= 0", "buffer 'out' of sizes [N]", "N=0",
                 "shape (0,)"):
        assert part in msg, msg
    assert "\n" not in msg


def test_write_out_of_bounds_for_every_value_is_refused_at_compile_time() -> None:
    with me.Function("beyond") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float64)
        out = me.Buffer("out", [N], me.float64, kind=me.OUTPUT)
        me.Computation("c", [i], x[i]).store_in(out, [i + N])
    with pytest.raises(me.DefinitionError, match="'c' writes outside its bounds for every "
                       "parameter value"):
        f.compile()


def test_write_requirement_with_a_param_minimum_is_dropped() -> None:
    """With Param(min=1) the write is in bounds for every admitted value: no check."""
    with me.Function("prefix1") as f:
        N = me.Param("N", min=1)
        x = me.Input("x", [N], me.float64)
        out = me.Buffer("out", [N], me.float64, kind=me.OUTPUT)
        me.Computation("first", [], x[0] + 1.0).store_in(out, [0])
    k = f.compile()
    assert k.signature.requirements == ()
    np.testing.assert_allclose(k(x=np.ones(3))["out"][0], 2.0)
