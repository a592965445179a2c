"""The blurxy example of the papers under many schedules, each checked against numpy, plus
the schedules the middle-end must refuse.

Every legal schedule is checked twice: its result equals an independent numpy blur (on
odd sizes, so that tiles and vectors have partial tails), and the loop nest / layers show
that the schedule was really applied (a command silently ignored would still give the right
numbers)."""

from __future__ import annotations

import islpy as isl
import numpy as np
import pytest

import middleend as me
from middleend.ir.loopast import ieval

SHAPES = [(37, 29), (9, 10)]


def blur(schedule=None, bx_rows_full: bool = True) -> me.Function:
    """bx over i in [0, N) (by reads bx[i + 2]); ``schedule(bx, by, N, M, i, j, c)``."""
    with me.Function("blur") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j, c = me.Var("i", 0, N - 2), me.Var("j", 0, M - 2), me.Var("c", 0, 3)
        ii = me.Var("i", 0, N) if bx_rows_full else i
        inp = me.Input("inp", [N, M, 3], me.float32)
        bx = me.Computation(
            "bx", [ii, j, c], (inp[ii, j, c] + inp[ii, j + 1, c] + inp[ii, j + 2, c]) / 3)
        by = me.Computation(
            "by", [i, j, c], (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
        if schedule is not None:
            schedule(bx, by, N, M, i, j, c)
    return f


def blur_ref(a: np.ndarray) -> np.ndarray:
    three = np.float32(3)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / three
    return (bx[:-2] + bx[1:-1] + bx[2:]) / three


def layer_map(f: me.Function, section: str, comp: str) -> isl.Map:
    """The ISL relation of ``comp`` in a section of ``f.layers()`` ("Layer II"...)."""
    text = f.layers()
    start = text.index(f"== {section} ")
    end = text.find("\n== ", start + 1)
    for line in text[start:end if end >= 0 else None].splitlines():
        if f"{{ {comp}[" in line and "->" in line:
            return isl.Map(line.split("   tags:")[0])
    raise AssertionError(f"no {comp} relation in {section}:\n{text}")


def execution_order(sched: isl.Map) -> isl.Map:
    """instance -> instances that run after it, under schedule ``sched``."""
    lt = isl.Map.lex_lt(sched.range().get_space())
    return sched.apply_range(lt).apply_range(sched.reverse())


def buffer_sizes(k, name: str, N: int, M: int) -> tuple[int, ...] | None:
    for b in k.program.buffers:
        if b.name == name:
            return tuple(ieval(s, {"p_N": N, "p_M": M}) for s in b.sizes)
    return None


# ----------------------------------------------------------------- legal schedules
def s_default(bx, by, N, M, i, j, c):
    pass


def s_tile(bx, by, N, M, i, j, c):
    bx.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
    by.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")


def s_split_vectorize(bx, by, N, M, i, j, c):
    by.split(i, 4, "i0", "i1")
    for comp in (bx, by):
        comp.interchange(j, c)
        comp.vectorize(j, 8)


def s_interchange(bx, by, N, M, i, j, c):
    bx.interchange(i, j)
    by.interchange(i, j)


def s_compute_at(bx, by, N, M, i, j, c):
    by.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
    bx.compute_at(by, "j0")


def s_compute_at_parallel(bx, by, N, M, i, j, c):
    by.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
    bx.compute_at(by, "j0")
    bx.allocate_at(by, "j0")
    by.parallelize("i0")


def s_parallel(bx, by, N, M, i, j, c):
    bx.parallelize(i)
    by.parallelize(i)


def s_store_transposed(bx, by, N, M, i, j, c):
    bx.store_in(me.Buffer("bxT", [3, M - 2, N], me.float32), [c, j, i])


def s_storage_fold(bx, by, N, M, i, j, c):
    by.shift(i, 2)
    by.after(bx, "i")
    bx.storage_fold(0, 3)


def s_inline(bx, by, N, M, i, j, c):
    bx.inline()


def s_unroll_c(bx, by, N, M, i, j, c):
    by.unroll("c")


def s_set_schedule(bx, by, N, M, i, j, c):
    by.set_schedule("{by[i,j,c] -> [j, i, c]}")


def s_reverse(bx, by, N, M, i, j, c):
    bx.reverse(i)
    by.reverse(i)


def nest_is(expected_bx, expected_by, top=None):
    def check(k, f, nest, outer):
        n = nest(k)
        assert n.get("bx") == expected_bx, n
        assert n.get("by") == expected_by, n
        if top is not None:
            assert outer(k) == top
    return check


PLAIN = {("i", "j", "c")}
TILED = {("i0", "j0", "i1", "j1", "c")}


def check_vectorized(k, f, nest, outer):
    n = nest(k)
    bx, by = n.get("bx", set()), n.get("by", set())
    assert bx and all(p[:2] == ("i", "c") and p[-1] == "j_vi[vector]" for p in bx), n
    assert by and all(p[:3] == ("i0", "i1", "c") and p[-1] == "j_vi[vector]" for p in by), n
    assert ("i0", "i1", "c", "j_vo", "j_vi[vector]") in by, n
    assert "omp simd" in k.source


def check_parallel(k, f, nest, outer):
    assert nest(k) == {"bx": {("i[parallel]", "j", "c")}, "by": {("i[parallel]", "j", "c")}}
    assert "me_parallel_for(" in k.source


def check_compute_at_parallel(k, f, nest, outer):
    assert nest(k) == {"bx": {("i0[parallel]", "alloc(bx)", "j0", "i", "j", "c")},
                       "by": {("i0[parallel]", "alloc(bx)", "j0", "i1", "j1", "c")}}
    assert "me_parallel_for(" in k.source


def check_transposed(k, f, nest, outer):
    assert buffer_sizes(k, "bx", 37, 29) is None
    assert buffer_sizes(k, "bxT", 37, 29) == (3, 27, 37)
    rel = layer_map(f, "Layer III", "bx")
    assert rel.get_tuple_name(isl.dim_type.out) == "bxT"
    assert rel.is_equal(isl.Map("[N, M] -> { bx[i, j, c] -> bxT[c, j, i] }")
                        .intersect_domain(rel.domain()))


def check_fold(k, f, nest, outer):
    assert outer(k) == ["i"], "bx and by must be fused in one i loop"
    assert buffer_sizes(k, "bx", 37, 29) == (3, 27, 3)


def check_inline(k, f, nest, outer):
    assert nest(k) == {"by": PLAIN}
    assert buffer_sizes(k, "bx", 37, 29) is None


def check_order(comp, expected):
    def check(k, f, nest, outer):
        sched = layer_map(f, "Layer II", comp)
        want = isl.Map(expected).intersect_domain(sched.domain())
        assert execution_order(sched).is_equal(execution_order(want)), sched
    return check


LEGAL = [
    ("default", s_default, nest_is(PLAIN, PLAIN, ["i", "i"])),
    ("tile_8x8", s_tile, nest_is(TILED, TILED)),
    ("split_vectorize", s_split_vectorize, check_vectorized),
    ("interchange", s_interchange, nest_is({("j", "i", "c")}, {("j", "i", "c")})),
    ("compute_at", s_compute_at,
     nest_is({("i0", "j0", "i", "j", "c")}, TILED, ["i0"])),
    ("compute_at_allocate_at_parallel", s_compute_at_parallel, check_compute_at_parallel),
    ("parallel_i", s_parallel, check_parallel),
    ("store_in_transposed", s_store_transposed, check_transposed),
    ("storage_fold", s_storage_fold, check_fold),
    ("inline", s_inline, check_inline),
    ("unroll_c", s_unroll_c, nest_is(PLAIN, {("i", "j")})),
    ("set_schedule_ji", s_set_schedule,
     check_order("by", "[N, M] -> { by[i, j, c] -> [j, i, c] }")),
    ("reverse_i", s_reverse,
     check_order("by", "[N, M] -> { by[i, j, c] -> [-i, j, c] }")),
]


@pytest.mark.parametrize("schedule,check", [pytest.param(s, c, id=n) for n, s, c in LEGAL])
def test_blur_schedule_matches_numpy(schedule, check, rng, assert_close_f32, loop_nest,
                                     outer_loops):
    f = blur(schedule)
    k = f.compile(target="cpu")
    for shape in SHAPES:
        a = rng.uniform(-1, 1, (*shape, 3)).astype(np.float32)
        out = k(inp=a)
        assert list(out) == ["by"]
        assert_close_f32(out["by"], blur_ref(a))
    check(k, f, loop_nest, outer_loops)


def test_reverse_really_reverses_bx():
    f = blur(s_reverse)
    sched = layer_map(f, "Layer II", "bx")
    want = isl.Map("[N, M] -> { bx[i, j, c] -> [-i, j, c] }").intersect_domain(sched.domain())
    assert execution_order(sched).is_equal(execution_order(want))


def test_params_passed_explicitly(rng, assert_close_f32):
    k = blur().compile()
    a = rng.random((11, 13, 3), dtype=np.float32)
    assert_close_f32(k(inp=a, N=11, M=13)["by"], blur_ref(a))


def test_outputs_override_returns_bx(rng, assert_close_f32):
    k = blur().compile(outputs=["bx", "by"])
    a = rng.random((37, 29, 3), dtype=np.float32)
    out = k(inp=a)
    assert sorted(out) == ["bx", "by"]
    assert_close_f32(out["bx"], (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3))
    assert_close_f32(out["by"], blur_ref(a))


# ----------------------------------------------------------------- refusals
def test_after_at_c_without_shift_is_refused():
    f = blur(lambda bx, by, N, M, i, j, c: by.after(bx, "c"))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    e = ei.value
    assert set(e.computations) == {"bx", "by"}
    assert e.dependence is not None and "bx[" in e.dependence and "by[" in e.dependence
    assert e.command is not None and e.command.startswith("by.after(")
    assert "'c'" in e.command and "bx" in e.command
    assert e.command_index == 0
    assert e.command in str(e) and e.dependence in str(e)


def test_after_at_i_without_shift_is_refused_but_with_shift_is_legal(rng, assert_close_f32,
                                                                     outer_loops):
    with pytest.raises(me.ScheduleError):
        blur(lambda bx, by, N, M, i, j, c: by.after(bx, "i")).compile()
    a = rng.random((37, 29, 3), dtype=np.float32)
    k = blur(lambda bx, by, N, M, i, j, c: (by.shift(i, 2), by.after(bx, "i"))).compile()
    assert outer_loops(k) == ["i"]
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


def test_storage_fold_without_fusion_is_refused():
    f = blur(lambda bx, by, N, M, i, j, c: bx.storage_fold(0, 3))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    assert set(ei.value.computations) == {"bx", "by"}
    assert ei.value.command is not None and ei.value.command.startswith("bx.")


def test_storage_fold_too_small_is_refused():
    def sched(bx, by, N, M, i, j, c):
        by.shift(i, 2)
        by.after(bx, "i")
        bx.storage_fold(0, 2)  # by reads three consecutive rows of bx

    with pytest.raises(me.ScheduleError):
        blur(sched).compile()


def test_storage_fold_refusal_names_the_command_as_written():
    f = blur(lambda bx, by, N, M, i, j, c: bx.storage_fold(0, 3))
    with pytest.raises(me.ScheduleError) as ei:
        f.compile()
    assert ei.value.command.startswith("bx.storage_fold(")


def test_compute_at_parallel_without_allocate_at_is_refused():
    def sched(bx, by, N, M, i, j, c):
        by.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
        bx.compute_at(by, "j0")
        by.parallelize("i0")

    with pytest.raises(me.ScheduleError) as ei:
        blur(sched).compile()
    e = ei.value
    assert e.level == "i0"
    assert e.command is not None and e.command.startswith("by.parallelize(") and "i0" in e.command
    assert e.command_index == 2
    assert "bx" in e.computations


def test_check_legality_false_skips_the_check():
    f = blur(lambda bx, by, N, M, i, j, c: by.after(bx, "c"))
    k = f.compile(check_legality=False)
    assert callable(k)


def test_unproduced_read_when_bx_domain_too_small():
    f = blur(bx_rows_full=False)
    with pytest.raises(me.UnproducedReadError) as ei:
        f.compile()
    msg = str(ei.value)
    assert "by" in msg and "bx" in msg
    assert ei.value.computation == "by" and ei.value.target == "bx"


def test_compute_at_row_with_allocate_at_row_and_parallel(rng, assert_close_f32):
    def sched(bx, by, N, M, i, j, c):
        bx.compute_at(by, "i")
        bx.allocate_at(by, "i")
        by.parallelize("i")

    k = blur(sched).compile()
    a = rng.random((37, 29, 3), dtype=np.float32)
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


def test_full_unroll_of_parametric_loop_is_a_schedule_error():
    with pytest.raises(me.ScheduleError):
        blur(lambda bx, by, N, M, i, j, c: by.unroll("i")).compile()
