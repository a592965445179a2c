"""What a target's build produces, independent of how it travels (in-process or over the
wire): files with roles, the entry point's signature and declaration, how it was built and
target-specific launch facts. A target's ``load`` turns an Artifact back into a kernel."""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..ir.errors import DefinitionError
from ..ir.loopast import Signature
from .paths import cache_root

# File roles (the wire format's FileRole, by name).
FILE_ROLES = ("shared_object", "header", "source", "build_log", "kernel_source", "script",
              "executable")


@dataclass(frozen=True)
class ArtifactFile:
    name: str
    role: str
    content: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class Artifact:
    """A built program. ``declaration`` is the entry point as a C declaration (for callers
    outside Python); ``launch`` holds target-specific facts a loader or a user needs (the
    GPU grid, the mpiexec line, the cycle estimate), as text."""

    target: str
    files: tuple[ArtifactFile, ...]
    signature: Signature
    declaration: str
    build_command: str = ""
    options: dict[str, object] = field(default_factory=dict)
    launch: dict[str, str] = field(default_factory=dict)

    def file(self, role: str) -> ArtifactFile:
        """The one file of ``role`` (raises DefinitionError if there is not exactly one)."""
        found = [f for f in self.files if f.role == role]
        if len(found) != 1:
            raise DefinitionError(f"{self.target} artifact of {self.signature.name!r}: "
                                  f"expected one {role} file, found {len(found)}")
        return found[0]

    def text(self, role: str) -> str:
        return self.file(role).content.decode()


def materialize(f: ArtifactFile, digest: str | None = None, suffix: str = "",
                directory: Path | None = None) -> Path:
    """Write ``f`` under ``<cache>/kernels/<sha256>/`` (verified against ``digest`` when
    given: a file that travelled must arrive intact) and return its path; an existing copy
    is reused. The write is atomic, so concurrent loaders never see half a file."""
    actual = f.sha256
    if digest is not None and digest != actual:
        raise DefinitionError(f"artifact file {f.name}: digest mismatch (corrupted)")
    root = directory or cache_root() / "kernels"
    d = root / actual
    path = d / f"kernel{suffix}"
    if not path.exists():
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=suffix)
        with os.fdopen(fd, "wb") as fh:
            fh.write(f.content)
        os.replace(tmp, path)
    return path
