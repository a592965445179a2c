"""Pictures of the layers (f.plot, ``middleend plot``): what is drawn is checked against
arithmetic done here, independently of ISL (point sets, tile counts, dependence counts),
under several schedules, and in the SVG itself (one marker per point, one outline per
tile); mistakes are one clear line. The progress bar of ``middleend compile`` draws
nothing when stderr is not a terminal."""

from __future__ import annotations

import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import middleend as me
from middleend.api import cli
from middleend.api.plot_data import PlotError, axes_of
from middleend.api.progress import bar, wanted
from middleend.wire import encode_request

SVG = "{http://www.w3.org/2000/svg}"


def _square(n: int = 6) -> tuple[me.Function, me.Computation]:
    with me.Function("sq") as f:
        i, j = me.Var("i", 0, n), me.Var("j", 0, n)
        a = me.Input("A", [n, n], me.float32)
        c = me.Computation("c", [i, j], a[i, j] * 2)
    return f, c


def _heat1d() -> tuple[me.Function, me.Computation]:
    """h[t, i] over 1 <= t <= T, 1 <= i <= N - 2 reads h at t - 1, i - 1 .. i + 1."""
    with me.Function("heat1d") as f:
        T, N = me.Param("T"), me.Param("N")
        s, ii = me.Var("s", 0, 2), me.Var("i", 0, N)
        t, i = me.Var("t", 1, T + 1), me.Var("i", 1, N - 1)
        inp = me.Input("inp", [N], me.float32)
        buf = me.Buffer("buf", [2, N], me.float32, kind=me.OUTPUT)
        init = me.Computation("init", [s, ii], inp[ii])
        init.store_in(buf, [s, ii])
        h = me.Computation("h", [t, i], dtype=me.float32)
        h.set_expression((h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3)
        h.store_in(buf, [t % 2, i])
    return f, h


def _heat_domain(T: int, N: int) -> list[tuple[int, int]]:
    return [(t, i) for t in range(1, T + 1) for i in range(1, N - 1)]


def _heat_deps(T: int, N: int) -> set[tuple[tuple[int, int], tuple[int, int]]]:
    """(source, sink) pairs between h's own instances, by hand."""
    dom = set(_heat_domain(T, N))
    return {((t - 1, i + d), (t, i)) for t, i in dom for d in (-1, 0, 1)
            if (t - 1, i + d) in dom}


def _svg_counts(path: Path) -> dict[str, int]:
    """Markers per ``points-*`` group and the outlines of the ``tiles-*`` groups."""
    out: dict[str, int] = {"tiles": 0}
    for g in ET.parse(path).getroot().iter(f"{SVG}g"):
        gid = g.get("id", "")
        if gid.startswith("points-"):
            out[gid] = len(list(g.iter(f"{SVG}use")))
        elif gid.startswith("tiles-"):
            out["tiles"] += len(list(g.iter(f"{SVG}path")))
    return out


def test_square_domain_identity_and_tiled(tmp_path: Path) -> None:
    f, c = _square(6)
    r = f.plot(tmp_path / "id.svg")
    assert r.points("c", "I") == r.points("c", "II") == 36
    assert r.tiles("c") == 0 and r.arrows("c") == 0
    assert set(r.panel("c", "I").points) == {(j, i) for i in range(6) for j in range(6)}
    c.tile("i", "j", 2, 2, "i0", "j0", "i1", "j1")
    c.parallelize("i0")
    c.vectorize("j1", 2)
    r = f.plot(tmp_path / "tiled.svg")
    p2 = r.panel("c", "II")
    assert r.points("c", "II") == 36 and r.tiles("c") == (6 // 2) * (6 // 2)
    # the recombined axes put every instance where it was: the tiles are 2x2 boxes
    assert set(p2.points) == {(j, i) for i in range(6) for j in range(6)}
    assert sorted(p2.tiles) == sorted((2 * b, 2 * b + 1, 2 * a, 2 * a + 1)
                                      for a in range(3) for b in range(3))
    assert "i0 parallel" in p2.ylabel and "j1_vi vector ×2" in p2.xlabel
    # the execution order visits a tile's points before the next tile's
    assert p2.order[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    svg = _svg_counts(tmp_path / "tiled.svg")
    assert svg["points-I-c"] == svg["points-II-c"] == 36 and svg["tiles"] == 9


def test_interchange_transposes_the_time_space(tmp_path: Path) -> None:
    f, c = _square(5)
    c.interchange("i", "j")
    r = f.plot(tmp_path / "x.png")
    p1, p2 = r.panel("c", "I"), r.panel("c", "II")
    assert (p1.xlabel, p1.ylabel, p2.xlabel, p2.ylabel) == ("j", "i", "i", "j")
    assert p2.order[:3] == [(0, 0), (1, 0), (2, 0)]  # i runs fastest now
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_triangle_and_parameters(tmp_path: Path) -> None:
    with me.Function("tri") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 0, i + 1)
        a = me.Input("A", [N, N], me.float32)
        me.Computation("L", [i, j], a[i, j])
    for n in (1, 4, 7):
        r = f.plot(tmp_path / f"t{n}.svg", params={"N": n})
        assert r.points("L") == n * (n + 1) // 2
        assert _svg_counts(tmp_path / f"t{n}.svg")["points-I-L"] == n * (n + 1) // 2


@pytest.mark.parametrize("schedule", ["none", "skew", "skew+tile"])
def test_stencil_dependences_under_schedules(tmp_path: Path, schedule: str) -> None:
    T, N = 4, 7
    f, h = _heat1d()
    if schedule != "none":
        h.skew("t", "i", 1, "t2", "i2")
    if schedule == "skew+tile":
        h.tile("t2", "i2", 2, 3, "t0", "i0", "t1", "i1")
    r = f.plot(tmp_path / "h.svg", params={"T": T, "N": N}, computations=["h"])
    deps = _heat_deps(T, N)
    assert {(a, b) for a, b in r.panel("h", "I").arrows} == {
        ((i0, t0), (i1, t1)) for (t0, i0), (t1, i1) in deps}
    assert r.arrows("h", "I") == r.arrows("h", "II") == len(deps)
    skewed = schedule != "none"
    place = {(t, i): (t + i if skewed else i, t) for t, i in _heat_domain(T, N)}
    assert set(r.panel("h", "II").points) == set(place.values())
    assert {(a, b) for a, b in r.panel("h", "II").arrows} == {
        (place[a], place[b]) for a, b in deps}
    tiles = {(t // 2, (t + i) // 3) for t, i in _heat_domain(T, N)}
    assert r.tiles("h") == (len(tiles) if schedule == "skew+tile" else 0)
    # the reads of h at t = 1 and at the borders come from init: counted, not drawn
    from_init = 3 * (N - 2) + 2 * (T - 1)
    assert f"+ {from_init} flow dependences from init" in " ".join(r.panel("h", "I").notes)


def test_split_axes_nest() -> None:
    axes = axes_of(["a", "io", "iio", "iii"], [("i", 8, "io", "ii", True),
                                               ("ii", 4, "iio", "iii", True)])
    assert [(a.name, a.loops, a.weights, a.tiles) for a in axes] == [
        ("a", ("a",), (1,), ()), ("i", ("io", "iio", "iii"), (8, 4, 1), ("io",))]


def test_mistakes_are_plot_errors(tmp_path: Path) -> None:
    f, _ = _heat1d()
    with pytest.raises(PlotError, match="missing N"):
        f.plot(tmp_path / "a.png", params={"T": 3})
    with pytest.raises(PlotError, match="no parameter 'K'"):
        f.plot(tmp_path / "a.png", params={"T": 3, "N": 5, "K": 1})
    with pytest.raises(PlotError, match="no computation 'g'.*init, h"):
        f.plot(tmp_path / "a.png", params={"T": 3, "N": 5}, computations=["g"])
    with pytest.raises(PlotError, match=r"\.svg or \.png"):
        f.plot(tmp_path / "a.jpg", params={"T": 3, "N": 5})
    with pytest.raises(PlotError, match="cannot draw dims"):
        f.plot(tmp_path / "a.png", params={"T": 3, "N": 5}, dims=["t", "q"])
    with pytest.raises(PlotError, match="more than the cap of 10"):
        f.plot(tmp_path / "a.png", params={"T": 3, "N": 8}, max_points=10)
    with pytest.raises(PlotError, match="too many points"):
        f.plot(tmp_path / "a.png", params={"T": 10**6, "N": 10**6})
    with pytest.raises(PlotError, match="'T' must be an int"):
        f.plot(tmp_path / "a.png", params={"T": 2.5, "N": 5})
    assert not (tmp_path / "a.png").exists()
    assert f.plot(tmp_path / "b.svg", params={"T": np.int64(2), "N": 5}).points("h") == 6


def _run(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 1
        return int(e.code or 0)


def test_cli_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f, _ = _heat1d()
    prog = tmp_path / "heat.json"
    prog.write_bytes(encode_request(f).SerializeToString())
    out = tmp_path / "heat.png"
    assert _run(["plot", str(prog), "-o", str(out), "--params", "T=3,N=6"]) == 0
    assert "h layer II: 12 points" in capsys.readouterr().out
    assert out.read_bytes()[:4] == b"\x89PNG"
    for argv, part in [
        (["plot", str(tmp_path / "nope.json"), "-o", str(out)], "No such file"),
        (["plot", str(prog), "-o", str(tmp_path / "x.gif"), "--params", "T=3,N=6"], ".svg"),
        (["plot", str(prog), "-o", str(out), "--params", "T=3"], "missing N (e.g. "),
        # the CLI's own way to give it, not only the Python keyword
        (["plot", str(prog), "-o", str(out), "--params", "T=3"], "--params N=8 on the "),
        (["plot", str(prog), "-o", str(out), "--params", "T=x"], "NAME=INT"),
        (["plot", str(prog), "-o", str(out), "--params", "T=3,N=6", "--max-points", "5"],
         "raise max_points (--max-points)"),
        (["plot", str(prog), "-o", str(out), "--params", "T=1000000,N=1000000"],
         "raise max_points (--max-points)"),
        (["plot", str(prog), "-o", str(out), "--params", "T=3,N=6", "--computations", "q"],
         "no computation 'q'"),
        (["plot", str(prog), "-o", str(tmp_path / "no" / "a.svg"), "--params", "T=3,N=6"],
         "No such file"),
    ]:
        rc = _run(argv)
        err = capsys.readouterr().err
        assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err, err
        assert part in err, err


def test_progress_bar_only_on_a_terminal(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    progs = []
    for n in (3, 4):
        f, _ = _square(n)
        progs.append(tmp_path / f"sq{n}.json")
        progs[-1].write_bytes(encode_request(f).SerializeToString())
    assert _run(["compile", *map(str, progs), "-o", str(tmp_path / "out")]) == 0
    cap = capsys.readouterr()
    assert cap.err == ""  # not a terminal: no bar, nothing else
    assert cap.out.count("wrote ") == 2
    assert (tmp_path / "out" / "sq3" / "entry_point.json").exists()
    assert (tmp_path / "out" / "sq4" / "entry_point.json").exists()
    missing = str(tmp_path / "gone.json")
    assert _run(["compile", str(progs[0]), missing, "-o", str(tmp_path / "out2")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{missing} (2 of 2" in err and "No such file" in err, err

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert not wanted(io.StringIO(), False) and wanted(Tty(), False)
    assert not wanted(Tty(), True)  # -q
    tty = Tty()
    with bar(2, tty, True) as b:
        b.start("first.json")
        b.advance()
    assert "first.json" in tty.getvalue() and "1/2" in tty.getvalue()
    silent = Tty()
    with bar(2, silent, False) as b:
        b.start("first.json")
    assert silent.getvalue() == ""


def test_scalar_and_one_dimensional_reduction(tmp_path: Path) -> None:
    """A scalar initialised, then summed into along i: one point, and N points chained by
    N - 1 flow dependences (each step reads the previous one)."""
    n = 5
    with me.Function("sum") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Input("A", [N], me.float32)
        s = me.Computation("s", [], 0.0)
        s.update([i], a[i])
    r = f.plot(tmp_path / "s.svg", params={"N": n})
    upd = next(p.comp for p in r.panels if p.comp != "s")
    assert r.points("s") == 1 and r.points(upd) == r.points(upd, "II") == n
    assert sorted(r.panel(upd, "I").arrows) == [((k, 0), (k + 1, 0)) for k in range(n - 1)]
    assert "+ 1 flow dependence from s" in " ".join(r.panel(upd, "I").notes)


@pytest.mark.parametrize("schedule", ["parallel i", "reverse t", "tile, parallel i0"])
def test_violated_dependences_are_marked(tmp_path: Path, schedule: str) -> None:
    """A dependence is broken when its source does not run first, or when the first loop
    that tells source and sink apart is parallel: worked out here per dependence."""
    T, N = 5, 9
    f, h = _heat1d()
    if schedule == "parallel i":
        h.parallelize("i")
    elif schedule == "reverse t":
        h.reverse("t")
    else:
        h.tile("t", "i", 2, 3, "t0", "i0", "t1", "i1")
        h.parallelize("i0")

    def broken(src: tuple[int, int], dst: tuple[int, int]) -> bool:
        if schedule == "parallel i":
            return False  # t carries every dependence
        if schedule == "reverse t":
            return True
        return src[0] // 2 == dst[0] // 2 and src[1] // 3 != dst[1] // 3

    r = f.plot(tmp_path / "v.png", params={"T": T, "N": N}, computations=["h"])
    want = {((i0, t0), (i1, t1)) for (t0, i0), (t1, i1) in _heat_deps(T, N)
            if broken((t0, i0), (t1, i1))}
    assert set(r.panel("h", "I").violated) == want
    assert r.violated("h", "II") == len(want)
    # and the legality check agrees: illegal exactly when some dependence is broken
    try:
        f.lower()
        legal = True
    except me.ScheduleError:
        legal = False
    assert legal == (not want)


def test_dims_and_loops_choose_the_projections(tmp_path: Path) -> None:
    """A 3-D domain drawn on (i, k) and on (j, k): the points are the distinct pairs; the
    Layer II panel follows the dims through a tile, or the loops named."""
    with me.Function("cube") as f:
        i, j, k = me.Var("i", 0, 4), me.Var("j", 0, 3), me.Var("k", 0, 5)
        a = me.Input("A", [4, 3, 5], me.float32)
        c = me.Computation("c", [i, j, k], a[i, j, k] + 1)
    c.tile("i", "j", 2, 2, "i0", "j0", "i1", "j1")
    r = f.plot(tmp_path / "a.svg", dims=["i", "k"])
    p1, p2 = r.panel("c", "I"), r.panel("c", "II")
    assert set(p1.points) == {(kk, ii) for ii in range(4) for kk in range(5)}
    assert p2.ylabel.startswith("i = 2·i0 + i1") and p2.xlabel == "k"
    assert set(p2.points) == set(p1.points) and r.tiles("c") == 2  # i0 in {0, 1}
    r = f.plot(tmp_path / "b.svg", loops=["j1", "k"])
    assert r.panel("c", "II").ylabel.startswith("j = 2·j0 + j1") and r.points("c", "II") == 15
    assert r.points("c", "I") == 3 * 5  # default dims: the two innermost, (j, k)
    with pytest.raises(PlotError, match="cannot draw loops"):
        f.plot(tmp_path / "c.svg", loops=["i0", "i1"])  # both in one axis


def test_a_larger_skewed_tiling_is_not_refused(tmp_path: Path) -> None:
    """1,440 instances whose (domain, time-space) pairs span a box of billions: the caps
    bound the points, not the product of the boxes."""
    T, N = 30, 50
    f, h = _heat1d()
    h.skew("t", "i", 1, "t2", "i2")
    h.tile("t2", "i2", 8, 8, "t0", "i0", "t1", "i1")
    r = f.plot(tmp_path / "big.svg", params={"T": T, "N": N}, computations=["h"])
    dom = _heat_domain(T, N)
    assert r.points("h", "II") == len(dom) == 1440
    assert r.tiles("h") == len({(t // 8, (t + i) // 8) for t, i in dom})
    assert r.arrows("h") == len(_heat_deps(T, N)) and r.violated("h") == 0


def test_isl_cap_is_one_clear_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Past the ISL operation bound, in the lowering or while the points are enumerated,
    ``f.plot`` and ``middleend plot`` say so in one line naming the bound and how to raise
    it (no islpy warning with a traceback from inside a callback); a cap large enough
    draws."""
    f, _ = _heat1d()
    prog = tmp_path / "heat.json"
    prog.write_bytes(encode_request(f).SerializeToString())
    out = tmp_path / "heat.svg"
    failed, cap = 0, 20_000
    while True:
        try:
            f.plot(out, params={"T": 3, "N": 6}, max_isl_ops=cap)
            break
        except me.ResourceLimitError as e:
            assert f"bound of {cap} operations" in str(e) and "max_isl_ops=N" in str(e)
            assert "--max-isl-ops" in str(e)
        failed += 1
        rc = _run(["plot", str(prog), "-o", str(out), "--params", "T=3,N=6",
                   "--max-isl-ops", str(cap)])
        err = capfd.readouterr().err
        assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err, err
        assert f"bound of {cap} operations" in err
        cap = cap * 3 // 2
    assert failed >= 3  # the sweep crossed the lowering and the pictures' enumeration
    assert _run(["plot", str(prog), "-o", str(out), "--params", "T=3,N=6",
                 "--max-isl-ops", str(cap)]) == 0
