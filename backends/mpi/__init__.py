"""The mpi target: C + MPI for distributed machines (SPMD, one process per rank), built
with mpicc and run with mpiexec (MPICH's wheel supplies both)."""

from .target import MpiTarget

__all__ = ["MpiTarget"]
