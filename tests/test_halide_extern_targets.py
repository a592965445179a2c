"""``define_extern`` pipelines on every target, against Halide's realize: the extern stages
are called on the host between the parts' kernels (frontends/halide/externs.py), and every
target's kernel takes and returns host arrays, so the gpu (OpenCL on PoCL), mpi and fpga
(C-simulated) targets run them as the cpu target does, as Halide runs a host extern stage
on a GPU target. The extern asks in its bounds query for one more element on each side of
its input and uses mins and strides (a wrong buffer is a wrong value)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import halide as hl
import numpy as np
import pytest
from halide_util import BUFFER_T_C, assert_same, halide_realize

from frontends.halide import compile_pipeline
from middleend.driver.targets import TargetRegistry

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

_SOURCE = BUFFER_T_C + r"""
/* out(x, y) = in(x - 1, y) - 2 * in(x + 1, y) */
int h6t_diff(buf_t *in, buf_t *out) {
    if (out->host == NULL) {
        in->dim[0].min = out->dim[0].min - 1;
        in->dim[0].extent = out->dim[0].extent + 2;
        in->dim[1].min = out->dim[1].min;
        in->dim[1].extent = out->dim[1].extent;
        return 0;
    }
    const int32_t *src = (const int32_t *)in->host;
    for (int y = out->dim[1].min; y < out->dim[1].min + out->dim[1].extent; y++)
        for (int x = out->dim[0].min; x < out->dim[0].min + out->dim[0].extent; x++) {
            int32_t a = src[(x - 1 - in->dim[0].min) * in->dim[0].stride
                            + (y - in->dim[1].min) * in->dim[1].stride];
            int32_t b = src[(x + 1 - in->dim[0].min) * in->dim[0].stride
                            + (y - in->dim[1].min) * in->dim[1].stride];
            ((int32_t *)out->host)[(x - out->dim[0].min) * out->dim[0].stride
                                   + (y - out->dim[1].min) * out->dim[1].stride] = a - 2 * b;
        }
    return 0;
}
"""


@pytest.fixture(scope="module")
def extern_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("h6t")
    src, lib = d / "h6t.c", d / "libh6t.so"
    src.write_text(_SOURCE)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    return lib


def _available(target: str) -> None:
    a = TargetRegistry.discover().lookup(target).availability()
    if not a.available:
        pytest.skip(f"{target} target unavailable: {a.detail}")


_TARGETS = [
    pytest.param("gpu", {"dialect": "opencl"}, marks=pytest.mark.skipif(
        find_spec("pyopencl") is None,
        reason="the gpu extra (pyopencl, PoCL) is not installed")),
    pytest.param("mpi", {}, marks=pytest.mark.mpi),
    pytest.param("fpga", {}, marks=pytest.mark.fpga),
]


@pytest.mark.parametrize(("target", "options"), _TARGETS)
def test_extern_between_stages(extern_lib: Path, rng: np.random.Generator, target: str,
                               options: dict[str, Any]) -> None:
    """g (reading an ImageParam) -> extern -> h, realized twice (the builds reused)."""
    _available(target)
    x, y = hl.Var("x"), hl.Var("y")
    im = hl.ImageParam(hl.Int(32), 2, "im")
    g = hl.Func("g")
    g[x, y] = im[x + 1, y] * 3 + x - y
    g.compute_root()
    e = hl.Func("e")
    e.define_extern("h6t_diff", [g], hl.Int(32), 2)
    h = hl.Func("h")
    h[x, y] = e[x, y] + e[x + 1, y] * 5
    k = compile_pipeline(h, target=target, **options)
    for shape in ((7, 15), (7, 15)):
        data = rng.integers(-50, 50, shape, dtype=np.int32)
        ref = halide_realize([h], [10, 6], [(im, data)])
        assert_same(k.realize([10, 6], im=data), ref)
