"""The pipeline of Figure 1 of the Tiramisu paper: b1 = 1.5 * img, b2 = clamp(b1, 0, 255),
out = horizontal 3-point average of b2, under the paper's CPU schedule and others."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me

SHAPES = [(37, 29), (5, 4)]


def figure1(schedule=None) -> me.Function:
    """``schedule(b1, b2, out, i, j, c)``; out is defined over 1 <= j < M - 1."""
    with me.Function("figure1") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j, c = me.Var("i", 0, N), me.Var("j", 0, M), me.Var("c", 0, 3)
        jo = me.Var("j", 1, M - 1)
        img = me.Input("img", [N, M, 3], me.float32)
        b1 = me.Computation("b1", [i, j, c], 1.5 * img[i, j, c])
        b2 = me.Computation("b2", [i, j, c], me.clamp(b1[i, j, c], 0, 255))
        out = me.Computation(
            "out", [i, jo, c], (b2[i, jo - 1, c] + b2[i, jo, c] + b2[i, jo + 1, c]) / 3)
        if schedule is not None:
            schedule(b1, b2, out, i, j, c)
    return f


def figure1_ref(img: np.ndarray) -> np.ndarray:
    """out[:, j] for j in [1, M - 1), i.e. the written part of the out buffer."""
    b2 = np.minimum(np.maximum(np.float32(1.5) * img, np.float32(0)), np.float32(255))
    return (b2[:, :-2] + b2[:, 1:-1] + b2[:, 2:]) / np.float32(3)


def image(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    img = rng.uniform(-50, 300, (*shape, 3)).astype(np.float32)
    # the clamp must matter on both sides for the comparison to test it
    assert (1.5 * img < 0).any() and (1.5 * img > 255).any()
    return img


# ----------------------------------------------------------------- schedules
def s_none(b1, b2, out, i, j, c):
    pass


def s_paper_cpu(b1, b2, out, i, j, c):
    b2.after(b1, "c")
    b1.parallelize(i)
    b2.parallelize(i)
    out.parallelize(i)


def s_tiled(b1, b2, out, i, j, c):
    for comp in (b1, b2, out):
        comp.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
    b2.after(b1, "c")


def s_vectorized(b1, b2, out, i, j, c):
    for comp in (b1, b2, out):
        comp.interchange(j, c)
        comp.vectorize(j, 8)


def s_b1_inlined(b1, b2, out, i, j, c):
    b1.inline()
    out.parallelize(i)


def s_fused_at_i(b1, b2, out, i, j, c):
    b2.after(b1, "c")
    out.after(b2, "i")
    b1.parallelize(i)


def s_fused_at_j_shifted(b1, b2, out, i, j, c):
    b2.after(b1, "c")
    out.shift(j, 1)
    out.after(b2, "j")


def s_compute_at(b1, b2, out, i, j, c):
    b1.inline()
    out.tile(i, j, 8, 8, "i0", "j0", "i1", "j1")
    b2.compute_at(out, "j0")
    b2.allocate_at(out, "j0")
    out.parallelize("i0")


P, PLAIN = "i[parallel]", ("i", "j", "c")


def expect(nest_=None, top=None, pragma=None):
    def check(k, nest, outer):
        if nest_ is not None:
            assert nest(k) == nest_, nest(k)
        if top is not None:
            assert outer(k) == top
        if pragma is not None:
            assert pragma in k.source
    return check


def check_vectorized(k, nest, outer):
    n = nest(k)
    assert sorted(n) == ["b1", "b2", "out"]
    for paths in n.values():
        assert paths and all(p[:2] == ("i", "c") and p[-1] == "j_vi[vector]" for p in paths), n
    assert "omp simd" in k.source


def check_compute_at(k, nest, outer):
    n = nest(k)
    assert sorted(n) == ["b2", "out"], n
    assert n["out"] == {("i0[parallel]", "alloc(b2)", "j0", "i1", "j1", "c")}, n
    # b2 runs inside each (i0, j0) tile on its footprint (ISL may peel a degenerate j loop)
    assert ("i0[parallel]", "alloc(b2)", "j0", "i", "j", "c") in n["b2"], n
    assert all(p[:4] == ("i0[parallel]", "alloc(b2)", "j0", "i") for p in n["b2"]), n
    assert outer(k) == ["i0"]
    assert "me_parallel_for(" in k.source


CASES = [
    ("no_schedule", s_none, expect({"b1": {PLAIN}, "b2": {PLAIN}, "out": {PLAIN}},
                                   ["i", "i", "i"])),
    ("paper_cpu", s_paper_cpu,
     expect({"b1": {(P, "j", "c")}, "b2": {(P, "j", "c")}, "out": {(P, "j", "c")}},
            ["i", "i"], "me_parallel_for(")),
    ("tiled", s_tiled, expect({n: {("i0", "j0", "i1", "j1", "c")} for n in ("b1", "b2", "out")},
                              ["i0", "i0"])),
    ("vectorized", s_vectorized, check_vectorized),
    ("b1_inlined", s_b1_inlined, expect({"b2": {PLAIN}, "out": {(P, "j", "c")}}, ["i", "i"])),
    ("fused_at_i", s_fused_at_i,
     expect({"b1": {(P, "j", "c")}, "b2": {(P, "j", "c")}, "out": {(P, "j", "c")}}, ["i"],
            "me_parallel_for(")),
    ("fused_at_j_shifted", s_fused_at_j_shifted,
     expect({"b1": {PLAIN}, "b2": {PLAIN}, "out": {PLAIN}}, ["i"])),
    ("compute_at", s_compute_at, check_compute_at),
]


@pytest.mark.parametrize("schedule,check", [pytest.param(s, c, id=n) for n, s, c in CASES])
def test_figure1_matches_numpy(schedule, check, rng, assert_close_f32, loop_nest, outer_loops):
    k = figure1(schedule).compile(target="cpu")
    for shape in SHAPES:
        img = image(rng, shape)
        res = k(img=img)
        assert list(res) == ["out"]
        out = res["out"]
        # identity storage: out's buffer spans j in [0, M - 1); column 0 is not written
        assert out.shape == (shape[0], shape[1] - 1, 3)
        assert_close_f32(out[:, 1:], figure1_ref(img))
    check(k, loop_nest, outer_loops)


def test_figure1_intermediates_as_outputs(rng, assert_close_f32):
    k = figure1(s_paper_cpu).compile(outputs=["b1", "b2", "out"])
    img = image(rng, (37, 29))
    res = k(img=img)
    assert sorted(res) == ["b1", "b2", "out"]
    b1 = np.float32(1.5) * img
    assert_close_f32(res["b1"], b1)
    assert_close_f32(res["b2"], np.clip(b1, np.float32(0), np.float32(255)))
    assert res["b2"].min() == 0 and res["b2"].max() == 255
    assert_close_f32(res["out"][:, 1:], figure1_ref(img))


def test_b1_stays_float32():
    f = figure1()
    k = f.compile()
    assert "double" not in k.source.split("me_figure1(")[-1]  # the kernel body: no promotion
    assert "1.5f" in k.source


def test_fusing_out_at_j_without_shift_is_refused():
    def sched(b1, b2, out, i, j, c):
        b2.after(b1, "c")
        out.after(b2, "j")  # out(j) reads b2(j + 1), which runs later in the fused j loop

    with pytest.raises(me.ScheduleError) as ei:
        figure1(sched).compile()
    e = ei.value
    assert set(e.computations) == {"b2", "out"}
    assert "b2[" in e.dependence and "out[" in e.dependence
    assert e.command.startswith("out.after(") and "'j'" in e.command


def test_parallelizing_the_fused_j_loop_of_a_shifted_pipeline_is_refused():
    def sched(b1, b2, out, i, j, c):
        s_fused_at_j_shifted(b1, b2, out, i, j, c)
        out.parallelize(j)  # out(j) reads b2 produced at iteration j + 1 of the fused loop

    with pytest.raises(me.ScheduleError) as ei:
        figure1(sched).compile()
    assert ei.value.level == "j"


def test_paper_schedule_with_var_levels(rng, assert_close_f32):
    def sched(b1, b2, out, i, j, c):
        b2.after(b1, c)  # exactly as written in the paper
        for comp in (b1, b2, out):
            comp.parallelize(i)

    k = figure1(sched).compile()
    img = image(rng, (37, 29))
    assert_close_f32(k(img=img)["out"][:, 1:], figure1_ref(img))
