"""The CPU kernels' thread pool (backends/cpu/pool.py): parallel loops give numpy's results
with 1, 2, 3 and 8 threads, inside tiles with private buffers, when two Python threads call
the same kernel at once (the second loop runs in its caller), and an out-of-bounds read in
a worker thread is still reported.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import middleend as me
from middleend.api import examples


def _blur_tiled() -> me.Function:
    """The blur of Figure 3-(b) tiled, ``bx`` per tile in a private buffer, tiles parallel."""
    b = examples.blur((37, 53))
    with b.fn:
        b.by.tile("i", "j", 8, 16, "i0", "j0", "i1", "j1")
        b.by.parallelize("i0")
        b.bx.compute_at(b.by, "j0")
        b.bx.allocate_at(b.by, "j0")
    return b.fn


def _blur_ref(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


@pytest.mark.parametrize("threads", ["1", "2", "3", "8"])
def test_results_do_not_depend_on_the_thread_count(threads: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIDDLEEND_NUM_THREADS", threads)
    k = _blur_tiled().compile()
    a = np.random.default_rng(1).random((37, 53, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=a)["by"], _blur_ref(a), rtol=1e-6)
    assert "me_parallel_for(" in k.source and "omp parallel" not in k.source


def test_two_callers_at_once() -> None:
    k = _blur_tiled().compile()
    rng = np.random.default_rng(2)
    inputs = [rng.random((37, 53, 3), dtype=np.float32) for _ in range(4)]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def call(n: int) -> None:
        try:
            for _ in range(20):
                results[n] = k(inp=inputs[n])["by"]
        except BaseException as exc:  # reported below, on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for n in range(4):
        np.testing.assert_allclose(results[n], _blur_ref(inputs[n]), rtol=1e-6)


def test_out_of_bounds_in_a_worker_is_reported() -> None:
    with me.Function("pgather") as f:
        i = me.Var("i", 0, 4096)
        idx = me.Input("idx", [4096], me.int32)
        tab = me.Input("tab", [16], me.float32)
        g = me.Computation("g", [i], tab[idx[i]])
        g.split("i", 64, "io", "ii")
        g.parallelize("io")
    k = f.compile()
    tab = np.arange(16, dtype=np.float32)
    idx = (np.arange(4096) % 16).astype(np.int32)
    np.testing.assert_array_equal(k(idx=idx, tab=tab)["g"], tab[idx])
    idx[4000] = 99  # read by the last tiles, which a worker may take
    with pytest.raises(me.KernelRuntimeError, match="out of bounds"):
        k(idx=idx, tab=tab)


@pytest.mark.parametrize("threads", ["1", "2", "3", "8"])
def test_every_iteration_runs_once_for_any_count(threads: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread starts on its own share of consecutive iterations and then takes what
    is left of the others', more iterations per take while takes are short: for loop
    lengths below, at and above the thread count, not multiples of it, and long enough
    for takes of thousands, every iteration runs (a skipped one would leave its row of the
    NaN-filled output as it was) before the call returns, call after call."""
    monkeypatch.setenv("MIDDLEEND_NUM_THREADS", threads)
    with me.Function("shares") as f:
        n = me.Param("N")
        i, j = me.Var("i", 0, n), me.Var("j", 0, 4)
        a = me.Input("a", [n, 4], me.float32)
        acc = me.Computation("acc", [i, j], a[i, j] * 2 + 1)
        acc.parallelize("i")
    k = f.compile()
    rng = np.random.default_rng(7)
    for count in (1, 2, 3, 5, 7, 8, 9, 64, 257, 100003):
        x = rng.random((count, 4), dtype=np.float32)
        for _ in range(20):
            out = np.full((count, 4), np.nan, np.float32)
            k(a=x, acc=out, N=count)
            np.testing.assert_array_equal(out, x * np.float32(2) + 1)
    assert "me_parallel_for(" in k.source
