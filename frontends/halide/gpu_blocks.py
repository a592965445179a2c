"""The block size of a loop the front-end maps to the GPU itself (:mod:`.host_stages`).

A stage Halide runs on the host gets, for a target without host statements, its outermost
pure loop split into GPU blocks x threads. The split is written into the pipeline before
any size is known (one rewrite per pipeline), and its factor is chosen per build, where
the translator knows the loop's extent (every build is specialized on the sizes and the
index Params, so a loop over a Param's range is a constant there too): the extent rounded
up to a power of two, at most a bound. A loop of 1 to 64 iterations is then one block of
that many threads rounded up (the gpu target trims a block to the thread loop's range),
and a long loop gets blocks of the bound, not 16 times more blocks of 64. The bound is
256, the largest work-group size every current GPU accepts (AMD's OpenCL devices stop at
256, CUDA at 1024), or the target's ``max_threads_per_block`` where it is smaller, so that
a mapping the user never wrote is never refused for its size. Where the extent is not
known (each build's are constants; this is a fallback, not a path seen in practice),
:data:`DEFAULT` threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontends.halide.hir import HExpr, HSplit, HType

BOUND = 256  # threads per block at most (see the module docstring)
DEFAULT = 64  # threads per block where the extent is not known
LIMIT_OPTION = "max_threads_per_block"  # a target option that bounds threads per block
_BLOCK, _THREAD = ".__gpu_block", ".__gpu_thread"


def bound(target_options: Mapping[str, Any] | None) -> int:
    """:data:`BOUND`, or the target's own limit (``max_threads_per_block=``) if smaller."""
    limit = (target_options or {}).get(LIMIT_OPTION)
    if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < BOUND:
        return limit
    return BOUND


def block_split(var: str, most: int) -> HSplit:
    """Pure loop ``var`` split into ``var.__gpu_block`` x ``var.__gpu_thread``, partial
    blocks guarded; the factor, ``most`` here, is :func:`block_size` of the extent at
    translation (:func:`split_factor`)."""
    return HSplit(var, var + _BLOCK, var + _THREAD, HExpr("IntImm", HType("int", 32),
                                                          value=most),
                  False, "GuardWithIf", "SplitVar")


def block_size(extent: int | None, most: int) -> int:
    """Threads per block for a loop of ``extent`` iterations (None: not known)."""
    if extent is None or extent < 1:
        return min(DEFAULT, most)
    return min(1 << (extent - 1).bit_length(), most)


def split_factor(sp: HSplit, extent: int | None, factor: int) -> int:
    """The factor of split ``sp`` whose written factor is ``factor``: the block size of a
    :func:`block_split` over ``extent`` iterations, ``factor`` for any other split."""
    if sp.outer == sp.old_var + _BLOCK and sp.inner == sp.old_var + _THREAD:
        return block_size(extent, factor)
    return factor
