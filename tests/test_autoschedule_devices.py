"""``auto_schedule`` for the device targets: the gpu target's block/thread mapping (run here
as OpenCL kernels on PoCL's CPU device) and the mpi target's distribution of the
outermost parallel loop, with the buffers and halo exchanges that follow (run at 1-3
ranks), the fpga target's pipelines (C-simulated, ranked by its latency model); results
against numpy, and the programs they cannot map refused in one line.
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


@pytest.mark.fpga
@pytest.mark.parametrize("name", ["scale", "cvtColor", "sobel", "gaussian"])
def test_fpga_pipelines_the_paper_kernels(name: str) -> None:
    """Unscheduled, each kernel gets pipelined, vectorized loops whose C-simulation equals
    numpy, and the latency model puts it at least as fast as both hand schedules."""
    from test_fpga import reference

    from middleend.api import examples_fpga as fx

    img = np.random.default_rng(5).integers(0, 256, (21, 70, 3), dtype=np.uint8)
    f = fx.KERNELS[name]("none")
    chosen = f.auto_schedule(target="fpga", estimates={"N": 384, "M": 512})
    assert any(isinstance(c, cmd.Pipeline) for c in chosen.commands)
    assert "latency model" in str(chosen)
    k = f.compile(target="fpga")
    (out,) = k(inp=img).values()
    np.testing.assert_array_equal(out, reference(name, img))
    hand = [fx.KERNELS[name](s).compile(target="fpga").estimate(N=384, M=512)
            for s in fx.SCHEDULES]
    assert k.estimate(N=384, M=512) <= min(hand)


def _gemv(name: str) -> me.Function:
    with me.Function(name) as f:
        n, m = me.Param("N", min=1), me.Param("M", min=1)
        i, j = me.Var("i", 0, n), me.Var("j", 0, m)
        a, v = me.Input("A", [n, m], me.float32), me.Input("v", [m], me.float32)
        y = me.Computation("y", [i], me.cast(me.float32, 0))
        y.update([i, j], a[i, j] * v[j], name="yacc", at=[i])
    return f


@pytest.mark.fpga
def test_fpga_moves_the_accumulation_out_of_the_pipeline() -> None:
    """A matrix-vector product: the row loop is pipelined at II 1 inside the sum's loop
    (pipelining the sum's own loop needs the adder's latency as its II); a running sum,
    with no other loop, is pipelined at the II its recurrence allows."""
    f = _gemv("fgemv")
    f.auto_schedule(target="fpga", estimates={"N": 256, "M": 256})
    piped = [c for c in f.commands.items if isinstance(c, cmd.Pipeline) and c.comp == "yacc"]
    assert piped and piped[0].dim == "i" and piped[0].ii == 1
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (23, 17)).astype(np.float32)
    v = rng.integers(-3, 4, 17).astype(np.float32)
    k = f.compile(target="fpga")
    np.testing.assert_array_equal(k(A=a, v=v)["y"], a @ v)
    plain = _gemv("fgemv_plain").compile(target="fpga")
    assert k.estimate(N=256, M=256) < plain.estimate(N=256, M=256)
    with me.Function("frsum") as g:
        n = me.Param("N", min=1)
        i, z = me.Var("i", 0, n), me.Var("z", 0, 1)
        x = me.Input("x", [n], me.float32)
        s = me.Computation("s", [z], me.cast(me.float32, 0))
        s.update([i], x[i], at=[0], name="acc")
    g.auto_schedule(target="fpga")
    (acc,) = [c for c in g.commands.items if isinstance(c, cmd.Pipeline) and c.comp == "acc"]
    assert acc.ii > 1  # the adder's latency: distance 1
    xs = np.arange(300, dtype=np.float32) / 7
    np.testing.assert_allclose(g.compile(target="fpga")(x=xs)["s"],
                               [np.cumsum(xs, dtype=np.float32)[-1]], rtol=1e-6)


def test_an_unknown_target_is_refused_in_one_line() -> None:
    mm = examples.matmul("umm")
    with pytest.raises(me.MiddleEndError) as info:
        mm.fn.auto_schedule(target="tpu")
    assert str(info.value) == "unknown target 'tpu' (registered targets: cpu, fpga, gpu, mpi)"


@pytest.mark.fpga
def test_fpga_auto_schedule_of_a_halide_pipeline() -> None:
    pytest.importorskip("halide")
    from frontends.halide import compile_pipeline, paper

    b = paper.blurxy(40, 150)
    (funcs, sizes), = b.groups
    k = compile_pipeline(funcs, target="fpga", schedule="auto")
    ours = k.realize(sizes, **b.inputs)
    (ref,) = b.halide_realize()
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-5, atol=1e-5)
    assert ".pipeline(" in k.auto_schedule(sizes, **b.inputs)
