"""Expression semantics end to end (Layer I -> C -> run) against numpy on small arrays:
arithmetic on every numeric type (wrap-around of narrow integers, floor division and
modulo), comparisons and logic into bool buffers, select/min/max/clamp, casts, intrinsics,
clamped and data-dependent accesses, iterators and parameters as values, 0-d buffers and a
float64 pipeline.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import middleend as me

N_ELEMS = 101


def _full_range(dt: np.dtype, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        return (rng.random(n) * 200 - 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)


# --------------------------------------------------------------------------- arithmetic

TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
         "float64"]


@pytest.mark.parametrize("tname", TYPES)
def test_arithmetic_matches_numpy(tname: str) -> None:
    mt, nt = getattr(me, tname), np.dtype(tname)
    with me.Function("arith") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Input("a", [N], mt)
        b = me.Input("b", [N], mt)
        x, y = a[i], b[i]
        exprs = {
            "add": x + y, "sub": x - y, "mul": x * y, "div": x / y, "fdiv": x // y,
            "mod": x % y, "vmin": me.min(x, y), "vmax": me.max(x, y), "neg": -x,
            "addlit": x + 3, "rsublit": 5 - x, "mullit": x * 3, "avg": (x + y) // 2,
            "poly": x * x - y * 7 + 1,
        }
        for name, e in exprs.items():
            me.Computation(f"o_{name}", [i], e)
    k = f.compile()
    A = _full_range(nt, N_ELEMS, 1)
    B = _full_range(nt, N_ELEMS, 2)
    B[B == 0] = 1
    if nt.kind == "i":
        B[B == -1] = 3  # MIN / -1 overflows differently everywhere
    res = k(a=A, b=B)
    c = nt.type
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns on the wrap-around we want
        refs = {
            "add": A + B, "sub": A - B, "mul": A * B,
            "div": A / B if nt.kind == "f" else A // B, "fdiv": A // B,
            "mod": A - np.floor(A / B) * B if nt.kind == "f" else np.mod(A, B),
            "vmin": np.minimum(A, B), "vmax": np.maximum(A, B), "neg": -A,
            "addlit": A + c(3), "rsublit": c(5) - A, "mullit": A * c(3),
            "avg": (A + B) // c(2), "poly": A * A - B * c(7) + c(1),
        }
    for name, ref in refs.items():
        out = res[f"o_{name}"]
        assert out.dtype == nt, name
        np.testing.assert_array_equal(out, ref.astype(nt), err_msg=f"{tname} {name}")


def test_float_mod_is_floor_modulo() -> None:
    with me.Function("fmod") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Input("a", [N], me.float64)
        b = me.Input("b", [N], me.float64)
        me.Computation("m", [i], a[i] % b[i])
    A = np.array([7.5, -7.5, 7.5, -7.5, 0.25, 3.0])
    B = np.array([2.0, 2.0, -2.0, -2.0, 1.0, 1.5])
    out = f.compile()(a=A, b=B)["m"]
    np.testing.assert_allclose(out, np.mod(A, B), atol=1e-12)
    assert (np.sign(out[out != 0]) == np.sign(B[out != 0])).all()


def test_narrow_int_intermediates_wrap() -> None:
    """int8/uint8 intermediate results wrap before the next operation, like numpy."""
    with me.Function("wrap") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Input("a", [N], me.uint8)
        s = me.Input("s", [N], me.int8)
        me.Computation("u", [i], (a[i] * 2) // 4)
        me.Computation("v", [i], (s[i] + 100) // 2)
        me.Computation("w", [i], -(s[i] * s[i]))
        me.Computation("cmpw", [i], (a[i] * 2) > 200)
        me.Computation("tof", [i], me.cast(me.float32, a[i] + a[i]))
        me.Computation("tos", [i], me.cast(me.int32, s[i] - 100))
    A = np.array([0, 1, 127, 128, 200, 255], np.uint8)
    S = np.array([0, 1, 27, 28, 100, -128], np.int8)
    res = f.compile()(a=A, s=S)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(res["u"], (A * np.uint8(2)) // np.uint8(4))
        np.testing.assert_array_equal(res["v"], (S + np.int8(100)) // np.int8(2))
        np.testing.assert_array_equal(res["w"], -(S * S))
        np.testing.assert_array_equal(res["cmpw"], (A * np.uint8(2)) > 200)
        np.testing.assert_array_equal(res["tof"], (A + A).astype(np.float32))
        np.testing.assert_array_equal(res["tos"], (S - np.int8(100)).astype(np.int32))


# --------------------------------------------------------------------------- bool results


def test_comparisons_and_logic_into_bool_buffers() -> None:
    with me.Function("cmp") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Input("a", [N], me.int16)
        b = me.Input("b", [N], me.int16)
        fl = me.Input("fl", [N], me.float32)
        x, y = a[i], b[i]
        exprs = {
            "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y,
            "flt": fl[i] < 0.5, "land": (x > 0) & (fl[i] < 0.5), "lor": (x > 0) | (y > 0),
            "lnot": ~(x > y), "truth": ~x,  # ~ on an int is a logical not (x == 0)
        }
        for name, e in exprs.items():
            me.Computation(name, [i], e)
        flags = me.Buffer("flags", [N], me.bool_, kind=me.OUTPUT)
        st = me.Computation("st", [i], (x + y) % 2 == 0)
        st.store_in(flags, [i])
    k = f.compile()
    rng = np.random.default_rng(3)
    A = rng.integers(-5, 5, 41).astype(np.int16)
    B = rng.integers(-5, 5, 41).astype(np.int16)
    FL = rng.random(41).astype(np.float32)
    res = k(a=A, b=B, fl=FL)
    refs = {
        "lt": A < B, "le": A <= B, "gt": A > B, "ge": A >= B, "eq": A == B, "ne": A != B,
        "flt": FL < 0.5, "land": (A > 0) & (FL < 0.5), "lor": (A > 0) | (B > 0),
        "lnot": ~(A > B), "truth": A == 0, "flags": (A + B) % 2 == 0,
    }
    for name, ref in refs.items():
        assert res[name].dtype == np.bool_, name
        np.testing.assert_array_equal(res[name], ref, err_msg=name)
    assert refs["eq"].any() and not refs["eq"].all()  # the data exercises both outcomes


def test_select_min_max_clamp() -> None:
    with me.Function("sel") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        a = me.Input("a", [N], me.int32)
        x = me.Input("x", [N], me.float32)
        me.Computation("s1", [i], me.select(a[i] > 0, x[i], -x[i]))
        me.Computation("s2", [i], me.select(x[i] > 0.5, a[i], 0))
        me.Computation("c1", [i], me.clamp(a[i], -5, 7))
        me.Computation("c2", [i], me.clamp(x[i], 0.25, 0.75))
        me.Computation("m1", [i], me.max(me.min(a[i], 3), -3) * 2)
        me.Computation("m2", [i], me.min(x[i], 0.5) + me.max(x[i], 0.5))
    rng = np.random.default_rng(4)
    A = rng.integers(-20, 20, 31).astype(np.int32)
    X = rng.random(31).astype(np.float32)
    res = f.compile()(a=A, x=X)
    np.testing.assert_array_equal(res["s1"], np.where(A > 0, X, -X))
    np.testing.assert_array_equal(res["s2"], np.where(X > 0.5, A, 0))
    assert res["s2"].dtype == np.int32
    np.testing.assert_array_equal(res["c1"], np.clip(A, -5, 7))
    np.testing.assert_array_equal(res["c2"], np.clip(X, np.float32(0.25), np.float32(0.75)))
    np.testing.assert_array_equal(res["m1"], np.clip(A, -3, 3) * 2)
    h = np.float32(0.5)
    np.testing.assert_array_equal(res["m2"], np.minimum(X, h) + np.maximum(X, h))


# --------------------------------------------------------------------------- casts


def test_casts() -> None:
    with me.Function("casts") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        n = me.Input("n", [N], me.int32)
        me.Computation("f2i", [i], me.cast(me.int32, x[i]))
        me.Computation("f2i64", [i], me.cast(me.int64, x[i] * 1000.0))
        me.Computation("f2u8", [i], me.cast(me.uint8, me.abs(x[i])))
        me.Computation("i2f", [i], me.cast(me.float32, n[i]))
        me.Computation("i2d", [i], me.cast(me.float64, n[i]))
        me.Computation("i2i8", [i], me.cast(me.int8, n[i]))
        me.Computation("i2u8", [i], me.cast(me.uint8, n[i]))
        me.Computation("i2i64", [i], me.cast(me.int64, n[i]) * 4)
    X = np.array([0.5, 1.5, -0.5, -1.5, 3.7, -3.7, 100.2, -100.9, 0.0, 7.99, -0.01, 42.0],
                 np.float32)
    Nn = np.array([0, 1, -1, 127, 128, -129, 255, 256, 1000, -1000, 2**31 - 1, -2**31],
                  np.int32)
    res = f.compile()(x=X, n=Nn)
    refs = {
        "f2i": X.astype(np.int32), "f2i64": (X * np.float32(1000)).astype(np.int64),
        "f2u8": np.abs(X).astype(np.uint8), "i2f": Nn.astype(np.float32),
        "i2d": Nn.astype(np.float64), "i2i8": Nn.astype(np.int8), "i2u8": Nn.astype(np.uint8),
        "i2i64": Nn.astype(np.int64) * 4,
    }
    for name, ref in refs.items():
        assert res[name].dtype == ref.dtype, name
        np.testing.assert_array_equal(res[name], ref, err_msg=name)


# --------------------------------------------------------------------------- intrinsics


def test_float32_intrinsics() -> None:
    unary = ["sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "abs", "round"]
    with me.Function("intr") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        y = me.Input("y", [N], me.float32)
        p = me.Input("p", [N], me.float32)
        n = me.Input("n", [N], me.int32)
        for name in unary:
            arg = x[i] if name in ("sqrt", "log") else y[i]
            me.Computation(f"o_{name}", [i], getattr(me, name)(arg))
        me.Computation("o_pow", [i], me.pow(x[i], p[i]))
        me.Computation("o_powop", [i], x[i] ** 2.0)
        me.Computation("o_isqrt", [i], me.sqrt(n[i]))  # int argument: computed in float32
    rng = np.random.default_rng(5)
    X = (rng.random(37) * 4 + 0.01).astype(np.float32)
    Y = (rng.random(37) * 8 - 4).astype(np.float32)
    Y[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -0.0]  # ties: round half to even
    P = (rng.random(37) * 3 - 1).astype(np.float32)
    Nn = rng.integers(0, 1000, 37).astype(np.int32)
    res = f.compile()(x=X, y=Y, p=P, n=Nn)
    exact = {"floor": np.floor(Y), "ceil": np.ceil(Y), "abs": np.abs(Y), "round": np.round(Y),
             "sqrt": np.sqrt(X), "isqrt": np.sqrt(Nn.astype(np.float32)),
             "powop": X * X}
    approx = {"exp": np.exp(Y), "log": np.log(X), "sin": np.sin(Y), "cos": np.cos(Y),
              "tanh": np.tanh(Y), "pow": X.astype(np.float64) ** P}
    for name, ref in {**exact, **approx}.items():
        out = res[f"o_{name}"]
        assert out.dtype == np.float32, name
        if name in exact:
            np.testing.assert_array_equal(out, ref, err_msg=name)
        else:
            np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-7, err_msg=name)
    np.testing.assert_array_equal(res["o_round"][:7], [0, 2, 2, -0.0, -2, -2, 4])


def test_integer_abs_keeps_type() -> None:
    with me.Function("iabs") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        n = me.Input("n", [N], me.int16)
        me.Computation("o", [i], me.abs(n[i]))
    Nn = np.array([0, 5, -5, 32767, -32767, -32768], np.int16)
    out = f.compile()(n=Nn)["o"]
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, np.abs(Nn))


# --------------------------------------------------------------------------- accesses


def test_clamped_boundary_accesses() -> None:
    with me.Function("clampacc") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        inp = me.Input("inp", [N], me.float32)
        me.Computation("o", [i], inp[me.clamp(i - 1, 0, N - 1)] + inp[i] * 2.0
                       + inp[me.clamp(i + 1, 0, N - 1)])
        me.Computation("o2", [i], inp[me.clamp(i - 3, 0, N - 1)] - inp[me.min(i + 3, N - 1)])
    k = f.compile()
    for n in (1, 2, 9):
        a = np.random.default_rng(n).random(n).astype(np.float32)
        res = k(inp=a)
        p = np.pad(a, 1, mode="edge")
        np.testing.assert_array_equal(res["o"], p[:-2] + a * np.float32(2) + p[2:])
        p3 = np.pad(a, 3, mode="edge")
        np.testing.assert_array_equal(res["o2"], p3[:n] - p3[6:])


def test_data_dependent_gather() -> None:
    with me.Function("gather") as f:
        N, K = me.Param("N"), me.Param("K")
        i = me.Var("i", 0, N)
        idx = me.Input("idx", [N], me.int32)
        tab = me.Input("tab", [K], me.float32)
        me.Computation("g", [i], tab[idx[i]] * 10.0 + tab[(idx[i] + 1) % K])
    k = f.compile()
    rng = np.random.default_rng(6)
    T = rng.random(5).astype(np.float32)
    ID = rng.integers(0, 5, 11).astype(np.int32)
    out = k(idx=ID, tab=T)["g"]
    np.testing.assert_array_equal(out, T[ID] * np.float32(10) + T[(ID + 1) % 5])
    ID[4] = 5  # out of bounds: refused at run time, not a wild read
    with pytest.raises(me.KernelRuntimeError, match="out of bounds"):
        k(idx=ID, tab=T)


def test_iterators_and_params_as_values() -> None:
    with me.Function("itervals") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j = me.Var("i", 0, N), me.Var("j", 0, M)
        me.Computation("v", [i, j], me.cast(me.float32, i) * 0.5 + N)
        me.Computation("w", [i, j], i * M + j - N)
        me.Computation("q", [i, j], (i - j) // 2 + (i - j) % 3)
        me.Computation("d", [i, j], me.cast(me.float64, j) / M)
    res = f.compile()(N=5, M=7)
    ii, jj = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    assert res["v"].dtype == np.float32 and res["w"].dtype == np.int32
    np.testing.assert_array_equal(res["v"], (ii * 0.5 + 5).astype(np.float32))
    np.testing.assert_array_equal(res["w"], ii * 7 + jj - 5)
    np.testing.assert_array_equal(res["q"], (ii - jj) // 2 + (ii - jj) % 3)
    np.testing.assert_array_equal(res["d"], jj / 7.0)


# --------------------------------------------------------------------------- 0-d buffers


def test_scalar_buffer_full_reduction() -> None:
    with me.Function("total") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        s = me.Buffer("s", [], me.float32, kind=me.OUTPUT)
        init = me.Computation("init", [], me.cast(me.float32, 0))
        init.store_in(s, [])
        acc = me.Computation("acc", [i], s[()] + x[i] * x[i])
        acc.store_in(s, [])
    k = f.compile()
    X = np.random.default_rng(7).random(17).astype(np.float32)
    out = k(x=X)["s"]
    assert out.shape == () and out.dtype == np.float32
    np.testing.assert_allclose(out, (X.astype(np.float64) ** 2).sum(), rtol=1e-5)
    assert k(x=X[:0])["s"] == 0  # N = 0: only the init runs


def test_scalar_update_without_declared_buffer() -> None:
    with me.Function("total2") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        tot = me.Computation("tot", [], me.cast(me.float32, 1))
        tot.update([i], x[i])
    X = np.random.default_rng(8).random(13).astype(np.float32)
    out = f.compile()(x=X)["tot"]
    assert out.shape == ()
    np.testing.assert_allclose(out, 1 + X.astype(np.float64).sum(), rtol=1e-5)


def test_scalar_update_into_declared_buffer() -> None:
    with me.Function("total3") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        s = me.Buffer("s", [], me.float32, kind=me.OUTPUT)
        init = me.Computation("init", [], me.cast(me.float32, 0))
        init.store_in(s, [])
        init.update([i], x[i])
    X = np.random.default_rng(9).random(13).astype(np.float32)
    out = f.compile()(x=X)["s"]
    np.testing.assert_allclose(out, X.astype(np.float64).sum(), rtol=1e-5)


# --------------------------------------------------------------------------- float64


def test_float64_pipeline() -> None:
    """A three-stage float64 pipeline whose result would be lost in float32 (1e-10
    increments around 1.0)."""
    with me.Function("p64") as f:
        N = me.Param("N")
        i, i2 = me.Var("i", 0, N), me.Var("i", 1, N - 1)
        x = me.Input("x", [N], me.float64)
        a = me.Computation("a", [i], me.exp(x[i]) * 1e-10 + 1.0)
        b = me.Computation("b", [i], (a[i] - 1.0) * 1e10)
        me.Computation("c", [i2], (b[i2 - 1] + b[i2] + b[i2 + 1]) / 3.0 + me.log(a[i2]))
        b.compute_at(f.computation("c"), "i")
    X = np.random.default_rng(10).random(11)
    res = f.compile()(x=X)
    assert list(res) == ["c"] and res["c"].dtype == np.float64
    A = np.exp(X) * 1e-10 + 1.0
    B = (A - 1.0) * 1e10
    C = (B[:-2] + B[1:-1] + B[2:]) / 3.0 + np.log(A[1:-1])
    np.testing.assert_allclose(res["c"][1:], C, rtol=1e-12)
    # float64 really was used: the values are close to exp(x) averages, not 0
    np.testing.assert_allclose(res["c"][1:], (np.exp(X[:-2]) + np.exp(X[1:-1])
                                              + np.exp(X[2:])) / 3, rtol=1e-5)


def test_float32_constant_out_of_range_is_infinity() -> None:
    """A float32 literal beyond float32's range is inf (as numpy converts it), not text C
    cannot parse."""
    with me.Function("big") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        me.Computation("y", [i], x[i] + 1e300)
        me.Computation("z", [i], x[i] - 1e300, dtype=me.float32)
    out = f.compile()(x=np.zeros(3, np.float32))
    assert np.all(np.isposinf(out["y"])) and np.all(np.isneginf(out["z"]))


def test_clamped_computed_gather_in_32_bits() -> None:
    """A gather at a clamped, computed coordinate (bilinear warps) whose subscripts are
    provably in bounds is printed in 32-bit arithmetic (the clamp of ``floor(u) + 1``
    rewritten as ``min(floor(u), W - 2) + 1``); the values must stay exact, including
    coordinates far outside the image and clamps of an int32 table's entries."""
    n, w = 64, 7
    with me.Function("warp32") as f:
        i = me.Var("i", 0, n)
        inp = me.Input("inp", [w], me.float32)
        u = me.Input("u", [n], me.float32)
        idx = me.Input("idx", [n], me.int32)
        iu = me.cast(me.int32, me.floor(u[i]))
        me.Computation("o", [i], inp[me.clamp(iu + 1, 0, w - 1)] * 2.0
                       + inp[me.clamp(iu - 2, 0, w - 1)] + inp[me.clamp(idx[i] + 3, 0, w - 1)])
    k = f.compile()
    src = k.source
    assert "me_min_i32" in src and "me_max_i32" in src, "the clamps stayed 64-bit"
    rng = np.random.default_rng(3)
    a = rng.random(w).astype(np.float32)
    uu = np.concatenate([rng.uniform(-3, 10, n - 4), [-2e9, 2e9, -1e6, 1e6]]).astype(np.float32)
    ids = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    ids[:3] = [2**31 - 1, -2**31, 0]
    fl = np.floor(uu).astype(np.int64)
    want = (a[np.clip(fl + 1, 0, w - 1)] * np.float32(2) + a[np.clip(fl - 2, 0, w - 1)]
            + a[np.clip(ids.astype(np.int64) + 3, 0, w - 1)])
    np.testing.assert_array_equal(k(inp=a, u=uu, idx=ids)["o"], want)
