"""Integrity of the build cache (digests of cached shared objects), of the artifact cache
(the key stored in each entry), and the caps on a build: the compiler's time, memory and
process group, its temporary files, and the size of the generated source (issue 14)."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from backends.clike.build import (
    BuildLimits,
    build_cached,
    clean_stale_temps,
    digest_path,
    file_digest,
    parse_size,
    verified_digest,
)
from backends.cpu.build import compile_shared
from middleend.ir.errors import ResourceLimitError
from middleend.service.cache import ArtifactCache
from middleend.service.diagnostics import diagnostic_of, status_of

HAVE_CC = shutil.which(os.environ.get("CC", "") or "cc") is not None
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler")

SRC_A = "int f(int x) { return x + 1; }\n"
SRC_B = "int f(int x) { return x * 1000; }\n"


def run_f(path: Path, x: int) -> subprocess.CompletedProcess[str]:
    """Load ``path`` and call ``f(x)`` in a child process (a bad library must not take
    the test process down)."""
    code = f"import ctypes; print(ctypes.CDLL({str(path)!r}).f({x}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as dead: nobody may have reaped it yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def fake_cc(tmp_path: Path, compile_body: str) -> Path:
    """A C compiler script that answers the probes (--version, -E) like a compiler and
    runs ``compile_body`` for a compile (``$out`` is the -o argument)."""
    return script(tmp_path / "fakecc", f"""
case "$*" in
  *--version*) echo "fakecc 1.0"; exit 0;;
  *" -E "*) echo "#define __x86_64__ 1"; exit 0;;
esac
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
{compile_body}
""")


def tmp_leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob(".tmp-*"))


# --- 1. the build cache's libraries carry a digest --------------------------------------

def _flip(so: Path, other: Path) -> None:
    raw = bytearray(so.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    so.write_bytes(bytes(raw))


def _truncate(so: Path, other: Path) -> None:
    so.write_bytes(so.read_bytes()[:200])


def _other_library(so: Path, other: Path) -> None:
    shutil.copyfile(other, so)


def _empty(so: Path, other: Path) -> None:
    so.write_bytes(b"")


def _no_sidecar(so: Path, other: Path) -> None:
    _other_library(so, other)
    digest_path(so).unlink()


def _garbled_sidecar(so: Path, other: Path) -> None:
    _other_library(so, other)
    digest_path(so).write_bytes(b"\xff\xfenot a digest")


@needs_cc
@pytest.mark.parametrize("damage", [_flip, _truncate, _other_library, _empty, _no_sidecar,
                                    _garbled_sidecar])
def test_damaged_library_is_rebuilt_not_served(tmp_path: Path, damage,
                                               caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "cpu"
    a = compile_shared(SRC_A, directory=cache)
    b = compile_shared(SRC_B, directory=cache)
    assert not a.cached and a.sha256 == file_digest(a.path)
    assert digest_path(a.path).read_text().strip() == a.sha256
    assert compile_shared(SRC_A, directory=cache).cached  # an intact entry is a hit
    damage(a.path, b.path)
    assert verified_digest(a.path) is None
    with caplog.at_level(logging.WARNING, logger="backends.clike.build"):
        again = compile_shared(SRC_A, directory=cache)
    assert not again.cached  # rebuilt, not served
    assert again.path == a.path and again.sha256 == a.sha256 == file_digest(a.path)
    assert verified_digest(a.path) == a.sha256
    assert ("has no digest" if damage is _no_sidecar else "does not match its digest") \
        in caplog.text and "rebuilding it" in caplog.text
    assert compile_shared(SRC_A, directory=cache).cached
    proc = run_f(again.path, 41)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "42"
    assert tmp_leftovers(cache) == []


@needs_cc
def test_cpu_target_artifact_after_corruption(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What the service sends: the artifact's library bytes are the rebuilt ones."""
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path))
    lib = compile_shared(SRC_A)
    good = lib.path.read_bytes()
    _truncate(lib.path, lib.path)
    rebuilt = compile_shared(SRC_A)
    assert rebuilt.path.read_bytes() == good


# --- 2. an artifact entry is served only under its own key -------------------------------

def test_artifact_entry_copied_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    k1, k2 = ArtifactCache.key_for("program", "1"), ArtifactCache.key_for("program", "2")
    cache.put(k1, b"the response for program 1")
    p1 = tmp_path / k1[:2] / f"{k1}.entry"
    p2 = tmp_path / k2[:2] / f"{k2}.entry"
    p2.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(p1, p2)
    assert cache.get(k2) is None
    assert not p2.exists()  # the bad entry is removed
    assert cache.stats.wrong_key == 1 and cache.stats.misses == 1
    assert cache.stats.corrupt == 0 and cache.stats.hits == 0
    assert cache.get(k1) == b"the response for program 1"  # the original is untouched
    cache.put(k2, b"the response for program 2")
    assert cache.get(k2) == b"the response for program 2"


def test_artifact_entry_with_its_key_field_rewritten_is_corrupt(tmp_path: Path) -> None:
    """Rewriting the stored key to the requested one breaks the digest (it covers the key)."""
    cache = ArtifactCache(tmp_path)
    k1, k2 = ArtifactCache.key_for("program", "1"), ArtifactCache.key_for("program", "2")
    cache.put(k1, b"the response for program 1")
    raw = bytearray((tmp_path / k1[:2] / f"{k1}.entry").read_bytes())
    raw[48:80] = bytes.fromhex(k2)
    p2 = tmp_path / k2[:2] / f"{k2}.entry"
    p2.parent.mkdir(parents=True, exist_ok=True)
    p2.write_bytes(bytes(raw))
    assert cache.get(k2) is None
    assert not p2.exists()
    assert cache.stats.corrupt == 1 and cache.stats.wrong_key == 0


def test_artifact_entry_of_the_old_format_is_a_miss(tmp_path: Path) -> None:
    import hashlib
    import struct
    cache = ArtifactCache(tmp_path)
    k = ArtifactCache.key_for("old")
    payload = b"from before keys were stored"
    p = tmp_path / k[:2] / f"{k}.entry"
    p.parent.mkdir(parents=True)
    p.write_bytes(struct.pack("<8s32sQ", b"MECACHE1", hashlib.sha256(payload).digest(),
                              len(payload)) + payload)
    assert cache.get(k) is None
    assert not p.exists()


# --- 3. the compiler's process group, time, memory and temporary files -------------------

def test_compiler_past_its_time_limit_is_killed_with_its_children(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = tmp_path / "pids"
    cc = fake_cc(tmp_path, f"""
echo $$ >> {pids}
sleep 1000 &
echo $! >> {pids}
echo partial > "$out"
wait
""")
    cache = tmp_path / "cache"
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("MIDDLEEND_BUILD_TIMEOUT", "1")
    t0 = time.monotonic()
    with pytest.raises(ResourceLimitError, match=r"time limit of 1 s.*MIDDLEEND_BUILD_TIMEOUT"):
        compile_shared(SRC_A, directory=cache)
    assert time.monotonic() - t0 < 30
    started = [int(x) for x in pids.read_text().split()]
    assert len(started) == 2
    for pid in started:
        assert wait_dead(pid), f"process {pid} outlived the build"
    assert tmp_leftovers(cache) == []
    assert list(cache.glob("*.so")) == []


def test_build_limit_error_is_resource_exhausted() -> None:
    d = diagnostic_of(ResourceLimitError("the C compiler exceeded the build's time limit"))
    assert status_of(d) == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
def test_compiler_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    pid_file, child_file = tmp_path / "compiler.pid", tmp_path / "child.pid"
    # a compiler driver with a pass of its own running (gcc and its cc1)
    cc = script(tmp_path / "slowcc", f"sleep 1000 &\necho $! > {child_file}\n"
                                     f"echo $$ > {pid_file}\nexec sleep 1000\n")
    cache = tmp_path / "cache"
    code = ("from pathlib import Path\nfrom backends.clike.build import build_cached\n"
            f"build_cached('int x;', [{str(cc)!r}], [], 'slow', Path({str(cache)!r}), '.c', "
            "'C compiler')\n")
    worker = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[1])
    try:
        end = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert worker.poll() is None, "the builder exited early"
            assert time.monotonic() < end, "the compiler never started"
            time.sleep(0.05)
        compiler_pid = int(pid_file.read_text())
        assert alive(compiler_pid)
        worker.kill()  # as the service kills a worker past its deadline
        worker.wait()
        assert wait_dead(compiler_pid), "the compiler outlived its builder"
        assert wait_dead(int(child_file.read_text())), "the compiler's pass outlived it"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    # the killed builder had no chance to clean up: its temporaries are stale later
    left = [cache / n for n in tmp_leftovers(cache)]
    assert left
    old = time.time() - 2 * 3600
    for p in left:
        os.utime(p, (old, old))
    fresh = cache / ".tmp-in-flight.so"
    fresh.write_bytes(b"another builder's")
    assert clean_stale_temps(cache) == len(left)
    assert tmp_leftovers(cache) == [fresh.name]


@needs_cc
def test_stale_temporaries_are_cleaned_when_a_build_runs(tmp_path: Path) -> None:
    cache = tmp_path / "cpu"
    cache.mkdir()
    stale_file, stale_dir = cache / ".tmp-abc.so", cache / ".tmp-xyz.d"
    stale_file.write_bytes(b"half a library")
    stale_dir.mkdir()
    (stale_dir / "ccXYZ.s").write_text("asm")
    old = time.time() - 2 * 3600
    for p in (stale_file, stale_dir):
        os.utime(p, (old, old))
    fresh = cache / ".tmp-fresh.so"
    fresh.write_bytes(b"in flight")
    compile_shared(SRC_A, directory=cache)
    assert tmp_leftovers(cache) == [fresh.name]


def test_compiler_runs_under_the_memory_and_cpu_caps(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    seen = tmp_path / "limits"
    cc = fake_cc(tmp_path, f"""
echo "$(ulimit -v) $(ulimit -t) $(ps -o pgid= -p $$ | tr -d ' ') $$" > {seen}
echo fake > "$out"
""")
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("MIDDLEEND_BUILD_MEMORY", "1G")
    monkeypatch.setenv("MIDDLEEND_BUILD_TIMEOUT", "30")
    compile_shared(SRC_A, directory=tmp_path / "cache")
    vmem, cpu, pgid, pid = seen.read_text().split()
    assert int(vmem) == (1 << 30) // 1024  # KiB
    assert int(cpu) == 31
    # its own process group (led by the supervisor that kills it with its parent)
    assert int(pgid) != os.getpgrp()
    # the defaults: 4 GiB
    monkeypatch.delenv("MIDDLEEND_BUILD_MEMORY")
    compile_shared(SRC_B, directory=tmp_path / "cache")
    assert int(seen.read_text().split()[0]) == 4 << 20


@needs_cc
def test_real_compiler_out_of_memory_names_the_limit(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIDDLEEND_BUILD_MEMORY", "40M")
    with pytest.raises(ResourceLimitError, match=r"40 MiB.*MIDDLEEND_BUILD_MEMORY"):
        compile_shared(SRC_A, directory=tmp_path / "cache")
    assert tmp_leftovers(tmp_path / "cache") == []


def test_compiler_reporting_out_of_memory_is_a_resource_error(tmp_path: Path) -> None:
    cc = script(tmp_path / "oomcc", "echo 'cc1: out of memory allocating 65536 bytes' >&2\n"
                "exit 1\n")
    with pytest.raises(ResourceLimitError, match="MIDDLEEND_BUILD_MEMORY"):
        build_cached(SRC_A, [str(cc)], [], "oom", tmp_path / "c", ".c", "C compiler",
                     limits=BuildLimits(timeout_s=30, memory_bytes=1 << 30))


# --- 4. the generated source is bounded before any compiler runs -------------------------

def test_source_over_the_limit_never_reaches_the_compiler(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = tmp_path / "ran"
    cc = script(tmp_path / "cc", f"touch {ran}\necho fakecc 1.0\n")
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("MIDDLEEND_MAX_SOURCE_BYTES", "1K")
    with pytest.raises(ResourceLimitError,
                       match=r"over the limit of 1 KiB .*MIDDLEEND_MAX_SOURCE_BYTES"):
        compile_shared("/* x */\n" * 200, directory=tmp_path / "cache")
    assert not ran.exists()
    with pytest.raises(ResourceLimitError, match="MIDDLEEND_MAX_SOURCE_BYTES"):
        build_cached("x" * 2000, [str(cc)], [], "id", tmp_path / "c", ".c", "C compiler",
                     limits=BuildLimits(max_source_bytes=1024))
    assert not ran.exists()


def test_default_source_limit_is_8_mib() -> None:
    limits = BuildLimits.from_env({})
    assert limits == BuildLimits(600.0, 4 << 30, 8 << 20)
    with pytest.raises(ResourceLimitError, match="8 MiB"):
        build_cached("x" * ((8 << 20) + 1), ["/nonexistent/cc"], [], "id", Path("/nonexistent"),
                     ".c", "C compiler", limits=limits)


def test_limits_from_the_environment() -> None:
    env = {"MIDDLEEND_BUILD_TIMEOUT": "2.5", "MIDDLEEND_BUILD_MEMORY": "512MiB",
           "MIDDLEEND_MAX_SOURCE_BYTES": "0"}
    assert BuildLimits.from_env(env) == BuildLimits(2.5, 512 << 20, 0)
    assert parse_size("4g") == 4 << 30 and parse_size("123") == 123
    for bad in ({"MIDDLEEND_BUILD_TIMEOUT": "soon"}, {"MIDDLEEND_BUILD_MEMORY": "-1"},
                {"MIDDLEEND_BUILD_MEMORY": "lots"}, {"MIDDLEEND_BUILD_TIMEOUT": "-3"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            BuildLimits.from_env(bad)


def test_source_limit_zero_turns_it_off(tmp_path: Path) -> None:
    cc = script(tmp_path / "cc", 'for a; do :; done\nout=""; prev=""\n'
                'for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                'echo lib > "$out"\n')
    lib = build_cached("x" * 5000, [str(cc)], [], "id", tmp_path / "c", ".c", "C compiler",
                       limits=BuildLimits(max_source_bytes=0))
    assert lib.path.read_text() == "lib\n"
