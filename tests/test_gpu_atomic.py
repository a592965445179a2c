"""Atomic updates on the gpu target: ``comp.atomic()`` in the Python API against numpy
(``np.add.at``, ``np.minimum.at``... as the reference) and Halide's ``update().atomic()``
against Halide's own CPU realize, each under several GPU schedules (blocks only, blocks
and threads, threads only, a reduction into one element), run with OpenCL on PoCL's CPU
device; the same programs' CUDA compiled by nvcc where it is installed (no GPU runs them
here). Integer results are exact in any order; float data are small integers (or powers of
two for a product), so any order of the updates gives the reference bit for bit. What the
gpu target cannot print is refused in one line, naming the computation."""

from __future__ import annotations

import re
import shutil
from types import SimpleNamespace

import halide as hl
import numpy as np
import pytest
from halide_util import assert_same, halide_realize

import middleend as me
from frontends.halide import compile_pipeline

pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")

N, BINS = 300, 16
_NP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
       "max": np.maximum, "bitand": np.bitwise_and, "bitor": np.bitwise_or,
       "bitxor": np.bitwise_xor}


def _start(op: str, dt: me.DType) -> int | float:
    if op in ("min", "max"):
        big = 1e9 if dt.is_float else 1000
        return big if op == "min" else (-big if dt.kind != "uint" else 0)
    return {"mul": 1, "bitand": -1 if dt.kind == "int" else 2 ** dt.bits - 1}.get(op, 0)


def _combine(op: str, old: me.Expr, v: me.Expr) -> me.Expr:
    return {"add": lambda: old + v, "sub": lambda: old - v, "mul": lambda: old * v,
            "min": lambda: me.min(old, v), "max": lambda: me.max(old, v),
            "bitand": lambda: me.bitand(old, v), "bitor": lambda: me.bitor(old, v),
            "bitxor": lambda: me.bitxor(old, v)}[op]()


def _scatter(op: str, dt: me.DType, schedule: str) -> tuple[me.Function, me.Computation]:
    """``h[b] = start; h[im[i] % 16] op= im[i]`` (``bins`` 1: every update into h[0], a
    parallel reduction), both on the device."""
    bins = 1 if schedule == "reduction" else BINS
    with me.Function(f"gpu_{op}_{dt.name}_{schedule}") as f:
        i, b = me.Var("i", 0, N), me.Var("b", 0, bins)
        im = me.Input("im", [N], dt)
        h = me.Computation("h", [b], _start(op, dt), dtype=dt)
        where = me.cast(me.int32, im[i]) % bins
        u = me.Computation("u", [i], _combine(op, h.memory[where], im[i]), dtype=dt)
        u.store_in(h, [where])
        u.atomic()
        h.gpu_threads(b)
        if schedule == "blocks":
            u.gpu_blocks(i)
        elif schedule in ("blocks_threads", "reduction"):
            u.split(i, 32, "io", "ii")
            u.gpu("io", "ii")
        elif schedule == "threads":
            u.gpu_threads(i)
    return f, h


def _data(op: str, dt: me.DType, rng: np.random.Generator) -> np.ndarray:
    if op == "mul":  # products exact in any order: powers of two (floats), or wrapping
        if dt.is_float:
            return rng.choice(np.array([0.5, 1.0, 2.0, 4.0]), N).astype(dt.numpy)
        return rng.integers(1, 50, N).astype(dt.numpy)
    if op.startswith("bit"):
        return rng.integers(0, 2 ** 30, N).astype(dt.numpy)
    data = rng.integers(0, 100, N).astype(dt.numpy)
    data[:40] = 5  # a popular bin: many threads update it at once
    return data


def _reference(op: str, dt: me.DType, data: np.ndarray, bins: int) -> np.ndarray:
    ref = np.full(bins, _start(op, dt)).astype(dt.numpy)
    with np.errstate(over="ignore"):
        _NP[op].at(ref, data.astype(np.int64) % bins, data)
    return ref


CASES = [("add", me.int32), ("sub", me.int32), ("min", me.int32), ("max", me.uint32),
         ("mul", me.int32), ("bitxor", me.uint32), ("bitand", me.int32), ("bitor", me.int64),
         ("add", me.int64), ("min", me.int64), ("max", me.uint64), ("add", me.float32),
         ("sub", me.float32), ("min", me.float32), ("max", me.float32), ("mul", me.float32),
         ("add", me.float64), ("max", me.float64), ("mul", me.uint64)]


@pytest.mark.parametrize(("op", "dt"), CASES, ids=lambda c: c if isinstance(c, str)
                         else c.name)
def test_atomic_scatter_on_the_gpu_matches_numpy(op: str, dt: me.DType,
                                                 rng: np.random.Generator) -> None:
    data = _data(op, dt, rng)
    for schedule in ("blocks", "blocks_threads", "threads", "reduction"):
        f, h = _scatter(op, dt, schedule)
        k = f.compile(target="gpu", dialect="opencl", outputs=[h])
        bins = 1 if schedule == "reduction" else BINS
        np.testing.assert_array_equal(k(im=data)["h"], _reference(op, dt, data, bins),
                                      err_msg=schedule)


def test_opencl_prints_atomic_instructions_and_cas_loops() -> None:
    def source(op: str, dt: me.DType) -> str:
        f, h = _scatter(op, dt, "blocks_threads")
        return f.compile(target="gpu", dialect="opencl", outputs=[h]).source

    assert "atomic_add((volatile __global int *)&b_h[" in source("add", me.int32)
    assert "atomic_min((volatile __global uint *)&b_h[" in source("min", me.uint32)
    int64 = source("min", me.int64)
    assert "atom_min((volatile __global long *)&b_h[" in int64
    assert "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable" in int64
    fmax = source("max", me.float32)
    assert "atomic_cmpxchg(me_p, me_seen, as_uint(me_max_f32(as_float(me_seen), me_v)))" \
        in fmax
    assert "cl_khr_int64" not in fmax


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_atomics_build_with_nvcc() -> None:
    """Every case's CUDA compiles (nvcc, no GPU here to run it; all the cases in one
    program, one nvcc run), with CUDA's own atomic instruction where it has one and a
    compare-and-swap loop where it does not."""
    expected = {("add", "int32"): "atomicAdd(&b_h{k}[",
                ("min", "int64"): "atomicMin((long long *)&b_h{k}[",
                ("max", "uint64"): "atomicMax((unsigned long long *)&b_h{k}[",
                ("add", "float32"): "atomicAdd(&b_h{k}[", ("add", "float64"): "atomicAdd(&b_h{k}[",
                ("min", "float32"): "atomicCAS(me_p, me_seen, __float_as_uint(me_min_f32(",
                ("max", "float64"): "__longlong_as_double((long long)me_seen)",
                ("sub", "int32"): "atomicSub(&b_h{k}[", ("bitor", "int64"): "atomicOr(("}
    with me.Function("gpu_atomics_all") as f:
        i, b = me.Var("i", 0, N), me.Var("b", 0, BINS)
        outs = []
        for k, (op, dt) in enumerate(CASES):
            im = me.Input(f"im{k}", [N], dt)
            h = me.Computation(f"h{k}", [b], _start(op, dt), dtype=dt)
            where = me.cast(me.int32, im[i]) % BINS
            u = me.Computation(f"u{k}", [i], _combine(op, h.memory[where], im[i]), dtype=dt)
            u.store_in(h, [where])
            u.atomic()
            h.gpu_threads(b)
            u.split(i, 32, "io", "ii")
            u.gpu("io", "ii")
            outs.append(h)
    kernel = f.compile(target="gpu", dialect="cuda", outputs=outs)
    assert kernel.library_path.exists()
    for k, (op, dt) in enumerate(CASES):
        if (op, dt.name) in expected:
            assert expected[op, dt.name].format(k=k) in kernel.source, (op, dt.name)


def test_what_the_gpu_target_cannot_print_is_refused_by_name() -> None:
    f, h = _scatter("add", me.int16, "blocks")
    with pytest.raises(me.TargetError, match="'u' is an atomic update of int16 elements, "
                                             "which the gpu target cannot print"):
        f.compile(target="gpu", dialect="opencl", outputs=[h])
    with me.Function("grouped") as g:  # two updates in one critical section
        i, b = me.Var("i", 0, 30), me.Var("b", 0, 4)
        im = me.Input("im", [30], me.int32)
        s = me.Computation("s", [b], 0, dtype=me.int32)
        c = me.Computation("c", [b], 0, dtype=me.int32)
        us = me.Computation("us", [i], s.memory[im[i] % 4] + im[i], dtype=me.int32)
        uc = me.Computation("uc", [i], c.memory[im[i] % 4] + 1, dtype=me.int32)
        us.store_in(s, [im[i] % 4])
        uc.store_in(c, [im[i] % 4])
        us.atomic(group="g")
        uc.atomic(group="g")
        s.gpu_threads(b)
        c.gpu_threads(b)
        us.gpu_blocks(i)
        uc.gpu_blocks(i)
        uc.after(us, i)
    with pytest.raises(me.TargetError, match="'us' is in an atomic group .* which the gpu "
                                             "target does not print"):
        g.compile(target="gpu", dialect="opencl", outputs=[s, c])


def test_64_bit_atomics_on_a_device_without_the_extension_are_refused(monkeypatch) -> None:
    """The device is asked for the cl_khr_int64 atomics the kernels need before their
    source is built (a device that lacks them: PoCL's, with its extension list cut)."""
    import backends.gpu.opencl as ocl
    import backends.gpu.target as gpu_target

    small = SimpleNamespace(name="a device without 64-bit atomics",
                            extensions="cl_khr_fp64 cl_khr_int64_base_atomics")
    monkeypatch.setattr(ocl, "_pick_device", lambda cl: small)
    # it builds kernels (the availability probe), but lacks the extension
    monkeypatch.setattr(gpu_target, "probe_device", lambda cl: (small.name, None))
    g, h = _scatter("min", me.int64, "blocks")  # the extended set: missing
    with pytest.raises(me.TargetError, match="the atomic updates of u on 64-bit elements "
                                             "need the OpenCL extension "
                                             "cl_khr_int64_extended_atomics, which the "
                                             "device 'a device without 64-bit atomics'"):
        g.compile(target="gpu", dialect="opencl", outputs=[h])


def test_without_atomic_a_gpu_loop_carrying_the_updates_is_refused() -> None:
    with me.Function("racy") as f:
        i, b = me.Var("i", 0, 30), me.Var("b", 0, 4)
        im = me.Input("im", [30], me.int32)
        h = me.Computation("h", [b], 0, dtype=me.int32)
        u = me.Computation("u", [i], h.memory[im[i] % 4] + 1, dtype=me.int32)
        u.store_in(h, [im[i] % 4])
        h.gpu_threads(b)
        u.gpu_blocks(i)
    with pytest.raises(me.ScheduleError, match="tagged gpu_block but carries a dependence"):
        f.lower(outputs=[h])


# ---------------------------------------------------------------------------- Halide


def _histogram(kind: hl.Type, op: str, schedule: str) -> tuple[hl.Func, hl.ImageParam]:
    x, xo, xi = hl.Var("x"), hl.Var("xo"), hl.Var("xi")
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    r = hl.RDom([(0, 200)], "r")
    h = hl.Func("h")
    start = {"add": 0, "min": 10 ** 6, "max": -(10 ** 6)}[op]
    h[x] = hl.cast(kind, start)
    where, v = inp[r] % 10, hl.cast(kind, inp[r])
    if op == "add":
        h[where] += v
    else:
        h[where] = (hl.min if op == "min" else hl.max)(h[where], v)
    if schedule == "serial":  # the reference: Halide's own CPU realize
        return h, inp
    h.gpu_tile(x, xo, xi, 4)
    upd = h.update().atomic()
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    if schedule == "blocks_threads":
        upd.split(r, ro, ri, 16).gpu_blocks(ro).gpu_threads(ri)
    elif schedule == "blocks":
        upd.gpu_blocks(r)
    elif schedule == "threads":
        upd.split(r, ro, ri, 64).gpu_threads(ri)  # the outer loop inside each thread
        upd.gpu_blocks(ro)
    return h, inp


@pytest.mark.parametrize("schedule", ["blocks_threads", "blocks", "threads"])
@pytest.mark.parametrize(("kind", "op"), [(hl.Int(32), "add"), (hl.Float(32), "add"),
                                          (hl.Int(32), "min"), (hl.Float(32), "max"),
                                          (hl.UInt(32), "max"), (hl.Float(64), "min")],
                         ids=str)
def test_halide_atomic_histogram_on_the_gpu_equals_halide(kind: hl.Type, op: str,
                                                          schedule: str,
                                                          rng: np.random.Generator) -> None:
    data = rng.integers(0, 1000, 200).astype(np.int32)
    data[:50] = 7  # one popular bin
    h, inp = _histogram(kind, op, schedule)
    k = compile_pipeline(h, target="gpu", dialect="opencl")
    ref_h, ref_inp = _histogram(kind, op, "serial")  # the algorithm defines the result
    assert_same(k.realize([10], inp=data), halide_realize([ref_h], [10], [(ref_inp, data)]))


def _block_histograms(where: str) -> tuple[hl.Func, hl.ImageParam]:
    """A histogram per block of 32 inputs (``partial``), each then added atomically into
    the global one by the threads of a GPU block; ``partial`` is computed in each GPU
    block, in its shared memory, updated atomically by the block's threads (``shared``),
    or in each thread, in its own memory, whose atomic update needs no atomic instruction
    (``private``); "" : Halide's default schedule, the reference."""
    x, blk = hl.Var("x"), hl.Var("blk")
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    rr, rb = hl.RDom([(0, 32)], "rr"), hl.RDom([(0, 8)], "rb")
    partial = hl.Func("partial")
    partial[x, blk] = 0
    partial[inp[blk * 32 + rr] % 10, blk] += 1
    h = hl.Func("h")
    h[x] = 0
    h[x] += partial[x, rb]
    if where:
        h.gpu_blocks(x)
        h.update().atomic().reorder(x, rb.x).gpu_blocks(rb.x).gpu_threads(x)
    if where == "shared":
        partial.compute_at(h, rb.x).gpu_threads(x)
        partial.update().atomic().gpu_threads(rr)
    elif where == "private":
        partial.compute_at(h, x)
        partial.update().atomic()
    return h, inp


@pytest.mark.parametrize("where", ["shared", "private"])
def test_halide_histograms_per_block_equal_halide(where: str,
                                                  rng: np.random.Generator) -> None:
    data = rng.integers(0, 1000, 256).astype(np.int32)
    data[:40] = 3
    h, inp = _block_histograms(where)
    k = compile_pipeline(h, target="gpu", dialect="opencl")
    ref_h, ref_inp = _block_histograms("")
    assert_same(k.realize([10], inp=data), halide_realize([ref_h], [10], [(ref_inp, data)]))
    source = k.build([10], inp=data)[1].source  # Halide may have renamed the Funcs
    assert re.search(r"atomic_add\(\(volatile __global int \*\)&b_h\w*\[", source)
    assert bool(re.search(r"atomic_add\(\(volatile __local int \*\)&b_partial\w*\[",
                          source)) == (where == "shared")
    assert not re.search(r"atomic_add\(\(volatile __global int \*\)&b_partial", source)
    if shutil.which("nvcc") is not None:
        cuda = compile_pipeline(h, target="gpu", dialect="cuda").build([10], inp=data)[1]
        assert bool(re.search(r"atomicAdd\(&b_partial\w*\[", cuda.source)) == \
            (where == "shared")
