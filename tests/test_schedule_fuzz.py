"""Randomized differential test of the scheduling language: the code we generate is correct
under every schedule we try.

For each program (blurxy, matmul init + update, heat-2D with a double buffer, a triangular
row sum) and each seed, a deterministic generator writes a random sequence of 1-5 scheduling
commands (interchange, split, tile, shift, skew, reverse, parallelize, vectorize, unroll,
after/before, compute_at (+ allocate_at), storage_fold, inline), tracking each computation's
current loop names so that most commands are well formed. Then:

- if the middle-end ACCEPTS the schedule, the kernel (called with NaN-filled outputs, so an
  element that is never written shows) must equal an independent numpy reference;
- if it REFUSES it, the error must be a ``me.ScheduleError`` that carries the violated
  dependence or the command it blames, or a ``me.DefinitionError`` (malformed command);
  any other exception is a bug.

The legality check is never switched off. Every failure message lists the program, the
seed and the commands as Python, so that it reproduces on its own. The accepted/refused
tally of each program is checked at the end (both paths must be exercised).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import middleend as me

NSEEDS = 30
MIN_ACCEPTED = 0.25  # of the schedules of each program
MIN_REFUSED = 0.10


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Ref:
    """A computation passed as an argument (after, before, compute_at, allocate_at)."""

    name: str


@dataclass(frozen=True)
class Cmd:
    comp: str
    method: str
    args: tuple[Any, ...]

    def __str__(self) -> str:
        def arg(a: Any) -> str:
            if isinstance(a, Ref):
                return a.name
            if a == me.ROOT:
                return "me.ROOT"
            return repr(a)

        return f"{self.comp}.{self.method}({', '.join(arg(a) for a in self.args)})"

    def apply(self, comps: dict[str, me.Computation]) -> None:
        args = [comps[a.name] if isinstance(a, Ref) else a for a in self.args]
        getattr(comps[self.comp], self.method)(*args)


# --------------------------------------------------------------------------- programs

Comps = dict[str, me.Computation]


def define_blur() -> tuple[me.Function, Comps]:
    with me.Function("fzblur") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j, c = me.Var("i", 0, N - 2), me.Var("j", 0, M - 2), me.Var("c", 0, 3)
        ii = me.Var("i", 0, N)  # by reads bx at i + 2: bx covers every row
        inp = me.Input("inp", [N, M, 3], me.float32)
        bx = me.Computation(
            "bx", [ii, j, c], (inp[ii, j, c] + inp[ii, j + 1, c] + inp[ii, j + 2, c]) / 3)
        by = me.Computation(
            "by", [i, j, c], (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
    return f, {"bx": bx, "by": by}


def check_blur(kernel: Any) -> None:
    n, m = 13, 11
    a = np.random.default_rng(1).uniform(-1, 1, (n, m, 3)).astype(np.float32)
    three = np.float32(3)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / three
    ref = (bx[:-2] + bx[1:-1] + bx[2:]) / three
    out = kernel(inp=a, by=np.full(ref.shape, np.nan, np.float32))
    assert list(out) == ["by"], list(out)
    np.testing.assert_allclose(out["by"], ref, rtol=1e-6, atol=1e-7)


def define_matmul() -> tuple[me.Function, Comps]:
    with me.Function("fzmm") as f:
        N, K, M = me.Param("N"), me.Param("K"), me.Param("M")
        i, j, k = me.Var("i", 0, N), me.Var("j", 0, M), me.Var("k", 0, K)
        A = me.Input("A", [N, K], me.float32)
        B = me.Input("B", [K, M], me.float32)
        c0 = me.Computation("C", [i, j], 0.0)
        c1 = me.Computation("c1", [i, j, k], dtype=me.float32)
        c1.set_expression(c1[i, j, k - 1] + A[i, k] * B[k, j])
        c1.store_in(c0, [i, j])
    return f, {"C": c0, "c1": c1}


def check_matmul(kernel: Any) -> None:
    rng = np.random.default_rng(2)
    # small integers: every partial sum is exact, whatever the order
    a = rng.integers(-4, 5, (9, 7)).astype(np.float32)
    b = rng.integers(-4, 5, (7, 11)).astype(np.float32)
    out = kernel(A=a, B=b, C=np.full((9, 11), np.nan, np.float32))
    assert list(out) == ["C"], list(out)
    np.testing.assert_array_equal(out["C"], a @ b)


HEAT_T = 5


def define_heat() -> tuple[me.Function, Comps]:
    with me.Function("fzheat") as f:
        T, N, M = me.Param("T"), me.Param("N"), me.Param("M")
        s, ii, jj = me.Var("s", 0, 2), me.Var("i", 0, N), me.Var("j", 0, M)
        t, i, j = me.Var("t", 1, T + 1), me.Var("i", 1, N - 1), me.Var("j", 1, M - 1)
        inp = me.Input("inp", [N, M], me.float32)
        buf = me.Buffer("buf", [2, N, M], me.float32, kind=me.OUTPUT)
        init = me.Computation("init", [s, ii, jj], inp[ii, jj])
        init.store_in(buf, [s, ii, jj])
        h = me.Computation("h", [t, i, j], dtype=me.float32)
        h.set_expression(0.2 * (h[t - 1, i, j] + h[t - 1, i - 1, j] + h[t - 1, i + 1, j]
                                + h[t - 1, i, j - 1] + h[t - 1, i, j + 1]))
        h.store_in(buf, [t % 2, i, j])
    return f, {"init": init, "h": h}


def _heat_ref(a: np.ndarray, steps: int) -> np.ndarray:
    u = a.copy()
    c = np.float32(0.2)
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = c * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2]
                             + u[1:-1, 2:])
        u = v
    return u


def check_heat(kernel: Any) -> None:
    a = np.random.default_rng(3).random((7, 9)).astype(np.float32)
    out = kernel(inp=a, T=HEAT_T, buf=np.full((2, 7, 9), np.nan, np.float32))
    assert list(out) == ["buf"], list(out)
    buf = out["buf"]
    np.testing.assert_allclose(buf[HEAT_T % 2], _heat_ref(a, HEAT_T), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(buf[(HEAT_T - 1) % 2], _heat_ref(a, HEAT_T - 1),
                               rtol=1e-6, atol=1e-7)


def define_tri() -> tuple[me.Function, Comps]:
    """L[i, j] = 2 a[i, j] + 1 on the lower triangle j <= i; s[i] = sum_{j <= i} L[i, j]."""
    with me.Function("fztri") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        j = me.Var("j", 0, i + 1)
        a = me.Input("a", [N, N], me.float32)
        L = me.Computation("L", [i, j], a[i, j] * 2.0 + 1.0)
        s = me.Computation("s", [i], me.cast(me.float32, 0))
        u = s.update([i, j], L[i, j], name="u")
    return f, {"L": L, "s": s, "u": u}


def check_tri(kernel: Any) -> None:
    n = 11
    a = np.random.default_rng(4).integers(-4, 5, (n, n)).astype(np.float32)
    ref = np.tril(a * np.float32(2) + np.float32(1)).sum(axis=1, dtype=np.float32)
    out = kernel(a=a, s=np.full(n, np.nan, np.float32))
    assert list(out) == ["s"], list(out)
    np.testing.assert_array_equal(out["s"], ref)


@dataclass(frozen=True)
class Program:
    name: str
    define: Callable[[], tuple[me.Function, Comps]]
    check: Callable[[Any], None]
    loops: dict[str, tuple[str, ...]]  # initial loops of each computation
    producers: tuple[tuple[str, str], ...]  # (producer, consumer) pairs for compute_at
    extra: tuple[str, ...] = ()  # program-specific command kinds


PROGRAMS = {
    "blur": Program("blur", define_blur, check_blur,
                    {"bx": ("i", "j", "c"), "by": ("i", "j", "c")}, (("bx", "by"),),
                    ("storage_fold", "inline", "fuse")),
    "matmul": Program("matmul", define_matmul, check_matmul,
                      {"C": ("i", "j"), "c1": ("i", "j", "k")}, ()),
    "heat": Program("heat", define_heat, check_heat,
                    {"init": ("s", "i", "j"), "h": ("t", "i", "j")}, ()),
    "tri": Program("tri", define_tri, check_tri,
                   {"L": ("i", "j"), "s": ("i",), "u": ("i", "j")}, (("L", "u"),)),
}


# --------------------------------------------------------------------------- generator


@dataclass
class _State:
    rng: random.Random
    prog: Program
    loops: dict[str, list[str]] = field(default_factory=dict)
    counter: int = 0
    cmds: list[Cmd] = field(default_factory=list)

    def fresh(self, base: str, tag: str) -> str:
        self.counter += 1
        return f"{base[0]}{tag}{self.counter}"

    def comp(self) -> str:
        return self.rng.choice(sorted(self.loops))

    def loop(self, comp: str) -> str:
        """Mostly a current loop of ``comp``; now and then a name it does not have."""
        if self.rng.random() < 0.04 or not self.loops[comp]:
            return self.rng.choice(["q", "i", "j", "k", "t", "c"])
        return self.rng.choice(self.loops[comp])

    def emit(self, comp: str, method: str, *args: Any) -> None:
        self.cmds.append(Cmd(comp, method, tuple(args)))


KINDS = {
    "interchange": 3, "split": 3, "tile": 3, "shift": 2, "skew": 2, "reverse": 2,
    "parallelize": 3, "vectorize": 2, "unroll": 2, "after": 2, "before": 1,
    "compute_at": 2, "storage_fold": 2, "inline": 1, "fuse": 1,
}


def _step(st: _State, kind: str) -> None:
    rng = st.rng
    c = st.comp()
    loops = st.loops[c]
    if kind == "interchange":
        if len(loops) < 2:
            st.emit(c, "interchange", st.loop(c), st.loop(c))
            return
        p, q = rng.sample(range(len(loops)), 2)
        st.emit(c, "interchange", loops[p], loops[q])
        loops[p], loops[q] = loops[q], loops[p]
    elif kind == "split":
        d = st.loop(c)
        o, n = st.fresh(d, "o"), st.fresh(d, "n")
        st.emit(c, "split", d, rng.randint(2, 5), o, n)
        if d in loops:
            p = loops.index(d)
            loops[p:p + 1] = [o, n]
    elif kind == "tile":
        if len(loops) < 2:
            st.emit(c, "tile", st.loop(c), st.loop(c), 2, 2, "ta", "tb", "tc", "td")
            return
        p = rng.randrange(len(loops) - 1)
        a, b = loops[p], loops[p + 1]
        names = [st.fresh(a, "o"), st.fresh(b, "o"), st.fresh(a, "n"), st.fresh(b, "n")]
        st.emit(c, "tile", a, b, rng.randint(2, 5), rng.randint(2, 5), *names)
        loops[p:p + 2] = names
    elif kind == "shift":
        st.emit(c, "shift", st.loop(c), rng.randint(-2, 2))
    elif kind == "skew":
        if len(loops) < 2:
            st.emit(c, "skew", st.loop(c), st.loop(c), 1)
            return
        p, q = sorted(rng.sample(range(len(loops)), 2))
        if rng.random() < 0.2:
            p, q = q, p
        a, b = loops[p], loops[q]
        factor = rng.randint(-1, 2)
        if rng.random() < 0.3:
            st.emit(c, "skew", a, b, factor)  # keeps the names
        else:
            na, nb = st.fresh(a, "s"), st.fresh(b, "s")
            st.emit(c, "skew", a, b, factor, na, nb)
            loops[p], loops[q] = na, nb
    elif kind == "reverse":
        st.emit(c, "reverse", st.loop(c))
    elif kind == "parallelize":
        st.emit(c, "parallelize", st.loop(c))
    elif kind == "vectorize":
        d = st.loop(c)
        st.emit(c, "vectorize", d, rng.randint(2, 4))
        if d in loops:
            p = loops.index(d)
            loops[p:p + 1] = [f"{d}_vo", f"{d}_vi"]
    elif kind == "unroll":
        d = st.loop(c)
        if rng.random() < 0.15:
            st.emit(c, "unroll", d)  # the whole loop: needs a constant extent
            return
        st.emit(c, "unroll", d, rng.randint(2, 3))
        if d in loops:
            p = loops.index(d)
            loops[p:p + 1] = [f"{d}_uo", f"{d}_ui"]
    elif kind in ("after", "before"):
        others = [x for x in sorted(st.loops) if x != c]
        o = rng.choice(others)
        # c.after(o, level): level is one of c's loops; c.before(o, level) is
        # o.after(c, level): level is one of o's loops
        owner = c if kind == "after" else o
        level = me.ROOT if rng.random() < 0.25 else st.loop(owner)
        st.emit(c, kind, Ref(o), level)
    elif kind == "compute_at":
        if st.prog.producers and rng.random() < 0.85:
            p, cons = rng.choice(st.prog.producers)
        else:
            p, cons = rng.sample(sorted(st.loops), 2)
        level = st.loop(cons)
        st.emit(p, "compute_at", Ref(cons), level)
        if rng.random() < 0.5:
            st.emit(p, "allocate_at", Ref(cons), level)
    elif kind == "storage_fold":
        st.emit("bx", "storage_fold", rng.randint(0, 2), rng.randint(2, 4))
    elif kind == "inline":
        st.emit("bx", "inline")
    elif kind == "fuse":
        # the fusion that makes storage_fold legal, with a random shift and level
        st.emit("by", "shift", st.loop("by"), rng.choice([1, 2, 2, 2]))
        st.emit("by", "after", Ref("bx"), st.loop("bx"))
    else:  # pragma: no cover
        raise AssertionError(kind)


def generate(prog: Program, seed: int) -> list[Cmd]:
    st = _State(random.Random(f"{prog.name}/{seed}"), prog)
    st.loops = {c: list(d) for c, d in prog.loops.items()}
    kinds = [k for k in KINDS
             if k not in ("storage_fold", "inline", "fuse") or k in prog.extra]
    weights = [KINDS[k] for k in kinds]
    for _ in range(st.rng.randint(1, 5)):
        _step(st, st.rng.choices(kinds, weights)[0])
    return st.cmds


def listing(prog: Program, seed: int, cmds: list[Cmd]) -> str:
    lines = [f"program {prog.name!r} (define_{prog.name} in tests/test_schedule_fuzz.py), "
             f"seed {seed}, commands:"]
    lines += [f"    {c}" for c in cmds]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the check

_TALLY: dict[str, dict[int, str]] = {name: {} for name in PROGRAMS}


def run_case(prog: Program, seed: int) -> str:
    """'accepted' (and the result is right) or 'refused' (with a proper error); fails the
    test otherwise."""
    cmds = generate(prog, seed)
    where = listing(prog, seed, cmds)
    f, comps = prog.define()
    try:
        for c in cmds:
            c.apply(comps)
        kernel = f.compile(target="cpu")
    except me.ScheduleError as e:
        assert e.dependence or e.command, (
            f"ScheduleError with neither a dependence nor a command: {e}\n{where}")
        return "refused"
    except me.DefinitionError:
        return "refused"
    except Exception as e:  # a crash of the middle-end is a bug
        pytest.fail(f"unexpected {type(e).__name__}: {e}\n{where}")
    try:
        prog.check(kernel)
    except AssertionError as e:
        raise AssertionError(f"accepted schedule gives a WRONG result\n{where}\n{e}\n"
                             f"--- generated C ---\n{kernel.source}") from None
    except Exception as e:
        pytest.fail(f"accepted schedule: the kernel raised {type(e).__name__}: {e}\n{where}")
    return "accepted"


# Seeds whose schedule exposes a known compiler bug: (program, seed) -> reason.
KNOWN_BUGS: dict[tuple[str, int], str] = {}


def _params() -> list[Any]:
    out = []
    for name in PROGRAMS:
        for seed in range(NSEEDS):
            reason = KNOWN_BUGS.get((name, seed))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, seed, marks=marks, id=f"{name}-{seed}"))
    return out


@pytest.mark.parametrize("program,seed", _params())
def test_random_schedule(program: str, seed: int) -> None:
    prog = PROGRAMS[program]
    _TALLY[program][seed] = "crashed"
    _TALLY[program][seed] = run_case(prog, seed)


def test_generator_is_deterministic() -> None:
    for prog in PROGRAMS.values():
        for seed in (0, 7):
            assert generate(prog, seed) == generate(prog, seed)
            assert 1 <= len(generate(prog, seed)) <= 6  # compute_at may add allocate_at


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_both_paths_are_exercised(program: str) -> None:
    """Runs after the seeds (file order): both accepted and refused schedules occur."""
    tally = _TALLY[program]
    if len(tally) < NSEEDS:
        pytest.skip(f"only {len(tally)} of the {NSEEDS} seeds of {program!r} ran")
    acc = sum(v == "accepted" for v in tally.values())
    ref = sum(v == "refused" for v in tally.values())
    msg = f"{program}: {acc} accepted, {ref} refused of {NSEEDS}"
    assert acc >= MIN_ACCEPTED * NSEEDS, msg
    assert ref >= MIN_REFUSED * NSEEDS, msg
