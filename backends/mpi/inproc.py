"""Running an mpi kernel inside an MPI job that is already running.

A script started with ``mpiexec -n R python script.py`` that initialised MPI through
mpi4py calls the kernel on every rank, as it would call a cpu kernel. Launching a second
job from each rank would be wrong, so the kernel's shared object is loaded into the
process and its ``me_inproc`` runs this rank's part on the caller's communicator
(``MPI.COMM_WORLD`` unless the kernel's ``comm`` says): the root's (rank 0's) whole
arrays are scattered to the ranks and the outputs gathered back to them, as with
``MPI_Scatterv``/``MPI_Gatherv`` (or the root of a buffer's ``me.scatter``/``me.gather``
operation): the other ranks' inputs are not read, and their outputs are zeros (never
memory left uninitialised). mpi4py is looked up only if the caller
imported it: the middle-end never initialises MPI itself.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import Any

import numpy as np

from middleend.ir.errors import KernelArgumentError, KernelRuntimeError

_STATUS = {
    10: "MPI is not initialised",
    12: "MPI was initialised without MPI_THREAD_FUNNELED, which its parallel loops need",
    13: "it was called from a thread other than the one that initialised MPI",
}


def job_comm(ranks: int, comm: Any, name: str, any_size: bool = False) -> Any | None:
    """The communicator to run on in-process, or None to launch ``mpiexec`` as usual
    (mpi4py not imported, MPI not running, or a job of one process that was not asked
    for: a plain ``python`` that imported mpi4py). A running job of another size is an
    error: each rank would launch a job of its own; unless ``any_size`` (a program that
    reads its number of ranks at run time), which runs on the job's ranks."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return None
    c = comm if comm is not None else mpi.COMM_WORLD
    size = c.Get_size()
    if size == ranks or (any_size and size > 1):
        return c
    if comm is None and size == 1:
        return None
    raise KernelRuntimeError(
        f"kernel {name}: called inside an MPI job of {size} rank(s) (mpi4py), but it was "
        f"built or called for {ranks}: compile it with ranks={size} (or 'runtime' and call "
        "it without ranks=), or call it outside the job")


class InProcess:
    """The kernel's shared object loaded into this process (once), and one call of it."""

    def __init__(self, library: Path, name: str, ranks: int) -> None:
        self.name, self.ranks = name, ranks
        lib = ctypes.CDLL(str(library))  # links the libmpi mpi4py already loaded
        self.last_error = lib.me_last_error
        self.last_error.restype = ctypes.c_char_p
        self.last_error.argtypes = [ctypes.POINTER(ctypes.c_int)]
        self.entry = lib.me_inproc
        self.entry.restype = ctypes.c_int
        self.entry.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                               ctypes.POINTER(ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64),
                               ctypes.c_int]

    def __call__(self, comm: Any, params: list[int], arrays: list[np.ndarray],
                 shared: bool = False) -> tuple[list[int], list[float]]:
        """Run this rank's part; returns the bytes each rank sent and the slowest rank's
        seconds per phase (start, input, compute, output). The program zeroes the outputs
        of the ranks that are not their root, unless the ranks' ``arrays`` are ``shared``
        (the same memory: a kept job's files)."""
        every = comm.allgather(params)  # collective: every rank sees the same answer
        for r, got in enumerate(every):
            if got != every[0]:
                raise KernelArgumentError(
                    f"kernel {self.name}: the ranks disagree on the parameters: rank 0 "
                    f"passed {every[0]}, rank {r} passed {got} (call it with the same "
                    "shapes and parameters on every rank)")
        p = (ctypes.c_int64 * (len(params) + 1))(*params)
        ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*(a.ctypes.data for a in arrays))
        phases = (ctypes.c_double * 4)()
        sent = (ctypes.c_int64 * comm.Get_size())()
        rc = self.entry(comm.py2f(), p, ptrs, phases, sent, 0 if shared else 1)
        if rc == 11:
            raise KernelRuntimeError(f"kernel {self.name}: the communicator does not have "
                                     f"{self.ranks} ranks")
        if rc == 20:  # a failure every rank agreed on: the same exception on every rank
            who = ctypes.c_int(-1)
            text = (self.last_error(ctypes.byref(who)) or b"").decode(errors="replace")
            raise KernelRuntimeError(f"kernel {self.name}: rank {who.value}: {text}")
        if rc != 0:
            raise KernelRuntimeError(f"kernel {self.name}: rank {comm.Get_rank()}: "
                                     f"{_STATUS.get(rc, f'status {rc}')}")
        return [int(x) for x in sent], [float(x) for x in phases]
