"""Halide's compute_at semantics against Halide's own realize (which also validates each
schedule): ``producer.compute_at(consumer, x)`` realizes the producer at loop ``x`` of every
stage of the consumer that uses it (tutorial lesson 9: the pure definition only, the update
only, both -- one realization each -- or at an RDom loop), and the consumer may use it only
through a Func computed at the same loop."""

from __future__ import annotations

import re
from collections.abc import Callable

import halide as hl
import numpy as np
import pytest
from halide_util import check

import middleend as me
from frontends.halide import UnsupportedHalideFeature, compile_pipeline
from frontends.halide.apps import interpolate_funcs

Inputs = list[tuple[hl.ImageParam, np.ndarray]]
Case = Callable[[str, np.random.Generator], tuple[hl.Func, list[int], Inputs]]


def _vars(names: str) -> list[hl.Var]:
    return [hl.Var(n) for n in names.split()]


def _image(rng: np.random.Generator, *shape: int) -> tuple[hl.ImageParam, Inputs]:
    a = hl.ImageParam(hl.Float(32), len(shape), "a")
    return a, [(a, rng.random(shape, dtype=np.float32))]


def pure_only(schedule: str, rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """Lesson 9, case 1: only the pure definition reads the producer."""
    x, = _vars("x")
    producer, consumer = hl.Func("producer"), hl.Func("consumer")
    producer[x] = x * 17
    consumer[x] = 2 * producer[x]
    consumer[x] += 1
    if schedule == "store_root":
        producer.store_root()
    producer.compute_at(consumer, x)
    return consumer, [10], []


def update_only(schedule: str, rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """Lesson 9, case 2: only the update reads it ("'consumer_s1' does not read" before)."""
    x, y = _vars("x y")
    producer, consumer = hl.Func("producer"), hl.Func("consumer")
    producer[x, y] = (x * y) / 10 + 8
    consumer[x, y] = x + y
    consumer[x, 0] += producer[x, x]
    if schedule == "store_root":
        producer.store_root()
    producer.compute_at(consumer, x)
    return consumer, [10, 10], []


def both_stages(schedule: str, rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """Lesson 9, case 3: the pure definition and the update both read it: two
    realizations, one per stage (a stencil on an image, tiled differently per stage)."""
    x, y, xo, yo, xi, yi = _vars("x y xo yo xi yi")
    a, inputs = _image(rng, 19, 29)
    producer, consumer = hl.Func("producer"), hl.Func("consumer")
    r = hl.RDom([(0, 3)], "r")
    producer[x, y] = a[x, y] * 2 + 1
    consumer[x, y] = producer[x, y] + producer[x + 1, y]
    consumer[x, y] += producer[x + r.x, y + 1] * hl.f32(r.x + 1)
    if schedule == "store_root":
        producer.store_root()
        producer.compute_at(consumer, y)
    else:
        consumer.tile(x, y, xo, yo, xi, yi, 8, 4)
        consumer.update(0).tile(x, y, xo, yo, xi, yi, 4, 4)
        producer.compute_at(consumer, xo).vectorize(x, 4)
    return consumer, [21, 13], inputs


def at_an_rvar(schedule: str, rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """Lesson 9, case 5: at the loop of a reduction variable of the update."""
    x, = _vars("x")
    producer, consumer = hl.Func("producer"), hl.Func("consumer")
    r = hl.RDom([(0, 5)], "r")
    producer[x] = x * 17
    consumer[x] = x + 10
    consumer[x] += r.x + producer[x + r.x]
    if schedule == "store_root":
        producer.store_root()
    producer.compute_at(consumer, r.x)
    return consumer, [10], []


def _chain(rng: np.random.Generator) -> tuple[hl.Func, hl.Func, hl.Func, Inputs]:
    x, y = _vars("x y")
    a, inputs = _image(rng, 14, 23)
    p, q, c = hl.Func("p"), hl.Func("q"), hl.Func("c")
    p[x, y] = a[x, y] * 2
    q[x, y] = p[x, y] + p[x + 1, y] * 3
    c[x, y] = q[x, y] + q[x, y + 1]
    return p, q, c, inputs


def indirect(schedule: str, rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """``p.compute_at(c, y)`` where c reads p only through q, computed at the same loop
    (local laplacian's pyramid levels), or deeper (at x), or inlined."""
    p, q, c, inputs = _chain(rng)
    x, y = c.args()
    if schedule == "store_root":
        q.compute_at(c, x)
    else:
        q.compute_at(c, y)
    p.compute_at(c, y)
    return c, [20, 12], inputs


def indirect_inlined(schedule: str,
                     rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    p, q, c, inputs = _chain(rng)
    x, y = c.args()
    if schedule == "store_root":
        c.vectorize(x, 4)
        p.store_root()
    else:
        c.parallel(y).vectorize(x, 4)
    p.compute_at(c, y)
    return c, [20, 12], inputs


def tuple_element(schedule: str,
                  rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """Only the second element of a Tuple consumer reads the producer (through an inlined
    Func): it is placed for that element."""
    x, = _vars("x")
    p, q, c = hl.Func("p"), hl.Func("q"), hl.Func("c")
    p[x] = x * 3
    q[x] = p[x] + p[x + 1]
    c[x] = (x * 2, q[x] + 1)
    if schedule == "store_root":
        p.store_root()
    p.compute_at(c, x)
    return c, [10], []


def through_inlined_reader(schedule: str,
                           rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """``p`` and ``q`` at ``c``'s rows, ``c`` reading ``q`` only through an inlined Func
    (tutorial lesson 7's blur: the output casts an inlined blur of Funcs computed at its
    tiles); ``p`` is used there through ``q`` (it was refused: "no stage ... uses it")."""
    p, q, _, inputs = _chain(rng)
    x, y = q.args()
    r, c = hl.Func("r"), hl.Func("c")
    r[x, y] = q[x, y] * q[x, y + 1]
    c[x, y] = r[x, y] + 1
    if schedule == "store_root":
        p.store_root()
        q.compute_at(c, x)
    else:
        q.compute_at(c, y)
    p.compute_at(c, y)
    return c, [20, 12], inputs


def chain_at_one_loop(schedule: str,
                      rng: np.random.Generator) -> tuple[hl.Func, list[int], Inputs]:
    """Three Funcs at ``c``'s rows, each reading the one before (a stencil chain computed
    per tile): the first is used through the two after it (it was refused)."""
    x, y = _vars("x y")
    a, inputs = _image(rng, 16, 24)
    fs = [hl.Func(f"s{k}") for k in range(3)]
    fs[0][x, y] = a[x, y] * 2
    fs[1][x, y] = fs[0][x, y] + fs[0][x + 1, y]
    fs[2][x, y] = fs[1][x, y] * fs[1][x, y + 1]
    c = hl.Func("c")
    c[x, y] = fs[2][x, y] - fs[2][x + 1, y + 1]
    for f in fs:
        f.compute_at(c, y)
    if schedule == "store_root":
        fs[0].store_root()
        c.vectorize(x, 4)
    return c, [20, 12], inputs


_CASES = [pure_only, update_only, both_stages, at_an_rvar, indirect, indirect_inlined,
          tuple_element, through_inlined_reader, chain_at_one_loop]


@pytest.mark.parametrize("schedule", ["compute_at", "store_root"])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: c.__name__)
def test_compute_at_as_halide_places_it(case: Case, schedule: str,
                                        rng: np.random.Generator) -> None:
    out, sizes, inputs = case(schedule, rng)
    check(out, sizes, inputs)


def test_one_realization_per_stage(rng: np.random.Generator) -> None:
    """Both stages reading the producer get a copy of it each, computed in their loops."""
    out, sizes, inputs = both_stages("compute_at", rng)
    k = compile_pipeline(out)
    built, _ = k.build(sizes, **{p.name(): v for p, v in inputs})
    consumer = built.fn.computations
    names = [c.name for c in consumer]
    assert sum(1 for n in names if n.startswith("producer")) == 2, names


def test_compute_at_a_stage_that_does_not_use_it_is_refused() -> None:
    """Halide refuses a compute_at whose loop encloses no use; so do we, by name."""
    x, = _vars("x")
    producer, consumer = hl.Func("producer"), hl.Func("consumer")
    producer[x] = x * 17
    consumer[x] = x
    consumer[x] += producer[x]
    producer.compute_at(hl.LoopLevel(consumer, x, 0))
    with pytest.raises(hl.HalideError, match="invalid location"):
        consumer.realize([10])
    with pytest.raises(UnsupportedHalideFeature,
                       match=re.escape(f"no stage of {consumer.name()!r}")):
        compile_pipeline(consumer).realize([10])


@pytest.mark.parametrize("schedule", ["rows", "q_at_x", "wide"])
def test_producer_read_by_the_consumer_and_a_sibling(schedule: str,
                                                     rng: np.random.Generator) -> None:
    """``p`` at ``c2``'s rows is read there by ``c2`` and by ``q``, computed at the same
    loop (or deeper): it is computed for both footprints (``wide``: ``c2`` reads columns
    of ``p`` that ``q`` does not)."""
    p, q, c, inputs = _chain(rng)
    x, y = c.args()
    c2 = hl.Func("c2")
    c2[x, y] = c[x, y] + (p[x + 4, y + 2] if schedule == "wide" else p[x, y])
    c.compute_inline()
    q.compute_at(c2, x if schedule == "q_at_x" else y)
    p.compute_at(c2, y)
    if schedule == "wide":
        c2.vectorize(x, 4)
    check(c2, [18, 10], inputs)


def test_a_use_outside_the_realization_is_refused_as_halide_does(
        rng: np.random.Generator) -> None:
    """``p.compute_at(c, y)`` while a compute_root Func also reads ``p``: Halide refuses it
    ("invalid location"); so do we, naming both, before anything is lowered."""
    p, q, c, inputs = _chain(rng)
    x, y = c.args()
    c2 = hl.Func("c2")
    c2[x, y] = c[x, y] + p[x, y]
    c.compute_root()
    p.compute_at(c, y)
    for ip, v in inputs:
        ip.set(hl.Buffer(v))
    with pytest.raises(hl.HalideError, match="invalid location"):
        c2.realize([20, 12])
    with pytest.raises(me.ScheduleError, match=re.escape(
            f"Func {p.name()!r} is computed at {c.name()}.y, but {c2.name()!r} read it "
            "outside that loop")):
        compile_pipeline(c2).realize([20, 12], a=inputs[0][1])


def _interpolate(inp: hl.ImageParam, levels: int, schedule: str) -> hl.Func:
    """Halide's interpolate app (:func:`frontends.halide.apps.interpolate_funcs`) with a
    schedule: every level compute_root, or the downsampling's x pass and the upsampling's
    x pass computed at their consumers' rows (reached through an inlined Func)."""
    p = interpolate_funcs(inp, levels)
    out, ds, dx, it, ux = p.output, p.down, p.downx, p.interp, p.upx
    x, y, c = out.args()
    out.reorder(c, x, y).bound(c, 0, 3)
    for k in range(levels):
        ds[k].compute_root()
        if k:
            it[k].compute_root()
        if schedule == "at" and k:
            dx[k].compute_at(ds[k], y)
            if k < levels - 1:
                ux[k].compute_at(it[k], y)
    if schedule == "at":
        out.parallel(y)
    return out


@pytest.mark.parametrize("schedule", ["root", "at"])
def test_interpolate(schedule: str, rng: np.random.Generator) -> None:
    """The interpolate app: Halide's values, and its 4-channel input constraint enforced."""
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    inp.dim(2).set_bounds(0, 4)
    out = _interpolate(inp, 3, schedule)
    k = check(out, [24, 16, 3], [(inp, rng.random((4, 16, 24), dtype=np.float32))])
    with pytest.raises(me.KernelArgumentError, match=r"'inp' dimension 2 .* extent 5"):
        k.realize([24, 16, 3], inp=rng.random((5, 16, 24), dtype=np.float32))


# ------------------------------------------------------------ a Func with updates at a loop

@pytest.mark.parametrize("schedule", ["at_y", "tiled"])
def test_reduction_computed_at_a_loop(schedule: str, rng: np.random.Generator) -> None:
    """A 3x3 weighted sum (pure definition + RDom update) computed per row / per tile of
    its consumer: both stages run there, for the region the consumer reads."""
    x, y, xo, yo, xi, yi = _vars("x y xo yo xi yi")
    a, inputs = _image(rng, 18, 29)
    f, out = hl.Func("conv"), hl.Func("out")
    r = hl.RDom([(0, 3), (0, 3)], "r")
    f[x, y] = hl.f32(0)
    f[x, y] += a[x + r.x, y + r.y] * hl.f32(r.x + 2 * r.y + 1)
    out[x, y] = f[x, y] * 2 + f[x + 1, y]
    if schedule == "at_y":
        f.compute_at(out, y)
    else:
        g = hl.TailStrategy.GuardWithIf
        out.tile(x, y, xo, yo, xi, yi, 8, 4, g).parallel(yo)
        f.compute_at(out, xo).vectorize(x, 4, g)
        f.update(0).vectorize(x, 4, g)
    k = check(out, [21, 13], inputs)
    built, _ = k.build([21, 13], a=inputs[0][1])
    text = built.fn.layers()
    layer2 = text[text.index("== Layer II"):text.index("== Layer III")]
    loop = "y_o, " if schedule == "at_y" else "y_yo, x_xo, "
    for line in (ln for ln in layer2.splitlines() if ln.startswith("{ conv")):
        assert line.split("[", 1)[1].startswith(loop), line  # inside out's loop


def test_per_row_histogram_computed_at_a_row(rng: np.random.Generator) -> None:
    """A scatter (data-dependent store index) per row, computed at each row of its
    consumer: every update of that row runs there."""
    x, y = _vars("x y")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    h, out = hl.Func("rowhist"), hl.Func("cnt")
    r = hl.RDom([(0, im.width())], "r")
    h[x, y] = 0
    h[hl.cast(hl.Int(32), im[r.x, y]) // 16, y] += 1
    out[x, y] = h[x, y] * 10 + x
    h.compute_at(out, y)
    check(out, [16, 9], [(im, rng.integers(0, 256, (9, 30), dtype=np.uint8))])


def test_scan_computed_at_a_loop(rng: np.random.Generator) -> None:
    """A prefix sum at each point of its consumer: the scan's earlier elements (and their
    initialization) are recomputed there, as Halide reruns the scan there."""
    x, = _vars("x")
    im = hl.ImageParam(hl.UInt(8), 1, "im")
    c, out = hl.Func("cdf"), hl.Func("o")
    r = hl.RDom([(1, 15)], "r")
    c[x] = hl.i32(im[x])
    c[r.x] = c[r.x - 1] + c[r.x]
    out[x] = c[x] + 1
    c.compute_at(out, x)
    check(out, [16], [(im, rng.integers(0, 256, (16,), dtype=np.uint8))])


# ------------------------------------- a Func with updates realized in several consumer stages

@pytest.mark.parametrize("schedule", ["at_y", "at_x", "tiled", "store_root"])
def test_func_with_updates_in_two_stages(schedule: str, rng: np.random.Generator) -> None:
    """A weighted sum (pure definition + RDom update) read by both stages of its consumer:
    one realization per stage, each running both of the producer's stages there (read at
    x - 1, so stored at an offset)."""
    x, y, xo, yo, xi, yi = _vars("x y xo yo xi yi")
    a, inputs = _image(rng, 14, 30)
    p, c = hl.Func("wsum"), hl.Func("two_stage")
    r = hl.RDom([(0, 3)], "r")
    p[x, y] = a[x + 1, y]
    p[x, y] += a[x + r.x + 1, y] * hl.f32(r.x + 1)
    c[x, y] = p[x - 1, y] + p[x + 1, y]
    c[x, y] += p[x, y + 1] * 2
    if schedule == "at_y":
        p.compute_at(c, y)
    elif schedule == "at_x":
        p.compute_at(c, x)
    elif schedule == "tiled":
        c.tile(x, y, xo, yo, xi, yi, 8, 4)
        c.update(0).tile(x, y, xo, yo, xi, yi, 4, 4)
        p.compute_at(c, xo).vectorize(x, 4)
        p.update(0).vectorize(x, 4)
    else:
        p.store_root().compute_at(c, y)
    k = check(c, [20, 12], inputs)
    built, _ = k.build([20, 12], a=inputs[0][1])
    copies = set(re.findall(r"\bwsum\w*_at1\b", built.fn.layers()))
    assert len(copies) == 2 and sum("_s1_" in n for n in copies) == 1, copies  # both stages


def test_histogram_in_two_stages(rng: np.random.Generator) -> None:
    """A per-row histogram (a scatter) read by the pure definition and the update of its
    consumer, computed at each row of both."""
    x, y = _vars("x y")
    im = hl.ImageParam(hl.UInt(8), 2, "im")
    h, o = hl.Func("rowhist2"), hl.Func("cnt2")
    r = hl.RDom([(0, 30)], "r")
    h[x, y] = 0
    h[hl.cast(hl.Int(32), im[r.x, y]) // 16, y] += 1
    o[x, y] = h[x, y] * 10 + x
    o[x, y] += h[15 - x, y]
    h.compute_at(o, y)
    check(o, [16, 9], [(im, rng.integers(0, 256, (9, 30), dtype=np.uint8))])


@pytest.mark.parametrize("schedule", ["root", "yo", "store_at_yi", "compute_root"])
def test_hoist_storage(schedule: str, rng: np.random.Generator) -> None:
    """``hoist_storage(g, yo)`` allocates at ``yo`` (outside ``store_at``'s loop): where
    the storage lives, not what is computed."""
    x, y, yo, yi = _vars("x y yo yi")
    a, inputs = _image(rng, 13, 21)
    f, g = hl.Func("hoisted"), hl.Func("hoist_c")
    f[x, y] = a[x, y] * 2
    g[x, y] = f[x, y] + f[x + 1, y] + f[x, y + 1]
    g.split(y, yo, yi, 4)
    f.compute_at(g, yi)
    if schedule == "compute_root":
        f.compute_root().hoist_storage_root()  # nothing to hoist
    elif schedule == "root":
        f.hoist_storage_root()
    elif schedule == "yo":
        f.hoist_storage(g, yo)
    else:
        f.store_at(g, yi).hoist_storage(g, yo)
    k = check(g, [20, 12], inputs)
    built, _ = k.build([20, 12], a=inputs[0][1])
    allocs = [ln for ln in built.fn.layers().splitlines() if ln.startswith("allocate hoisted")]
    want = r"\[13, 21\] at function entry" if schedule in ("root", "compute_root") else \
        r"\[5, 21\] at loop y_yo of hoist_c\w* \(one array per thread\)"
    assert len(allocs) == 1 and re.fullmatch(r"allocate hoisted\w*" + want, allocs[0]), allocs


def test_compute_at_outermost(rng: np.random.Generator) -> None:
    """``compute_at(g, Var.outermost())``: outside all of g's loops, before each stage that
    reads it; computed once before g here (the same values)."""
    x, y = _vars("x y")
    a, inputs = _image(rng, 5, 10)
    f, g = hl.Func("outer_p"), hl.Func("outer_c")
    f[x, y] = a[x, y] * 2
    g[x, y] = f[x, y] + f[x + 1, y]
    g[x, y] += f[x, y] * 3
    f.compute_at(g, hl.Var.outermost())
    check(g, [8, 4], inputs)


@pytest.mark.parametrize("schedule", ["at_y", "store_root", "tiled", "vectorized"])
def test_inline_reduction_reading_a_func_computed_at_a_loop(schedule: str,
                                                            rng: np.random.Generator) -> None:
    """``v.compute_at(h, y)`` where ``h`` reads ``v`` through ``hl.maximum`` / ``hl.sum``
    (the max filter, resize): Halide computes the unscheduled reduction at ``h``'s innermost
    loop, inside ``y``, so it reads ``v`` there (it was refused: "no stage ... uses it")."""
    x, y, xo, yo, xi, yi = _vars("x y xo yo xi yi")
    a, inputs = _image(rng, 18, 26)
    r = hl.RDom([(0, 3)], "r")
    v, h = hl.Func("v"), hl.Func("h")
    v[x, y] = hl.maximum(a[x, y + r.x])
    h[x, y] = hl.maximum(v[x + r.x, y]) + hl.sum(v[x, y] * r.x)
    if schedule == "tiled":
        h.tile(x, y, xo, yo, xi, yi, 8, 4).parallel(yo)
        v.compute_at(h, xo)
    elif schedule == "store_root":
        v.store_root().compute_at(h, y)
    else:
        v.compute_at(h, y)
        if schedule == "vectorized":
            h.vectorize(x, 4)
    check(h, [22, 14], inputs)


@pytest.mark.parametrize("schedule", ["rows", "vectorized", "store_root"])
def test_producer_read_by_funcs_nested_at_one_loop(schedule: str,
                                                   rng: np.random.Generator) -> None:
    """Unsharp mask's schedule: ``g`` at ``out``'s ``yo``, read there by ``b`` and by
    ``q``, both at ``out``'s ``yi``, ``b`` read by ``q`` (``b`` placed for ``q``): ``g``
    is computed for ``out``'s iteration, which covers both (it was refused as "2 stages
    read it ... computed at different Tuple elements")."""
    x, y, yo, yi = _vars("x y yo yi")
    a, inputs = _image(rng, 20, 17)
    g, b, q, out = hl.Func("g"), hl.Func("b"), hl.Func("q"), hl.Func("out")
    g[x, y] = a[x, y] * 2
    b[x, y] = g[x, y] + g[x, y + 2]
    q[x, y] = b[x, y] * g[x, y + 1] + b[x + 1, y]
    out[x, y] = q[x, y] * 3
    out.split(y, yo, yi, 4)
    if schedule == "vectorized":
        out.vectorize(x, 4)
    b.compute_at(out, yi)
    q.compute_at(out, yi)
    if schedule == "store_root":
        g.store_root()
    g.compute_at(out, yo)
    check(out, [16, 16], inputs)


@pytest.mark.parametrize("schedule", ["split_reordered", "at_x", "tuple_producer"])
def test_tuple_elements_read_the_producer_at_different_points(
        schedule: str, rng: np.random.Generator) -> None:
    """``f[x, y] = (g[x, y], g[x + 1, y])`` with ``g`` at a loop of ``f``: the second
    element reads a column the first does not; ``g`` is computed for every element's
    reads in that iteration (they share its loops), as Halide computes the region of the
    whole Tuple (it was refused: "'f_1' would not read the value of 'g'")."""
    x, y, xo, xi = _vars("x y xo xi")
    a, inputs = _image(rng, 10, 20)
    g, f = hl.Func("g"), hl.Func("f")
    if schedule == "tuple_producer":  # a Tuple producer too, its elements read apart
        g[x, y] = (a[x, y] * 2, a[x + 1, y] - 1)
        f[x, y] = (g[x, y][0] + g[x + 2, y][1], g[x + 1, y][0])
    else:
        g[x, y] = a[x, y] * 2
        f[x, y] = (g[x, y], g[x + 1, y] * 3)
    if schedule == "at_x":
        g.compute_at(f, x)
    else:
        f.split(x, xo, xi, 4).reorder(xi, y, xo)
        g.compute_at(f, y)
    check(f, [16, 8], inputs)
