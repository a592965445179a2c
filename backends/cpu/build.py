"""Building generated C for this machine's CPU (the C compiler, its flags, the host's
instruction set), through the shared cached builder of :mod:`backends.clike.build`."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path

from backends.clike.build import (
    BuildLimits,
    BuiltLibrary,
    build_cached,
    check_source_size,
    run_tool,
    tool_identity,
)
from middleend.ir.errors import BuildError
from middleend.target.paths import cache_root

# -ffp-contract=off: no fused multiply-add, so float results equal numpy's.
# -fwrapv: signed overflow wraps (as numpy does) instead of being undefined behaviour.
# (Kernels with a register tile also get -fno-tree-loop-distribute-patterns, by a pragma
# in their source: see backends/cpu/source.py.)
FLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fopenmp-simd", "-pthread", "-fPIC", "-shared",
                          "-std=gnu99", "-ffp-contract=off", "-fwrapv", "-fno-math-errno",
                          "-fno-trapping-math")


def compiler() -> list[str]:
    """The compiler command, from ``$CC`` (which may carry arguments) or ``cc``."""
    cmd = shlex.split(os.environ.get("CC", "") or "cc")
    return cmd or ["cc"]


def compiler_identity(cc: list[str]) -> str:
    """The first line of ``cc --version`` (part of every cache key)."""
    return tool_identity(cc, "C compiler")


def native_macros(cc: list[str]) -> str:
    """The compiler's predefined macros under ``-march=native`` (``-E -dM``): what the
    builds' ISA is, for the cache keys (:func:`host_isa`) and for the answers to a
    front-end's questions about the machine (``CpuTarget.machine``)."""
    cmd = [*cc, "-march=native", "-E", "-dM", "-x", "c", os.devnull]
    try:
        proc = run_tool(cmd, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"cannot run the C compiler: {exc}", cmd, "") from exc
    if proc.returncode != 0:
        raise BuildError("the C compiler does not accept -march=native", cmd,
                         proc.stdout + proc.stderr)
    return proc.stdout


def host_isa(cc: list[str]) -> tuple[str, str]:
    """What ``-march=native`` means on this machine, as the compiler sees it: a short
    summary of the vector extensions (for people) and a digest of every predefined macro
    (for cache keys: a library built for AVX-512 must never be served to an AVX2 host)."""
    macros = sorted(line for line in native_macros(cc).splitlines()
                    if line.startswith("#define"))
    names = {line.split()[1] for line in macros if len(line.split()) > 1}
    isa = [x for x, m in (("avx512f", "__AVX512F__"), ("avx2", "__AVX2__"), ("fma", "__FMA__"),
                          ("avx", "__AVX__"), ("sse4.2", "__SSE4_2__"), ("neon", "__ARM_NEON"),
                          ("sve", "__ARM_FEATURE_SVE")) if m in names]
    arch = "x86-64" if "__x86_64__" in names else ("aarch64" if "__aarch64__" in names
                                                   else "other")
    digest = hashlib.sha256("\n".join(macros).encode()).hexdigest()
    return f"{arch} {' '.join(isa) or 'baseline'}", digest


def float_lanes(cc: list[str]) -> int:
    """float32 lanes of the widest vectors ``-march=native`` gives (16 with AVX-512, 8
    with AVX/AVX2, 4 otherwise): schedules that size register tiles by the machine's
    vectors (``benchmarks/sgemm.py``) ask here instead of assuming one ISA."""
    isa = host_isa(cc)[0].split()
    return 16 if "avx512f" in isa else 8 if "avx" in isa or "avx2" in isa else 4


def cpu_fingerprint(cc: list[str]) -> str:
    """A digest of what this machine's CPU offers, for keys that must differ between an
    AVX2 and an AVX-512 host: the processor's flags from ``/proc/cpuinfo`` (no subprocess),
    or the compiler's ``-march=native`` macros where that file does not exist."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return host_isa(cc)[1]
    keep = sorted({line.strip() for line in text.splitlines()
                   if line.split(":")[0].strip() in ("vendor_id", "model name", "flags",
                                                      "Features", "CPU implementer",
                                                      "CPU part")})
    return hashlib.sha256("\n".join(keep).encode()).hexdigest()


def cache_dir() -> Path:
    """The C build cache, ``<cache root>/cpu`` (keyed by source, compiler, flags and
    the host's instruction set)."""
    return cache_root() / "cpu"


def flags_for(fp_contract: bool = False) -> tuple[str, ...]:
    """The compiler flags; ``fp_contract`` lets gcc fuse multiply-adds (faster, but float
    results may then differ from numpy's in the last bits)."""
    if not fp_contract:
        return FLAGS
    return tuple("-ffp-contract=fast" if f == "-ffp-contract=off" else f for f in FLAGS)


def compile_shared(source: str, directory: Path | None = None,
                   fp_contract: bool = False) -> BuiltLibrary:
    """Compile ``source`` to ``<cache>/<key>.so`` unless it is already there (the key also
    covers the host's instruction set: ``-march=native`` differs between machines).

    Raises BuildError (with the command and the compiler log) when the compiler fails,
    ResourceLimitError when the source or the compiler exceeds the build's caps
    (:class:`backends.clike.build.BuildLimits`: ``$MIDDLEEND_MAX_SOURCE_BYTES``,
    ``$MIDDLEEND_BUILD_TIMEOUT``, ``$MIDDLEEND_BUILD_MEMORY``)."""
    limits = BuildLimits.from_env()
    check_source_size(source, "C compiler", limits)  # before any compiler runs
    cc = compiler()
    return build_cached(source, cc, flags_for(fp_contract),
                        compiler_identity(cc) + "\0" + host_isa(cc)[1],
                        directory if directory is not None else cache_dir(), ".c",
                        "C compiler", ["-lm"], limits)
