"""The mpi target against numpy at 1-4 ranks (uneven blocks too): the papers' distributed
blur with explicit sends and receives (Figure 3-(c)) and with the automatic exchange,
heat-2D with a halo exchange every time step, a distributed matmul (row blocks of A, B
broadcast), a reduction across ranks; and the distributions it refuses before codegen."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from middleend.api.examples_mpi import heat2d, matmul_rows
from middleend.driver.lowering import lower

pytestmark = pytest.mark.mpi


@pytest.fixture(autouse=True, scope="module")
def _needs_mpi() -> None:
    from middleend.driver.targets import TargetRegistry

    a = TargetRegistry.discover().lookup("mpi").availability()
    if not a.available:  # the README's commands install MPICH's wheel: CI has it
        pytest.fail(f"mpi target unavailable: {a.detail}")


def _blocks(n: int, r: int) -> int:
    return -(-n // r)


def _blur(N: int, M: int, R: int, exchange_level: str | None = None) -> me.Function:
    """by = vertical mean of bx = horizontal mean of inp; every buffer distributed by rows,
    by reading the rows of bx its neighbour owns through an exchange."""
    with me.Function("dblur") as f:
        i, j, c = me.Var("i", 0, N - 2), me.Var("j", 0, M - 2), me.Var("c", 0, 3)
        ii = me.Var("i", 0, N)
        inp = me.Input("inp", [N, M, 3], me.float32)
        bx = me.Computation("bx", [ii, j, c],
                            (inp[ii, j, c] + inp[ii, j + 1, c] + inp[ii, j + 2, c]) / 3)
        by = me.Computation("by", [i, j, c],
                            (bx[i, j, c] + bx[i + 1, j, c] + bx[i + 2, j, c]) / 3)
    inp.distribute(0)
    bx.buffer().distribute(0)
    by.buffer().distribute(0)
    bx.split(ii, _blocks(N, R), "i0", "i1")
    bx.distribute("i0")
    by.split(i, _blocks(N - 2, R), "i0", "i1")
    by.distribute("i0")
    by.after(bx, me.ROOT)
    me.exchange(by, bx)
    return f


def _blur_ref(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


@pytest.mark.parametrize("R", [1, 2, 3, 4])
def test_blur_with_the_exchange_at_1_to_4_ranks(R: int) -> None:
    N, M = 23, 9  # uneven blocks at 2, 3 and 4 ranks
    k = _blur(N, M, R).compile(target="mpi", ranks=R)
    a = np.random.default_rng(R).random((N, M, 3), dtype=np.float32)
    out = k(inp=a)["by"]
    np.testing.assert_allclose(out[:, :M - 2], _blur_ref(a), rtol=1e-6)
    # exactly the halo: 2 rows of bx below each block boundary, 1 above (M-2 columns)
    halo = 0
    bb, by_ = _blocks(N, R), _blocks(N - 2, R)
    for r in range(R):
        lo, hi = r * by_, min(r * by_ + by_, N - 2) + 2  # the bx rows by reads on rank r
        if lo >= N - 2:
            continue
        own = set(range(r * bb, min(r * bb + bb, N)))
        halo += len(set(range(lo, hi)) - own)
    assert sum(k.last_bytes_sent) == halo * (M - 2) * 3 * 4


def _explicit_blur(N: int, M: int, R: int, sync_recv_first: bool = False) -> me.Function:
    """Figure 3-(c): by reads inp rows i..i+2; rank q sends its first two rows to q-1,
    which receives them after its block (each rank stores its block plus a 2-row halo)."""
    B = _blocks(N, R)
    with me.Function("pblur") as f:
        i, j, c = me.Var("i", 0, N - 2), me.Var("j", 0, M), me.Var("c", 0, 3)
        inp = me.Input("inp", [N, M, 3], me.float32)
        out = me.Buffer("out", [N, M, 3], me.float32, me.OUTPUT)
        by = me.Computation("by", [i, j, c],
                            (inp[i, j, c] + inp[i + 1, j, c] + inp[i + 2, j, c]) / 3)
        by.store_in(out, [i, j, c])
        qs, qr = me.Var("qs", 1, R), me.Var("qr", 0, R - 1)
        s = me.send([qs], inp[qs * B, 0, 0], [2, M, 3], qs - 1, "async", name="s")
        r = me.receive([qr], inp[(qr + 1) * B, 0, 0], [2, M, 3], qr + 1, "sync",
                       matching=s, name="r")
    inp.distribute(0)
    out.distribute(0)
    by.split(i, B, "i0", "i1")
    by.distribute("i0")
    s.distribute("qs")
    r.distribute("qr")
    if sync_recv_first:
        r.before(s, me.ROOT)
    return f


@pytest.mark.parametrize("R", [2, 3, 4])
def test_blur_with_explicit_sends_and_receives(R: int) -> None:
    N, M = 22, 7  # blocks of 6: 6, 6, 6, 4 rows at 4 ranks
    k = _explicit_blur(N, M, R).compile(target="mpi", ranks=R)
    a = np.random.default_rng(10 + R).random((N, M, 3), dtype=np.float32)
    out = k(inp=a)["out"]
    ref = (a[:-2] + a[1:-1] + a[2:]) / np.float32(3)
    np.testing.assert_allclose(out[:N - 2], ref, rtol=1e-6)
    assert k.last_bytes_sent == [0] + [2 * M * 3 * 4] * (R - 1)


def test_a_chain_of_receives_before_sends_runs() -> None:
    """Rank 2 only sends, so rank 1's receive completes, then rank 0's: no deadlock."""
    k = _explicit_blur(22, 7, 3, sync_recv_first=True).compile(target="mpi", ranks=3)
    a = np.random.default_rng(3).random((22, 7, 3), dtype=np.float32)
    ref = (a[:-2] + a[1:-1] + a[2:]) / np.float32(3)
    np.testing.assert_allclose(k(inp=a)["out"][:20], ref, rtol=1e-6)


def test_a_ring_of_blocking_receives_before_sends_is_a_certain_deadlock() -> None:
    R, M = 3, 4
    with me.Function("ring") as f:
        rb = me.Input("rb", [R, M], me.float32)
        q, e = me.Var("q", 0, R), me.Var("e", 0, M)
        o = me.Computation("o", [q, e], rb[q, e] * 2)
        s = me.send([q], rb[q, 0], [1, M], (q + R - 1) % R, "sync", name="s")
        r = me.receive([q], rb[q, 0], [1, M], (q + 1) % R, "sync", matching=s, name="r")
    rb.distribute(0)
    o.buffer().distribute(0)
    for x in (o, s, r):
        x.distribute("q")
    r.before(s, me.ROOT)
    o.after(s, me.ROOT)
    with pytest.raises(me.ScheduleError, match="certain deadlock"):
        lower(f, ranks=R)


def heat_planes(a: np.ndarray, steps: int) -> list[np.ndarray]:
    """numpy's heat-2D: the grid after 0, 1, ..., ``steps`` steps."""
    planes = [a.copy()]
    for _ in range(steps):
        ref = planes[-1]
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = (ref[1:-1, 1:-1] + ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2]
                           + ref[1:-1, 2:]) * np.float32(0.2)
        planes.append(nxt)
    return planes


def _heat_halo_bytes(N: int, R: int, T: int) -> int:
    """Per step, each rank receives the rows next to the interior rows of its block that
    it does not own (N-2 columns each)."""
    B, rows = _blocks(N, R), 0
    for r in range(R):
        own = set(range(r * B, min(r * B + B, N)))
        inner = [i for i in own if 1 <= i <= N - 2]
        rows += len({i + d for i in inner for d in (-1, 1)} - own)
    return T * rows * (N - 2) * 4


@pytest.mark.parametrize("R", [1, 2, 3, 4])
def test_heat2d_exchanges_the_halo_every_time_step(R: int) -> None:
    N, T = 14, 3
    k = heat2d(N, N, T, R).compile(target="mpi", ranks=R)
    a = np.random.default_rng(20 + R).random((N, N), dtype=np.float32)
    got = k(u0=a)["u"]
    for t, ref in enumerate(heat_planes(a, T)):
        np.testing.assert_allclose(got[t], ref, rtol=1e-5)
    assert sum(k.last_bytes_sent) == _heat_halo_bytes(N, R, T)
    assert set(k.last_phases) == {"start", "input", "compute", "output"}


@pytest.mark.parametrize("R", [2, 3])
def test_heat2d_of_one_step_declares_the_loop_isl_leaves_out(R: int) -> None:
    """One time step: ISL prints no t loop, so the exchange binds t itself."""
    k = heat2d(7, 7, 1, R).compile(target="mpi", ranks=R)
    a = np.random.default_rng(80 + R).random((7, 7), dtype=np.float32)
    np.testing.assert_allclose(k(u0=a)["u"], np.stack(heat_planes(a, 1)), rtol=1e-5)
    assert sum(k.last_bytes_sent) == _heat_halo_bytes(7, R, 1)


def test_a_transport_that_does_not_start_falls_back_to_mpichs_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MPIR_CVAR_CH4_NETMOD", "FI_PROVIDER"):
        monkeypatch.delenv(var, raising=False)  # the caller's choice would win
    k = heat2d(6, 6, 2, 2).compile(target="mpi", ranks=2)
    k.env = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "no_such_provider"}
    a = np.random.default_rng(90).random((6, 6), dtype=np.float32)
    np.testing.assert_allclose(k(u0=a)["u"], np.stack(heat_planes(a, 2)), rtol=1e-5)
    assert k.env == {}


@pytest.mark.parametrize("R,planes,by_value", [(2, 2, False), (3, 2, True), (4, 3, False)])
def test_heat2d_with_time_folded_modulo_planes(R: int, planes: int, by_value: bool) -> None:
    """``u[t % planes]``, the boundary copied before each step: the boundary copy a read
    sees is another time step's than in the sequential order, with the same value."""
    N, T = 13, 5
    k = heat2d(N, N, T, R, planes=planes, by_value=by_value).compile(target="mpi", ranks=R)
    a = np.random.default_rng(50 + R).random((N, N), dtype=np.float32)
    got = k(u0=a)["u"]
    assert got.shape == (planes, N, N)
    ref = heat_planes(a, T)
    for t in range(T - planes + 1, T + 1):
        np.testing.assert_allclose(got[t % planes], ref[t], rtol=1e-5)
    assert sum(k.last_bytes_sent) == _heat_halo_bytes(N, R, T)


@pytest.mark.parametrize("R", [1, 2, 3, 4])
def test_matmul_with_row_blocks_of_a_and_b_broadcast(R: int) -> None:
    n, m, p = 10, 7, 5
    f = matmul_rows(n, m, p, R)
    k = f.compile(target="mpi", ranks=R)
    rng = np.random.default_rng(30 + R)
    a, b = rng.random((n, m)), rng.random((m, p))
    np.testing.assert_allclose(k(A=a, B=b)["C"], a @ b, rtol=1e-12)
    assert sum(k.last_bytes_sent) == 0  # B is broadcast by the scatter; no halo


@pytest.mark.parametrize("R", [1, 2, 3, 4])
def test_a_sum_reduced_across_ranks(R: int) -> None:
    n = 29
    B = _blocks(n, R)
    with me.Function("dsum") as f:
        r, i = me.Var("r", 0, R), me.Var("i", 0, n)
        x = me.Input("x", [n], me.float64)
        part = me.Computation("part", [r], 0.0, dtype=me.float64)
        add = me.Computation("part_add", [r, i], part.memory[r] + x[i],
                             predicate=(i >= r * B) & (i < r * B + B))  # rank r's block
        add.store_in(part, [r])
        z, q = me.Var("z", 0, 1), me.Var("q", 0, R)
        total = me.Computation("total", [z], 0.0, dtype=me.float64)
        total_add = total.update([z, q], part.memory[q])
    x.distribute(0)
    part.buffer().distribute(0)  # one partial sum per rank
    part.distribute("r")
    add.distribute("r")
    add.after(part, "r")
    total.after(add, me.ROOT)
    me.exchange(total_add, part)  # every rank gathers the partial sums (an allgather)
    k = f.compile(target="mpi", ranks=R, outputs=["total"])
    v = np.random.default_rng(40 + R).random(n)
    np.testing.assert_allclose(k(x=v)["total"][0], v.sum(), rtol=1e-12)


def test_owner_computes_and_unsent_remote_reads_are_refused() -> None:
    f = _blur(20, 8, 2)
    f.commands.items[:] = [c for c in f.commands.items if type(c).__name__ != "Exchange"]
    with pytest.raises(me.ScheduleError, match=r"reads on rank 0 elements of 'bx' owned by "
                                               r"rank\(s\) \[1\]"):
        lower(f, ranks=2)
    with me.Function("bad") as g:
        i = me.Var("i", 0, 8)
        a = me.Input("a", [8], me.float32)
        o = me.Computation("o", [i], a[i] * 2)
    a.distribute(0)
    o.buffer().distribute(0)
    o.split(i, 2, "i0", "i1")  # blocks of 2, but o's buffer has blocks of 4 on 2 ranks
    o.distribute("i0")
    with pytest.raises(me.ScheduleError, match="distributed loop|does not own"):
        lower(g, ranks=2)


def test_an_unmatched_send_is_refused() -> None:
    N, M, R = 12, 4, 3
    with me.Function("unm") as f:
        inp = me.Input("inp", [N, M], me.float32)
        o = me.Computation("o", [me.Var("i", 0, N), me.Var("j", 0, M)],
                           inp[me.Var("i", 0, N), me.Var("j", 0, M)] + 1)
        q = me.Var("q", 1, R)
        s = me.send([q], inp[q * 4, 0], [1, M], q - 1, name="s")
        rr = me.receive([me.Var("p", 0, 1)], inp[4, 0], [1, M], 1, matching=s, name="r")
    inp.distribute(0)
    o.buffer().distribute(0)
    o.split("i", 4, "i0", "i1")
    o.distribute("i0")
    s.distribute("q")
    rr.distribute("p")
    with pytest.raises(me.ScheduleError, match="unmatched communication"):
        lower(f, ranks=R)


def test_a_distributed_loop_with_more_iterations_than_ranks_is_a_clear_error() -> None:
    with me.Function("wide") as f:
        i = me.Var("i", 0, 8)
        a = me.Input("a", [8], me.float32)
        o = me.Computation("o", [i], a[i] + 1)
    o.split(i, 2, "i0", "i1")
    o.distribute("i0")  # 4 iterations, 2 ranks; nothing distributed: all replicated
    with pytest.raises(me.ScheduleError, match="distributed|not"):
        f.compile(target="mpi", ranks=2)


def test_the_cpu_target_refuses_a_distributed_buffer() -> None:
    f = _blur(12, 6, 2)
    with pytest.raises(me.TargetError, match="cannot honour tag 'distribute'"):
        f.compile(target="cpu")


def test_through_the_service_the_artifact_carries_the_launch_line() -> None:
    from middleend.service.client import compile_via

    k = compile_via(_blur(16, 6, 2), None, target="mpi", ranks=2)
    assert k.artifact.launch["ranks"] == "2"
    assert "mpiexec -n 2" in k.artifact.launch["mpiexec"]
    assert "MPI_Isend" in k.artifact.text("source")
    a = np.random.default_rng(5).random((16, 6, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=a)["by"][:, :4], _blur_ref(a), rtol=1e-6)


def _exchange_of(f: me.Function) -> me.Operation:
    return next(o for o in f.operations if o.kind == "exchange")


def _comp(f: me.Function, name: str) -> me.Computation:
    return next(c for c in f.computations if c.name == name)


def test_an_exchange_before_the_writes_it_sends_is_refused() -> None:
    f = _blur(20, 8, 2)
    _exchange_of(f).before(_comp(f, "bx"), me.ROOT)  # the halo rows of bx are not written
    with pytest.raises(me.ScheduleError) as ei:
        lower(f, ranks=2)
    e = ei.value
    assert "exchange 'exchange_bx_by' of 'bx' sends element bx[" in str(e)
    assert "before bx[" in str(e) and "by[" in str(e)
    assert e.command == "exchange_bx_by.before(other='bx', level='__root__')"
    # once per run instead of once per time step: the later steps' rows are sent unwritten
    with pytest.raises(me.ScheduleError, match=r"exchange 'exchange_u_step' of 'u' sends "
                                               r"element u\[[0-9]+, [0-9]+, [0-9]+\]"):
        lower(heat2d(10, 10, 3, 2, exchange_at=me.ROOT), ranks=2)


def test_an_exchange_after_the_reads_it_serves_is_refused() -> None:
    f = heat2d(10, 10, 3, 2)
    _exchange_of(f).after(_comp(f, "step"), "t")
    with pytest.raises(me.ScheduleError, match=r"exchange 'exchange_u_step' of 'u' runs "
                                               r"after step\[t = 1"):
        lower(f, ranks=2)


@pytest.mark.parametrize("R", [1, 2, 3])
def test_parallel_loops_run_on_threads_inside_each_rank(R: int) -> None:
    N, M = 23, 9
    f = _blur(N, M, R)
    for c in f.computations:
        c.parallelize("i1")  # the rows of a rank's block, on its threads
    k = f.compile(target="mpi", ranks=R)
    assert "me_parallel_for(" in k.artifact.text("source")
    a = np.random.default_rng(60 + R).random((N, M, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=a)["by"][:, :M - 2], _blur_ref(a), rtol=1e-6)
    h = heat2d(12, 12, 3, R)
    _comp(h, "step").parallelize("j")
    b = np.random.default_rng(70 + R).random((12, 12), dtype=np.float32)
    got = h.compile(target="mpi", ranks=R)(u0=b)["u"]
    np.testing.assert_allclose(got, np.stack(heat_planes(b, 3)), rtol=1e-5)


def test_a_parallel_loop_around_mpi_calls_is_refused() -> None:
    f = _blur(23, 9, 2)
    by = _comp(f, "by")
    by.interchange("i0", "j")
    by.parallelize("j")  # legal, but the distributed loop i0 would run on worker threads
    with pytest.raises(me.TargetError, match="cannot run loop j in parallel: it holds the "
                                             "distributed loop i0"):
        f.compile(target="mpi", ranks=2)


def test_halide_pipeline_on_the_mpi_target() -> None:
    """The Halide front-end passes fp_contract to every target (Halide fuses
    multiply-adds); the mpi target takes it over the wire like the cpu one, and the
    pipeline's result equals Halide's own."""
    hl = pytest.importorskip("halide")
    from frontends.halide import compile_pipeline

    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    f = hl.Func("twice_plus")
    f[x, y] = inp[x, y] * 2.0 + inp[x, y] * inp[x, y]
    a = np.random.default_rng(5).random((6, 7), dtype=np.float32)
    inp.set(hl.Buffer(a))
    want = np.asarray(f.realize([7, 6]))
    got = compile_pipeline([f], target="mpi", ranks=2).realize(
        [7, 6], inp=a)
    np.testing.assert_allclose(got, want, rtol=1e-6)
