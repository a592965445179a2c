"""Loop-local buffers (allocate_at): the allocation must sit inside its loop on every code
path ISL generates (full tiles, partial tiles, one-iteration tails), or parallel iterations
would share one array. Checked structurally on the loop AST and by results against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from middleend.api.examples import sgemm_blocked, sgemm_packed, sgemm_packed_a
from middleend.ir.loopast import Alloc, Block, For, If, Node, Stmt


def _stmt_paths(node: Node, path: tuple[Node, ...] = ()) -> list[tuple[str, tuple]]:
    """Every statement with the loops and allocations above it (outermost first)."""
    if isinstance(node, Stmt):
        return [(node.comp, path)]
    out: list[tuple[str, tuple]] = []
    if isinstance(node, (Alloc, For)):
        out += _stmt_paths(node.body, (*path, node))
    elif isinstance(node, Block):
        for c in node.body:
            out += _stmt_paths(c, path)
    elif isinstance(node, If):
        out += _stmt_paths(node.then, path)
        if node.orelse is not None:
            out += _stmt_paths(node.orelse, path)
    return out


def _assert_thread_private(program: object, users: dict[str, set[str]]) -> int:
    """Each statement using a loop-local buffer sees an allocation of it made inside every
    parallel loop above it (so no two threads share one). Returns how many were checked."""
    checked = 0
    for comp, path in _stmt_paths(program.body):  # type: ignore[attr-defined]
        for buf, comps in users.items():
            if comp not in comps:
                continue
            allocs = [k for k, n in enumerate(path) if isinstance(n, Alloc) and n.buffer == buf]
            assert allocs, f"{comp} uses {buf} outside any allocation of it"
            pars = [k for k, n in enumerate(path) if isinstance(n, For) and n.tag == "parallel"]
            assert all(p < allocs[-1] for p in pars), (
                f"{comp}: the allocation of {buf} is outside a parallel loop above it, so "
                "threads would share it")
            checked += 1
    return checked


def _packed_sgemm() -> me.Function:
    """The benchmark's BLAS-like sgemm schedule, small tiles, Param N."""
    return sgemm_packed(None, tj=16, mr=2, nr=8)


def test_packed_sgemm_allocations_are_private_to_the_parallel_loop() -> None:
    kernel = _packed_sgemm().compile()
    users = {"Bp": {"Bp", "upd"}, "acc": {"acc", "upd", "C"}}
    assert _assert_thread_private(kernel.program, users) >= 4


def test_packed_a_sgemm_allocations_are_private_and_match_numpy() -> None:
    """A packed too (``Ap`` stored k-major in ``ApB`` at ``i_uo``): the copy is private
    to the parallel loop and the product is still A @ B, also with partial tiles."""
    kernel = sgemm_packed(None, tj=16, mr=2, nr=8, pack_a=True).compile()
    users = {"Bp": {"Bp", "upd"}, "acc": {"acc", "upd", "C"}, "ApB": {"Ap", "upd"}}
    assert _assert_thread_private(kernel.program, users) >= 6
    for n in (1, 7, 37):
        rng = np.random.default_rng(n)
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        np.testing.assert_allclose(kernel(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make,sizes", [(sgemm_packed, {"nr": 0}), (sgemm_packed_a, {"mr": 0}),
                                         (sgemm_blocked, {"kc": -1})])
def test_sgemm_tile_sizes_must_be_positive(make, sizes) -> None:
    with pytest.raises(me.DefinitionError, match="must be a positive int"):
        make(64, **sizes)


def test_sgemm_with_a_packed_once_matches_numpy() -> None:
    """A packed once into row micro-panels (``ApP[i // mr, k, i % mr]``) before the
    parallel panels: A @ B with partial micro-panels and tiles, and the micro-kernel reads
    the packed A without a division."""
    kernel = sgemm_packed_a(None, tj=16, mr=3, nr=8).compile(fp_contract=True)
    hot = [ln for ln in kernel.source.splitlines() if "b_acc[" in ln and "b_ApP[" in ln]
    assert hot and not any("me_fdiv_i64" in ln or "me_fmod_i64" in ln for ln in hot)
    for n in (1, 7, 16, 37):
        rng = np.random.default_rng(n)
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        np.testing.assert_allclose(kernel(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pack_a", [False, True])
def test_blocked_sgemm_is_private_and_matches_numpy(pack_a: bool) -> None:
    """Blocked as a BLAS blocks it (a last partial block of k and of rows when kc and mc do
    not divide N), B and A packed in micro-panels, a register tile per micro-tile: the
    buffers written inside the parallel loops are private to them, and A @ B
    (fp_contract: FMAs, as the benchmark builds it)."""
    kernel = sgemm_blocked(None, kc=8, mc=12, mr=3, nr=8, pack_a=pack_a).compile(
        fp_contract=True)
    users = {"acc": {"acc0", "u", "cs"}}
    if pack_a:
        users["ApB"] = {"Ap", "u"}
    assert _assert_thread_private(kernel.program, users) >= 3 + 2 * pack_a
    hot = [ln for ln in kernel.source.splitlines() if "b_acc[" in ln and "b_BpB[" in ln]
    assert hot and not any("me_fdiv_i64" in ln or "me_fmod_i64" in ln for ln in hot)
    for n in (1, 7, 16, 37, 80):
        rng = np.random.default_rng(n)
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        np.testing.assert_allclose(kernel(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 16, 37, 64, 80])
def test_packed_sgemm_matches_numpy(n: int) -> None:
    kernel = _packed_sgemm().compile()
    rng = np.random.default_rng(n)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    for _ in range(3):  # a race would show up as a run-to-run difference
        np.testing.assert_allclose(kernel(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tiles", [(32, 64, "j0"), (8, 8, "j0"), (1, 64, "j0"), (32, 64, "i0")])
@pytest.mark.parametrize("shape", [(35, 67), (34, 66), (3, 3), (40, 100)])
def test_blur_tile_private_buffers(tiles: tuple[int, int, str], shape: tuple[int, int]) -> None:
    """Tails of one row/column make ISL drop the allocation loop (one iteration)."""
    ti, tj, level = tiles
    with me.Function("blur") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j, c = me.Var("i", 0, N - 2), me.Var("j", 0, M - 2), me.Var("c", 0, 3)
        ii = me.Var("i", 0, N)
        inp = me.Input("inp", [N, M, 3], me.float32)
        bx = me.Computation("bx", [ii, j, c],
                            (inp[ii, j, c] + inp[ii, j + 1, c] + inp[ii, j + 2, c]) / 3)
        by = me.Computation("by", [i, j, c],
                            (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
        by.tile(i, j, ti, tj, "i0", "j0", "i1", "j1")
        bx.compute_at(by, level)
        bx.allocate_at(by, level)
        by.parallelize("i0")
    kernel = f.compile()
    assert _assert_thread_private(kernel.program, {"bx": {"bx", "by"}}) >= 2
    a = np.random.default_rng(1).random((*shape, 3), dtype=np.float32)
    bxr = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    ref = (bxr[:-2] + bxr[1:-1] + bxr[2:]) / np.float32(3)
    np.testing.assert_allclose(kernel(inp=a)["by"], ref, rtol=1e-5, atol=1e-6)


def test_a_buffer_allocated_inside_a_vector_loop_is_refused() -> None:
    """A buffer per iteration of a vector loop (an OpenMP simd body) is refused in one line
    naming it and the loop: the middle-end's own API places buffers where it is told (the
    Halide front-end computes a Func at a vector loop just outside it instead)."""
    with me.Function("vec_alloc") as f:
        i = me.Var("i", 0, 32)
        inp = me.Input("inp", [32], me.float32)
        p = me.Computation("p", [i], inp[i] + 1.0)
        c = me.Computation("c", [i], p[i] * p[me.clamp(i + 1, 0, 31)])
        c.vectorize("i", 8)
        p.compute_at(c, "i_vi")
        p.allocate_at(c, "i_vi")
    with pytest.raises(me.ScheduleError,
                       match="^loop-local buffer 'p' is allocated inside vector loop 'i_vi'"):
        f.lower()


def test_a_temporary_of_huge_pages_holds_its_values() -> None:
    """A temporary of 32 MB or more is allocated 2 MB-aligned and offered as huge pages
    (backends/clike/cruntime.py): the same values as numpy, on every call (each maps it
    afresh), in parallel rows."""
    rows, cols = 1024, 8200  # 33.6 MB of float32
    with me.Function("huge_tmp") as f:
        y, x = me.Var("y", 0, rows), me.Var("x", 0, cols)
        a = me.Input("a", [rows, cols], me.float32)
        t = me.Computation("t", [y, x], a[y, x] * 2.0 + 1.0)
        out = me.Computation("out", [y, x], t[y, cols - 1 - x] - a[y, x])
        t.parallelize(y)
        out.parallelize(y)
    k = f.compile(outputs=[out])
    assert "ME_HUGE_BYTES" in k.source and "b_t = (float*)me_alloc(" in k.source
    data = np.random.default_rng(5).random((rows, cols), dtype=np.float32)
    want = data[:, ::-1] * np.float32(2.0) + np.float32(1.0) - data
    for _ in range(2):
        np.testing.assert_array_equal(k(a=data)["out"], want)
