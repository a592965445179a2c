"""A job that stays up between calls: ``with k.job(): ...`` (see
:meth:`backends.mpi.kernel.MpiKernel.job`).

A launched call pays ``mpiexec``'s launch, MPI's start and the exit every time (tens of
milliseconds here). Inside ``with k.job()``, one job of ``R`` Python processes runs this
module's :func:`serve` under ``mpiexec`` (with mpi4py) and loads the kernel's shared
object once; each call writes the inputs into a run directory in shared memory as before,
sends rank 0 one line on the job's standard input, and reads the outputs back when rank 0
answers on its standard output. Rank 0 broadcasts the call; every rank maps the run
directory's files (the same shared memory) and runs its part in-process, the root
scattering from and gathering into the mapped files (``me_inproc`` with shared arrays:
nothing else is copied). A failure every rank checks at the same point (a data-dependent
index out of bounds, blocks smaller than the halo) makes the call raise, naming the rank,
and the job goes on; any other failure of a rank aborts the job; the call then raises,
naming the rank, and the next call starts a new job.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from middleend.ir.errors import KernelRuntimeError

from .inproc import InProcess

RANK_LINE = re.compile(r"middleend rank (\d+): (.*)")
TIMEOUT_ENV = "MIDDLEEND_MPI_TIMEOUT"
# The job's answers on its standard output start with this; any other line there (MPICH
# or a library may print one, even a blank line) is kept with the job's messages
ANSWER = "@me "


def _arrays(run: Path, specs: list[dict[str, Any]]) -> list[np.ndarray]:
    """The run directory's files, mapped (every rank maps the same shared memory)."""
    out = []
    for k, s in enumerate(specs):
        shape = tuple(s["shape"])
        name = f"in_{k}.bin" if s["role"] in ("input", "inout") else f"out_{k}.bin"
        out.append(np.memmap(run / name, dtype=np.dtype(s["dtype"]), mode="r+", shape=shape))
    return out


def serve(library: str, ranks: int, name: str) -> None:
    """Answer calls until standard input closes (run on every rank of the job)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    run_it = InProcess(Path(library), name, ranks)
    root = comm.Get_rank() == 0
    pids = comm.gather(os.getpid(), root=0)  # for the caller to reap them (KeptJob.close)
    if root:
        print(ANSWER + json.dumps({"ready": True, "pids": pids}), flush=True)
    while True:
        # between calls the other ranks sleep-poll a barrier that rank 0 enters once a
        # call (or the end) came, instead of spinning in the broadcast on a shared core
        line = sys.stdin.readline() if root else None
        done = comm.Ibarrier()
        while not done.Test():
            time.sleep(0.0005)
        call = comm.bcast(json.loads(line) if line else None, root=0)
        if call is None:
            break
        arrays = _arrays(Path(call["run"]), call["arrays"])
        try:
            sent, phases = run_it(comm, call["params"], arrays, shared=True)
            answer: dict[str, Any] = {"sent": sent, "phases": phases}
        except KernelRuntimeError as e:  # every rank agreed on it: the job goes on
            answer = {"error": str(e)}
        for a in arrays:
            if root:
                a.flush()
        del arrays
        comm.Barrier()  # every rank is done with the files before the caller reads them
        if root:
            print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3])


def remove_stale_endpoints() -> None:
    """Remove the shared-memory endpoint files of dead processes (``/dev/shm/<pid>:...``,
    what libfabric's shm provider names after a rank's pid, ours only). A rank that is
    killed or aborts leaves them behind, and a later rank given the same pid attached to
    them: it crashed at its first call or received another job's message (segfaults,
    truncated messages; tests/test_mpi_job.py and test_mpi_runtime.py failed about one
    run in four together). Called before every job starts."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return
    uid = os.getuid()
    for f in shm.iterdir():
        pid, sep, _ = f.name.partition(":")
        if not sep or not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        with contextlib.suppress(OSError):
            if f.stat().st_uid == uid:
                f.unlink()


class KeptJob:
    """The caller's side: the job's process, one call at a time."""

    def __init__(self, launch: list[str], library: Path, ranks: int, name: str,
                 env: dict[str, str], timeout: float) -> None:
        self.name, self.timeout, self.ranks = name, timeout, ranks
        self._pending = b""  # what the job wrote after the last line read
        self.log = tempfile.TemporaryFile(mode="w+")  # the job's stderr (rank messages)
        remove_stale_endpoints()
        cmd = [*launch, sys.executable, "-m", "backends.mpi.persist", str(library),
               str(ranks), name]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, start_new_session=True,
                                     env={**env, **os.environ} if env else None)
        self.pids: list[int] = []  # the ranks' processes, from the job's first answer
        self.pids = [int(p) for p in self._answer().get("pids", [])]  # {"ready": true, ...}

    def _answer(self) -> dict[str, Any]:
        """The job's next answer, within the timeout; lines that are not answers go to
        the job's log."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()  # read raw: select sees no buffered lines
        deadline = time.monotonic() + self.timeout
        while True:
            if b"\n" not in self._pending:
                left = max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([fd], [], [], left)
                chunk = os.read(fd, 1 << 16) if ready else b""
                if not chunk:
                    self.close(kill=True)
                    raise KernelRuntimeError(self._failure(bool(ready)))
                self._pending += chunk
                continue
            raw, self._pending = self._pending.split(b"\n", 1)
            line = raw.decode(errors="replace")
            if line.startswith(ANSWER):
                return json.loads(line[len(ANSWER):])  # type: ignore[no-any-return]
            self.log.write(line + "\n")

    def _failure(self, ended: bool) -> str:
        self.log.seek(0)
        text = self.log.read()
        for line in text.splitlines():
            m = RANK_LINE.search(line)
            if m:
                return f"kernel {self.name}: rank {m.group(1)}: {m.group(2)}"
        if not ended:
            return (f"kernel {self.name}: the kept MPI job did not answer within "
                    f"{self.timeout:g} s (${TIMEOUT_ENV}); it was stopped")
        tail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
        return f"kernel {self.name}: the kept MPI job ended: {tail}"

    def call(self, run: Path, params: list[int], arrays: list[np.ndarray],
             roles: list[str]) -> dict[str, Any]:
        """One call on the run directory's files; returns the job's statistics."""
        specs = [{"shape": list(a.shape), "dtype": a.dtype.str, "role": r}
                 for a, r in zip(arrays, roles, strict=True)]
        msg = json.dumps({"run": str(run), "params": params, "arrays": specs})
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(msg + "\n")
            self.proc.stdin.flush()
        except OSError:
            self.close(kill=True)
            raise KernelRuntimeError(self._failure(True)) from None
        got = self._answer()
        if "error" in got:  # a failure every rank agreed on; the job is still up
            raise KernelRuntimeError(str(got["error"]))
        return got

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _reap_ranks(self) -> None:
        """Kill the job's rank processes that outlived its ``mpiexec`` and wait (at most
        10 s) until they are gone. The ranks run in process groups of their own: when the
        job's group was killed, they lived on for a moment, and a job started then failed
        at its first call about one time in seven (a segfault, a truncated message, a
        killed rank; tests/test_mpi_job.py). Only a process still running this module is
        signalled (a pid reused meanwhile is left alone). Then the endpoints they left
        (:func:`remove_stale_endpoints`)."""
        deadline = time.monotonic() + 10.0
        for pid in self.pids:
            while time.monotonic() < deadline:
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    break  # gone
                if b"backends.mpi.persist" not in cmdline:
                    break  # gone, and its pid given to another process (or a zombie)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                time.sleep(0.005)
        remove_stale_endpoints()

    def close(self, kill: bool = False) -> None:
        """End the job: standard input closed (every rank leaves its loop and finalises
        MPI), or its process group killed when it does not end (or ``kill``)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=0 if kill else 30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._reap_ranks()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
