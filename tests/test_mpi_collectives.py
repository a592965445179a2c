"""Scatter from and gather to a root rank as Layer IV operations (``me.scatter`` /
``me.gather``, MPI_Scatterv / MPI_Gatherv with uneven blocks) on the mpi target, against
numpy at 1-4 ranks; their placement checked before codegen."""

from __future__ import annotations

import numpy as np
import pytest
from test_mpi import _blur, _blur_ref, heat_planes

import middleend as me
from middleend.api.examples_mpi import heat2d

pytestmark = pytest.mark.mpi


def _named(items: list, name: str):  # type: ignore[no-untyped-def]
    return next(x for x in items if x.name == name)


def _blur_at_root(N: int, M: int, R: int, root: int) -> tuple[me.Function, me.Operation,
                                                               me.Operation]:
    f = _blur(N, M, R)
    sc = me.scatter(_named(f.buffers, "inp"), root=root)
    ga = _named(f.computations, "by").gather(root=root)
    return f, sc, ga


@pytest.mark.parametrize("R,root", [(1, 0), (2, 1), (3, 2), (4, 0)])
def test_blur_scattered_from_and_gathered_to_a_root(R: int, root: int) -> None:
    N, M = 23, 9  # blocks of 12, 8, 6 rows: the last rank's is shorter
    f, _, _ = _blur_at_root(N, M, R, root)
    k = f.compile(target="mpi", ranks=R)
    src = k.artifact.text("source")
    assert "MPI_Scatterv" in src and "MPI_Gatherv" in src
    a = np.random.default_rng(R).random((N, M, 3), dtype=np.float32)
    out = k(inp=a)["by"]
    np.testing.assert_allclose(out[:, :M - 2], _blur_ref(a), rtol=1e-6)
    assert not out[:, M - 2:].any()  # what no rank computes stays zero
    layer4 = f.layers().split("== Layer IV")[1]
    assert f"scatter scatter_inp: inp.scatter(name='scatter_inp', root={root})" in layer4
    assert "gather gather_by" in layer4


@pytest.mark.parametrize("R", [2, 3])
def test_heat2d_gathered_along_its_second_dimension(R: int) -> None:
    """u[t, i, j] is distributed along i: each rank's block is a strided set of rows."""
    N, T = 11, 3
    f = heat2d(N, N, T, R)
    me.gather(_named(f.buffers, "u"), root=R - 1)
    k = f.compile(target="mpi", ranks=R)
    a = np.random.default_rng(60 + R).random((N, N), dtype=np.float32)
    np.testing.assert_allclose(k(u0=a)["u"], np.stack(heat_planes(a, T)), rtol=1e-5)


def test_a_scatter_after_a_read_of_its_buffer_is_refused() -> None:
    f, sc, _ = _blur_at_root(12, 6, 2, 0)
    sc.after(_named(f.computations, "bx"), me.ROOT)
    with pytest.raises(me.ScheduleError, match=r"scatter 'scatter_inp': runs after "
                                               r"bx\[.*\] accesses 'inp'") as e:
        f.compile(target="mpi", ranks=2)
    assert e.value.command is not None and "after" in e.value.command


def test_a_gather_before_a_write_of_its_buffer_is_refused() -> None:
    f, _, ga = _blur_at_root(12, 6, 2, 0)
    ga.before(_named(f.computations, "by"), me.ROOT)
    with pytest.raises(me.ScheduleError, match=r"gather 'gather_by': runs before by\[.*\] "
                                               r"writes 'by'"):
        f.compile(target="mpi", ranks=2)


def test_a_scatter_before_the_exchange_of_its_buffer_is_required() -> None:
    """bx is a temporary: nothing to scatter (only inputs are), said in one line."""
    f = _blur(12, 6, 2)
    me.scatter(_named(f.computations, "bx"))
    with pytest.raises(me.ScheduleError, match="'bx' is temporary; a scatter moves an input"):
        f.compile(target="mpi", ranks=2)


def test_a_root_that_is_not_a_rank_and_an_undistributed_buffer_are_refused() -> None:
    f, _, _ = _blur_at_root(12, 6, 2, 2)
    with pytest.raises(me.ScheduleError, match="root 2 is not a rank"):
        f.compile(target="mpi", ranks=2)
    with me.Function("plain") as g:
        i = me.Var("i", 0, 8)
        a = me.Input("a", [8], me.float32)
        o = me.Computation("o", [i], a[i] * 2)
    me.scatter(a)
    o.split(i, 4, "i0", "i1")
    with pytest.raises(me.ScheduleError, match="'a' is not distributed"):
        g.compile(target="mpi", ranks=2)
    with pytest.raises(me.DefinitionError, match="root must be a rank"):
        me.scatter(a, root=-1)


def test_the_cpu_target_refuses_a_scatter() -> None:
    f, _, _ = _blur_at_root(12, 6, 2, 0)
    with pytest.raises(me.TargetError):
        f.compile(target="cpu")


def test_scatter_and_gather_go_through_the_service() -> None:
    from middleend.service.client import compile_via

    f, _, _ = _blur_at_root(16, 6, 3, 1)
    k = compile_via(f, None, target="mpi", ranks=3)
    assert "MPI_Scatterv" in k.artifact.text("source")
    a = np.random.default_rng(5).random((16, 6, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=a)["by"][:, :4], _blur_ref(a), rtol=1e-6)
