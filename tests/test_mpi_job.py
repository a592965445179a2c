"""mpi kernels called inside a running MPI job (mpi4py under mpiexec): they run in-process
on the job's ranks, the root's whole arrays scattered and gathered (MPI_Scatterv /
MPI_Gatherv), checked against numpy by tests/mpi_in_job.py at 1-4 ranks; and a job kept
up between calls (``with k.job()``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_mpi import heat_planes

from middleend.api.examples_mpi import heat2d

pytestmark = pytest.mark.mpi

SCRIPT = Path(__file__).with_name("mpi_in_job.py")
ROOT = Path(__file__).parents[1]


def _in_job(case: str, R: int) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mpi4py", reason="the README's commands install mpi4py (mpi extra)")
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.is_file():
        pytest.fail(f"no mpiexec beside {sys.executable} (pip install mpich)")
    cmd = [str(mpiexec), "-launcher", "fork", "-n", str(R), sys.executable, "-m", "mpi4py",
           str(SCRIPT), case, str(R)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env, stdin=subprocess.DEVNULL, check=False)


def _ok(case: str, R: int) -> None:
    p = _in_job(case, R)
    assert p.returncode == 0 and f"ok {case}" in p.stdout, (p.stdout + p.stderr)[-3000:]


@pytest.mark.parametrize("R", [1, 2, 3, 4])
def test_heat2d_in_a_running_job_scatters_and_gathers_strided_blocks(R: int) -> None:
    _ok("heat", R)


def test_matmul_in_a_running_job_broadcasts_what_is_not_distributed() -> None:
    _ok("matmul", 3)


def test_explicit_sends_and_receives_in_a_running_job() -> None:
    _ok("explicit", 3)


def test_parallel_loops_on_threads_in_a_running_job() -> None:
    _ok("threads", 2)


def test_two_kernels_side_by_side_on_their_own_communicators() -> None:
    _ok("split", 4)


def test_a_gather_to_another_root_in_a_running_job() -> None:
    _ok("rooted", 3)


@pytest.mark.parametrize("R", [2, 3])
def test_ranks_read_at_run_time_and_a_rank_failure_on_every_rank_in_a_job(R: int) -> None:
    _ok("runtime", R)


def test_a_kernel_for_another_number_of_ranks_is_refused_in_a_job() -> None:
    _ok("wrong-ranks", 2)


@pytest.mark.parametrize("R", [1, 2, 3])
def test_a_kept_job_answers_several_calls(R: int) -> None:
    """``with k.job()``: one job for the calls inside, ended on leaving the block; a job
    that died is started again at the next call."""
    k = heat2d(12, 12, 3, R).compile(target="mpi", ranks=R)
    with k.job():
        for s in range(2):
            a = np.random.default_rng(s).random((12, 12), dtype=np.float32)
            np.testing.assert_allclose(k(u0=a)["u"], np.stack(heat_planes(a, 3)), rtol=1e-5)
        job = k._kept
        assert job is not None and job.alive
        os.killpg(job.proc.pid, signal.SIGKILL)  # the job dies between two calls
        job.proc.wait()
        np.testing.assert_allclose(k(u0=a)["u"], np.stack(heat_planes(a, 3)), rtol=1e-5)
        again = k._kept
        assert again is not None and again is not job
    assert k._kept is None and again.proc.poll() is not None  # nothing left running
