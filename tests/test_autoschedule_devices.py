"""``auto_schedule`` for the device targets: the gpu target's block/thread mapping (run here
as OpenCL kernels on PoCL's CPU device) and the mpi target's distribution of the
outermost parallel loop, with the buffers and halo exchanges that follow (run at 1-3
ranks); results against numpy, and the programs they cannot map refused in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_heat import heat2d_ref

import middleend as me
from middleend.api import examples
from middleend.ir import commands as cmd


def _blur_ref(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


@pytest.fixture
def opencl() -> None:
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")


@pytest.mark.parametrize("est", [16, 512])
def test_gpu_blur_and_matmul(opencl: None, est: int) -> None:
    rng = np.random.default_rng(est)
    b = examples.blur()
    b.fn.auto_schedule(target="gpu", estimates={"N": est, "M": est})
    assert any(isinstance(c, (cmd.TileGpu, cmd.Gpu)) for c in b.fn.commands.items)
    a = rng.random((19, 37, 3)).astype(np.float32)
    k = b.fn.compile(target="gpu", dialect="opencl")
    np.testing.assert_allclose(k(inp=a)["by"], _blur_ref(a), rtol=1e-5, atol=1e-6)
    mm = examples.matmul("gmm")
    mm.fn.auto_schedule(target="gpu", estimates={"N": est, "K": est, "M": est})
    x = rng.integers(-3, 4, (21, 13)).astype(np.float32)
    y = rng.integers(-3, 4, (13, 17)).astype(np.float32)
    got = mm.fn.compile(target="gpu", dialect="opencl")(A=x, B=y)["C"]
    np.testing.assert_array_equal(got, x @ y)


def test_gpu_heat2d_keeps_the_time_loop_on_the_host(opencl: None) -> None:
    h = examples.heat2d("gheat")
    chosen = h.fn.auto_schedule(target="gpu", estimates={"T": 4, "N": 256, "M": 256})
    maps = [c for c in chosen.commands if c.comp == "h" and isinstance(c, cmd.TileGpu)]
    assert maps and "t" not in (maps[0].i, maps[0].j)
    a = np.random.default_rng(1).random((11, 14)).astype(np.float32)
    buf = h.fn.compile(target="gpu", dialect="opencl")(inp=a, T=3)["buf"]
    np.testing.assert_allclose(buf[3 % 2], heat2d_ref(a, 3), rtol=1e-5, atol=1e-6)


def test_gpu_refuses_a_statement_without_a_parallel_loop() -> None:
    with me.Function("prefix") as f:
        n = me.Param("N", min=2)
        z, i = me.Var("z", 0, 1), me.Var("i", 1, n)
        x = me.Input("x", [n], me.float32)
        b = me.Buffer("b", [n], me.float32, kind="output")
        first = me.Computation("first", [z], x[z])
        first.store_in(b, [z])
        s = me.Computation("s", [i], b[i - 1] + x[i])  # a running sum: each i needs i - 1
        s.store_in(b, [i])
    with pytest.raises(me.ScheduleError, match="s has no loop without a dependence") as e:
        f.auto_schedule(target="gpu")
    assert "\n" not in str(e.value).split("\n  computations")[0]


@pytest.mark.mpi
@pytest.mark.parametrize("R", [1, 3])
def test_mpi_blur_distributed_with_its_halo(R: int) -> None:
    b = examples.blur((23, 9))
    chosen = b.fn.auto_schedule(target="mpi", ranks=R)
    assert any(isinstance(c, cmd.Distribute) for c in chosen.commands)
    assert any(isinstance(c, cmd.Exchange) for c in chosen.commands)
    a = np.random.default_rng(R).random((23, 9, 3)).astype(np.float32)
    out = b.fn.compile(target="mpi", ranks=R)(inp=a)["by"]
    np.testing.assert_allclose(out, _blur_ref(a), rtol=1e-5, atol=1e-6)
    # the same through the wire switch: the service distributes for the ranks asked
    k = examples.blur((23, 9)).fn.compile(target="mpi", ranks=R, schedule="auto")
    assert "distribute" in k.auto_schedule
    np.testing.assert_allclose(k(inp=a)["by"], _blur_ref(a), rtol=1e-5, atol=1e-6)


def test_mpi_needs_its_ranks() -> None:
    with pytest.raises(me.DefinitionError, match="give ranks="):
        examples.blur((23, 9)).fn.auto_schedule(target="mpi")


def test_fpga_has_no_automatic_mapping_yet() -> None:
    mm = examples.matmul("fmm")
    with pytest.raises(me.DefinitionError, match="no automatic schedule for the 'fpga'"):
        mm.fn.auto_schedule(target="fpga")
