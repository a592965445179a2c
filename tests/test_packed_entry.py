"""The packed entry point every cpu kernel exports beside its own
(:func:`backends.clike.entry.packed_definition`): ``int me_<name>_packed(const int64_t
*words)``, the params then the buffers' addresses in one array. A C caller that serves any
kernel (the Halide front-end's repeated calls) calls this one; it must run exactly the
kernel's own entry on those arguments."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import middleend as me


def _packed(kernel: me.Kernel) -> ctypes._CFuncPtr:
    address = kernel.packed_entry()
    assert address, "a cpu kernel exports a packed entry"
    return ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int64))(address)


def _need_extension() -> None:
    """Skip where the fast-call extension cannot be built (fail in CI, where it must)."""
    from frontends.fastcall import stub_type

    stub, why = stub_type()
    if stub is None:
        if os.environ.get("CI"):
            pytest.fail(f"the fast-call extension must build in CI: {why}")
        pytest.skip(why)


def _gather(name: str) -> me.Kernel:
    """``g[i] = src[idx[i]]``, 4 of 8: an index out of bounds is the kernel's status 1."""
    with me.Function(name) as f:
        i = me.Var("i", 0, 4)
        src = me.Input("src", [8], me.float32)
        idx = me.Input("idx", [4], me.int32)
        g = me.Computation("g", [i], src[idx[i]])
    return f.compile(outputs=[g])


@pytest.mark.parametrize("schedule", ["plain", "tiled", "parallel"])
def test_the_packed_entry_runs_the_kernel_on_its_words(schedule: str) -> None:
    """Two params (sizes), one input, two outputs: the words in declaration order give
    the numpy result, and the same as calling the kernel itself."""
    with me.Function("packed2") as f:
        n, m = me.Param("N"), me.Param("M")
        i, j = me.Var("i", 0, n), me.Var("j", 0, m)
        inp = me.Input("inp", [n, m], me.float32)
        s = me.Computation("s", [i, j], inp[i, j] * 2.0 + 1.0)
        t = me.Computation("t", [i, j], inp[i, j] - s[i, j])
        if schedule == "tiled":
            s.tile(i, j, 4, 8, "i0", "j0", "i1", "j1")
        elif schedule == "parallel":
            s.parallelize("i")
            t.parallelize("i")
    k = f.compile(outputs=[s, t])
    a = np.random.default_rng(0).random((13, 21), dtype=np.float32)
    ref = k(inp=a)
    names = [b.name for b in k.signature.arguments]
    assert [p for p in k.signature.params] == ["N", "M"] and names == ["inp", "s", "t"]
    outs = {"s": np.full_like(a, np.nan), "t": np.full_like(a, np.nan)}
    words = (ctypes.c_int64 * 5)(13, 21, a.ctypes.data, outs["s"].ctypes.data,
                                 outs["t"].ctypes.data)
    assert _packed(k)(words) == 0
    np.testing.assert_allclose(outs["s"], a * np.float32(2) + np.float32(1), rtol=1e-6)
    np.testing.assert_allclose(outs["t"], a - outs["s"], rtol=1e-6)
    for name in ("s", "t"):
        np.testing.assert_array_equal(outs[name], ref[name])


def test_the_packed_entry_returns_the_kernels_status() -> None:
    """A data-dependent read out of bounds: the packed entry returns the status the
    kernel's own entry returns (1), and the kernel's call raises for it."""
    k = _gather("packedg")
    src_a = np.arange(8, dtype=np.float32)
    idx_a = np.array([1, 2, 30, 3], np.int32)
    out = np.zeros(4, np.float32)
    words = (ctypes.c_int64 * 3)(src_a.ctypes.data, idx_a.ctypes.data, out.ctypes.data)
    assert _packed(k)(words) == 1
    with pytest.raises(me.KernelRuntimeError, match="out of bounds"):
        k(src=src_a, idx=idx_a)


def test_a_fast_call_raises_the_kernels_status() -> None:
    """The Halide front-end's C call (:func:`frontends.fastcall.make_stub`) on the
    same kernel: in-bounds indices give the gather, an index out of bounds raises the
    kernel's own error (through ``on_error``), and a call it does not match (another
    dtype, a size that differs) returns ``MISS`` without running the kernel."""
    from frontends.fastcall import MISS, make_stub

    _need_extension()
    k = _gather("packedh")
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    stub = make_stub(sizes=(4,), images=(("src", (8,), (4,), f32, 0), ("idx", (4,), (4,), i32, 1)),
                     scalars=(), out_list=False, outs=(((4,), f32, 2),), params=(),
                     base_addresses=(0, 0, 0), nbytes=(32, 16, 16), pairs=((0, 2), (1, 2)),
                     entry=k.packed_entry(), on_error=k.raise_status, keep=())
    assert stub is not None
    src_a = np.arange(8, dtype=np.float32) * 10
    out = np.full(4, np.nan, np.float32)
    assert stub([4], {"src": src_a, "idx": np.array([7, 0, 3, 3], np.int32)}, out) is out
    np.testing.assert_array_equal(out, [70, 0, 30, 30])
    with pytest.raises(me.KernelRuntimeError, match="out of bounds in kernel packedh"):
        stub([4], {"src": src_a, "idx": np.array([1, 2, 30, 3], np.int32)}, out)
    out[:] = -1
    for sizes, idx_a in (([5], np.array([1, 2, 3, 4], np.int32)),
                         ([4], np.array([1, 2, 3, 4], np.int64))):
        assert stub(sizes, {"src": src_a, "idx": idx_a}, out) is MISS
    assert (out == -1).all()


def test_without_python_headers_calls_take_the_python_path(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A Python without its development headers cannot build the extension: the reason
    says so in one line, no stub is made, and a Julia kernel's repeated calls still give
    the right results through the ordinary path."""
    import sysconfig

    import frontends.fastcall as fc
    from frontends.julia import compile_source
    from frontends.julia.paper import KERNELS, source

    real = sysconfig.get_paths
    monkeypatch.setattr(sysconfig, "get_paths",
                        lambda *a, **kw: {**real(*a, **kw), "include": "/nonexistent/py"})
    fc._load.cache_clear()
    try:
        stub, why = fc.stub_type()
        assert stub is None and "no development headers" in why and "\n" not in why
        k = compile_source(source(), "bicg!")
        kd = KERNELS["bicg!"]
        for seed in range(3):
            args = kd.make(kd.small, np.random.default_rng(seed))
            want = kd.reference(tuple(a.copy() for a in args))
            k(*args)
            for pos, ref in want.items():
                np.testing.assert_allclose(args[pos], ref, rtol=1e-10, atol=1e-12)
        assert k.repeats == 0 and k._stubs == ()
    finally:
        monkeypatch.undo()
        fc._load.cache_clear()


def test_an_args_stub_checks_int_values_of_either_sign() -> None:
    """An ArgsStub (the Julia front-end's) for the gather kernel with two specialized
    Ints, one negative: the same values run the kernel, another value, a numpy integer
    or a bool is a miss (nothing run)."""
    from frontends.fastcall import MISS, make_args_stub

    _need_extension()
    k = _gather("packedi")
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    stub = make_args_stub(
        nargs=5, images=((0, f32, 0, (8,), (4,), False), (1, i32, 1, (4,), (4,), False),
                         (2, f32, 2, (4,), (4,), True)),
        values=(), ints=((3, -7), (4, 2**40)), params=(), nbytes=(32, 16, 16),
        pairs=((0, 2), (1, 2)), result=2, entry=k.packed_entry(),
        on_error=k.raise_status)
    assert stub is not None
    src_a, idx_a = np.arange(8, dtype=np.float32), np.array([3, 2, 1, 0], np.int32)
    out = np.zeros(4, np.float32)
    assert stub((src_a, idx_a, out, -7, 2**40)) is out
    np.testing.assert_array_equal(out, [3, 2, 1, 0])
    out[:] = -1
    for a, b in ((-6, 2**40), (np.int64(-7), 2**40), (-7, 2**40 + 1), (-7, True)):
        assert stub((src_a, idx_a, out, a, b)) is MISS
    ro = out.copy()
    ro.flags.writeable = False
    assert stub((src_a, idx_a, ro, -7, 2**40)) is MISS
    assert stub((src_a, idx_a, out)) is MISS
    assert (out == -1).all()


@pytest.mark.parametrize("value,off", [("1", True), ("true", True), ("YES", True),
                                       ("on", True), ("0", False), ("", False),
                                       ("no", False)])
def test_the_switch_reads_as_people_write_it(value: str, off: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``MIDDLEEND_NO_FASTCALL``: 1, true, yes, on (any case) turn the C path off, and the
    reason names the setting; 0, empty or no leave it as the machine allows."""
    from frontends.fastcall import OFF_ENV, _load, stub_type

    monkeypatch.setenv(OFF_ENV, value)
    stub, why = stub_type()
    if off:
        assert stub is None and why == f"${OFF_ENV}={value}"
    else:
        assert (stub is None) == (_load()[0] is None)


def test_a_kernel_with_more_arguments_than_a_stub_takes_gets_none() -> None:
    """More than MAX_WORDS arguments: no stub (the Python path serves it), no error."""
    from frontends.fastcall import MAX_WORDS, make_args_stub, make_stub

    _need_extension()
    many = tuple([8] * (MAX_WORDS + 1))
    assert make_args_stub(nargs=1, images=(), values=(), ints=(), params=(), nbytes=many,
                          pairs=(), result=None, entry=1, on_error=print,
                          ) is None
    assert make_stub(sizes=(), images=(), scalars=(), out_list=False, outs=(), params=(),
                     base_addresses=(0,) * len(many), nbytes=many, pairs=(), entry=1,
                     on_error=print, keep=()) is None
