"""The automatic scheduler (middleend.autosched): the schedules it chooses are legal and
compute numpy's results, for every example program, the schedule fuzz's programs, the
Julia PolyBench kernels and Halide pipelines (against Halide's own output), under the
different schedules that different size estimates make it choose; its analytical mode is
deterministic; the switches (Function.compile, the wire, the CLI, compile_source,
compile_pipeline) work, and a user's mistakes get one clear error.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_schedule_fuzz import PROGRAMS

import middleend as me
from middleend.api import examples
from middleend.api import examples_beyond as eb
from middleend.ir import commands as cmd

ROOT = Path(__file__).resolve().parent.parent


def _scheduled(fn: me.Function) -> list[str]:
    """The loop commands the scheduler left (it must schedule something)."""
    return [c.describe() for c in fn.commands.items
            if isinstance(c, (cmd.Split, cmd.Interchange, cmd.Vectorize, cmd.Parallelize,
                              cmd.Unroll, cmd.ComputeAt))]


# ------------------------------------------------------------------- the fuzz's programs


@pytest.mark.parametrize("size", [16, 600], ids=["est16", "est600"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_fuzz_programs_auto_scheduled_match_numpy(name: str, size: int) -> None:
    """Each program of the schedule fuzz, scheduled for small and for large parameter
    estimates (different tiles, orders, vector and parallel loops), then checked on the
    fuzz's own small odd sizes (the tiles' tails) against its numpy reference."""
    prog = PROGRAMS[name]
    fn, _ = prog.define()
    est = {p.name: size for p in fn.params}
    if "T" in est:
        est["T"] = 4
    chosen = fn.auto_schedule(estimates=est)
    assert chosen.commands == fn.commands.items
    prog.check(fn.compile())


def test_auto_schedules_differ_with_the_estimates() -> None:
    """Small and large sizes are different problems: the large matmul is tiled."""
    small, _ = PROGRAMS["matmul"].define()
    large, _ = PROGRAMS["matmul"].define()
    a = small.auto_schedule(estimates={"N": 8, "K": 8, "M": 8})
    b = large.auto_schedule(estimates={"N": 600, "K": 600, "M": 600})
    assert any(isinstance(c, cmd.Split) for c in b.commands)
    assert a.python() != b.python()


def test_analytical_mode_is_deterministic() -> None:
    """The same program, estimates and machine: the same commands, every time."""
    texts = set()
    for _ in range(3):
        fn, _ = PROGRAMS["blur"].define()
        texts.add(fn.auto_schedule(estimates={"N": 700, "M": 900}).python())
    assert len(texts) == 1


# ------------------------------------------------------------------------ the examples


def test_blur_example_auto_scheduled() -> None:
    b = examples.blur()
    chosen = b.fn.auto_schedule(estimates={"N": 1000, "M": 1500})
    assert _scheduled(b.fn), str(chosen)
    k = b.fn.compile()
    a = np.random.default_rng(0).random((19, 37, 3)).astype(np.float32)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    ref = (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)
    np.testing.assert_allclose(k(inp=a)["by"], ref, rtol=1e-6, atol=1e-7)


def test_matmul_example_auto_scheduled() -> None:
    mm = examples.matmul("amm", 96)
    mm.fn.auto_schedule()
    assert _scheduled(mm.fn)
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (96, 96)).astype(np.float32)
    b = rng.integers(-4, 5, (96, 96)).astype(np.float32)
    np.testing.assert_array_equal(mm.fn.compile()(A=a, B=b)["C"], a @ b)


def test_heat2d_example_keeps_its_time_loop() -> None:
    """The time loop carries the stencil: the scheduler must not parallelize it (the
    legality check would refuse), and the result is still the reference's."""
    h = examples.heat2d("aheat")
    chosen = h.fn.auto_schedule(estimates={"T": 8, "N": 512, "M": 512})
    assert not any(isinstance(c, cmd.Parallelize) and c.comp == "h" and c.dim == "t"
                   for c in chosen.commands)
    a = np.random.default_rng(2).random((9, 13)).astype(np.float32)
    buf = h.fn.compile()(inp=a, T=3)["buf"]
    ref = a.copy()
    for _ in range(3):
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = np.float32(0.2) * (ref[1:-1, 1:-1] + ref[:-2, 1:-1]
                                             + ref[2:, 1:-1] + ref[1:-1, :-2]
                                             + ref[1:-1, 2:])
        ref = nxt
    np.testing.assert_allclose(buf[3 % 2], ref, rtol=1e-5, atol=1e-6)


def test_beyond_halide_examples_auto_scheduled() -> None:
    """ticket #2373 (a triangular reduction), heat-3D (cyclic dataflow) and the edge
    detector (a stencil reading a computation twice), constant sizes."""
    rng = np.random.default_rng(3)
    t = eb.ticket2373((13, 17), 5)
    t.fn.auto_schedule()
    a = rng.random((13, 17)).astype(np.float32)
    np.testing.assert_allclose(t.fn.compile()(inp=a)["out"], eb.ticket2373_ref(a, 5),
                               rtol=1e-5, atol=1e-5)
    h = eb.heat3d((7, 9, 11), 5)
    h.fn.auto_schedule()
    x = rng.random((7, 9, 11)).astype(np.float32)
    buf = h.fn.compile()(inp=x)["buf"]
    np.testing.assert_allclose(buf[4 % 2], eb.heat3d_ref(x, 5), rtol=1e-5, atol=1e-6)
    e = eb.edge_detector((13, 17))
    e.fn.auto_schedule()
    img = rng.uniform(0, 1, (13, 17, 3)).astype(np.float32)
    np.testing.assert_array_equal(e.fn.compile()(inp=img)["Img"], eb.edge_detector_ref(img))


def test_user_loop_commands_are_kept() -> None:
    """A statement the user scheduled keeps exactly their commands."""
    b = examples.blur()
    b.by.parallelize("i")
    b.fn.auto_schedule(estimates={"N": 800, "M": 800})
    mine = [c for c in b.fn.commands.items if c.comp == "by"
            and not isinstance(c, (cmd.After, cmd.ComputeAt, cmd.AllocateAt))]
    assert mine == [cmd.Parallelize("by", "i")]


def _vblur(inline: bool) -> me.Function:
    """A vertical 5-tap blur of a costly producer whose rows start at -2 (clamped reads of
    the input): placement materializes the producer in a buffer of its own, offset."""
    with me.Function("vblur") as f:
        inp = me.Input("inp", [300, 400], me.float32)
        y, x = me.Var("y", -2, 302), me.Var("x", 0, 400)
        v = inp[me.clamp(y, 0, 299), x]
        bx = me.Computation("bx", [y, x], me.sqrt(v * v + 1.0) * 0.5 + me.sqrt(v + 2.0))
        y2, x2 = me.Var("y", 0, 300), me.Var("x", 0, 400)
        me.Computation("out", [y2, x2], bx[y2 - 2, x2] + bx[y2 - 1, x2] + bx[y2, x2]
                       + bx[y2 + 1, x2] + bx[y2 + 2, x2])
        if inline:
            bx.inline()
    return f


def test_python_form_replays_placement() -> None:
    """``.python()`` rebuilds the whole schedule on the program built again (without the
    inline() placement took out): the offset buffer, its store_in, the loop commands;
    both compute numpy's result."""
    f = _vblur(inline=True)
    chosen = f.auto_schedule()
    text = chosen.python()
    assert "me.Buffer('bx_box', [304, 400], me.float32)" in text, text
    assert "# bx: computed, no longer inlined" in text, text
    g = _vblur(inline=False)
    exec(text, {"f": g, "me": me})  # noqa: S102 - the text under test
    assert sorted(c.describe() for c in g.commands.items) == \
        sorted(c.describe() for c in f.commands.items)
    a = np.random.default_rng(5).random((300, 400)).astype(np.float32)
    p = np.pad(a, ((2, 2), (0, 0)), mode="edge")
    bx = np.sqrt(p * p + 1) * 0.5 + np.sqrt(p + 2)
    ref = sum(bx[2 + d:302 + d] for d in range(-2, 3))
    for fn in (f, g):
        np.testing.assert_allclose(fn.compile()(inp=a)["out"], ref, rtol=1e-5)


def test_a_stage_every_channel_reads_is_computed_once_not_per_channel() -> None:
    """A cheap sum of costly inlined work (``s = t + 1``, ``t`` square roots) read by each
    of the output's channels at the same ``y, x``: inlined, ``t`` is evaluated once per
    channel. Placement prices it by the work it carries and the reads the channels repeat,
    so ``s`` is computed once per pixel (at the root or per row of the output); the
    result is numpy's."""
    with me.Function("channels") as f:
        inp = me.Input("inp", [3, 200, 300], me.float32)
        c, y, x = me.Var("c", 0, 3), me.Var("y", 0, 200), me.Var("x", 0, 300)
        v = inp[0, y, x]
        t = me.Computation("t", [y, x], me.sqrt(v * v + 1.0) * 0.5 + me.sqrt(v + 2.0)
                           + me.sqrt(v * 3.0 + 1.0))
        s = me.Computation("s", [y, x], t[y, x] + 1.0)
        me.Computation("out", [c, y, x], s[y, x] * inp[c, y, x])
        t.inline()
        s.inline()
    chosen = f.auto_schedule()
    assert any(re.search(r"placement: s computed (at the root|per iteration)", n)
               for n in chosen.notes), chosen.notes
    a = np.random.default_rng(3).random((3, 200, 300)).astype(np.float32)
    a0 = a[0]
    ref = (np.sqrt(a0 * a0 + 1) * 0.5 + np.sqrt(a0 + 2) + np.sqrt(a0 * 3 + 1) + 1) * a
    np.testing.assert_allclose(f.compile()(inp=a)["out"], ref, rtol=1e-5)


def _atb(name: str, transposed: bool = True) -> me.Function:
    """``C = A' B`` as written in a column-major language: both operands run along the
    reduction ``k``, their contiguous dim, so ``i`` (the vector loop the sums allow) reads
    ``A`` a whole row apart. Not ``transposed``: ``C = A B``, ``A[i, k]`` contiguous along
    ``i``, the register tile's rows, but each step of ``k`` a column (a page or more)
    away."""
    with me.Function(name) as f:
        n, m, kk = me.Param("N", min=1), me.Param("M", min=1), me.Param("K", min=1)
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("k", 0, kk)
        a = me.Input("A", [n, kk] if transposed else [kk, n], me.float64)
        b = me.Input("B", [m, kk], me.float64)
        c = me.Computation("C", [j, i], me.cast(me.float64, 0))
        c.update([j, i, k] if transposed else [i, j, k],
                 (a[i, k] if transposed else a[k, i]) * b[j, k], name="U", at=[j, i])
    return f


def test_a_strided_operand_is_packed_and_replayed() -> None:
    """At sizes where it pays, the search reads ``A`` through a transposed copy made once
    (``copy_at`` at the root, ``order=(1, 0)``): ``i`` is then contiguous for every
    access and the register tiles apply. The copy is in the report and in ``.python()``,
    which rebuilds the same schedule; both give numpy's result. At tiny sizes, no copy."""
    f = _atb("patb")
    chosen = f.auto_schedule(estimates={"N": 512, "M": 512, "K": 512})
    copies = [c for c in chosen.commands if isinstance(c, cmd.CopyAt)]
    assert copies and copies[0].src == "A" and copies[0].order == (1, 0), str(chosen)
    assert copies[0].level == cmd.ROOT
    # only the read along the vector loop is copied (B stays where it is contiguous); in
    # panels of the register tile's rows when the model finds them cheaper (here: yes)
    assert copies[0].along == "i", str(chosen)
    tile = next(c.factor for c in chosen.commands
                if isinstance(c, cmd.Split) and c.comp == "U" and c.dim == "i")
    assert copies[0].panel in (0, tile), str(chosen)
    assert "U: reads A through a copy" in str(chosen)
    assert f.operation(copies[0].name).kind == "copy"  # made by apply(), schedulable
    dry = _atb("patb")
    dry.auto_schedule(estimates={"N": 512, "M": 512, "K": 512}, apply=False)
    assert not dry.operations and not dry.reserved  # apply=False leaves the program alone
    text = chosen.python()
    assert "me.copy_at(f.computation(\"U\"), me.ROOT, 'A', 'A_p'" in text, text
    g = _atb("patb")
    exec(text, {"f": g, "me": me})  # noqa: S102 - the text under test
    assert [c.describe() for c in g.commands.items] == [c.describe() for c in f.commands.items]
    rng = np.random.default_rng(8)
    a, b = rng.random((37, 29)), rng.random((23, 29))
    for fn in (f, g):
        np.testing.assert_allclose(fn.compile()(A=a, B=b)["C"], b @ a.T, rtol=1e-12)
    small = _atb("satb")
    small.auto_schedule(estimates={"N": 4, "M": 4, "K": 4})
    assert not any(isinstance(c, cmd.CopyAt) for c in small.commands.items)


def test_a_contiguous_operand_is_copied_in_panels_where_it_pays() -> None:
    """``A`` needs no transpose, but the tile reads 24 of its rows per step of ``k``, each
    step a page away: at sizes where that costs, the search copies it in panels of the
    tile's rows, in the same order (``order=(0, 1), panel=P``: one contiguous run per
    tile), and without a block of the reduction (a panel is contiguous along all of it);
    the result is numpy's. Where a column is shorter than a page, no copy."""
    est = {"N": 800, "M": 900, "K": 1100}
    f = _atb("pab", transposed=False)
    chosen = f.auto_schedule(estimates=est)
    copies = [c for c in chosen.commands if isinstance(c, cmd.CopyAt)]
    assert copies and copies[0].src == "A" and copies[0].order == (0, 1), str(chosen)
    tile = next(c.factor for c in chosen.commands
                if isinstance(c, cmd.Split) and c.comp == "U" and c.dim == "i")
    assert copies[0].panel == tile and not any(
        isinstance(c, cmd.Split) and c.comp == "U" and c.dim == "k"
        for c in chosen.commands), str(chosen)
    rng = np.random.default_rng(4)
    a, b = rng.random((31, 45)), rng.random((27, 31))
    np.testing.assert_allclose(f.compile()(A=a, B=b)["C"], b @ a, rtol=1e-12)
    short = _atb("sab", transposed=False)
    short.auto_schedule(estimates={"N": 256, "M": 900, "K": 1100})
    assert not any(isinstance(c, cmd.CopyAt) and c.src == "A" and c.order == (0, 1)
                   for c in short.commands.items)


def test_a_packed_operand_stays_packed_when_tuned(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """Tuning times the packed statement's candidates reading the same copy, and the
    stored outcome gives the same schedule, copy included, on the next compile."""
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(9)
    a, b = rng.random((256, 192)), rng.random((160, 192))
    f = _atb("tatb")
    chosen = f.auto_schedule(tune=True, inputs={"A": a, "B": b}, budget=120)
    assert chosen.tuned and any(isinstance(c, cmd.CopyAt) for c in chosen.commands)
    np.testing.assert_allclose(f.compile()(A=a, B=b)["C"], b @ a.T, rtol=1e-12)
    g = _atb("tatb")
    again = g.auto_schedule(tune=True, inputs={"A": a, "B": b})
    assert again.from_cache
    assert [c.describe() for c in again.commands] == [c.describe() for c in chosen.commands]


def _bicg(name: str, dependent: bool = False, ordered: bool = True) -> me.Function:
    """bicg as written in a column-major language: ``s = A' r`` and ``q = A p`` updated in
    one loop nest, both reading ``A[i, j]`` (contiguous along ``i``); ``dependent``: the
    second reads the first's value (the partial sum) instead of ``p``; not ``ordered``: without the
    ordering (a schedule's replay gives it)."""
    with me.Function(name) as f:
        n, m = me.Param("N", min=1), me.Param("M", min=1)
        i, j = me.Var("i", 0, n), me.Var("j", 0, m)
        a = me.Input("A", [m, n], me.float64)
        p, r = me.Input("p", [m], me.float64), me.Input("r", [n], me.float64)
        s = me.Computation("s", [j], me.cast(me.float64, 0))
        q = me.Computation("q", [i], me.cast(me.float64, 0))
        su = s.update([i, j], r[i] * a[j, i], name="S", at=[j])
        qu = q.update([i, j], a[j, i] * (su[i, j] if dependent else p[j]), name="Q", at=[i])
        if ordered:
            q.after(s, me.ROOT)
            su.after(q, me.ROOT)
            qu.after(su, j)
    return f


def test_statements_reading_one_operand_keep_one_loop_nest(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """bicg's two updates read ``A`` alike: on one core (on more, the two nests' own
    parallel loops win: no loop is free of both sums) the search keeps them in one loop
    nest with one plan (one pass over ``A`` where two loop nests read it twice), says so,
    and the result, and its replay from ``.python()``, is numpy's. Where the second reads
    what the first writes, each gets a nest of its own."""
    monkeypatch.setenv("MIDDLEEND_NUM_THREADS", "1")
    est = {"N": 2000, "M": 2400}
    f = _bicg("fbicg")
    chosen = f.auto_schedule(estimates=est)
    assert "S, Q: one loop nest, one plan" in str(chosen), str(chosen)
    after = next(c for c in chosen.commands if isinstance(c, cmd.After) and c.comp == "Q")
    assert after.other == "S" and after.level != cmd.ROOT
    plans = {c.stmt: c.plan for c in chosen.choices}
    assert plans["S"] == plans["Q"] and plans["S"] is not None
    g = _bicg("fbicg", ordered=False)
    exec(chosen.python(), {"f": g, "me": me})  # noqa: S102 - the text under test
    rng = np.random.default_rng(3)
    a, p, r = rng.random((37, 45)), rng.random(37), rng.random(45)
    for fn in (f, g):
        out = fn.compile()(A=a, p=p, r=r)
        np.testing.assert_allclose(out["s"], a @ r, rtol=1e-12)
        np.testing.assert_allclose(out["q"], a.T @ p, rtol=1e-12)
    d = _bicg("dbicg", dependent=True)
    apart = d.auto_schedule(estimates=est)
    assert "one loop nest" not in str(apart)
    out = d.compile()(A=a, p=p, r=r)
    partial = np.cumsum(a * r, axis=1)  # S's value at (i, j): s[j] summed up to i
    np.testing.assert_allclose(out["q"], (a * partial).sum(axis=0), rtol=1e-12)


def _cycled(name: str) -> me.Function:
    """atax's ``y = A' tmp`` as 8 interleaved partial sums per column (``yq[j, i mod 8]``):
    the stored element cycles along the sum's loop ``i``."""
    with me.Function(name) as f:
        n, m = me.Param("N", min=1), me.Param("M", min=1)
        i, j, c = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("c", 0, 8)
        a, t = me.Input("A", [m, n], me.float64), me.Input("t", [n], me.float64)
        yq = me.Computation("yq", [j, c], me.cast(me.float64, 0))
        y = yq.update([i, j], a[j, i] * t[i], name="Y", at=[j, i % 8])
        y.after(yq, me.ROOT)
    return f


def test_a_sum_whose_element_cycles_gets_a_register_tile() -> None:
    """The summary sees ``i mod 8`` move inside an aligned 8-wide tile of ``i`` (where its
    stride, over the whole loop, is 0); the search then tiles ``i`` by the period as a
    register tile's contiguous rows (8 different sums), columns unrolled beside them,
    and the result, with tails, is numpy's."""
    from middleend.autosched.api import machine_model
    from middleend.driver.summary import summarize

    est = {"N": 1900, "M": 2100}
    f = _cycled("cyc")
    y = summarize(f, est, None, list(f.commands.items)).stmt("Y")
    assert y.reductions == {"i"} and y.period("i") == 8
    assert y.accesses[0].wrap(0) == (8, 1.0) and y.accesses[0].strides[0] == 0
    chosen = f.auto_schedule(estimates=est)
    plan = next(c.plan for c in chosen.choices if c.stmt == "Y")
    lanes = machine_model("cpu").lanes(8)
    if 8 % lanes == 0 and 8 // lanes <= 3:  # every AVX2 or AVX-512 machine
        assert plan is not None and plan.contiguous == "i" and plan.tile_of("i") == 8, \
            str(chosen)
    rng = np.random.default_rng(1)
    a, t = rng.random((37, 45)), rng.random(45)
    ref = np.stack([(a[:, r::8] * t[r::8]).sum(axis=1) for r in range(8)], axis=1)
    np.testing.assert_allclose(f.compile()(A=a, t=t)["yq"], ref, rtol=1e-12)


# ------------------------------------------------------------------------ tuning


def test_tuning_times_candidates_and_keeps_a_legal_one() -> None:
    mm = examples.matmul("tmm", 64)
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float32)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float32)
    chosen = mm.fn.auto_schedule(tune=True, inputs={"A": a, "B": b}, budget=60)
    assert chosen.tuned and chosen.measured and not chosen.from_cache
    np.testing.assert_array_equal(mm.fn.compile()(A=a, B=b)["C"], a @ b)
    # the same program again: the tuned plans from the store, nothing built or timed
    again = examples.matmul("tmm", 64)
    second = again.fn.auto_schedule(tune=True, inputs={"A": a, "B": b}, budget=60)
    assert second.from_cache and not second.measured
    assert second.python() == chosen.python()


# ------------------------------------------------------------------------ the switches


def test_compile_schedule_auto_reports_what_it_chose() -> None:
    mm = examples.matmul("smm")
    k = mm.fn.compile(schedule="auto", estimates={"N": 300, "K": 300, "M": 300})
    assert "f.computation(\"c1\")" in k.auto_schedule
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (21, 13)).astype(np.float32)
    b = rng.integers(-3, 4, (13, 17)).astype(np.float32)
    np.testing.assert_array_equal(k(A=a, B=b)["C"], a @ b)
    # the Python it reports rebuilds the same schedule on a fresh copy of the program
    fresh = examples.matmul("smm")
    exec(k.auto_schedule, {"f": fresh.fn, "me": me})  # noqa: S102  (our own output)
    np.testing.assert_array_equal(fresh.fn.compile()(A=a, B=b)["C"], a @ b)


@pytest.mark.parametrize("kwargs,msg", [
    ({"schedule": "fast"}, "schedule must be None or 'auto'"),
    ({"estimates": {"N": 5}}, "estimates and budget are for schedule='auto'"),
    ({"schedule": "auto", "estimates": {"Q": 5}}, "not a parameter"),
    ({"schedule": "auto", "budget": -1}, "budget must be a positive number"),
    ({"schedule": "auto", "estimates": {"N": "big"}}, "estimates map parameter names"),
])
def test_compile_schedule_mistakes(kwargs: dict[str, object], msg: str) -> None:
    mm = examples.matmul("emm")
    with pytest.raises(me.MiddleEndError, match=msg) as e:
        mm.fn.compile(**kwargs)
    assert "\n" not in str(e.value)


def test_auto_schedule_mistakes() -> None:
    mm = examples.matmul("umm")
    with pytest.raises(me.DefinitionError, match="times candidates on inputs="):
        mm.fn.auto_schedule(tune=True)
    with pytest.raises(me.DefinitionError, match="inputs= are for tune=True"):
        mm.fn.auto_schedule(inputs={"A": np.zeros((2, 2), np.float32)})
    with pytest.raises(me.DefinitionError, match="unknown parameters"):
        mm.fn.auto_schedule(estimates={"Z": 3})
    with pytest.raises(me.DefinitionError, match="budget must be a positive"):
        mm.fn.auto_schedule(budget=0)


def test_cli_auto_schedule(tmp_path: Path) -> None:
    prog = tmp_path / "heat.json"
    run = [sys.executable, "-m", "middleend"]
    subprocess.run(run + ["example", "heat2d", "-o", str(prog)], check=True, cwd=ROOT)
    out = tmp_path / "art"
    done = subprocess.run(run + ["compile", str(prog), "-o", str(out), "--auto-schedule",
                                 "--estimates", "N=256,M=256,T=4"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "# auto-schedule of 'heat'" in done.stdout + done.stderr
    assert (out / "auto_schedule.py").read_text().startswith("f.computation(")
    json.loads((out / "entry_point.json").read_text())
    bad = subprocess.run(run + ["check", str(prog), "--budget", "3"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert bad.stderr.strip() == ("middleend check: --estimates and --budget are for "
                                  "--auto-schedule")


# ----------------------------------- a sum's initializer and reader in its loops (around.py)


def _gemm_with(name: str, transposed: bool) -> me.Function:
    """``tmp = 0; tmp += A B``, memory-based, then either ``tmp *= 2`` in place (a reader
    of each element the sum wrote) or ``out = tmp'`` (a reader of other tiles' sums):
    three loop nests at the root, as a Julia function's loops come."""
    n = 160
    with me.Function(name) as f:
        a, b = me.Input("A", [n, n], me.float64), me.Input("B", [n, n], me.float64)
        tmp = me.Buffer("tmp", [n, n], me.float64, kind="output")
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, n), me.Var("k", 0, n)
        z = me.Computation("Z", [i, j], 0.0)
        u = me.Computation("U", [i, j, k], tmp[i, j] + a[i, k] * b[k, j])
        z.store_in(tmp, [i, j])
        u.store_in(tmp, [i, j])
        if transposed:
            out = me.Buffer("out", [n, n], me.float64, kind="output")
            w = me.Computation("W", [i, j], tmp[j, i])
            w.store_in(out, [i, j])
        else:
            w = me.Computation("W", [i, j], tmp[i, j] * 2.0)
            w.store_in(tmp, [i, j])
        u.after(z, me.ROOT)
        w.after(u, me.ROOT)
    return f


@pytest.mark.parametrize("transposed", [False, True], ids=["in_place", "transposed"])
def test_initializer_and_reader_move_into_the_sums_loops(transposed: bool) -> None:
    """The zeroing is computed per iteration of one of the sum's loops (the legality check
    refuses those inside the sum over ``k``, which would zero it again); the in-place
    scaling is ordered after the sum inside its outer loops, while the transposed read,
    which needs other tiles' sums, stays in a nest of its own (every fusion refused).
    numpy's values either way, and the report says what moved."""
    f = _gemm_with(f"around_{int(transposed)}", transposed)
    chosen = f.auto_schedule()
    at = [c for c in chosen.commands if isinstance(c, cmd.ComputeAt) and c.comp == "Z"]
    assert at and at[0].consumer == "U", str(chosen)
    assert at[0].level != "k" and not at[0].level.startswith("k_"), str(chosen)
    after = next(c for c in chosen.commands if isinstance(c, cmd.After) and c.comp == "W")
    assert (after.level == cmd.ROOT) == transposed, str(chosen)
    assert ("W: in U's loops" in str(chosen)) != transposed
    rng = np.random.default_rng(8)
    a, b = rng.random((160, 160)), rng.random((160, 160))
    tmp = np.full((160, 160), np.nan)
    k = f.compile()
    if transposed:
        out = np.full((160, 160), np.nan)
        k(A=a, B=b, tmp=tmp, out=out)
        np.testing.assert_allclose(out, (a @ b).T, rtol=1e-12)
    else:
        k(A=a, B=b, tmp=tmp)
        np.testing.assert_allclose(tmp, 2 * (a @ b), rtol=1e-12)
