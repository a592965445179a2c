"""``middleend serve`` as a subprocess on loopback, for tests/test_service.py.

The server's stdout and stderr go to files (a pipe nobody reads could fill up and block
the server); its first stdout line, ``middleend serving on HOST:PORT (N workers)``, gives
the port.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVING_LINE = re.compile(r"middleend serving on (\S+):(\d+) \((\d+) workers\)")


def server_env(cache_root: Path) -> dict[str, str]:
    """The server's environment: its own MIDDLEEND_CACHE_DIR (the C build cache lives
    there) and no MIDDLEEND_TOKEN (a test that wants a token passes --token-file)."""
    env = dict(os.environ)
    env["MIDDLEEND_CACHE_DIR"] = str(cache_root)
    env.pop("MIDDLEEND_TOKEN", None)
    return env


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "middleend.cli", "serve", *args]


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    port: int
    workers: int
    cache_dir: Path  # the artifact cache (--cache-dir)
    log_dir: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return (self.log_dir / "stderr.txt").read_text(errors="replace")

    def children(self) -> list[int]:
        """Pids of the server's child processes (Linux: /proc/<pid>/task/<tid>/children)."""
        pids: set[int] = set()
        for f in Path(f"/proc/{self.pid}/task").glob("*/children"):
            try:
                pids.update(int(p) for p in f.read_text().split())
            except (FileNotFoundError, ProcessLookupError):
                pass  # the thread ended while we looked
        return sorted(pids)

    def worker_pids(self) -> list[int]:
        """The live worker processes: spawn children (``spawn_main`` on their command
        line), not multiprocessing's resource tracker; a zombie has an empty cmdline."""
        out = []
        for pid in self.children():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if b"spawn_main" in cmdline:
                out.append(pid)
        return out

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM (a graceful stop), then SIGKILL after ``timeout``; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def start_server(log_dir: Path, cache_dir: Path, *args: str, workers: int = 2,
                 cache_root: Path | None = None, timeout: float = 60.0) -> ServerProcess:
    """Start ``middleend serve --port 0`` and wait (at most ``timeout`` s) for its serving
    line. ``args`` are more serve flags; ``cache_root`` is the server's MIDDLEEND_CACHE_DIR
    (default ``log_dir/root``)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    cmd = serve_command("--port", "0", "--workers", str(workers), "--cache-dir", str(cache_dir),
                        *args)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=server_env(cache_root or log_dir / "root"),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    deadline = time.monotonic() + timeout
    while True:
        first = out_path.read_text(errors="replace").partition("\n")
        if first[1]:  # a complete first line
            m = SERVING_LINE.fullmatch(first[0].strip())
            if m is None:
                proc.kill()
                proc.wait(10)
                raise RuntimeError(f"unexpected first line from the server: {first[0]!r}")
            return ServerProcess(proc, int(m.group(2)), int(m.group(3)), cache_dir, log_dir)
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode} before "
                               f"serving:\n{err_path.read_text(errors='replace')}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait(10)
            raise RuntimeError(f"no serving line from the server within {timeout} s:\n"
                               f"{err_path.read_text(errors='replace')}")
        time.sleep(0.02)
