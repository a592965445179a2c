"""Updates that read their own Func outside the region its consumers need.

``f[x, r] = f[x, r - 1] + 1`` from ``r = 0`` reads ``f[x, -1]``: Halide computes the pure
definition over that row too (the region of a Func grows by what its updates read of it,
as by what they write). Each pipeline is compared with Halide's own realize: intermediate
Funcs (compute_root, compute_at) and outputs, whose buffers Halide's bounds query sizes
over the grown region while ``realize(sizes)`` returns the realized part.
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest
from halide_util import check, halide_realize

from frontends.halide import compile_pipeline
from middleend.ir.errors import KernelArgumentError

x, y = hl.Var("x"), hl.Var("y")


def _consumed(f: hl.Func, how: str, pure: hl.Var = x) -> hl.Func:
    """``f`` itself (``how == "output"``) or a consumer of it with ``f`` scheduled so
    (``root_vec``: its first update vectorized along its pure Var ``pure``)."""
    if how == "output":
        return f
    g = hl.Func("g")
    g[x, y] = f[x, y] * 2 + 1
    if how == "root":
        f.compute_root()
    elif how == "root_vec":
        f.compute_root()
        f.update(0).vectorize(pure, 4)
    else:
        f.compute_at(g, y)
    return g


HOWS = ["output", "root", "root_vec", "at"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("off", [-1, 1, -3, 2])
def test_scan_reads_beyond_the_rdom(off: int, how: str) -> None:
    """``f[x, r] = f[x, r + off] + 1``: rows below 0 (off < 0) or past the last one."""
    f = hl.Func("f")
    r = hl.RDom([(0, 6)], "r")
    f[x, y] = x + 10 * y
    f[x, r] = f[x, r + off] + 1
    check(_consumed(f, how), [5, 6])


@pytest.mark.parametrize("how", HOWS)
def test_rdom_in_the_first_dim(how: str) -> None:
    """The RDom walks dimension 0 (``y`` stays pure), reading two columns either side."""
    f = hl.Func("f")
    r = hl.RDom([(0, 5)], "r")
    f[x, y] = x * 3 - y
    f[r, y] = f[r - 2, y] * 2 + f[r + 1, y]
    check(_consumed(f, how, y), [5, 4])


@pytest.mark.parametrize("how", HOWS)
def test_constant_index_in_a_pure_dim(how: str) -> None:
    """``f[x, 1] = f[x, 7] + f[x, -2]``: rows 7 and -2 lie outside the 3 rows realized."""
    f = hl.Func("f")
    f[x, y] = x + 100 * y
    f[x, 1] = f[x, 7] + f[x, -2]
    check(_consumed(f, how), [4, 3])


@pytest.mark.parametrize("how", HOWS)
def test_several_updates(how: str) -> None:
    """Three updates, in both dimensions, each reading beyond what the one before wrote."""
    f = hl.Func("f")
    r, s = hl.RDom([(0, 6)], "r"), hl.RDom([(0, 4)], "s")
    f[x, y] = x + 10 * y
    f[x, r] = f[x, r - 1] + 1
    f[s, y] = f[s - 1, y] * 2 + f[s + 2, y]
    f[x, r] = f[x, r + 3] - f[x, r]
    check(_consumed(f, how), [5, 6])


@pytest.mark.parametrize("how", ["output", "root", "at"])
def test_growth_that_widens_an_earlier_update(how: str) -> None:
    """The second update grows dimension 0 to -1, so the first one (pure in x) runs at
    x = -1 too and reads ``f[-1, -1]`` (its index ``x`` in dimension 1): the region
    holds still only after a second pass over the updates (Halide computes it)."""
    f = hl.Func("f")
    r = hl.RDom([(0, 4)], "r")
    f[x, y] = x * 7 + y
    f[x, 0] = f[x, 0] + f[x, x]
    f[r, y] = f[r - 1, y] + 1
    check(_consumed(f, how), [4, 3])


def test_tuple_update_reads_its_own_elements() -> None:
    """A Tuple Func whose update reads both elements one row back."""
    f = hl.Func("ft")
    r = hl.RDom([(0, 5)], "r")
    f[x, y] = (x + y, x * y)
    f[x, r] = (f[x, r - 1][1] + 1, f[x, r - 1][0] - f[x, r][1])
    check(f, [4, 5])


def test_histogram_output_writes_outside_its_region() -> None:
    """An output whose update writes bins outside the realized region (refused before):
    Halide computes them and returns the realized bins."""
    h = hl.Func("h")
    r = hl.RDom([(0, 8)], "r")
    h[x] = 0
    h[r % 7] = h[r % 7] + r
    check(h, [4])


@pytest.mark.parametrize("order", ["ut", "tu"])
def test_outputs_returned_as_halide_crops_them(order: str) -> None:
    """``t`` grows by its own update's reads and by ``u``'s; ``realize(sizes)`` crops
    every output to the realized region when the first one's region differs from it:
    ``[u, t]`` returns ``t`` whole, ``[t, u]`` returns both realized."""
    t, u = hl.Func("t"), hl.Func("u")
    r = hl.RDom([(0, 6)], "r")
    t[x] = x * 10
    t[r.x] = t[r.x - 2] + 1
    u[x] = t[x + 1] * 2
    outs = [u, t] if order == "ut" else [t, u]
    k = check(outs, [6])
    want = [[(0, 6)], [(-2, 9)]] if order == "ut" else [[(0, 6)], [(0, 6)]]
    assert [list(reg) for reg in k.output_regions([6])] == want


def test_out_arrays_of_an_output_that_grows() -> None:
    """``out=`` of the realized shape is refused, as Halide refuses such a buffer ("is
    accessed at -1"); one over the grown region (element 0 at row -1) is computed whole,
    as Halide's realize into a buffer with that min."""
    f = hl.Func("fo")
    r = hl.RDom([(0, 6)], "r")
    f[x, y] = x + 10 * y
    f[x, r] = f[x, r - 1] + 1
    k = compile_pipeline(f)
    with pytest.raises(KernelArgumentError, match="its own updates write or read"):
        k.realize([5, 6], out=np.zeros((6, 5), np.int32))
    with pytest.raises(hl.HalideError, match="accessed at -1"):
        f.realize(hl.Buffer(hl.Int(32), [5, 6]))
    out = np.zeros((7, 5), np.int32)
    assert k.realize([5, 6], out=out) is out
    ref = hl.Buffer(hl.Int(32), [5, 7])
    ref.set_min([0, -1])
    f.realize(ref)
    np.testing.assert_array_equal(out, np.asarray(ref))
    np.testing.assert_array_equal(k.realize([5, 6]), halide_realize([f], [5, 6], [])[0])


def test_no_crop_when_the_first_output_is_read_within_the_realized_region() -> None:
    """``[t, u, w]``: ``w`` reads ``t`` within the realized region and ``u`` beyond it;
    the first output's region is the realized one, so Halide crops nothing and returns
    ``u`` grown (the crop follows the first buffer, not whether another output reads
    it: returned realized before)."""
    t, u, w = hl.Func("t3"), hl.Func("u3"), hl.Func("w3")
    t[x] = x * 3
    u[x] = x * x + 1
    w[x] = u[x + 2] - t[x]
    k = check([t, u, w], [5])
    assert [list(reg) for reg in k.output_regions([5])] == [[(0, 5)], [(0, 7)], [(0, 5)]]
