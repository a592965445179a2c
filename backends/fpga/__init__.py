"""The fpga target: Vitis HLS C++ (pipelines, array partitions, streams, 512-bit ports)
from the loop AST, checked by C-simulation (g++ and Xilinx's open-source headers from the
hls4ml wheel). :class:`FpgaTarget` is the plug-in the registry finds (entry point
``fpga``)."""

from .hls import generate_hls
from .target import FpgaKernel, FpgaTarget

__all__ = ["FpgaKernel", "FpgaTarget", "generate_hls"]
