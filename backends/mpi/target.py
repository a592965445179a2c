"""The mpi target: one SPMD C program with MPI calls from the loop AST and its
distribution plan, built with mpicc into a shared object that the kernel runs under
mpiexec (through a generic launcher), or in-process inside a running MPI job."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from backends.clike.build import build_cached, tool_identity
from backends.clike.entry import generate_header
from backends.cpu.build import cache_dir, flags_for, host_isa
from backends.cpu.tileversion import version_tiles
from middleend.ir.distribution import RUNTIME as RANKS_AT_RUN
from middleend.ir.errors import TargetError
from middleend.ir.loopast import Program, Signature
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

from .cprint import MpiPrinter
from .kernel import MpiKernel, local_env
from .local import local_program
from .main import RUNTIME, generate_main
from .rootio import LAUNCHER, ROOT_IO, root_copies

INSTALL = "pip install mpich (the [mpi] extra; the README's commands install it)"
LAUNCHER_NAME = "me_mpi_launch"


def _tool(name: str) -> str | None:
    """``name`` next to this Python (a virtual environment's bin, where MPICH's wheel puts
    it), else on the PATH."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(name)


class MpiTarget(Target):
    name = "mpi"
    summary = "C + MPI, one process per rank (SPMD), built with mpicc, run with mpiexec"
    tags = frozenset({"distribute", "parallel", "vector", "unroll"})
    operations = frozenset({"copy", "send", "receive", "exchange", "scatter", "gather"})
    options = (
        TargetOption("ranks", int, 2, "the number of ranks (MPI processes) it runs on, or "
                     "'runtime': one program for any number, given at each call "
                     "(k(..., ranks=R))"),
        TargetOption("fp_contract", bool, False, "allow fused multiply-add (float results "
                     "may then differ from numpy's in the last bits)"),
    )

    def __init__(self) -> None:
        self._ident: str | None = None
        self._env: dict[str, str] | None = None  # the launch environment, asked once

    def availability(self) -> Availability:
        cc, run = _tool("mpicc"), _tool("mpiexec")
        if cc is None or run is None:
            missing = "mpicc" if cc is None else "mpiexec"
            return Availability(False, f"{missing} not found", missing, INSTALL)
        return Availability(True, f"{cc}, {run}")

    def identity(self) -> str:
        self.require()
        if self._ident is None:
            cc = [str(_tool("mpicc"))]
            self._ident = "\0".join([tool_identity(cc, "MPI C compiler"),
                                     tool_identity([*cc, "-show"], "MPI C compiler"),
                                     host_isa(cc)[1]])
        return self._ident

    def resolve_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        if given.get("ranks") == RANKS_AT_RUN:  # not an int: the base check would refuse it
            opts = super().resolve_options({k: v for k, v in given.items() if k != "ranks"})
            opts["ranks"] = RANKS_AT_RUN
            return opts
        opts = super().resolve_options(given)
        if not 1 <= opts["ranks"] <= 64:
            raise TargetError(f"target 'mpi': ranks must be between 1 and 64, got "
                              f"{opts['ranks']}", target=self.name)
        return opts

    def lowering(self, options: Mapping[str, Any]) -> dict[str, Any]:
        ranks = options.get("ranks", 2)
        return {"ranks": RANKS_AT_RUN if ranks == RANKS_AT_RUN else int(ranks)}

    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        dist = program.distribution
        if dist is None:
            raise TargetError("target 'mpi' needs a program lowered for a number of ranks",
                              target=self.name)
        # a parametric register tile's full-tile copy, as on the cpu target
        local = version_tiles(local_program(program, dist))
        printer = MpiPrinter(local, dist, program)
        kernel = printer.generate()
        threads = bool(printer.functions)  # parallel loops run on the cpu thread pool
        # the pool needs GNU extensions (sched_getaffinity), before any header
        head = "#define _GNU_SOURCE\n" if threads else ""
        text = (head + RUNTIME + ROOT_IO + root_copies(len(program.arguments)) + kernel
                + generate_main(program, local, dist, threads))
        return [SourceText(f"{program.name}_mpi.c", "c", text)]

    def build(self, program: Program, sources: list[SourceText],
              options: Mapping[str, Any]) -> tuple[Artifact, str]:
        (src,) = sources
        cc = _tool("mpicc")
        if cc is None:
            self.require()
        flags = flags_for(bool(options.get("fp_contract", False)), host_isa([str(cc)])[0])
        lib = build_cached(src.text, [str(cc)], flags, self.identity(), cache_dir() / "mpi",
                           ".c", "MPI C compiler", ["-lm"])
        launcher = build_cached(LAUNCHER, [str(cc)], ("-O2",), self.identity(),
                                cache_dir() / "mpi", ".c", "MPI C compiler", ["-ldl"])
        name = program.name
        ranks = options.get("ranks", 2)
        ranks = RANKS_AT_RUN if ranks == RANKS_AT_RUN else int(ranks)
        n = "<R>" if ranks == RANKS_AT_RUN else str(ranks)
        files = (
            ArtifactFile(f"{name}_mpi.so", "shared_object", lib.path.read_bytes()),
            ArtifactFile(LAUNCHER_NAME, "executable", launcher.path.read_bytes()),
            ArtifactFile(f"{name}.h", "header", generate_header(program).encode()),
            ArtifactFile(src.name, "source", src.text.encode()),
            ArtifactFile(f"{name}.log", "build_log", lib.log.encode()),
        )
        command = " ".join(["mpicc", *flags, src.name, "-o", f"{name}_mpi.so", "-lm"])
        launch = {"mpiexec": f"mpiexec -n {n} ./{LAUNCHER_NAME} ./{name}_mpi.so "
                             "<run directory> <params>",
                  "ranks": str(ranks)}
        art = Artifact(self.name, files, Signature.of(program), "", command, dict(options),
                       launch)
        return art, lib.log

    def load(self, artifact: Artifact, **kernel_args: Any) -> Kernel:
        self.require()
        launcher = materialize(artifact.file("executable"))
        launcher.chmod(0o755)
        library = materialize(artifact.file("shared_object"), suffix=".so")
        given = artifact.launch.get("ranks", artifact.options.get("ranks", 2))
        runtime = given == RANKS_AT_RUN
        mpiexec = str(_tool("mpiexec"))
        if self._env is None:
            self._env = local_env(mpiexec)
        return MpiKernel(artifact.signature, launcher, library, mpiexec,
                         2 if runtime else int(given), env=self._env, artifact=artifact,
                         runtime=runtime, **kernel_args)
