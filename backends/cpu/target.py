"""The cpu target: C99 + OpenMP from the loop AST, built with the system C compiler into a
shared object and called through ctypes."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

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

from .build import compile_shared, compiler, compiler_identity, flags_for, host_isa
from .cprinter import c_declaration, generate_c, generate_header

INSTALL = ("install gcc with OpenMP (Debian/Ubuntu: apt-get install gcc libgomp1) or set CC "
           "to such a compiler")


class CpuTarget(Target):
    name = "cpu"
    summary = "C99 + OpenMP for this machine's CPU, built with the system C compiler ($CC)"
    tags = frozenset({"parallel", "vector", "unroll"})
    operations = frozenset({"copy"})
    options = (TargetOption("fp_contract", bool, False,
                            "allow fused multiply-add (faster; float results may then differ "
                            "from numpy's in the last bits)"),)

    def availability(self) -> Availability:
        cc = compiler()
        if shutil.which(cc[0]) is None:
            return Availability(False, f"C compiler {cc[0]!r} not found", cc[0], INSTALL)
        try:
            ident = compiler_identity(cc)
            isa, _ = host_isa(cc)
        except BuildError as e:
            return Availability(False, str(e).split("\n")[0], cc[0], INSTALL)
        return Availability(True, f"{ident}; {isa}")

    def identity(self) -> str:
        cc = compiler()
        return "\0".join([compiler_identity(cc), host_isa(cc)[1], " ".join(cc),
                          " ".join(flags_for(False)), " ".join(flags_for(True))])

    def declaration(self, program: Program) -> str:
        return c_declaration(program) + ";"

    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        return [SourceText(f"{program.name}.c", "c", generate_c(program))]

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
