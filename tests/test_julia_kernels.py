"""The Julia kernels of kernels.jl (the paper's section 5.2 set plus atax, 2mm, jacobi-1d)
through compile_source, scheduled and unscheduled, against numpy references on small odd
sizes; plus extra schedules given as directives to check the legality check and results."""

from __future__ import annotations

import numpy as np
import pytest

from frontends.julia import compile_source
from frontends.julia.paper import KERNELS, source

SRC = source()


def _run(name: str, schedule: bool, sizes: dict[str, int] | None = None,
         text: str = SRC) -> None:
    kd = KERNELS[name]
    args = kd.make(sizes or kd.small, np.random.default_rng(7))
    orig = tuple(a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args)
    want = kd.reference(orig)
    compile_source(text, name, schedule=schedule)(*args)
    for pos, ref in want.items():
        np.testing.assert_allclose(args[pos], ref, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name} argument {pos}")


@pytest.mark.parametrize("schedule", [False, True], ids=["unscheduled", "scheduled"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel(name: str, schedule: bool) -> None:
    _run(name, schedule)


@pytest.mark.parametrize("name", ["bicg!", "covariance!", "jacobi1d!", "doitgen!"])
def test_kernel_other_sizes(name: str) -> None:
    sizes = {k: v + 4 for k, v in KERNELS[name].small.items()}
    _run(name, True, sizes)


@pytest.mark.parametrize("name,sizes", [("bicg!", {"n": 2003, "m": 7}),
                                         ("gesummv!", {"n": 1003}),
                                         ("atax!", {"m": 7, "n": 2101})])
def test_partial_sums_of_several_blocks(name: str, sizes: dict[str, int]) -> None:
    """bicg sums s per block of 1000 rows, gesummv and atax sum A x per block of 1000 /
    1050 columns (a local array's columns), then add the blocks' sums: these sizes make
    two or three blocks, the last one partial."""
    _run(name, True, sizes)


def _with_schedule(name: str, directives: str) -> str:
    """kernels.jl with ``name``'s @schedule block replaced by ``directives``."""
    head = f"@acc function {name}("
    start = SRC.index(head)
    a = SRC.index("@schedule begin", start)
    b = SRC.index("    end\n", a) + len("    end\n")
    return SRC[:a] + f"@schedule begin\n{directives}\n    end\n" + SRC[b:]


ATAX_FUSED = """
@acc function atax_fused!(y::Vector{Float64}, t::Vector{Float64}, A::Matrix{Float64},
                          x::Vector{Float64})
    m, n = size(A)
    @schedule begin
        split(T, i, 4)
        split(Y, i, 4)
        after(Y, T, i0)
    end
    for j in 1:n
        y[j] = 0.0
    end
    for i in 1:m
        t[i] = 0.0
    end
    for i in 1:m, j in 1:n
        @name T t[i] += A[i, j] * x[j]
    end
    for i in 1:m, j in 1:n
        @name Y y[j] += A[i, j] * t[i]
    end
end
"""


def test_after_directive_holds_when_its_reference_moves_later() -> None:
    """``after(Y, T, i0)`` is written before the source order moves T after t's
    initialization; Y must still share T's loop over the row blocks (one pass over A),
    where it used to be left behind in a nest of its own."""
    rng = np.random.default_rng(3)
    A, x = np.asfortranarray(rng.random((15, 11))), rng.random(11)
    y, t = np.zeros(11), np.zeros(15)
    k = compile_source(ATAX_FUSED, "atax_fused!")
    k(y, t, A, x)
    np.testing.assert_allclose(t, A @ x, rtol=1e-12)
    np.testing.assert_allclose(y, A.T @ (A @ x), rtol=1e-12)
    src = k.compiled(k.spec_of((y, t, A, x))).kernel.source
    assert src.count("/* loop i0") == 1, "T and Y are not in one loop over the row blocks"


@pytest.mark.parametrize("name,directives", [
    ("bicg!", "tile(Q, i, j, 4, 8)\nparallelize(Q, i0)"),
    ("bicg!", "interchange(S, i, j)\nsplit(S, j, 4)\nparallelize(S, j0)"),
    ("mttkrp!", "tile(M, i, j, 4, 4)\nparallelize(M, i0)"),
    ("mm2!", "tile(T, i, j, 4, 4)\nunroll(T, k, 2)\ntile(E, i, j, 3, 5)"),
    ("jacobi1d!", "unroll(SB, i, 4)"),
    ("covariance!", "interchange(C, j, k)"),
])
def test_more_schedules(name: str, directives: str) -> None:
    _run(name, True, text=_with_schedule(name, directives))


@pytest.mark.parametrize("name,directives,what", [
    ("bicg!", "parallelize(S, i)", "carries a dependence"),
    ("jacobi1d!", "parallelize(SB, t)", "carries a dependence"),
    ("jacobi1d!", "interchange(SB, t, i)", "illegal schedule"),
    ("bicg!", "vectorize(S, i, 4)", "carries a dependence"),
])
def test_illegal_schedules_refused(name: str, directives: str, what: str) -> None:
    import middleend as me

    kd = KERNELS[name]
    args = kd.make(kd.small, np.random.default_rng(0))
    k = compile_source(_with_schedule(name, directives), name)
    with pytest.raises(me.ScheduleError, match=what):
        k(*args)


def _row_loops(node: object, comp: str, name: str, out: list[object]) -> bool:
    """Collects the loops called ``name`` that enclose a statement of ``comp``; returns
    whether ``node`` holds one."""
    from middleend.ir.loopast import Alloc, Block, For, If, Stmt

    if isinstance(node, Stmt):
        return node.comp == comp
    if isinstance(node, For):
        inside = _row_loops(node.body, comp, name, out)
        if inside and node.name == name:
            out.append(node)
        return inside
    if isinstance(node, Alloc):
        return _row_loops(node.body, comp, name, out)
    if isinstance(node, Block):
        return any([_row_loops(c, comp, name, out) for c in node.body])
    if isinstance(node, If):
        got = _row_loops(node.then, comp, name, out)
        return (node.orelse is not None and _row_loops(node.orelse, comp, name, out)) or got
    return False


@pytest.mark.parametrize("m", [48, 53, 101])
def test_covariance_full_tiles_apart_from_the_diagonal(m: int) -> None:
    """cov's register tile (I = 3 * vector_lanes(Float64) rows i1 x J unrolled columns
    j1i) on the triangle j >= i: the tiles the diagonal crosses are generated apart, so
    that in every other tile the rows loop runs 0..I-1 with constant bounds (a min bound
    in every tile cost the tile its registers); values still equal numpy's, with a
    partial last tile too (m = 53). At
    m = 101 the whole schedule's separation passed the bound for parametric programs
    (astgen.SEPARATION_OPS) and was dropped: sizes that are constants get a larger one."""
    import middleend as me
    from middleend.ir.loopast import IInt

    machine = me.target_machine("cpu")
    assert machine is not None
    width = machine.vector_bytes(True, 8)
    rows_per_tile = 3 * (width // 8 if width else 1)
    cols_per_tile = (machine.vector_registers() or 16) // 4  # J, each column one i1 loop

    kd = KERNELS["covariance!"]
    args = kd.make({"n": 19, "m": m}, np.random.default_rng(3))
    want = kd.reference(tuple(a.copy(order="K") if isinstance(a, np.ndarray) else a
                              for a in args))
    k = compile_source(SRC, "covariance!")
    k(*args)
    for pos, ref in want.items():
        np.testing.assert_allclose(args[pos], ref, rtol=1e-10, atol=1e-12)
    rows: list[object] = []
    _row_loops(k.compiled(k.spec_of(args)).kernel.program.body, "C", "i1", rows)
    const = [f for f in rows if isinstance(f.hi, IInt)  # type: ignore[attr-defined]
             and f.hi.value == rows_per_tile - 1]  # type: ignore[attr-defined]
    varying = [f for f in rows if f not in const]
    # at least one whole tile (its J column loops) with constant rows; with 12 x 4 tiles
    # at m = 48 (AVX2) the off-diagonal tiles are one loop nest: 4 such loops
    assert len(const) >= cols_per_tile and varying, (len(const), len(rows))
