"""Legality checking and schedule errors: every refusal names the violated dependence (an
ISL relation mentioning the computations) and the command that broke it (its text and its
index in the command log); malformed schedules, compute_at misuse, unproduced reads and
ISL's operation bound give specific errors.
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl
import numpy as np
import pytest

import middleend as me
from middleend.driver.lowering import lower

S2 = Callable[[me.Computation, me.Computation], object]


def refused(f: me.Function, **kw: object) -> me.ScheduleError:
    with pytest.raises(me.ScheduleError) as ei:
        f.compile(**kw)
    return ei.value


def assert_blames(e: me.ScheduleError, comps: tuple[str, ...], command: str, index: int) -> None:
    """The error names the dependence between ``comps`` and command ``index`` (whose text
    contains ``command``)."""
    assert e.dependence, str(e)
    for c in comps:
        assert f"{c}[" in e.dependence, (c, e.dependence)
        assert c in e.computations
    assert e.command is not None and command in e.command, e.command
    assert e.command_index == index
    text = str(e)
    assert e.dependence in text and e.command in text and f"#{index}" in text


# --------------------------------------------------------------------------- programs


def blur(sched: S2, bx_rows_short: int = 0) -> me.Function:
    with me.Function("blur") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j, c = me.Var("i", 0, N - 2), me.Var("j", 0, M - 2), me.Var("c", 0, 3)
        ii = me.Var("i", 0, N - bx_rows_short)
        inp = me.Input("inp", [N, M, 3], me.float32)
        bx = me.Computation("bx", [ii, j, c],
                            (inp[ii, j, c] + inp[ii, j + 1, c] + inp[ii, j + 2, c]) / 3)
        by = me.Computation("by", [i, j, c],
                            (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
        sched(bx, by)
    return f


def blur_ref(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


def prefix_sum(sched: S2) -> me.Function:
    """a[0] = x[0] (a0, stored in a's buffer); a[i] = a[i - 1] + x[i] for i >= 1."""
    with me.Function("psum") as f:
        N = me.Param("N")
        z, i = me.Var("z", 0, 1), me.Var("i", 1, N)
        x = me.Input("x", [N], me.float32)
        a0 = me.Computation("a0", [z], x[0], predicate=z < N)
        a = me.Computation("a", [i], dtype=me.float32)
        a.set_expression(a[i - 1] + x[i])
        a0.store_in(a, [0])
        sched(a0, a)
    return f


def recurrence(sched: Callable[[me.Computation], object]) -> me.Function:
    """a[i, j] = a[i - 1, j + 1] + 1 with row 0 and column M - 1 given (dependence (1, -1))."""
    with me.Function("rec") as f:
        N, M = me.Param("N"), me.Param("M")
        j0, i1 = me.Var("j", 0, M), me.Var("i", 1, N)
        i, j = me.Var("i", 1, N), me.Var("j", 0, M - 1)
        r0 = me.Input("r0", [M], me.float32)
        col = me.Input("col", [N], me.float32)
        a0 = me.Computation("a0", [j0], r0[j0])
        aL = me.Computation("aL", [i1], col[i1], predicate=M > 0)
        a = me.Computation("a", [i, j], dtype=me.float32)
        a.set_expression(a[i - 1, j + 1] + 1.0)
        a0.store_in(a, [0, j0])
        aL.store_in(a, [i1, M - 1])
        sched(a)
    return f


def recurrence_ref(r0: np.ndarray, col: np.ndarray) -> np.ndarray:
    n, m = len(col), len(r0)
    a = np.zeros((n, m), np.float32)
    a[0] = r0
    a[1:, m - 1] = col[1:]
    for i in range(1, n):
        for j in range(m - 1):
            a[i, j] = a[i - 1, j + 1] + 1
    return a


def fusion(sched: S2, offset: int) -> me.Function:
    """p[i] = 2 x[i]; c[i] = p[i + offset] + p[i] (offset = -1 or +1)."""
    with me.Function("fuse") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        ic = me.Var("i", 1, N) if offset < 0 else me.Var("i", 0, N - 1)
        x = me.Input("x", [N], me.float32)
        p = me.Computation("p", [i], x[i] * 2.0)
        c = me.Computation("c", [ic], p[ic + offset] + p[ic])
        sched(p, c)
    return f


# --------------------------------------------------------------------------- refusals


def test_reverse_of_carried_loop_refused() -> None:
    e = refused(prefix_sum(lambda a0, a: a.reverse("i")))
    # command #0 is a0.store_in
    assert_blames(e, ("a",), "a.reverse(dim='i')", 1)


def test_prefix_sum_default_and_double_reverse_are_correct() -> None:
    x = np.arange(1, 12, dtype=np.float32)
    for sched in (lambda a0, a: None, lambda a0, a: (a.reverse("i"), a.reverse("i"))):
        k = prefix_sum(sched).compile()
        np.testing.assert_array_equal(k(x=x)["a"], np.cumsum(x))


def test_blame_is_the_first_illegal_command_not_a_later_one() -> None:
    e = refused(prefix_sum(lambda a0, a: (a.reverse("i"), a.split("i", 2, "i0", "i1"),
                                          a.unroll("i1", 2))))
    assert_blames(e, ("a",), "a.reverse(dim='i')", 1)


def test_blame_skips_a_prefix_that_a_later_command_made_legal_again() -> None:
    # reverse twice is legal (see above); the vectorize is what breaks the schedule
    e = refused(prefix_sum(lambda a0, a: (a.reverse("i"), a.reverse("i"),
                                          a.vectorize("i", 4))))
    assert e.level == "i_vi"
    assert e.command is not None and e.command.startswith("a.vectorize(")
    assert e.command_index == 3


def test_after_consumer_before_producer_refused() -> None:
    e = refused(blur(lambda bx, by: bx.after(by, me.ROOT)))
    assert_blames(e, ("bx", "by"), "bx.after(other='by'", 0)


def test_before_consumer_before_producer_refused() -> None:
    e = refused(blur(lambda bx, by: by.before(bx, me.ROOT)))
    assert e.dependence and "bx[" in e.dependence and "by[" in e.dependence
    assert e.command is not None and "by" in e.command and "bx" in e.command
    assert e.command_index == 0


def test_legal_blur_orders_match_numpy() -> None:
    a = np.random.default_rng(0).random((9, 11, 3)).astype(np.float32)
    for sched in (lambda bx, by: None, lambda bx, by: by.after(bx, me.ROOT),
                  lambda bx, by: bx.compute_at(by, "i")):
        out = blur(sched).compile()(inp=a)["by"]
        np.testing.assert_allclose(out, blur_ref(a), rtol=1e-6)


def test_interchange_breaking_dependence_refused() -> None:
    e = refused(recurrence(lambda a: a.interchange("i", "j")))
    # commands #0, #1 are the store_in of a0 and aL
    assert_blames(e, ("a",), "a.interchange(a='i', b='j')", 2)


@pytest.mark.parametrize("name", ["default", "reverse_then_interchange", "skew_then_interchange"])
def test_legal_interchanges_accepted(name: str) -> None:
    sched = {
        "default": lambda a: None,
        # (1, -1) -> (1, 1) -> interchange keeps it lexicographically positive
        "reverse_then_interchange": lambda a: (a.reverse("j"), a.interchange("i", "j")),
        "skew_then_interchange": lambda a: (a.skew("i", "j", 1, "i", "j2"),
                                            a.interchange("i", "j2")),
    }[name]
    k = recurrence(sched).compile()
    r0 = np.arange(7, dtype=np.float32)
    col = 10 * np.arange(9, dtype=np.float32)
    np.testing.assert_array_equal(k(r0=r0, col=col)["a"], recurrence_ref(r0, col))


def test_shift_breaking_fusion_refused() -> None:
    f = fusion(lambda p, c: (c.after(p, "i"), p.shift("i", 1)), offset=-1)
    e = refused(f)
    assert_blames(e, ("p", "c"), "p.shift(dim='i', amount=1)", 1)


def test_fusion_needing_a_shift() -> None:
    """c[i] reads p[i + 1]: fused as is it is illegal (blamed on the after); shifting p by
    -1 makes it legal and correct."""
    e = refused(fusion(lambda p, c: c.after(p, "i"), offset=1))
    assert_blames(e, ("p", "c"), "c.after(other='p', level='i')", 0)
    k = fusion(lambda p, c: (c.after(p, "i"), p.shift("i", -1)), offset=1).compile()
    x = np.arange(9, dtype=np.float32) ** 2
    np.testing.assert_array_equal(k(x=x)["c"], 2 * x[1:] + 2 * x[:-1])


def test_vectorize_carried_loop_refused() -> None:
    e = refused(prefix_sum(lambda a0, a: a.vectorize("i", 4)))
    assert_blames(e, ("a",), "a.vectorize(dim='i', factor=4, outer='i_vo', inner='i_vi')", 1)
    assert e.level == "i_vi"


def test_parallelize_after_neutral_commands_blames_parallelize() -> None:
    e = refused(prefix_sum(lambda a0, a: (a.shift("i", 3), a.shift("i", -3),
                                          a.parallelize("i"))))
    assert_blames(e, ("a",), "a.parallelize(dim='i')", 3)
    assert e.level == "i"


def test_check_legality_false_lets_illegal_schedule_through() -> None:
    f = prefix_sum(lambda a0, a: a.reverse("i"))
    k = f.compile(check_legality=False)
    assert callable(k)
    f2 = blur(lambda bx, by: bx.after(by, me.ROOT))
    assert f2.lower(check_legality=False).ts.order == ["by", "bx"]


def test_check_legality_false_still_rejects_malformed_commands() -> None:
    with pytest.raises(me.ScheduleError):
        prefix_sum(lambda a0, a: a.interchange("i", "q")).compile(check_legality=False)


# --------------------------------------------------------------------------- set_schedule


@pytest.mark.parametrize("text", ["{ a[i] -> [ }", "a[i] -> [i]", "{ a[i] -> [i +] }"])
def test_malformed_set_schedule(text: str) -> None:
    e = refused(prefix_sum(lambda a0, a: a.set_schedule(text)))
    assert "malformed" in str(e)
    assert e.command is not None and text in e.command
    assert e.computations == ("a",)


@pytest.mark.parametrize("text,why", [
    ("{ a[i] -> [0] }", "one-to-one"),
    ("{ a[i] -> [o] : o >= i }", "one-to-one"),
    ("{ b[i] -> [i] }", "domain must be a[...]"),
    ("{ a[i, j] -> [i] }", "with 1 dims"),
    ("{ a[i] -> [i] : i > 3 }", "does not cover"),
])
def test_set_schedule_rejected(text: str, why: str) -> None:
    e = refused(prefix_sum(lambda a0, a: a.set_schedule(text)))
    assert why in str(e)
    assert e.command is not None and text in e.command


def test_set_schedule_legal_and_illegal() -> None:
    x = np.arange(1, 10, dtype=np.float32)
    k = prefix_sum(lambda a0, a: a.set_schedule("{ a[i] -> [i, 0] }")).compile()
    np.testing.assert_array_equal(k(x=x)["a"], np.cumsum(x))
    e = refused(prefix_sum(lambda a0, a: a.set_schedule("{ a[i] -> [-i] }")))
    assert_blames(e, ("a",), "isl_map='{ a[i] -> [-i] }'", 1)


# --------------------------------------------------------------------------- structure errors


def test_unknown_loop_name_lists_the_loops() -> None:
    e = refused(blur(lambda bx, by: by.interchange("i", "k")))
    assert "'k'" in str(e) and "['i', 'j', 'c']" in str(e)
    assert e.computations == ("by",)
    assert e.command == "by.interchange(a='i', b='k')"


def test_unknown_loop_name_after_split_lists_new_loops() -> None:
    e = refused(blur(lambda bx, by: (by.split("i", 4, "i0", "i1"), by.parallelize("i"))))
    assert "['i0', 'i1', 'j', 'c']" in str(e)
    assert e.command == "by.parallelize(dim='i')"


@pytest.mark.parametrize("name,index", [
    ("unknown_loop_after_split", 1),
    ("malformed_set_schedule", 1),
    ("non_injective_set_schedule", 1),
    ("compute_at_unknown_level", 0),
])
def test_structural_errors_carry_command_index(name: str, index: int) -> None:
    f = {
        "unknown_loop_after_split": lambda: blur(
            lambda bx, by: (by.split("i", 4, "i0", "i1"), by.parallelize("i"))),
        "malformed_set_schedule": lambda: prefix_sum(
            lambda a0, a: a.set_schedule("{ a[i] -> [ }")),
        "non_injective_set_schedule": lambda: prefix_sum(
            lambda a0, a: a.set_schedule("{ a[i] -> [0] }")),
        "compute_at_unknown_level": lambda: blur(lambda bx, by: bx.compute_at(by, "zz")),
    }[name]()
    e = refused(f)
    assert e.command_index == index
    assert e.command is not None and f"#{index}" in str(e)


def test_structural_error_index_with_repeated_command_text() -> None:
    # parallelize(i) #0 is valid; after the split, the same text #2 names no loop
    e = refused(blur(lambda bx, by: (by.parallelize("i"), by.split("i", 4, "i0", "i1"),
                                     by.parallelize("i"))))
    assert "no loop 'i'" in str(e)
    assert e.command_index == 2


def test_command_text_uses_api_method_names() -> None:
    e = refused(prefix_sum(lambda a0, a: a.set_schedule("{ a[i] -> [0] }")))
    assert e.command is not None and e.command.startswith("a.set_schedule(")
    e = refused(blur(lambda bx, by: bx.compute_at(by, "zz")))
    assert e.command is not None and e.command.startswith("bx.compute_at(")


def test_compute_at_cycle() -> None:
    e = refused(blur(lambda bx, by: (bx.compute_at(by, "i"), by.compute_at(bx, "i"))))
    assert "cyclic" in str(e)
    assert set(e.computations) == {"bx", "by"}
    assert e.command is not None and e.command.startswith("by.compute_at(")  # closes it
    assert e.command_index == 1


def test_compute_at_consumer_not_reading_producer() -> None:
    with me.Function("noread") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        p = me.Computation("p", [i], x[i] * 2.0)
        q = me.Computation("q", [i], x[i] + 1.0)
        p.compute_at(q, "i")
    e = refused(f)
    assert "does not read" in str(e)
    assert set(e.computations) == {"p", "q"}


def test_compute_at_unknown_level() -> None:
    e = refused(blur(lambda bx, by: bx.compute_at(by, "zz")))
    assert "'zz'" in str(e) and "['i', 'j', 'c']" in str(e)


# --------------------------------------------------------------------------- unproduced reads


def test_unproduced_read_prints_the_set() -> None:
    f = blur(lambda bx, by: None, bx_rows_short=1)  # bx has rows [0, N - 1) only
    with pytest.raises(me.UnproducedReadError) as ei:
        f.compile()
    e = ei.value
    assert isinstance(e, me.DefinitionError)
    assert e.computation == "by" and e.target == "bx"
    assert "N" in e.unproduced and "by[" in e.unproduced
    assert e.unproduced in str(e)
    # the unproduced set is exactly the last row i = N - 3 of by
    got = isl.Set.read_from_str(isl.DEFAULT_CONTEXT, e.unproduced)
    want = isl.Set.read_from_str(
        isl.DEFAULT_CONTEXT,
        "[N, M] -> { by[i, j, c] : i = N - 3 and N >= 3 and 0 <= j <= M - 3 and 0 <= c <= 2 }")
    assert got.is_equal(want)


def test_unproduced_read_names_every_read_its_index_and_the_elements() -> None:
    """bx two rows short: both by reads bx[i + 1, ...] and bx[i + 2, ...] see rows nothing
    computes; the error names each read, where it happens and the missing elements."""
    f = blur(lambda bx, by: None, bx_rows_short=2)  # bx has rows [0, N - 2) only
    with pytest.raises(me.UnproducedReadError) as ei:
        f.compile()
    msg = str(ei.value)
    assert "\n" not in msg
    parts = msg.split("; ")[1:]
    assert [p.split(" at ")[0] for p in parts] == ["by reads bx[i + 1, j, c]",
                                                  "by reads bx[i + 2, j, c]"]
    want = {"bx[i + 1, j, c]": "[N, M] -> { bx[i0, i1, i2] : i0 = N - 2 and N >= 3 and "
                               "0 <= i1 <= M - 3 and 0 <= i2 <= 2 }",
            "bx[i + 2, j, c]": "[N, M] -> { bx[i0, i1, i2] : N - 2 <= i0 <= N - 1 and "
                               "i0 >= 2 and 0 <= i1 <= M - 3 and 0 <= i2 <= 2 }"}
    for p in parts:
        elems = p.split("elements nothing produces: ")[1]
        read = p.split(" at ")[0].removeprefix("by reads ")
        got = isl.Set.read_from_str(isl.DEFAULT_CONTEXT, elems)
        assert got.is_equal(isl.Set.read_from_str(isl.DEFAULT_CONTEXT, want[read])), p
    # the instances: the union of both reads' (rows N - 4 and N - 3 of by)
    got = isl.Set.read_from_str(isl.DEFAULT_CONTEXT, ei.value.unproduced)
    assert got.is_equal(isl.Set.read_from_str(
        isl.DEFAULT_CONTEXT, "[N, M] -> { by[i, j, c] : N - 4 <= i <= N - 3 and i >= 0 and "
        "0 <= j <= M - 3 and 0 <= c <= 2 }"))


def test_unproduced_read_of_own_values() -> None:
    with me.Function("selfread") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Computation("a", [i], dtype=me.float32)
        a.set_expression(a[i - 1] * 2.0)
    with pytest.raises(me.UnproducedReadError) as ei:
        f.compile()
    got = isl.Set.read_from_str(isl.DEFAULT_CONTEXT, ei.value.unproduced)
    want = isl.Set.read_from_str(isl.DEFAULT_CONTEXT, "[N] -> { a[0] : N > 0 }")
    assert got.is_equal(want), ei.value.unproduced


# --------------------------------------------------------------------------- ISL bound


def test_isl_operation_bound() -> None:
    with pytest.raises(me.ResourceLimitError, match="operations"):
        lower(blur(lambda bx, by: None), max_isl_ops=1000)
    # the same function lowers with the default bound
    assert lower(blur(lambda bx, by: None)).ts.order == ["bx", "by"]
