"""The gpu target: CUDA and OpenCL kernels with their host programs, from the loop AST
(see :mod:`backends.gpu.target`)."""

from .target import GpuTarget

__all__ = ["GpuTarget"]
