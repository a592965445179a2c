"""The Halide reader against real pipelines: the translator trusts these names and shapes
(RVar and split names, loop levels, call kinds), so each is pinned to what Halide 21 writes."""

from __future__ import annotations

import multiprocessing
import random
import re
from collections.abc import Callable, Iterator

import halide as hl
import numpy as np
import pytest

from frontends.halide.errors import HalideFormatError
from frontends.halide.hir import HExpr, HFunc, HPipeline
from frontends.halide.reader import read_pipeline


def _read(*outputs: hl.Func) -> HPipeline:
    return read_pipeline(hl.serialize_pipeline(hl.Pipeline(list(outputs))))


def _fresh(builder: Callable[[], list[hl.Func]]) -> HPipeline:
    """Build and serialize in a fresh interpreter: Halide makes Func names unique per
    process (a second "by" is "by$1"), and these tests pin the names Halide writes."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        data = pool.apply(_serialize, (builder,))
    return read_pipeline(data)


def _serialize(builder: Callable[[], list[hl.Func]]) -> bytes:
    return hl.serialize_pipeline(hl.Pipeline(builder()))


def _nodes(e: HExpr) -> Iterator[HExpr]:
    """Every node of a tree, without recursion (the trees can be thousands deep)."""
    todo = [e]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(reversed(n.args))
        if n.rdom is not None:
            for rv in n.rdom.vars:
                todo += [rv.min, rv.extent]


def _find(e: HExpr, kind: str, name: str | None = None) -> list[HExpr]:
    return [n for n in _nodes(e) if n.kind == kind and (name is None or n.name == name)]


def _value(f: HFunc, stage: int = 0, i: int = 0) -> HExpr:
    d = f.init if stage == 0 else f.updates[stage - 1]
    assert d is not None
    return d.values[i]


# --- a scheduled two-stage blur --------------------------------------------------------


@pytest.fixture(scope="module")
def blur() -> HPipeline:
    return _fresh(_blur)


def _blur() -> list[hl.Func]:
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    x, y = hl.Var("x"), hl.Var("y")
    xo, xi, yo, yi, xii = (hl.Var(n) for n in ("xo", "xi", "yo", "yi", "xii"))
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    by.tile(x, y, xo, yo, xi, yi, 32, 16).split(xi, xi, xii, 8, hl.TailStrategy.GuardWithIf)
    by.reorder(xii, xi, yi, xo, yo).parallel(yo).vectorize(xii).unroll(yi)
    bx.compute_at(by, xo).store_root()
    return [by]


def test_blur_funcs_types_and_versions(blur: HPipeline) -> None:
    assert blur.serialization_version == "18.0.1"
    assert blur.halide_version.startswith("21.")
    assert blur.output_names == ("by",)
    # Alphabetical, not a call-graph order; the boundary condition adds two helper Funcs.
    assert blur.func_names_in_order == ("bx", "by", "inp_im", "lambda_0", "repeat_edge")
    assert [f.name for f in blur.funcs] == list(blur.func_names_in_order)
    assert blur.funcs_by_name["by"] is blur.func("by")
    by = blur.func("by")
    assert by.args == ("x", "y") and by.origin_name == "by"
    assert [str(t) for t in by.output_types] == ["float32"]
    assert by.init is not None and by.init.is_init and by.updates == ()
    pred = by.init.predicate  # always written: true when there is no where()
    assert pred is not None and (pred.kind, pred.value, str(pred.type)) == ("UIntImm", 1, "uint1")
    assert [a.name for a in by.init.args] == ["x", "y"]
    assert blur.requirements == () and not by.traced


def test_blur_image_param_and_boundary_condition(blur: HPipeline) -> None:
    (ext,) = blur.external_parameters
    assert (ext.name, ext.is_buffer, str(ext.type), ext.dimensions) == ("inp", True, "float32", 2)
    # Pipeline.parameters holds the output buffers of the Funcs, not the user's Params.
    assert {p.name for p in blur.parameters} == set(blur.func_names_in_order)
    read = _value(blur.func("inp_im"))
    assert (read.kind, read.call_type, read.name, read.param_name) == (
        "Call",
        "Image",
        "inp",
        "inp",
    )
    assert [a.name for a in read.args] == ["_0", "_1"] and read.func_index == -1
    edge = _value(blur.func("repeat_edge"))
    assert (edge.call_type, edge.name) == ("Halide", "lambda_0")
    # _0 clamped as max(min(likely(_0), inp.min.0 + inp.extent.0 - 1), inp.min.0)
    arg0 = edge.args[0]
    assert arg0.kind == "Max" and arg0.args[0].kind == "Min"
    likely = arg0.args[0].args[0]
    assert (likely.call_type, likely.name, likely.args[0].name) == (
        "PureIntrinsic",
        "likely",
        "_0",
    )
    meta = {v.name: v.param_name for v in _find(edge, "Variable") if v.param_name}
    assert meta == dict.fromkeys(["inp.min.0", "inp.extent.0", "inp.min.1", "inp.extent.1"], "inp")
    calls = _find(_value(blur.func("bx")), "Call")
    assert {(c.name, c.call_type, c.func_index) for c in calls} == {("repeat_edge", "Halide", 4)}


def test_blur_splits_and_dims(blur: HPipeline) -> None:
    by = blur.func("by")
    assert by.init is not None
    s = by.init.schedule
    got = [(p.split_type, p.old_var, p.outer, p.inner, p.factor.value, p.tail) for p in s.splits]
    assert got == [
        ("SplitVar", "x", "x.xo", "x.xi", 32, "ShiftInwards"),  # tile's default tail
        ("SplitVar", "y", "y.yo", "y.yi", 16, "ShiftInwards"),
        ("SplitVar", "x.xi", "x.xi.xi", "x.xi.xii", 8, "GuardWithIf"),
    ]
    assert s.splits[0].factor.kind == "IntImm" and not s.splits[0].exact
    assert [(d.var, d.for_type) for d in s.dims] == [
        ("x.xi.xii", "Vectorized"),
        ("x.xi.xi", "Serial"),
        ("y.yi", "Unrolled"),
        ("x.xo", "Serial"),
        ("y.yo", "Parallel"),
        ("__outermost", "Serial"),
    ]
    d = s.dims[0]
    assert (d.dim_type, d.device_api, d.partition_policy) == ("PureVar", "None", "Auto")
    assert s.touched and s.prefetches == 0 and s.rvars == ()
    bx = blur.func("bx")
    assert bx.init is not None and [d.var for d in bx.init.schedule.dims] == [
        "x",
        "y",
        "__outermost",
    ]


def test_blur_loop_levels(blur: HPipeline) -> None:
    sch = blur.func("bx").schedule
    c, st = sch.compute_level, sch.store_level
    assert (c.func_name, c.var_name, c.stage_index, c.is_rvar) == ("by", "xo", -1, False)
    assert st.is_root and st.func_name == "" and not st.is_inlined
    assert sch.hoist_storage_level.is_inlined
    by = blur.func("by").schedule  # the output: no directive, reads as inlined
    assert by.compute_level.is_inlined and by.store_level.is_inlined
    assert [d.var for d in by.storage_dims] == ["x", "y"] and by.memory_type == "Auto"


# --- reductions, tuples, params, intrinsics, constant buffers ---------------------------


@pytest.fixture(scope="module")
def mixed() -> HPipeline:
    return _fresh(_mixed)


def _mixed() -> list[hl.Func]:
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    k = hl.Param(hl.Float(32), "k")
    n = hl.Param(hl.Int(32), "n", 5)
    r = hl.RDom([(0, im.width()), (0, 10)], "r")
    r.where(r.x < r.y + n)
    hist = hl.Func("hist")
    hist[x] = 0
    hist[hl.cast(hl.Int(32), im[r.x, r.y])] += 1
    tup = hl.Func("tup")
    tup[x, y] = (x + y, hl.cast(hl.Float(32), x) * k)
    lut = hl.Buffer(np.arange(6, dtype=np.int16).reshape(2, 3), "lut")
    out = hl.Func("out")
    e = tup[x, y][1] * hl.f32(0.1) + hl.sqrt(hl.cast(hl.Float(32), tup[x, y][0]))
    e += hl.cast(hl.Float(32), lut[x % 3, y / 2]) + hl.select(x > 3, 1.5, 2.5)
    e += hl.cast(hl.Float(32), hl.saturating_cast(hl.UInt(8), hist[x] * 2))
    e += hl.cast(hl.Float(32), hl.clamp(x, 0, n)) + hl.abs(k) + hl.lerp(k, 2.0, 0.5)
    out[x, y] = e
    out.bound(x, 0, 64).reorder_storage(y, x)
    tup.compute_root()
    hist.compute_root()
    return [out]


def test_rdom_where_and_histogram(mixed: HPipeline) -> None:
    hist = mixed.func("hist")
    (upd,) = hist.updates
    assert not upd.is_init
    s = upd.schedule
    assert [(r.var, r.min.value) for r in s.rvars] == [("r$x", 0), ("r$y", 0)]
    ext_x, ext_y = (r.extent for r in s.rvars)
    assert (ext_x.kind, ext_x.name, ext_x.param_name) == ("Variable", "im.extent.0", "im")
    assert (ext_y.kind, ext_y.value) == ("IntImm", 10)
    assert [(d.var, d.dim_type) for d in s.dims] == [
        ("r$x", "ImpureRVar"),
        ("r$y", "ImpureRVar"),
        ("__outermost", "PureVar"),
    ]
    # The where() clause is the definition's predicate, and each RVar carries its RDom.
    assert upd.predicate is not None and upd.predicate.kind == "LT"
    rx = [v for v in _find(upd.args[0], "Variable") if v.name == "r$x"][0]
    assert rx.rdom is not None and [v.var for v in rx.rdom.vars] == ["r$x", "r$y"]
    assert rx.rdom.predicate is not None and rx.rdom.predicate.kind == "LT"
    names = {v.name: v.param_name for v in _find(upd.predicate, "Variable")}
    assert names == {"r$x": "", "r$y": "", "n": "n"}
    # hist[cast(im[r.x, r.y])]: the ImageParam is read through its wrapper Func im_im.
    (idx,) = upd.args
    assert idx.kind == "Cast" and str(idx.type) == "int32"
    read = idx.args[0]
    assert (read.call_type, read.name, str(read.type)) == ("Halide", "im_im", "uint8")
    value = upd.values[0]
    assert value.kind == "Add" and value.args[0].name == "hist" and value.args[1].value == 1


def test_tuple_func_and_value_index(mixed: HPipeline) -> None:
    tup = mixed.func("tup")
    assert [str(t) for t in tup.output_types] == ["int32", "float32"]
    assert tup.init is not None and len(tup.init.values) == 2
    assert tup.schedule.compute_level.is_root and tup.schedule.store_level.is_inlined
    calls = _find(_value(mixed.func("out")), "Call", "tup")
    assert sorted((c.value_index, str(c.type)) for c in calls) == [(0, "int32"), (1, "float32")]
    assert {p.name for p in mixed.parameters} >= {"tup.0", "tup.1"}


def test_params_casts_and_intrinsics(mixed: HPipeline) -> None:
    ext = {p.name: (p.is_buffer, str(p.type), p.dimensions) for p in mixed.external_parameters}
    assert ext == {"im": (True, "uint8", 2), "k": (False, "float32", 0), "n": (False, "int32", 0)}
    assert all(p.scalar_default is None for p in mixed.external_parameters)
    e = _value(mixed.func("out"))
    k = _find(e, "Variable", "k")[0]
    assert (k.param_name, str(k.type)) == ("k", "float32")
    tenth = [f for f in _find(e, "FloatImm") if 0 < f.value < 0.2]
    assert [f.value for f in tenth] == [float(np.float32(0.1))]  # exact, not 0.1
    sat = _find(e, "Call", "saturating_cast")[0]
    assert (sat.call_type, str(sat.type), sat.args[0].kind) == ("PureIntrinsic", "uint8", "Mul")
    sqrt = _find(e, "Call", "sqrt_f32")[0]
    assert (sqrt.call_type, str(sqrt.type)) == ("PureExtern", "float32")
    for name in ("abs", "lerp"):
        assert _find(e, "Call", name)[0].call_type == "PureIntrinsic"
    assert len(_find(e, "Call", "lerp")[0].args) == 3
    # clamp(x, 0, n) is max(min(x, n), 0): no intrinsic is left.
    clamps = [m for m in _find(e, "Max") if m.args[0].kind == "Min"]
    assert [c.args[0].args[1].name for c in clamps] == ["n"] and clamps[0].args[1].value == 0
    sel = _find(e, "Select")[0]
    assert [a.kind for a in sel.args] == ["GT", "FloatImm", "FloatImm"] and sel.type is None
    mod, div = _find(e, "Mod")[0], _find(e, "Div")[0]
    assert (mod.args[1].value, div.args[1].value) == (3, 2)


def test_constant_buffer(mixed: HPipeline) -> None:
    (buf,) = mixed.buffers
    assert (buf.name, str(buf.type)) == ("lut", "int16")
    # hl.Buffer(ndarray) reverses the numpy axes: dimension 0 is the last numpy axis.
    assert [(d.min, d.extent, d.stride) for d in buf.dims] == [(0, 3, 1), (0, 2, 3)]
    assert buf.data == np.arange(6, dtype="<i2").tobytes()
    read = _find(_value(mixed.func("out")), "Call", "lut")[0]
    assert (read.call_type, read.image_name, read.param_name) == ("Image", "lut", "")


def test_bound_and_reorder_storage(mixed: HPipeline) -> None:
    sch = mixed.func("out").schedule
    (b,) = sch.bounds
    assert (b.var, b.min.value, b.extent.value, b.modulus, b.remainder) == ("x", 0, 64, None, None)
    assert [(e.var, e.min.value, e.extent.value) for e in sch.estimates] == [("x", 0, 64)]
    assert [d.var for d in sch.storage_dims] == ["y", "x"]


# --- more schedule directives ------------------------------------------------------------


def test_other_schedule_directives() -> None:
    _check_other_directives(_fresh(_other_directives))


def _other_directives() -> list[hl.Func]:
    x, y, xy = hl.Var("x"), hl.Var("y"), hl.Var("xy")
    f, g, s, h = hl.Func("f"), hl.Func("g"), hl.Func("s"), hl.Func("h")
    p = hl.Param(hl.Int(32), "p", 3)
    f[x, y] = x + y
    r = hl.RDom([(0, 10), (0, 5)], "q")
    s[x] = 0
    s[x] += f[x, r.x] + r.y
    g[x, y] = s[x] * 2 + f[x, y]
    h[x, y] = g[x, y] + p
    f.compute_at(s, r.x).store_in(hl.MemoryType.Stack).fold_storage(y, 4)
    s.compute_at(hl.LoopLevel(g, y, 0)).hoist_storage_root()
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    s.update(0).split(r.x, ro, ri, 4).vectorize(x, 4).atomic()
    g.compute_root().align_bounds(x, 8, 1).specialize(p > 2)
    h.fuse(x, y, xy).parallel(xy, 4).trace_stores()
    h.prefetch(g, xy, xy, 2)
    f.in_(g)
    return [h]


def _check_other_directives(pl: HPipeline) -> None:

    fs = pl.func("f").schedule
    assert (fs.compute_level.func_name, fs.compute_level.var_name) == ("s", "q$x")
    assert fs.compute_level.is_rvar and fs.memory_type == "Stack"
    fold = fs.storage_dims[1]
    assert (fold.var, fold.fold_factor.value, fold.fold_forward) == ("y", 4, True)
    (wrapper,) = fs.wrappers  # (consumer, index of the wrapper Func in Pipeline.funcs)
    assert wrapper == ("g", pl.func_names_in_order.index("f_in_g$0"))
    assert pl.func("f_in_g$0").origin_name == ""
    assert _find(_value(pl.func("g")), "Call", "f")  # the wrapper is not applied in g

    ss = pl.func("s").schedule
    assert (ss.compute_level.func_name, ss.compute_level.stage_index) == ("g", 0)
    assert ss.hoist_storage_level.is_root
    upd = pl.func("s").updates[0].schedule
    assert upd.atomic
    rsplit, xsplit = upd.splits
    assert (rsplit.old_var, rsplit.outer, rsplit.inner, rsplit.tail, rsplit.exact) == (
        "q$x",
        "q$x.ro",
        "q$x.ri",
        "GuardWithIf",
        True,
    )
    # vectorize(x, 4) names its inner var from a process-wide counter; updates round up.
    assert xsplit.outer == "x.x" and re.fullmatch(r"x\.v\d+", xsplit.inner)
    assert xsplit.tail == "RoundUp"

    gs = pl.func("g")
    (b,) = gs.schedule.bounds
    assert (b.min, b.extent, b.modulus.value, b.remainder.kind) == (None, None, 8, "Mod")
    assert gs.init is not None
    (spec,) = gs.init.specializations  # a copy of the stage, with its own schedule
    cond = spec.condition
    assert (cond.kind, cond.args[0].name, cond.args[1].value) == ("GT", "p", 2)
    assert spec.failure_message == "" and spec.definition.values[0].kind == \
        gs.init.values[0].kind and not spec.definition.specializations

    hf = pl.func("h")
    assert hf.traced and hf.init is not None
    fuse, par = hf.init.schedule.splits
    assert (fuse.split_type, fuse.old_var, fuse.outer, fuse.inner) == ("FuseVars", "x.xy", "y", "x")
    assert par.old_var == "x.xy" and par.outer == "x.xy.xy"
    assert hf.init.schedule.prefetches == 1
    assert [d.for_type for d in hf.init.schedule.dims][-2:] == ["Parallel", "Serial"]


# --- errors and depth --------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_bytes() -> bytes:
    x = hl.Var("x")
    f = hl.Func("f")
    f[x] = x * 2 + hl.f32(0.5)
    return hl.serialize_pipeline(hl.Pipeline(f))


def test_other_serialization_version_is_refused(small_bytes: bytes) -> None:
    assert small_bytes.count(b"18.0.1") == 1
    bad = small_bytes.replace(b"18.0.1", b"99.0.1")
    with pytest.raises(HalideFormatError, match=r"'99\.0\.1'.*Halide '21\..*'18\.0\.1'"):
        read_pipeline(bad)


@pytest.mark.parametrize("cut", [0, 3, 8, 0.5, -4])
def test_truncated_bytes_are_refused(small_bytes: bytes, cut: float) -> None:
    # a negative cut counts from the end of the data, not of the zero padding after it: the
    # padding's length depends on the Func's unique name ("f$12" once a process has made
    # a dozen Funcs named f), and cutting only padding leaves a valid pipeline
    data_end = len(small_bytes.rstrip(b"\0"))
    n = int(len(small_bytes) * cut) if isinstance(cut, float) else \
        cut if cut >= 0 else data_end + cut
    with pytest.raises(HalideFormatError):
        read_pipeline(small_bytes[:n])


def test_garbage_is_refused() -> None:
    for junk in (b"", b"hello world, not a pipeline", bytes(range(256)) * 4, b"\xff" * 64):
        with pytest.raises(HalideFormatError, match="Halide pipeline"):
            read_pipeline(junk)


def test_corrupted_bytes_raise_only_format_errors(small_bytes: bytes) -> None:
    """Flipped bytes may still decode (a changed constant), but never crash otherwise."""
    rng = random.Random(7)
    for _ in range(300):
        data = bytearray(small_bytes)
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            read_pipeline(bytes(data))
        except HalideFormatError:
            pass


def test_deep_expression_reads_without_recursion() -> None:
    x = hl.Var("x")
    f = hl.Func("deep")
    e = hl.Expr(0)
    for i in range(3000):
        e = e + x * i
    f[x] = e
    # Not the literal "deep": Halide counts names in 2**14 hashed buckets, process-wide,
    # so an earlier, unrelated name in the same bucket makes this one "deep$1".
    node = _value(_read(f).func(f.name()))
    depth = 0
    while node.kind == "Add":
        assert node.args[1].kind == "Mul"
        node, depth = node.args[0], depth + 1
    assert depth == 3000 and (node.kind, node.value) == ("IntImm", 0)
