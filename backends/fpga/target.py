"""The fpga target: Vitis HLS C++ from the loop AST, checked by C-simulation.

There is no synthesis tool here, so the kernel a compile returns runs the C-simulation:
the HLS C++ compiled with g++ against Xilinx's open-source ``ap_int.h``/``hls_stream.h``
(from the hls4ml wheel, see :mod:`backends.fpga.headers`) plus a harness with the cpu
target's calling convention, built into a cached shared object and called through ctypes.
The artifact also carries ``run_hls.tcl`` (``vitis_hls -f run_hls.tcl`` synthesizes the
kernel where Vitis is installed) and the latency model, so that every call reports
``kernel.latency_estimate`` in cycles for the sizes it was called with.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

import numpy as np

from backends.clike.build import build_cached, tool_identity
from backends.clike.cexpr import ident
from middleend.ir.errors import BuildError
from middleend.ir.fncalls import substitute_calls
from middleend.ir.loopast import Program, Signature
from middleend.target import (
    Artifact,
    ArtifactFile,
    Availability,
    Kernel,
    NativeKernel,
    SourceText,
    Target,
    TargetOption,
    materialize,
)
from middleend.target.paths import cache_root

from .csim import harness
from .headers import INSTALL, ap_types_dir
from .hls import generate_hls, wide_buffers
from .latency import estimate, model, traffic

FLAGS = ("-std=c++14", "-O2", "-fPIC", "-shared", "-fwrapv", "-ffp-contract=off",
         "-fno-math-errno", "-Wno-unused-variable", "-Wno-unused-label")
DEFAULT_PART = "xcu250-figd2104-2L-e"  # an Alloy U250, the card of the paper's evaluation


def _cxx() -> list[str]:
    """The C++ compiler of the C-simulation, from ``$CXX`` or ``g++``."""
    return shlex.split(os.environ.get("CXX", "") or "g++") or ["g++"]


def run_hls_tcl(program: Program, part: str, clock_mhz: float) -> str:
    """A Vitis HLS script that C-simulates nothing (the harness is ours) and synthesizes
    the top function for ``part`` at ``clock_mhz``."""
    name = ident(program.name, "kernel name")
    if not all(ch.isalnum() or ch in "-_." for ch in part):
        raise BuildError(f"fpga part {part!r} is not a part name", [], "")
    period = 1000.0 / clock_mhz
    return "\n".join([
        "# Synthesize the kernel with Vitis HLS: vitis_hls -f run_hls.tcl",
        f"open_project -reset me_{name}_prj",
        f"set_top me_{name}_top",
        f"add_files {name}_hls.cpp",
        "open_solution -reset solution1 -flow_target vitis",
        f"set_part {{{part}}}",
        f"create_clock -period {period:.3f} -name default",
        "csynth_design",
        "export_design -format xo",
        "exit", ""])


class FpgaKernel(NativeKernel):
    """The C-simulation of an HLS kernel, called like the cpu one. After each call,
    ``latency_estimate`` holds the estimated cycles for that call's sizes (see
    :mod:`backends.fpga.latency`); ``sources`` the HLS C++ and ``run_hls.tcl``."""

    def __init__(self, program: Program | Signature, library: Any, *, latency_model: str,
                 clock_mhz: float, **kw: Any) -> None:
        super().__init__(program, library, **kw)
        self.latency_model = latency_model
        self.clock_mhz = clock_mhz
        self.latency_estimate: int | None = None

    @property
    def sources(self) -> dict[str, str]:
        art = self.artifact
        if art is None:
            return {}
        return {f.name: f.content.decode() for f in art.files
                if f.role in ("source", "script")}

    def estimate(self, **params: int) -> int:
        """Estimated cycles for these parameter values (without running)."""
        return estimate(self.latency_model, params)

    def traffic(self, **params: int) -> dict[str, tuple[int, int]]:
        """Elements each argument moves through its port, ``(reads, writes)``, for these
        parameter values (from the schedule, without running): e.g. an input read once
        per element under a line buffer, nine times under a plain 3x3 stencil."""
        return traffic(self.latency_model, params)

    def _invoke(self, params: list[int], arrays: list[np.ndarray]) -> int:
        rc = super()._invoke(params, arrays)
        self.latency_estimate = estimate(self.latency_model,
                                         dict(zip(self.signature.params, params, strict=True)))
        return rc


class FpgaTarget(Target):
    """Probes g++ once per instance (the registry holds one instance)."""

    name = "fpga"
    summary = ("Vitis HLS C++ (pipelines, array partitions, streams, 512-bit ports), checked "
               "by C-simulation with g++ and Xilinx's open-source headers")
    tags = frozenset({"pipeline", "unroll", "vector", "partition"})
    operations = frozenset({"stream", "line_buffer"})
    options = (TargetOption("part", str, DEFAULT_PART, "the FPGA part run_hls.tcl targets"),
               TargetOption("clock_mhz", float, 300.0,
                            "the clock run_hls.tcl asks for (latency in µs = cycles / MHz)"),
               TargetOption("fp_contract", bool, False,
                            "let the C-simulation fuse multiply-adds (as HLS may; float "
                            "results may then differ from numpy's in the last bits)"))

    def __init__(self) -> None:
        self._probe: tuple[Availability, str] | None = None

    def _probed(self) -> tuple[Availability, str]:
        if self._probe is None:
            headers = ap_types_dir()
            cxx = _cxx()
            if headers is None:
                self._probe = (Availability(False, "Xilinx's HLS headers (ap_int.h, "
                                            "hls_stream.h) are not installed", "hls4ml",
                                            INSTALL), "")
                return self._probe
            try:
                ident_cxx = tool_identity(cxx, "C++ compiler")
            except BuildError as e:
                self._probe = (Availability(False, str(e).split("\n")[0], cxx[0],
                                            "install g++ or set CXX"), "")
                return self._probe
            self._probe = (Availability(True, f"{ident_cxx}; HLS headers in {headers}"),
                           "\0".join([ident_cxx, " ".join(cxx), " ".join(FLAGS)]))
        return self._probe

    def availability(self) -> Availability:
        return self._probed()[0]

    def identity(self) -> str:
        self.require()
        return self._probed()[1]

    def estimate_cycles(self, program: Program, params: Mapping[str, int]) -> float | None:
        """The latency model's cycles for one call (what ``kernel.estimate`` returns)."""
        return float(estimate(model(program), dict(params)))

    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        part = str(options.get("part", DEFAULT_PART))
        clock = float(options.get("clock_mhz", 300.0))
        if not 1.0 <= clock <= 1000.0:
            raise BuildError(f"fpga clock_mhz {clock} is outside [1, 1000] MHz", [], "")
        program = substitute_calls(program)  # its printer prints no functions
        return [SourceText(f"{program.name}_hls.cpp", "hls-c++", generate_hls(program)),
                SourceText("run_hls.tcl", "tcl", run_hls_tcl(program, part, clock))]

    def build(self, program: Program, sources: list[SourceText],
              options: Mapping[str, Any]) -> tuple[Artifact, str]:
        self.require()
        hls, tcl = sources
        headers = ap_types_dir()
        assert headers is not None  # require() checked it
        csim = harness(program, wide_buffers(program))
        contract = "-ffp-contract=fast" if options.get("fp_contract") else "-ffp-contract=off"
        flags = (*(contract if f == "-ffp-contract=off" else f for f in FLAGS), f"-I{headers}")
        lib = build_cached(hls.text + "\n" + csim, _cxx(), flags, self._probed()[1],
                           cache_root() / "fpga", ".cpp", "C++ compiler (C-simulation)")
        name = program.name
        files = (
            ArtifactFile(f"lib{name}_csim.so", "shared_object", lib.path.read_bytes()),
            ArtifactFile(hls.name, "source", hls.text.encode()),
            ArtifactFile(f"{name}_csim.cpp", "kernel_source", csim.encode()),
            ArtifactFile(tcl.name, "script", tcl.text.encode()),
            ArtifactFile(f"{name}.log", "build_log", lib.log.encode()),
        )
        command = " ".join([*_cxx(), *FLAGS, "-I<hls4ml>/templates/vivado/ap_types",
                            hls.name, f"{name}_csim.cpp", "-o", f"lib{name}_csim.so"])
        launch = {"latency_model": model(program),
                  "clock_mhz": repr(float(options.get("clock_mhz", 300.0))),
                  "part": str(options.get("part", DEFAULT_PART))}
        art = Artifact(self.name, files, Signature.of(program), "", command, dict(options),
                       launch)
        return art, lib.log

    def load(self, artifact: Artifact, **kernel_args: Any) -> Kernel:
        path = materialize(artifact.file("shared_object"), suffix=".so")
        return FpgaKernel(artifact.signature, path, artifact=artifact,
                          latency_model=artifact.launch["latency_model"],
                          clock_mhz=float(artifact.launch.get("clock_mhz", "300")),
                          **kernel_args)
