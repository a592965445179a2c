"""Building generated source into a shared object, with a content-addressed on-disk cache
(the C compiler for the cpu target, nvcc for the gpu target's CUDA dialect).

The cache key covers everything that determines the binary (the source, the compiler's
identity and the flags), so a hit can be reused without recompiling; writes go through a
temporary file in the cache directory and ``os.replace`` so that concurrent builders never
observe a half-written library.

Each ``<key>.so`` has a sidecar ``<key>.so.sha256`` (the digest of its bytes, published
before the library): a hit is served only when the library's bytes match it, so a
truncated, flipped or swapped library is rebuilt (with a warning), never loaded or sent.

The compiler is an untrusted amount of work: it runs in its own session (process group),
dies with the thread that started it (``setpriv --pdeathsig`` where util-linux has it),
and under caps on its wall time, CPU time and address space (:class:`BuildLimits`, from
the environment);
the generated source is bounded before the compiler runs. A cap that is hit raises
:class:`~middleend.ir.errors.ResourceLimitError` (the service's ``RESOURCE_EXHAUSTED``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from middleend.ir.errors import BuildError, ResourceLimitError
from middleend.target import paths

log = logging.getLogger(__name__)

TIMEOUT_ENV = "MIDDLEEND_BUILD_TIMEOUT"
MEMORY_ENV = "MIDDLEEND_BUILD_MEMORY"
SOURCE_ENV = "MIDDLEEND_MAX_SOURCE_BYTES"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MEMORY_BYTES = 4 << 30
DEFAULT_MAX_SOURCE_BYTES = 8 << 20
STALE_TMP_SECONDS = 3600.0
TMP_PREFIX = ".tmp-"
DIGEST_SUFFIX = ".sha256"

_SIZE_RE = re.compile(r"\s*(\d+)\s*([kmgt]?)(i?b)?\s*", re.IGNORECASE)
_HEX64 = re.compile(r"[0-9a-f]{64}")
# how compilers say they ran out of memory: gcc ("out of memory allocating"), the dynamic
# loader ("failed to map segment"), and nvcc's stages: cudafe++ and cicc ("out of memory",
# "LLVM ERROR: out of memory"), ptxas, fatbinary and nvlink ("Memory allocation failure",
# "insufficient memory")
_OOM_RE = re.compile(r"out of memory|memory exhausted|cannot allocate memory|bad_alloc|"
                     r"failed to map segment|memory allocation failure|insufficient memory|"
                     r"memoryerror", re.IGNORECASE)
_CPU_RE = re.compile(r"cpu time limit exceeded|signal 24|sigxcpu", re.IGNORECASE)
# a compiler (or one of nvcc's stages) that crashes under an address-space cap has most
# likely failed to get memory it did not check for (ptxas segfaults under ~40 MiB)
_CRASH_RE = re.compile(r"segmentation fault|died due to signal (?:6|11)\b", re.IGNORECASE)
CPU_GRACE_S = 5  # the hard CPU limit's margin over the soft one (SIGKILL after SIGXCPU)


def parse_size(text: str) -> int:
    """``"4G"``, ``"512MiB"``, ``"1048576"`` -> bytes (binary multiples)."""
    m = _SIZE_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (expected e.g. 4G, 512M, 1048576)")
    return int(m.group(1)) << (10 * " kmgt".index((m.group(2) or " ").lower()))


def format_size(n: int) -> str:
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _env(env: Mapping[str, str], name: str, default: float, parse: Callable[[str], float]
         ) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = parse(text)
    except ValueError as exc:
        raise ValueError(f"${name}={text!r}: {exc}") from None
    if value < 0 or math.isnan(value):
        raise ValueError(f"${name}={text!r}: must be >= 0 (0 means no limit)")
    return value


@dataclass(frozen=True)
class BuildLimits:
    """Caps on one build: the compiler's wall time (``timeout_s``; also its CPU time, which
    bounds what it leaves behind), its address space (``memory_bytes``, ``RLIMIT_AS``) and
    the generated source's size (``max_source_bytes``). 0 turns a cap off.

    :meth:`from_env` reads ``$MIDDLEEND_BUILD_TIMEOUT`` (seconds, default 600),
    ``$MIDDLEEND_BUILD_MEMORY`` (bytes or 4G/512M, default 4 GiB) and
    ``$MIDDLEEND_MAX_SOURCE_BYTES`` (bytes or 8M, default 8 MiB)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BuildLimits:
        env = os.environ if env is None else env
        return cls(_env(env, TIMEOUT_ENV, DEFAULT_TIMEOUT_S, float),
                   int(_env(env, MEMORY_ENV, DEFAULT_MEMORY_BYTES, parse_size)),
                   int(_env(env, SOURCE_ENV, DEFAULT_MAX_SOURCE_BYTES, parse_size)))


@dataclass(frozen=True)
class BuiltLibrary:
    """A built (or cached) shared object: ``path`` to load, ``key`` its cache key,
    ``source`` the code it came from, ``log`` the compiler output, ``cached`` whether it
    was reused rather than compiled now, ``sha256`` the digest its bytes were verified
    against."""

    path: Path
    key: str
    source: str
    log: str
    cached: bool
    sha256: str = ""


def cache_key(source: str, identity: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in (source, identity, "\0".join(flags)):
        h.update(part.encode())
        h.update(b"\0\1\0")
    return h.hexdigest()


def write_atomic(path: Path, text: str) -> None:
    paths.write_atomic(path, text, TMP_PREFIX, path.suffix)


# --- running the compiler --------------------------------------------------------------

def _wrapped(cmd: Sequence[str], memory_bytes: int, cpu_seconds: int) -> list[str]:
    """``cmd`` behind a small shell supervisor that caps its address space and CPU time
    (inherited by everything the compiler starts) and, when the process that started it
    dies, kills the compiler's whole process group: gcc's own children (``cc1``, ``as``)
    included, which a parent-death signal on gcc alone would leave running.

    Why a wrapper and not ``preexec_fn``: Python code between fork and exec in a process
    with other threads (a gRPC server's, a thread pool's) can deadlock or crash the child.
    ``setpriv --pdeathsig`` (util-linux) gives the supervisor SIGTERM when its parent dies;
    without ``setpriv`` there is no parent-death signal (the group is still killed on a
    timeout or an error in :func:`run_tool`)."""
    limits = []
    if memory_bytes > 0:
        limits.append(f"ulimit -v {max(1, memory_bytes // 1024)} 2>/dev/null")
    if cpu_seconds > 0:  # soft below hard: SIGXCPU, which says why, before SIGKILL
        limits.append(f"ulimit -S -t {int(cpu_seconds)} 2>/dev/null")
        limits.append(f"ulimit -H -t {int(cpu_seconds) + CPU_GRACE_S} 2>/dev/null")
    # a limit above the current hard one fails and is skipped: never raised
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if setpriv is None:
        return ["/bin/sh", "-c", "; ".join([*limits, 'exec "$@"']), "sh", *cmd]
    script = "; ".join(["trap 'kill -KILL 0' TERM", *limits, '"$@" & wait $!'])
    return [setpriv, "--pdeathsig", "TERM", "--", "/bin/sh", "-c", script, "sh", *cmd]


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_tool(cmd: Sequence[str], timeout: float | None, memory_bytes: int = 0,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` like ``subprocess.run(capture_output=True, text=True)``, but in its own
    session, killed (with everything it started) on a timeout or an exception here, dead
    when the calling thread's process dies (Linux), and under ``RLIMIT_AS=memory_bytes``
    and a CPU-time limit of ``timeout`` (0/None: none). Raises ``TimeoutExpired`` once the
    process group is dead, ``OSError`` when ``cmd`` cannot start."""
    cpu = math.ceil(timeout) + 1 if timeout else 0
    proc = subprocess.Popen(_wrapped(cmd, memory_bytes, cpu), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True,
                            env=None if env is None else dict(env))
    try:
        out, err = proc.communicate(timeout=timeout or None)
    except subprocess.TimeoutExpired as exc:
        _kill_group(proc)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(exc.cmd, exc.timeout, out, err) from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        _kill_group(proc)  # anything it left behind in its group
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def tool_identity(cmd: Sequence[str], what: str) -> str:
    """The first line of ``<cmd> --version``: part of the cache key so that a compiler
    upgrade never reuses stale binaries. Asked once per process and command (as a running
    server asks once): each in-process compile makes a new service and targets, and the
    probe cost 5-10 ms of every one."""
    return _tool_identity(tuple(cmd), what)


@functools.lru_cache(maxsize=32)
def _tool_identity(cmd: tuple[str, ...], what: str) -> str:
    try:
        proc = run_tool([*cmd, "--version"], timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"cannot run the {what}: {exc}", [*cmd, "--version"], "") from exc
    if proc.returncode != 0:
        raise BuildError(f"the {what} does not answer --version", [*cmd, "--version"],
                         proc.stdout + proc.stderr)
    lines = [ln for ln in (proc.stdout or proc.stderr).splitlines() if ln.strip()]
    return lines[-1].strip() if what == "CUDA compiler" and lines else \
        (lines[0].strip() if lines else " ".join(cmd))


# --- the cache -------------------------------------------------------------------------

def check_source_size(source: str, what: str, limits: BuildLimits | None = None) -> None:
    """Raise ResourceLimitError when ``source`` is bigger than the build's source cap
    (before any compiler sees it)."""
    limits = limits if limits is not None else BuildLimits.from_env()
    size = len(source.encode("utf-8", "surrogatepass"))
    if limits.max_source_bytes and size > limits.max_source_bytes:
        raise ResourceLimitError(
            f"the generated source is {format_size(size)}, over the limit of "
            f"{format_size(limits.max_source_bytes)} for the {what} (${SOURCE_ENV})")


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest_path(so: Path) -> Path:
    return so.with_name(so.name + DIGEST_SUFFIX)


def verified_digest(so: Path) -> str | None:
    """The library's sha256 when it matches its sidecar; None when the library or the
    sidecar is missing or unreadable, the sidecar is garbled, or the bytes differ."""
    try:
        expected = digest_path(so).read_text(encoding="ascii").strip()
        if _HEX64.fullmatch(expected) is None:
            return None
        actual = file_digest(so)
    except (OSError, UnicodeDecodeError):
        return None
    return actual if actual == expected else None


def clean_stale_temps(directory: Path, max_age: float = STALE_TMP_SECONDS) -> int:
    """Remove ``.tmp-*`` files and folders older than ``max_age`` seconds (left by a
    builder killed mid-build); in-flight ones are younger. Returns how many went."""
    now, removed = time.time(), 0
    for tmp in directory.glob(f"{TMP_PREFIX}*"):
        try:
            if now - tmp.lstat().st_mtime <= max_age:
                continue
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def _signal_of(returncode: int) -> int | None:
    """The signal that ended the compiler: Popen's negative status, or the shell
    supervisor's 128 + N."""
    if returncode < 0:
        return -returncode
    return returncode - 128 if 128 < returncode <= 128 + 64 else None


def _limit_error(what: str, limits: BuildLimits, proc: subprocess.CompletedProcess[str],
                 log_text: str) -> ResourceLimitError | None:
    """A ResourceLimitError when a failed compile looks like it hit a cap."""
    sig = _signal_of(proc.returncode)
    if limits.timeout_s and (sig in (signal.SIGXCPU, signal.SIGKILL)
                             or _CPU_RE.search(log_text)):
        return ResourceLimitError(
            f"the {what} exceeded the build's time limit of {limits.timeout_s:g} s "
            f"(CPU time; ${TIMEOUT_ENV})")
    memory = format_size(limits.memory_bytes)
    tail = "\n".join(log_text.splitlines()[-5:])
    if limits.memory_bytes and _OOM_RE.search(log_text):
        return ResourceLimitError(
            f"the {what} ran out of memory under the build's limit of {memory} of address "
            f"space (${MEMORY_ENV})\n{tail}")
    if limits.memory_bytes and (sig in (signal.SIGSEGV, signal.SIGABRT)
                                or _CRASH_RE.search(log_text)):
        return ResourceLimitError(
            f"the {what} crashed under the build's limit of {memory} of address space, "
            f"most likely out of memory (${MEMORY_ENV})\n{tail}")
    return None


def build_cached(source: str, compiler: Sequence[str], flags: Sequence[str], identity: str,
                 out_dir: Path, suffix: str, what: str, libs: Sequence[str] = (),
                 limits: BuildLimits | None = None) -> BuiltLibrary:
    """Compile ``source`` (a file ending ``suffix``) to ``<out_dir>/<key>.so`` with
    ``compiler flags src -o lib libs``, unless it is already there and matches its
    digest. Raises BuildError (with the command and the compiler's log) when the compiler
    fails, ResourceLimitError when the source or the compiler exceeds ``limits``
    (default: :meth:`BuildLimits.from_env`)."""
    limits = limits if limits is not None else BuildLimits.from_env()
    check_source_size(source, what, limits)
    key = cache_key(source, identity, flags)
    out_dir.mkdir(parents=True, exist_ok=True)
    so, log_path = out_dir / f"{key}.so", out_dir / f"{key}.log"
    if so.exists():
        digest = verified_digest(so)
        if digest is not None:
            log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
            return BuiltLibrary(so, key, source, log_text, True, digest)
        if digest_path(so).exists():
            log.warning("build cache: %s does not match its digest (corrupted, truncated "
                        "or replaced); rebuilding it", so)
        else:
            log.warning("build cache: %s has no digest (built before the cache kept "
                        "digests, or its sidecar was removed); rebuilding it", so)
    clean_stale_temps(out_dir)
    src = out_dir / f"{key}{suffix}"
    write_atomic(src, source)
    fd, tmp_so = tempfile.mkstemp(dir=out_dir, prefix=TMP_PREFIX, suffix=".so")
    os.close(fd)
    tmp_dir = tempfile.mkdtemp(dir=out_dir, prefix=TMP_PREFIX, suffix=".d")
    cmd = [*compiler, *flags, str(src), "-o", tmp_so, *libs]
    try:
        env = {**os.environ, "TMPDIR": tmp_dir}  # the compiler's own temporaries
        try:
            proc = run_tool(cmd, limits.timeout_s, limits.memory_bytes, env)
        except subprocess.TimeoutExpired as exc:
            raise ResourceLimitError(
                f"the {what} exceeded the build's time limit of {limits.timeout_s:g} s "
                f"(${TIMEOUT_ENV}); it was killed") from exc
        except OSError as exc:
            raise BuildError(f"cannot run the {what}: {exc}", cmd, "") from exc
        log_text = proc.stdout + proc.stderr
        write_atomic(log_path, log_text)
        if proc.returncode != 0:
            err = _limit_error(what, limits, proc, log_text)
            if err is not None:
                raise err
            raise BuildError(f"the {what} failed (exit status {proc.returncode}) on {src}",
                             cmd, log_text)
        digest = file_digest(Path(tmp_so))
        write_atomic(digest_path(so), digest + "\n")  # the digest first, then the library
        os.replace(tmp_so, so)
    finally:
        Path(tmp_so).unlink(missing_ok=True)
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return BuiltLibrary(so, key, source, log_text, False, digest)
