"""Data-dependent (non-affine) indices in ``store_in``: histograms, scatters, clamped and
out-of-range writes, checked against numpy (``np.bincount``, ``np.add.at``) under several
schedules; the legality check's refusals (races, reordered updates) and Layer III's
(value reads, unsized buffers, folds); the wire round trip (also done for every compile by
the conftest fixture).

A data-dependent store is a *may* write of any element of the buffer's box (exact along
the affine indices): every later read of the box may see it, it kills nothing, and the
generated code checks the index and stores nothing when it is out of bounds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import middleend as me
from middleend.driver.lowering import lower
from middleend.wire import decode_request, encode_request

Schedule = Callable[..., object] | None


def histogram(schedule: Schedule = None) -> me.Function:
    """Halide's ``hist(clamp(im(r.x, r.y), 0, 255)) += 1``: ``schedule(hist, hist_u)``."""
    with me.Function("histogram") as f:
        W, H = me.Param("W"), me.Param("H")
        im = me.Input("im", [H, W], me.uint8)
        b, ry, rx = me.Var("b", 0, 256), me.Var("ry", 0, H), me.Var("rx", 0, W)
        hist = me.Computation("hist", [b], me.cast(me.int32, 0))
        idx = me.clamp(me.cast(me.int32, im[ry, rx]), 0, 255)
        upd = me.Computation("hist_u", [ry, rx], hist.memory[idx] + 1)
        upd.store_in(hist, [idx])
        if schedule is not None:
            schedule(hist, upd)
    return f


def _v(name: str) -> me.Var:
    return me.Var(name)


LEGAL = {
    "default": None,
    "split_rx": lambda h, u: u.split("rx", 8, _v("xo"), _v("xi")),
    "split_ry_unroll_rx": lambda h, u: (u.split("ry", 5, _v("yo"), _v("yi")),
                                        u.unroll("rx", 4)),
    "parallel_init": lambda h, u: (h.parallelize("b"), u.split("rx", 16, _v("xo"), _v("xi"))),
    "vector_init": lambda h, u: (h.vectorize("b", 8), u.after(h, me.ROOT)),
}


@pytest.mark.parametrize("shape", [(23, 37), (3, 1), (1, 64)])
@pytest.mark.parametrize("name", sorted(LEGAL))
def test_histogram(name: str, shape: tuple[int, int], rng: np.random.Generator) -> None:
    im = rng.integers(0, 256, shape).astype(np.uint8)
    kernel = histogram(LEGAL[name]).compile()
    out = kernel(im=im)["hist"]
    np.testing.assert_array_equal(out, np.bincount(im.ravel(), minlength=256))
    # the clamp proves the data-dependent index in bounds: no run-time check is left
    body = kernel.source.split("int me_histogram(")[1]
    assert "me_s0" not in body and "me_chk(" not in body


def test_histogram_layers_show_the_may_write() -> None:
    text = histogram().layers()
    assert "buffer hist[256] int32 output" in text
    assert "may write: data-dependent index" in text
    assert "hist_u[ry, rx] -> hist[o0] : 0 <= ry < H and 0 <= rx < W and 0 <= o0 <= 255" in text


@pytest.mark.parametrize("schedule, loop", [
    (lambda h, u: u.parallelize("rx"), "rx"),
    (lambda h, u: u.parallelize("ry"), "ry"),
    (lambda h, u: u.vectorize("rx", 8), "rx_vi"),
])
def test_parallel_histogram_update_is_a_race(schedule: Schedule, loop: str) -> None:
    with pytest.raises(me.ScheduleError, match=f"loop '{loop}' of 'hist_u'") as err:
        histogram(schedule).compile()
    assert "hist_u" in err.value.computations


@pytest.mark.parametrize("schedule", [
    lambda h, u: u.before(h, me.ROOT),  # the updates before the initialisation
    # Reordering the updates changes which earlier increments each one may see; the
    # middle-end does not reason about commutativity (Halide refuses it for RVars too).
    lambda h, u: u.interchange("ry", "rx"),
    lambda h, u: u.reverse("rx"),
    lambda h, u: u.tile("ry", "rx", 4, 8, _v("yo"), _v("xo"), _v("yi"), _v("xi")),
])
def test_reordering_the_update_chain_is_refused(schedule: Schedule) -> None:
    with pytest.raises(me.ScheduleError, match="'hist_u' would not read") as err:
        histogram(schedule).compile()
    assert "hist_u" in err.value.computations


def test_update_helper_with_weights(rng: np.random.Generator) -> None:
    """``acc.update([i], w[i], at=[bin[i]])``: a weighted histogram (np.add.at)."""
    with me.Function("weighted") as f:
        N, B = me.Param("N"), me.Param("B")
        w = me.Input("w", [N], me.float32)
        bins = me.Input("bins", [N], me.int32)
        b, i = me.Var("b", 0, B), me.Var("i", 0, N)
        acc = me.Computation("acc", [b], me.cast(me.float32, 0.0))
        acc.update([i], w[i], at=[bins[i]])
    w_ = rng.standard_normal(101).astype(np.float32)
    bins_ = rng.integers(0, 7, 101).astype(np.int32)
    out = f.compile()(w=w_, bins=bins_, B=7)["acc"]
    ref = np.zeros(7, np.float32)
    np.add.at(ref, bins_, w_)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def clamped_accumulate(clamp: bool) -> me.Function:
    """``acc[clamp(v[i], 0, M - 1)] += x[i]`` (or unclamped)."""
    with me.Function("clamped" if clamp else "unclamped") as f:
        N, M = me.Param("N"), me.Param("M")
        v = me.Input("v", [N], me.int32)
        x = me.Input("x", [N], me.int32)
        b, i = me.Var("b", 0, M), me.Var("i", 0, N)
        acc = me.Computation("acc", [b], 0)
        at = me.clamp(v[i], 0, M - 1) if clamp else v[i]
        acc.update([i], x[i], at=[at], name="acc_u")
    return f


def test_clamped_data_dependent_write(rng: np.random.Generator) -> None:
    v = rng.integers(-20, 40, 57).astype(np.int32)  # many out of [0, 19]: clamped
    x = rng.integers(-5, 6, 57).astype(np.int32)
    out = clamped_accumulate(True).compile()(v=v, x=x, M=19)["acc"]
    ref = np.zeros(19, np.int32)
    np.add.at(ref, np.clip(v, 0, 18), x)
    np.testing.assert_array_equal(out, ref)


def test_out_of_range_write_is_a_kernel_error(rng: np.random.Generator) -> None:
    kernel = clamped_accumulate(False).compile()
    x = rng.integers(-5, 6, 57).astype(np.int32)
    v = rng.integers(0, 19, 57).astype(np.int32)
    ref = np.zeros(19, np.int32)
    np.add.at(ref, v, x)
    np.testing.assert_array_equal(kernel(v=v, x=x, M=19)["acc"], ref)
    for bad in (-1, 19, 2**31 - 1):
        v2 = v.copy()
        v2[30] = bad
        with pytest.raises(me.KernelRuntimeError, match="out of bounds in kernel unclamped"):
            kernel(v=v2, x=x, M=19)


def scatter(n_out: object = None) -> me.Function:
    """``out[perm[i]] = x[i]`` into a declared output (of size ``n_out``, default N)."""
    with me.Function("scatter") as f:
        N = me.Param("N")
        x = me.Input("x", [N], me.float32)
        perm = me.Input("perm", [N], me.int32)
        M = N if n_out is None else me.Param("M")
        out = me.Buffer("out", [M], me.float32, kind=me.OUTPUT)
        i = me.Var("i", 0, N)
        s = me.Computation("s", [i], x[i] * 2)
        s.store_in(out, [perm[i]])
    return f


def test_scatter_permutation(rng: np.random.Generator) -> None:
    x = rng.standard_normal(37).astype(np.float32)
    perm = rng.permutation(37).astype(np.int32)
    ref = np.zeros(37, np.float32)
    ref[perm] = x * 2
    np.testing.assert_array_equal(scatter().compile()(x=x, perm=perm)["out"], ref)


def test_scatter_leaves_unwritten_elements_zero(rng: np.random.Generator) -> None:
    """A may write does not cover its buffer: the output is handed back zeroed."""
    x = rng.standard_normal(9).astype(np.float32)
    perm = rng.choice(40, 9, replace=False).astype(np.int32)
    kernel = scatter(n_out=True).compile()
    assert not next(b for b in kernel.program.buffers if b.name == "out").fully_written
    ref = np.zeros(40, np.float32)
    ref[perm] = x * 2
    np.testing.assert_array_equal(kernel(x=x, perm=perm, M=40)["out"], ref)


def test_out_of_range_scatter_never_writes_outside(rng: np.random.Generator) -> None:
    """The neighbours of the output array are untouched by an out-of-range index."""
    kernel = scatter().compile()
    x = rng.standard_normal(8).astype(np.float32)
    for bad in (-1, 8):
        perm = np.arange(8, dtype=np.int32)
        perm[3] = bad
        big = np.full(10, 7.0, np.float32)
        with pytest.raises(me.KernelRuntimeError):
            kernel(x=x, perm=perm, out=big[1:-1])
        assert big[0] == 7.0 and big[-1] == 7.0
        assert big[1 + 3] == 7.0  # element 3 is written by nobody else


def test_parallel_scatter_is_refused() -> None:
    """perm could repeat an index: the compiler cannot prove the iterations independent."""
    f = scatter()
    f.computation("s").parallelize("i")
    with pytest.raises(me.ScheduleError, match="loop 'i' of 's'"):
        f.compile()


def row_histograms(schedule: Schedule = None) -> me.Function:
    """A 16-bin histogram per row: ``h[r, im[r, x] // 16] += 1``, then ``out = 2 * h``.
    The row index is affine, so the may write is exact along it: rows are independent."""
    with me.Function("rowhist") as f:
        W, H = me.Param("W"), me.Param("H")
        im = me.Input("im", [H, W], me.uint8)
        r, b, x = me.Var("r", 0, H), me.Var("b", 0, 16), me.Var("x", 0, W)
        h = me.Computation("h", [r, b], me.cast(me.int32, 0))
        hu = h.update([r, x], 1, at=[r, me.cast(me.int32, im[r, x]) // 16], name="hu")
        out = me.Computation("out", [r, b], h.memory[r, b] * 2)
        if schedule is not None:
            schedule(h, hu, out)
    return f


@pytest.mark.parametrize("schedule", [
    None,
    lambda h, hu, o: (h.parallelize("r"), hu.parallelize("r"), o.parallelize("r")),
    lambda h, hu, o: (hu.after(h, "r"), o.after(hu, "r"), h.allocate_at(o, "r"),
                      o.parallelize("r")),
])
def test_row_histograms(schedule: Schedule, rng: np.random.Generator) -> None:
    im = rng.integers(0, 256, (23, 37)).astype(np.uint8)
    out = row_histograms(schedule).compile()(im=im)["out"]
    ref = np.stack([np.bincount(row // 16, minlength=16) for row in im]) * 2
    np.testing.assert_array_equal(out, ref)


def lookup(schedule: Schedule = None) -> me.Function:
    """A histogram (temporary) then ``look[i] = hist[v[i]]``: a data-dependent read of a
    buffer written at data-dependent indices."""
    with me.Function("lookup") as f:
        N = me.Param("N")
        im = me.Input("im", [N], me.uint8)
        v = me.Input("v", [N], me.int32)
        b, i = me.Var("b", 0, 256), me.Var("i", 0, N)
        hist = me.Computation("hist", [b], 0)
        hu = hist.update([i], 1, at=[me.cast(me.int32, im[i])], name="hu")
        look = me.Computation("look", [i], hist.memory[v[i]])
        if schedule is not None:
            schedule(hist, hu, look)
    return f


def test_data_dependent_read_after_data_dependent_writes(rng: np.random.Generator) -> None:
    im = rng.integers(0, 256, 41).astype(np.uint8)
    v = rng.integers(0, 256, 41).astype(np.int32)
    out = lookup().compile()(im=im, v=v)["look"]
    np.testing.assert_array_equal(out, np.bincount(im, minlength=256)[v])
    with pytest.raises(me.ScheduleError, match="'look' would not read"):
        lookup(lambda h, hu, lk: lk.before(hu, me.ROOT)).compile()


def index_in_a_computation(schedule: Schedule = None) -> me.Function:
    """The bin as its own computation ``idx``, read by value in hist_u's store index."""
    with me.Function("histidx") as f:
        W, H = me.Param("W"), me.Param("H")
        im = me.Input("im", [H, W], me.uint8)
        b, ry, rx = me.Var("b", 0, 256), me.Var("ry", 0, H), me.Var("rx", 0, W)
        idx = me.Computation("idx", [ry, rx], me.clamp(me.cast(me.int32, im[ry, rx]), 0, 255))
        hist = me.Computation("hist", [b], me.cast(me.int32, 0))
        upd = me.Computation("hist_u", [ry, rx], hist.memory[idx[ry, rx]] + 1)
        upd.store_in(hist, [idx[ry, rx]])
        if schedule is not None:
            schedule(idx, hist, upd)
    return f


@pytest.mark.parametrize("schedule", [
    None,
    lambda i, h, u: i.compute_at(u, "rx"),
    lambda i, h, u: i.compute_at(u, "ry"),
    lambda i, h, u: i.inline(),
    lambda i, h, u: (i.parallelize("ry"), h.after(i, me.ROOT)),
])
def test_store_index_read_from_a_scheduled_computation(schedule: Schedule,
                                                         rng: np.random.Generator) -> None:
    im = rng.integers(0, 256, (23, 37)).astype(np.uint8)
    out = index_in_a_computation(schedule).compile(outputs=["hist"])(im=im)["hist"]
    np.testing.assert_array_equal(out, np.bincount(im.ravel(), minlength=256))


def test_index_computed_after_its_use_is_refused() -> None:
    with pytest.raises(me.ScheduleError, match="hist_u"):
        index_in_a_computation(lambda i, h, u: i.after(u, me.ROOT)).compile(outputs=["hist"])


def test_compute_at_of_a_data_dependent_store_alone_is_refused() -> None:
    """``look`` reads the buffer ``hu`` scatters into, so ``hu`` is placed for the elements
    it reads per iteration (any: every instance); without ``hist``'s zeros there too, the
    second iteration would add to the first one's counts: refused, naming the command."""
    def sched(h: me.Computation, hu: me.Computation, look: me.Computation) -> None:
        hu.compute_at(look, "i")
    with pytest.raises(me.ScheduleError, match=r"'hu' would not read the value of 'hist'(.|\n)*"
                       r"broken by: hu.compute_at"):
        lookup(sched).compile()


def test_compute_at_of_a_histogram_and_its_zeros(rng: np.random.Generator) -> None:
    """Both stages at ``look``'s loop: the histogram is rebuilt per iteration (wasteful,
    and the values are the same)."""
    def sched(h: me.Computation, hu: me.Computation, look: me.Computation) -> None:
        h.compute_at(look, "i")
        hu.compute_at(look, "i")
    im = rng.integers(0, 256, 7).astype(np.uint8)
    v = rng.integers(0, 256, 7).astype(np.int32)
    out = lookup(sched).compile()(im=im, v=v)["look"]
    np.testing.assert_array_equal(out, np.bincount(im, minlength=256)[v])


def test_guarded_histogram(rng: np.random.Generator) -> None:
    """A run-time predicate and a data-dependent index on one update."""
    with me.Function("bright") as f:
        W, H = me.Param("W"), me.Param("H")
        im = me.Input("im", [H, W], me.uint8)
        b, ry, rx = me.Var("b", 0, 256), me.Var("ry", 0, H), me.Var("rx", 0, W)
        hist = me.Computation("hist", [b], me.cast(me.int32, 0))
        idx = me.cast(me.int32, im[ry, rx])
        upd = me.Computation("hist_u", [ry, rx], hist.memory[idx] + 1,
                             predicate=im[ry, rx] > 100)
        upd.store_in(hist, [idx])
    im_ = rng.integers(0, 256, (23, 37)).astype(np.uint8)
    np.testing.assert_array_equal(f.compile()(im=im_)["hist"],
                                  np.bincount(im_[im_ > 100], minlength=256))


def test_scattered_buffer_must_be_initialised_before_it_is_read() -> None:
    """A may write covers nothing for sure: reading a buffer that only a scatter wrote is
    an unproduced read (initialise it first, as a histogram does)."""
    with me.Function("unproduced") as f:
        N = me.Param("N")
        x = me.Input("x", [N], me.float32)
        perm = me.Input("perm", [N], me.int32)
        tmp = me.Buffer("tmp", [N], me.float32)
        i = me.Var("i", 0, N)
        me.Computation("s", [i], x[i]).store_in(tmp, [perm[i]])
        me.Computation("y", [i], tmp[i] + 1)
    with pytest.raises(me.UnproducedReadError, match="'y' reads 'tmp'"):
        f.compile()


# --------------------------------------------------------------------------- refusals


def test_value_read_of_a_data_dependent_store_is_refused() -> None:
    with me.Function("valueread") as f:
        N = me.Param("N")
        perm = me.Input("perm", [N], me.int32)
        i = me.Var("i", 0, N)
        a = me.Computation("a", [i], 0)
        s = me.Computation("s", [i], i * 3)
        s.store_in(a, [perm[i]])
        me.Computation("t", [i], s[i] + 1)
    with pytest.raises(me.DefinitionError, match=r"'t' reads 's' by value.*s\.memory"):
        f.compile()


def test_buffer_with_only_data_dependent_writers_needs_a_size() -> None:
    """``b`` is inlined, so the only writer of its buffer is the scatter: no size."""
    with me.Function("unsized") as f:
        N = me.Param("N")
        perm = me.Input("perm", [N], me.int32)
        i = me.Var("i", 0, N)
        b = me.Computation("b", [i], 0)
        me.Computation("s", [i], i).store_in(b, [perm[i]])
        b.inline()
    with pytest.raises(me.DefinitionError, match="buffer 'b'.*data-dependent.*size is unknown"):
        f.compile()


def test_affine_indices_of_a_data_dependent_store_must_fit() -> None:
    with me.Function("overflow") as f:
        N = me.Param("N")
        perm = me.Input("perm", [N], me.int32)
        out = me.Buffer("out", [4, N], me.int32, kind=me.OUTPUT)
        i = me.Var("i", 0, N)
        me.Computation("s", [i], i).store_in(out, [i, perm[i]])
    with pytest.raises(me.DefinitionError, match="affine indices write outside"):
        f.compile()


def test_storage_fold_of_a_scattered_buffer_is_refused() -> None:
    f = histogram(lambda h, u: h.storage_fold(0, 2))
    with pytest.raises(me.DefinitionError, match="written at data-dependent indices"):
        f.compile(outputs=["hist"])


def test_float_store_index_is_refused() -> None:
    with me.Function("floatidx") as f:
        N = me.Param("N")
        x = me.Input("x", [N], me.float32)
        i = me.Var("i", 0, N)
        a = me.Computation("a", [i], 0)
        me.Computation("s", [i], 1).store_in(a, [x[i]])
    with pytest.raises(me.DefinitionError, match="subscript must be an integer"):
        f.compile()


def test_store_index_with_a_foreign_iterator_is_refused() -> None:
    with me.Function("foreign") as f:
        N = me.Param("N")
        perm = me.Input("perm", [N], me.int32)
        i, j = me.Var("i", 0, N), me.Var("j", 0, N)
        a = me.Computation("a", [i], 0)
        me.Computation("s", [i], 1).store_in(a, [perm[j]])
    with pytest.raises(me.DefinitionError, match="index 0 of s.store_in.a. uses iterator 'j'"):
        f.lower()
    with pytest.raises(me.DefinitionError, match="'j' is not an iterator here"):
        f.compile()  # the wire decoder refuses it first, with the field path


# --------------------------------------------------------------------------- wire


@pytest.mark.parametrize("build", [histogram, scatter, row_histograms, index_in_a_computation])
def test_wire_round_trip(build: Callable[[], me.Function]) -> None:
    f = build()
    req = encode_request(f)
    g, _ = decode_request(req)
    again = encode_request(g)
    assert again.SerializeToString(deterministic=True) == \
        req.SerializeToString(deterministic=True)
    assert lower(g).layers_text() == f.layers()  # the decoded program is the same program

