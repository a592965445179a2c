"""The demo of the README: the papers' blur through the middle-end on the CPU, then on the
gpu target.

Tells the story on one screen: the schedule as written, the four layers it gives, the
kernel built from them and its speed-up over numpy on the same data; then the legality
check refusing an illegal schedule (``--show-c`` adds the generated C, a few hundred lines
with its helpers); then compiles the blur with the GPU
schedule of the paper's Figure 3-(b) (shared memory, a barrier, the host/device copies of
Layer IV) and runs it (CUDA where a GPU is, else OpenCL on PoCL's CPU device). The compiles
go through the wire format to the embedded (in-process) middle-end, exactly as a remote one
would: the artifact cache key and the per-phase timings come from its response. Run with
``python -m middleend.api.demo`` (``bash scripts/demo.sh`` does).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import middleend as me

from .examples import blur, schedule_blur
from .examples_gpu import schedule_blur_gpu


def numpy_blur(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


def best_of(fn, n: int = 5) -> float:  # type: ignore[no-untyped-def]
    fn()
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=2112)
    ap.add_argument("--cols", type=int, default=3520)
    ap.add_argument("--show-c", action="store_true",
                    help="also print the generated C (the kernel and its helpers)")
    ap.add_argument("--quiet", action="store_true",
                    help="never print the generated C, even with --show-c")
    ap.add_argument("--no-gpu", action="store_true", help="skip the gpu target part")
    args = ap.parse_args(argv)

    b = schedule_blur(blur())
    f = b.fn
    print(f"== the papers' blur, {args.rows}x{args.cols}x3 float32, on the cpu target ==")
    print("Layer I says what to compute (bx: a horizontal 3-point mean, by: a vertical one "
          "of bx);\nthe schedule says how, in commands the compiler checks against the "
          "exact dependences:")
    for c in f.commands.items:
        print(f"  {c.describe()}")
    t0 = time.perf_counter()
    low = f.lower()
    t_lower = time.perf_counter() - t0
    print()
    print(low.layers_text())
    t0 = time.perf_counter()
    kernel = f.compile(target="cpu")
    t_build = time.perf_counter() - t0
    n_lines = kernel.source.count("\n")
    if args.show_c and not args.quiet:
        print("\n== generated C ==")
        print(kernel.source)
    else:
        print(f"\n(the generated C: {n_lines} lines, in kernel.source; --show-c prints it)")

    rng = np.random.default_rng(0)
    a = rng.random((args.rows, args.cols, 3), dtype=np.float32)
    out = np.empty((args.rows - 2, args.cols - 2, 3), np.float32)
    kernel(inp=a, by=out)
    ref = numpy_blur(a)
    ok = np.allclose(out, ref, rtol=1e-5, atol=1e-6)
    t_ours = best_of(lambda: kernel(inp=a, by=out))
    t_np = best_of(lambda: numpy_blur(a))
    print("\n== result ==")
    print(f"lowering {t_lower * 1e3:.1f} ms, compile through the embedded service "
          f"{t_build * 1e3:.1f} ms (artifact {kernel.cache_key[:16]}; phases: "
          + ", ".join(f"{t.phase} {t.seconds * 1e3:.1f} ms" for t in kernel.timings) + ")")
    print(f"blur {args.rows}x{args.cols}x3: middle-end {t_ours * 1e3:.2f} ms, numpy "
          f"{t_np * 1e3:.2f} ms, speed-up {t_np / t_ours:.2f}x, equal to numpy: {ok}")

    b2 = blur()
    f2, bx2, by2 = b2.fn, b2.bx, b2.by
    by2.parallelize("i")
    by2.after(bx2, "i")  # fusing at i without a shift reads rows bx has not computed yet
    try:
        f2.compile(target="cpu")
        print("unexpected: the illegal schedule was accepted")
        return 1
    except me.ScheduleError as e:
        print("\n== an illegal schedule, refused ==")
        print(e)
    if not args.no_gpu:
        ok = gpu_part(a, ref) and ok
    return 0 if ok else 1


def gpu_part(a: np.ndarray, ref: np.ndarray) -> bool:
    """The same blur on the gpu target, Figure 3-(b)'s schedule; False if it is wrong."""
    print("\n== the gpu target: Figure 3-(b) ==")
    f = schedule_blur_gpu(blur(), "figure3b", 8, 32).fn
    layer4 = f.layers().split("== Layer IV (allocation, communication) ==\n")[1]
    print("\n".join(line for line in layer4.splitlines() if not line.startswith("  ")))
    try:
        kernel = f.compile(target="gpu")
    except me.TargetUnavailable as e:
        print(f"skipped: {e}")
        return True
    out = kernel(inp=a)["by"]
    ok = bool(np.allclose(out, ref, rtol=1e-5, atol=1e-6))
    launch = kernel.artifact.launch
    print(f"dialect {launch['dialect']}: " + "; ".join(
        f"{k} {v}" for k, v in launch.items() if k != "dialect"))
    print(f"equal to numpy: {ok}")
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
