"""Computations with nothing to compute once a front-end has specialized the program (a dead
branch on an Int argument, a zero-length array, an ``RDom(0, n)`` with ``n = 0``, a ``where``
that never holds, ``realize([0])``) compile and compute nothing, the others' values right:
against numpy (Julia) and Halide's own realize (Halide). Each of these was refused before
with "its iteration domain ... is empty for every parameter value allowed". A domain written
empty through the Python API is still refused in one line, unless the Function says it was
specialized (``allow_empty_domains``); then the commands on dropped computations mean what
middleend/passes/empty.py says."""

from __future__ import annotations

import logging

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

import middleend as me
from frontends.halide import compile_pipeline
from frontends.halide.errors import HalideCheckError, UnsupportedHalideFeature
from frontends.halide.reader import read_pipeline
from frontends.halide.translate import FuncInfo, Spec, Translator
from frontends.julia import compile_source
from middleend.wire import decode_request, encode_request

# ------------------------------------------------------------------------------- Julia

BRANCH = """
@acc function branch!(y::Vector{Float64}, x::Vector{Float64}, d::Int)
    n = length(x)
    for i in 1:n
        if d > 5
            y[i] = x[i] * 2.0
        else
            y[i] = x[i] + 1.0
        end
    end
end
"""


@pytest.mark.parametrize("d", [3, 9])
def test_julia_dead_branch_on_an_int_argument(d: int) -> None:
    """``if d > 5`` on an Int argument: the build for each d has one branch with no point."""
    x = np.arange(8.0)
    y = np.zeros(8)
    compile_source(BRANCH, "branch!")(y, x, d)
    np.testing.assert_array_equal(y, x * 2.0 if d > 5 else x + 1.0)


def test_julia_zero_length_arrays() -> None:
    """Loops over zero-length arrays: every statement is dropped, the kernel runs nothing
    and leaves the arguments as they are; a statement outside the loop still runs."""
    src = """
    @acc function scaled!(y::Vector{Float64}, x::Vector{Float64}, s::Vector{Float64})
        n = length(x)
        s[1] = 0.0
        for i in 1:n
            y[i] = x[i] * 2.0
            s[1] += x[i]
        end
    end
    """
    k = compile_source(src, "scaled!")
    y, x, s = np.zeros(0), np.zeros(0), np.full(1, 7.0)
    assert k(y, x, s) is None
    assert y.shape == (0,) and x.shape == (0,)
    np.testing.assert_array_equal(s, [0.0])  # numpy: sum of nothing
    y, x = np.zeros(5), np.arange(5.0)
    k(y, x, s)
    np.testing.assert_array_equal(y, x * 2.0)
    np.testing.assert_array_equal(s, [x.sum()])
    only = """
    @acc function copy!(y::Vector{Float64}, x::Vector{Float64})
        for i in 1:length(x)
            y[i] = x[i]
        end
    end
    """
    y = np.zeros(0)
    compile_source(only, "copy!")(y, np.zeros(0))
    assert y.shape == (0,)


def test_julia_condition_never_true_in_a_constant_loop() -> None:
    src = """
    @acc function never!(y::Vector{Float64}, x::Vector{Float64})
        for i in 1:8
            if i > 20
                y[i] = 0.0
            else
                y[i] = x[i] + 1.0
            end
        end
    end
    """
    x, y = np.arange(8.0), np.zeros(8)
    compile_source(src, "never!")(y, x)
    np.testing.assert_array_equal(y, x + 1.0)


@pytest.mark.parametrize("a, b", [(1, 5), (1, 2)])
def test_julia_sum_condition_on_int_arguments(a: int, b: int) -> None:
    """``if a + b == 3`` (the shape tree-sitter-julia misreads, repaired by tstree.py)."""
    src = """
    @acc function ab!(y::Vector{Float64}, x::Vector{Float64}, a::Int, b::Int)
        for i in 1:length(x)
            if a + b == 3
                y[i] = x[i]
            else
                y[i] = -x[i]
            end
        end
    end
    """
    x, y = np.arange(1.0, 9.0), np.zeros(8)
    compile_source(src, "ab!")(y, x, a, b)
    np.testing.assert_array_equal(y, x if a + b == 3 else -x)


def test_julia_directives_on_a_dead_statement() -> None:
    """Directives naming a statement of a dead branch (a split, an ``after`` fusing it
    with a live loop) are dropped with it; the live statement keeps its own."""
    src = """
    @acc function two!(y::Vector{Float64}, t::Vector{Float64}, x::Vector{Float64}, d::Int)
        n = length(x)
        @schedule begin
            split(Y, i, 4)
            split(T, i, 4)
            after(T, Y, i0)
        end
        for i in 1:n
            @name Y y[i] = x[i] * 2.0
        end
        for i in 1:n
            if d > 5
                @name T t[i] = x[i] + y[i]
            end
        end
    end
    """
    k = compile_source(src, "two!")
    for d in (3, 9):
        x, y, t = np.arange(10.0), np.zeros(10), np.full(10, -1.0)
        k(y, t, x, d)
        np.testing.assert_array_equal(y, x * 2.0)
        np.testing.assert_array_equal(t, x * 3.0 if d > 5 else np.full(10, -1.0))


# ------------------------------------------------------------------------------- Halide

def _check_halide(outs: list[hl.Func], sizes: list[int], inputs: list[tuple[object, object]],
                  target: str = "cpu", **kw: object) -> None:
    ref = halide_realize(outs, sizes, inputs)
    k = compile_pipeline(outs, target=target, **kw)
    got = k.realize(sizes, **{p.name(): v for p, v in inputs})  # type: ignore[attr-defined]
    assert_same(got, ref)


def _rdom_sum() -> tuple[hl.Func, hl.Param, hl.ImageParam]:
    x = hl.Var("x")
    n = hl.Param(hl.Int(32), "n")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    f = hl.Func("f")
    r = hl.RDom([(0, n)])
    f[x] = a[x]
    f[x] += a[r.x] * 2
    return f, n, a


@pytest.mark.parametrize("n", [0, 3])
def test_halide_rdom_of_extent_zero(n: int) -> None:
    f, p, a = _rdom_sum()
    _check_halide([f], [5], [(p, n), (a, np.arange(8, dtype=np.float32))])


def test_halide_rdom_of_extent_zero_scheduled() -> None:
    """The empty update's schedule (parallel, vectorized) is dropped with it."""
    f, p, a = _rdom_sum()
    f.vectorize(hl.Var("x"), 4)
    f.update().parallel(hl.Var("x"))
    _check_halide([f], [8], [(p, 0), (a, np.arange(8, dtype=np.float32))])


def test_halide_where_never_true() -> None:
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    g = hl.Func("g")
    r = hl.RDom([(0, 4)])
    r.where(r.x > 10)
    g[x] = a[x]
    g[x] += a[r.x]
    _check_halide([g], [5], [(a, np.arange(8, dtype=np.float32))])


@pytest.mark.parametrize("sizes", [[0], [3, 0], [0, 4]])
def test_halide_realize_an_empty_region(sizes: list[int]) -> None:
    """``realize([0])``: arrays of Halide's shapes and types, nothing built; ``out=``
    arrays of no element are returned as they are."""
    vs = [hl.Var(n) for n in "xy"[:len(sizes)]]
    a = hl.ImageParam(hl.Float(32), len(sizes), "a")
    h = hl.Func("h")
    h[vs] = a[vs] + 1
    t = hl.Func("t")  # a Tuple output, of two types
    t[vs] = (hl.i32(sum(vs, hl.Expr(0))), a[vs] * 2)
    img = np.zeros((4,) * len(sizes), dtype=np.float32)
    _check_halide([h], sizes, [(a, img)])
    _check_halide([h, t], sizes, [(a, img)])
    k = compile_pipeline(h)
    out = np.empty(tuple(reversed(sizes)), dtype=np.float32)
    assert k.realize(sizes, out=out, a=img) is out
    assert k.compiles == 0
    with pytest.raises(me.KernelArgumentError, match="expected float32"):
        k.realize(sizes, out=out.astype(np.float64), a=img)


def _read_by_an_empty_update(schedule: str) -> tuple[hl.Func, hl.Param, hl.ImageParam]:
    """``f[x] += g[r.x]`` over ``RDom(0, n)``: with ``n = 0`` nothing reads ``g``."""
    x = hl.Var("x")
    n = hl.Param(hl.Int(32), "n")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    g, f = hl.Func("g"), hl.Func("f")
    r = hl.RDom([(0, n)])
    g[x] = a[x] * 2 + 1
    f[x] = a[x]
    f[x] += g[r.x]
    if schedule == "root":
        g.compute_root()
    elif schedule == "root_parallel":
        g.compute_root().parallel(x)
        f.update().parallel(x)
    elif schedule.startswith("bound"):  # Halide realizes the bound region all the same
        g.compute_root().bound(x, 0, 100 if schedule == "bound_beyond" else 6)
    elif schedule == "at_x":
        g.compute_at(f, x)
    elif schedule == "at_rx":
        g.compute_at(f, r.x)
    return f, n, a


@pytest.mark.parametrize("schedule", ["root", "root_parallel", "bound"])
def test_halide_producer_read_only_by_an_empty_update(schedule: str) -> None:
    """A compute_root producer whose only reader is an update with no point is realized
    over nothing (refused before as "a Func no stage reads"); the same kernel's n = 3
    build reads it."""
    f, n, a = _read_by_an_empty_update(schedule)
    img = np.arange(8, dtype=np.float32)
    _check_halide([f], [5], [(n, 0), (a, img)])
    _check_halide([f], [5], [(n, 3), (a, img)])


def test_halide_bound_of_a_producer_read_by_nothing_reads_its_inputs() -> None:
    """``bound(x, 0, 100)`` on that producer: Halide computes the bound region though
    nothing reads it, and so reads its input beyond the image given; both refuse."""
    f, n, a = _read_by_an_empty_update("bound_beyond")
    img = np.arange(8, dtype=np.float32)
    with pytest.raises(hl.HalideError, match="accessed at 99, which is beyond the max"):
        halide_realize([f], [5], [(n, 0), (a, img)])
    with pytest.raises(me.DefinitionError, match=r"reads input 'a' at \[0, 99\]"):
        compile_pipeline(f).realize([5], n=0, a=img)


@pytest.mark.parametrize("schedule", ["at_x", "at_rx"])
def test_halide_producer_computed_at_an_empty_update(schedule: str) -> None:
    """A producer compute_at a loop of an update with no point: realized over nothing."""
    f, n, a = _read_by_an_empty_update(schedule)
    img = np.arange(8, dtype=np.float32)
    _check_halide([f], [5], [(n, 0), (a, img)])
    _check_halide([f], [5], [(n, 2), (a, img)])


def test_halide_producer_computed_at_a_tiled_empty_update() -> None:
    """2-D: a producer compute_at the outer tile loop of an empty update, read at two
    places there (two boxes, each empty)."""
    x, y, xo, yo, xi, yi = (hl.Var(v) for v in ("x", "y", "xo", "yo", "xi", "yi"))
    n = hl.Param(hl.Int(32), "n")
    b = hl.ImageParam(hl.Float(32), 2, "b")
    g, f = hl.Func("g"), hl.Func("f")
    r = hl.RDom([(0, n)])
    g[x, y] = b[x, y] * 2
    f[x, y] = b[x, y]
    f[x, y] += g[r.x, y] + g[x, r.x]
    f.update().tile(x, y, xo, yo, xi, yi, 2, 2)
    g.compute_at(f, xo)
    _check_halide([f], [4, 3], [(n, 0), (b, np.arange(30, dtype=np.float32).reshape(5, 6))])


def _histogram(over_image: bool, schedule: str) -> tuple[hl.Func, hl.ImageParam]:
    """``h[clamp(im[r.x], 0, 9)] += 1`` whose ``where`` never holds: ``im`` is read by
    nothing (directly, or through the wrapper ``RDom(im)`` makes of it)."""
    x = hl.Var("x")
    im = hl.ImageParam(hl.UInt(8), 1, "im")
    h = hl.Func("h")
    r = hl.RDom(im) if over_image else hl.RDom([(0, 20)])
    r.where(r.x > 100)
    h[x] = 0
    h[hl.clamp(hl.i32(im[r.x]), 0, 9)] += 1
    if schedule == "parallel":
        h.parallel(x)
    elif schedule == "vectorized":
        h.vectorize(x, 4)
    return h, im


@pytest.mark.parametrize("over_image", [False, True])
@pytest.mark.parametrize("schedule", ["none", "parallel", "vectorized"])
def test_halide_histogram_whose_where_never_holds(over_image: bool, schedule: str) -> None:
    """The input nobody reads is still an argument: passed (of any shape, 0 included),
    its type and dimensions checked (refused before with ``KeyError: 'im'``, or as "a
    Func no stage reads" for the wrapper). Halide refuses the wrong type when it is
    bound; the wrong dimensions wherever the input is an argument of its compiled
    pipeline, which its simplifier may make it not be (``where(r.x > 100)`` over
    ``[0, 20)`` is proved false; ``where(r.x > p)`` with a Param is not): here always,
    the declared dimensions."""
    h, im = _histogram(over_image, schedule)
    _check_halide([h], [10], [(im, (np.arange(20) % 13).astype(np.uint8))])
    _check_halide([h], [10], [(im, np.zeros(0, dtype=np.uint8))])
    k = compile_pipeline(h)
    with pytest.raises(HalideCheckError, match="'im' has type uint8, got an array of float32"):
        k.realize([10], im=np.zeros(20, dtype=np.float32))
    with pytest.raises(HalideCheckError, match="'im' has 1 dimension"):
        k.realize([10], im=np.zeros((2, 20), dtype=np.uint8))
    with pytest.raises(hl.HalideError, match="Can't bind ImageParam im of type uint8"):
        im.set(hl.Buffer(np.zeros(20, dtype=np.float32)))


def test_halide_a_func_no_stage_reads_is_still_refused() -> None:
    """The empty region is for a Func that a stage with no point reads; one that bounds
    inference saw no stage read at all (an invariant broken, here by hand) is refused in
    one line as before."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    f, u = hl.Func("f"), hl.Func("u")
    f[x] = a[x] + 1
    u[x] = a[x] * 2
    hp = read_pipeline(hl.serialize_pipeline(hl.Pipeline([f, u]), get_params=True)[0])
    names = [f.name(), u.name()]
    tr = Translator(hp, names[:1], Spec((5,), (("a", (8,)),), ()))
    tr.order.insert(0, names[1])  # in the order, read by no stage
    tr.info[names[1]] = FuncInfo(hp.func(names[1]))
    with pytest.raises(UnsupportedHalideFeature) as e:
        tr.infer_bounds()
    assert str(e.value) == f"unsupported Halide feature in Func {names[1]!r}: a Func no " \
        "stage reads"


def test_halide_rdom_of_extent_zero_on_the_gpu_target() -> None:
    """The gpu target (OpenCL on PoCL here) runs the specialized program too."""
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    f, p, a = _rdom_sum()
    _check_halide([f], [5], [(p, 0), (a, np.arange(8, dtype=np.float32))], target="gpu",
                  dialect="opencl")


# --------------------------------------------------------------------------- Python API

def test_an_empty_domain_written_by_hand_is_refused_in_one_line() -> None:
    with me.Function("oops") as f:
        n = me.Param("N", min=1)
        i = me.Var("i", n, 0)  # the bounds the wrong way round
        a = me.Input("a", [8], me.float64)
        me.Computation("S", [i], a[0] * 2.0)
    assert f.allow_empty_domains is False
    with pytest.raises(me.DefinitionError) as e:
        f.compile()
    msg = str(e.value)
    assert "\n" not in msg
    assert "computation 'S': its iteration domain" in msg
    assert "is empty for every parameter value allowed" in msg


def test_the_allowance_is_a_bool() -> None:
    with pytest.raises(me.DefinitionError, match="allow_empty_domains must be a bool"):
        me.Function("f", allow_empty_domains="yes")  # type: ignore[arg-type]


def _program() -> me.Function:
    """``d`` has no point; the commands on it and naming it must all be dropped."""
    with me.Function("spec", allow_empty_domains=True) as f:
        i, e = me.Var("i", 0, 8), me.Var("i", 0, 0)
        a = me.Input("a", [8], me.float64)
        p = me.Computation("p", [i], a[i] * 3.0)  # computed at d: then at its own place
        s0 = me.Computation("s0", [i], a[i] * 2.0)
        d = me.Computation("d", [e], a[e] + 1.0)
        s2 = me.Computation("s2", [i], s0[i] + p[i])
        d.split("i", 4, "i0", "i1")
        d.vectorize("i1", 4)
        d.parallelize("i0")
        d.unroll("i1")
        d.after(s0, "i")
        s2.after(d, me.ROOT)
        s0.then(d, "i")
        p.compute_at(d, "i")
        p.allocate_at(d, "i")
        s0.split("i", 4, "i0", "i1")
        s2.after(s0, "i")
    return f


def test_commands_on_a_dropped_computation(caplog: pytest.LogCaptureFixture) -> None:
    f = _program()
    with caplog.at_level(logging.DEBUG, logger="middleend.lower"):
        text = f.layers()
    assert any("dropped" in r.getMessage() and "d" in r.getMessage()
               for r in caplog.records)
    assert "(dropped: nothing to compute) { d[i] : false }" in text
    out = f.compile()(a=np.arange(8.0))
    np.testing.assert_array_equal(out["s2"], np.arange(8.0) * 5.0)
    assert out["d"].shape == (0,)  # an output of nothing: empty


def test_stores_and_reads_through_a_dropped_computation() -> None:
    """Its buffer stays: what another computation stores into it and reads back."""
    with me.Function("via", allow_empty_domains=True) as f:
        i, e = me.Var("i", 0, 8), me.Var("i", 0, 0)
        a = me.Input("a", [8], me.float64)
        d = me.Computation("d", [e], a[e])
        u = me.Computation("u", [i], a[i] * 5.0)
        u.store_in(d, [i])
        me.Computation("v", [i], d.memory[i] + 1.0)
        d.storage_fold(0, 8)  # applied to its buffer through u
    out = f.compile()(a=np.arange(8.0))
    np.testing.assert_array_equal(out["v"], np.arange(8.0) * 5.0 + 1.0)


def test_update_chains_with_a_dropped_step() -> None:
    with me.Function("chain", allow_empty_domains=True) as f:
        i, e, r = me.Var("i", 0, 8), me.Var("r", 0, 0), me.Var("r", 0, 3)
        a = me.Input("a", [8], me.float64)
        c0 = me.Computation("c0", [i], a[i])
        c0.update([i, e], a[e] * 2.0).vectorize("i", 4)
        c0.update([i, r], a[r])
    x = np.arange(8.0)
    np.testing.assert_array_equal(f.compile()(a=x)["c0"], x + x[:3].sum())


def test_a_value_read_of_a_dropped_computation_is_refused() -> None:
    with me.Function("reads", allow_empty_domains=True) as f:
        i, e = me.Var("i", 0, 8), me.Var("i", 0, 0)
        a = me.Input("a", [8], me.float64)
        d = me.Computation("d", [e], a[e])
        me.Computation("u", [i], d[i] * 5.0)
    with pytest.raises(me.UnproducedReadError, match="reads the value of 'd'.* nothing "
                       "produces it"):
        f.compile()


def test_errors_name_the_command_as_written() -> None:
    """With dropped commands before it, a failing command keeps its index."""
    with me.Function("idx", allow_empty_domains=True) as f:
        i, e = me.Var("i", 0, 8), me.Var("i", 0, 0)
        a = me.Input("a", [8], me.float64)
        d = me.Computation("d", [e], a[e])
        u = me.Computation("u", [i], a[i] * 5.0)
        d.split("i", 4, "i0", "i1")
        u.split("zz", 4, "i0", "i1")
    with pytest.raises(me.ScheduleError, match="has no loop 'zz'") as err:
        f.compile()
    assert err.value.command_index == 1


def test_everything_dropped() -> None:
    with me.Function("none", allow_empty_domains=True) as f:
        i, j = me.Var("i", 0, 0), me.Var("j", 0, 3)
        a = me.Input("a", [8], me.float64)
        s0 = me.Computation("s0", [i, j], a[i] * 2.0)
        me.Computation("s1", [i], s0[i, 0] + 1.0)
        s0.split("j", 2, "j0", "j1")
    out = f.compile()(a=np.arange(8.0))
    assert out["s0"].shape == (0, 0) and out["s1"].shape == (0,)


def test_the_allowance_travels_on_the_wire() -> None:
    f = _program()
    fn, _ = me.Function.from_request(encode_request(f))
    assert fn.allow_empty_domains is True
    with me.Function("plain") as g:
        me.Computation("c", [me.Var("i", 0, 2)], 1.0)
    got, _ = decode_request(encode_request(g))
    assert got.allow_empty_domains is False
