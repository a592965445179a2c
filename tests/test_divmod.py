"""Subscripts with ``// d`` and ``% d`` worked out from the loops (backends/clike/divmod.py):
a packed layout read in vectorized loops has no division left, and every schedule still
gives numpy's result, including those where the remainder crosses a multiple of ``d``
(where the division must stay)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import middleend as me

N, M = 37, 44  # neither a multiple of the panel width
W = 6  # not a power of two: a power of two is a shift and a mask anyway


def _packed(schedule: Callable[[me.Computation, me.Computation], None]
            ) -> tuple[me.Function, me.Computation, me.Computation]:
    """``p`` packs ``a`` into panels of W columns (``P[j // W, i, j % W]``); ``out`` reads
    it back, shifted by 3 columns (a remainder that crosses panels)."""
    with me.Function("panels") as f:
        i, j = me.Var("i", 0, N), me.Var("j", 0, M)
        jo = me.Var("j", 0, M - 3)
        a = me.Input("a", [N, M], me.float32)
        p = me.Computation("p", [i, j], a[i, j] * 2)
        p.store_in(me.Buffer("P", [(M + W - 1) // W, N, W], me.float32), [j // W, i, j % W])
        out = me.Computation("out", [i, jo], p[i, jo] + p[i, jo + 3])
    schedule(p, out)
    return f, p, out


def _vectorized(p: me.Computation, out: me.Computation) -> None:
    p.vectorize("j", W)
    out.vectorize("j", W)


def _split_by_4(p: me.Computation, out: me.Computation) -> None:
    p.split("j", 4, "j0", "j1")  # a remainder over [0, 4) in panels of 6: kept exact
    out.unroll("i", 3)


SCHEDULES = {"none": lambda p, out: None, "vectorized": _vectorized,
             "split by 4": _split_by_4}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_packed_layout_matches_numpy(name: str) -> None:
    f, _, _ = _packed(SCHEDULES[name])
    k = f.compile()
    a = np.random.default_rng(1).random((N, M), dtype=np.float32)
    want = 2 * a[:, :M - 3] + 2 * a[:, 3:]
    np.testing.assert_allclose(k(a=a)["out"], want, rtol=1e-6)


def test_vectorized_panels_have_no_division() -> None:
    """Vectorized by the panel width, ``j = W * t + lane``: ``j // W`` is ``t`` and ``j %
    W`` the lane, printed without a call to me_fdiv_i64 / me_fmod_i64."""
    f, _, _ = _packed(_vectorized)
    src = f.compile().source
    pack = next(line for line in src.splitlines() if "b_P[" in line and "= (" in line)
    assert "me_fdiv_i64" not in pack and "me_fmod_i64" not in pack
    reads = next(line for line in src.splitlines() if "b_out[" in line and "= (" in line)
    assert reads.count("me_fdiv_i64") == 1  # jo // W is the counter; (jo + 3) // W is not
