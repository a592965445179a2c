"""A pipeline with ``specialize()`` branches: Halide 21 vs the middle-end, per call.

The pipeline (a 3-tap blur of a float image plus a Param offset) has the specializations a
user writes to pick a schedule at run time: the output vectorized by 8 when its width is a
multiple of 8, the intermediate computed per row and vectorized when the Param is positive,
rows in parallel when the image is tall. Both sides run the same Func objects into outputs
preallocated once (Halide ``realize(buffer)``, ours ``realize(sizes, out=array)``); every
size is checked against Halide's realize first. A third column is ours on the same
pipeline without any ``specialize()`` (its default schedule), so the front-end's cost of
choosing the branches per call shows at the small size.

Timing: ``common.samples_interleaved`` (all candidates alternating in one process), best
of N, spread ((median - best) / best); ratio = ours / Halide (< 1: we are faster).

    python benchmarks/halide/specialize.py [--reps N]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import common  # noqa: E402,F401  (sets up the import path)
import halide as hl  # noqa: E402
import numpy as np  # noqa: E402
from common import check_close, print_table, samples_interleaved, spread  # noqa: E402

from frontends.halide import compile_pipeline  # noqa: E402

SIZES = [(64, 64), (1024, 1024)]


def pipeline(specialized: bool) -> tuple[hl.Func, hl.ImageParam, hl.Param]:
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.Float(32), 2, "a")
    p = hl.Param(hl.Float(32), "p")
    bx, out = hl.Func("bx"), hl.Func("out")
    bx[x, y] = (a[x, y] + a[x + 1, y] + a[x + 2, y]) / 3 + p
    out[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    bx.compute_at(out, y)
    if specialized:
        out.specialize(out.output_buffer().width() % 8 == 0).vectorize(x, 8)
        out.specialize(out.output_buffer().height() >= 512).parallel(y)
        bx.specialize(p > 0).vectorize(x, 8)
    return out, a, p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    out_s, a_s, p_s = pipeline(True)
    out_d, a_d, p_d = pipeline(False)
    ours_s, ours_d = compile_pipeline(out_s), compile_pipeline(out_d)
    pipe = hl.Pipeline(out_s)
    rows = []
    rng = np.random.default_rng(0)
    for w, h in SIZES:
        img = rng.random((h + 2, w + 2), dtype=np.float32)
        a_s.set(hl.Buffer(img))
        p_s.set(0.5)
        ref = np.array(pipe.realize([w, h]))
        o_h, o_s, o_d = (np.empty((h, w), np.float32) for _ in range(3))
        buf = hl.Buffer(o_h)
        pipe.realize(buf)
        ours_s.realize([w, h], out=o_s, a=img, p=0.5)
        ours_d.realize([w, h], out=o_d, a=img, p=0.5)
        for what, got in (("halide", o_h), ("ours", o_s), ("ours, no specialize", o_d)):
            check_close(f"{what} {w}x{h}", got, ref)
        sizes = [w, h]
        t = samples_interleaved({
            "halide": lambda b=buf: pipe.realize(b),
            "ours": lambda o=o_s, i=img, s=sizes: ours_s.realize(s, out=o, a=i, p=0.5),
            "plain": lambda o=o_d, i=img, s=sizes: ours_d.realize(s, out=o, a=i, p=0.5),
        }, reps=args.reps)
        best = {k: min(v) * 1e6 for k, v in t.items()}
        rows.append((f"{w}x{h}", f"{best['halide']:.1f}", f"{spread(t['halide']):.2f}",
                     f"{best['ours']:.1f}", f"{spread(t['ours']):.2f}",
                     f"{best['plain']:.1f}", f"{best['ours'] / best['halide']:.2f}"))
    print_table("specialize(): realize into a preallocated output, best of N (us)",
                ["size", "Halide", "spread", "ours", "spread", "ours, no specialize",
                 "ratio ours/Halide"], rows)


if __name__ == "__main__":
    main()
