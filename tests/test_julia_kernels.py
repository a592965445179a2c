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


def _with_schedule(name: str, directives: str) -> str:
    """kernels.jl with ``name``'s @schedule block replaced by ``directives``."""
    head = f"@acc function {name}("
    start = SRC.index(head)
    a = SRC.index("@schedule begin", start)
    b = SRC.index("    end\n", a) + len("    end\n")
    return SRC[:a] + f"@schedule begin\n{directives}\n    end\n" + SRC[b:]


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
