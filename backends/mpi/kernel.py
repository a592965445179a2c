"""The mpi kernel: called with whole numpy arrays like the cpu kernel, it runs the built
program under ``mpiexec -n R`` on this machine (processes on the loopback: MPICH's fork
launcher, no traffic leaves the host), which scatters, computes, gathers and writes the
outputs back through a private run directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from middleend.ir.errors import KernelRuntimeError
from middleend.target import Kernel

_RANK_LINE = re.compile(r"middleend rank (\d+): (.*)")
TIMEOUT_ENV = "MIDDLEEND_MPI_TIMEOUT"


def _run_root() -> str | None:
    """Where run directories go: shared memory when there is some (no disk traffic)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


class MpiKernel(Kernel):
    """``executable`` runs on ``ranks`` ranks under ``mpiexec``. ``last_bytes_sent``: the
    bytes each rank sent in sends and exchanges during the last call (not counting the
    scatter and the gather)."""

    def __init__(self, program: Any, executable: Path, mpiexec: str, ranks: int,
                 **kw: Any) -> None:
        super().__init__(program, **kw)
        self.executable = executable
        self.mpiexec = mpiexec
        self.ranks = ranks
        self.last_bytes_sent: list[int] = []

    @property
    def launch_line(self) -> list[str]:
        """The command each call runs (plus the run directory and the params)."""
        return [self.mpiexec, "-launcher", "fork", "-n", str(self.ranks),
                str(self.executable)]

    def _invoke(self, params: list[int], arrays: list[np.ndarray]) -> int:
        args = self.signature.arguments
        run = Path(tempfile.mkdtemp(prefix="me-mpi-", dir=_run_root()))
        try:
            for k, (b, a) in enumerate(zip(args, arrays, strict=True)):
                if b.role in ("input", "inout"):
                    np.ascontiguousarray(a).tofile(run / f"in_{k}.bin")
            timeout = float(os.environ.get(TIMEOUT_ENV, "600"))
            cmd = [*self.launch_line, str(run), *map(str, params)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                      stdin=subprocess.DEVNULL, check=False)
            except subprocess.TimeoutExpired:
                raise KernelRuntimeError(
                    f"kernel {self.signature.name}: the MPI job did not finish within "
                    f"{timeout:g} s (${TIMEOUT_ENV}); it was killed") from None
            if proc.returncode != 0:
                raise KernelRuntimeError(self._failure(proc))
            for k, (b, a) in enumerate(zip(args, arrays, strict=True)):
                if b.role in ("output", "inout"):
                    data = np.fromfile(run / f"out_{k}.bin", dtype=a.dtype)
                    a[...] = data[:a.size].reshape(a.shape)
            stats = np.fromfile(run / "stats_0.bin", dtype=np.int64)
            self.last_bytes_sent = [int(x) for x in stats]
        finally:
            shutil.rmtree(run, ignore_errors=True)
        return 0

    def _failure(self, proc: subprocess.CompletedProcess[str]) -> str:
        """The first rank's own report, else the end of what mpiexec said."""
        for line in proc.stderr.splitlines():
            m = _RANK_LINE.search(line)
            if m:
                return f"kernel {self.signature.name}: rank {m.group(1)}: {m.group(2)}"
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return (f"kernel {self.signature.name}: the MPI job failed (exit status "
                f"{proc.returncode}): {' | '.join(tail) or 'no output'}")
