"""The four-layer text, the generated source, the build cache, kernel argument checking,
target refusals, Layer I validation and expression semantics (integer division, wrap-around,
predicates, data-dependent accesses)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import middleend as me
from middleend.api import examples


def blur(schedule=None) -> me.Function:
    """The papers' blur (middleend.api.examples), optionally scheduled by ``schedule(bx, by)``."""
    b = examples.blur()
    if schedule is not None:
        with b.fn:  # a schedule may declare buffers, which needs the function's scope
            schedule(b.bx, b.by)
    return b.fn


def sections(text: str) -> dict[str, str]:
    """Split ``f.layers()`` into {"Layer I": body, ...} on its "== Layer X" headings."""
    out: dict[str, str] = {}
    for chunk in text.split("== ")[1:]:
        head, _, body = chunk.partition("\n")
        out[head.split(" (")[0].strip()] = body
    return out


def one_d(name: str, dtype, body, n_inputs: int = 1) -> me.Function:
    """out[i] = body(x[i], y[i]) over 0 <= i < N."""
    with me.Function(name) as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        ins = [me.Input(n, [N], dtype) for n in ("x", "y")[:n_inputs]]
        for out_name, expr in body(*(a[i] for a in ins)).items():
            me.Computation(out_name, [i], expr)
    return f


# ----------------------------------------------------------------- layers
def test_layers_have_the_four_headings_and_isl_domains():
    text = blur().layers()
    heads = [text.index(f"== Layer {n} ") for n in ("I", "II", "III", "IV")]
    assert heads == sorted(heads)
    s = sections(text)
    assert set(s) == {"Layer I", "Layer II", "Layer III", "Layer IV"}
    assert "bx[i, j, c]" in s["Layer I"] and "by[i, j, c]" in s["Layer I"]
    assert "[N, M] -> {" in s["Layer I"]
    assert "inp(" in s["Layer I"]  # the expression is shown too
    assert "bx[i, j, c] ->" in s["Layer II"] and "by[i, j, c] ->" in s["Layer II"]
    assert "buffer bx" in s["Layer III"] and "buffer by" in s["Layer III"]
    assert "bx[i, j, c] -> bx[i, j, c]" in s["Layer III"]


def test_layers_show_tags_in_layer_two():
    plain = sections(blur().layers())
    assert "parallel" not in plain["Layer II"] and "vector" not in plain["Layer II"]
    tagged = sections(blur(lambda bx, by: (by.parallelize("i"), bx.interchange("j", "c"),
                                           bx.vectorize("j", 8))).layers())
    by_line = next(ln for ln in tagged["Layer II"].splitlines() if "{ by[" in ln)
    bx_line = next(ln for ln in tagged["Layer II"].splitlines() if "{ bx[" in ln)
    assert "parallel" in by_line and "vector" not in by_line
    assert "vector" in bx_line and "parallel" not in bx_line


def test_layers_show_a_store_in_mapping():
    def sched(bx, by):
        N, M = bx.fn.params
        bx.store_in(me.Buffer("bxT", [3, M - 2, N], me.float32), [bx.vars[2], bx.vars[1],
                                                                 bx.vars[0]])

    s = sections(blur(sched).layers())
    assert "buffer bxT" in s["Layer III"]
    assert "bx[i, j, c] -> bxT[c, j, i]" in s["Layer III"]


# ----------------------------------------------------------------- generated source
def test_pragmas_follow_the_tags():
    plain = blur().compile().source
    assert "me_parallel_for(" not in plain and "omp simd" not in plain
    par = blur(lambda bx, by: by.parallelize("i")).compile().source
    assert "me_parallel_for(" in par and "omp simd" not in par
    vec = blur(lambda bx, by: (by.interchange("j", "c"), by.vectorize("j", 8))).compile().source
    assert "omp simd" in vec and "me_parallel_for(" not in vec


# ----------------------------------------------------------------- build cache
def _libraries() -> set[Path]:
    import os

    root = Path(os.environ["MIDDLEEND_CACHE_DIR"])
    return {p for p in root.rglob("*") if p.is_file() and p.suffix in (".so", ".dylib")}


def test_compiling_the_same_function_twice_reuses_the_library():
    k1 = blur().compile()
    before = _libraries()
    assert k1.library_path in before
    k2 = blur().compile()
    assert k2.cache_key == k1.cache_key
    assert k2.library_path == k1.library_path
    assert _libraries() == before, "the second compile built a new library"
    k3 = blur(lambda bx, by: by.parallelize("i")).compile()
    assert k3.cache_key != k1.cache_key


# ----------------------------------------------------------------- kernel arguments
@pytest.fixture
def blur_kernel():
    return blur().compile()  # cached after the first build


def test_kernel_rejects_wrong_dtype(blur_kernel):
    with pytest.raises(me.KernelArgumentError, match="inp") as ei:
        blur_kernel(inp=np.zeros((7, 6, 3), np.float64))
    assert "float32" in str(ei.value)
    assert isinstance(ei.value, TypeError)


def test_kernel_rejects_wrong_shape(blur_kernel):
    with pytest.raises(me.KernelArgumentError, match="inp"):
        blur_kernel(inp=np.zeros((7, 6, 4), np.float32))
    with pytest.raises(me.KernelArgumentError):  # contradicts the explicit N
        blur_kernel(inp=np.zeros((7, 6, 3), np.float32), N=8)


@pytest.mark.parametrize("make", [
    pytest.param(lambda: np.asfortranarray(np.zeros((7, 6, 3), np.float32)), id="fortran"),
    pytest.param(lambda: np.zeros((7, 12, 3), np.float32)[:, ::2], id="strided"),
])
def test_kernel_rejects_non_contiguous(blur_kernel, make):
    with pytest.raises(me.KernelArgumentError, match="contiguous"):
        blur_kernel(inp=make())


def test_kernel_rejects_missing_and_unknown_arguments(blur_kernel):
    with pytest.raises(me.KernelArgumentError):
        blur_kernel()
    with pytest.raises(me.KernelArgumentError, match="foo"):
        blur_kernel(inp=np.zeros((7, 6, 3), np.float32), foo=1)


def test_kernel_writes_into_a_passed_output(blur_kernel):
    a = np.ones((7, 6, 3), np.float32)
    out = np.zeros((5, 4, 3), np.float32)
    res = blur_kernel(inp=a, by=out)
    assert res["by"] is out
    np.testing.assert_allclose(out, 1.0, rtol=1e-6)


# ----------------------------------------------------------------- targets
@pytest.mark.parametrize("sched", [
    pytest.param(lambda bx, by: by.gpu("i", "j"), id="gpu"),
    pytest.param(lambda bx, by: by.tile_gpu("i", "j", 8, 8, "i0", "j0", "i1", "j1"),
                 id="tile_gpu"),
    pytest.param(lambda bx, by: by.distribute("i"), id="distribute"),
    pytest.param(lambda bx, by: by.pipeline("i"), id="pipeline"),
])
def test_non_cpu_tags_are_refused_on_cpu(sched):
    with pytest.raises(me.TargetError):
        blur(sched).compile(target="cpu")


# ----------------------------------------------------------------- Layer I validation
@pytest.mark.parametrize("name", ['a;system("x")', "for", "int", "me_x", "_x", "1a", "a b",
                                  "x" * 65])
def test_invalid_computation_names(name):
    with me.Function("f"):
        i = me.Var("i", 0, 4)
        with pytest.raises(me.DefinitionError):
            me.Computation(name, [i], 1.0)


def test_invalid_function_and_param_names():
    with pytest.raises(me.DefinitionError):
        me.Function("bad-name")
    with me.Function("ok"), pytest.raises(me.DefinitionError):
        me.Param("N;")


def test_layer_one_objects_need_an_enclosing_function():
    with pytest.raises(me.DefinitionError):
        me.Param("N")
    with pytest.raises(me.DefinitionError):
        me.Input("x", [4], me.float32)
    with pytest.raises(me.DefinitionError):
        me.Computation("c", [me.Var("i", 0, 4)], 1.0)
    with me.Function("f"):
        pass
    with pytest.raises(me.DefinitionError):  # the scope ended with the with block
        me.Param("N")


def test_function_scope_is_per_thread():
    seen: dict[str, object] = {}

    def other_thread() -> None:
        try:
            me.Param("Z")
            seen["result"] = "created"
        except me.DefinitionError as e:
            seen["result"] = e

    with me.Function("f") as f:
        me.Param("N")
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert isinstance(seen["result"], me.DefinitionError)
    assert [p.name for p in f.params] == ["N"]


def test_duplicate_names_are_refused():
    with me.Function("f"):
        me.Param("N")
        with pytest.raises(me.DefinitionError):
            me.Input("N", [4], me.float32)


# ----------------------------------------------------------------- expression semantics
def test_integer_division_and_modulo_are_floor_like_numpy():
    f = one_d("idiv", me.int32, lambda x, y: {
        "q": x / y, "fd": x // y, "m": x % y,
        "qc": x // 4, "mc": x % 4, "qn": x // -3, "mn": x % -3,
    }, n_inputs=2)
    x = np.array([-7, 7, -7, 7, -1, 0, -9, 9, -2147483647, 13], np.int32)
    y = np.array([2, -2, -2, 2, 3, 5, 3, -4, 7, -13], np.int32)
    r = f.compile()(x=x, y=y)
    want = {"q": x // y, "fd": x // y, "m": x % y, "qc": x // 4, "mc": x % 4,
            "qn": x // -3, "mn": x % -3}
    for name, expected in want.items():
        assert r[name].dtype == np.int32, name
        np.testing.assert_array_equal(r[name], expected, err_msg=name)


def test_uint8_wraps_around():
    f = one_d("u8", me.uint8, lambda x, y: {"s": x + y, "d": x - y, "p": x * y}, n_inputs=2)
    x = np.array([250, 3, 0, 128, 255, 17], np.uint8)
    y = np.array([10, 5, 1, 128, 255, 15], np.uint8)
    r = f.compile()(x=x, y=y)
    for name, expected in {"s": x + y, "d": x - y, "p": x * y}.items():
        assert r[name].dtype == np.uint8
        np.testing.assert_array_equal(r[name], expected, err_msg=name)


def test_non_affine_predicate_on_an_update_of_a_buffer(rng):
    with me.Function("pred") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        inp = me.Input("inp", [N], me.float32)
        init = me.Computation("init", [i], -1.0 * inp[i])
        upd = me.Computation("upd", [i], inp[i] * 2.0, predicate=inp[i] > 0)
        upd.store_in(init, [i])
    a = rng.uniform(-1, 1, 41).astype(np.float32)
    a[:3] = [0.0, 1.0, -1.0]
    r = f.compile()(inp=a)
    assert list(r) == ["init"]
    np.testing.assert_array_equal(r["init"], np.where(a > 0, a * np.float32(2), -a))


def gather_function() -> me.Function:
    with me.Function("gather") as f:
        N, L = me.Param("N"), me.Param("L")
        i = me.Var("i", 0, N)
        lut = me.Input("lut", [L], me.float32)
        idx = me.Input("idx", [N], me.int32)
        me.Computation("o", [i], lut[idx[i]] * 2.0)
    return f


def test_data_dependent_gather(rng):
    k = gather_function().compile()
    lut = rng.standard_normal(10).astype(np.float32)
    idx = rng.integers(0, 10, 23).astype(np.int32)
    idx[:2] = [0, 9]
    np.testing.assert_array_equal(k(lut=lut, idx=idx)["o"], lut[idx] * np.float32(2))


@pytest.mark.parametrize("bad", [10, -1, 2**31 - 1])
def test_data_dependent_gather_out_of_range_is_a_runtime_error(bad):
    k = gather_function().compile()
    lut = np.arange(10, dtype=np.float32)
    idx = np.array([1, bad, 2], np.int32)
    with pytest.raises(me.KernelRuntimeError):
        k(lut=lut, idx=idx)
    # the kernel is still usable afterwards
    np.testing.assert_array_equal(k(lut=lut, idx=np.array([3], np.int32))["o"], [6.0])


def test_clamped_non_affine_index(rng):
    with me.Function("clampidx") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        me.Computation("d", [i], x[me.clamp(i + 1, 0, N - 1)] - x[me.clamp(i - 1, 0, N - 1)])
    x = rng.standard_normal(17).astype(np.float32)
    want = x[np.minimum(np.arange(17) + 1, 16)] - x[np.maximum(np.arange(17) - 1, 0)]
    np.testing.assert_array_equal(f.compile()(x=x)["d"], want)
