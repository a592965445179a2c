"""The Halide front-end's contract around the pipelines (tests/test_halide_pipelines.py has
the pipelines themselves): builds are reused per specialization, unsupported constructs and
bad realizations raise errors that name the Func / input, and a pipeline compiled by a real
``middleend serve`` gives Halide's result too."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, check, halide_realize
from service_util import ServerProcess

import middleend as me
from frontends.halide import UnsupportedHalideFeature, compile_pipeline, paper
from middleend.ir.loopast import Stmt, walk_loops
from middleend.service.client import RemoteClient


def _blur(a: hl.ImageParam, name: str = "blur") -> hl.Func:
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func(name)
    f[x, y] = (a[x, y] + a[x + 1, y] + a[x + 2, y]) / 3
    return f


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


# ------------------------------------------------------------ builds are reused

def test_same_sizes_reuse_the_build(rng: np.random.Generator) -> None:
    """Realizing again with the same sizes only calls the kernel; a new size builds once."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = _blur(a)
    av = _f32(rng, 13, 31)
    k = compile_pipeline(f)
    for _ in range(3):
        assert_same(k.realize([29, 13], a=av), halide_realize([f], [29, 13], [(a, av)]))
    assert k.compiles == 1
    assert_same(k.realize([17, 9], a=av), halide_realize([f], [17, 9], [(a, av)]))
    assert k.compiles == 2
    k.realize([29, 13], a=av)
    k.realize(np.array([17, 9]), a=av)
    assert k.compiles == 2
    bigger = _f32(rng, 15, 31)  # a new input shape is a new specialization too
    assert_same(k.realize([29, 13], a=bigger), halide_realize([f], [29, 13], [(a, bigger)]))
    assert k.compiles == 3


# ------------------------------------------------------------ unsupported constructs

# Each builder takes the input and a blur Func and returns (output, the Func refused).
Build = Callable[[hl.ImageParam, hl.Func], tuple[hl.Func, hl.Func]]


def _atomic_tuple(a: hl.ImageParam, f: hl.Func) -> tuple[hl.Func, hl.Func]:
    x, y = f.args()
    r = hl.RDom([(0, 9)], "r")
    g = hl.Func("pair")
    g[x, y] = (hl.i32(0), f[x, y])  # argmax over a column: the index follows the value
    g[x, y] = (hl.select(g[x, y][1] < f[x, r], r, g[x, y][0]), hl.max(g[x, y][1], f[x, r]))
    g.update(0).atomic(True).parallel(r)
    return g, g


def _value(e: Callable[[hl.Expr], hl.Expr]) -> Build:
    """A Func whose value is ``e(i32(a[x, y] * 100))`` (the blur is not used)."""
    def build(a: hl.ImageParam, f: hl.Func) -> tuple[hl.Func, hl.Func]:
        x, y = f.args()
        g = hl.Func("value")
        g[x, y] = e(hl.i32(a[x, y] * 100))
        return g, g
    return build


_REFUSED: list[tuple[str, Build, str]] = [
    ("bfloat16", _value(lambda v: hl.f32(hl.cast(hl.BFloat(16), v))), "bfloat16"),
]


def test_atomic_tuple_over_a_parallel_rdom(rng: np.random.Generator) -> None:
    """Once refused: the value and its index change together, each instance one critical
    section (a lock), the RDom loop parallel; Halide's values."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    out, _ = _atomic_tuple(a, _blur(a))
    check(out, [17, 9], [(a, _f32(rng, 9, 19))])


@pytest.mark.parametrize(("build", "construct"), [r[1:] for r in _REFUSED],
                         ids=[r[0] for r in _REFUSED])
def test_unsupported_construct_names_func_and_construct(
        build: Build, construct: str, rng: np.random.Generator) -> None:
    """Refused instead of silently dropped (a dropped directive gives wrong code). The Func
    is named as Halide names it (``blur$1`` for the second Func called "blur")."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    out, culprit = build(a, _blur(a))
    with pytest.raises(UnsupportedHalideFeature) as info:
        compile_pipeline(out).realize([17, 9], a=_f32(rng, 9, 19))
    assert info.value.func == culprit.name()
    assert construct in info.value.construct and construct in str(info.value)
    assert repr(culprit.name()) in str(info.value)


def test_image_param_wrapper(rng: np.random.Generator) -> None:
    """``a.in_(g)`` wraps the ImageParam (a Func ``a_im``); that changes ``a`` for every
    later pipeline, so this test has an ImageParam of its own."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    g = _blur(a, "g")
    a.in_(g).compute_root()
    check(g, [17, 9], [(a, _f32(rng, 9, 19))])


def test_tuple_update_reading_an_updated_element(rng: np.random.Generator) -> None:
    """argmax as a select of Tuples: element 1 reads element 0's value from before the
    update (Halide evaluates both right-hand sides, then stores)."""
    y = hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    am = hl.Func("argmax")
    r = hl.RDom([(0, a.width())], "r")
    am[y] = (hl.f32(-1), 0)
    am[y] = hl.select(a[r.x, y] > am[y][0], hl.Tuple([a[r.x, y], r.x]), am[y])
    data = _f32(rng, 9, 19)
    k = check(am, [9], [(a, data)])
    np.testing.assert_array_equal(k.realize([9], a=data)[1], np.argmax(data, axis=1))


def _at_vector(g: hl.Func, b: hl.Func, schedule: str) -> None:
    x, y, xo, yo, xi, yi, xv = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi", "xv"))
    if schedule == "split8":
        g.split(x, xo, xi, 8).vectorize(xi)
        b.compute_at(g, xi)
    elif schedule == "tile_parallel4":  # a vector loop of 4 inside a parallel tile
        g.tile(x, y, xo, yo, xi, yi, 16, 4).split(xi, xi, xv, 4).vectorize(xv).parallel(yo)
        b.compute_at(g, xv)
    elif schedule == "updates4":  # the producer has an update; its consumer's rows parallel
        g.split(x, xo, xi, 4).vectorize(xi).parallel(y)
        b.compute_at(g, xi)
    elif schedule == "two_stages8":  # realized in both stages, each one vectorized
        g.split(x, xo, xi, 8).vectorize(xi)
        g.update(0).split(x, xo, xi, 4).vectorize(xi)
        b.compute_at(g, xi)
    else:  # the vector loop outermost: no loop around it
        g.split(x, xo, xi, 8).vectorize(xi).reorder(y, xo, xi)
        b.compute_at(g, xi)


@pytest.mark.parametrize("schedule", ["split8", "tile_parallel4", "updates4", "two_stages8",
                                      "outermost8"])
def test_compute_at_a_vectorized_loop(rng: np.random.Generator, schedule: str) -> None:
    """Halide computes a Func at a vector loop per vector, over the lanes' points; ours is
    computed at the loop just outside the vector loop (no buffer inside an OpenMP simd
    body), over the same points, its own loop along the lanes vectorized as wide (unless
    it has a schedule of its own): Halide's values, and no vector loop holds an
    allocation."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    b, g = hl.Func("prod"), hl.Func("cons")
    b[x, y] = a[x, y] + 1
    if schedule == "updates4":
        b[x, y] = b[x, y] * 2
    g[x, y] = b[x, y] * b[x + 1, y] + b[x, y + 1]
    if schedule == "two_stages8":
        g[x, y] += b[x + 2, y]
    _at_vector(g, b, schedule)
    av = _f32(rng, 18, 44)  # the update's vectors, rounded up, read past the output
    built = check(g, [37, 17], [(a, av)]).translate([37, 17], a=av)
    width = 4 if schedule.endswith("4") else 8
    pure = built.comps[b.name()][0][0].name
    nests = [fors for n, fors in walk_loops(built.fn.lower(outputs=built.outputs).program.body)
             if isinstance(n, Stmt) and n.comp == pure]
    # (ISL prints the lanes' extra point, x + 1 of the last lane, on its own)
    assert any(f.tag == "vector" and f.width == width for fors in nests for f in fors)


# ------------------------------------------------------------ other errors

def test_gpu_schedule_on_cpu_is_a_target_error(rng: np.random.Generator) -> None:
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = _blur(a)
    f.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    with pytest.raises(me.MiddleEndError, match="(?i)gpu") as info:
        compile_pipeline(f, target="cpu").realize([16, 8], a=_f32(rng, 8, 18))
    assert isinstance(info.value, me.TargetError)


def test_out_of_bounds_input_read(rng: np.random.Generator) -> None:
    """A blur without a boundary condition realized at the input's full size reads past it;
    Halide refuses too (at run time), we refuse when building."""
    a = hl.ImageParam(hl.Float(32), 2, "inp")
    with pytest.raises(me.DefinitionError, match="'inp'.*dimension 0"):
        compile_pipeline(_blur(a)).realize([19, 9], inp=_f32(rng, 9, 19))


def test_missing_and_unknown_inputs(rng: np.random.Generator) -> None:
    a = hl.ImageParam(hl.Float(32), 2, "a")
    s = hl.Param(hl.Float(32), "s")
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("scaled")
    f[x, y] = a[x, y] * s
    k = compile_pipeline(f)
    with pytest.raises(me.KernelArgumentError, match="'a'"):
        k.realize([4, 4], s=2.0)
    with pytest.raises(me.KernelArgumentError, match="'s'"):
        k.realize([4, 4], a=_f32(rng, 4, 4))
    with pytest.raises(me.KernelArgumentError, match="zzz"):
        k.realize([4, 4], a=_f32(rng, 4, 4), s=2.0, zzz=1)
    assert k.compiles == 0


# ------------------------------------------------------------ preallocated outputs

def _halide_into(outputs: list[hl.Func], inputs: list[tuple[Any, Any]],
                 dst: list[np.ndarray]) -> None:
    """Halide's ``Pipeline.realize(buffers)`` into numpy arrays (the reference of out=)."""
    for p, v in inputs:
        p.set(hl.Buffer(v) if isinstance(p, hl.ImageParam) else v)
    hl.Pipeline(outputs).realize([hl.Buffer(d) for d in dst])


@pytest.mark.parametrize("schedule", ["default", "parallel"])
def test_realize_into_preallocated_output(schedule: str, rng: np.random.Generator) -> None:
    """``realize(sizes, out=array)`` writes every point of the array given (NaN before),
    returns that very array, gives the allocating ``realize``'s values (Halide's
    ``realize(buffer)``'s within 1e-5), and reuses its build."""
    a = hl.ImageParam(hl.Float(32), 2, "a")
    f = _blur(a)
    if schedule == "parallel":
        f.parallel(f.args()[1]).vectorize(f.args()[0], 8)
    av = _f32(rng, 13, 31)
    ref = np.full((13, 29), np.nan, dtype=np.float32)
    _halide_into([f], [(a, av)], [ref])
    k = compile_pipeline(f)
    alloc = k.realize([29, 13], a=av)
    assert_same(alloc, [ref])
    dst = np.full((13, 29), np.nan, dtype=np.float32)
    for _ in range(2):  # the second call overwrites the first's values
        got = k.realize([29, 13], out=dst, a=av)
        assert got is dst
        np.testing.assert_array_equal(dst, alloc)
        dst[::2] = np.nan
    assert k.compiles == 1


@pytest.mark.parametrize("schedule", ["default", "expert"])
def test_realize_into_several_outputs(schedule: str, rng: np.random.Generator) -> None:
    """Two output Funcs (the paper's nb) and a Tuple output of two types: ``out`` is a
    list in the order realize returns, and the arrays returned are the ones given."""
    b = paper.nb(9, 21, schedule)
    (funcs, sizes), = b.groups
    dst = [np.full((3, 9, 21), np.nan, np.float32) for _ in range(2)]
    got = compile_pipeline(funcs).realize(sizes, out=dst, **b.inputs)
    assert isinstance(got, list) and len(got) == 2
    assert all(g is d for g, d in zip(got, dst, strict=True))
    assert_same(got, b.halide_realize())

    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    t = hl.Func("pair")
    t[x, y] = (a[x, y] * 2, hl.cast(hl.Int(16), x - 3 * y))
    if schedule == "expert":
        t.parallel(y).vectorize(x, 8)
    av = _f32(rng, 17, 29)
    ref = [np.zeros((17, 29), np.float32), np.zeros((17, 29), np.int16)]
    _halide_into([t], [(a, av)], ref)
    dst = [np.full((17, 29), np.nan, np.float32), np.full((17, 29), -1, np.int16)]
    got = compile_pipeline(t).realize([29, 17], out=tuple(dst), a=av)
    assert all(g is d for g, d in zip(got, dst, strict=True))
    assert_same(got, ref)


def test_realize_out_errors(rng: np.random.Generator) -> None:
    """Each bad ``out`` gives one KernelArgumentError naming the output (Func, Tuple
    element), before anything is compiled."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    t = hl.Func("pair")
    t[x, y] = (a[x, y] * 2, hl.cast(hl.Int(16), x))
    k = compile_pipeline(t)
    av = _f32(rng, 5, 7)

    def f32(*shape: int) -> np.ndarray:
        return np.zeros(shape, np.float32)

    i16 = np.zeros((5, 7), np.int16)
    p0, p1 = (re.escape(f"'{t.name()}[{k}]'") for k in (0, 1))  # "pair$2" if not the first
    bad: list[tuple[Any, str]] = [
        (f32(5, 7), rf"out= gives 1 array\(s\), the pipeline has 2 output\(s\) "
                    rf"\[{p0}, {p1}\]"),
        ([f32(5, 7), i16, i16], "gives 3 array"),
        ([f32(7, 5), i16], rf"output {p0} \(out\[0\]\): expected float32 with shape "
                           r"\(5, 7\) \(sizes \[7, 5\] reversed\), got float32 with shape "
                           r"\(7, 5\)"),
        ([f32(5, 7), np.zeros((5, 7), np.int32)], rf"{p1}.*expected int16.*got int32"),
        ([f32(5, 7), np.zeros((7, 5), np.int16).T], rf"{p1}.*C-contiguous"),
        ([f32(5, 14)[:, ::2], i16], rf"{p0}.*C-contiguous"),
        ([f32(5, 7), hl.Buffer(i16)], rf"{p1}.*got Buffer \(np.asarray"),
        ([f32(5, 7).tolist(), i16], rf"{p0}.*got list"),
    ]
    ro = f32(5, 7)
    ro.flags.writeable = False
    bad.append(([ro, i16], rf"{p0}.*read-only"))
    for out, match in bad:
        with pytest.raises(me.KernelArgumentError, match=match):
            k.realize([7, 5], out=out, a=av)
    assert k.compiles == 0
    # one output: the error names the Func; an array overlapping the input is refused too
    g = _blur(a, "single")
    kg = compile_pipeline(g)
    with pytest.raises(me.KernelArgumentError,
                       match=re.escape(f"output '{g.name()}': expected float32")):
        kg.realize([5, 5], out=np.zeros((5, 5), np.float64), a=av)
    big = _f32(rng, 5, 7)
    with pytest.raises(me.KernelArgumentError, match="overlap"):
        kg.realize([5, 5], out=big.reshape(-1)[:25].reshape(5, 5), a=big)


def test_input_named_out(rng: np.random.Generator) -> None:
    """An ImageParam named "out" would be shadowed by realize's out= keyword: realize says
    so and names realize_with, which takes the inputs as a dict."""
    a = hl.ImageParam(hl.Float(32), 2, "out")
    f = _blur(a, "from_out")
    av = _f32(rng, 5, 9)
    k = compile_pipeline(f)
    with pytest.raises(me.KernelArgumentError, match="input named 'out'.*realize_with"):
        k.realize([7, 5], out=av)
    dst = np.zeros((5, 7), np.float32)
    got = k.realize_with([7, 5], {"out": av}, out=dst)
    assert got is dst
    assert_same(got, halide_realize([f], [7, 5], [(a, av)]))
    assert_same(k.realize_with([7, 5], {"out": av}), [dst])


# ------------------------------------------------------------ the remote path

def test_compiled_by_a_server(server: ServerProcess, client: RemoteClient,
                              rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same front-end with ``service=`` a real ``middleend serve`` (a client, then a
    "host:port" string): Halide's values, and the compile did go to the server."""
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    a = hl.ImageParam(hl.Float(32), 3, "a")
    cl = hl.BoundaryConditions.repeat_edge(a)
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y, c] = (cl[x - 1, y, c] + cl[x, y, c] + cl[x + 1, y, c]) / 3
    by[x, y, c] = (bx[x, y - 1, c] + bx[x, y, c] + bx[x, y + 1, c]) / 3
    by.parallel(y).vectorize(x, 8)
    bx.compute_at(by, y).vectorize(x, 8)
    calls: list[str] = []
    real = client._call

    def spy(kind: str, req: Any) -> Any:
        calls.append(kind)
        return real(kind, req)

    monkeypatch.setattr(client, "_call", spy)
    inputs = [(a, _f32(rng, 3, 15, 27))]
    k = check(by, [27, 15, 3], inputs, service=client)
    assert k.compiles == 1 and calls.count("compile") == 1, calls
    check(by, [27, 15, 3], inputs, service=server.address)


def test_adding_zero_costs_nothing_and_keeps_halides_result() -> None:
    """``f32(0) + e`` (a convolution's first term) is ``e``, as Halide simplifies it: no
    extra addition in the kernel, and -0.0 stays -0.0 as in Halide's output."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    f = hl.Func("zplus")
    f[x] = hl.f32(0.0) + inp[x] * hl.f32(2.0)
    a = np.array([-0.0, 1.5, -2.0, 0.0], dtype=np.float32)
    k = compile_pipeline(f)
    ours = k.realize([4], inp=a)
    inp.set(hl.Buffer(a))
    ref = np.asarray(f.realize([4]))
    np.testing.assert_array_equal(ours, ref)
    assert np.signbit(ours[0]) == np.signbit(ref[0])
    _, kernel = k.build([4], inp=a)
    assert "0.0f +" not in kernel.source
