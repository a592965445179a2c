"""nvcc under the build caps (issue 14): the caps on compiler processes (address space,
CPU and wall time, process group) were only tried with gcc, and nvcc runs a chain of its
own tools (cudafe++, cicc, ptxas, fatbinary, nvlink), each with its own way of failing.

A CUDA compile through ``middleend serve`` builds under the default caps (no GPU is needed
to build); under a small address-space cap it is RESOURCE_EXHAUSTED naming the cap, and the
server still answers; nvcc past the time cap is killed with every tool it started; and
each way ptxas fails under a memory cap (the loader, a crash, its own "Memory allocation
failure") is a resource limit, not a build error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import grpc
import pytest
from service_util import SERVICE, assert_serving, raw_call, start_server

from backends.clike.build import BuildLimits, build_cached, run_tool
from backends.gpu.cuda import nvcc_flags
from middleend.api import examples, examples_gpu
from middleend.ir.errors import BuildError, ResourceLimitError
from middleend.service.client import connect
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the gpu "
                                                      "target's CUDA dialect cannot build here")


def cuda_request(name: str) -> bytes:
    """The papers' GPU blur (figure 3b) for the CUDA dialect, named ``name`` so that no
    cache of an earlier run answers it."""
    blur = examples_gpu.schedule_blur_gpu(examples.blur(), "figure3b").fn
    req = encode_request(blur, "gpu", dialect="cuda")
    req.function.name = name
    return req.SerializeToString()


def test_a_cuda_compile_through_the_service_builds_under_the_caps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MIDDLEEND_BUILD_MEMORY", "MIDDLEEND_BUILD_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)  # the defaults: 4 GiB, 600 s
    srv = start_server(tmp_path / "log", tmp_path / "cache", workers=1)
    try:
        with connect(srv.address, timeout=300) as c:
            resp = c.compile(pb.Request.FromString(cuda_request("capped")))
            files = {f.role: f for f in resp.artifact.files}
            assert files[pb.SHARED_OBJECT].content[:4] == b"\x7fELF"
            assert b"__global__ void me_capped" in files[pb.SOURCE].content
            assert resp.artifact.launch["dialect"] == "cuda" and not resp.cache_hit
            assert resp.artifact.build_command.startswith("nvcc ")
    finally:
        srv.stop()


def test_a_cuda_build_past_the_memory_cap_is_resource_exhausted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """128 MiB is less than nvcc's front end needs (it fails there, in cudafe++ or the
    host preprocessor, depending on the version; below ~60 MiB nvcc itself cannot load)."""
    monkeypatch.setenv("MIDDLEEND_BUILD_MEMORY", "128M")
    srv = start_server(tmp_path / "log", tmp_path / "cache", workers=1)
    try:
        with connect(srv.address, timeout=300) as c, grpc.insecure_channel(srv.address) as ch:
            code, details, diag = raw_call(ch, cuda_request("toobig"), timeout=300)
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details)
            assert "the CUDA compiler" in details and "128 MiB of address space" in details
            assert "$MIDDLEEND_BUILD_MEMORY" in details
            assert diag is not None and diag.kind == pb.RESOURCE_LIMIT
            assert c.health(SERVICE) == "SERVING"
            assert_serving(c)
    finally:
        srv.stop()
    assert not list((tmp_path / "log" / "root").rglob(".tmp-*"))


def _slow_cuda(lines: int) -> str:
    body = "\n".join(f"    x = sinf(x * {k}.5f + 1.0f);" for k in range(lines))
    return ("__global__ void k(float* a) {\n    float x = a[threadIdx.x];\n"
            f"{body}\n    a[threadIdx.x] = x;\n}}\n")


def _processes_under(root: Path) -> list[str]:
    """Live processes whose environment names ``root`` (the build gives its compiler
    TMPDIR=<cache>/.tmp-...; nvcc passes it on to its tools)."""
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            env = (d / "environ").read_bytes()
            name = (d / "comm").read_text().strip()
        except OSError:
            continue
        if state != "Z" and str(root).encode() in env:
            found.append(f"{name}:{d.name}")
    return found


def test_nvcc_past_the_time_cap_is_killed_with_its_tools(tmp_path: Path) -> None:
    assert NVCC is not None
    cache = tmp_path / "cuda"
    with pytest.raises(ResourceLimitError, match=r"time limit of 1 s.*MIDDLEEND_BUILD_TIMEOUT"):
        build_cached(_slow_cuda(3000), [NVCC], nvcc_flags("sm_75", False), "nvcc", cache,
                     ".cu", "CUDA compiler", limits=BuildLimits(timeout_s=1))
    assert _processes_under(tmp_path) == []
    assert not list(cache.glob(".tmp-*"))


def test_each_way_ptxas_fails_under_a_memory_cap_is_a_resource_limit(tmp_path: Path) -> None:
    """ptxas, run alone on a small kernel under caps from 8 to 64 MiB: the loader cannot
    map its libraries, it crashes (SIGSEGV, no message), or it says "Memory allocation
    failure"; each must be a resource limit naming the cap, never a build error."""
    assert NVCC is not None
    ptxas = Path(NVCC).resolve().with_name("ptxas")
    if not ptxas.exists():
        pytest.skip(f"no ptxas beside {NVCC}")
    src = tmp_path / "k.cu"
    src.write_text(_slow_cuda(2))
    made = run_tool([NVCC, "-arch=sm_75", "-ptx", str(src), "-o", str(tmp_path / "k.ptx")],
                    120)
    assert made.returncode == 0, made.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    refused, built = [], []
    for mib in (8, 16, 24, 32, 40, 48, 56, 64):
        limits = BuildLimits(timeout_s=60, memory_bytes=mib << 20)
        try:
            build_cached(ptx, [str(ptxas)], ("-arch=sm_75",), f"ptxas {mib}",
                         tmp_path / f"c{mib}", ".ptx", "CUDA assembler", limits=limits)
            built.append(mib)
        except ResourceLimitError as e:
            assert f"{mib} MiB of address space" in str(e) and "MIDDLEEND_BUILD_MEMORY" in str(e)
            refused.append(mib)
        except BuildError as e:  # pragma: no cover - the failure this test is about
            pytest.fail(f"ptxas under {mib} MiB: a build error, not a resource limit: {e}\n"
                        f"{e.log[-500:]}")
    assert refused and all(m > refused[-1] for m in built), (refused, built)
