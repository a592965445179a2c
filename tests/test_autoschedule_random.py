"""Auto schedules of random programs: legal, and numpy's results to the last bit.

The schedule fuzz (tests/test_schedule_fuzz.py) draws random *schedules* for a fixed set of
programs; here a seeded generator draws random *programs* and the auto-scheduler chooses
their schedules, for a small and a large size estimate (different orders, tiles, fusions,
vector and parallel loops). Each program is a DAG of 2-6 stages over one size ``N`` (the
input ``N x N``), every stage a combination (sums with small integer weights, or a
``maximum``) of reads of earlier stages or of the input:

- stencil taps ``P[i + di, j + dj]`` (``di, dj`` in 0..2), transposed reads ``P[j, i]``
  and upsampled reads ``P[i // 2, j // 2]`` of stages of the same resolution;
- broadcasts of a row or a column reduction ``R[i + di]`` / ``C[j + dj]`` (an initializer
  and an update, the column sum's row loop outermost);
- a 2 x 2 downsampling ``P[2 i + ti, 2 j + tj]``, which starts a half resolution whose
  extent is ``(B - a) // 2``.

Each stage's extent is the largest its reads allow (``B - a`` along each axis, ``B`` its
resolution's), so every read is in bounds. The sinks are outputs, and some intermediate
stages too. The reference is an independent numpy interpreter of the same description;
inputs are small integers and every weight an integer, so every value is exact (float32
when the largest stays below 2^23, float64 otherwise) and any order of the sums gives the
same bits: the comparison is exact. A failure prints the program and the chosen
commands, so that it reproduces on its own."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import middleend as me

NSEEDS = 24
SIZES = (29, 44)  # the concrete sizes each schedule runs on: odd and even tails
MIN_EXTENT = 3  # at the smallest size: no stage is empty
EXACT32 = 2.0 ** 23

Base = Callable[[Any], Any]  # a resolution's extent, of N: an int or a Param


@dataclass(frozen=True)
class Term:
    """One read of a consumer's expression: ``kind`` in at, T, up, down, row, col."""

    kind: str
    src: str
    di: int = 0
    dj: int = 0
    weight: int = 1


@dataclass
class Stage:
    name: str
    level: int
    ai: int  # extent along i: base - ai (a 1-D stage: its only axis)
    aj: int
    dims: int = 2
    terms: list[Term] = field(default_factory=list)
    combine: str = "sum"  # or "max"
    reduce: str = ""  # 1-D stages: "row" (over j of a row) or "col" (over i of a column)

    def describe(self) -> str:
        if self.dims == 1:
            return f"{self.name}[{'i' if self.reduce == 'row' else 'j'}] = " \
                   f"{self.reduce}-sum of {self.terms[0].src}"
        reads = ", ".join(f"{t.weight}*{t.kind}({t.src},{t.di},{t.dj})" for t in self.terms)
        return f"{self.name} (level {self.level}, -{self.ai}, -{self.aj}) = " \
               f"{self.combine}({reads})"


@dataclass
class Program:
    seed: int
    bases: list[tuple[int, int]]  # per level: (parent level, offset); level 0: N
    stages: list[Stage]
    outputs: list[str]
    dtype: str = "float32"

    def base(self, level: int) -> Base:
        if level == 0:
            return lambda n: n
        parent, off = self.bases[level]
        up = self.base(parent)
        return lambda n: (up(n) - off) // 2

    def extent(self, s: Stage, n: int) -> tuple[int, ...]:
        b = self.base(s.level)(n)
        return (b - s.ai,) if s.dims == 1 else (b - s.ai, b - s.aj)

    def describe(self) -> str:
        return "\n".join([f"seed {self.seed}, {self.dtype}, outputs {self.outputs}"]
                         + [s.describe() for s in self.stages])


# ------------------------------------------------------------------------ the generator


def generate(seed: int) -> Program:
    """A random program: every stage's reads in bounds, every stage either read or an
    output, no stage empty at the smallest test size."""
    rng = random.Random(seed)
    prog = Program(seed, [(0, 0)], [Stage("inp", 0, 0, 0)], [])
    n_min = min(SIZES)
    for k in range(rng.randint(2, 6)):
        for _ in range(20):  # draw until the stage fits
            s, base = _draw(rng, prog, f"s{k}")
            if base is not None:
                prog.bases.append(base)
            if min(prog.extent(s, n_min)) >= MIN_EXTENT:
                prog.stages.append(s)
                break
            if base is not None:
                prog.bases.pop()
    read = {t.src for s in prog.stages for t in s.terms}
    comps = prog.stages[1:]
    prog.outputs = [s.name for s in comps if s.name not in read or rng.random() < 0.2]
    prog.dtype = "float32" if _largest(prog) < EXACT32 else "float64"
    return prog


def _draw(rng: random.Random, prog: Program, name: str
          ) -> tuple[Stage, tuple[int, int] | None]:
    """A stage reading earlier ones, and the new resolution it starts (a downsampling)."""
    two = [s for s in prog.stages if s.dims == 2]
    one = [s for s in prog.stages if s.dims == 1]
    kind = rng.choices(["stencil", "reduce", "down"], [6, 2, 1])[0]
    if kind == "reduce":
        p = rng.choice(two)
        how = rng.choice(["row", "col"])
        return Stage(name, p.level, p.ai if how == "row" else p.aj, 0, dims=1,
                     terms=[Term("at", p.name)], reduce=how), None
    if kind == "down":
        p = rng.choice(two)
        terms = [Term("down", p.name, ti, tj, rng.choice([1, 1, 2]))
                 for ti in (0, 1) for tj in (0, 1)]
        return Stage(name, len(prog.bases), 0, 0, terms=terms,
                     combine=rng.choice(["sum", "sum", "max"])), (p.level, max(p.ai, p.aj))
    level = rng.choice(sorted({s.level for s in two}))
    here2 = [s for s in two if s.level == level]
    here1 = [s for s in one if s.level == level]
    terms = []
    for _ in range(rng.randint(1, 3)):
        w = rng.choice([1, 1, 2, -1, 3])
        r = rng.random()
        if here1 and r < 0.25:
            q = rng.choice(here1)
            terms.append(Term(rng.choice(["row", "col"]), q.name, rng.randint(0, 2),
                              rng.randint(0, 2), w))
            continue
        p = rng.choice(here2)
        t = rng.choices(["at", "T", "up"], [6, 1, 1])[0]
        terms.append(Term(t, p.name, rng.randint(0, 2) if t == "at" else 0,
                          rng.randint(0, 2) if t == "at" else 0, w))
    by = {s.name: s for s in prog.stages}
    ai = aj = 0
    for t in terms:
        p = by[t.src]
        need = {"at": (p.ai + t.di, p.aj + t.dj), "T": (p.aj, p.ai), "up": (p.ai, p.aj),
                "row": (p.ai + t.di, 0), "col": (0, p.ai + t.dj)}[t.kind]
        ai, aj = max(ai, need[0]), max(aj, need[1])
    return Stage(name, level, ai, aj, terms=terms,
                 combine="max" if len(terms) > 1 and rng.random() < 0.2 else "sum"), None


# ---------------------------------------------------------------------- numpy reference


def evaluate(prog: Program, inp: np.ndarray) -> dict[str, np.ndarray]:
    """Every stage's values, in float64 (exact: small integers)."""
    n = inp.shape[0]
    vals: dict[str, np.ndarray] = {"inp": inp.astype(np.float64)}
    for s in prog.stages[1:]:
        ext = prog.extent(s, n)
        if s.dims == 1:
            p = vals[s.terms[0].src]
            vals[s.name] = p.sum(axis=1 if s.reduce == "row" else 0)[:ext[0]]
            continue
        ei, ej = ext
        parts = []
        for t in s.terms:
            v = _np_read(t, vals[t.src], ei, ej)
            assert v.shape == (ei, ej), (s.describe(), t, v.shape)
            parts.append(t.weight * v)
        vals[s.name] = np.maximum.reduce(parts) if s.combine == "max" else sum(parts)
    return vals


def _np_read(t: Term, p: np.ndarray, ei: int, ej: int) -> np.ndarray:
    """The ``ei x ej`` values that ``t`` reads of ``p``."""
    if t.kind == "at":
        return p[t.di:t.di + ei, t.dj:t.dj + ej]
    if t.kind == "T":
        return p.T[:ei, :ej]
    if t.kind == "up":
        return p[np.arange(ei) // 2][:, np.arange(ej) // 2]
    if t.kind == "down":
        return p[t.di:t.di + 2 * ei:2, t.dj:t.dj + 2 * ej:2]
    if t.kind == "row":
        return np.broadcast_to(p[t.di:t.di + ei, None], (ei, ej))
    return np.broadcast_to(p[None, t.dj:t.dj + ej], (ei, ej))


def _inputs(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed * 100 + n).integers(-2, 3, (n, n)).astype(np.float64)


def _largest(prog: Program) -> float:
    return max(float(np.abs(v).max(initial=0.0)) for n in SIZES
               for v in evaluate(prog, _inputs(n, prog.seed)).values())


# ------------------------------------------------------------------------ the program


def build(prog: Program, tag: str) -> tuple[me.Function, list[me.Computation]]:
    """The program as Layer I computations (no schedule)."""
    dt = me.float32 if prog.dtype == "float32" else me.float64
    with me.Function(f"rnd{prog.seed}_{tag}") as f:
        N = me.Param("N")
        comps: dict[str, Any] = {"inp": me.Input("inp", [N, N], dt)}
        by = {s.name: s for s in prog.stages}
        for s in prog.stages[1:]:
            b = prog.base(s.level)(N)
            if s.dims == 1:
                p = by[s.terms[0].src]
                pb = prog.base(p.level)(N)
                i, j = me.Var("i", 0, pb - p.ai), me.Var("j", 0, pb - p.aj)
                init = me.Computation(s.name, [i if s.reduce == "row" else j],
                                      me.cast(dt, 0), dtype=dt)
                init.update([i, j], comps[p.name][i, j], name=f"{s.name}_u")
                comps[s.name] = init
                continue
            i, j = me.Var("i", 0, b - s.ai), me.Var("j", 0, b - s.aj)
            parts = []
            for t in s.terms:
                v = _me_read(t, comps[t.src], i, j)
                parts.append(v * float(t.weight) if t.weight != 1 else v)
            e = parts[0]
            for v in parts[1:]:
                e = me.max(e, v) if s.combine == "max" else e + v
            comps[s.name] = me.Computation(s.name, [i, j], e, dtype=dt)
    return f, [comps[o] for o in prog.outputs]


def _me_read(t: Term, src: Any, i: me.Var, j: me.Var) -> Any:
    """The read ``t`` of ``src`` at ``(i, j)``, as a Layer I access."""
    if t.kind == "at":
        return src[i + t.di, j + t.dj]
    if t.kind == "T":
        return src[j, i]
    if t.kind == "up":
        return src[i // 2, j // 2]
    if t.kind == "down":
        return src[2 * i + t.di, 2 * j + t.dj]
    # a reduction's final value: its buffer's content (``src[i]`` is the initializer's)
    if t.kind == "row":
        return src.memory[i + t.di]
    return src.memory[j + t.dj]


def _commands(fn: me.Function) -> str:
    return "\n".join(c.describe() for c in fn.commands.items)


@pytest.mark.parametrize("estimate", [16, 600], ids=["est16", "est600"])
@pytest.mark.parametrize("seed", range(NSEEDS))
def test_random_program_auto_scheduled_matches_numpy(seed: int, estimate: int) -> None:
    """The auto-scheduler's choice for the random program (legal by construction: the
    compile checks it again), run on odd and even sizes, equals the numpy interpreter."""
    prog = generate(seed)
    fn, outs = build(prog, f"e{estimate}")
    fn.auto_schedule(outputs=outs, estimates={"N": estimate})
    kernel = fn.compile(outputs=outs)
    for n in SIZES:
        a = _inputs(n, seed)
        want = evaluate(prog, a)
        got = kernel(inp=a.astype(prog.dtype), N=n)
        for o in prog.outputs:
            ok = got[o].shape == want[o].shape and np.array_equal(got[o], want[o])
            assert ok, (f"{o} at N={n} differs from numpy\n{prog.describe()}\n"
                        f"commands (estimate {estimate}):\n{_commands(fn)}")


def test_the_generator_covers_every_kind_of_read() -> None:
    """The seeds draw every kind of read, both reductions, both combinations, both
    dtypes, more than one resolution and intermediate outputs: the test above is not a
    set of copies of one easy program."""
    progs = [generate(s) for s in range(NSEEDS)]
    kinds = {t.kind for p in progs for s in p.stages for t in s.terms}
    assert kinds >= {"at", "T", "up", "down", "row", "col"}, kinds
    assert {s.reduce for p in progs for s in p.stages if s.dims == 1} == {"row", "col"}
    assert {s.combine for p in progs for s in p.stages[1:]} == {"sum", "max"}
    read = [{t.src for s in p.stages for t in s.terms} for p in progs]
    assert any(set(p.outputs) & r for p, r in zip(progs, read, strict=True))
    assert max(len(p.stages) for p in progs) >= 6
