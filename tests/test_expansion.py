"""Array expansion (``buffer.expand(*loops)``, passes/expansion.py): one copy of a buffer
per iteration of some loops, checked against the exact dataflow of the program as written,
under several schedules; the refusals; the wire; the auto-scheduler's use of it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import middleend as me
from middleend.ir import commands as cmd
from middleend.ir.errors import DefinitionError, ScheduleError
from middleend.wire.decode import decode_function
from middleend.wire.encode import encode_function

R, Q, P = 4, 5, 6  # doitgen's r, q, p (s runs over p's range too)


def _doitgen(name: str = "dg", reset: str = "", apart: bool = False
             ) -> tuple[me.Function, dict[str, object]]:
    """doitgen written as Julia runs it, in place: for r, q: sum[p] = 0; sum[p] += A[r,
    q, s] C4[s, p]; A[r, q, p] = sum[p] (``order`` gives that nesting). ``reset``: a
    predicate on Z (``"first"``: sum is reset only at r = 0, so sums run on across r).
    The loop nests are fused at q as in the source, or (``apart``) each its own."""
    with me.Function(name) as f:
        a = me.Buffer("A", (R, Q, P), me.float64, kind="inout")
        c4 = me.Input("C4", (P, P), me.float64)
        sm = me.Buffer("sum", (P,), me.float64, kind="inout")
        r, q, p, s = me.Var("r", 0, R), me.Var("q", 0, Q), me.Var("p", 0, P), me.Var("s", 0, P)
        z = me.Computation("Z", [r, q, p], 0.0, order="{ Z[r, q, p] -> [r, q, 0, p, 0] }",
                           predicate=(r == 0) if reset == "first" else None)
        u = me.Computation("U", [r, q, p, s], sm[p] + a[r, q, s] * c4[s, p],
                           order="{ U[r, q, p, s] -> [r, q, 1, p, s] }")
        w = me.Computation("W", [r, q, p], sm[p], order="{ W[r, q, p] -> [r, q, 2, p, 0] }")
        z.store_in(sm, [p])
        u.store_in(sm, [p])
        w.store_in(a, [r, q, p])
        u.after(z, me.ROOT if apart else "q")
        w.after(u, me.ROOT if apart else "q")
    return f, {"A": a, "sum": sm, "Z": z, "U": u, "W": w}


def _run(f: me.Function, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
    g = np.random.default_rng(seed)
    a, c4, s0 = g.random((R, Q, P)), g.random((P, P)), g.random(P)
    want = np.einsum("rqs,sp->rqp", a, c4)
    k = f.compile()
    k(A=a, C4=c4, sum=s0)
    return a, want, s0, want[-1, -1]


Schedule = Callable[[dict[str, object]], None]


def _par_r(x: dict[str, object]) -> None:
    for n in ("Z", "U", "W"):
        x[n].parallelize("r")  # type: ignore[attr-defined]


def _apart(x: dict[str, object]) -> None:
    x["U"].interchange("p", "s")  # type: ignore[attr-defined]
    x["U"].parallelize("q")  # type: ignore[attr-defined]


def _tiled(x: dict[str, object]) -> None:
    u = x["U"]
    u.split("p", 2, "p0", "p1")  # type: ignore[attr-defined]
    u.interchange("p1", "s")  # type: ignore[attr-defined]
    u.vectorize("p1", 2)  # type: ignore[attr-defined]
    u.parallelize("r")  # type: ignore[attr-defined]


@pytest.mark.parametrize("loops,schedule", [
    (("r", "q"), None),
    (("q", "r"), _par_r),          # r over the cores: each r its own copies
    (("r", "q"), _apart),          # Z, U and W in loop nests of their own, q parallel
    ((("q", 2), "r"), _par_r),     # two copies along q, fused at q: enough
    ((("q", 3), "r"), _tiled),
    (("r",), _par_r),
])
def test_expanded_doitgen_gives_numpy_results(loops: tuple[object, ...],
                                              schedule: Schedule | None) -> None:
    f, x = _doitgen(apart=schedule is _apart)
    name = x["sum"].expand(*loops)  # type: ignore[attr-defined]
    assert name.startswith("sum_")
    if schedule is not None:
        schedule(x)
    a, want, s, last = _run(f)
    np.testing.assert_allclose(a, want, rtol=1e-12)
    np.testing.assert_allclose(s, last, rtol=1e-12)  # the copy-back: sum as Julia leaves it


def test_without_expansion_r_is_not_parallel() -> None:
    f, x = _doitgen()
    _par_r(x)
    with pytest.raises(ScheduleError, match="parallel"):
        f.compile()


def test_a_fold_too_small_for_the_schedule_is_refused() -> None:
    """Two copies along q, but Z runs over every q before U: the legality check sees a
    copy overwritten while U still reads it."""
    f, x = _doitgen(apart=True)
    x["sum"].expand(("q", 2), "r")  # type: ignore[attr-defined]
    with pytest.raises(ScheduleError):
        f.compile()


@pytest.mark.parametrize("how,msg", [
    (lambda x: x["sum"].expand("r"),  # sums run on across r: expansion would lose them
     r"sum.expand\('r'\) \(command #\d+\): the read of 'sum' by computation 'U' would "
     "no longer see the value it sees in the program as written"),
    (lambda x: x["sum"].expand("s"), "computation 'Z' writes 'sum' outside a loop 's'"),
    (lambda x: x["sum"].expand(("q", 1)), "must be an int >= 2, got 1"),
    (lambda x: x["sum"].expand(), "give at least one loop"),
    (lambda x: x["sum"].expand("q", "q"), "a loop named twice"),
    (lambda x: x["sum"].expand(3), "a loop level must be a me.Var or a name"),
    (lambda x: me.expand(x["A"].fn.computation("U"), ["r"]), "expected a buffer"),
])
def test_expansion_mistakes(how: Callable[[dict[str, object]], object], msg: str) -> None:
    f, x = _doitgen("dgm", reset="first")
    with pytest.raises(DefinitionError, match=msg) as e:
        how(x)
        f.compile()
    assert "\n" not in str(e.value).strip() or "computation 'U'" in str(e.value)


def test_expanding_twice_and_reading_the_callers_content_are_refused() -> None:
    f, x = _doitgen("dg2")
    x["sum"].expand("r")  # type: ignore[attr-defined]
    x["sum"].expand("q")  # type: ignore[attr-defined]
    with pytest.raises(DefinitionError, match="'sum' is expanded twice"):
        f.compile()
    with me.Function("acc") as g:  # sum[p] += v[i, p] on what the caller passed in
        v = me.Input("v", (3, 4), me.float64)
        sm = me.Buffer("sum", (4,), me.float64, kind="inout")
        i, p = me.Var("i", 0, 3), me.Var("p", 0, 4)
        u = me.Computation("U", [i, p], sm[p] + v[i, p])
        u.store_in(sm, [p])
    sm.expand("i")
    with pytest.raises(DefinitionError, match="reads what 'sum' held before the program "
                                              "wrote it"):
        g.compile()


def test_a_read_that_would_see_another_write_is_refused() -> None:
    """``t`` is set on the diagonal and read everywhere after: with one copy per ``j``,
    ``R(2, 0)`` would read the copy ``S(0, 0)`` wrote where the program reads ``S(1, 1)``'s
    value (every copy holds some value: the one ``I`` wrote in row 0)."""
    with me.Function("diag") as f:
        t = me.Buffer("t", (1,), me.float64)
        i, j = me.Var("i", 0, 4), me.Var("j", 0, 4)
        w0 = me.Computation("I", [i, j], -1.0, predicate=i == 0,
                            order="{ I[i, j] -> [i, j, 0] }")
        w1 = me.Computation("S", [i, j], me.cast(me.float64, 10 * i + j), predicate=i == j,
                            order="{ S[i, j] -> [i, j, 1] }")
        r = me.Computation("R", [i, j], t[0], order="{ R[i, j] -> [i, j, 2] }")
        w0.store_in(t, [0])
        w1.store_in(t, [0])
        w1.after(w0, "j")
        r.after(w1, "j")
    want = np.array([[0.0, -1.0, -1.0, -1.0], [-1.0, 11.0, 11.0, 11.0],
                     [11.0, 11.0, 22.0, 22.0], [22.0, 22.0, 22.0, 33.0]])
    np.testing.assert_array_equal(f.compile()()["R"], want)
    t.expand("j")
    with pytest.raises(DefinitionError, match=r"t.expand\('j'\) \(command #\d+\): the read "
                       r"t\[0\] of computation 'R' would no longer see the value it sees"):
        f.compile()


def test_a_temporary_is_expanded_without_a_copy_back() -> None:
    """t[j] is a temporary row reused by every i: one copy per i lets i run in parallel
    and nothing is copied back."""
    with me.Function("rows") as f:
        a = me.Input("a", (6, 5), me.float64)
        t = me.Buffer("t", (5,), me.float64)
        i, j = me.Var("i", 0, 6), me.Var("j", 0, 5)
        w = me.Computation("T", [i, j], a[i, j] * 2.0, order="{ T[i, j] -> [i, 0, j] }")
        o = me.Computation("O", [i, j], t[j] + 1.0, order="{ O[i, j] -> [i, 1, j] }")
        w.store_in(t, [j])
        o.after(w, "i")
    t.expand("i")
    o.parallelize("i")
    w.parallelize("i")
    x = np.arange(30.0).reshape(6, 5)
    np.testing.assert_array_equal(f.compile()(a=x)["O"], x * 2 + 1)
    assert "t_i_back" not in f.lower().layers_text()


@pytest.mark.parametrize("target", ["gpu", "mpi", "fpga"])
def test_expanded_doitgen_on_the_other_targets(target: str) -> None:
    """The expansion is a rewrite of Layer I: every target compiles the derived program.
    On a GPU (PoCL here) the copy-back runs on the device with the statements writing
    the copies (the argument then comes back with the default copies)."""
    if target == "gpu":
        pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not "
                                               "installed")
    f, x = _doitgen(f"dg_{target}", apart=True)
    x["sum"].expand("r", "q")  # type: ignore[attr-defined]
    options: dict[str, object] = {}
    if target == "gpu":
        for n in ("Z", "U", "W"):
            x[n].gpu_loops(["r"], ["q"])  # type: ignore[attr-defined]
        options["dialect"] = "opencl"
    elif target == "mpi":
        options["ranks"] = 2
    g = np.random.default_rng(1)
    a, c4, s0 = g.random((R, Q, P)), g.random((P, P)), g.random(P)
    want = np.einsum("rqs,sp->rqp", a, c4)
    f.compile(target=target, **options)(A=a, C4=c4, sum=s0)
    np.testing.assert_allclose(a, want, rtol=1e-12)
    np.testing.assert_allclose(s0, want[-1, -1], rtol=1e-12)


def test_expand_crosses_the_wire() -> None:
    f, x = _doitgen("dgw")
    x["sum"].expand(("q", 2), "r", name="copies")  # type: ignore[attr-defined]
    g = decode_function(encode_function(f))
    got = [c for c in g.commands.items if isinstance(c, cmd.Expand)]
    assert got == [cmd.Expand("sum", ("q", "r"), (2, 0), "copies")]


def test_the_auto_scheduler_expands_doitgen_and_replays() -> None:
    """Julia's doitgen: the search ranks the expansion of sum along r and q (every
    statement's loops, along which the accumulation reuses it) against none, keeps it,
    and the schedule's Python form replays it; both give numpy's result. At tiny sizes
    the choice is the model's too (its estimates with and without, in the report's note
    where it expands), and numpy's result again."""
    from frontends.julia.api import _arguments, compile_source, translate
    from frontends.julia.paper import KERNELS, source

    kd = KERNELS["doitgen!"]
    # past the register tiles (at the small sizes the model finds no gain in it)
    args = kd.make({k: 4 * v + 3 for k, v in kd.small.items()}, np.random.default_rng(3))
    k = compile_source(source(), "doitgen!", schedule="auto")
    text = k.auto_schedule(*args)
    assert "f.buffer(\"sum\").expand('r', 'q', name='sum_r_q')" in text, text
    spec = k.spec_of(args)
    b = translate(k.function, spec, False)
    # the text orders the statements itself (the translation's own ordering replaced)
    b.fn.commands.items = [c for c in b.fn.commands.items if not isinstance(c, cmd.After)]
    exec(text, {"f": b.fn, "me": me})  # noqa: S102 - the text under test
    kern = b.fn.compile(outputs=b.outputs)
    x = tuple(v.copy(order="K") if isinstance(v, np.ndarray) else v for v in args)
    kern(**_arguments(b, spec, x))
    for pos, ref in kd.reference(args).items():
        np.testing.assert_allclose(x[pos], ref, rtol=1e-12)
    tiny = kd.make({"p": 3, "q": 2, "r": 2}, np.random.default_rng(3))
    x = tuple(v.copy(order="K") if isinstance(v, np.ndarray) else v for v in tiny)
    k(*x)
    for pos, ref in kd.reference(tiny).items():
        np.testing.assert_allclose(x[pos], ref, rtol=1e-12)
    tb = translate(k.function, k.spec_of(tiny), False)
    chosen = tb.fn.auto_schedule("cpu", outputs=tb.outputs)
    assert (".expand(" in k.auto_schedule(*tiny)) == any(
        n.startswith("sum.expand(") and "without" in n for n in chosen.notes), str(chosen)
