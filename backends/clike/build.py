"""Building generated source into a shared object, with a content-addressed on-disk cache
(the C compiler for the cpu target, nvcc for the gpu target's CUDA dialect).

The cache key covers everything that determines the binary (the source, the compiler's
identity and the flags), so a hit can be reused without recompiling; writes go through a
temporary file in the cache directory and ``os.replace`` so that concurrent builders never
observe a half-written library.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from middleend.ir.errors import BuildError


@dataclass(frozen=True)
class BuiltLibrary:
    """A built (or cached) shared object: ``path`` to load, ``key`` its cache key,
    ``source`` the code it came from, ``log`` the compiler output, ``cached`` whether it
    was reused rather than compiled now."""

    path: Path
    key: str
    source: str
    log: str
    cached: bool


def cache_key(source: str, identity: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in (source, identity, "\0".join(flags)):
        h.update(part.encode())
        h.update(b"\0\1\0")
    return h.hexdigest()


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def tool_identity(cmd: Sequence[str], what: str) -> str:
    """The first line of ``<cmd> --version``: part of the cache key so that a compiler
    upgrade never reuses stale binaries."""
    try:
        proc = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"cannot run the {what}: {exc}", [*cmd, "--version"], "") from exc
    if proc.returncode != 0:
        raise BuildError(f"the {what} does not answer --version", [*cmd, "--version"],
                         proc.stdout + proc.stderr)
    lines = [ln for ln in (proc.stdout or proc.stderr).splitlines() if ln.strip()]
    return lines[-1].strip() if what == "CUDA compiler" and lines else \
        (lines[0].strip() if lines else " ".join(cmd))


def build_cached(source: str, compiler: Sequence[str], flags: Sequence[str], identity: str,
                 out_dir: Path, suffix: str, what: str, libs: Sequence[str] = ()
                 ) -> BuiltLibrary:
    """Compile ``source`` (a file ending ``suffix``) to ``<out_dir>/<key>.so`` with
    ``compiler flags src -o lib libs``, unless it is already there. Raises BuildError
    (with the command and the compiler's log) when the compiler fails."""
    key = cache_key(source, identity, flags)
    out_dir.mkdir(parents=True, exist_ok=True)
    so, log_path = out_dir / f"{key}.so", out_dir / f"{key}.log"
    if so.exists():
        log = log_path.read_text() if log_path.exists() else ""
        return BuiltLibrary(so, key, source, log, True)
    src = out_dir / f"{key}{suffix}"
    write_atomic(src, source)
    fd, tmp_so = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".so")
    os.close(fd)
    cmd = [*compiler, *flags, str(src), "-o", tmp_so, *libs]
    try:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BuildError(f"cannot run the {what}: {exc}", cmd, "") from exc
        log = proc.stdout + proc.stderr
        write_atomic(log_path, log)
        if proc.returncode != 0:
            raise BuildError(f"the {what} failed (exit status {proc.returncode}) on {src}",
                             cmd, log)
        os.replace(tmp_so, so)
    finally:
        Path(tmp_so).unlink(missing_ok=True)
    return BuiltLibrary(so, key, source, log, False)
