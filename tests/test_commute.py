"""``comp.commute()`` in the Python API, against numpy: a reduction ``s[x] += a[i, j] *
(x + 1)`` whose loops a schedule reorders gives numpy's sums once marked, and is refused
unmarked; what the mark does not allow (a parallel reduction loop without atomic(), another
form, a read of a partial sum, a write between its instances) is refused in one line."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import middleend as me

Schedule = Callable[[me.Computation], object]


def _reduction(schedule: Schedule, commute: bool = True, atomic: bool = False,
               value: str = "sum") -> tuple[me.Function, me.Computation]:
    with me.Function(f"rsum_{value}") as f:
        x, i, j = me.Var("x", 0, 5), me.Var("i", 0, 13), me.Var("j", 0, 6)
        a = me.Input("a", [13, 6], me.float64)
        s = me.Computation("s", [x], 0.0 if value == "sum" else -1e9, dtype=me.float64)
        term = a[i, j] * (x + 1)
        u = me.Computation("u", [x, i, j], s.memory[x] + term if value == "sum"
                           else me.max(s.memory[x], term), dtype=me.float64)
        u.store_in(s, [x])
        if commute:
            u.commute()
        if atomic:
            u.atomic()
        schedule(u)
    return f, s


def _reference(a: np.ndarray, value: str = "sum") -> np.ndarray:
    scale = np.arange(1, 6)[:, None, None]
    return (a[None] * scale).reshape(5, -1).sum(1) if value == "sum" else \
        (a[None] * scale).reshape(5, -1).max(1)


_SCHEDULES: dict[str, Schedule] = {
    "interchange": lambda u: u.interchange("i", "j"),
    "split_reordered": lambda u: (u.split("i", 4, "io", "ii"), u.interchange("io", "j"),
                                  u.interchange("io", "ii")),
    "reversed": lambda u: u.reverse("i"),
    "x_innermost": lambda u: (u.interchange("x", "j"), u.interchange("i", "x")),
}


@pytest.mark.parametrize("value", ["sum", "max"])
@pytest.mark.parametrize("name", list(_SCHEDULES))
def test_reordered_reduction_matches_numpy(name: str, value: str,
                                           rng: np.random.Generator) -> None:
    """Reordered by the schedule (the reduction loops swapped, split and swapped,
    reversed, or outside the element's loop), the marked reduction gives numpy's result."""
    f, s = _reduction(_SCHEDULES[name], value=value)
    a = rng.random((13, 6))
    np.testing.assert_allclose(f.compile(outputs=[s])(a=a)["s"], _reference(a, value),
                               rtol=1e-12)


def test_unmarked_reorder_is_refused() -> None:
    """The default stays Layer I's order: the same reorder without commute() is refused."""
    f, s = _reduction(_SCHEDULES["interchange"], commute=False)
    with pytest.raises(me.ScheduleError, match="would not read the value of 's'"):
        f.lower(outputs=[s])


def test_parallel_reduction_loop(rng: np.random.Generator) -> None:
    """commute() lets the order change, not two instances run at once: a parallel loop
    over the reduction still needs atomic(); with it the sum is numpy's. A parallel pure
    loop needs neither."""
    def par_i(u: me.Computation) -> None:
        u.interchange("i", "j")
        u.parallelize("i")
    f, s = _reduction(par_i)
    with pytest.raises(me.ScheduleError, match="tagged parallel but carries a dependence"):
        f.lower(outputs=[s])
    a = rng.integers(0, 50, (13, 6)).astype(np.float64)  # integer sums: exact in any order
    f, s = _reduction(par_i, atomic=True)
    np.testing.assert_array_equal(f.compile(outputs=[s])(a=a)["s"], _reference(a))

    def par_x(u: me.Computation) -> None:
        u.interchange("i", "j")
        u.parallelize("x")
    f, s = _reduction(par_x)
    np.testing.assert_allclose(f.compile(outputs=[s])(a=a)["s"], _reference(a), rtol=1e-12)


def _one_line(e: pytest.ExceptionInfo[me.ScheduleError]) -> str:
    return str(e.value).splitlines()[0]


def test_other_form_is_refused() -> None:
    """``s[x] = s[x] * 2 + a``: the order of its instances changes the result."""
    with me.Function("twice") as f:
        x, i = me.Var("x", 0, 3), me.Var("i", 0, 4)
        a = me.Input("a", [4], me.float64)
        s = me.Computation("s", [x], 1.0, dtype=me.float64)
        u = me.Computation("u", [x, i], s.memory[x] * 2 + a[i], dtype=me.float64)
        u.store_in(s, [x])
        u.commute()
    with pytest.raises(me.ScheduleError) as e:
        f.lower(outputs=[s])
    assert "'u' cannot be an update whose instances commute" in _one_line(e)
    assert "s[i] = s[i] op e" in _one_line(e)


def test_partial_sums_stay_ordered() -> None:
    """What is not a self-dependence keeps Layer I's order: a computation that reads a
    partial sum (by value, or run between the instances) or writes between them."""
    def by_value() -> tuple[me.Function, me.Computation]:
        with me.Function("by_value") as f:
            x, i = me.Var("x", 0, 3), me.Var("i", 0, 4)
            a = me.Input("a", [4], me.float64)
            s = me.Computation("s", [x], 0.0, dtype=me.float64)
            u = me.Computation("u", [x, i], s.memory[x] + a[i], dtype=me.float64)
            u.store_in(s, [x])
            u.commute()
            g = me.Computation("g", [x], u[x, 1] * 2, dtype=me.float64)
        return f, g

    def between(writes: bool) -> tuple[me.Function, me.Computation]:
        with me.Function("between") as f:
            x, i, j = me.Var("x", 0, 3), me.Var("i", 0, 4), me.Var("j", 0, 2)
            a = me.Input("a", [4, 2], me.float64)
            s = me.Computation("s", [x], 0.0, dtype=me.float64)
            u = me.Computation("u", [x, i, j], s.memory[x] + a[i, j], dtype=me.float64)
            u.store_in(s, [x])
            u.commute()
            g = me.Computation("g", [x, j], s.memory[x] * 2, dtype=me.float64)
            if writes:
                g.store_in(s, [x])
            u.interchange("i", "j")
            g.after(u, "j")
        return f, (s if writes else g)

    f, out = by_value()
    with pytest.raises(me.ScheduleError, match="'g' reads a partial result of them"):
        f.lower(outputs=[out])
    f, out = between(writes=False)
    with pytest.raises(me.ScheduleError, match="'g' would not read the value of 's'"):
        f.lower(outputs=[out])
    f, out = between(writes=True)
    with pytest.raises(me.ScheduleError) as e:
        f.lower(outputs=[out])
    assert "would not update 's' as one chain of them from the value before" in _one_line(e)


def test_initialisation_run_again_is_refused() -> None:
    """The initial value computed again inside the reordered loops (``compute_at``) would
    restart the sum each time: each instance would read the value before them, which is
    allowed once per element, not again after the first."""
    with me.Function("restart") as f:
        x, i, j = me.Var("x", 0, 3), me.Var("i", 0, 4), me.Var("j", 0, 2)
        a = me.Input("a", [4, 2], me.float64)
        s = me.Computation("s", [x], 0.0, dtype=me.float64)
        u = me.Computation("u", [x, i, j], s.memory[x] + a[i, j], dtype=me.float64)
        u.store_in(s, [x])
        u.commute()
        u.interchange("i", "j")
        s.compute_at(u, "j")
    with pytest.raises(me.ScheduleError) as e:
        f.lower(outputs=[s])
    assert "would not update 's' as one chain of them from the value before" in _one_line(e)


def test_pipelined_loop_is_refused() -> None:
    """The fpga target's initiation-interval check follows Layer I's order of the
    instances, which commute() lets the schedule change: refused rather than trusted."""
    f, s = _reduction(lambda u: (u.interchange("i", "j"), u.pipeline("i")))
    with pytest.raises(me.ScheduleError) as e:
        f.lower(outputs=[s])
    assert "its loop 'i' is pipelined" in _one_line(e)
