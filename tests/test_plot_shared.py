"""The shared time-space panel of a picture (``f.plot(..., together=True)``, ``middleend
plot --together``): a two-stage blur drawn at small sizes, where the points, the blocks
drawn apart, the recomputed instances and the arrows between the two computations are
worked out here by hand, under several schedules (root, compute_at at a tile and at a row,
an illegal order), and checked in the SVG; the CLI flag; mistakes as one line."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import middleend as me
from middleend.api import cli
from middleend.api.plot_data import PlotError
from middleend.api.plot_shared import SharedPanel
from middleend.wire import encode_request

SVG = "{http://www.w3.org/2000/svg}"
N, M = 6, 5  # by: rows 0..3, cols 0..2; bx: rows 0..5 (by reads rows i, i + 1, i + 2)

XY = tuple[int, int]


def _blur() -> tuple[me.Function, me.Computation, me.Computation]:
    with me.Function("blur2") as f:
        n, m = me.Param("N"), me.Param("M")
        i, j, c = me.Var("i", 0, n - 2), me.Var("j", 0, m - 2), me.Var("c", 0, 3)
        ii = me.Var("i", 0, n)
        inp = me.Input("inp", [n, m, 3], me.float32)
        bx = me.Computation("bx", [ii, j, c], (inp[ii, j, c] + inp[ii, j + 1, c]) / 2)
        by = me.Computation("by", [i, j, c],
                            (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
    return f, bx, by


def _by() -> list[XY]:
    """by's (i, j)."""
    return [(i, j) for i in range(N - 2) for j in range(M - 2)]


def _legal(f: me.Function) -> bool:
    try:
        f.lower()
    except me.ScheduleError:
        return False
    return True


def _shared_markers(path: Path) -> dict[str, int]:
    out = {}
    for g in ET.parse(path).getroot().iter(f"{SVG}g"):
        gid = g.get("id", "")
        if gid.startswith("points-shared-"):
            out[gid[len("points-shared-"):]] = len(list(g.iter(f"{SVG}use")))
    return out


def _plot(f: me.Function, path: Path) -> SharedPanel:
    r = f.plot(path, params={"N": N, "M": M}, dims=["i", "j"], together=True)
    assert r.shared is not None
    # by's own panel counts the 3 reads per instance of bx and points to the shared one
    assert f"+ {(N - 2) * (M - 2) * 3 * 3} flow dependences from bx (drawn in the shared " \
        "panel)" in r.panel("by", "I").notes
    return r.shared


@pytest.mark.parametrize("schedule", ["root", "root, by tiled", "bx after by"])
def test_separate_loop_nests(tmp_path: Path, schedule: str) -> None:
    """Without compute_at both computations are drawn on their own (i, j): by reads bx
    at rows i, i + 1, i + 2 of its column: 3 arrows per (i, j) of by."""
    f, bx, by = _blur()
    if schedule != "root":
        by.tile("i", "j", 2, 2, "i0", "j0", "i1", "j1")
    if schedule == "bx after by":
        bx.after(by, me.ROOT)
    sp = _plot(f, tmp_path / "b.svg")
    assert set(sp.points["bx"]) == {(j, i) for i in range(N) for j in range(M - 2)}
    assert set(sp.points["by"]) == {(j, i) for i, j in _by()}
    want = {((j, i + k), (j, i)) for i, j in _by() for k in range(3)}
    assert set(sp.arrows[("bx", "by")]) == want and sp.between("bx", "by") == 36
    assert sp.runs == {"bx": N * (M - 2) * 3, "by": 36} and not any(sp.again.values())
    assert not sp.apart and not sp.ticks
    assert len(sp.tiles) == (0 if schedule == "root" else 4)
    broken = schedule == "bx after by"  # by runs first: it reads nothing bx wrote
    assert set(sp.violated.get(("bx", "by"), [])) == (want if broken else set())
    assert _legal(f) == (not broken)
    assert ("order: by then bx" if broken else "order: bx then by") in sp.notes
    assert _shared_markers(tmp_path / "b.svg") == {"bx": 18, "by": 12}


def test_compute_at_a_tile_draws_the_tiles_apart(tmp_path: Path) -> None:
    """by in 2 x 2 tiles, bx computed per tile (loop j0): the tile of rows i0 needs bx's
    rows 2 i0 .. 2 i0 + 3, so rows 2 and 3 run in both tile rows. The blocks of i0 are
    drawn 3 rows apart (tile 0 ends at row 3, tile 1 starts at row 2: 3 - 2 + 2), those
    of j0 1 column apart (1 - 2 + 2)."""
    f, bx, by = _blur()
    by.tile("i", "j", 2, 2, "i0", "j0", "i1", "j1")
    bx.compute_at(by, "j0")
    sp = _plot(f, tmp_path / "t.svg")

    def at(i: int, j: int, i0: int) -> XY:
        return (j + j // 2, i + 3 * i0)

    runs = {(i, j, i0) for i0 in range(2) for i in range(2 * i0, 2 * i0 + 4)
            for j in range(M - 2)}
    assert sp.apart == {"y": "i0", "x": "j0"}
    assert set(sp.points["bx"]) == {at(*r) for r in runs} and len(runs) == 24
    assert set(sp.again["bx"]) == {at(i, j, 1) for i in (2, 3) for j in range(M - 2)}
    assert set(sp.points["by"]) == {at(i, j, i // 2) for i, j in _by()}
    assert sp.runs == {"bx": 24 * 3, "by": 36} and sp.domain["bx"] == N * (M - 2) * 3
    assert "bx: 72 instances run, 18 of them recomputations (computed at by)" in sp.notes
    assert set(sp.arrows[("bx", "by")]) == {
        (at(i + k, j, i // 2), at(i, j, i // 2)) for i, j in _by() for k in range(3)}
    assert not sp.violated and _legal(f)
    # one box per tile around by's and bx's instances there, named by the tile loops
    cols = {0: (0, 1), 1: (2, 2)}  # j0's columns of j (M - 2 = 3 columns)
    boxes = {f"i0={a} j0={b}": (at(0, cols[b][0], a)[0], at(0, cols[b][1], a)[0],
                                at(2 * a, 0, a)[1], at(2 * a + 3, 0, a)[1])
             for a in range(2) for b in range(2)}  # bx's rows 2 a .. 2 a + 3
    assert boxes["i0=1 j0=1"] == (3, 3, 5, 8)
    assert dict(zip(sp.tile_names, sp.tiles, strict=True)) == boxes
    # the tick labels give back the rows each drawn position stands for
    assert sp.ticks["y"] == [(i + 3 * i0, i) for i0 in range(2)
                             for i in range(2 * i0, 2 * i0 + 4)]
    assert _shared_markers(tmp_path / "t.svg") == {"bx": 24, "by": 12}


def test_compute_at_a_row_recomputes_two_thirds(tmp_path: Path) -> None:
    """bx computed at by's row loop i: each row of by computes the 3 rows of bx it reads,
    so every block holds 3 bx rows and 1 by row, drawn 3 apart; 4 x 3 x 3 bx positions."""
    f, bx, by = _blur()
    bx.compute_at(by, "i")
    sp = _plot(f, tmp_path / "r.png")
    assert sp.apart == {"y": "i"}
    assert set(sp.points["bx"]) == {(j, r + 3 * i) for i in range(N - 2)
                                    for r in range(i, i + 3) for j in range(M - 2)}
    assert sp.runs["bx"] == (N - 2) * 3 * (M - 2) * 3  # 108 runs of 54 instances
    assert set(sp.arrows[("bx", "by")]) == {((j, i + k + 3 * i), (j, 4 * i))
                                            for i, j in _by() for k in range(3)}
    assert not sp.violated and _legal(f)


def _run(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 1
        return int(e.code or 0)


def test_cli_together_and_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f, bx, by = _blur()
    by.tile("i", "j", 2, 2, "i0", "j0", "i1", "j1")
    bx.compute_at(by, "j0")
    prog = tmp_path / "blur.json"
    prog.write_bytes(encode_request(f).SerializeToString())
    out = tmp_path / "blur.svg"
    assert _run(["plot", str(prog), "-o", str(out), "--params", "N=6,M=5", "--dims", "i,j",
                 "--together"]) == 0
    text = capsys.readouterr().out
    assert "together: bx 24 points (72 instances run), by 12 points" in text
    assert "bx -> by: 36 dependence arrows" in text
    assert _shared_markers(out) == {"bx": 24, "by": 12}
    assert _run(["plot", str(prog), "-o", str(out), "--params", "N=6,M=5"]) == 0
    assert "together:" not in capsys.readouterr().out
    with me.Function("two") as g:
        s, t = me.Var("s", 0, 4), me.Var("t", 0, 4)
        a = me.Computation("a", [s], 1.0)
        me.Computation("b", [t], a[t] + 1)
    prog2 = tmp_path / "two.json"
    prog2.write_bytes(encode_request(g).SerializeToString())
    rc = _run(["plot", str(prog2), "-o", str(out), "--dims", "t", "--together"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "computation 'a': cannot draw dims ['t']" in err
    with pytest.raises(PlotError, match="no computation 'q'"):
        g.plot(tmp_path / "x.svg", computations=["q"], together=True)
    # one-dimensional computations: a line of points, with the arrows a[t] -> b[t]
    r = g.plot(tmp_path / "y.svg", together=True)
    assert r.shared is not None and r.shared.between("a", "b") == 4
    assert set(r.shared.arrows[("a", "b")]) == {((t, 0), (t, 0)) for t in range(4)}


@pytest.mark.parametrize("private", [False, True])
def test_storage_shared_by_parallel_tiles(tmp_path: Path, private: bool) -> None:
    """by's tile rows in parallel (i0), bx computed per tile: in one shared buffer, the
    tile row i0 = 1 writes bx's rows 2 and 3 again (output dependences from tile row 0's
    writes: 2 rows x 3 columns) after tile row 0 read them (anti dependences: by rows 0 and
    1 read row 2, by row 1 reads row 3: 3 per column). With bx allocated per tile, none:
    the schedule is then legal. The flow arrows are intact either way."""
    f, bx, by = _blur()
    by.tile("i", "j", 2, 2, "i0", "j0", "i1", "j1")
    bx.compute_at(by, "j0")
    by.parallelize("i0")
    if private:
        bx.allocate_at(by, "j0")
    sp = _plot(f, tmp_path / "p.svg")

    def at(i: int, j: int, i0: int) -> XY:
        return (j + j // 2, i + 3 * i0)

    cols = range(M - 2)
    output = {(at(r, j, 0), at(r, j, 1)) for r in (2, 3) for j in cols}
    anti = {(at(i, j, 0), at(r, j, 1)) for j in cols for i, r in ((0, 2), (1, 2), (1, 3))}
    want = {} if private else {("output", "bx", "bx"): output, ("anti", "by", "bx"): anti}
    assert {k: set(v) for k, v in sp.storage.items()} == want
    assert not sp.violated and sp.between("bx", "by") == 36
    assert _legal(f) == private
    assert private or "6 output dependence arrows carried by loop i0 (parallel): its " \
        "iterations share storage" in sp.notes



@pytest.mark.parametrize("order", ["a b c", "a c b", "c a b"])
def test_storage_broken_by_the_order(tmp_path: Path, order: str) -> None:
    """a and c write one output buffer, b reads a's values. Run c between a and b: b
    reads c's values (4 anti dependences b -> c broken, though a still runs before b);
    run c first: the buffer ends with a's values (4 output dependences a -> c broken).
    The flow arrows a -> b are intact in all three orders; the legality check agrees."""
    n = 4
    with me.Function("ov") as f:
        i = me.Var("i", 0, n)
        inp = me.Input("inp", [n], me.float32)
        buf = me.Buffer("buf", [n], me.float32, kind=me.OUTPUT)
        a = me.Computation("a", [i], inp[i] + 1)
        b = me.Computation("b", [i], a[i] * 2)
        c = me.Computation("c", [i], inp[i] * 3)
        a.store_in(buf, [i])
        c.store_in(buf, [i])
    comps = {"a": a, "b": b, "c": c}
    names = order.split()
    if order != "a b c":  # the declaration order needs no command
        for before, after in zip(names, names[1:], strict=False):
            comps[after].after(comps[before], me.ROOT)
    sp = _plot_1d(f, tmp_path / "o.svg")
    same = {((k, 0), (k, 0)) for k in range(n)}  # one dim: every instance on y = 0
    assert set(sp.arrows[("a", "b")]) == same and not sp.violated
    want = {"a b c": {}, "a c b": {("anti", "b", "c"): same},
            "c a b": {("output", "a", "c"): same}}[order]
    assert {k: set(v) for k, v in sp.storage.items()} == want
    assert _legal(f) == (not want)
    assert f"order: {order.replace(' ', ' then ')}" in sp.notes


def _plot_1d(f: me.Function, path: Path) -> SharedPanel:
    r = f.plot(path, together=True)
    assert r.shared is not None
    return r.shared


def test_too_many_storage_pairs_is_a_note(tmp_path: Path) -> None:
    """A 1-D stencil over T steps in a buffer folded modulo 2, its time loop in parallel:
    each element is written at every other step (C(12, 2) = 66 output pairs per element,
    4 elements per parity), and read before each later write (thousands of anti pairs,
    past the cap of 8 x max_points): those are a note, the rest is drawn."""
    T, n = 24, 6
    with me.Function("heat1d") as f:
        Tp, N = me.Param("T"), me.Param("N")
        s, ii = me.Var("s", 0, 2), me.Var("i", 0, N)
        t, i = me.Var("t", 1, Tp + 1), me.Var("i", 1, N - 1)
        inp = me.Input("inp", [N], me.float32)
        buf = me.Buffer("buf", [2, N], me.float32, kind=me.OUTPUT)
        init = me.Computation("init", [s, ii], inp[ii])
        init.store_in(buf, [s, ii])
        h = me.Computation("h", [t, i], dtype=me.float32)
        h.set_expression((h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3)
        h.store_in(buf, [t % 2, i])
    h.parallelize("t")
    r = f.plot(tmp_path / "h.svg", params={"T": T, "N": n}, max_points=100, together=True)
    sp = r.shared
    assert sp is not None
    rows = range(1, n - 1)
    assert set(sp.storage[("output", "h", "h")]) == {
        ((x, a), (x, b)) for x in rows for a in range(1, T + 1) for b in range(a + 2, T + 1, 2)}
    assert len(sp.storage[("output", "h", "h")]) == 66 * 2 * len(rows)
    assert "anti dependences carried by 't': too many to draw (more than 800 pairs)" \
        in sp.notes and ("anti", "h", "h") not in sp.storage
    own = {((x + d, a - 1), (x, a)) for a in range(2, T + 1) for x in rows for d in (-1, 0, 1)
           if x + d in rows}
    assert set(sp.violated[("h", "h")]) == own  # t carries every dependence h -> h
