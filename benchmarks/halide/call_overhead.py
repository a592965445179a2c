"""What one ``realize`` call costs beyond its kernel: Halide's ``Pipeline.realize(buffer)``
vs ours ``realize(sizes, out=array, **inputs)``, the papers' pipelines on a tiny image
(the kernels take a few microseconds, so the call is mostly overhead).

Two figures per side, interleaved in one run, on the same inputs and preallocated outputs:
``hot``, calls back to back (the interpreter's and the binding's code and data in the
caches), and ``cold``, each call after a 64 MB array has been swept (untimed), as after a
kernel that streamed a large image: on a 2 ms pipeline the call's cold cost is what adds
to the kernel's time (``compare.py``). The repeated call of ours takes the prepared path
(``frontends/halide/prepared.py``), its checks made in C (``frontends/fastcall.py``)
where that extension builds; ``python`` is the same repeated call with its checks made in
Python (prepared with ``MIDDLEEND_NO_FASTCALL=1``); ``unprepared`` is ours as a call that
repeats no earlier one costs (its build looked up, Halide's checks and the kernel's made),
measured by making the kernel forget its prepared calls before each call.

    python benchmarks/halide/call_overhead.py [--reps N] [--size S]"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import common  # noqa: E402,F401  (sets up the import path)
import halide as hl  # noqa: E402
import numpy as np  # noqa: E402
from common import print_table  # noqa: E402

from frontends.fastcall import OFF_ENV, stub_type  # noqa: E402
from frontends.halide import compile_pipeline  # noqa: E402
from frontends.halide.paper import ALL  # noqa: E402

SWEEP = np.ones(16 << 20, np.float32)  # 64 MB: more than any L3 here


def _sweep() -> None:
    SWEEP.__iadd__(1.0)


def sides(name: str, size: int) -> tuple[int, dict[str, Callable[[], object]]]:
    """The image size used and Halide's and our preallocated call of the first pipeline of
    ``name``, checked equal: the image is ``size`` square, or doubled until Halide accepts
    it (blurxy's expert schedule reads 2 pixels beyond its 256-wide tiles: 512)."""
    while True:
        b = ALL[name](size, size, "expert")
        b.set_inputs()
        funcs, sizes = b.groups[0]
        p = hl.Pipeline(funcs)
        p.compile_jit()
        try:
            ref = p.realize(sizes)
            break
        except hl.HalideError:
            if size >= 4096:
                raise
            size *= 2
    refs = [np.asarray(ref)] if isinstance(ref, hl.Buffer) else [np.asarray(r) for r in ref]
    h_out = [np.empty_like(r) for r in refs]
    h_dst: Any = hl.Buffer(h_out[0]) if len(h_out) == 1 else [hl.Buffer(a) for a in h_out]
    k = compile_pipeline(funcs, fp_contract=False)
    o_out = [np.empty_like(r) for r in refs]
    o_dst: Any = o_out[0] if len(o_out) == 1 else o_out
    k.realize(sizes, out=o_dst, **b.inputs)
    p.realize(h_dst)
    for a, h, r in zip(o_out, h_out, refs, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(h, r, rtol=1e-5, atol=1e-5, err_msg=name)

    def unprepared() -> object:
        k._prepared, k._last_built = (), None
        return k.realize(sizes, out=o_dst, **b.inputs)

    # the same kernel's calls prepared with the C checks off: the Python path's cost
    py = compile_pipeline(funcs, fp_contract=False)
    before = os.environ.get(OFF_ENV)
    os.environ[OFF_ENV] = "1"
    try:
        for _ in range(2):
            py.realize(sizes, out=o_dst, **b.inputs)
    finally:  # the user's own setting back, if any
        if before is None:
            del os.environ[OFF_ENV]
        else:
            os.environ[OFF_ENV] = before
    assert py._prepared and py._prepared[0].stub is None
    fns = {"halide": lambda: p.realize(h_dst),
           "ours": lambda: k.realize(sizes, out=o_dst, **b.inputs),
           "ours python": lambda: py.realize(sizes, out=o_dst, **b.inputs),
           "ours unprepared": unprepared}
    return size, fns


def timed(fns: dict[str, Callable[[], object]], reps: int) -> dict[str, tuple[float, float]]:
    """Median microseconds per call of each side, (hot, cold), interleaved: in each round
    every side makes one hot call (after a warm one) and one after a sweep."""
    hot: dict[str, list[float]] = {n: [] for n in fns}
    cold: dict[str, list[float]] = {n: [] for n in fns}
    for _ in range(reps):
        for n, fn in fns.items():
            fn()
            t = time.perf_counter()
            fn()
            hot[n].append(time.perf_counter() - t)
            _sweep()
            t = time.perf_counter()
            fn()
            cold[n].append(time.perf_counter() - t)
    return {n: (float(np.median(hot[n])) * 1e6, float(np.median(cold[n])) * 1e6)
            for n in fns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--size", type=int, default=32)
    args = ap.parse_args()
    ok, why = stub_type()
    rows = []
    for name in ALL:
        size, fns = sides(name, args.size)
        t = timed(fns, args.reps)
        (hh, hc), (oh, oc), (ph, pc), (fh, fc) = (t["halide"], t["ours"], t["ours python"],
                                                   t["ours unprepared"])
        rows.append([name, size, f"{hh:.1f}", f"{oh:.1f}", f"{oh / hh:.1f}", f"{ph:.1f}",
                     f"{fh:.1f}", f"{hc:.1f}", f"{oc:.1f}", f"{oc / hc:.1f}", f"{pc:.1f}",
                     f"{fc:.1f}"])
    print_table(f"realize call cost, median of {args.reps} (us; ratio = ours / Halide)",
                ["pipeline", "image", "hot Halide", "hot ours", "ratio", "hot python",
                 "hot unprepared", "cold Halide", "cold ours", "ratio", "cold python",
                 "cold unprepared"], rows)
    if not ok:
        print(f"ours: the C checks are off here ({why}): 'ours' is the Python path too")


if __name__ == "__main__":
    main()
