"""Where each output of a Halide pipeline lies: Halide's bounds query sizes every output.

``Pipeline([u, t]).realize([10])`` with ``u(x) = t(x + 1) + 1`` gives ``u`` over
``[0, 9]`` and ``t`` over ``[0, 10]``: before computing anything, Halide's ``realize``
asks the pipeline which region of each output it needs (the realized region, grown by what
the other outputs read of it) and allocates each output buffer so. The translator infers
the same regions (an output's box is the realized region hulled with the reads of the
outputs that consume it); this module records them per returned array, so ``realize``
returns each output over its own region and checks ``out=`` arrays against it, as Halide
requires of the buffers a user passes (it refuses one that does not cover the region).
A region may start below 0 (``u(x) = t(x - 1)``): the array's element 0 is then the
region's min, which :meth:`HalideKernel.output_regions` reports.

An output's own updates grow its region too, by what they write or read of it outside
(``f[x, r] = f[x, r - 1]`` from ``r = 0``): Halide's bounds query sizes the buffer so.

Halide's ``realize(sizes)`` crops every returned buffer back to the realized region when
the first one's region differs from it (Pipeline::realize tests ``r[0]`` only):
``Pipeline([t, u])`` with ``u`` reading ``t`` beyond, or a single ``f`` grown by its own
updates, returns every output over the realized region, though it computes them over the
larger one; ``[u, t]`` returns ``t`` whole (observed on Halide 19 and 21; a buffer the user
passes must cover the larger region in both cases). We compute each output over its
region either way and, in the first case, return the realized part of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from frontends.halide.translate import FuncInfo


@dataclass(frozen=True)
class OutputArray:
    """One array ``realize`` returns: its label (``f`` or ``f[k]`` for a Tuple element),
    the kernel result it is (a computation's or a buffer's name), and its region in
    Halide's dimension order, as (min, extent) per dimension."""

    func: str
    label: str
    key: str
    region: tuple[tuple[int, int], ...]  # computed (an out= array covers it)
    returned: tuple[tuple[int, int], ...]  # what realize(sizes) returns of it

    @property
    def shape(self) -> tuple[int, ...]:
        """The numpy shape (Halide's dimension 0 is numpy's last axis)."""
        return tuple(ext for _, ext in reversed(self.region))

    def returned_part(self, a: np.ndarray) -> np.ndarray:
        """The part of the computed array ``a`` that ``realize`` returns (a copy, so that
        the result is C-contiguous and holds no hidden elements, where it is a part)."""
        if self.returned == self.region:
            return a
        return np.ascontiguousarray(a[tuple(
            slice(rm - m, rm - m + re) for (m, _), (rm, re) in
            zip(reversed(self.region), reversed(self.returned), strict=True))])


@dataclass(frozen=True)
class OutputRegions:
    arrays: tuple[OutputArray, ...]


def output_regions(info: dict[str, FuncInfo], outputs: list[str],
                   sizes: tuple[int, ...]) -> OutputRegions:
    """The arrays of the outputs, in ``realize``'s order, from the inferred boxes."""
    arrays = []
    realized = tuple((0, s) for s in sizes)
    crop = info[outputs[0]].box != [(0, s - 1) for s in sizes]
    for n in outputs:
        fi = info[n]
        assert fi.box is not None
        region = tuple((lo, hi - lo + 1) for lo, hi in fi.box)
        returned = realized if crop else region
        comps = fi.comps[0]
        for vi, c in enumerate(comps):
            label = n if len(comps) == 1 else f"{n}[{vi}]"
            key = fi.storage[vi].name if fi.storage else c.name
            arrays.append(OutputArray(n, label, key, region, returned))
    return OutputRegions(tuple(arrays))


def realized_elsewhere(a: OutputArray, sizes: tuple[int, ...]) -> str:
    """Why an output's region differs from the realized one, for error messages ("" when
    it does not)."""
    realized = tuple((0, s) for s in sizes)
    if a.region == realized:
        return ""
    return (f" (Halide's bounds query: the pipeline computes {a.func!r} over "
            f"{[(m, m + e - 1) for m, e in a.region]}, the realized region "
            f"{[(0, s - 1) for s in sizes]}, what the other outputs read of it and what "
            "its own updates write or read)")
