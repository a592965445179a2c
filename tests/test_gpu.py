"""The gpu target against numpy, under several GPU schedules each: the blur of Figure 3-(b)
(shared memory, cache_shared_at, two kernels), matmul with shared-memory tiles, heat-2D
and a 1-D stencil over time (a kernel per step), a triangular domain, a reduction, a
per-thread cache. The OpenCL kernels run here on PoCL's CPU device (the same kernels, grid
and shared-memory code a GPU runs); the CUDA build of each is compiled with nvcc and run
where a GPU is. Illegal GPU schedules are refused before any code is printed, naming the
dependence or the limit."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable

import numpy as np
import pytest
from service_util import blur_ref
from test_heat import heat2d_ref

import middleend as me
from middleend.api import examples as ex
from middleend.api.examples_gpu import (
    BLUR_VARIANTS,
    schedule_blur_gpu,
    schedule_heat2d_gpu,
    schedule_matmul_gpu,
)

pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")


def opencl(f: me.Function, **options: object) -> object:
    return f.compile(target="gpu", dialect="opencl", **options)


# ---------------------------------------------------------------------------- blur


@pytest.mark.parametrize("variant", BLUR_VARIANTS)
@pytest.mark.parametrize("shape, tiles", [((37, 70), (8, 32)), ((9, 10), (4, 4)),
                                          ((50, 33), (16, 8))])
def test_blur_figure3b_and_variants(variant, shape, tiles, rng, assert_close_f32) -> None:
    a = rng.random((*shape, 3), dtype=np.float32)
    k = opencl(schedule_blur_gpu(ex.blur(), variant, *tiles).fn)
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


@pytest.mark.parametrize("variant", BLUR_VARIANTS)
def test_one_block_per_axis(variant, rng, assert_close_f32) -> None:
    """Sizes equal to the tiles: ISL prints no block loop (one iteration each); the
    statements of the block must still form one kernel, the per-block buffer inside it."""
    a = rng.random((8 + 2, 32 + 2, 3), dtype=np.float32)
    k = opencl(schedule_blur_gpu(ex.blur((8 + 2, 32 + 2)), variant, 8, 32).fn)
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


def test_figure3b_uses_shared_memory_and_a_barrier() -> None:
    b = schedule_blur_gpu(ex.blur(), "figure3b", 8, 32)
    text = b.fn.layers()
    layer4 = text.split("== Layer IV")[1]
    assert "barrier barrier_by_j0" in layer4
    assert "allocate bx[10, 32, 3] at loop j0 of by (one array per block, in gpu shared " \
        "memory)" in layer4
    layer3 = text.split("== Layer III")[1].split("== Layer IV")[0]
    assert "buffer inp[" in layer3 and "memory: host and device" in layer3
    assert "(its device copy)" in layer4
    assert "host_to_device inp_to_device: host_to_device of inp (inserted" in layer4
    assert "device_to_host by_to_host" in layer4
    k = opencl(b.fn)
    assert "__local float b_bx[960];" in k.source  # 8 + 2 rows x 32 columns x 3
    assert k.source.count("barrier(CLK_LOCAL_MEM_FENCE") == 1
    launch = k.artifact.launch
    assert launch["me_blur_k0"].endswith("x block (32, 10, 1), shared bx")


def test_cache_shared_at_copies_cooperatively_between_barriers() -> None:
    k = opencl(schedule_blur_gpu(ex.blur(), "cache", 8, 32).fn)
    kernel = k.source.split("me_blur_k1")[1]
    assert "__local float b_bx_shared_buf[960];" in kernel
    assert kernel.count("barrier(") == 3  # before the copy, after it, after the reads
    copy = kernel.split("/* bx_shared */")[0]
    assert "get_local_id(1)" in copy and "get_local_id(0)" in copy  # rows and columns


# ---------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("sizes, t", [((20, 13, 27), 8), ((32, 32, 32), 16), ((5, 3, 7), 4)])
def test_matmul_with_shared_tiles(shared, sizes, t, rng) -> None:
    n, kk, m = sizes
    a = rng.random((n, kk), dtype=np.float32)
    b = rng.random((kk, m), dtype=np.float32)
    k = opencl(schedule_matmul_gpu(ex.matmul("mm"), t, shared).fn)
    np.testing.assert_allclose(k(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)
    assert ("__local float b_A_shared_buf" in k.source) == shared


# ---------------------------------------------------------------------------- over time


@pytest.mark.parametrize("steps", [0, 1, 6])
@pytest.mark.parametrize("t", [8, 16])
def test_heat2d_one_kernel_per_step(steps, t, rng, assert_close_f32) -> None:
    a = rng.random((19, 23), dtype=np.float32)
    k = opencl(schedule_heat2d_gpu(ex.heat2d(), t).fn)
    assert_close_f32(k(inp=a, T=steps)["buf"][steps % 2], heat2d_ref(a, steps))
    assert k.artifact.launch["dialect"] == "opencl"


def jacobi1d(t: int) -> me.Function:
    """An out-of-place 3-point stencil over T steps, ping-ponging between two rows."""
    with me.Function("jacobi") as f:
        T, N = me.Param("T"), me.Param("N", min=3)
        s, ii = me.Var("s", 0, 2), me.Var("i", 0, N)
        tt, i = me.Var("t", 1, T + 1), me.Var("i", 1, N - 1)
        x = me.Input("x", [N], me.float32)
        buf = me.Buffer("buf", [2, N], me.float32, kind=me.OUTPUT)
        init = me.Computation("init", [s, ii], x[ii])
        init.store_in(buf, [s, ii])
        j = me.Computation("j", [tt, i], dtype=me.float32)
        j.set_expression((j[tt - 1, i - 1] + j[tt - 1, i] + j[tt - 1, i + 1]) / 3.0)
        j.store_in(buf, [tt % 2, i])
        init.split("i", t, "i0", "i1")
        init.gpu("i0", "i1")
        j.split("i", t, "i0", "i1")
        j.gpu("i0", "i1")
    return f


def test_out_of_place_stencil_over_time(rng) -> None:
    x = rng.random(45, dtype=np.float32)
    k = opencl(jacobi1d(16))
    u = x.copy()
    for _ in range(7):
        v = u.copy()
        v[1:-1] = (u[:-2] + u[1:-1] + u[2:]) / np.float32(3)
        u = v
    np.testing.assert_allclose(k(x=x, T=7)["buf"][7 % 2], u, rtol=1e-6)


# ---------------------------------------------------------------------------- domains


def triangle(t: int) -> me.Function:
    """A lower triangle: the inner block loop's range depends on the outer block."""
    with me.Function("tri") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 0, i + 1)
        a = me.Input("a", [N, N], me.float32)
        out = me.Computation("out", [i, j], a[i, j] * 2.0 + me.cast(me.float32, j))
        out.tile_gpu("i", "j", t, t, "i0", "j0", "i1", "j1")
    return f


@pytest.mark.parametrize("n, t", [(21, 8), (16, 4), (1, 4)])
def test_triangular_domain(n, t, rng) -> None:
    a = rng.random((n, n), dtype=np.float32)
    k = opencl(triangle(t))
    want = np.tril(a * np.float32(2) + np.arange(n, dtype=np.float32)[None, :])
    np.testing.assert_allclose(k(a=a)["out"], want, rtol=1e-6)
    # the copy back covers the triangle's row-major range: that range goes up first, so
    # the elements above the diagonal come back as the caller's zeros
    (upload,) = json.loads(k.artifact.text("script"))["uploads"]
    assert upload["copy"] == "device_to_host" and upload["buffer"] == "out"


def row_sums(t: int, fused: bool) -> me.Function:
    """s[i] = sum_j a[i, j], one thread per row (the reduction runs in its thread)."""
    with me.Function("rows") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j = me.Var("i", 0, N), me.Var("j", 0, M)
        a = me.Input("a", [N, M], me.float64)
        s = me.Computation("s", [i], 0.0, dtype=me.float64)
        u = s.update([i, j], a[i, j])
        for c in (s, u):
            c.split("i", t, "i0", "i1")
            c.gpu("i0", "i1")
        if fused:
            u.after(s, "i1")
    return f


@pytest.mark.parametrize("fused", [True, False])
def test_a_reduction(fused, rng) -> None:
    a = rng.random((37, 11))
    k = opencl(row_sums(16, fused))
    np.testing.assert_allclose(k(a=a)["s"], a.sum(axis=1), rtol=1e-12)
    assert k.source.count("__kernel") == (1 if fused else 2)


def test_cache_local_at_gives_each_thread_its_copy(rng, assert_close_f32) -> None:
    b = ex.blur()
    with b.fn:
        b.by.tile_gpu("i", "j", 4, 8, "i0", "j0", "i1", "j1")
        b.bx.tile_gpu("i", "j", 4, 8, "i0", "j0", "i1", "j1")
        b.bx.cache_local_at(b.by, "j1")
    a = rng.random((13, 20, 3), dtype=np.float32)
    k = opencl(b.fn)
    assert_close_f32(k(inp=a)["by"], blur_ref(a))
    assert "float b_bx_local_buf[9];" in k.source  # 3 rows x 1 column x 3 channels


def test_explicit_copies_as_in_figure3b(rng, assert_close_f32) -> None:
    """The paper's cp1 = in.host_to_device(); cp1.before(bx, root); cp2 after by."""
    b = schedule_blur_gpu(ex.blur(), "global", 8, 8)
    with b.fn:
        cp1 = b.fn.buffers[0].host_to_device()
        cp2 = b.by.device_to_host()
        cp1.before(b.bx, me.ROOT)
        cp2.after(b.by, me.ROOT)
    layer4 = b.fn.layers().split("== Layer IV")[1]
    assert "inserted" not in layer4 and "host_to_device inp_to_device: inp.host" in layer4
    a = rng.random((17, 22, 3), dtype=np.float32)
    assert_close_f32(opencl(b.fn)(inp=a)["by"], blur_ref(a))


# ---------------------------------------------------------------------------- refused


def refused(f: me.Function, match: str, err: type[Exception] = me.ScheduleError,
            **options: object) -> Exception:
    with pytest.raises(err, match=match) as info:
        opencl(f, **options)
    return info.value


def test_an_in_place_buffer_is_read_and_written_on_the_device() -> None:
    """``x`` is in/out: the device reads what the caller passed (the default copy to the
    device carries it) and writes its new values back through another buffer and in
    place. Refused before as copying "elements the host has not written"."""
    with me.Function("inplace") as f:
        x = me.Buffer("x", (64,), me.float64, kind="inout")
        y = me.Buffer("y", (64,), me.float64, kind="inout")
        i = me.Var("i", 0, 64)
        c = me.Computation("C", [i], x[i] * 2.0)
        c.store_in(y, [i])
        d = me.Computation("D", [i], y[i] + 1.0)
        d.store_in(x, [i])
        c.gpu_blocks("i")
        d.gpu_blocks("i")
    a, b = np.arange(64.0), np.zeros(64)
    opencl(f)(x=a, y=b)
    np.testing.assert_array_equal(b, 2 * np.arange(64.0))
    np.testing.assert_array_equal(a, 2 * np.arange(64.0) + 1)


def test_a_missing_barrier_is_an_error_naming_the_dependence() -> None:
    b = ex.blur()
    with b.fn:
        b.by.tile_gpu("i", "j", 8, 32, "i0", "j0", "i1", "j1")
        b.bx.compute_at(b.by, "j0")
        b.bx.allocate_at(b.by, "j0")
        b.bx.gpu_threads("i", "j")
    e = refused(b.fn, "'by' depends on 'bx' in the same GPU block, possibly in another "
                      "thread, with no barrier between them")
    assert e.computations == ("bx", "by") and "bx[" in (e.dependence or "")


def test_a_block_loop_carrying_a_dependence_is_refused() -> None:
    with me.Function("scan") as f:
        N = me.Param("N", min=1)
        i = me.Var("i", 1, N)
        x = me.Input("x", [N], me.float32)
        s0 = me.Computation("s0", [me.Var("k", 0, 1)], x[0])
        s = me.Computation("s", [i], dtype=me.float32)
        s.set_expression(s[i - 1] + x[i])
        s.store_in(s0, [i])
        s0.gpu_threads("k")
        s.split("i", 8, "i0", "i1")
        s.gpu("i0", "i1")
    refused(f, "loop 'i0' of 's' is tagged gpu_block but carries a dependence")


def test_limits_of_a_block_are_checked() -> None:
    big = schedule_matmul_gpu(ex.matmul("mm"), 64, False)  # 64 x 64 threads
    refused(big.fn, r"4096 threads per block \(64 x 64 x 1\), more than "
            "max_threads_per_block=1024", me.TargetError)
    shared = schedule_matmul_gpu(ex.matmul("mm2"), 32, True)  # 2 tiles of 4 KiB
    refused(shared.fn, "needs 8192 bytes of shared memory per block .* more than "
            "shared_memory_kib=4 KiB", me.TargetError, shared_memory_kib=4)
    opencl(shared.fn, shared_memory_kib=48)


@pytest.mark.parametrize("schedule, match", [
    (lambda b: (b.by.tile_gpu("i", "j", 8, 8, "i0", "j0", "i1", "j1"),
                b.bx.tile_gpu("i", "j", 8, 8, "i0", "j0", "i1", "j1"),
                me.barrier_at(b.by, "j1")),
     "a barrier cannot sit inside the thread loop 'i1'"),
    (lambda b: (b.by.gpu("i", "j"), b.bx.gpu("i", "j")), "has no constant bound"),
    (lambda b: b.by.tile_gpu("i", "j", 8, 8, "i0", "j0", "i1", "j1"),
     r"buffer 'bx' is used on the host \(by bx\) and on the device \(by by\)"),
    (lambda b: (b.by.tile_gpu("i", "j", 8, 8, "i0", "j0", "i1", "j1"),
                b.bx.tile_gpu("i", "j", 8, 8, "i0", "j0", "i1", "j1"),
                b.bx.cache_shared_at(b.by, "i")),
     "'by' has no loop 'i'"),
])
def test_illegal_gpu_schedules(schedule: Callable[[ex.Blur], object], match: str) -> None:
    b = ex.blur()
    with b.fn:
        schedule(b)
    refused(b.fn, match)


def test_a_host_computation_is_refused_by_the_gpu_target() -> None:
    refused(ex.blur().fn, "computation 'bx' runs on the host", me.TargetError)


# ---------------------------------------------------------------------------- CUDA

CUDA_PROGRAMS = {
    "figure3b": lambda: schedule_blur_gpu(ex.blur(), "figure3b").fn,
    "cache": lambda: schedule_blur_gpu(ex.blur(), "cache").fn,
    "matmul": lambda: schedule_matmul_gpu(ex.matmul("mm"), 16, True).fn,
    "heat2d": lambda: schedule_heat2d_gpu(ex.heat2d(), 16).fn,
    "triangle": lambda: triangle(8),
}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", sorted(CUDA_PROGRAMS))
def test_cuda_builds_with_nvcc(name: str) -> None:
    f = CUDA_PROGRAMS[name]()
    k = f.compile(target="gpu", dialect="cuda")
    assert k.artifact.launch["dialect"] == "cuda"
    assert k.library_path.exists() and '__global__ void me_' in k.source
    if "__shared__" in k.source:
        assert "__syncthreads();" in k.source


@pytest.mark.skipif(shutil.which("nvidia-smi") is None,
                    reason="no NVIDIA GPU here: the CUDA kernels are compiled, not run")
def test_cuda_runs_on_the_gpu(rng, assert_close_f32) -> None:
    a = rng.random((37, 70, 3), dtype=np.float32)
    k = CUDA_PROGRAMS["figure3b"]().compile(target="gpu", dialect="cuda")
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


def test_without_a_gpu_a_cuda_kernel_says_so(rng) -> None:
    if shutil.which("nvcc") is None or shutil.which("nvidia-smi") is not None:
        pytest.skip("needs nvcc and no GPU")
    k = CUDA_PROGRAMS["cache"]().compile(target="gpu", dialect="cuda")
    with pytest.raises(me.KernelRuntimeError, match="kernel blur: allocating inp on the "
                                                    "device: "):
        k(inp=rng.random((9, 9, 3), dtype=np.float32))


def test_the_default_dialect_is_opencl_without_a_gpu() -> None:
    if shutil.which("nvidia-smi") is not None:
        pytest.skip("a GPU is present: the default is cuda")
    k = CUDA_PROGRAMS["heat2d"]().compile(target="gpu")
    assert k.artifact.launch["dialect"] == "opencl"


# ---------------------------------------------------------------------------- the service


def test_gpu_compile_through_the_service(client, tmp_path, monkeypatch, rng) -> None:
    """The same GPU program compiled by a ``middleend serve`` process and in-process gives
    the same kernels and launch facts, and the remote build runs correctly here."""
    a = rng.random((20, 13), dtype=np.float32)
    b = rng.random((13, 27), dtype=np.float32)
    remote = schedule_matmul_gpu(ex.matmul("mm"), 8).fn.compile(
        target="gpu", dialect="opencl", service=client)
    np.testing.assert_allclose(remote(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path / "embedded"))
    local = opencl(schedule_matmul_gpu(ex.matmul("mm"), 8).fn)
    assert remote.source == local.source and "__local float b_A_shared_buf" in local.source
    assert remote.artifact.launch == local.artifact.launch
    assert remote.artifact.options == local.artifact.options
    assert remote.artifact.text("build_log").startswith("device: ")
    assert "__kernel void me_mm_k0" in remote.artifact.text("kernel_source")
    with pytest.raises(me.TargetError, match="max_threads_per_block"):
        schedule_matmul_gpu(ex.matmul("mm"), 16).fn.compile(
            target="gpu", dialect="opencl", max_threads_per_block=128, service=client)


class _FakeCL:
    """Just enough of pyopencl for probe_device: one device, and a build that fails with
    ``log`` (or succeeds when it is empty)."""

    class Error(Exception):
        pass

    class device_type:  # noqa: N801 - pyopencl's spelling
        GPU = 4

    def __init__(self, log: str) -> None:
        self.log = log
        dev = type("Device", (), {"name": "pthread-Some CPU", "type": 2})()
        self._platform = type("Platform", (), {"get_devices": lambda _: [dev]})()

    def get_platforms(self) -> list[object]:
        return [self._platform]

    def Context(self, devices: list[object]) -> object:  # noqa: N802 - pyopencl's name
        return devices

    def Program(self, ctx: object, source: str) -> object:  # noqa: N802
        assert "__kernel" in source
        cl = self

        class _Prog:
            def build(self) -> None:
                if cl.log:
                    raise cl.Error(cl.log)
        return _Prog()


def test_the_opencl_probe_names_why_a_device_builds_no_kernel(monkeypatch) -> None:
    """The availability probe builds one trivial kernel: a device that builds it is usable;
    one whose compiler refuses it is reported with the compiler's first error, and the
    opencl dialect is then refused in one line that says so (PoCL 3.0 on AMD Zen 5)."""
    from backends.gpu import target as gpu_target
    from backends.gpu.opencl import probe_device

    assert probe_device(_FakeCL("")) == ("pthread-Some CPU", None)
    log = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <device>:\n\n"
           "error: unknown target CPU 'generic'\nDevice failed to build the program\n")
    name, why = probe_device(_FakeCL(log))
    assert name == "pthread-Some CPU" and why is not None
    assert why.startswith("error: unknown target CPU 'generic' (the OpenCL compiler's LLVM "
                          "does not recognize this host CPU")
    assert probe_device(_FakeCL("some other failure"))[1] == "some other failure"

    monkeypatch.setattr(gpu_target, "probe_device", lambda cl: ("pthread-Some CPU", why))
    f = schedule_blur_gpu(ex.blur(), "figure3b", 8, 32).fn
    with pytest.raises(me.TargetUnavailable) as info:
        opencl(f)
    msg = str(info.value)
    assert msg.startswith("target 'gpu' (dialect opencl) is not available here: the OpenCL "
                          "device 'pthread-Some CPU' cannot build kernels: error: unknown "
                          "target CPU 'generic'") and "\n" not in msg
