"""``middleend serve`` as a subprocess on loopback, and the programs and helpers of
tests/test_service*.py.

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

import grpc
import numpy as np
from google.protobuf.message import Message

import middleend as me
from middleend.api import examples
from middleend.service.client import RemoteClient
from middleend.service.diagnostics import DIAGNOSTIC_KEY
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

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
    return [sys.executable, "-m", "middleend", "serve", *args]


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

    def rss_mib(self) -> float:
        """The resident memory of the server and its children (workers included), MiB."""
        total = 0
        for pid in (self.pid, *self.children()):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except (FileNotFoundError, ProcessLookupError):
                continue
            total += sum(int(line.split()[1]) for line in status.splitlines()
                         if line.startswith("VmRSS:"))
        return total / 1024

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
                 cache_root: Path | None = None, timeout: float = 180.0) -> ServerProcess:
    """Start ``middleend serve --port 0`` and wait (at most ``timeout`` s) for its serving
    line. ``args`` are more serve flags; ``cache_root`` is the server's MIDDLEEND_CACHE_DIR
    (default ``log_dir/root``). The wait is a guard against a server that never serves,
    not a measure: beside another pytest worker on a loaded machine (load 8 on 2 cores) a
    start took over 60 s."""
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


SERVICE = "middleend.v1.MiddleEnd"
MAX_MESSAGE_BYTES = 1 << 20  # the module server's --max-message-bytes


# ---------------------------------------------------------------------------- programs


def blur_fn(ti: int = 32, tj: int = 256) -> me.Function:
    """The papers' blurxy with the tuned schedule (tiles ti x tj, bx computed per tile row
    into a private buffer, i0 parallel, j vectorized by 8); sizes are Params N, M."""
    return examples.schedule_blur(examples.blur(), ti=ti, tj=tj).fn


def blur_request(ti: int = 32, tj: int = 256) -> pb.Request:
    return encode_request(blur_fn(ti, tj))


def blur_ref(a: np.ndarray) -> np.ndarray:
    three = np.float32(3)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / three
    return (bx[:-2] + bx[1:-1] + bx[2:]) / three


def matmul_fn(t: int = 16) -> me.Function:
    """C = A @ B (N x K times K x M) as an init plus an update over k; both tiled t x t,
    the update's loops i0 j0 k i1 j1 with j1 vectorized, fused at j0, i0 parallel."""
    mm = examples.matmul("mm")
    init, upd = mm.init, mm.update
    for c in (init, upd):
        c.tile("i", "j", t, t, "i0", "j0", "i1", "j1")
    upd.interchange("j1", "k")
    upd.interchange("i1", "k")
    upd.vectorize("j1", 8)
    upd.after(init, "j0")
    init.parallelize("i0")
    upd.parallelize("i0")
    return mm.fn


def small_fn(name: str = "twice", scale: float = 2.0) -> me.Function:
    """c[i] = a[i] * scale + 1: the cheapest program that still goes through a worker."""
    with me.Function(name) as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        a = me.Input("a", [n], me.float32)
        c = me.Computation("c", [i], a[i] * scale + 1.0)
        c.split(i, 8, "i0", "i1")
    return f


SMALL = encode_request(small_fn())


def slow_request(leaves: int) -> bytes:
    """A program gcc takes long to build (~30 s for 3,000 leaves on 2 cores): a balanced
    sum of ``leaves`` sines, serialized."""
    with me.Function(f"slow{leaves}") as f:
        i = me.Var("i", 0, 8)
        a = me.Input("a", [8], me.float32)
        terms = [me.sin(a[i] + float(k)) for k in range(leaves)]
        while len(terms) > 1:
            terms = [terms[k] + terms[k + 1] if k + 1 < len(terms) else terms[k]
                     for k in range(0, len(terms), 2)]
        me.Computation("s", [i], terms[0])
    return encode_request(f).SerializeToString()


def illegal_request() -> pb.Request:
    """A matmul update parallelized along k, the loop that carries its reduction."""
    with me.Function("scan") as f:
        n = me.Param("N")
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, n), me.Var("k", 0, n)
        a = me.Input("A", [n, n], me.float32)
        init = me.Computation("C", [i, j], 0.0)
        upd = me.Computation("c1", [i, j, k], dtype=me.float32)
        upd.set_expression(upd[i, j, k - 1] + a[i, k] * a[k, j])
        upd.store_in(init, [i, j])
        upd.after(init, "j")
        upd.parallelize("k")
    return encode_request(f)


def cyclic_request() -> pb.Request:
    """A.compute_at(B) and B.compute_at(A): each is to be computed inside the other."""
    with me.Function("cyc") as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        x = me.Input("x", [n], me.float32)
        a = me.Computation("A", [i], x[i] * 2.0)
        b = me.Computation("B", [i], a[i] + 1.0)
        a.compute_at(b, "i")
        b.compute_at(a, "i")
    return encode_request(f)


def rename_everywhere(msg: Message, old: str, new: str) -> None:
    """Replace every string field equal to ``old`` (names and references) in ``msg``."""
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_MESSAGE:
            for sub in (value if fd.is_repeated else [value]):
                rename_everywhere(sub, old, new)
        elif fd.type == fd.TYPE_STRING and not fd.is_repeated and value == old:
            setattr(msg, fd.name, new)


# ---------------------------------------------------------------------------- helpers


def so_file(resp: pb.CompileResponse) -> pb.ArtifactFile:
    files = [f for f in resp.artifact.files if f.role == pb.SHARED_OBJECT]
    assert len(files) == 1, [f.name for f in resp.artifact.files]
    return files[0]


def raw_call(channel: grpc.Channel, payload: bytes, method: str = "Compile",
             timeout: float = 120.0) -> tuple[grpc.StatusCode, str, pb.Diagnostic | None]:
    """Send raw request bytes; the status code, its message and the diagnostic trailer."""
    rpc = channel.unary_unary(f"/{SERVICE}/{method}", request_serializer=None,
                              response_deserializer=None)
    try:
        rpc(payload, timeout=timeout)
    except grpc.RpcError as e:
        diag = None
        for k, v in e.trailing_metadata() or ():  # type: ignore[attr-defined]
            if k == DIAGNOSTIC_KEY:
                diag = pb.Diagnostic.FromString(v)
        return e.code(), e.details() or "", diag  # type: ignore[attr-defined]
    return grpc.StatusCode.OK, "", None


def assert_serving(client: RemoteClient) -> None:
    """The server answers: the health check, and a Check that needs a worker process."""
    assert client.health() == "SERVING"
    assert client.health(SERVICE) == "SERVING"
    assert client.check(SMALL).legal is True


def wait_for_workers(server: ServerProcess, n: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        pids = server.worker_pids()
        if len(pids) == n or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)
