"""The six image kernels of the first paper's FPGA evaluation (convolution, cvtColor,
gaussian, scale, sobel, threshold) on an RGB ``uint8`` image of ``rows x cols x 3``, each
under the two schedules the paper compares, shared by the fpga target's tests and its
benchmark:

* ``"chan"``: channel-parallel, as Xilinx's HLS video library: the column loop pipelined
  at II 1, the three channels of a pixel unrolled inside it;
* ``"vec"``: vectorized along the width as on the paper's FPGA: the column loop split by
  64 and the 64 lanes vectorized (the image travels in 512-bit words: 64 lanes of 8 bits),
  the loop over words pipelined;
* ``"lb"`` (the stencils: convolution, gaussian, sobel): channel-parallel with a line
  buffer, so that each input pixel is read from off-chip memory once; the gaussian's two
  stages also pass ``bx`` through a FIFO (a DATAFLOW region: ``bx`` is never stored whole).

``sizes``: None makes the image sizes parameters ``N`` (rows) and ``M`` (columns); a pair
of ints makes them constants (on-chip buffers then have constant sizes and can be
partitioned).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.expr import cast, clamp, select
from ..ir.function import Computation, Input, Param, Var
from ..ir.types import int32, uint8, uint16
from .function import Function

LANES = 64  # 8-bit lanes of a 512-bit word
SCHEDULES = ("chan", "vec")
LINE_BUFFERED = ("convolution", "gaussian", "sobel")  # kernels with the "lb" schedule


def _sizes(sizes: tuple[int, int] | None) -> tuple[Any, Any]:
    if sizes is None:
        return Param("N", min=3), Param("M", min=3)
    return sizes


def _schedule(comp: Computation, schedule: str, x: str = "x") -> None:
    if schedule in ("chan", "lb"):
        comp.pipeline(x)
        if "c" in [v.name for v in comp.vars]:
            comp.unroll("c")
    elif schedule == "vec":
        comp.vectorize(x, LANES, f"{x}_vo", f"{x}_vi")
        comp.pipeline(f"{x}_vo")
    elif schedule != "none":
        raise ValueError(f"unknown fpga example schedule {schedule!r} (chan, vec, lb or "
                         "none)")


def _pointwise(name: str, schedule: str) -> None:
    if schedule == "lb":
        raise ValueError(f"{name} reads each pixel once already: no line buffer (schedules "
                         "chan, vec or none)")


def _u8(e: Any) -> Any:
    return cast(uint8, clamp(e, 0, 255))


def _i(e: Any) -> Any:
    return cast(int32, e)


def scale(schedule: str = "chan", sizes: tuple[int, int] | None = None) -> Function:
    """``out = min(3 * in / 2, 255)`` per channel."""
    _pointwise("scale", schedule)
    with Function("scale") as f:
        N, M = _sizes(sizes)
        y, x, c = Var("y", 0, N), Var("x", 0, M), Var("c", 0, 3)
        inp = Input("inp", [N, M, 3], uint8)
        out = Computation("out", [y, x, c], _u8(_i(inp[y, x, c]) * 3 // 2))
    _schedule(out, schedule)
    return f


def threshold(schedule: str = "chan", sizes: tuple[int, int] | None = None) -> Function:
    """``out = 255 if in > 127 else 0`` per channel."""
    _pointwise("threshold", schedule)
    with Function("threshold") as f:
        N, M = _sizes(sizes)
        y, x, c = Var("y", 0, N), Var("x", 0, M), Var("c", 0, 3)
        inp = Input("inp", [N, M, 3], uint8)
        out = Computation("out", [y, x, c], select(inp[y, x, c] > 127, cast(uint8, 255),
                                                   cast(uint8, 0)))
    _schedule(out, schedule)
    return f


def cvt_color(schedule: str = "chan", sizes: tuple[int, int] | None = None) -> Function:
    """RGB to gray, in fixed point: ``(77 R + 150 G + 29 B + 128) / 256``."""
    _pointwise("cvtColor", schedule)
    with Function("cvtColor") as f:
        N, M = _sizes(sizes)
        y, x = Var("y", 0, N), Var("x", 0, M)
        inp = Input("inp", [N, M, 3], uint8)
        gray = Computation("gray", [y, x], cast(uint8, (
            77 * _i(inp[y, x, 0]) + 150 * _i(inp[y, x, 1]) + 29 * _i(inp[y, x, 2]) + 128)
            // 256))
    _schedule(gray, schedule)
    return f


def _stencil(name: str, schedule: str, sizes: tuple[int, int] | None,
             body: Callable[[Callable[[int, int], Any]], Any]) -> Function:
    """A 3x3 stencil per channel on the ``(rows-2) x (cols-2)`` interior."""
    with Function(name) as f:
        N, M = _sizes(sizes)
        y, x, c = Var("y", 0, N - 2), Var("x", 0, M - 2), Var("c", 0, 3)
        inp = Input("inp", [N, M, 3], uint8)
        out = Computation("out", [y, x, c], _u8(body(
            lambda dy, dx: _i(inp[y + dy, x + dx, c]))))
    _schedule(out, schedule)
    if schedule == "lb":
        out.line_buffer(inp)
    return f


def convolution(schedule: str = "chan", sizes: tuple[int, int] | None = None) -> Function:
    """The 3x3 sharpening kernel ``[[0, -1, 0], [-1, 5, -1], [0, -1, 0]]``, clamped."""
    return _stencil("convolution", schedule, sizes, lambda p: (
        5 * p(1, 1) - p(0, 1) - p(1, 0) - p(1, 2) - p(2, 1)))


def sobel(schedule: str = "chan", sizes: tuple[int, int] | None = None) -> Function:
    """``|Gx| + |Gy|`` of the 3x3 Sobel operators, clamped to 255."""
    def body(p: Callable[[int, int], Any]) -> Any:
        gx = (p(0, 2) + 2 * p(1, 2) + p(2, 2)) - (p(0, 0) + 2 * p(1, 0) + p(2, 0))
        gy = (p(2, 0) + 2 * p(2, 1) + p(2, 2)) - (p(0, 0) + 2 * p(0, 1) + p(0, 2))
        return select(gx < 0, -gx, gx) + select(gy < 0, -gy, gy)
    return _stencil("sobel", schedule, sizes, body)


def gaussian(schedule: str = "chan", sizes: tuple[int, int] | None = None) -> Function:
    """The separable 3x3 Gaussian ``[1, 2, 1] / 4`` in each direction, in two stages
    (rows then columns) through an on-chip ``uint16`` buffer ``bx``."""
    with Function("gaussian") as f:
        N, M = _sizes(sizes)
        y, x, c = Var("y", 0, N - 2), Var("x", 0, M - 2), Var("c", 0, 3)
        yy = Var("y", 0, N)
        inp = Input("inp", [N, M, 3], uint8)
        bx = Computation("bx", [yy, x, c], cast(uint16, _i(inp[yy, x, c])
                                                 + 2 * _i(inp[yy, x + 1, c])
                                                 + _i(inp[yy, x + 2, c])))
        out = Computation("out", [y, x, c], cast(uint8, (
            _i(bx[y, x, c]) + 2 * _i(bx[y + 1, x, c]) + _i(bx[y + 2, x, c]) + 8) // 16))
    _schedule(bx, schedule)
    _schedule(out, schedule)
    if schedule == "lb":
        bx.line_buffer(inp)
        out.line_buffer(bx)
        bx.stream()
    return f


KERNELS: dict[str, Callable[..., Function]] = {
    "convolution": convolution, "cvtColor": cvt_color, "gaussian": gaussian,
    "scale": scale, "sobel": sobel, "threshold": threshold,
}
