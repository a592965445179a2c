"""Run under ``mpiexec -n R python tests/mpi_in_job.py <case> <ranks>`` by tests/test_mpi_job.py:
a script that initialised MPI with mpi4py calls mpi kernels like cpu ones, on every rank;
the kernels run in-process on MPI_COMM_WORLD (no second mpiexec), with the root's whole
arrays scattered and the results gathered back to the root, which checks them against
numpy. Prints ``ok <case>`` on the root when every check holds; any failure exits
non-zero (an exception on one rank aborts the job)."""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

import middleend as me
from middleend.api.examples_mpi import heat2d, matmul_rows


def heat_ref(a: np.ndarray, steps: int) -> np.ndarray:
    planes = [a]
    for _ in range(steps):
        u = planes[-1].copy()
        p = planes[-1]
        u[1:-1, 1:-1] = (p[1:-1, 1:-1] + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2]
                         + p[1:-1, 2:]) * np.float32(0.2)
        planes.append(u)
    return np.stack(planes)


def main(case: str, R: int) -> None:
    comm = MPI.COMM_WORLD
    assert comm.Get_size() == R, (comm.Get_size(), R)
    root = comm.Get_rank() == 0
    rng = np.random.default_rng(7)  # the same arrays on every rank; the root's are used
    if case == "heat":
        # distributed along rows of u[t, i, j]: strided blocks, uneven at 3 and 4 ranks
        N, T = 11, 3
        k = heat2d(N, N, T, R).compile(target="mpi", ranks=R)
        a = rng.random((N, N), dtype=np.float32)
        for _ in range(2):  # a second call reuses the loaded kernel
            got = k(u0=a)["u"]
            if root:
                np.testing.assert_allclose(got, heat_ref(a, T), rtol=1e-5)
        assert len(k.last_bytes_sent) == R
    elif case == "matmul":
        n, m, p = 9, 6, 5
        k = matmul_rows(n, m, p, R, "jmm").compile(target="mpi", ranks=R)
        a, b = rng.random((n, m)), rng.random((m, p))
        if not root:
            a, b = np.zeros_like(a), np.zeros_like(b)  # only the root's arrays count
        got = k(A=a, B=b)["C"]
        if root:
            np.testing.assert_allclose(got, a @ b, rtol=1e-12)
        else:
            assert not got.any()  # the other ranks' outputs are zeros
    elif case == "rooted":
        # me.scatter / me.gather with the last rank as root: its arrays are the ones used
        N, T = 10, 2
        f = heat2d(N, N, T, R)
        me.gather(next(b for b in f.buffers if b.name == "u"), root=R - 1)
        k = f.compile(target="mpi", ranks=R)
        a = rng.random((N, N), dtype=np.float32)
        got = k(u0=a)["u"]
        if comm.Get_rank() == R - 1:
            np.testing.assert_allclose(got, heat_ref(a, T), rtol=1e-5)
        else:
            assert not got.any()
    elif case == "threads":
        # a parallel loop inside each rank: the cpu thread pool, in the caller's process
        N, T = 12, 3
        f = heat2d(N, N, T, R)
        next(c for c in f.computations if c.name == "step").parallelize("j")
        k = f.compile(target="mpi", ranks=R)
        assert "me_parallel_for(" in k.artifact.text("source")
        a = rng.random((N, N), dtype=np.float32)
        got = k(u0=a)["u"]
        if root:
            np.testing.assert_allclose(got, heat_ref(a, T), rtol=1e-5)
    elif case == "split":
        # two jobs of R // 2 ranks side by side, each on its own communicator (k.comm)
        sub = comm.Split(comm.Get_rank() % 2, comm.Get_rank())
        half = sub.Get_size()
        k = heat2d(9, 9, 2, half).compile(target="mpi", ranks=half)
        k.comm = sub
        a = np.random.default_rng(comm.Get_rank() % 2).random((9, 9), dtype=np.float32)
        got = k(u0=a)["u"]
        if sub.Get_rank() == 0:
            np.testing.assert_allclose(got, heat_ref(a, 2), rtol=1e-5)
        sub.Free()
    elif case == "explicit":
        # the papers' Figure 3-(c): explicit sends and receives between the ranks
        from test_mpi import _explicit_blur

        N, M = 22, 7
        k = _explicit_blur(N, M, R).compile(target="mpi", ranks=R)
        a = rng.random((N, M, 3), dtype=np.float32)
        got = k(inp=a)["out"]
        if root:
            ref = (a[:-2] + a[1:-1] + a[2:]) / np.float32(3)
            np.testing.assert_allclose(got[:N - 2], ref, rtol=1e-6)
        assert k.last_bytes_sent == [0] + [2 * M * 3 * 4] * (R - 1)
    elif case == "runtime":
        # ranks read at run time: the job's; a rank's bad index raises on every rank
        N, T = 11, 3
        k = heat2d(N, N, T, "runtime").compile(target="mpi", ranks="runtime")
        a = rng.random((N, N), dtype=np.float32)
        got = k(u0=a)["u"]
        if root:
            np.testing.assert_allclose(got, heat_ref(a, T), rtol=1e-5)
        assert len(k.last_bytes_sent) == R
        with me.Function("jlut") as f:
            i = me.Var("i", 0, 12)
            lut = me.Input("lut", [10], me.float32)
            idx = me.Input("idx", [12], me.int32)
            o = me.Computation("o", [i], lut[idx[i]] * 2.0)
        idx.distribute(0)
        o.buffer().distribute(0)
        o.distribute("i")
        k = f.compile(target="mpi", ranks="runtime")
        lut_a = np.arange(10, dtype=np.float32)
        good = (np.arange(12) % 10).astype(np.int32)
        bad = good.copy()
        bad[11] = 99  # in the last rank's block
        try:
            k(lut=lut_a, idx=bad)
        except me.KernelRuntimeError as exc:  # on every rank, naming the failing one
            assert f"rank {R - 1}: a data-dependent index was out of bounds" in str(exc), exc
        else:
            raise AssertionError("an out-of-bounds index did not raise")
        got = k(lut=lut_a, idx=good)["o"]  # the job goes on
        if root:
            np.testing.assert_array_equal(got, lut_a[good] * 2)
        try:
            k(lut=lut_a, idx=good, ranks=R + 1)
        except me.KernelRuntimeError as exc:  # not the job's size: refused on every rank
            assert f"built or called for {R + 1}" in str(exc), exc
        else:
            raise AssertionError("a call for another number of ranks ran in the job")
    elif case == "wrong-ranks":
        k = heat2d(6, 6, 1, R + 1).compile(target="mpi", ranks=R + 1)
        try:
            k(u0=np.zeros((6, 6), np.float32))
        except me.KernelRuntimeError as exc:
            assert f"built or called for {R + 1}" in str(exc), exc
        else:
            raise AssertionError("a kernel for another number of ranks ran")
        # ranks that pass other parameters: refused on every rank, nothing runs
        with me.Function("jsc") as f:
            n = me.Param("n")
            i = me.Var("i", 0, n)
            x = me.Input("x", [n], me.float64)
            me.Computation("y", [i], x[i] * 2)
        k = f.compile(target="mpi", ranks=R)
        try:
            k(x=np.ones(4 + comm.Get_rank()))
        except me.KernelArgumentError as exc:
            assert "the ranks disagree on the parameters" in str(exc), exc
        else:
            raise AssertionError("ranks with different shapes ran")
    else:
        raise SystemExit(f"unknown case {case!r}")
    comm.Barrier()
    if root:
        print(f"ok {case}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
