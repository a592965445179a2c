"""Targets as plug-ins: the registry, availability, options per target, the refusals a
user meets (each one clear line), a target registered from outside the middle-end, and the
``middleend targets`` command."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import opencl_cannot_build

import middleend as me
from backends.clike.build import cache_key
from backends.cpu import CpuTarget
from backends.cpu.build import (
    SLOW_GATHERS,
    compile_shared,
    compiler,
    compiler_identity,
    cpu_fingerprint,
    fast_gathers,
    flags_for,
    host_isa,
    no_gather_flag,
    vector_flags,
)
from backends.planned import PlannedTarget
from middleend.driver.targets import TargetRegistry
from middleend.service.client import EmbeddedClient
from middleend.wire.decode import decode_target
from middleend.wire.encode import encode_request, encode_target
from middleend.wire.v1 import middleend_pb2 as pb

ROOT = Path(__file__).resolve().parents[1]


def scale(vector: bool = True) -> me.Function:
    with me.Function("scale") as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        x = me.Input("x", [n], me.float32)
        y = me.Computation("y", [i], x[i] * 3.0)
        if vector:
            y.vectorize(i, 4)
    return f


def test_registered_targets_and_their_status() -> None:
    status = {name: (ok, detail) for name, ok, detail in me.targets()}
    assert set(status) >= {"cpu", "gpu", "mpi", "fpga"}
    assert status["cpu"][0]
    assert any(arch in status["cpu"][1] for arch in ("x86-64", "aarch64"))
    problem = opencl_cannot_build()  # a host whose OpenCL compiler builds nothing
    assert status["gpu"][0] and (problem in status["gpu"][1] if problem else
                                 "OpenCL on" in status["gpu"][1])
    assert status["mpi"][0] and "mpicc" in status["mpi"][1]
    assert status["fpga"][0] and "HLS headers in" in status["fpga"][1]


def test_a_planned_target_is_unavailable_in_one_line() -> None:
    planned = PlannedTarget("tpu", "a planned target", frozenset(), frozenset())
    with pytest.raises(me.TargetUnavailable) as info:
        planned.require()
    msg = str(info.value)
    assert msg == ("target 'tpu' is not available here: not implemented in this version of "
                   "the middle-end")


def test_unknown_targets_and_options_are_refused_by_name() -> None:
    with pytest.raises(me.TargetError, match=r"unknown target 'tpu' \(registered targets: "
                                             r"cpu, fpga, gpu, mpi"):
        scale().compile(target="tpu")
    with pytest.raises(me.TargetError, match=r"target 'cpu' has no option 'dialect' \(its "
                                             r"options: fp_contract\)"):
        scale().compile(target="cpu", dialect="cuda")
    with pytest.raises(me.TargetError, match="bad value 'yes' for option 'fp_contract'"):
        scale().compile(fp_contract="yes")


def test_target_options_reach_the_build(rng) -> None:
    x = rng.random(33, dtype=np.float32)
    plain = scale().compile()
    fused = scale().compile(fp_contract=True)
    assert plain.artifact.options == {"fp_contract": "False"}
    assert fused.artifact.options == {"fp_contract": "True"}
    assert "-ffp-contract=fast" in fused.artifact.build_command
    np.testing.assert_allclose(fused(x=x)["y"], x * 3.0, rtol=1e-6)


def test_named_targets_travel_by_name_with_text_options() -> None:
    t = encode_target("toy", {"width": 8, "fast": True}, pb.Target())
    assert decode_target(t) == ("toy", {"width": "8", "fast": "True"})
    assert decode_target(pb.Target()) == ("cpu", {})
    assert decode_target(encode_target("cpu", {"fp_contract": True}, pb.Target())) == \
        ("cpu", {"fp_contract": True})


def test_the_host_cpu_is_part_of_the_cpu_targets_keys(tmp_path: Path) -> None:
    summary, digest = host_isa(compiler())
    assert summary.split()[0] in ("x86-64", "aarch64", "other") and len(digest) == 64
    assert cpu_fingerprint(compiler()) in CpuTarget().identity()  # the service's cache
    src = "int me_x(void) { return 0; }\n"
    built = compile_shared(src, tmp_path)  # the build cache: keyed by the macros' digest
    assert built.key == cache_key(src, compiler_identity(compiler()) + "\0" + digest,
                                  flags_for(False))


_GATHER_LOOP = """
void me_g(const float *restrict a, const int *restrict ix, float *restrict o, int n) {
    for (int i = 0; i < n; i++) o[i] = a[ix[i]];
}
"""


def test_zen4_and_zen5_keep_their_gathers() -> None:
    """gcc 12 tunes a Zen 4 and a Zen 5 as a Zen 3, but both gather faster than they load
    the lanes one by one (warpAffine 30.7 -> 21.4 ms on Zen 5, 31-34 -> 27-30 ms on Zen
    4): SLOW_GATHERS is for Zen 1-3 only (family 19h without AVX-512 is a Zen 3), and for
    no other vendor's CPU or an unknown one."""
    assert fast_gathers(("AuthenticAMD", 0x1A))
    assert fast_gathers(("AuthenticAMD", 0x1B))
    assert fast_gathers(("AuthenticAMD", 0x1A), avx512=True)
    assert fast_gathers(("AuthenticAMD", 0x19), avx512=True)  # Zen 4
    assert not fast_gathers(("AuthenticAMD", 0x19))  # Zen 3
    assert not fast_gathers(("AuthenticAMD", 0x17))  # Zen 1 and Zen 2
    assert not fast_gathers(("AuthenticAMD", 0x17), avx512=True)
    assert not fast_gathers(("GenuineIntel", 6), avx512=True)
    assert not fast_gathers(("GenuineIntel", 6))
    assert not fast_gathers(None)


def test_builds_for_a_zen_core_leave_out_gathers(tmp_path: Path) -> None:
    """A host whose compiler tunes for AMD Zen gets SLOW_GATHERS in its summary, and its
    builds the compiler's flag against 8-element gathers: gcc 12 for Zen 3 vectorizes an
    indexed read into vgatherdps, which there is slower than 8 loads (warpAffine: 145 ->
    100 ms). Checked by building a gather loop for -march=znver3 with and without it."""
    cc = compiler()
    flag = no_gather_flag(tuple(cc))
    if not flag:
        pytest.skip(f"{cc[0]} has no flag against gathers (not gcc)")
    assert vector_flags(f"x86-64 avx2 fma avx {SLOW_GATHERS}", cc) == flag
    assert vector_flags("x86-64 avx2 fma avx", cc) == ()
    summary = host_isa(cc)[0]
    assert (flag[0] in flags_for(False)) == (SLOW_GATHERS in summary.split())
    src = tmp_path / "g.c"
    src.write_text(_GATHER_LOOP)
    asm = {}
    for label, extra in (("plain", []), ("no gathers", list(flag))):
        out = tmp_path / f"{len(asm)}.s"
        subprocess.run([*cc, "-O3", "-march=znver3", *extra, "-S", str(src), "-o", str(out)],
                       check=True, capture_output=True)
        asm[label] = out.read_text()
    assert "vgatherdps" in asm["plain"] and "vgatherdps" not in asm["no gathers"]


class NoVectorCpu(CpuTarget):
    """A target from outside the middle-end: the cpu target without vector loops."""

    name = "novec"
    summary = "cpu without vector loops (a test plug-in)"
    tags = frozenset({"parallel", "unroll"})


def test_a_target_plugged_in_from_outside(rng) -> None:
    registry = TargetRegistry({"novec": lambda: NoVectorCpu, "cpu": lambda: CpuTarget})
    with EmbeddedClient(registry=registry) as client:
        with pytest.raises(me.TargetError, match="target 'novec' cannot honour tag 'vector' "
                                                 "on loop 'i_vi' of y") as info:
            scale().compile(target="novec", service=client)
        assert "tag 'vector' is honoured by: cpu" in str(info.value)
        with me.Function("plain") as f:
            n = me.Param("N")
            i = me.Var("i", 0, n)
            x = me.Input("x", [n], me.float32)
            me.Computation("y", [i], x[i] + 1.0).parallelize(i)
        k = f.compile(target="novec", service=client)
    assert k.artifact.target == "novec"
    x = rng.random(17, dtype=np.float32)
    np.testing.assert_allclose(k(x=x)["y"], x + 1.0)


def test_a_bad_plugin_is_reported() -> None:
    registry = TargetRegistry({"odd": lambda: object()})
    with pytest.raises(me.TargetError, match="is not a middle-end target named 'odd'"):
        registry.lookup("odd")


def test_check_needs_no_toolchain_but_compile_does() -> None:
    req = encode_request(scale(vector=False), target="fpga")
    with EmbeddedClient() as client:
        assert client.check(req).legal
        assert client.check(encode_request(scale(), target="tpu")).legal  # unknown: legality
        with pytest.raises(me.TargetError, match="target 'gpu' cannot honour tag 'vector'"):
            client.check(encode_request(scale(), target="gpu"))
        assert client.compile(req).artifact.target == "fpga"  # its toolchain is here


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "middleend", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_cli_lists_targets_and_refuses_in_one_line(tmp_path: Path) -> None:
    out = _cli("targets", "-v")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(ln.startswith("cpu    available") for ln in lines)
    assert any(ln.startswith("gpu    available") for ln in lines)
    assert any(ln.startswith("mpi    available") for ln in lines)
    assert any(ln.startswith("fpga   available") for ln in lines)
    assert "options: fp_contract" in out.stdout
    req = tmp_path / "blur.json"
    assert _cli("example", "blur", "-o", str(req)).returncode == 0
    for args, expected in [
        (("--target", "cpu", "-O", "dialect=cuda"), "target 'cpu' has no option 'dialect'"),
        (("-O", "fp_contract=maybe"), "option 'fp_contract' takes true or false"),
        (("--target", "tpu"), "unknown target 'tpu'"),
    ]:
        bad = _cli("compile", str(req), "-o", str(tmp_path / "out"), *args)
        assert bad.returncode != 0
        assert expected in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    missing = _cli("compile", str(tmp_path / "nope.json"), "-o", str(tmp_path / "out"))
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"middleend compile: No such file or directory: " \
                                     f"{tmp_path / 'nope.json'}"
    ok = _cli("compile", str(req), "-o", str(tmp_path / "out"), "-O", "fp_contract=true")
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "out" / "libblur.so").exists()


def test_target_traits_say_what_a_front_end_may_rely_on() -> None:
    """Front-ends ask the registry what a target honours instead of naming targets: the
    gpu target runs every computation on the device (the Halide front-end then maps the
    stages Halide runs on the host), the cpu target runs host statements."""
    gpu, cpu = me.target_traits("gpu"), me.target_traits("cpu")
    assert not gpu.host_statements and {"gpu_block", "gpu_thread"} <= gpu.tags
    assert cpu.host_statements and "parallel" in cpu.tags
    with pytest.raises(me.TargetError, match="unknown target 'tpu' \\(registered targets: "):
        me.target_traits("tpu")


def test_target_machine_is_the_compilers_description_of_this_host() -> None:
    """``me.target_machine``: the cpu target builds for this host, so its machine is what
    the compiler predefines with -march=native (a front-end answers target queries from
    it: the arch, the pointer width, the ISA macros, the same as a plain compile's where
    they do not depend on -march); the device and simulator targets do not say."""
    m = me.target_machine("cpu")
    assert m is not None
    plain = subprocess.run([*compiler(), "-dM", "-E", "-x", "c", "/dev/null"],
                           capture_output=True, text=True, check=True).stdout
    base = me.Machine.from_defines(plain)
    for name in ("__x86_64__", "__aarch64__", "__linux__", "__APPLE__", "__SSE2__"):
        assert m.defines(name) == base.defines(name), name
    assert m.value("__SIZEOF_SIZE_T__") == base.value("__SIZEOF_SIZE_T__") == \
        str(struct.calcsize("P"))
    assert len(m.macros) >= len(base.macros)  # -march=native only adds ISA macros
    for name in ("gpu", "mpi", "fpga"):
        assert me.target_machine(name) is None, name
    with pytest.raises(me.TargetError, match="unknown target 'tpu'"):
        me.target_machine("tpu")


@pytest.mark.parametrize("option, value, expected", [
    ("max_threads_per_block", -3, "option 'max_threads_per_block' must be a positive "
                                  "number, got -3"),
    ("max_threads_per_block", 0, "option 'max_threads_per_block' cannot be 0"),
    ("shared_memory_kib", -1, "option 'shared_memory_kib' must be a positive number, got -1"),
    ("shared_memory_kib", 0, "option 'shared_memory_kib' cannot be 0"),
])
def test_gpu_block_limits_must_be_positive(option: str, value: int, expected: str,
                                           tmp_path: Path) -> None:
    """A block limit of 0 or less is a mistake, refused where the options are read: -3 was
    accepted (a kernel was then refused for having "more than max_threads_per_block=-3"
    threads) and 0, which a request cannot tell from unset, silently became the default."""
    with pytest.raises(me.TargetError, match=expected):
        scale(vector=False).compile(target="gpu", **{option: value})
    req = tmp_path / "blur.json"
    assert _cli("example", "blur", "-o", str(req)).returncode == 0
    bad = _cli("compile", str(req), "-o", str(tmp_path / "out"), "--target", "gpu",
               "-O", f"{option}={value}")
    assert bad.returncode == 1
    assert expected in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
