"""The contract between the middle-end and its targets: the :class:`Target` interface, the
artifact a build produces and the kernel calling convention every target's kernels share.
It depends only on the IR, so that ``backends/`` can implement it without reaching into
the passes or the driver."""

from .artifact import Artifact, ArtifactFile, materialize
from .base import Availability, SourceText, Target, TargetOption
from .kernel import RC_MESSAGES, Kernel
from .native import NativeKernel
from .paths import cache_root

__all__ = ["Artifact", "ArtifactFile", "Availability", "Kernel", "NativeKernel",
           "RC_MESSAGES", "SourceText", "Target", "TargetOption", "cache_root", "materialize"]
