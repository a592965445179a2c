"""The mpi target with the number of ranks read at run time (``ranks="runtime"``): ONE
build run at 1, 2, 3 and 4 ranks (uneven blocks) against numpy, the exchanges' bytes
against the exact halo, and what such a build refuses (before codegen, or at call time
when the blocks are too small for the halo)."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from backends.mpi import target as mpi_target
from middleend.api.examples_mpi import heat2d

pytestmark = pytest.mark.mpi


@pytest.fixture(autouse=True, scope="module")
def _needs_mpi() -> None:
    from middleend.driver.targets import TargetRegistry

    a = TargetRegistry.discover().lookup("mpi").availability()
    if not a.available:  # the README's commands install MPICH's wheel: CI has it
        pytest.fail(f"mpi target unavailable: {a.detail}")


@pytest.fixture()
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The C sources of the rank programs the mpi target builds (not the launcher)."""
    seen: list[str] = []
    real = mpi_target.build_cached

    def counting(source: str, *a: object, **kw: object) -> object:
        if "me_run_job" in source:
            seen.append(source)
        return real(source, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(mpi_target, "build_cached", counting)
    return seen


def _blur(N: int, M: int) -> me.Function:
    """by = vertical mean of bx = horizontal mean of inp, every buffer distributed by
    rows, the row loops themselves distributed (no split by a block size), by reading
    the rows of bx its neighbour owns through the exchange."""
    with me.Function("rblur") as f:
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
    bx.distribute("i")
    by.distribute("i")
    by.after(bx, me.ROOT)
    me.exchange(by, bx)
    return f


def _blur_ref(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


def _blur_halo_bytes(N: int, M: int, R: int) -> int:
    """Rank r reads rows i..i+2 of bx for its rows i of by (blocks of B = ceil(N/R) rows
    for every buffer) and receives those it does not own."""
    B, rows = -(-N // R), 0
    for r in range(R):
        own = set(range(r * B, min(r * B + B, N)))
        mine = [i for i in own if i < N - 2]
        rows += len({i + d for i in mine for d in (0, 1, 2)} - own)
    return rows * (M - 2) * 3 * 4


def test_one_blur_build_runs_at_1_to_4_ranks(builds: list[str]) -> None:
    N, M = 23, 9  # blocks of 23, 12, 8 and 6 rows: uneven at 2, 3 and 4 ranks
    k = _blur(N, M).compile(target="mpi", ranks="runtime")
    assert len(builds) == 1 and k.artifact is not None
    assert k.artifact.launch["ranks"] == "runtime"
    a = np.random.default_rng(1).random((N, M, 3), dtype=np.float32)
    ref = _blur_ref(a)
    for R in (1, 2, 3, 4):
        np.testing.assert_allclose(k(inp=a, ranks=R)["by"], ref, rtol=1e-5)
        assert len(k.last_bytes_sent) == R
        assert sum(k.last_bytes_sent) == _blur_halo_bytes(N, M, R)
    assert len(builds) == 1  # no build per number of ranks
    k2 = _blur(N, M).compile(target="mpi", ranks="runtime")
    assert k2.artifact is not None and k2.artifact.file("source") == k.artifact.file("source")


def _heat_halo_bytes(N: int, R: int, T: int, M: int | None = None) -> int:
    """Per step, each rank receives the rows next to the interior rows of its block that
    it does not own (M-2 interior columns each; M = N, a square grid, by default)."""
    B, rows = -(-N // R), 0
    for r in range(R):
        own = set(range(r * B, min(r * B + B, N)))
        inner = [i for i in own if 1 <= i <= N - 2]
        rows += len({i + d for i in inner for d in (-1, 1)} - own)
    return T * rows * ((N if M is None else M) - 2) * 4


def _heat_ref(a: np.ndarray, steps: int) -> list[np.ndarray]:
    planes = [a.copy()]
    for _ in range(steps):
        ref = planes[-1]
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = (ref[1:-1, 1:-1] + ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2]
                           + ref[1:-1, 2:]) * np.float32(0.2)
        planes.append(nxt)
    return planes


@pytest.mark.parametrize("planes", [None, 2])
def test_one_heat2d_build_exchanges_the_exact_halo_at_1_to_4_ranks(
        builds: list[str], planes: int | None) -> None:
    N, T = 13, 4  # blocks of 13, 7, 5 and 4 rows
    k = heat2d(N, N, T, "runtime", planes=planes).compile(target="mpi", ranks="runtime")
    a = np.random.default_rng(2).random((N, N), dtype=np.float32)
    ref = _heat_ref(a, T)
    for R in (1, 2, 3, 4):
        got = k(u0=a, ranks=R)["u"]
        if planes is None:
            np.testing.assert_allclose(got, np.stack(ref), rtol=1e-5)
        else:
            for t in range(T - planes + 1, T + 1):
                np.testing.assert_allclose(got[t % planes], ref[t], rtol=1e-5)
        assert sum(k.last_bytes_sent) == _heat_halo_bytes(N, R, T)
    assert len(builds) == 1


def test_blocks_smaller_than_the_halo_are_a_clear_error_at_call_time() -> None:
    k = _blur(3, 5).compile(target="mpi", ranks="runtime")  # by reads 2 rows below
    a = np.random.default_rng(3).random((3, 5, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=a, ranks=2)["by"], _blur_ref(a), rtol=1e-5)
    with pytest.raises(me.KernelRuntimeError, match="fewer than the halo of 2") as e:
        k(inp=a, ranks=3)  # blocks of one row
    assert "\n" not in str(e.value)


def test_a_fixed_build_refuses_another_number_of_ranks() -> None:
    k = heat2d(6, 6, 1, 2).compile(target="mpi", ranks=2)
    a = np.zeros((6, 6), dtype=np.float32)
    with pytest.raises(me.KernelArgumentError, match="ranks='runtime'"):
        k(u0=a, ranks=3)


def test_a_split_by_a_block_size_is_refused_with_runtime_ranks() -> None:
    """The fixed form (split by ceil(N/R), the outer loop distributed) runs its iteration
    v on the rank whose block holds v: it would write what another rank owns."""
    with pytest.raises(me.ScheduleError, match="does not own"):
        heat2d(8, 8, 2, 2).compile(target="mpi", ranks="runtime")


def test_sends_and_receives_are_refused_with_runtime_ranks() -> None:
    N, M = 8, 4
    with me.Function("rsend") as f:
        q = me.Var("q", 0, 2)
        i, j = me.Var("i", 0, N), me.Var("j", 0, M)
        inp = me.Input("inp", [N, M], me.float32)
        o = me.Computation("o", [i, j], inp[i, j] * 2)
        s = me.send([q], inp[q * 4, 0], [1, M], 1 - q, "async", name="s")
        me.receive([q], inp[q * 4, 0], [1, M], 1 - q, "sync", matching=s, name="r")
    inp.distribute(0)
    o.buffer().distribute(0)
    o.distribute("i")
    with pytest.raises(me.ScheduleError, match="send or receive names its peer"):
        f.compile(target="mpi", ranks="runtime")


def test_a_reader_on_every_rank_is_refused_with_runtime_ranks() -> None:
    """A computation that is not distributed reads a distributed buffer whole: what it
    needs does not come from the neighbouring ranks only."""
    N = 8
    with me.Function("rsum") as f:
        i, z = me.Var("i", 0, N), me.Var("z", 0, 1)
        x = me.Input("x", [N], me.float64)
        y = me.Computation("y", [i], x[i] * 2)
        tot = me.Computation("tot", [z], 0.0, dtype=me.float64)
        acc = tot.update([z, i], y[i])
    x.distribute(0)
    y.buffer().distribute(0)
    y.distribute("i")
    me.exchange(acc, y)
    with pytest.raises(me.ScheduleError, match="grows with the params|nothing sends"):
        f.compile(target="mpi", ranks="runtime", outputs=["tot"])


def _lut() -> me.Function:
    """o[i] = lut[idx[i]] * 2, idx and o distributed by blocks: a rank's index out of
    bounds is known to that rank only."""
    with me.Function("rlut") as f:
        i = me.Var("i", 0, 12)
        lut = me.Input("lut", [10], me.float32)
        idx = me.Input("idx", [12], me.int32)
        o = me.Computation("o", [i], lut[idx[i]] * 2.0)
    idx.distribute(0)
    o.buffer().distribute(0)
    o.distribute("i")
    return f


def test_a_rank_failure_names_the_rank_launched_and_in_a_kept_job() -> None:
    k = _lut().compile(target="mpi", ranks="runtime")
    lut = np.arange(10, dtype=np.float32)
    good = (np.arange(12) % 10).astype(np.int32)
    bad = good.copy()
    bad[7] = -3  # rank 1's block at 3 ranks (blocks of 4)
    with pytest.raises(me.KernelRuntimeError, match="rank 1: a data-dependent index"):
        k(lut=lut, idx=bad, ranks=3)
    with k.job():
        with pytest.raises(me.KernelRuntimeError, match="rank 1: a data-dependent index"):
            k(lut=lut, idx=bad, ranks=3)
        job = k._kept
        np.testing.assert_array_equal(k(lut=lut, idx=good, ranks=3)["o"], lut[good] * 2)
        assert k._kept is job  # the ranks agreed on the failure: the job went on
        np.testing.assert_array_equal(k(lut=lut, idx=good, ranks=2)["o"], lut[good] * 2)
        assert k._kept is not job and k._kept is not None  # another R: another job


@pytest.mark.parametrize("R", [1, 4])
def test_scatter_and_gather_with_runtime_ranks(R: int) -> None:
    N, M = 23, 9
    f = _blur(N, M)
    me.scatter(next(b for b in f.buffers if b.name == "inp"), root=0)
    next(c for c in f.computations if c.name == "by").gather(root=0)
    k = f.compile(target="mpi", ranks="runtime")
    assert "MPI_Scatterv" in k.artifact.text("source")
    a = np.random.default_rng(4).random((N, M, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=a, ranks=R)["by"][:, :M - 2], _blur_ref(a), rtol=1e-5)


def test_a_distributed_loop_of_one_iteration_runs_on_the_rank_that_owns_it() -> None:
    """Three rows: the step's row loop has one iteration, which ISL prints as no loop;
    the rank whose block holds it runs it, receiving rows 0 and 2 from their owners."""
    k = heat2d(3, 5, 2, "runtime").compile(target="mpi", ranks="runtime")
    a = np.random.default_rng(5).random((3, 5), dtype=np.float32)
    for R in (1, 2, 3):
        np.testing.assert_allclose(k(u0=a, ranks=R)["u"], np.stack(_heat_ref(a, 2)),
                                   rtol=1e-5)
        assert sum(k.last_bytes_sent) == _heat_halo_bytes(3, R, 2, M=5)


def test_a_distributed_loop_beyond_the_ranks_blocks_is_a_clear_error() -> None:
    """t's loop has 2N iterations; the blocks are those of x and o (N rows)."""
    N = 6
    with me.Function("rwide") as f:
        i, w = me.Var("i", 0, N), me.Var("i", 0, 2 * N)
        x = me.Input("x", [N], me.float32)
        t = me.Computation("t", [w], 1.0, dtype=me.float32)
        o = me.Computation("o", [i], x[i] + t[i])
    x.distribute(0)
    o.buffer().distribute(0)
    t.distribute("i")
    o.distribute("i")
    o.after(t, me.ROOT)
    k = f.compile(target="mpi", ranks="runtime")
    with pytest.raises(me.KernelRuntimeError, match=r"loop i has iterations 0\.\.11, "
                       r"beyond the blocks of 3 that 2 ranks own"):
        k(x=np.ones(N, np.float32), ranks=2)


def test_the_command_line_takes_ranks_runtime() -> None:
    from middleend.api.cli import _option_value

    assert _option_value("mpi", "ranks=runtime") == ("ranks", "runtime")
    assert _option_value("mpi", "ranks=3") == ("ranks", 3)
    with pytest.raises(SystemExit, match="takes a int"):
        _option_value("mpi", "ranks=many")
