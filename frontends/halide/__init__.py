"""The Halide front-end: Halide 21 pipelines (pip ``halide``) compiled by the middle-end.

    k = compile_pipeline(out)            # out: hl.Func, list of Funcs or hl.Pipeline
    img = k.realize([W, H], inp=array)   # equals np.asarray(out.realize([W, H]))
"""

from frontends.halide.errors import (
    HalideCheckError,
    HalideFormatError,
    HalideFrontendError,
    IgnoredHalideDirective,
    UnsupportedHalideFeature,
)
from frontends.halide.pipeline import HalideKernel, compile_pipeline

__all__ = ["compile_pipeline", "HalideKernel", "UnsupportedHalideFeature", "HalideCheckError",
           "HalideFormatError", "HalideFrontendError", "IgnoredHalideDirective"]
