"""The cpu target: C99 + OpenMP from the loop AST, built with the system C compiler into a
shared object and called through ctypes."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from backends.clike.entry import c_declaration, generate_header
from backends.cpu.caches import host_caches
from middleend.ir.errors import BuildError
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
from middleend.target.base import Machine

from .build import (
    compile_shared,
    compiler,
    compiler_identity,
    cpu_fingerprint,
    flags_for,
    host_isa,
    native_macros,
)
from .source import generate_c

INSTALL = ("install gcc with OpenMP (Debian/Ubuntu: apt-get install gcc libgomp1) or set CC "
           "to such a compiler")


class CpuTarget(Target):
    """Probes the compiler once per instance (a registry holds one instance per target),
    so that a cached compile costs one ``cc --version``, not one per question."""

    name = "cpu"
    summary = "C99 + OpenMP for this machine's CPU, built with the system C compiler ($CC)"
    tags = frozenset({"parallel", "vector", "unroll"})
    operations = frozenset({"copy"})
    options = (TargetOption("fp_contract", bool, False,
                            "allow fused multiply-add (faster; float results may then differ "
                            "from numpy's in the last bits)"),)

    def __init__(self) -> None:
        self._probe: tuple[Availability, str] | None = None
        self._machine: Machine | None = None

    def _probed(self) -> tuple[Availability, str]:
        """(availability, identity): the compiler answers --version, plus the CPU's
        fingerprint (``-march=native`` depends on both)."""
        if self._probe is None:
            cc = compiler()
            if shutil.which(cc[0]) is None:
                a = Availability(False, f"C compiler {cc[0]!r} not found", cc[0], INSTALL)
                self._probe = (a, "")
                return self._probe
            try:
                ident = compiler_identity(cc)
            except BuildError as e:
                self._probe = (Availability(False, str(e).split("\n")[0], cc[0], INSTALL), "")
                return self._probe
            isa = host_isa(cc)[0]
            key = "\0".join([ident, cpu_fingerprint(cc), " ".join(cc),
                             " ".join(flags_for(False, isa)), " ".join(flags_for(True, isa))])
            self._probe = (Availability(True, ident), key)
        return self._probe

    def availability(self) -> Availability:
        return self._probed()[0]

    def describe(self) -> str:
        """The compiler and what ``-march=native`` selects here (one more probe)."""
        a = self.availability()
        return f"{a.detail}; {host_isa(compiler())[0]}" if a.available else a.detail

    def identity(self) -> str:
        self.require()
        return self._probed()[1]

    def machine(self) -> Machine:
        """This host as the compiler sees it with the build's ``-march=native`` (its
        predefined macros) and its CPU's caches, probed once per instance."""
        self.require()
        if self._machine is None:
            self._machine = Machine.from_defines(native_macros(compiler()), host_caches())
        return self._machine

    def declaration(self, program: Program) -> str:
        return c_declaration(program) + ";"

    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        return [SourceText(f"{program.name}.c", "c", generate_c(program))]

    def build_host_library(self, source: str, include_dirs: Sequence[str] = ()) -> Path:
        return compile_shared(source, include_dirs=include_dirs).path

    def build(self, program: Program, sources: list[SourceText],
              options: Mapping[str, Any]) -> tuple[Artifact, str]:
        (src,) = sources
        fp = bool(options.get("fp_contract", False))
        lib = compile_shared(src.text, fp_contract=fp)
        name = program.name
        files = (
            ArtifactFile(f"lib{name}.so", "shared_object", lib.path.read_bytes()),
            ArtifactFile(f"{name}.h", "header", generate_header(program).encode()),
            ArtifactFile(src.name, "source", src.text.encode()),
            ArtifactFile(f"{name}.log", "build_log", lib.log.encode()),
        )
        command = " ".join([*compiler(), *flags_for(fp), src.name, "-o", f"lib{name}.so",
                            "-lm"])
        art = Artifact(self.name, files, Signature.of(program), self.declaration(program),
                       command, dict(options))
        return art, lib.log

    def load(self, artifact: Artifact, **kernel_args: Any) -> Kernel:
        path = materialize(artifact.file("shared_object"), suffix=".so")
        return NativeKernel(artifact.signature, path, artifact=artifact, **kernel_args)
