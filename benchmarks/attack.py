"""The service under attack: hostile requests by class against ``middleend serve`` on
loopback, and what the server did with them.

Per class it reports the requests sent, the status codes returned, the slowest answer,
the server's memory (its RSS plus its workers') before and after, and the processes left
behind (compilers whose parent died, any child of the server beyond its workers). After
each class the server must still answer a health check and a normal compile; the script
says so per class. The classes follow issue 14: requests without or with huge deadlines,
user errors (empty or unbounded domains, no computation, a computation reading itself,
duplicate outputs, 64-bit shifts), oversized diagnostics, deep expression nesting,
unknown fields, schedules with many dimensions, large messages sent concurrently,
expressions that are slow to build, heavy requests that try to take every worker (a small
compile is sent meanwhile: the column "small meanwhile" says how it fared), and a worker
killed in the middle of a compile.

    python benchmarks/attack.py [--workers 2] [--only CLASS ...] [--big-rounds 3]
                                [--serve-args "--heavy-queue 64"]

This is a measurement, not a test (tests/test_service_attack.py and friends assert the
codes); it takes a few minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import common  # noqa: F401  (sets up the import path)
import grpc
import numpy as np
from common import print_table

import middleend as me
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

SERVICE = "/middleend.v1.MiddleEnd/"
Request = bytes  # a serialized pb.Request (raw bytes: unknown fields survive)


# ---------------------------------------------------------------------------- the server
@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    address: str

    def pids(self) -> list[int]:
        """The server and every process below it."""
        out, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            for f in Path(f"/proc/{pid}/task").glob("*/children"):
                try:
                    todo.extend(int(p) for p in f.read_text().split())
                except OSError:
                    pass
        return out

    def rss_mib(self) -> float:
        total = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024


def start(workers: int, root: Path, extra: list[str]) -> Server:
    env = dict(os.environ, MIDDLEEND_CACHE_DIR=str(root / "cache"))
    env.pop("MIDDLEEND_TOKEN", None)
    out = root / "stdout.txt"
    with open(out, "wb") as o, open(root / "stderr.txt", "wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "middleend", "serve", "--port", "0",
                                 "--workers", str(workers), "--cache-dir",
                                 str(root / "artifacts"), *extra], stdout=o, stderr=e,
                                stdin=subprocess.DEVNULL, env=env)
    for _ in range(3000):
        line = out.read_text(errors="replace").partition("\n")
        if line[1]:
            return Server(proc, line[0].split()[3])
        if proc.poll() is not None:
            raise RuntimeError((root / "stderr.txt").read_text(errors="replace"))
        time.sleep(0.02)
    raise RuntimeError("the server did not start")


COMPILERS = frozenset({"cc1", "cc1plus", "cc", "gcc", "g++", "as", "ld", "collect2", "nvcc",
                       "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink"})


def orphans() -> list[str]:
    """Live compiler processes whose parent is gone (re-parented to init); zombies, dead
    and waiting for init to reap them, do not count."""
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            name = (d / "comm").read_text().strip()
        except OSError:
            continue
        if name in COMPILERS and fields[1] == "1" and fields[0] != "Z":
            found.append(f"{name}:{d.name}")
    return found


# ---------------------------------------------------------------------------- requests
def _base(name: str = "atk", n: int = 64) -> pb.Request:
    with me.Function(name) as f:
        i = me.Var("i", 0, n)
        a = me.Input("a", [n], me.float32)
        me.Computation("S", [i], a[i] * 2.0 + 1.0)
    return encode_request(f)


def _with(edit: Callable[[pb.Request], None], name: str = "atk") -> Request:
    req = _base(name)
    edit(req)
    return req.SerializeToString()


def _nested(depth: int) -> Request:
    def edit(req: pb.Request) -> None:
        e = pb.Expr()
        e.CopyFrom(req.function.computations[0].expression)
        for _ in range(depth):
            outer = pb.Expr()
            outer.unary.op = pb.NEG
            outer.unary.a.CopyFrom(e)
            e = outer
        req.function.computations[0].expression.CopyFrom(e)
    return _with(edit, f"nest{depth}")


def _command(fill: Callable[[pb.Command], None]) -> Callable[[pb.Request], None]:
    def edit(req: pb.Request) -> None:
        c = req.function.commands.add()
        c.computation = "S"
        fill(c)
    return edit


def _shift(amount: int) -> Callable[[pb.Command], None]:
    def fill(c: pb.Command) -> None:
        c.shift.dim, c.shift.amount = "i", amount
    return fill


def _skew_request(factor: int) -> Request:
    with me.Function("skewed") as f:
        i, j = me.Var("i", 0, 16), me.Var("j", 0, 16)
        a = me.Input("a", [16, 16], me.float32)
        me.Computation("S", [i, j], a[i, j] + 1.0)
    req = encode_request(f)
    c = req.function.commands.add()
    c.computation = "S"
    c.skew.a, c.skew.b, c.skew.factor = "i", "j", factor
    c.skew.new_a, c.skew.new_b = "ii", "jj"
    return req.SerializeToString()


def _set_schedule(text: str) -> Callable[[pb.Command], None]:
    def fill(c: pb.Command) -> None:
        c.set_schedule.isl_map = text
    return fill


def _self_read(req: pb.Request) -> None:
    e = req.function.computations[0].expression
    e.Clear()
    e.access.kind = pb.VALUE
    e.access.target = "S"
    e.access.indices.add().iterator = "i"


def _duplicate_outputs(req: pb.Request) -> None:
    req.function.outputs.extend(["S", "S"])


def _unknown_field(req: pb.Request) -> bytes:
    # field 4000, varint 1: a field no version of the schema has
    return req.SerializeToString() + bytes([0x80, 0xFA, 0x01, 0x01])


def _big(mib: int) -> Request:
    """A ~``mib`` MiB request: a long sum of reads (the expression node cap may refuse
    it, which is the point: the bytes still have to be received and dropped)."""
    def edit(req: pb.Request) -> None:
        req.function.name = "big"
        req.function.computations[0].domain += " " * (mib << 20)
    return _with(edit)


def _slow_build(leaves: int) -> Request:
    with me.Function(f"sins{leaves}") as f:
        i = me.Var("i", 0, 8)
        a = me.Input("a", [8], me.float32)
        terms: list[me.Expr] = [me.sin(a[i] + float(k)) for k in range(leaves)]
        while len(terms) > 1:  # a balanced sum: depth log2(leaves), under the nesting cap
            terms = [terms[k] + terms[k + 1] if k + 1 < len(terms) else terms[k]
                     for k in range(0, len(terms), 2)]
        me.Computation("S", [i], terms[0])
    return encode_request(f).SerializeToString()


@dataclass
class Attack:
    name: str
    requests: list[tuple[str, Request]]  # (label, bytes)
    timeout: float | None = 30.0
    concurrency: int = 1
    kill_worker: bool = False
    probe: bool = False  # send a small compile 2 s in, while these requests run
    notes: list[str] = field(default_factory=list)


def _domain(text: str) -> Callable[[pb.Request], None]:
    def edit(req: pb.Request) -> None:
        req.function.computations[0].domain = text
    return edit


def _order(text: str) -> Callable[[pb.Request], None]:
    def edit(req: pb.Request) -> None:
        req.function.computations[0].order = text
    return edit


def _rename(req: pb.Request) -> None:
    req.function.computations[0].name = "x\n"


def _user_errors() -> Attack:
    return Attack("user errors", [
        ("empty domain", _with(_domain("{ S[i] : 1 = 0 }"))),
        ("unbounded domain", _with(_domain("{ S[i] : 0 <= i }"))),
        ("no computation", _with(lambda r: r.function.ClearField("computations"))),
        ("S[i] = S[i]", _with(_self_read)),
        ("duplicate outputs", _with(_duplicate_outputs)),
        ("shift -2^63", _with(_command(_shift(-(2**63))))),
        ("shift 2^63-1", _with(_command(_shift(2**63 - 1)))),
        ("skew 2^63-1", _skew_request(2**63 - 1)),
        ("name 'x\\n'", _with(_rename)),
    ])


def _dimensions() -> Attack:
    zeros = ", ".join(["0"] * 1000)
    order = ", ".join(["0"] * 2000)
    return Attack("dimensions", [
        ("set_schedule 1000 zeros", _with(_command(_set_schedule(
            f"{{ S[i] -> [i, {zeros}] }}")))),
        ("order 2000 dims", _with(_order(f"{{ S[i] -> [{order}, i] }}"))),
    ], timeout=20.0)


def attacks(big_rounds: int) -> dict[str, Callable[[], Attack]]:
    """Each class's requests, built only when the class is run."""
    return {
        "deadlines": lambda: Attack("deadlines", [
            ("no deadline", _base("nodl").SerializeToString())], timeout=None),
        "huge deadline": lambda: Attack("huge deadline", [
            ("1e9 s", _base("hugedl").SerializeToString())], timeout=1e9),
        "user errors": _user_errors,
        "diagnostics": lambda: Attack("diagnostics", [
            ("set_schedule é*5000", _with(_command(_set_schedule("é" * 5000))))]),
        "nesting": lambda: Attack("nesting", [
            (f"depth {d}", _nested(d)) for d in (40, 48, 200, 201, 5000)]),
        "unknown fields": lambda: Attack("unknown fields", [
            ("field 4000", _unknown_field(_base("unk")))]),
        "dimensions": _dimensions,
        "large messages": lambda: Attack("large messages", [
            (f"14 MiB #{k}", _big(14)) for k in range(32 * big_rounds)], concurrency=32),
        "heavy saturation": lambda: Attack("heavy saturation", [
            (f"{n} sin leaves", _slow_build(n)) for n in range(4000, 4006)],
            timeout=20.0, concurrency=6, probe=True),
        "slow build": lambda: Attack("slow build", [
            ("8000 sin leaves", _slow_build(8000))], timeout=60.0),
        "worker killed": lambda: Attack("worker killed", [
            ("kill -9 mid-compile", _slow_build(2000))], kill_worker=True),
    }


# ---------------------------------------------------------------------------- running
def call(channel: grpc.Channel, data: Request, timeout: float | None) -> tuple[str, float]:
    rpc = channel.unary_unary(SERVICE + "Compile", request_serializer=lambda b: b,
                              response_deserializer=lambda b: b)
    t0 = time.perf_counter()
    try:
        rpc(data, timeout=timeout)
        code = "OK"
    except grpc.RpcError as e:
        code = e.code().name  # type: ignore[attr-defined]
    return code, time.perf_counter() - t0


def healthy(channel: grpc.Channel) -> bool:
    code, _ = call(channel, _base("probe").SerializeToString(), 60.0)
    return code == "OK"


def probe(channel: grpc.Channel, results: list[str]) -> None:
    """A small compile nobody sent before (so it is built, not a cache hit)."""
    time.sleep(2.0)
    code, seconds = call(channel, _base(f"probe{time.monotonic_ns()}").SerializeToString(),
                         60.0)
    results.append(f"{code} {seconds:.2f} s")


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def _cpu(pid: int) -> int:
    """utime + stime of a process, in clock ticks (0 when it is gone)."""
    fields = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
    return int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0


def run_attack(server: Server, atk: Attack) -> list[object]:
    limit = 64 << 20
    opts = [("grpc.max_send_message_length", limit), ("grpc.max_receive_message_length", limit)]
    with grpc.insecure_channel(server.address, options=opts) as ch:
        rss0 = server.rss_mib()
        codes: Counter[str] = Counter()
        worst = 0.0
        if atk.kill_worker:
            import threading

            def killer() -> None:  # the busy worker: the one that used most CPU since
                workers = [pid for pid in server.pids()[1:]
                           if b"spawn_main" in _read(f"/proc/{pid}/cmdline")]
                before = {pid: _cpu(pid) for pid in workers}
                time.sleep(2.0)
                busy = max(workers, key=lambda pid: _cpu(pid) - before[pid])
                with contextlib.suppress(OSError):
                    os.kill(busy, signal.SIGKILL)
            threading.Thread(target=killer, daemon=True).start()
        meanwhile: list[str] = []
        with ThreadPoolExecutor(atk.concurrency + 1) as pool:
            side = pool.submit(probe, ch, meanwhile) if atk.probe else None
            for code, seconds in pool.map(lambda r: call(ch, r[1], atk.timeout), atk.requests):
                codes[code] += 1
                worst = max(worst, seconds)
            if side is not None:
                side.result()
        time.sleep(1.0)  # let killed builds and workers go
        ok = healthy(ch)
        time.sleep(1.0)  # the server trims its heap after 0.5 s without requests
        rss1 = server.rss_mib()
    labels = ", ".join(label for label, _ in atk.requests[:3]) + \
        (" ..." if len(atk.requests) > 3 else "")
    return [atk.name, len(atk.requests), " ".join(f"{c}:{n}" for c, n in sorted(codes.items())),
            f"{worst:.2f}", " ".join(meanwhile) or "-", f"{rss0:.0f}", f"{rss1:.0f}",
            " ".join(orphans()) or "0", "yes" if ok else "NO", labels]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--big-rounds", type=int, default=3)
    ap.add_argument("--serve-args", default="", help="more `middleend serve` flags")
    a = ap.parse_args()
    np.random.seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        server = start(a.workers, Path(tmp), shlex.split(a.serve_args))
        try:
            rows = [run_attack(server, make()) for name, make in attacks(a.big_rounds).items()
                    if not a.only or name in a.only]
        finally:
            server.proc.send_signal(signal.SIGTERM)
            try:
                server.proc.wait(20)
            except subprocess.TimeoutExpired:
                server.proc.kill()
    print_table("middleend serve under attack (codes: gRPC status: count)",
                ["class", "sent", "codes", "max s", "small meanwhile", "RSS MiB before",
                 "after", "orphans", "healthy after", "requests"], rows)


if __name__ == "__main__":
    main()
