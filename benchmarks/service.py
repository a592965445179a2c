"""Service latency: cached Compile and Check against a real ``middleend serve`` on loopback.

Starts ``middleend serve --port 0`` as a subprocess (fresh cache in a temp dir), compiles
blurxy once (the cache miss that warms the cache), checks the artifact against numpy, then
times requests from 1 and 8 concurrent clients (threads, one connection each):

* cached Compile: the response comes from the artifact cache (no worker, no gcc);
* Check: legality only, which runs in a worker process every time (never cached);
* cached Compile through the embedded (in-process) client, same cache, for comparison.

Each client makes one untimed request, then ``--requests`` (Compile; default 200) or
``--check-requests`` (Check; default 40) timed ones, each timed with
``time.perf_counter``. Printed: requests/s over the whole phase and p50/p99 latency over
all requests of the phase, then the ratio remote/embedded, and whether the cached remote
Compile meets the target p50 <= 20 ms. One run, one machine: the server and the clients
share the same cores, so read the numbers side by side.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import common
import numpy as np
from common import check_close, print_table

from middleend.api.examples import blur, schedule_blur
from middleend.service.client import Client, EmbeddedClient, connect, kernel_of
from middleend.service.core import ServiceConfig
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

TARGET_P50_MS = 20.0
SERVING = re.compile(r"middleend serving on (\S+):(\d+) \((\d+) workers\)")


def start_server(tmp: Path, workers: int, timeout: float = 60.0
                 ) -> tuple[subprocess.Popen[bytes], str]:
    """``middleend serve`` on 127.0.0.1, a free port; returns the process and host:port."""
    env = dict(os.environ, MIDDLEEND_CACHE_DIR=str(tmp / "root"))
    env.pop("MIDDLEEND_TOKEN", None)
    out_path, err_path = tmp / "server.out", tmp / "server.err"
    cmd = [sys.executable, "-m", "middleend", "serve", "--host", "127.0.0.1", "--port",
           "0", "--workers", str(workers), "--cache-dir", str(tmp / "artifacts")]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=common.ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err)
    deadline = time.monotonic() + timeout
    while True:
        m = SERVING.search(out_path.read_text(errors="replace"))
        if m:
            return proc, f"127.0.0.1:{m.group(2)}"
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"the server did not start:\n{err_path.read_text()}")
        time.sleep(0.02)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def load(make_client: Callable[[], Client], kind: str, req: pb.Request, clients: int,
         requests: int) -> dict[str, float]:
    """``clients`` threads, each with its own client: one untimed request, then
    ``requests`` timed ones. Requests/s over the phase, p50/p99 over all latencies."""
    conns = [make_client() for _ in range(clients)]
    lat: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    ready = threading.Barrier(clients + 1)

    def work(k: int) -> None:
        call = getattr(conns[k], kind)
        try:
            call(req)
        except BaseException as e:
            errors.append(e)
        ready.wait()
        for _ in range(requests):
            t0 = time.perf_counter()
            try:
                resp = call(req)
            except BaseException as e:
                errors.append(e)
                return
            lat[k].append(time.perf_counter() - t0)
            if kind == "compile" and not resp.cache_hit:
                errors.append(AssertionError("a timed Compile missed the cache"))
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    ready.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for c in conns:
        c.close()
    if errors:
        raise RuntimeError(f"{kind} x {clients} clients: {errors[0]!r}")
    ms = np.array([x for per in lat for x in per]) * 1e3
    return {"n": float(ms.size), "rps": ms.size / wall, "p50": float(np.percentile(ms, 50)),
            "p99": float(np.percentile(ms, 99))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=200,
                   help="timed cached-Compile requests per client (default 200)")
    p.add_argument("--check-requests", type=int, default=40,
                   help="timed Check requests per client (default 40)")
    p.add_argument("--workers", type=int, default=2, help="server worker processes "
                                                          "(default 2)")
    args = p.parse_args()

    req = encode_request(schedule_blur(blur()).fn)
    with tempfile.TemporaryDirectory(prefix="middleend-bench-service-") as d:
        tmp = Path(d)
        # this process's kernels and the embedded client's C builds stay in the temp dir too
        os.environ["MIDDLEEND_CACHE_DIR"] = str(tmp / "root")
        proc, addr = start_server(tmp, args.workers)
        try:
            with connect(addr) as c:
                t0 = time.perf_counter()
                miss = c.compile(req)
                miss_s = time.perf_counter() - t0
                hit = c.compile(req)
            if miss.cache_hit or not hit.cache_hit:
                raise AssertionError("expected a cache miss, then a hit")
            # the check before anything is timed: the cached artifact computes the blur
            a = np.random.default_rng(0).standard_normal((70, 300, 3), dtype=np.float32)
            three = np.float32(3)
            bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / three
            check_close("blurxy (cached artifact)", kernel_of(hit, "blur")(inp=a)["by"],
                        (bx[:-2] + bx[1:-1] + bx[2:]) / three)
            embedded_cfg = ServiceConfig(cache_dir=tmp / "artifacts")  # the server's cache
            with EmbeddedClient(embedded_cfg) as emb:
                local = emb.compile(req)
            if not local.cache_hit or local.artifact != hit.artifact:
                raise AssertionError("the embedded client did not hit the same entry")

            n_c, n_k = args.requests, args.check_requests
            rows: list[list[object]] = []
            res: dict[tuple[str, int], dict[str, float]] = {}
            phases = [("remote", "compile", "Compile (cached)", n_c, lambda: connect(addr)),
                      ("embedded", "compile", "Compile (cached)", n_c,
                       lambda: EmbeddedClient(embedded_cfg)),
                      ("remote", "check", "Check", n_k, lambda: connect(addr))]
            for where, kind, label, n, make in phases:
                for clients in (1, 8):
                    r = load(make, kind, req, clients, n)
                    res[(f"{where} {kind}", clients)] = r
                    rows.append([f"{where} {label}", clients, int(r["n"]), f"{r['rps']:.0f}",
                                 f"{r['p50']:.2f}", f"{r['p99']:.2f}"])
        finally:
            stop_server(proc)

    print(f"blurxy request ({len(req.SerializeToString())} bytes), cached response "
          f"{len(hit.SerializeToString())} bytes; server: {args.workers} workers; first "
          f"(uncached) Compile {miss_s:.2f} s; {os.cpu_count()} cores")
    print_table("middle-end service on loopback (one run; latency in ms)",
                ["path", "clients", "requests", "req/s", "p50 ms", "p99 ms"], rows)
    ratio_rows = []
    for clients in (1, 8):
        rem, emb = res[("remote compile", clients)], res[("embedded compile", clients)]
        ratio_rows.append([f"cached Compile, {clients} client(s)",
                           f"{rem['p50'] / emb['p50']:.1f}", f"{emb['rps'] / rem['rps']:.1f}"])
    print_table("cost of the transport (remote / embedded)",
                ["case", "p50 ratio", "req/s ratio"], ratio_rows)
    verdicts = []
    for clients in (1, 8):
        p50 = res[("remote compile", clients)]["p50"]
        verdicts.append(f"{clients} client(s) p50 {p50:.2f} ms "
                        f"{'met' if p50 <= TARGET_P50_MS else 'MISSED'}")
    ok = res[("remote compile", 1)]["p50"] <= TARGET_P50_MS
    print(f"\ntarget: cached remote Compile p50 <= {TARGET_P50_MS:g} ms: "
          f"{'MET' if ok else 'NOT MET'} ({'; '.join(verdicts)})")


if __name__ == "__main__":
    main()
