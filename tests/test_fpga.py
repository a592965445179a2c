"""The fpga target: the C-simulation of the generated HLS C++ equals numpy for the paper's
six FPGA kernels under both schedules (channel-parallel and 512-bit vectorized) and for the
three stencils under line buffers too (each input pixel then read once), a Halide pipeline
equals Halide, FIFOs are sized from the schedule, and what cannot be a FIFO (or one of the
depth asked), a partition, a line buffer or a pipeline at the asked II is refused with the
reason. Each distinct source is compiled once per session (the build cache)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import middleend as me
from backends.fpga import FpgaTarget
from backends.fpga.hls import generate_hls
from backends.fpga.latency import estimate, model, traffic
from middleend.api import examples_fpga as ex
from middleend.driver.lowering import lower
from middleend.ir import commands as me_cmd
from middleend.passes.linebuffer import LinePlan, plans
from middleend.service.client import EmbeddedClient
from middleend.wire.decode import decode_request
from middleend.wire.encode import encode_request
from middleend.wire.v1 import middleend_pb2 as pb

pytestmark = pytest.mark.fpga

ROWS, COLS = 384, 512


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(16).integers(0, 256, (ROWS, COLS, 3), dtype=np.uint8)


def _p(img: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """The 3x3 neighbour (dy, dx) of every interior pixel, as int32."""
    n, m = img.shape[:2]
    return img[dy:dy + n - 2, dx:dx + m - 2].astype(np.int32)


def _u8(a: np.ndarray) -> np.ndarray:
    return np.clip(a, 0, 255).astype(np.uint8)


def reference(name: str, img: np.ndarray) -> np.ndarray:
    """numpy's result of each kernel (independent of the middle-end)."""
    i = img.astype(np.int32)
    if name == "scale":
        return _u8(i * 3 // 2)
    if name == "threshold":
        return np.where(img > 127, 255, 0).astype(np.uint8)
    if name == "cvtColor":
        return ((77 * i[..., 0] + 150 * i[..., 1] + 29 * i[..., 2] + 128) // 256
                ).astype(np.uint8)
    if name == "convolution":
        return _u8(5 * _p(img, 1, 1) - _p(img, 0, 1) - _p(img, 1, 0) - _p(img, 1, 2)
                   - _p(img, 2, 1))
    if name == "sobel":
        p = lambda dy, dx: _p(img, dy, dx)  # noqa: E731
        gx = (p(0, 2) + 2 * p(1, 2) + p(2, 2)) - (p(0, 0) + 2 * p(1, 0) + p(2, 0))
        gy = (p(2, 0) + 2 * p(2, 1) + p(2, 2)) - (p(0, 0) + 2 * p(0, 1) + p(0, 2))
        return _u8(np.abs(gx) + np.abs(gy))
    assert name == "gaussian"
    bx = (i[:, :-2] + 2 * i[:, 1:-1] + i[:, 2:]).astype(np.uint16).astype(np.int32)
    return ((bx[:-2] + 2 * bx[1:-1] + bx[2:] + 8) // 16).astype(np.uint8)


_CASES = [(n, s) for n in ex.KERNELS for s in ex.SCHEDULES]


@pytest.mark.parametrize(("name", "schedule"), _CASES, ids=[f"{n}-{s}" for n, s in _CASES])
def test_paper_kernels_csim_equal_numpy(name: str, schedule: str, image: np.ndarray) -> None:
    k = ex.KERNELS[name](schedule).compile(target="fpga")
    (out,) = k(inp=image).values()
    np.testing.assert_array_equal(out, reference(name, image))
    assert k.latency_estimate is not None and k.latency_estimate > 0
    hls = k.sources[f"{name}_hls.cpp"]
    assert "#pragma HLS INTERFACE m_axi port=b_inp" in hls
    assert "#pragma HLS INTERFACE s_axilite port=return" in hls
    assert "#pragma HLS PIPELINE II=1" in hls
    assert ("ap_uint<512>" in hls) == (schedule == "vec")  # wide ports only when vectorized
    assert "set_top me_" in k.sources["run_hls.tcl"]


def _planned(f: me.Function) -> dict[tuple[str, str], LinePlan]:
    lw = lower(f)
    return {(p.consumer, p.buffer): p
            for p in plans(lw.l1, lw.l3, lw.l4, lw.ts, list(f.commands.items))}


@pytest.mark.parametrize("name", ex.LINE_BUFFERED)
def test_line_buffered_stencils_read_each_pixel_once(name: str, image: np.ndarray) -> None:
    """Under a line buffer the C-simulation still equals numpy, the model counts one
    off-chip read per input element (the channel-parallel schedule: 3 to 8), the memory
    port no longer bounds the II beyond one read per element, and the HLS C++ reads the
    port once per channel in the pipelined loop."""
    sizes = (ROWS, COLS) if name == "sobel" else None  # constant sizes: static line arrays
    k = ex.KERNELS[name]("lb", sizes=sizes).compile(target="fpga")
    np.testing.assert_array_equal(k(inp=image)["out"], reference(name, image))
    reads, _ = k.traffic(N=ROWS, M=COLS)["inp"]
    assert reads == image.size  # every element once
    chan = model(lower(ex.KERNELS[name]("chan")).program)
    before, _ = traffic(chan, {"N": ROWS, "M": COLS})["inp"]
    assert before >= 2.9 * image.size
    assert k.latency_estimate < estimate(chan, {"N": ROWS, "M": COLS}) / 1.9
    pipes = [n for n in _walk_model(json.loads(k.latency_model)) if n["k"] == "pipe"]
    assert pipes and all(p["ii"] == 3 and p["io"].get("inp", [0])[0] <= 3 for p in pipes)
    hls = k.sources[f"{name}_hls.cpp"]
    assert hls.count("b_inp[") == 3  # one read per channel in the whole kernel
    assert "_window" in hls and "#pragma HLS ARRAY_PARTITION" in hls
    if name == "sobel":
        assert "static uint8_t b_out_inp_lines[2][512][3];" in hls
        assert "#pragma HLS ARRAY_PARTITION variable=b_out_inp_lines complete dim=1" in hls
    if name == "gaussian":  # bx flows through a FIFO, read by a 3x1 line buffer
        assert "hls::stream<uint16_t> b_bx;" in hls and "b_bx.read()" in hls


def test_the_reuse_distance_sizes_lines_and_window() -> None:
    conv = _planned(ex.convolution("lb"))[("out", "inp")]
    sobel = _planned(ex.sobel("lb"))[("out", "inp")]
    g = _planned(ex.gaussian("lb"))
    # (rows, columns): the lexicographically largest distance between two reads of one
    # element; the window spans the largest column distance
    assert (sobel.distance, sobel.rows, sobel.cols) == ((2, 2), 2, 2)
    assert (conv.distance, conv.rows, conv.cols) == ((2, 0), 2, 2)  # the cross: no corners
    assert (g["bx", "inp"].distance, g["bx", "inp"].rows) == ((0, 2), 0)  # no lines
    assert (g["out", "bx"].distance, g["out", "bx"].cols) == ((2, 0), 0)  # a 3x1 window
    assert sobel.fill.is_injective() and sobel.lanes == (2,)
    assert "reuse distance 2 rows + 2 columns: 2 lines of 'inp'" in sobel.summary()


def _reader(read: str) -> me.Function:
    """A 2D stencil-like kernel; ``read`` says how it reads ``a``."""
    with me.Function(f"lb_{read}") as f:
        N = me.Param("N", min=4)
        y, x = me.Var("y", 0, N - 1), me.Var("x", 0, N - 1)
        a = me.Input("a", [N, N], me.int32)
        v = {"mirror": lambda: a[y, N - 1 - x] + a[y + 1, N - 1 - x],
             "transpose": lambda: a[y, x] + a[x, y],
             "row": lambda: a[0, x] + a[0, x + 1],
             "ok": lambda: a[y, x] + a[y + 1, x + 1]}[read if read in
                                                      ("mirror", "transpose", "row") else "ok"]
        o = me.Computation("o", [y, x], v())
    if read == "split":
        o.split(x, 2, "xo", "xi")
        o.pipeline("xo")
    elif read != "nopipe":
        o.pipeline(x)
    o.line_buffer(a)
    return f


@pytest.mark.parametrize(("read", "reason"), [
    ("mirror", "moves its reads of 'a' by [0, -1] backwards"),
    ("transpose", "reads 'a' at offsets that vary from instance to instance"),
    ("row", "the distance between two reads of one element of 'a' is not constant"),
    ("split", "one iteration of its loop 'xo' moves its reads of 'a' by [0, 2]"),
    ("nopipe", "it has no pipelined loop"),
])
def test_what_is_not_a_stencil_over_the_scan_is_refused(read: str, reason: str) -> None:
    with pytest.raises(me.ScheduleError) as info:
        _reader(read).compile(target="fpga")
    first = str(info.value).splitlines()[0]
    assert first.startswith("cannot line-buffer 'a' for 'o' (o.line_buffer(buffer='a')")
    assert reason in first, first
    f = ex.convolution("vec")
    f.computation("out").line_buffer("inp")
    with pytest.raises(me.ScheduleError, match="not vectorized"):
        f.compile(target="fpga")
    with pytest.raises(me.TargetError, match="target 'cpu' cannot honour the line_buffer "
                                             "operation 'o'"):
        _reader("nopipe").compile(target="cpu")


def test_a_line_buffered_stream_is_checked_through_its_fill(image: np.ndarray) -> None:
    """A FIFO read through a line buffer: legal when the fill takes the elements in the
    producer's order (one read each), refused when the producer writes in another."""
    def two(reverse: bool) -> me.Function:
        with me.Function(f"lbs{int(reverse)}") as f:
            N, M = me.Param("N", min=3), me.Param("M", min=3)
            y, x = me.Var("y", 0, N), me.Var("x", 0, M)
            y2 = me.Var("y", 0, N - 1)
            inp = me.Input("inp", [N, M, 3], me.uint8)
            g = me.Computation("g", [y, x], inp[y, x, 1])
            d = me.Computation("d", [y2, x], me.cast(me.int32, g[y2 + 1, x]) - g[y2, x])
        if reverse:
            g.reverse(x)
        g.pipeline(x)
        d.pipeline(x)
        g.stream()
        d.line_buffer(g)
        return f

    k = two(False).compile(target="fpga")
    green = image[..., 1].astype(np.int32)
    np.testing.assert_array_equal(k(inp=image)["d"], green[1:] - green[:-1])
    assert k.traffic(N=ROWS, M=COLS)["inp"][0] == ROWS * COLS
    with pytest.raises(me.ScheduleError, match="cannot stream 'g': 'd' reads its elements in "
                                               "another order than it writes them"):
        two(True).compile(target="fpga")


def _unsharp(sizes: tuple[int, int] | None, depth: int | None = None,
             bounds: tuple[int | None, int | None] = (None, None)) -> me.Function:
    """Reconvergent stages: one stage streams the green channel ``g`` to a 2x2-corner
    stencil ``b`` (line-buffered, so its values come 2 rows + 2 columns later) and the
    pixel ``h`` straight to the last stage, which reads ``h`` and ``b`` together: ``h``'s
    FIFO must hold what arrives while ``b`` lags. ``sizes`` None: parameters N and M,
    with the upper ``bounds`` given."""
    with me.Function("unsharp") as f:
        N, M = sizes or (me.Param("N", min=3, max=bounds[0]),
                         me.Param("M", min=3, max=bounds[1]))
        y, x = me.Var("y", 0, N), me.Var("x", 0, M)
        yi, xi = me.Var("y", 0, N - 2), me.Var("x", 0, M - 2)
        inp = me.Input("inp", [N, M, 3], me.uint8)
        g = me.Computation("g", [y, x], me.cast(me.int32, inp[y, x, 1]))
        h = me.Computation("h", [yi, xi], me.cast(me.int32, inp[yi + 1, xi + 1, 1]))
        b = me.Computation("b", [yi, xi], g[yi, xi] + g[yi, xi + 2] + g[yi + 2, xi]
                           + g[yi + 2, xi + 2])
        me.Computation("o", [yi, xi], 4 * h[yi, xi] - b[yi, xi])
    h.after(g, x)
    for c in ("g", "h", "b", "o"):
        f.computation(c).pipeline("x")
    g.stream()
    h.stream(depth=depth)
    b.stream()
    b.line_buffer(g)
    return f


def test_fifo_depths_come_from_the_schedule(image: np.ndarray) -> None:
    """A chain needs a step's elements (the gaussian's bx: 3 channels); reconvergent paths
    need what arrives while the slow path lags: 2 rows + 2 columns + 1 of ``h`` (row
    length 38), and a smaller user depth, which would deadlock, is refused with it."""
    k = ex.gaussian("lb", sizes=(ROWS, COLS)).compile(target="fpga")
    assert "#pragma HLS STREAM variable=b_bx depth=3" in k.sources["gaussian_hls.cpp"]
    img = image[:24, :40].copy()
    k = _unsharp((24, 40)).compile(target="fpga")
    gr = img[..., 1].astype(np.int32)
    want = 4 * gr[1:-1, 1:-1] - (gr[:-2, :-2] + gr[:-2, 2:] + gr[2:, :-2] + gr[2:, 2:])
    np.testing.assert_array_equal(k(inp=img)["o"], want)
    hls = k.sources["unsharp_hls.cpp"]
    assert "#pragma HLS STREAM variable=b_h depth=79" in hls  # 2 x 38 + 2 + 1
    assert "#pragma HLS STREAM variable=b_b depth=2" in hls
    with pytest.raises(me.ScheduleError) as info:
        _unsharp((24, 40), depth=8).compile(target="fpga")
    assert str(info.value).splitlines()[0] == (
        "cannot stream 'h' with depth 8: it would deadlock the dataflow region. In lockstep "
        "'o' reads each value of 'h' 2 rows + 2 columns after 'h' writes it, because it "
        "waits for the stream 'b' (a longer path from the same stage); the FIFO must hold "
        "79 elements (at least depth=79)")
    assert info.value.command == "h.stream(depth=8)"
    assert "depth=79" in generate_hls(lower(_unsharp((24, 40), depth=79)).program)
    assert "b_h depth=127" in generate_hls(lower(_unsharp(None, bounds=(24, 64))).program)
    with pytest.raises(me.ScheduleError, match="grow with a parameter that has no upper "
                                               "bound"):
        lower(_unsharp(None))
    chain = _two_stages("same")  # a chain only stalls on a small FIFO: the depth is kept
    chain.commands.items[-1] = me_cmd.Stream("gray", 1)
    assert "b_gray depth=1" in generate_hls(lower(chain).program)


def test_vectorized_schedules_are_estimated_faster_and_sizes_matter(image: np.ndarray
                                                                     ) -> None:
    chan = ex.scale("chan").compile(target="fpga")
    vec = ex.scale("vec").compile(target="fpga")
    chan(inp=image)
    vec(inp=image)
    assert vec.latency_estimate < chan.latency_estimate  # 64 lanes per word vs 1 element
    half = image[: ROWS // 2].copy()
    vec(inp=half)
    assert vec.latency_estimate < vec.estimate(N=ROWS, M=COLS)  # the last call's sizes


def _walk_model(n: Any) -> Iterator[Any]:
    yield n
    for key in ("body", "then", "else"):
        kid = n.get(key)
        for c in kid if isinstance(kid, list) else [kid] if kid else []:
            yield from _walk_model(c)


def _two_stages(read: str) -> me.Function:
    """gray (a stage) then a threshold on it; ``read`` says how the second stage reads."""
    with me.Function(f"stages_{read}") as f:
        N, M = me.Param("N", min=3), me.Param("M", min=3)
        y, x = me.Var("y", 0, N), me.Var("x", 0, M)
        inp = me.Input("inp", [N, M, 3], me.uint8)
        gray = me.Computation("gray", [y, x], me.cast(me.uint8, (
            me.cast(me.int32, inp[y, x, 0]) + inp[y, x, 1] + inp[y, x, 2]) // 3))
        if read == "same":
            me.Computation("bw", [y, x], me.select(gray[y, x] > 100, me.cast(me.uint8, 255),
                                                   me.cast(me.uint8, 0)))
        elif read == "mirror":
            me.Computation("bw", [y, x], gray[y, M - 1 - x] + 1)
        else:  # a 2-tap stencil: each gray pixel read twice
            x2 = me.Var("x", 0, M - 1)
            me.Computation("bw", [y, x2], gray[y, x2] // 2 + gray[y, x2 + 1] // 2)
        gray.pipeline(x)
        f.computation("bw").pipeline("x")
        gray.stream()
    return f


def test_stream_between_two_stages(image: np.ndarray) -> None:
    k = _two_stages("same").compile(target="fpga")
    gray = image.astype(np.int32).sum(axis=2) // 3
    np.testing.assert_array_equal(k(inp=image)["bw"], np.where(gray > 100, 255, 0))
    hls = k.sources["stages_same_hls.cpp"]
    assert "hls::stream<uint8_t> b_gray;" in hls and "#pragma HLS DATAFLOW" in hls
    assert "b_gray.write(" in hls and "b_gray.read()" in hls
    # the stages overlap: about one stage's time, not two
    assert k.latency_estimate < 1.2 * ROWS * COLS * 3


@pytest.mark.parametrize(("read", "reason"), [
    ("mirror", "reads its elements in another order than it writes them"),
    ("stencil", "reads it through 2 references per instance"),
])
def test_illegal_streams_are_refused_with_the_reason(read: str, reason: str) -> None:
    with pytest.raises(me.ScheduleError) as info:
        _two_stages(read).compile(target="fpga")
    first = str(info.value).splitlines()[0]
    assert first.startswith("cannot stream 'gray': ") and reason in first
    assert info.value.command == "gray.stream()"


def test_a_stream_of_an_output_or_with_two_consumers_is_refused() -> None:
    f = ex.scale("none")
    f.computation("out").stream()
    with pytest.raises(me.ScheduleError, match="cannot stream 'out': its buffer 'out' is an "
                                               "output"):
        f.compile(target="fpga")
    with me.Function("two") as g:
        N = me.Param("N", min=1)
        i = me.Var("i", 0, N)
        a = me.Input("a", [N], me.int32)
        b = me.Computation("b", [i], a[i] + 1)
        me.Computation("c", [i], b[i] * 2)
        me.Computation("d", [i], b[i] * 3)
        b.stream()
    with pytest.raises(me.ScheduleError, match="it is read by 'c', 'd'; a FIFO has exactly "
                                               "one consumer"):
        g.compile(target="fpga")


def test_partitioned_on_chip_buffer(image: np.ndarray) -> None:
    plain = ex.gaussian("vec", sizes=(ROWS, COLS)).compile(target="fpga")
    f = ex.gaussian("vec", sizes=(ROWS, COLS))
    bx = f.computation("bx")
    bx.buffer().partition(2, 3, "complete")
    bx.buffer().partition(1, 64, "cyclic")
    k = f.compile(target="fpga")
    np.testing.assert_array_equal(k(inp=image)["out"], reference("gaussian", image))
    plain(inp=image)
    hls = k.sources["gaussian_hls.cpp"]
    assert "static uint16_t b_bx[384][510][3];" in hls
    assert "#pragma HLS ARRAY_PARTITION variable=b_bx complete dim=3" in hls
    assert "#pragma HLS ARRAY_PARTITION variable=b_bx cyclic factor=64 dim=2" in hls
    assert k.latency_estimate < plain.latency_estimate / 10  # 384 ports instead of 2


@pytest.mark.parametrize(("setup", "reason"), [
    (lambda f: f.buffers[0].partition(1, 4), "it is an input of the kernel, in off-chip "
                                             "memory"),
    (lambda f: f.computation("bx").buffer().partition(1, 4), "its size along dimension 1 is "
                                                             "not a constant"),
    (lambda f: f.computation("bx").buffer().partition(5, 4), "there is no dimension 5"),
    (lambda f: f.computation("bx").buffer().partition(2, 8, "block"), "factor 8 exceeds its "
                                                                      "size 3"),
])
def test_illegal_partitions_are_refused_with_the_reason(setup, reason: str) -> None:
    sizes = None if "constant" in reason else (ROWS, COLS)
    f = ex.gaussian("none", sizes=sizes)
    setup(f)
    with pytest.raises(me.ScheduleError) as info:
        f.compile(target="fpga")
    first = str(info.value).splitlines()[0]
    assert first.startswith("cannot partition buffer ") and reason in first
    with pytest.raises(me.DefinitionError, match="kind must be one of"):
        f.computation("bx").buffer().partition(0, 2, "diagonal")


def test_cpu_and_gpu_refuse_streams_and_partitions() -> None:
    f = _two_stages("same")
    f.commands.items[:] = [c for c in f.commands.items if c.kind != "pipeline"]
    for target in ("cpu", "gpu"):
        with pytest.raises(me.TargetError, match=f"target '{target}' cannot honour the "
                                                 "stream operation 'gray'"):
            f.compile(target=target)
    g = ex.gaussian("none", sizes=(ROWS, COLS))
    g.computation("bx").buffer().partition(2, 3, "complete")
    with pytest.raises(me.TargetError, match="target 'cpu' cannot honour tag 'partition' on "
                                             "loop 'dimension 2 of buffer bx'"):
        g.compile(target="cpu")


def _running_sum(ii: int) -> me.Function:
    with me.Function(f"rsum{ii}") as f:
        N = me.Param("N", min=1)
        i, z = me.Var("i", 0, N), me.Var("z", 0, 1)
        x = me.Input("x", [N], me.float32)
        s = me.Computation("s", [z], me.cast(me.float32, 0))
        s.update([i], x[i], at=[0], name="acc").pipeline(i, ii=ii)
    return f


def test_pipelined_recurrence_needs_its_smallest_ii() -> None:
    with pytest.raises(me.ScheduleError) as info:
        _running_sum(1).compile(target="fpga")
    e = info.value
    assert str(e).splitlines()[0] == (
        "illegal schedule: loop 'i' of 'acc' is pipelined with II=1, but it carries a "
        "dependence of distance 1 through 'acc', whose latency is 6 cycles: the smallest II "
        "it allows is 6")
    assert "acc[i] -> acc[i' = 1 + i]" in e.dependence
    assert e.command == "acc.pipeline(dim='i', ii=1)"
    x = np.arange(1000, dtype=np.float32) / 7
    k = _running_sum(6).compile(target="fpga")
    np.testing.assert_allclose(k(x=x)["s"], [np.cumsum(x, dtype=np.float32)[-1]], rtol=1e-6)
    assert "#pragma HLS PIPELINE II=6" in k.sources["rsum6_hls.cpp"]


def _mutual(ii: int) -> me.Function:
    """Two statements of one pipelined loop feeding each other: ``p = q / 2 + x[i]`` then
    ``q = q + p``: ``q``'s own recurrence allows II 6, the cycle through both needs their
    latencies together (9 + 6)."""
    with me.Function(f"mutual{ii}") as f:
        N = me.Param("N", min=1)
        i, z = me.Var("i", 0, N), me.Var("z", 0, 1)
        x = me.Input("x", [N], me.float32)
        P = me.Buffer("P", [1], me.float32)
        Q = me.Buffer("Q", [1], me.float32)
        zero = me.cast(me.float32, 0)
        p0 = me.Computation("p0", [z], zero, order="{ p0[z] -> [0, 0, 0] }")
        q0 = me.Computation("q0", [z], zero + 1, order="{ q0[z] -> [0, 0, 1] }")
        up = me.Computation("up", [i], Q[0] * 0.5 + x[i], order="{ up[i] -> [1, i, 0] }")
        uq = me.Computation("uq", [i], Q[0] + P[0], order="{ uq[i] -> [1, i, 1] }")
        for c, b in ((p0, P), (q0, Q), (up, P), (uq, Q)):
            c.store_in(b, [0])
    uq.after(up, i)
    up.pipeline(i, ii=ii)
    uq.pipeline(i, ii=ii)
    return f


def test_a_recurrence_through_two_statements_needs_their_latencies_together() -> None:
    with pytest.raises(me.ScheduleError) as info:
        _mutual(6).compile(target="fpga", outputs=["P", "Q"])
    e = info.value
    assert str(e).splitlines()[0] == (
        "illegal schedule: loop 'i' of 'up' is pipelined with II=6, but it carries a "
        "recurrence 'up' -> 'uq' -> 'up' of distance 1, whose latency is 9 + 6 = 15 cycles: "
        "the smallest II it allows is 15")
    assert "uq[i] -> up[i' = 1 + i]" in e.dependence and e.command == "up.pipeline(dim='i', ii=6)"
    x = np.arange(50, dtype=np.float32) / 7
    out = _mutual(15).compile(target="fpga", outputs=["P", "Q"])(x=x)
    p, q = np.float32(0), np.float32(1)
    for v in x:
        p = q * np.float32(0.5) + v
        q = q + p
    np.testing.assert_array_equal([out["P"][0], out["Q"][0]], [p, q])


def test_new_commands_travel_on_the_wire_and_through_the_service(image: np.ndarray) -> None:
    f = _two_stages("same")
    f.computation("bw").pipeline("y", ii=3)
    g = ex.gaussian("chan", sizes=(ROWS, COLS))
    g.computation("bx").buffer().partition(1, 2, "block")
    lb = ex.gaussian("lb")
    lb.computation("out").stream(depth=7)
    for fn in (f, g, lb):
        req = encode_request(fn, target="fpga", clock_mhz=250.0)
        back, opts = decode_request(pb.Request.FromString(req.SerializeToString()))
        assert [c.describe() for c in back.commands.items] == [
            c.describe() for c in fn.commands.items]
        assert opts["target"] == "fpga" and opts["target_options"] == {"clock_mhz": 250.0}
    kinds = {c.WhichOneof("command") for c in encode_request(g).function.commands}
    assert "partition_buffer" in kinds
    assert {"line_buffer", "stream"} <= {c.WhichOneof("command")
                                         for c in encode_request(lb).function.commands}
    with EmbeddedClient() as client:
        k = g.compile(target="fpga", service=client)
    np.testing.assert_array_equal(k(inp=image)["out"], reference("gaussian", image))
    assert k.latency_estimate is not None and "run_hls.tcl" in k.sources


def test_halide_pipeline_on_the_fpga_target() -> None:
    pytest.importorskip("halide")
    from frontends.halide import compile_pipeline, paper

    b = paper.cvt_color(48, 130)
    (funcs, sizes), = b.groups
    k = compile_pipeline(funcs, target="fpga")
    ours = k.realize(sizes, **b.inputs)
    (ref,) = b.halide_realize()
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-5, atol=1e-5)


def test_unavailable_without_the_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    import backends.fpga.target as tgt

    monkeypatch.setattr(tgt, "ap_types_dir", lambda: None)
    t = FpgaTarget()
    assert not t.availability().available
    with pytest.raises(me.TargetUnavailable, match=r"pip install --no-deps hls4ml"):
        t.require()


@pytest.mark.skipif(shutil.which("vitis_hls") is None, reason="vitis_hls is not on the PATH "
                    "(synthesis needs Xilinx Vitis; the C-simulation tests run without it)")
def test_vitis_synthesis(tmp_path: Path) -> None:
    k = ex.scale("vec").compile(target="fpga")
    for name, text in k.sources.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run(["vitis_hls", "-f", "run_hls.tcl"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=3600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
