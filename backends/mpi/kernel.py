"""The mpi kernel: called with whole numpy arrays like the cpu kernel, it runs the built
program under ``mpiexec -n R`` on this machine (processes on the loopback: MPICH's fork
launcher, no traffic leaves the host). The arrays go through a private run directory in
shared memory (``/dev/shm``): each rank reads and writes its own part of the files there,
and the outputs are read back straight into the result arrays. Called inside a running
MPI job of ``R`` processes (mpi4py), it runs in-process instead
(:mod:`backends.mpi.inproc`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from middleend.ir.errors import KernelArgumentError, KernelRuntimeError
from middleend.target import Kernel

from .inproc import InProcess, job_comm
from .persist import RANK_LINE, TIMEOUT_ENV, KeptJob, remove_stale_endpoints

# MPICH's transport between processes of one machine: libfabric's shared-memory provider
# starts and stops in about half the time of the default (UCX); and with UCX unused, its
# memory hooks, which it installs whenever libmpi is loaded (~45 ms of binary patching per
# process here), are left out. An empty 2-rank job: 258 -> 106 ms on this machine. Used
# when the MPICH has libfabric and the caller's environment chooses none of these.
LOCAL_ENV = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "shm",
             "UCX_MEM_MMAP_HOOK_MODE": "none"}


def local_env(mpiexec: str) -> dict[str, str]:
    """:data:`LOCAL_ENV` when the MPICH beside ``mpiexec`` was built with libfabric (ofi)
    and the environment sets none of its variables, else nothing."""
    if any(k in os.environ for k in LOCAL_ENV):
        return {}
    tool = Path(mpiexec).parent / "mpichversion"
    try:
        out = subprocess.run([str(tool)], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    device = next((line for line in out.splitlines() if line.startswith("MPICH Device")), "")
    return dict(LOCAL_ENV) if "ofi" in device else {}


def _run_root() -> str | None:
    """Where run directories go: shared memory when there is some (no disk traffic)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


PHASES = ("start", "input", "compute", "output")


class MpiKernel(Kernel):
    """``executable`` runs on ``ranks`` ranks under ``mpiexec``. ``last_bytes_sent``: the
    bytes each rank sent in sends and exchanges during the last call (not counting the
    inputs and outputs, which go through files). ``last_phases``: the seconds the slowest
    rank spent, in the last call, starting MPI, reading its inputs, computing (with its
    messages) and writing its outputs; the rest of a call is the launch and the exit.
    ``comm``: the mpi4py communicator to run on inside a running job (default: its
    ``COMM_WORLD``; see :mod:`backends.mpi.inproc`)."""

    def __init__(self, program: Any, launcher: Path, library: Path, mpiexec: str,
                 ranks: int, env: dict[str, str] | None = None, runtime: bool = False,
                 **kw: Any) -> None:
        """``env``: variables added to the job's environment (:func:`local_env`); if the
        job fails before any rank reports, it is run again without them, and they are
        dropped for later calls (they only make the start faster). ``runtime``: the
        program reads its number of ranks at run time (``ranks="runtime"``): ``ranks``
        is then the default, and a call may name another (``k(..., ranks=R)``)."""
        super().__init__(program, **kw)
        self.runtime = runtime
        self._asked = False  # this call names its ranks (k(..., ranks=R))
        self.launcher = launcher
        self.library = library
        self.mpiexec = mpiexec
        self.comm: Any = None
        self._inproc: InProcess | None = None
        self._kept: KeptJob | None = None
        self._keeping = False
        self.ranks = ranks
        self.env = dict(env or {})
        self.last_bytes_sent: list[int] = []
        self.last_phases: dict[str, float] = {}

    def __call__(self, ranks: int | None = None, **kwargs: Any) -> dict[str, np.ndarray]:
        """Like any kernel; ``ranks``: the ranks this call runs on, for a program built
        with ``ranks="runtime"`` (default: ``self.ranks``; inside a running MPI job, its
        size)."""
        if ranks is None:
            return super().__call__(**kwargs)
        name = self.signature.name
        if isinstance(ranks, bool) or not isinstance(ranks, int) or not 1 <= ranks <= 64:
            raise KernelArgumentError(f"kernel {name}: ranks must be an int between 1 and "
                                      f"64, got {ranks!r}")
        if not self.runtime and ranks != self.ranks:
            raise KernelArgumentError(
                f"kernel {name}: built for {self.ranks} ranks, called with ranks={ranks}; "
                "compile it with ranks='runtime' (one build for any number) or "
                f"ranks={ranks}")
        before = self.ranks
        self.ranks, self._asked = ranks, True
        try:
            return super().__call__(**kwargs)
        finally:
            self.ranks, self._asked = before, False

    @property
    def launch_line(self) -> list[str]:
        """The command each call runs (plus the run directory and the params)."""
        return [self.mpiexec, "-launcher", "fork", "-n", str(self.ranks),
                str(self.launcher), str(self.library)]

    @contextlib.contextmanager
    def job(self) -> Iterator[MpiKernel]:
        """``with k.job(): k(...); k(...)``: the calls inside run on one MPI job that
        stays up between them (:mod:`backends.mpi.persist`), started at the first call and
        ended on leaving the block, instead of launching a job per call. Inside a running
        MPI job (mpi4py) the calls run in-process anyway."""
        if self._keeping:
            yield self
            return
        self._keeping = True
        try:
            yield self
        finally:
            self._keeping = False
            if self._kept is not None:
                self._kept.close()
                self._kept = None

    def _invoke_kept(self, params: list[int], arrays: list[np.ndarray]) -> int:
        """One call on the kept job (started, or started again after a failure)."""
        timeout = float(os.environ.get(TIMEOUT_ENV, "600"))
        if self._kept is not None and (not self._kept.alive or self._kept.ranks != self.ranks):
            # a live job of another R ends as at the end of the block (its ranks finalise
            # MPI); killing it, a job started right after sometimes crashed at its start
            self._kept.close(kill=not self._kept.alive)
            self._kept = None
        if self._kept is None:
            self._kept = KeptJob(self.launch_line[:-2], self.library, self.ranks,
                                 self.signature.name, self.env, timeout)
        args = self.signature.arguments
        roles = [b.role for b in args]
        run = Path(tempfile.mkdtemp(prefix="me-mpi-", dir=_run_root()))
        try:
            for k, (r, a) in enumerate(zip(roles, arrays, strict=True)):
                if r in ("input", "inout"):
                    np.ascontiguousarray(a).tofile(run / f"in_{k}.bin")
                else:
                    with open(run / f"out_{k}.bin", "wb") as fh:
                        fh.truncate(a.nbytes)
            try:
                stats = self._kept.call(run, params, arrays, roles)
            except KernelRuntimeError:
                if not self._kept.alive:  # else: a failure the ranks agreed on
                    self._kept = None
                raise
            for k, (r, a) in enumerate(zip(roles, arrays, strict=True)):
                if r in ("output", "inout"):
                    self._read_into(run / f"{'in' if r == 'inout' else 'out'}_{k}.bin", a)
        finally:
            shutil.rmtree(run, ignore_errors=True)
        self.last_bytes_sent = [int(x) for x in stats["sent"]]
        self.last_phases = dict(zip(PHASES, map(float, stats["phases"]), strict=True))
        return 0

    def _invoke(self, params: list[int], arrays: list[np.ndarray]) -> int:
        comm = job_comm(self.ranks, self.comm, self.signature.name,
                        self.runtime and not self._asked)
        if comm is not None:
            if self._inproc is None:
                self._inproc = InProcess(self.library, self.signature.name, self.ranks)
            self.last_bytes_sent, phases = self._inproc(comm, params, arrays)
            self.last_phases = dict(zip(PHASES, phases, strict=True))
            return 0
        if self._keeping:
            return self._invoke_kept(params, arrays)
        args = self.signature.arguments
        run = Path(tempfile.mkdtemp(prefix="me-mpi-", dir=_run_root()))
        try:
            for k, (b, a) in enumerate(zip(args, arrays, strict=True)):
                if b.role in ("input", "inout"):
                    np.ascontiguousarray(a).tofile(run / f"in_{k}.bin")
            cmd = [*self.launch_line, str(run), *map(str, params)]
            proc = self._run(cmd, self.env)
            if proc.returncode != 0 and self.env and not RANK_LINE.search(proc.stderr):
                proc = self._run(cmd, {})  # the transport did not start: the default one
                if proc.returncode == 0:
                    self.env = {}
            if proc.returncode != 0:
                raise KernelRuntimeError(self._failure(proc))
            for k, (b, a) in enumerate(zip(args, arrays, strict=True)):
                if b.role in ("output", "inout"):
                    self._read_into(run / f"out_{k}.bin", a)
            stats = np.fromfile(run / "stats_0.bin", dtype=np.int64)
            self.last_bytes_sent = [int(x) for x in stats]
            phases = np.fromfile(run / "stats_1.bin", dtype=np.float64)
            self.last_phases = {p: float(x) for p, x in zip(PHASES, phases, strict=True)}
        finally:
            shutil.rmtree(run, ignore_errors=True)
        return 0

    def _run(self, cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        remove_stale_endpoints()  # a rank given a dead one's pid would attach to them
        timeout = float(os.environ.get(TIMEOUT_ENV, "600"))
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, check=False,
                                  env={**env, **os.environ} if env else None)
        except subprocess.TimeoutExpired:
            raise KernelRuntimeError(
                f"kernel {self.signature.name}: the MPI job did not finish within "
                f"{timeout:g} s (${TIMEOUT_ENV}); it was killed") from None

    def _read_into(self, path: Path, a: np.ndarray) -> None:
        """The file's content into ``a``, without an intermediate copy when ``a`` is
        contiguous."""
        with open(path, "rb") as fh:
            if a.flags.c_contiguous:
                got = fh.readinto(memoryview(a.reshape(-1)).cast("B"))
            else:
                data = np.fromfile(fh, dtype=a.dtype, count=a.size)
                got = data.nbytes
                if got == a.nbytes:
                    a[...] = data.reshape(a.shape)
        if got != a.nbytes:
            raise KernelRuntimeError(f"kernel {self.signature.name}: {path.name} holds "
                                     f"{got} bytes, expected {a.nbytes}")

    def _failure(self, proc: subprocess.CompletedProcess[str]) -> str:
        """The first rank's own report, else the end of what mpiexec said."""
        for line in proc.stderr.splitlines():
            m = RANK_LINE.search(line)
            if m:
                return f"kernel {self.signature.name}: rank {m.group(1)}: {m.group(2)}"
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return (f"kernel {self.signature.name}: the MPI job failed (exit status "
                f"{proc.returncode}): {' | '.join(tail) or 'no output'}")
