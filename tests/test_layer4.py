"""Layer IV operations: copy_at on the cpu target (blur, matmul packing, a stencil's input
tile) against numpy under several placements, the loop nests showing where each copy runs
and what it allocates, the legality check following reads through copies, and the other
operations (barriers, host/device copies, sends, receives) scheduled, checked and printed
target-independently and refused by the cpu target by name."""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl
import numpy as np
import pytest
from service_util import blur_ref

import middleend as me
from middleend.api.examples import blur as blur_program
from middleend.api.examples import sgemm_copy_at

SHAPES = [(37, 29), (9, 10)]


def blur(schedule: Callable[..., None] | None = None, shape: tuple[int, int] | None = None
         ) -> me.Function:
    """The papers' blur (``examples.blur``); ``schedule(f, inp, bx, by)`` adds commands."""
    b = blur_program(shape)
    if schedule is not None:
        with b.fn:
            schedule(b.fn, b.fn.buffers[0], b.bx, b.by)
    return b.fn


def _tiled(f: me.Function, inp: object, bx: me.Computation, by: me.Computation) -> None:
    by.tile("i", "j", 8, 16, "i0", "j0", "i1", "j1")


def copy_input_tile(f, inp, bx, by):  # the stencil's input tile, per tile of by
    _tiled(f, inp, bx, by)
    bx.compute_at(by, "j0")
    me.copy_at(bx, "j0", inp, "tile")


def copy_producer_tile(f, inp, bx, by):  # a tile of bx's buffer (bx computed at root)
    _tiled(f, inp, bx, by)
    me.copy_at(by, "j0", bx, "bxt")


def copy_computed_at(f, inp, bx, by):  # bx computed per tile, then copied: after it
    _tiled(f, inp, bx, by)
    bx.compute_at(by, "j0")
    me.copy_at(by, "j0", bx, "bxt")


def copy_rows(f, inp, bx, by):  # per row of tiles, in a parallel loop
    _tiled(f, inp, bx, by)
    by.parallelize("i0")
    me.copy_at(by, "i0", bx, "rows")


def copy_of_copy(f, inp, bx, by):  # global -> tile -> row: a copy reads a copy
    bx.tile("i", "j", 8, 16, "i0", "j0", "i1", "j1")
    me.copy_at(bx, "j0", inp, "t1")
    me.copy_at(bx, "i1", "t1", "t2")


def copy_vectorized(f, inp, bx, by):  # the copy's own loops scheduled like a computation's
    _tiled(f, inp, bx, by)
    cp = me.copy_at(by, "j0", bx, "bxt")
    cp.interchange("bxt_1", "bxt_2")
    cp.vectorize("bxt_1", 8)


def copy_declared(f, inp, bx, by):  # into a declared temporary, big enough
    _tiled(f, inp, bx, by)
    dst = me.Buffer("cache", [10, 16, 3], me.float32)
    me.copy_at(by, "j0", bx, dst)


def copy_at_root_level(f, inp, bx, by):  # the whole footprint once, at the outer loop
    me.copy_at(by, "i", bx, "row3")


SCHEDULES = [copy_input_tile, copy_producer_tile, copy_computed_at, copy_rows, copy_of_copy,
             copy_vectorized, copy_declared, copy_at_root_level]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: s.__name__)
@pytest.mark.parametrize("shape", SHAPES)
def test_copy_at_blur_matches_numpy(schedule, shape, rng, assert_close_f32) -> None:
    a = rng.random((*shape, 3), dtype=np.float32)
    k = blur(schedule).compile()
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


@pytest.mark.parametrize("schedule", [copy_input_tile, copy_rows, copy_of_copy],
                         ids=lambda s: s.__name__)
def test_copy_at_with_constant_sizes(schedule, rng, assert_close_f32) -> None:
    """Constant sizes: the copies' buffers are stack arrays of the exact tile size."""
    a = rng.random((21, 35, 3), dtype=np.float32)
    k = blur(schedule, shape=(21, 35)).compile()
    assert_close_f32(k(inp=a)["by"], blur_ref(a))


def test_copy_runs_where_it_is_placed_and_reads_go_to_the_copy(loop_nest) -> None:
    def s(f, inp, bx, by):
        copy_input_tile(f, inp, bx, by)
        bx.allocate_at(by, "j0")
        by.parallelize("i0")
    k = blur(s).compile()
    nest = loop_nest(k)
    (copy_path,) = nest["copy_tile"]
    (bx_path,) = nest["bx"]
    # one tile per thread; the copy runs in each j0 iteration, before bx's loops
    assert copy_path == ("i0[parallel]", "alloc(tile)", "alloc(bx)", "j0", "tile_0",
                         "tile_1", "tile_2")
    assert bx_path == ("i0[parallel]", "alloc(tile)", "alloc(bx)", "j0", "i", "j", "c")
    assert "b_tile[" in k.source and "b_inp[" in k.source
    body = k.source.split("/* bx */")[1].split("}")[0]
    assert "b_inp[" not in body and "b_tile[" in body  # bx reads the copy, not the input
    buf = next(b for b in k.program.buffers if b.name == "tile")
    assert buf.local and [int(s.value) for s in buf.sizes] == [10, 18, 3]  # 8+2 x 16+2 x 3


def test_layer4_prints_the_copy_with_exact_footprints() -> None:
    text = blur(copy_input_tile, shape=(21, 35)).layers()
    layer4 = text.split("== Layer IV")[1]
    assert "allocate tile[10, 18, 3] at loop j0 of bx (one array per thread)" in layer4
    assert "copy copy_tile: bx.copy_at(level='j0', src='inp', dst='tile'" in layer4
    reads = next(ln for ln in layer4.splitlines() if ln.strip().startswith("reads"))
    got = isl.Map(reads.split("reads", 1)[1].strip())
    # per tile (i0, j0): rows 8i0..8i0+9 and columns 16j0..16j0+17, clipped to the input
    want = isl.Map("{ copy_tile[i0, j0, x, y, c] -> inp[x, y, c] : 0 <= i0 <= 2 and "
                   "0 <= j0 <= 2 and 8i0 <= x <= 8i0 + 9 and x <= 20 and "
                   "16j0 <= y <= 16j0 + 17 and y <= 34 and 0 <= c <= 2 }")
    assert got.is_equal(want), got
    assert "serves   the reads of 'inp' by bx" in layer4


@pytest.mark.parametrize("n", [64, 67])
@pytest.mark.parametrize("pack", [True, False])
def test_sgemm_packed_by_copy_at(n, pack, rng) -> None:
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    k = sgemm_copy_at(n, tj=32, mr=4, nr=8, pack=pack).compile()
    np.testing.assert_allclose(k(A=a, B=b)["C"], a @ b, rtol=2e-5, atol=1e-4)
    assert ("b_Bp[" in k.source) == pack


def matmul_copies(level_a: str | None, level_b: str | None, sizes=(24, 40, 16)):
    """C = A @ B tiled 3-D, with A's and B's tiles copied at the given levels."""
    with me.Function("mm") as f:
        n, m, kk = sizes
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("k", 0, kk)
        a = me.Input("A", [n, kk], me.float32)
        b = me.Input("B", [kk, m], me.float32)
        c0 = me.Computation("C", [i, j], 0.0)
        c1 = c0.update([i, j, k], a[i, k] * b[k, j])
        c1.tile("i", "j", "k", 8, 16, 8, "i0", "j0", "k0", "i1", "j1", "k1")
        c1.parallelize("i0")
        if level_a:
            me.copy_at(c1, level_a, a, "Ap")
        if level_b:
            me.copy_at(c1, level_b, b, "Bp")
    return f


@pytest.mark.parametrize("levels", [("k0", "k0"), ("j0", "k0"), ("i0", None), (None, "k1"),
                                    ("k1", "i1")])
def test_matmul_tiles_copied_at_several_levels(levels, rng) -> None:
    k = matmul_copies(*levels).compile()
    a = rng.random((24, 16), dtype=np.float32)
    b = rng.random((16, 40), dtype=np.float32)
    np.testing.assert_allclose(k(A=a, B=b)["C"], a @ b, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- refused


def _refused(schedule, match: str, err: type[Exception] = me.ScheduleError) -> Exception:
    with pytest.raises(err, match=match) as info:
        blur(schedule).compile()
    return info.value


def test_a_copy_after_its_reader_is_illegal() -> None:
    def s(f, inp, bx, by):
        _tiled(f, inp, bx, by)
        me.copy_at(by, "j0", bx, "bxt").after(by, "j0")
    e = _refused(s, "'by' reads 'bxt' before the copy 'copy_bxt' fills it")
    assert e.command is not None and e.command.startswith("copy_bxt.after")


def test_a_copy_before_the_producer_is_illegal() -> None:
    def s(f, inp, bx, by):
        _tiled(f, inp, bx, by)
        bx.compute_at(by, "j0")
        me.copy_at(by, "j0", bx, "bxt").before(bx, "j0")
    e = _refused(s, "through the copy 'copy_bxt', which would not hold the value")
    assert "copy_bxt" in e.computations and e.dependence
    assert e.command is not None and e.command.startswith("copy_bxt.before")


def test_a_copy_of_a_buffer_the_reader_updates_is_refused(rng) -> None:
    with me.Function("acc") as f:
        n = me.Param("N")
        i, k = me.Var("i", 0, n), me.Var("k", 0, 4)
        x = me.Input("x", [n, 4], me.float32)
        s = me.Computation("s", [i], 0.0)
        u = s.update([i, k], x[i, k])
        me.copy_at(u, "i", s, "sc")
    with pytest.raises(me.ScheduleError, match="a read-only copy of the buffer it updates"):
        f.compile()


@pytest.mark.parametrize("schedule, match", [
    (lambda f, inp, bx, by: me.copy_at(by, "nope", bx, "t"), "'by' has no loop 'nope'"),
    (lambda f, inp, bx, by: me.copy_at(by, "i", inp, "t"), "'by' does not read 'inp'"),
    (lambda f, inp, bx, by: me.copy_at(by, "i", "ghost", "t"), "unknown buffer"),
    (lambda f, inp, bx, by: (_tiled(f, inp, bx, by),
                             me.copy_at(by, "j0", bx, me.Buffer("small", [4, 4, 3],
                                                                me.float32))),
     "declared with size 4 in dimension 0, but an iteration needs 10"),
])
def test_bad_copies_are_refused_with_the_command(schedule, match) -> None:
    _refused(schedule, match)


def test_copy_names_are_checked() -> None:
    with pytest.raises(me.DefinitionError, match="defined twice"):
        blur(lambda f, inp, bx, by: me.copy_at(by, "i", bx, "inp"))
    with pytest.raises(me.DefinitionError, match="same buffer"):
        blur(lambda f, inp, bx, by: me.copy_at(by, "i", bx, bx))
    with pytest.raises(me.DefinitionError, match="invalid copy_at destination name"):
        blur(lambda f, inp, bx, by: me.copy_at(by, "i", bx, "not a name"))


def test_data_dependent_reads_cannot_be_copied() -> None:
    with me.Function("gather") as f:
        n = me.Param("N")
        i = me.Var("i", 0, n)
        idx = me.Input("idx", [n], me.int32)
        x = me.Input("x", [n], me.float32)
        y = me.Computation("y", [i], x[me.clamp(idx[i], 0, n - 1)])
        me.copy_at(y, "i", x, "xc")
    with pytest.raises(me.ScheduleError, match="data-dependent index"):
        f.compile()


# ---------------------------------------------------------------------------- other ops


def test_the_cpu_target_refuses_barriers_and_transfers_by_name() -> None:
    cases = [
        (lambda f, inp, bx, by: me.barrier_at(by, "j"), "barrier operation 'barrier_by_j'"),
        (lambda f, inp, bx, by: inp.host_to_device(), "host_to_device operation"),
        (lambda f, inp, bx, by: by.device_to_host(), "device_to_host operation"),
    ]
    for schedule, match in cases:
        e = _refused(schedule, match, me.TargetError)
        assert "is honoured by: gpu" in str(e)
        assert "created by" in str(e) and "(command #" in str(e)
    # without a target nothing runs on a device, so there is nothing to copy back
    e = _lower_blur(lambda f, inp, bx, by: by.device_to_host())
    assert isinstance(e, me.ScheduleError)
    assert "operation 'by_to_host' copies to the host elements of 'by' that the device has " \
           "not written (yet)" in str(e)


def test_gpu_tags_are_refused_naming_loop_and_command() -> None:
    e = _refused(lambda f, inp, bx, by: (by.gpu("i", "j"), bx.gpu("i", "j")),
                 "cannot honour tag 'gpu_block' on loop 'i' of ", me.TargetError)
    assert "(set by bx.gpu('i', 'j') (command #1))" in str(e) or \
        "(set by by.gpu('i', 'j') (command #0))" in str(e)


def test_a_buffer_on_both_sides_needs_copies() -> None:
    e = _lower_blur(lambda f, inp, bx, by: by.gpu("i", "j"))
    assert isinstance(e, me.ScheduleError)
    assert "buffer 'bx' is used on the host (by bx) and on the device (by by)" in str(e)


def _lower_blur(schedule) -> me.MiddleEndError | object:
    """Layers I-IV only (no target): operations the cpu target refuses are checked too."""
    f = blur(schedule, shape=(20, 40))
    try:
        return f.lower()
    except me.MiddleEndError as e:
        return e


def _on_gpu(f, inp, bx, by):
    by.gpu("i", "j")
    bx.gpu("i", "j")


def test_host_device_copies_are_checked_without_a_target() -> None:
    ok = _lower_blur(lambda f, inp, bx, by: (_on_gpu(f, inp, bx, by), inp.host_to_device(),
                                             by.device_to_host()))
    assert not isinstance(ok, Exception)
    text = ok.layers_text().split("== Layer IV")[1]
    assert "host_to_device inp_to_device" in text and "device_to_host by_to_host" in text
    early = _lower_blur(lambda f, inp, bx, by: (
        _on_gpu(f, inp, bx, by), by.device_to_host().before(by, me.ROOT)))
    assert isinstance(early, me.ScheduleError)
    assert "operation 'by_to_host' copies to the host elements of 'by' that the device has " \
           "not written (yet)" in str(early)
    late = _lower_blur(lambda f, inp, bx, by: (
        _on_gpu(f, inp, bx, by), inp.host_to_device().after(bx, me.ROOT)))
    assert isinstance(late, me.ScheduleError)
    assert "bx would read 'inp' on the device where nothing put it" in str(late)


def test_sends_and_receives_are_scheduled_and_printed() -> None:
    def s(f, inp, bx, by):
        r = me.Var("r", 1, 3)
        snd = me.send([r], inp[r * 4, 0, 0], [2, 5, 3], r - 1, ["async"])
        me.receive([r], bx[r * 4, 0, 0], [2, 5, 3], r + 1, "sync", matching=snd)
    low = _lower_blur(s)
    assert not isinstance(low, Exception)
    text = low.layers_text().split("== Layer IV")[1]
    assert "send send_inp:" in text and "receive receive_bx:" in text
    assert "peer     (r - 1)   properties: async" in text
    reads = next(ln for ln in text.splitlines() if "-> inp[" in ln)
    assert "4r <= inp_0 <= 1 + 4r" in reads  # the exact box per rank: two rows
    with pytest.raises(me.TargetError, match="cannot honour the send operation"):
        blur(s, shape=(20, 40)).compile()


def test_a_send_before_the_data_it_sends_is_illegal() -> None:
    def s(f, inp, bx, by):
        r = me.Var("r", 1, 3)
        me.send([r], bx[r * 4, 0, 0], [2, 5, 3], r - 1)
    e = _lower_blur(s)
    assert isinstance(e, me.ScheduleError)
    assert "operation 'send_bx' reads elements of 'bx' before they are produced" in str(e)
    moved = _lower_blur(lambda f, inp, bx, by: me.send(
        [me.Var("r", 1, 3)], bx[me.Var("r", 1, 3) * 4, 0, 0], [2, 5, 3], 0).after(by, me.ROOT))
    assert not isinstance(moved, Exception)


def test_a_region_outside_the_buffer_is_refused() -> None:
    def s(f, inp, bx, by):
        r = me.Var("r", 1, 9)
        me.send([r], inp[r * 4, 0, 0], [2, 5, 3], r - 1)
    e = _lower_blur(s)
    assert isinstance(e, me.ScheduleError) and "the region lies outside 'inp'" in str(e)


def _atb(order: tuple[int, ...] | None, level: str, dst: object = "At") -> me.Function:
    """C = A' B with k outermost: A[k, i] is strided along i, the loop inside k."""
    with me.Function("atb") as f:
        n, m, kk = me.Param("N", min=1), me.Param("M", min=1), me.Param("K", min=1)
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, m), me.Var("k", 0, kk)
        a, b = me.Input("A", [kk, n], me.float64), me.Input("B", [kk, m], me.float64)
        c = me.Computation("C", [i, j], me.cast(me.float64, 0))
        u = c.update([i, j, k], a[k, i] * b[k, j], name="U", at=[i, j])
        if not isinstance(dst, str):
            dst = dst(n, kk)  # type: ignore[operator]
    u.interchange("j", "k")
    u.interchange("i", "k")
    me.copy_at(u, me.ROOT if level == "root" else level, a, dst, order=order)
    return f


@pytest.mark.parametrize(("order", "level"), [((1, 0), "root"), (None, "root"),
                                              ((1, 0), "i"), ((1, 0), "k")])
def test_a_transposed_copy_packs_the_strided_operand(order, level, rng) -> None:
    """copy_at with order=(1, 0) stores the copy transposed (what a BLAS packs): at the
    root once, in the source's sizes, or per iteration of a loop, its footprint only."""
    a, b = rng.random((7, 5)), rng.random((7, 6))
    k = _atb(order, level).compile()
    np.testing.assert_allclose(k(A=a, B=b)["C"], a.T @ b, rtol=1e-12)
    if order and level == "root":
        assert "b_At[v_At_1 * s_At_0 + v_At_0] = b_A[v_At_0 * s_A_0 + v_At_1]" in k.source
        assert "b_At[v_i * s_At_0 + v_k]" in k.source  # read along k, contiguous


def _aat(order: tuple[int, ...] | None, panel: int, along: str | None = None,
         tile: int = 0, dst: object = "Ap") -> me.Function:
    """C = A' A (both reads of A, ``A[k, i]`` contiguous along ``i``, the inner loop):
    the copy in panels of ``panel`` (with no ``order``: ``Ap[i // P, k, i % P]``); with
    ``tile``, i split by it (the register tile's rows)."""
    with me.Function("aat") as f:
        n, kk = me.Param("N", min=1), me.Param("K", min=1)
        i, j, k = me.Var("i", 0, n), me.Var("j", 0, n), me.Var("k", 0, kk)
        a = me.Input("A", [kk, n], me.float64)
        c = me.Computation("C", [j, i], me.cast(me.float64, 0))
        u = c.update([j, i, k], a[k, i] * a[k, j], name="U", at=[j, i])
    u.interchange("i", "k")
    if tile:
        u.split("i", tile, "i0", "i1")
    if dst is not None:
        me.copy_at(u, me.ROOT, a, dst, order=order, panel=panel or None, along=along)
    return f


@pytest.mark.parametrize(("order", "panel", "along", "tile"),
                         [(None, 4, "i", 4), (None, 3, "i", 0), (None, 8, None, 8),
                          ((1, 0), 2, "j", 0), (None, 5, "i", 10)])
def test_a_copy_in_panels_gives_the_products(order, panel, along, tile, rng) -> None:
    """copy_at(..., panel=P) stores the copy as [d // P, ..., d % P] (sizes that are no
    multiple of P: the last panel part-filled); along= copies only the reads that move
    with that variable, the others read A itself. A tile of P rows reads a constant
    panel (no division in the loop)."""
    a = rng.random((7, 13))
    k = _aat(order, panel, along, tile).compile()
    np.testing.assert_allclose(k(A=a)["C"], a.T @ a, rtol=1e-12)
    reads = [ln for ln in k.source.splitlines() if "b_C[" in ln and " + (" in ln]
    assert reads and all("b_Ap[" in ln for ln in reads)
    assert all(("b_A[" in ln) == (along is not None) for ln in reads)
    if tile == panel:  # the tile's panel and its row: loop counters, no division
        assert all("b_Ap[(t" in ln and "me_fdiv" not in ln for ln in reads)


def test_copies_in_panels_are_checked() -> None:
    with pytest.raises(me.DefinitionError, match="panel must be an int of at least 2"):
        _aat(None, 1)
    with pytest.raises(me.DefinitionError, match="a copy in panels is made once, at me.ROOT"):
        f = _aat(None, 0, dst=None)
        me.copy_at(f.computation("U"), "k", f.buffers[0], "Aq", panel=4)
    with pytest.raises(me.ScheduleError, match="needs panels of at least 2 elements and a "
                                               "new buffer as its destination"):
        _aat_declared().compile()
    with pytest.raises(me.DefinitionError, match="along must be a variable of U"):
        f = _aat(None, 0, dst=None)
        me.copy_at(f.computation("U"), me.ROOT, f.buffers[0], "Aq", along=3)
    with pytest.raises(me.ScheduleError, match="no read of 'A' by 'U' has an index that "
                                               "moves with 'C_x'"):
        _aat(None, 4, along="C_x").compile()


def _aat_declared() -> me.Function:
    f = _aat(None, 0, dst=None)
    n, kk = f.params
    with f:
        ap = me.Buffer("Aq", [n, kk], me.float64)
    me.copy_at(f.computation("U"), me.ROOT, f.buffers[0], ap, order=(1, 0), panel=4)
    return f


def test_transposed_copies_are_checked() -> None:
    with pytest.raises(me.DefinitionError, match=r"order must be a permutation of 0..n-1"):
        _atb((0, 0), "root")
    with pytest.raises(me.ScheduleError, match=r"order \(2, 0, 1\) is not a permutation "
                                               r"of the dims of 'A' \(0..1\)"):
        _atb((2, 0, 1), "root").compile()
    with pytest.raises(me.ScheduleError, match="must have the sizes of 'A' in the order"):
        _atb((1, 0), "root", lambda n, kk: me.Buffer("At", [kk, n], me.float64)).compile()
    rng = np.random.default_rng(3)
    a, b = rng.random((4, 3)), rng.random((4, 2))
    k = _atb((1, 0), "root", lambda n, kk: me.Buffer("At", [n, kk], me.float64)).compile()
    np.testing.assert_allclose(k(A=a, B=b)["C"], a.T @ b, rtol=1e-12)
