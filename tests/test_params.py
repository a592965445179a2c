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
