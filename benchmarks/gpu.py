"""The gpu target: ours vs Halide's own GPU code on the same schedule, and sgemm vs cuBLAS.

Rows (each checked against the anchor's result before anything is timed):

* ``blur tiles``: the separable 3x3 blur, both stages ``gpu_tile`` 16 x 8 (two kernels);
* ``blur shared``: the producer computed per block of its consumer (Figure 3-(b): shared
  memory and a barrier);
* ``conv2D``: a 3x3 convolution over an RDom, the reduction in each thread (``gpu_tile``
  16 x 16 of the pure and of the update definition);
* ``sgemm``: C = A @ B with 16 x 16 shared-memory tiles of A and B (``cache_shared_at``);
  its anchor is cuBLAS (through cupy) on a GPU, Halide's ``gpu_tile`` of the same matmul on
  PoCL (where there is no cuBLAS).

The blur and conv2D rows are Halide Funcs with one schedule: Halide JIT-compiles them for its
own GPU target (CUDA on a GPU, OpenCL on PoCL), the middle-end compiles the very same Funcs
through the Halide front-end for ``target="gpu"`` with the matching dialect. Both sides do
the same work per call: the input goes to the device (Halide's input buffer is marked
host-dirty before every call, as ours copies it every call), the kernels run, the output
comes back to a fresh host array.

Where there is no GPU (``nvidia-smi`` absent), the OpenCL kernels run on PoCL's CPU device:
the table then reports correctness and timings **as information only** -- a CPU emulating a
GPU grid says nothing about GPU performance, and the ratio column is left out of any claim.

    python benchmarks/gpu.py [--reps N] [--size S]
"""

from __future__ import annotations

import ctypes
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import numpy as np
from common import best_of_interleaved, print_table, short_error

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import halide as hl  # noqa: E402

import middleend as me  # noqa: E402
from frontends.halide import compile_pipeline  # noqa: E402
from middleend.api.examples import matmul  # noqa: E402
from middleend.api.examples_gpu import schedule_matmul_gpu  # noqa: E402

Runner = Callable[[], np.ndarray]


@dataclass(frozen=True)
class Row:
    name: str
    ours: Runner
    anchor: Runner
    anchor_name: str
    work: float  # floating-point operations per call (for GFLOP/s), 0 if not counted


def has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None


def halide_gpu_target(dialect: str) -> hl.Target:
    """Halide's JIT target with its CUDA or OpenCL runtime. For OpenCL, Halide's runtime
    looks the API up among the loaded libraries: the ICD loader that pyopencl ships (with
    PoCL registered by pocl-binary-distribution) is loaded first, globally."""
    if dialect == "opencl":
        import pyopencl  # the gpu extra; registers PoCL's ICD

        libs = sorted((Path(pyopencl.__file__).parent / ".libs").glob("libOpenCL*"))
        if libs:
            ctypes.CDLL(str(libs[0]), mode=ctypes.RTLD_GLOBAL)
    feature = hl.TargetFeature.CUDA if dialect == "cuda" else hl.TargetFeature.OpenCL
    return hl.get_host_target().with_feature(feature)


def halide_runner(out: hl.Func, sizes: list[int], inputs: list[tuple[hl.ImageParam, Any]],
                  target: hl.Target) -> Runner:
    bufs = [(p, hl.Buffer(v)) for p, v in inputs]
    for p, b in bufs:
        p.set(b)
    pipe = hl.Pipeline(out)
    pipe.compile_jit(target)

    def run() -> np.ndarray:
        for _, b in bufs:
            b.set_host_dirty(True)  # copied to the device again, as ours does
        r = pipe.realize(sizes, target)
        r.copy_to_host()
        return np.asarray(r)

    return run


def ours_runner(out: hl.Func, sizes: list[int], inputs: dict[str, Any],
                dialect: str) -> Runner:
    k = compile_pipeline(out, target="gpu", dialect=dialect)
    k.realize(sizes, **inputs)  # compiled outside the timing

    def run() -> np.ndarray:
        return np.asarray(k.realize(sizes, **inputs))

    return run


# ---------------------------------------------------------------------------- pipelines


def blur(a: hl.ImageParam, shared: bool) -> hl.Func:
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y] = (a[x, y] + a[x + 1, y] + a[x + 2, y]) / 3
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    by.gpu_tile(x, y, xo, yo, xi, yi, 16, 8)
    if shared:
        bx.compute_at(by, xo).gpu_threads(x, y)
    else:
        bx.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 16, 8)
    return by


def conv2d(a: hl.ImageParam, kern: hl.ImageParam) -> hl.Func:
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    r = hl.RDom([(0, 3), (0, 3)])
    out = hl.Func("conv")
    out[x, y] = 0.0
    out[x, y] += a[x + r.x, y + r.y] * kern[r.x, r.y]
    out.gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    out.update(0).gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    return out


def halide_matmul(a: hl.ImageParam, b: hl.ImageParam, n: int) -> hl.Func:
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    k = hl.RDom([(0, n)])
    c = hl.Func("C")
    c[x, y] = 0.0
    c[x, y] += a[k, y] * b[x, k]
    c.gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    c.update(0).gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    return c


def halide_rows(size: int, dialect: str, rng: np.random.Generator) -> list[Row]:
    target = halide_gpu_target(dialect)
    rows = []
    w, h = size, size
    img = rng.random((h + 2, w + 2), dtype=np.float32)
    kv = rng.random((3, 3), dtype=np.float32)
    for name, shared in (("blur tiles", False), ("blur shared", True)):
        a = hl.ImageParam(hl.Float(32), 2, "a")
        f = blur(a, shared)
        rows.append(Row(name, ours_runner(f, [w, h], {"a": img}, dialect),
                        halide_runner(f, [w, h], [(a, img)], target), f"Halide {dialect}",
                        0.0))
    a, kern = hl.ImageParam(hl.Float(32), 2, "a"), hl.ImageParam(hl.Float(32), 2, "kern")
    f = conv2d(a, kern)
    rows.append(Row("conv2D", ours_runner(f, [w, h], {"a": img, "kern": kv}, dialect),
                    halide_runner(f, [w, h], [(a, img), (kern, kv)], target),
                    f"Halide {dialect}", 2.0 * 9 * w * h))
    return rows


def sgemm_row(n: int, dialect: str, rng: np.random.Generator) -> Row:
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    k = schedule_matmul_gpu(matmul("sgemm", n), 16, shared=True).fn.compile(
        target="gpu", dialect=dialect)

    def ours() -> np.ndarray:
        return k(A=a, B=b)["C"]

    if dialect == "cuda":
        try:
            import cupy  # cuBLAS; not in the gpu extra (a CUDA-version-specific wheel)
        except ImportError:
            print("sgemm: cupy is not installed, so no cuBLAS anchor (pip install "
                  "cupy-cuda12x); Halide's CUDA gpu_tile matmul is the anchor instead")
        else:
            def cublas() -> np.ndarray:  # the same work: copies in, product, copy back
                return cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b))

            return Row("sgemm", ours, cublas, "cuBLAS (cupy)", 2.0 * n ** 3)
    pa, pb = hl.ImageParam(hl.Float(32), 2, "A"), hl.ImageParam(hl.Float(32), 2, "B")
    anchor = halide_runner(halide_matmul(pa, pb, n), [n, n], [(pa, a), (pb, b)],
                           halide_gpu_target(dialect))
    return Row("sgemm", ours, anchor, f"Halide {dialect} (gpu_tile)", 2.0 * n ** 3)


# ---------------------------------------------------------------------------- main


def measure(rows: list[Row], reps: int) -> list[tuple[object, ...]]:
    out = []
    for r in rows:
        try:
            got, ref = r.ours(), r.anchor()
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4, err_msg=r.name)
        except Exception as e:  # noqa: BLE001 - reported in the table, the others still run
            out.append((r.name, r.anchor_name, "FAILED", short_error(e), "", ""))
            continue
        t = best_of_interleaved({"ours": r.ours, "anchor": r.anchor}, reps)
        gf = (f"{r.work / t['ours'] / 1e9:.1f} / {r.work / t['anchor'] / 1e9:.1f}"
              if r.work else "")
        out.append((r.name, r.anchor_name, "ok", f"{t['ours'] * 1e3:.2f} / "
                    f"{t['anchor'] * 1e3:.2f}", f"{t['anchor'] / t['ours']:.2f}", gf))
    return out


def main() -> None:
    p = common.argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=common.DEFAULT_REPS)
    p.add_argument("--size", type=int, default=0,
                   help="image side and sgemm N (default: 2048/1024 on a GPU, 512/256 on "
                        "PoCL)")
    args = p.parse_args()
    gpu = has_gpu()
    dialect = "cuda" if gpu else "opencl"
    size = args.size or (2048 if gpu else 512)
    n = args.size or (1024 if gpu else 256)
    rng = np.random.default_rng(0)
    rows: list[Row] = []
    try:
        rows += halide_rows(size, dialect, rng)
        rows.append(sgemm_row(n, dialect, rng))
    except me.MiddleEndError as e:
        raise SystemExit(f"gpu benchmark: {e}") from None
    table = measure(rows, args.reps)
    where = ("a GPU (CUDA)" if gpu else
             "PoCL's CPU device (no GPU here): correctness and timings as information "
             "only, not GPU performance")
    print_table(f"gpu target on {where}; images {size}x{size}, sgemm N={n}",
                ["program", "anchor", "check", "ms ours / anchor", "anchor/ours",
                 "GFLOP/s ours / anchor"], table)


if __name__ == "__main__":
    main()
