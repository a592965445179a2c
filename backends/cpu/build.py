"""Building generated C for this machine's CPU (the C compiler, its flags, the host's
instruction set), through the shared cached builder of :mod:`backends.clike.build`."""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
from collections.abc import Sequence
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
from middleend.target.base import Machine
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
    front-end's questions about the machine (``CpuTarget.machine``). Asked once per
    process and compiler: every in-process compile makes new targets, which ask it for
    their cache keys and flags (a compiler run, 15-20 ms each time), and neither the
    compiler's answer nor the CPU changes while the process runs."""
    return _native_macros(tuple(cc))


@functools.lru_cache(maxsize=16)
def _native_macros(cc: tuple[str, ...]) -> str:
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
    isa = [x for x, m in (("avx512f", "__AVX512F__"), ("avx512fp16", "__AVX512FP16__"),
                          ("avx2", "__AVX2__"), ("fma", "__FMA__"),
                          ("avx", "__AVX__"), ("sse4.2", "__SSE4_2__"), ("neon", "__ARM_NEON"),
                          ("sve", "__ARM_FEATURE_SVE")) if m in names]
    arch = "x86-64" if "__x86_64__" in names else ("aarch64" if "__aarch64__" in names
                                                   else "other")
    if "avx2" in isa and any(n.startswith("__tune_znver") for n in names) and \
            not fast_gathers(_cpu_identity(), "avx512f" in isa):
        isa.append(SLOW_GATHERS)
    digest = hashlib.sha256("\n".join(macros).encode()).hexdigest()
    return f"{arch} {' '.join(isa) or 'baseline'}", digest


def float_lanes(cc: list[str]) -> int:
    """float32 lanes of the widest vectors ``-march=native`` gives (16 with AVX-512, 8
    with AVX/AVX2, 4 otherwise; :meth:`Machine.vector_bytes`): schedules that size
    register tiles by the machine's vectors (``benchmarks/sgemm.py``) ask here instead of
    assuming one ISA. The builds use vectors that wide (:func:`vector_flags`)."""
    return (Machine.from_defines(native_macros(cc)).vector_bytes(True, 4) or 16) // 4


def vector_registers(cc: list[str]) -> int:
    """Architectural vector registers of the build's ISA (:meth:`Machine.vector_registers`;
    16 where it does not say). A register tile of accumulators is sized by it: with 16, a
    6 x 2-vector tile (12 accumulators, 2 vectors of B, one broadcast) is the largest that
    does not spill; with 32, a 6 x 4-vector one."""
    return Machine.from_defines(native_macros(cc)).vector_registers() or 16


# In a host_isa summary: the compiler tunes for an AMD Zen core, whose vector gathers are
# slower than the scalar loads they replace (see vector_flags).
SLOW_GATHERS = "slow-gathers"
# How gcc spells "no 8-element gathers": later releases' name first, then gcc 12's.
_NO_GATHER = ("-mtune-ctrl=^use_gather_8parts", "-mtune-ctrl=^use_gather")


# The first AMD family whose gathers beat the loads they replace whatever its vectors: Zen 5
# (family 1Ah). In family 19h, Zen 4 (AVX-512) does and Zen 3 (AVX2) does not.
_FAST_GATHER_FAMILY = 0x1A


@functools.lru_cache(maxsize=1)
def _cpu_identity() -> tuple[str, int] | None:
    """The CPU's vendor and family from ``/proc/cpuinfo`` (None where it cannot be read):
    the compiler's tuning does not tell them (gcc 12 tunes a Zen 5 as a Zen 3)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines()[:30] if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    try:
        return fields["vendor_id"], int(fields["cpu family"])
    except (KeyError, ValueError):
        return None


def fast_gathers(cpu: tuple[str, int] | None, avx512: bool = False) -> bool:
    """Whether an AMD CPU (``(vendor, family)``, :func:`_cpu_identity`; ``avx512``: the
    build's ISA has AVX-512F) gathers faster than it loads the lanes one by one, so a build
    for it keeps the compiler's gathers even where the compiler's tuning is a slow-gather
    Zen's. warpAffine's bilinear reads, 2112x3520x3, one run, interleaved, the same bits:

    - Zen 5 (family 1Ah): 30.7 ms with gcc 12's scalar loads and inserts, 21.4 ms with its
      16-lane vgatherdps (Halide 27-29 ms);
    - Zen 4 (family 19h with AVX-512): best of 15, three rounds, 31.1-33.8 ms without
      gathers, 27.4-30.3 ms with them (Halide 31.4-33.8 ms);
    - Zen 3 (family 19h, AVX2 only): 145 ms with gathers, 100 ms without (see
      :func:`vector_flags`). Zen 1 and 2 (family 17h) follow gcc's own tuning, which leaves
      8-element gathers out for them.

    Family 19h holds both Zen 3 and Zen 4; AVX-512 tells them apart."""
    if cpu is None or cpu[0] != "AuthenticAMD":
        return False
    return cpu[1] >= _FAST_GATHER_FAMILY or (cpu[1] == 0x19 and avx512)


@functools.lru_cache(maxsize=8)
def no_gather_flag(cc: tuple[str, ...]) -> tuple[str, ...]:
    """The flag that keeps ``cc`` from vectorizing an 8-element indexed read into one
    gather instruction, the first of :data:`_NO_GATHER` it accepts (none: an empty tuple;
    clang has no such knob). Memoized per compiler command: every build asks."""
    for flag in _NO_GATHER:
        try:
            proc = run_tool([*cc, flag, "-x", "c", "-fsyntax-only", os.devnull], timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return ()
        if proc.returncode == 0 and "unknown" not in (proc.stdout + proc.stderr):
            return (flag,)
    return ()


def vector_flags(isa_summary: str, cc: list[str] | None = None) -> tuple[str, ...]:
    """Flags that make the build's vectors as wide as :func:`float_lanes` says.

    gcc's tuning for recent AVX-512 cores (``-march=native`` on Ice Lake, Sapphire Rapids)
    prefers 256-bit vectors, so ``vectorize(j, 16)`` of floats became two ymm operations
    where Halide's code for the same schedule uses one zmm, and a 6 x 4-vector sgemm
    register tile (24 zmm accumulators) became 48 ymm ones, which spill. Measured on a
    2-core Sapphire Rapids (AVX-512): sgemm at N=1024 ran at 0.52x numpy with ymm and 0.92-
    1.09x with zmm and the wider tile; rgbyuv420's planes at 1.00-1.04x Halide against
    1.02-1.06x. So on AVX-512 hosts the builds ask for 512-bit vectors.

    Where the CPU computes ``_Float16`` natively (AVX512-FP16: Sapphire Rapids), half
    arithmetic is built as on every other host, in float and rounded back at each of the
    printer's casts (``-mno-avx512fp16``): natively, gcc contracted ``(_Float16)(a * b) +
    c`` into one half FMA under ``fp_contract`` (the Halide front-end's default, as
    Halide's), which neither Halide (it emulates halves) nor numpy computes: float16
    results differed from Halide's in the last bit (tests/test_halide_float16.py).

    Where the compiler tunes for an AMD Zen core (``SLOW_GATHERS`` in the summary: gcc 12
    vectorizes 8-float indexed reads into ``vgatherdps`` for Zen 3), the builds ask for no
    8-element gathers (:func:`no_gather_flag`): a Zen 3 gathers slower than it loads the 8
    values one by one and inserts them, what Halide's code does on AVX2. warpAffine's
    bilinear reads, measured on a 2-core Zen 3 in one run, interleaved: 145 -> 100 ms, the
    same bits (Halide 92-104 ms). gcc 12 tunes a Zen 4 or Zen 5 as a Zen 3 too; those
    keep their gathers (:func:`fast_gathers`)."""
    isa = isa_summary.split()
    return (("-mprefer-vector-width=512",) if "avx512f" in isa else ()) + \
        (("-mno-avx512fp16",) if "avx512fp16" in isa else ()) + \
        (no_gather_flag(tuple(cc or compiler())) if SLOW_GATHERS in isa else ())


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


def flags_for(fp_contract: bool = False, isa: str | None = None) -> tuple[str, ...]:
    """The compiler flags on this host: :data:`FLAGS` and the :func:`vector_flags` of
    ``isa`` (a :func:`host_isa` summary; None probes :func:`compiler`); ``fp_contract``
    lets gcc fuse multiply-adds (faster, but float results may then differ from numpy's in
    the last bits)."""
    flags = FLAGS + vector_flags(isa if isa is not None else host_isa(compiler())[0])
    if not fp_contract:
        return flags
    return tuple("-ffp-contract=fast" if f == "-ffp-contract=off" else f for f in flags)


def compile_shared(source: str, directory: Path | None = None,
                   fp_contract: bool = False, include_dirs: Sequence[str] = ()
                   ) -> BuiltLibrary:
    """Compile ``source`` to ``<cache>/<key>.so`` unless it is already there (the key also
    covers the host's instruction set: ``-march=native`` differs between machines).

    Raises BuildError (with the command and the compiler log) when the compiler fails,
    ResourceLimitError when the source or the compiler exceeds the build's caps
    (:class:`backends.clike.build.BuildLimits`: ``$MIDDLEEND_MAX_SOURCE_BYTES``,
    ``$MIDDLEEND_BUILD_TIMEOUT``, ``$MIDDLEEND_BUILD_MEMORY``)."""
    limits = BuildLimits.from_env()
    check_source_size(source, "C compiler", limits)  # before any compiler runs
    cc = compiler()
    summary, digest = host_isa(cc)
    flags = flags_for(fp_contract, summary) + tuple(f"-I{d}" for d in include_dirs)
    return build_cached(source, cc, flags,
                        compiler_identity(cc) + "\0" + digest,
                        directory if directory is not None else cache_dir(), ".c",
                        "C compiler", ["-lm"], limits)
