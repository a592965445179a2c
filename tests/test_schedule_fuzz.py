"""Randomized differential test of the scheduling language: the code we generate is correct
under every schedule we try.

For each program (blurxy, matmul init + update, heat-2D with a double buffer, a triangular
row sum, doitgen memory-based and in place) and each seed, a deterministic generator writes
a random sequence of 1-5 scheduling commands (interchange, split, tile, shift, skew,
reverse, parallelize, vectorize, unroll, after/before, compute_at (+ allocate_at),
storage_fold, inline), tracking each computation's current loop names so that most
commands are well formed. Then:

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
from middleend.api import examples

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
    for n, m in ((13, 11), (8, 7)):
        a = np.random.default_rng(n).uniform(-1, 1, (n, m, 3)).astype(np.float32)
        three = np.float32(3)
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / three
        ref = (bx[:-2] + bx[1:-1] + bx[2:]) / three
        out = kernel(inp=a, by=np.full(ref.shape, np.nan, np.float32))
        assert list(out) == ["by"], list(out)
        np.testing.assert_allclose(out["by"], ref, rtol=1e-6, atol=1e-7,
                                   err_msg=f"blur N={n} M={m}")


def define_matmul() -> tuple[me.Function, Comps]:
    mm = examples.matmul("fzmm")
    return mm.fn, {"C": mm.init, "c1": mm.update}


def check_matmul(kernel: Any) -> None:
    rng = np.random.default_rng(2)
    for n, k, m in ((9, 7, 11), (6, 5, 4)):
        # small integers: every partial sum is exact, whatever the order
        a = rng.integers(-4, 5, (n, k)).astype(np.float32)
        b = rng.integers(-4, 5, (k, m)).astype(np.float32)
        out = kernel(A=a, B=b, C=np.full((n, m), np.nan, np.float32))
        assert list(out) == ["C"], list(out)
        np.testing.assert_array_equal(out["C"], a @ b, err_msg=f"matmul {n}x{k}x{m}")


def define_heat() -> tuple[me.Function, Comps]:
    b = examples.heat2d("fzheat")
    return b.fn, {"init": b.init, "h": b.h}


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
    for steps, n, m in ((5, 7, 9), (4, 6, 8)):
        a = np.random.default_rng(n).random((n, m)).astype(np.float32)
        out = kernel(inp=a, T=steps, buf=np.full((2, n, m), np.nan, np.float32))
        assert list(out) == ["buf"], list(out)
        buf = out["buf"]
        # the last step, and the step before it in the other half of the double buffer
        for s in (steps, steps - 1):
            np.testing.assert_allclose(buf[s % 2], _heat_ref(a, s), rtol=1e-6, atol=1e-7,
                                       err_msg=f"heat T={steps} N={n} M={m}: step {s}")


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
    for n in (11, 6):
        # small integers: the sums are exact
        a = np.random.default_rng(n).integers(-4, 5, (n, n)).astype(np.float32)
        ref = np.tril(a * np.float32(2) + np.float32(1)).sum(axis=1, dtype=np.float32)
        out = kernel(a=a, s=np.full(n, np.nan, np.float32))
        assert list(out) == ["s"], list(out)
        np.testing.assert_array_equal(out["s"], ref, err_msg=f"tri N={n}")


DG = (3, 4, 5)  # doitgen's r, q, p (s over p's range)


def define_dg() -> tuple[me.Function, Comps]:
    """doitgen as Julia runs it, in place, memory-based (``order`` gives the nesting): for
    r, q: sum[p] = 0; sum[p] += A[r, q, s] C4[s, p]; A[r, q, p] = sum[p]; ``sum`` expanded
    along r and q (one copy per iteration, the last copied back), so that the three run
    in loop nests of their own: the random schedules then go through the derived
    program (middleend/passes/expansion.py)."""
    r_, q_, p_ = DG
    with me.Function("fzdg") as f:
        a = me.Buffer("A", (r_, q_, p_), me.float64, kind="inout")
        c4 = me.Input("C4", (p_, p_), me.float64)
        sm = me.Buffer("sum", (p_,), me.float64, kind="inout")
        r, q, p, s = (me.Var(n, 0, e) for n, e in zip("rqps", (r_, q_, p_, p_), strict=True))
        z = me.Computation("Z", [r, q, p], 0.0, order="{ Z[r, q, p] -> [r, q, 0, p, 0] }")
        u = me.Computation("U", [r, q, p, s], sm[p] + a[r, q, s] * c4[s, p],
                           order="{ U[r, q, p, s] -> [r, q, 1, p, s] }")
        w = me.Computation("W", [r, q, p], sm[p], order="{ W[r, q, p] -> [r, q, 2, p, 0] }")
        z.store_in(sm, [p])
        u.store_in(sm, [p])
        w.store_in(a, [r, q, p])
        u.after(z, me.ROOT)
        w.after(u, me.ROOT)
        sm.expand("r", "q")
    return f, {"Z": z, "U": u, "W": w}


def check_dg(kernel: Any) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, DG).astype(np.float64)  # small integers: exact sums
    c4 = rng.integers(-4, 5, (DG[2], DG[2])).astype(np.float64)
    s0 = np.full(DG[2], np.nan)
    want = np.einsum("rqs,sp->rqp", a, c4)
    kernel(A=a, C4=c4, sum=s0)
    np.testing.assert_array_equal(a, want, err_msg="doitgen: A")
    np.testing.assert_array_equal(s0, want[-1, -1], err_msg="doitgen: sum (the last row)")


@dataclass(frozen=True)
class Program:
    name: str
    define: Callable[[], tuple[me.Function, Comps]]
    check: Callable[[Any], None]
    loops: dict[str, tuple[str, ...]]  # initial loops of each computation
    producers: tuple[tuple[str, str], ...]  # (producer, consumer) pairs for compute_at
    extra: tuple[str, ...] = ()  # program-specific command kinds
    const: tuple[str, ...] = ()  # loops with a constant trip count


PROGRAMS = {
    "blur": Program("blur", define_blur, check_blur,
                    {"bx": ("i", "j", "c"), "by": ("i", "j", "c")}, (("bx", "by"),),
                    ("storage_fold", "inline", "fuse"), ("c",)),
    "matmul": Program("matmul", define_matmul, check_matmul,
                      {"C": ("i", "j"), "c1": ("i", "j", "k")}, ()),
    "heat": Program("heat", define_heat, check_heat,
                    {"init": ("s", "i", "j"), "h": ("t", "i", "j")}, (), (), ("s",)),
    "tri": Program("tri", define_tri, check_tri,
                   {"L": ("i", "j"), "s": ("i",), "u": ("i", "j")}, (("L", "u"),)),
    "doitgen": Program("doitgen", define_dg, check_dg,
                       {"Z": ("r", "q", "p"), "U": ("r", "q", "p", "s"),
                        "W": ("r", "q", "p")}, (), (), ("r", "q", "p", "s")),
}


# --------------------------------------------------------------------------- generator


@dataclass
class _State:
    rng: random.Random
    prog: Program
    loops: dict[str, list[str]] = field(default_factory=dict)
    const: set[str] = field(default_factory=set)  # names of constant-extent loops
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
_EXTRA = ("storage_fold", "inline", "fuse")  # kinds for some programs only


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
        st.const.add(n)
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
        st.const.update(names[2:])
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
            if a in st.const:
                st.const.add(na)
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
        st.const.add(f"{d}_vi")
    elif kind == "unroll":
        d = st.loop(c)
        # the whole loop: needs a constant trip count (mostly one that has one)
        if rng.random() < (0.4 if d in st.const else 0.03):
            st.emit(c, "unroll", d)
            return
        st.emit(c, "unroll", d, rng.randint(2, 3))
        if d in loops:
            p = loops.index(d)
            loops[p:p + 1] = [f"{d}_uo", f"{d}_ui"]
        st.const.add(f"{d}_ui")
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
            # mostly at the same level; now and then at another loop of the consumer
            alloc = st.loop(cons) if rng.random() < 0.15 else level
            st.emit(p, "allocate_at", Ref(cons), alloc)
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
    st.const = set(prog.const)
    kinds = [k for k in KINDS if k not in _EXTRA or k in prog.extra]
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


def run_commands(prog: Program, cmds: list[Cmd], where: str) -> str:
    """Apply ``cmds`` to a fresh ``prog`` and compile it with the legality check on.
    Returns 'accepted' (the result was right) or 'refused' (with a proper error); fails
    the test on a wrong result or an unexpected exception."""
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


def run_case(prog: Program, seed: int) -> str:
    cmds = generate(prog, seed)
    return run_commands(prog, cmds, listing(prog, seed, cmds))


@dataclass(frozen=True)
class Bug:
    """A compiler bug the fuzzer found: how its failure reads, and what it is."""

    signature: str  # a substring of the failure message
    reason: str


class KnownBug(Exception):
    """Raised instead of the failure of a known bug, so that an xfail does not hide
    another failure (xfail(raises=KnownBug))."""


def expect_bug(bug: Bug | None, run: Callable[[], str]) -> str:
    if bug is None:
        return run()
    try:
        out = run()
    except (AssertionError, pytest.fail.Exception) as e:
        if bug.signature in str(e):
            raise KnownBug(f"{bug.reason}\n{e}") from None
        raise
    return out


# Compiler bugs the fuzzer found and that are still open: each seed (and its minimal case
# in MINIMAL) is an xfail(strict), e.g. Bug("unexpected ValueError", "what it is"), until
# it is fixed; then move it to REGRESSION_SEEDS. None is open now.
KNOWN_BUGS: dict[tuple[str, int], Bug] = {}


def _xfail(bug: Bug) -> Any:
    return pytest.mark.xfail(strict=True, raises=KnownBug, reason=bug.reason)


# Seeds that exposed a bug since fixed: they must now pass. Seeds >= NSEEDS come from
# longer runs of the same generator.
REGRESSION_SEEDS = {
    # BuildError: parallel loop j inside vector loop i (gcc refuses 'omp parallel for'
    # inside 'omp simd')
    ("blur", 23), ("heat", 228),
    # ValueError in astgen: a vector loop renamed or split kept its width under its old name
    ("blur", 28), ("tri", 384),
    # WRONG RESULT: allocate_at(by, 'i_ui_vi') inside a vector loop with a partial last
    # tile; the tail was generated apart, with an allocation of its own that nothing wrote
    ("blur", 194),
    # KeyError in layer1._inline: inline() twice
    ("blur", 347),
    # ScheduleError without .command: full unroll of a loop of non-constant trip count
    ("matmul", 270),
    # bare MiddleEndError ('ISL failed: call to isl_union_map_coalesce failed') instead of
    # a ScheduleError: coalescing the dependence for the error message failed in ISL
    ("blur", 1437),
}


def _params() -> list[Any]:
    out = []
    for name in PROGRAMS:
        extra = sorted({s for p, s in [*KNOWN_BUGS, *REGRESSION_SEEDS]
                        if p == name and s >= NSEEDS})
        for seed in [*range(NSEEDS), *extra]:
            bug = KNOWN_BUGS.get((name, seed))
            marks = [_xfail(bug)] if bug else []
            out.append(pytest.param(name, seed, marks=marks, id=f"{name}-{seed}"))
    return out


_TALLY: dict[str, dict[int, str]] = {name: {} for name in PROGRAMS}


@pytest.mark.parametrize("program,seed", _params())
def test_random_schedule(program: str, seed: int) -> None:
    bug = KNOWN_BUGS.get((program, seed))
    _TALLY[program][seed] = "failed"
    _TALLY[program][seed] = expect_bug(bug, lambda: run_case(PROGRAMS[program], seed))


def _c(comp: str, method: str, *args: Any) -> Cmd:
    return Cmd(comp, method, args)


def _m(program: str, cmds: list[Cmd], bug: Bug | None, name: str) -> Any:
    return pytest.param(program, cmds, bug, marks=[_xfail(bug)] if bug else [], id=name)


# Minimal reproductions of the bugs the fuzzer found: an open one is an xfail(strict)
# (its Bug), a fixed one a plain regression test (None).
MINIMAL = [
    # Was a bare MiddleEndError: bx after by is illegal (by reads bx); the check found it,
    # but coalescing the dependence for the message failed inside ISL
    _m("blur", [_c("bx", "after", Ref("by"), "j"), _c("bx", "storage_fold", 0, 4),
                _c("bx", "split", "i", 2, "io1", "in2")],
       None, "isl_coalesce_failure_in_error_message"),
    # Was a WRONG RESULT: by row N - 3 (the partial vector tile, N odd) read an allocation
    # of bx that nothing wrote: the tail of the i_vi loop was generated after the i_vo
    # loop, in an allocation of its own, while bx for that i_vo iteration was computed in
    # the loop's.
    _m("blur", [_c("by", "vectorize", "i", 2), _c("bx", "compute_at", Ref("by"), "i_vo"),
                _c("bx", "allocate_at", Ref("by"), "i_vo")],
       None, "vector_tail_allocate_at"),
    # the same without allocate_at (bx is then a whole-function buffer) was always right
    _m("blur", [_c("by", "vectorize", "i", 2), _c("bx", "compute_at", Ref("by"), "i_vo")],
       None, "vector_tail_compute_at"),
    # Was a crash (ValueError in astgen._vector_width): the width of a vector loop stayed
    # under its old name when the loop was renamed (skew) or split again (vectorize)
    _m("blur", [_c("by", "vectorize", "j", 2), _c("by", "skew", "i", "j_vi", 1, "i2", "v")],
       None, "skew_renames_vector_loop"),
    _m("blur", [_c("by", "vectorize", "j", 4), _c("by", "vectorize", "j_vi", 2)],
       None, "vectorize_vector_loop"),
    # Was a BuildError: '#pragma omp parallel for' inside an 'omp simd' loop
    _m("blur", [_c("by", "vectorize", "i", 2), _c("by", "parallelize", "j")],
       None, "parallel_inside_vector"),
    # Was a crash (KeyError in layer1._inline)
    _m("blur", [_c("bx", "inline"), _c("bx", "inline")], None, "inline_twice"),
    # Were refusals with neither .command nor .dependence
    _m("blur", [_c("by", "unroll", "i")], None, "full_unroll_parametric_loop"),
    _m("blur", [_c("bx", "allocate_at", Ref("by"), "zz")], None, "allocate_at_unknown_loop"),
]


@pytest.mark.parametrize("program,cmds,bug", MINIMAL)
def test_minimal_reproduction(program: str, cmds: list[Cmd], bug: Bug | None) -> None:
    where = "\n".join([f"program {program!r}, commands:", *(f"    {c}" for c in cmds)])
    expect_bug(bug, lambda: run_commands(PROGRAMS[program], cmds, where))


def test_generator_is_deterministic() -> None:
    for prog in PROGRAMS.values():
        for seed in (0, 7):
            assert generate(prog, seed) == generate(prog, seed)
            # 1-5 steps; compute_at may add allocate_at, fuse is two commands
            assert 1 <= len(generate(prog, seed)) <= 10


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_both_paths_are_exercised(program: str) -> None:
    """Runs after the seeds (file order): over the NSEEDS seeds of each program, enough
    schedules are accepted (and checked against numpy) and enough are refused."""
    tally = _TALLY[program]
    missing = set(range(NSEEDS)) - set(tally)
    if missing:
        pytest.skip(f"{len(missing)} of the {NSEEDS} seeds of {program!r} did not run")
    outcomes = [tally[s] for s in range(NSEEDS)]
    acc, ref = outcomes.count("accepted"), outcomes.count("refused")
    msg = f"{program}: {acc} accepted, {ref} refused of {NSEEDS} schedules"
    print(msg)
    assert acc >= MIN_ACCEPTED * NSEEDS, msg
    assert ref >= MIN_REFUSED * NSEEDS, msg
