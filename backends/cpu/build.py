"""Building generated C into a shared object, with a content-addressed on-disk cache.

The cache key covers everything that determines the binary (the source, the compiler's
identity and the flags), so a hit can be reused without recompiling; writes go through a
temporary file in the cache directory and ``os.replace`` so that concurrent builders never
observe a half-written library.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from middleend.ir.errors import BuildError
from middleend.target.paths import cache_root

# -ffp-contract=off: no fused multiply-add, so float results equal numpy's.
# -fwrapv: signed overflow wraps (as numpy does) instead of being undefined behaviour.
FLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared",
                          "-std=gnu99", "-ffp-contract=off", "-fwrapv")


@dataclass(frozen=True)
class BuiltLibrary:
    """A built (or cached) shared object: ``path`` to load, ``key`` its cache key,
    ``source`` the C it came from, ``log`` the compiler output, ``cached`` whether it was
    reused rather than compiled now."""

    path: Path
    key: str
    source: str
    log: str
    cached: bool


def compiler() -> list[str]:
    """The compiler command, from ``$CC`` (which may carry arguments) or ``cc``."""
    cmd = shlex.split(os.environ.get("CC", "") or "cc")
    return cmd or ["cc"]


def compiler_identity(cc: list[str]) -> str:
    """The first line of ``cc --version``: part of the cache key so that a compiler
    upgrade never reuses stale binaries."""
    try:
        proc = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"cannot run the C compiler: {exc}", [*cc, "--version"], "") from exc
    if proc.returncode != 0:
        raise BuildError("the C compiler does not answer --version", [*cc, "--version"],
                         proc.stdout + proc.stderr)
    lines = (proc.stdout or proc.stderr).splitlines()
    return lines[0].strip() if lines else " ".join(cc)


def host_isa(cc: list[str]) -> tuple[str, str]:
    """What ``-march=native`` means on this machine, as the compiler sees it: a short
    summary of the vector extensions (for people) and a digest of every predefined macro
    (for cache keys: a library built for AVX-512 must never be served to an AVX2 host)."""
    cmd = [*cc, "-march=native", "-E", "-dM", "-x", "c", os.devnull]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"cannot run the C compiler: {exc}", cmd, "") from exc
    if proc.returncode != 0:
        raise BuildError("the C compiler does not accept -march=native", cmd,
                         proc.stdout + proc.stderr)
    macros = sorted(line for line in proc.stdout.splitlines() if line.startswith("#define"))
    names = {line.split()[1] for line in macros if len(line.split()) > 1}
    isa = [x for x, m in (("avx512f", "__AVX512F__"), ("avx2", "__AVX2__"), ("fma", "__FMA__"),
                          ("avx", "__AVX__"), ("sse4.2", "__SSE4_2__"), ("neon", "__ARM_NEON"),
                          ("sve", "__ARM_FEATURE_SVE")) if m in names]
    arch = "x86-64" if "__x86_64__" in names else ("aarch64" if "__aarch64__" in names
                                                   else "other")
    digest = hashlib.sha256("\n".join(macros).encode()).hexdigest()
    return f"{arch} {' '.join(isa) or 'baseline'}", digest


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


def cache_key(source: str, identity: str, flags: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for part in (source, identity, "\0".join(flags)):
        h.update(part.encode())
        h.update(b"\0\1\0")
    return h.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def flags_for(fp_contract: bool = False) -> tuple[str, ...]:
    """The compiler flags; ``fp_contract`` lets gcc fuse multiply-adds (faster, but float
    results may then differ from numpy's in the last bits)."""
    if not fp_contract:
        return FLAGS
    return tuple("-ffp-contract=fast" if f == "-ffp-contract=off" else f for f in FLAGS)


def compile_shared(source: str, directory: Path | None = None,
                   fp_contract: bool = False) -> BuiltLibrary:
    """Compile ``source`` to ``<cache>/<key>.so`` unless it is already there.

    Raises BuildError (with the command and the compiler log) when the compiler fails."""
    cc = compiler()
    flags = flags_for(fp_contract)
    key = cache_key(source, compiler_identity(cc) + "\0" + host_isa(cc)[1], flags)
    out_dir = directory if directory is not None else cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    so, log_path = out_dir / f"{key}.so", out_dir / f"{key}.log"
    if so.exists():
        log = log_path.read_text() if log_path.exists() else ""
        return BuiltLibrary(so, key, source, log, True)
    src = out_dir / f"{key}.c"
    _write_atomic(src, source)
    fd, tmp_so = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".so")
    os.close(fd)
    cmd = [*cc, *flags, str(src), "-o", tmp_so, "-lm"]
    try:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BuildError(f"cannot run the C compiler: {exc}", cmd, "") from exc
        log = proc.stdout + proc.stderr
        _write_atomic(log_path, log)
        if proc.returncode != 0:
            raise BuildError(f"the C compiler failed (exit status {proc.returncode}) on "
                             f"{src}", cmd, log)
        os.replace(tmp_so, so)
    finally:
        Path(tmp_so).unlink(missing_ok=True)
    return BuiltLibrary(so, key, source, log, False)
