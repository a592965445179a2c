"""Repeated ``realize`` calls (:mod:`frontends.halide.prepared`): a call that matches the
previous one (sizes, input shapes, strides and dtypes, Param values, ``out=`` shapes)
repeats it without re-checking what it decided; any difference takes the ordinary path.
Every call here is checked against Halide's own realize of the same inputs, under a few
schedules, and the counters say which path each call took, so the tests fail if the
repeated path is never taken or taken when it must not be. Every test runs twice: with the
repeated calls' checks made in C (:mod:`frontends.fastcall`, where it builds) and
with them made in Python (``MIDDLEEND_NO_FASTCALL=1``)."""

from __future__ import annotations

import os
from typing import Any

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

from frontends.fastcall import OFF_ENV, stub_type
from frontends.halide import HalideCheckError, compile_pipeline
from frontends.halide.pipeline import HalideKernel
from middleend.ir.errors import KernelArgumentError

SCHEDULES = ["default", "vectorized", "tiled"]


@pytest.fixture(autouse=True, params=["c", "python"])
def path(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which path repeated out= calls take: "c" needs the extension (it must build in CI,
    where the Python headers are installed), "python" turns it off."""
    if request.param == "python":
        monkeypatch.setenv(OFF_ENV, "1")
    else:
        monkeypatch.delenv(OFF_ENV, raising=False)
        stub, why = stub_type()
        if stub is None:
            if os.environ.get("CI"):
                pytest.fail(f"the fast-call extension must build in CI: {why}")
            pytest.skip(why)
    return str(request.param)


def _pipeline(schedule: str) -> tuple[list[hl.Func], hl.ImageParam, hl.Param, hl.Pipeline]:
    """Two outputs of a float image: a weighted 3-tap blur scaled by the Param ``w`` and a
    copy shifted by one, with a requirement on ``w``."""
    a = hl.ImageParam(hl.Float(32), 2, "rin")
    w = hl.Param(hl.Float(32), "rw")
    x, y = hl.Var("x"), hl.Var("y")
    clamped = hl.BoundaryConditions.repeat_edge(a)
    blur, shifted = hl.Func("rblur"), hl.Func("rshift")
    blur[x, y] = w * (clamped[x - 1, y] + 2 * clamped[x, y] + clamped[x + 1, y])
    shifted[x, y] = clamped[x + 1, y + 1]
    if schedule == "vectorized":
        blur.vectorize(x, 8).parallel(y)
        shifted.vectorize(x, 4)
    elif schedule == "tiled":
        xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")
        blur.tile(x, y, xo, yo, xi, yi, 16, 8).parallel(yo)
    pipe = hl.Pipeline([blur, shifted])
    pipe.add_requirement(w < 100, "w must stay below 100")
    return [blur, shifted], a, w, pipe


def _halide(a: hl.ImageParam, w: hl.Param, pipe: hl.Pipeline, img: np.ndarray,
            wv: float, sizes: list[int]) -> list[np.ndarray]:
    a.set(hl.Buffer(img))
    w.set(wv)
    return [np.asarray(b).copy() for b in pipe.realize(sizes)]


def _image(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return rng.standard_normal((rows, cols)).astype(np.float32)


@pytest.fixture(params=SCHEDULES)
def setup(request: Any) -> tuple[HalideKernel, hl.ImageParam, hl.Param, hl.Pipeline]:
    _, a, w, pipe = _pipeline(request.param)
    return compile_pipeline(pipe, fp_contract=False), a, w, pipe


def test_repeated_calls_see_new_data_params_and_sizes(setup: Any) -> None:
    """New data in the same arrays, new arrays, a new Param value, new sizes, allocating
    and out= calls, one after another: each result is Halide's. A call is prepared when
    it takes the build the call before it took, and the next calls that match one of the
    last few prepared ones repeat it: the counter says exactly which did."""
    k, a, w, pipe = setup
    rng = np.random.default_rng(0)
    img = _image(rng, 20, 37)
    outs = [np.empty((20, 37), np.float32), np.empty((20, 37), np.float32)]
    big = _image(rng, 31, 40)
    calls: list[tuple[str, np.ndarray, float, list[int], bool, bool]] = [
        # (what, image, w, sizes, out given, repeats a prepared call)
        ("first", img, 0.5, [37, 20], True, False),
        ("second: prepared", img, 0.5, [37, 20], True, False),
        ("same", img, 0.5, [37, 20], True, True),
        ("new data", img, 0.5, [37, 20], True, True),
        ("new array", _image(rng, 20, 37), 0.5, [37, 20], True, True),
        ("new w, same build: prepared", img, -3.25, [37, 20], True, False),
        ("again", img, -3.25, [37, 20], True, True),
        ("allocating: prepared", img, -3.25, [37, 20], False, False),
        ("allocating again", img, -3.25, [37, 20], False, True),
        ("smaller sizes: a new build", img, -3.25, [30, 11], False, False),
        ("bigger input: a new build", big, -3.25, [30, 11], False, False),
        ("bigger again: prepared", _image(rng, 31, 40), -3.25, [30, 11], False, False),
        ("bigger once more", big, -3.25, [30, 11], False, True),
        ("back to an earlier call", img, -3.25, [37, 20], True, True),
        ("and the first one", img, 0.5, [37, 20], True, True),
    ]
    for what, im, wv, sizes, given, repeats in calls:
        if what == "new data":
            im[...] = _image(rng, 20, 37)
        before = k.repeats
        for o in outs:
            o.fill(np.nan)
        got = k.realize(sizes, out=outs if given else None, rin=im, rw=wv)
        assert k.repeats == before + repeats, what
        if given:
            assert got[0] is outs[0] and got[1] is outs[1], what
        assert_same(got, _halide(a, w, pipe, im, wv, sizes))


def test_calls_that_never_repeat_prepare_nothing(setup: Any) -> None:
    """Sizes that change on every call: no call is prepared (each takes a build the one
    before it did not), none repeats, all are Halide's."""
    k, a, w, pipe = setup
    img = _image(np.random.default_rng(4), 24, 40)
    for n in range(6):
        sizes = [20 + n, 10 + n % 2 * 3 + n]
        assert_same(k.realize(sizes, rin=img, rw=1.5), _halide(a, w, pipe, img, 1.5, sizes))
    assert k.repeats == 0 and k._prepared == ()


def test_mistakes_after_a_repeated_call_are_refused_as_on_the_first(setup: Any) -> None:
    """After calls that took the repeated path, every mistake still gets the ordinary
    path's error: a wrong dtype or shape, a read-only or overlapping output, a misaligned
    input, a Param breaking the pipeline's requirement, a missing or unknown input."""
    k, *_ = setup
    img = _image(np.random.default_rng(1), 16, 24)
    outs = [np.empty((16, 24), np.float32), np.empty((16, 24), np.float32)]
    for _ in range(3):
        k.realize([24, 16], out=outs, rin=img, rw=1.0)
    assert k.repeats == 1
    with pytest.raises(KernelArgumentError, match="expected float32"):
        k.realize([24, 16], out=[outs[0], outs[1].astype(np.float64)], rin=img, rw=1.0)
    ro = outs[1].copy()
    ro.flags.writeable = False
    with pytest.raises(KernelArgumentError, match="read-only|writeable|writable"):
        k.realize([24, 16], out=[outs[0], ro], rin=img, rw=1.0)
    with pytest.raises(KernelArgumentError, match="contiguous"):
        k.realize([24, 16], out=[outs[0], np.asfortranarray(outs[1])], rin=img, rw=1.0)
    with pytest.raises(KernelArgumentError, match="overlap"):
        k.realize([24, 16], out=[outs[0], outs[0]], rin=img, rw=1.0)
    with pytest.raises(KernelArgumentError, match="overlap"):
        k.realize([24, 16], out=[outs[0], img], rin=img, rw=1.0)
    raw = np.zeros(img.size * 4 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(img.shape)
    assert not misaligned.flags.aligned
    with pytest.raises(KernelArgumentError, match="aligned"):
        k.realize([24, 16], out=outs, rin=misaligned, rw=1.0)
    with pytest.raises(HalideCheckError, match="w must stay below 100"):
        k.realize([24, 16], out=outs, rin=img, rw=250.0)
    with pytest.raises(KernelArgumentError, match="missing"):
        k.realize([24, 16], out=outs, rin=img)
    with pytest.raises(KernelArgumentError, match="unknown input"):
        k.realize([24, 16], out=outs, rin=img, rw=1.0, extra=2)


def test_other_argument_forms_take_the_ordinary_path(setup: Any) -> None:
    """A transposed (non-contiguous) input, an hl.Buffer input and a Param given as
    another type are all correct, a NaN Param is refused each time, and none of them is
    served by the repeated path of a call with a C-contiguous array and a Python float."""
    k, a, w, pipe = setup
    rng = np.random.default_rng(2)
    img = _image(rng, 18, 26)
    for _ in range(3):
        k.realize([26, 18], rin=img, rw=2.0)
    before = k.repeats
    assert before == 1
    t = np.ascontiguousarray(img.T).T  # the same values, Fortran order
    assert_same(k.realize([26, 18], rin=t, rw=2.0), _halide(a, w, pipe, img, 2.0, [26, 18]))
    assert_same(k.realize([26, 18], rin=hl.Buffer(img), rw=2.0),
                _halide(a, w, pipe, img, 2.0, [26, 18]))
    assert_same(k.realize([26, 18], rin=img, rw=np.float32(2.0)),
                _halide(a, w, pipe, img, 2.0, [26, 18]))
    assert_same(k.realize([26, 18], rin=img, rw=2), _halide(a, w, pipe, img, 2.0, [26, 18]))
    for _ in range(2):  # NaN < 100 is false: refused each time, as Halide refuses it
        with pytest.raises(HalideCheckError, match="w must stay below 100"):
            k.realize([26, 18], rin=img, rw=float("nan"))
    assert k.repeats == before


def test_threads_share_a_kernel() -> None:
    """Calls from several threads on one kernel, each with its own arrays and Param:
    every result is Halide's (a repeated call keeps nothing of a call's arrays)."""
    from concurrent.futures import ThreadPoolExecutor

    _, a, w, pipe = _pipeline("vectorized")
    k = compile_pipeline(pipe, fp_contract=False)
    rng = np.random.default_rng(3)
    jobs = [(_image(rng, 24, 32), float(i % 3)) for i in range(12)]
    refs = [_halide(a, w, pipe, im, wv, [32, 24]) for im, wv in jobs]

    def run(j: int) -> list[np.ndarray]:
        im, wv = jobs[j]
        outs = [np.empty((24, 32), np.float32), np.empty((24, 32), np.float32)]
        for _ in range(3):
            got = k.realize([32, 24], out=outs, rin=im, rw=wv)
        return [g.copy() for g in got]

    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(run, range(len(jobs))))
    for got, ref in zip(results, refs, strict=True):
        assert_same(got, ref)
    assert k.repeats > 0


def test_a_pipeline_with_one_output_returns_the_array() -> None:
    """One output: the repeated call returns the out= array itself, or a fresh one."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(32), 1, "r1in")
    f = hl.Func("r1")
    f[x] = a[x] * 3 + x
    k = compile_pipeline(f)
    v = np.arange(50, dtype=np.int32)
    out = np.empty(50, np.int32)
    for _ in range(4):
        assert k.realize(50, out=out, r1in=v) is out
    assert k.repeats == 2
    first, second = k.realize(50, r1in=v), k.realize(50, r1in=v)
    assert first is not second
    a.set(hl.Buffer(v))
    for got in (out, first, second):
        assert_same(got, halide_realize([f], [50], [(a, v)]))


@pytest.mark.parametrize("given", [False, True], ids=["allocating", "out"])
def test_a_param_of_the_other_zero_is_not_the_same_call(given: bool) -> None:
    """-0.0 == 0.0, but a pipeline dividing by the Param tells them apart (-inf, +inf):
    a call with the other zero is not a repeat of the prepared one, whether it allocates
    its output or is given one (the C checks' path)."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "zin")
    w = hl.Param(hl.Float(32), "zw")
    f = hl.Func("zdiv")
    f[x] = a[x] / w
    k = compile_pipeline(f)
    v = np.linspace(1, 2, 16, dtype=np.float32)
    out = np.empty(16, np.float32) if given else None
    for _ in range(3):
        k.realize(16, out=out, zin=v, zw=0.0)
    assert k.repeats == 1
    for zero in (-0.0, 0.0, -0.0):
        a.set(hl.Buffer(v))
        w.set(zero)
        want = np.asarray(hl.Pipeline(f).realize([16]))
        got = k.realize(16, out=out, zin=v, zw=zero)
        assert got is out or not given
        assert np.array_equal(got, want) and np.isinf(got).all(), (zero, got[:2], want[:2])
    assert k.repeats == 3  # the first -0.0 was prepared anew; then each zero repeated its own


def test_out_calls_take_the_path_chosen(path: str) -> None:
    """A prepared call with out= arrays gets the C check (a Stub) where the extension is
    on, and none where it is off; an allocating call never does (its outputs are made
    per call, in Python). Either way, the repeats are Halide's results."""
    _, a, w, pipe = _pipeline("vectorized")
    k = compile_pipeline(pipe, fp_contract=False)
    img = _image(np.random.default_rng(5), 12, 20)
    outs = [np.empty((12, 20), np.float32), np.empty((12, 20), np.float32)]
    for _ in range(3):
        got = k.realize([20, 12], out=outs, rin=img, rw=0.75)
    assert k.repeats == 1
    assert (k._prepared[0].stub is not None) == (path == "c")
    assert_same(got, _halide(a, w, pipe, img, 0.75, [20, 12]))
    for _ in range(3):
        got = k.realize([20, 12], rin=img, rw=0.75)
    assert k.repeats == 3 and k._prepared[0].stub is None  # prepared by the first
    assert_same(got, _halide(a, w, pipe, img, 0.75, [20, 12]))


def test_out_lists_and_tuples_return_what_the_first_call_did() -> None:
    """Outputs given as a tuple or a list: a repeated call returns a list of the very
    arrays given, as the first call does; a list of one output returns the array."""
    _, a, w, pipe = _pipeline("default")
    k = compile_pipeline(pipe, fp_contract=False)
    img = _image(np.random.default_rng(6), 9, 11)
    o1, o2 = np.empty((9, 11), np.float32), np.empty((9, 11), np.float32)
    for form in (tuple, list):
        got = [k.realize([11, 9], out=form([o1, o2]), rin=img, rw=1.25) for _ in range(3)]
        for g in got:
            assert type(g) is list and g[0] is o1 and g[1] is o2
    assert k.repeats == 4  # the tuple's third call and every list call (same form)
    assert_same([o1, o2], _halide(a, w, pipe, img, 1.25, [11, 9]))
    x = hl.Var("x")
    b = hl.ImageParam(hl.Int(32), 1, "lin")
    f = hl.Func("l1")
    f[x] = b[x] + 1
    k1 = compile_pipeline(f)
    v, out = np.arange(8, dtype=np.int32), np.empty(8, np.int32)
    for _ in range(3):
        assert k1.realize(8, out=[out], lin=v) is out
    assert k1.repeats == 1 and np.array_equal(out, v + 1)


def test_out_calls_with_another_input_layout_are_not_repeats(setup: Any) -> None:
    """A prepared out= call, then the same values in another layout (Fortran order, a
    strided view, another dtype's view): each result is Halide's, none is a repeat."""
    k, a, w, pipe = setup
    img = _image(np.random.default_rng(7), 14, 22)
    outs = [np.empty((14, 22), np.float32), np.empty((14, 22), np.float32)]
    for _ in range(3):
        k.realize([22, 14], out=outs, rin=img, rw=0.5)
    before = k.repeats
    assert before == 1
    want = _halide(a, w, pipe, img, 0.5, [22, 14])
    wide = np.zeros((14, 44), np.float32)
    wide[:, ::2] = img
    for other in (np.asfortranarray(img), wide[:, ::2]):
        assert other.shape == img.shape and other.strides != img.strides
        assert_same(k.realize([22, 14], out=outs, rin=other, rw=0.5), want)
    assert k.repeats == before
    assert_same(k.realize([22, 14], out=outs, rin=img, rw=0.5), want)
    assert k.repeats == before + 1
