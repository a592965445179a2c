"""The middle-end's ``popcount``, ``clz``, ``ctz``, ``reinterpret`` and inverse hyperbolic
intrinsics through the Python API (Layer I -> C -> run) against numpy, for every integer
type, and their refusals."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me

_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """popcount, clz, ctz of each element's two's complement bits (numpy's own view)."""
    n = a.dtype.itemsize * 8
    u = [int(v) % 2**n for v in a.tolist()]
    pop = [bin(v).count("1") for v in u]
    clz = [n - v.bit_length() for v in u]
    ctz = [n if v == 0 else (v & -v).bit_length() - 1 for v in u]
    return tuple(np.array(x).astype(a.dtype) for x in (pop, clz, ctz))  # type: ignore[return-value]


@pytest.mark.parametrize("tname", _INTS)
def test_bit_counts_match_numpy(tname: str, rng: np.random.Generator) -> None:
    mt, nt = getattr(me, tname), np.dtype(tname)
    with me.Function("counts") as f:
        i = me.Var("i", 0, 40)
        a = me.Input("a", [40], mt)
        me.Computation("pop", [i], me.popcount(a[i]))
        me.Computation("lead", [i], me.clz(a[i]))
        me.Computation("trail", [i], me.ctz(a[i]))
    info = np.iinfo(nt)
    av = rng.integers(info.min, info.max, 40, dtype=nt, endpoint=True)
    av[:5] = [0, info.min, info.max, 1, 2]
    av[5:5 + nt.itemsize * 8 // 4] = [nt.type(1) << nt.type(k) for k in
                                      range(0, nt.itemsize * 8, 4)]
    res = f.compile()(a=av)
    for name, want in zip(("pop", "lead", "trail"), _counts(av), strict=True):
        assert res[name].dtype == nt
        np.testing.assert_array_equal(res[name], want, err_msg=name)


def test_reinterpret_and_inverse_hyperbolic_match_numpy(rng: np.random.Generator) -> None:
    with me.Function("bits") as f:
        i = me.Var("i", 0, 16)
        a = me.Input("a", [16], me.float32)
        d = me.Input("d", [16], me.float64)
        u = me.Computation("u", [i], me.reinterpret(me.uint32, a[i]))
        me.Computation("back", [i], me.reinterpret(me.float32, u[i] + 1))
        me.Computation("l", [i], me.reinterpret(me.int64, d[i]))
        me.Computation("s", [i], me.reinterpret(me.int32, u[i]))
        me.Computation("hyp", [i], me.asinh(a[i]) + me.acosh(me.abs(a[i]) + 1)
                       + me.atanh(a[i] / 11))
    av = (rng.random(16, dtype=np.float32) * 20 - 10).astype(np.float32)
    av[:3] = [0.0, -0.0, np.inf]
    dv = rng.standard_normal(16) * 1e100
    res = f.compile()(a=av, d=dv)
    np.testing.assert_array_equal(res["back"].view(np.uint32), av.view(np.uint32) + 1)
    np.testing.assert_array_equal(res["l"], dv.view(np.int64))
    np.testing.assert_array_equal(res["s"], av.view(np.int32))
    x = av[3:].astype(np.float64)
    want = np.arcsinh(x) + np.arccosh(np.abs(x) + 1) + np.arctanh(x / 11)
    np.testing.assert_allclose(res["hyp"][3:], want, rtol=1e-5)


def test_refusals_name_the_types() -> None:
    with me.Function("refused"):
        x = me.Input("x", [4], me.float32)[0]
    with pytest.raises(TypeError, match="float32 as int64"):
        me.reinterpret(me.int64, x)
    with pytest.raises(TypeError, match="needs its result type"):
        me.call("reinterpret", x)
    with pytest.raises(TypeError, match="integer arguments"):
        me.popcount(x)


@pytest.mark.fpga
def test_on_the_fpga_target(rng: np.random.Generator) -> None:
    """The same helpers in Vitis HLS C++ (C-simulated with g++)."""
    with me.Function("bits_hls") as f:
        i = me.Var("i", 0, 32)
        a = me.Input("a", [32], me.int32)
        d = me.Input("d", [32], me.float32)
        me.Computation("o", [i], me.popcount(a[i]) + me.clz(a[i]) * 100 +
                       me.cast(me.int32, me.ctz(me.cast(me.uint8, a[i]))) * 10000)
        me.Computation("r", [i], me.reinterpret(me.float32, me.reinterpret(me.uint32, d[i]) + 1))
    av = rng.integers(-2**31, 2**31 - 1, 32, dtype=np.int32, endpoint=True)
    av[:3] = [0, -1, 1]
    dv = np.linspace(-3, 3, 32).astype(np.float32)
    res = f.compile(target="fpga")(a=av, d=dv)
    pop, clz, _ = _counts(av)
    _, _, ctz = _counts(av.astype(np.uint8))
    want = pop.astype(np.int64) + clz.astype(np.int64) * 100 + ctz.astype(np.int64) * 10000
    np.testing.assert_array_equal(res["o"], want)
    np.testing.assert_array_equal(res["r"].view(np.uint32), dv.view(np.uint32) + 1)
