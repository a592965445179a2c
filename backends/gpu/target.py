"""The gpu target: CUDA and OpenCL from the same loop AST.

``dialect="cuda"`` builds kernels and a C++ host launcher with nvcc into a shared object
(run where an NVIDIA GPU is); ``dialect="opencl"`` prints OpenCL C and runs it through
pyopencl on any OpenCL device (PoCL's CPU device where there is no GPU). The default is
CUDA where a GPU is present, else OpenCL. Both take the same kernels and the same host
program (:mod:`backends.gpu.plan`), so a schedule tested with OpenCL here is the schedule
that runs on the GPU.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from backends.clike.entry import c_declaration, generate_header
from middleend.ir.errors import TargetError, TargetUnavailable
from middleend.ir.fncalls import substitute_calls
from middleend.ir.loopast import Program, Signature
from middleend.ir.printing import iexpr_str
from middleend.target import (
    Artifact,
    ArtifactFile,
    Availability,
    Kernel,
    SourceText,
    Target,
    TargetOption,
    materialize,
)
from middleend.target.base import computations_in

from .cuda import CudaKernel, build_cuda, cuda_source, gpu_arch, nvcc, nvcc_flags
from .kernels import shared_bytes
from .opencl import OpenCLKernel, host_plan, opencl_source, probe_device
from .plan import GpuPlan, plan

PIP = "pip install pyopencl pocl-binary-distribution (the [gpu] extra)"
NVCC = "install the CUDA toolkit (nvcc), or use dialect='opencl'"
OPENCL_BUILD = ("-cl-fp32-correctly-rounded-divide-sqrt",)
# how the availability says that an OpenCL device exists but its compiler builds nothing
CANNOT_BUILD = "cannot build kernels"
# limits a block is checked against: 0 or less would refuse every kernel (or, read as
# unset, silently allow what the user meant to forbid), so such a value is a mistake
POSITIVE = ("max_threads_per_block", "shared_memory_kib")


class GpuTarget(Target):
    name = "gpu"
    summary = "CUDA (nvcc) and OpenCL (pyopencl; PoCL on the CPU without a GPU) kernels"
    tags = frozenset({"gpu_block", "gpu_thread", "unroll"})
    operations = frozenset({"copy", "barrier", "host_to_device", "device_to_host"})
    host_statements = False  # every computation runs on the device (plan.py)
    options = (
        TargetOption("dialect", str, "auto", "cuda or opencl (auto: cuda where an NVIDIA "
                     "GPU is, else opencl)", ("auto", "cuda", "opencl")),
        TargetOption("arch", str, "auto", "CUDA architecture, e.g. sm_90 (auto: the GPU's, "
                     "or sm_75 without one)"),
        TargetOption("fp_contract", bool, False, "allow fused multiply-add (float results "
                     "may then differ from numpy's in the last bits)"),
        TargetOption("max_threads_per_block", int, 1024, "refuse blocks with more threads"),
        TargetOption("shared_memory_kib", int, 48, "refuse blocks needing more shared "
                     "memory (KiB)"),
    )

    def __init__(self) -> None:
        self._gpu: str | None | bool = False  # not probed yet
        self._ocl: tuple[str | None, str | None] | None = None  # (device, problem), probed

    # ------------------------------------------------------------------ toolchains
    def _arch(self) -> str | None:
        if self._gpu is False:
            self._gpu = gpu_arch()
        return self._gpu  # type: ignore[return-value]

    def _opencl(self) -> str | None:
        """The OpenCL device kernels would run on, or None without pyopencl, a device or a
        device that can build kernels (``_opencl_problem`` says why)."""
        return self._probe_opencl()[0]

    def _opencl_problem(self) -> str:
        """Why there is no usable OpenCL device, in words ('' when there is one)."""
        return self._probe_opencl()[1] or ""

    def _probe_opencl(self) -> tuple[str | None, str | None]:
        if self._ocl is None:
            try:
                import pyopencl as cl
            except ImportError:
                self._ocl = (None, f"pyopencl is not installed; {PIP}")
                return self._ocl
            try:
                name, problem = probe_device(cl)
            except Exception as e:  # noqa: BLE001 - any failure to reach a device: absent
                self._ocl = (None, f"no usable OpenCL device ({e}); {PIP}")
            else:
                self._ocl = ((name, None) if problem is None else
                             (None, f"the OpenCL device {name!r} {CANNOT_BUILD}: "
                                    f"{problem}"))
        return self._ocl

    def availability(self) -> Availability:
        ocl, tool = self._opencl(), nvcc()
        if ocl is None and tool is None:
            return Availability(False, f"no nvcc, and {self._opencl_problem()}",
                                "pyopencl", PIP)
        parts = [f"OpenCL on {ocl!r}" if ocl else f"no OpenCL ({self._opencl_problem()})"]
        arch = self._arch()
        if tool:
            parts.append(f"CUDA: nvcc, {'GPU ' + arch if arch else 'no GPU (kernels build, '}"
                         + ("" if arch else "do not run)"))
        return Availability(True, "; ".join(parts))

    def identity(self) -> str:
        return json.dumps([self._opencl(), nvcc(), self._arch()])

    def resolve_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        # "" is the wire's unset text option (auto); a number is the user's, checked below
        opts = super().resolve_options({k: v for k, v in given.items() if v != ""})
        for name in POSITIVE:
            if opts[name] <= 0:
                raise TargetError(f"target 'gpu': option {name!r} must be a positive number, "
                                  f"got {opts[name]!r}", target=self.name)
        if opts["dialect"] == "auto":
            opts["dialect"] = "cuda" if self._arch() and nvcc() else "opencl"
        if opts["arch"] == "auto":
            opts["arch"] = self._arch() or "sm_75"
        return opts

    def _require(self, dialect: str) -> None:
        if dialect == "opencl" and self._opencl() is None:
            raise TargetUnavailable("target 'gpu' (dialect opencl) is not available here: "
                                    f"{self._opencl_problem()}", target=self.name,
                                    tool="pyopencl", install=PIP)
        if dialect == "cuda" and nvcc() is None:
            raise TargetUnavailable(f"target 'gpu' (dialect cuda) is not available here: "
                                    f"nvcc not found; {NVCC}", target=self.name, tool="nvcc",
                                    install=NVCC)

    # ------------------------------------------------------------------ compile
    def check(self, program: Program, options: Mapping[str, Any] | None = None) -> None:
        super().check(program, options)
        opts = options or {}
        most_threads = int(opts.get("max_threads_per_block", 1024))
        most_shared = int(opts.get("shared_memory_kib", 48)) * 1024
        gp = plan(program)
        decls = {b.name: b for b in program.buffers}
        for k in gp.kernels:
            threads = k.block[0] * k.block[1] * k.block[2]
            if threads > most_threads:
                shape = " x ".join(map(str, k.block))
                raise TargetError(
                    f"kernel {k.name} has {threads} threads per block ({shape}), more than "
                    f"max_threads_per_block={most_threads}: use smaller tiles (or raise the "
                    "option where the device allows it)", target=self.name,
                    computations=_comps(k.body))
            need = shared_bytes(k, decls)
            if need > most_shared:
                raise TargetError(
                    f"kernel {k.name} needs {need} bytes of shared memory per block "
                    f"({', '.join(k.shared)}), more than shared_memory_kib={most_shared // 1024} "
                    "KiB: use smaller tiles or raise the option where the device allows it",
                    target=self.name, computations=_comps(k.body))

    def declaration(self, program: Program) -> str:
        return c_declaration(program) + ";"

    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        program = substitute_calls(program)  # its printers print no functions
        gp = plan(program)
        fp = bool(options.get("fp_contract", False))
        if options.get("dialect") == "cuda":
            return [SourceText(f"{program.name}.cu", "cuda", cuda_source(program, gp))]
        return [SourceText(f"{program.name}.cl", "opencl", opencl_source(program, gp, fp)),
                SourceText(f"{program.name}.plan.json", "json", host_plan(program, gp))]

    def build(self, program: Program, sources: list[SourceText],
              options: Mapping[str, Any]) -> tuple[Artifact, str]:
        dialect = str(options.get("dialect"))
        self._require(dialect)
        sig = Signature.of(program)
        name = program.name
        gp = plan(substitute_calls(program))  # as generate() planned it
        launch = _launch_facts(gp)
        launch["dialect"] = dialect
        if dialect == "cuda":
            (src,) = sources
            arch, fp = str(options["arch"]), bool(options.get("fp_contract", False))
            lib = build_cuda(src.text, arch, fp)
            files = (ArtifactFile(f"lib{name}.so", "shared_object", lib.path.read_bytes()),
                     ArtifactFile(f"{name}.h", "header", generate_header(program).encode()),
                     ArtifactFile(src.name, "source", src.text.encode()),
                     ArtifactFile(f"{name}.log", "build_log", lib.log.encode()))
            command = " ".join(["nvcc", *nvcc_flags(arch, fp), src.name, "-o",
                                f"lib{name}.so"])
            return Artifact(self.name, files, sig, self.declaration(program), command,
                            dict(options), launch), lib.log
        kernel, hplan = sources
        # building for the device happens when the kernel is loaded (OpenCL compiles for
        # the device it runs on); build once here so that errors surface at compile time
        log = OpenCLKernel(sig, kernel.text, hplan.text,
                           build_options=_cl_options(options)).build_log
        files = (ArtifactFile(kernel.name, "kernel_source", kernel.text.encode()),
                 ArtifactFile(hplan.name, "script", hplan.text.encode()),
                 ArtifactFile(f"{name}.log", "build_log", log.encode()))
        return Artifact(self.name, files, sig, self.declaration(program),
                        "clBuildProgram " + " ".join(_cl_options(options)), dict(options),
                        launch), log

    def load(self, artifact: Artifact, **kernel_args: Any) -> Kernel:
        if artifact.launch.get("dialect") == "cuda":
            path = materialize(artifact.file("shared_object"), suffix=".so")
            return CudaKernel(artifact.signature, path, artifact=artifact, **kernel_args)
        self._require("opencl")
        return OpenCLKernel(artifact.signature, artifact.text("kernel_source"),
                            artifact.text("script"),
                            build_options=_cl_options(artifact.options),
                            artifact=artifact, **kernel_args)


def _cl_options(options: Mapping[str, Any]) -> tuple[str, ...]:
    contract = str(options.get("fp_contract", False)).lower() == "true"
    return OPENCL_BUILD + (("-cl-mad-enable",) if contract else ())


def _launch_facts(gp: GpuPlan) -> dict[str, str]:
    """Per kernel: its block size and its grid (as expressions of the params), for the
    artifact's users."""
    out = {}
    for k in gp.kernels:
        out[k.name] = (f"grid ({', '.join(iexpr_str(g) for g in k.grid)}) x block "
                       f"({', '.join(map(str, k.block))})"
                       + (f", shared {', '.join(k.shared)}" if k.shared else ""))
    return out


def _comps(n: Any) -> tuple[str, ...]:
    return tuple(sorted(computations_in(n)))
