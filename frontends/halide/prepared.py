"""A repeated ``realize``: the call that matches the one before it skips what that call did.

Why: Halide's own ``realize`` costs about 2 us; ours, translating nothing, still reads the
inputs into arrays and scalars, runs Halide's checks, looks its build up by specialization
and checks every array against the kernel's signature: about 15 us, and 100-200 us once
a kernel has streamed a large image through the caches (every object that path touches
is then a cache miss). On a 2 ms pipeline that is 5-10% of the call.

A call with the same sizes, the same input shapes, strides and dtypes, the same Param
values (type and value) and ``out=`` arrays of the same shapes and dtypes as the previous
successful one takes the same build, passes the same checks (they read only those,
:mod:`.checks`; the kernel's own checks read the parameters those fix) and hands the
kernel the same parameters: only the arrays' addresses may differ, so the one check that
depends on them, that no output overlaps another argument, is repeated
(:meth:`~middleend.target.kernel.Kernel.run_prepared`). Any difference, an ``hl.Buffer``
or a non-contiguous input included, takes the ordinary path, whose errors are the ones
users see. Nothing here reads or keeps the arrays themselves: a :class:`Prepared` holds
their shapes only (and the build's constant inputs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontends.halide.outputs import OutputArray

# Where a kernel argument comes from in a prepared call (the first item of a source).
_INPUT, _FIXED, _OUT, _ALLOC = range(4)
MISS = object()  # what Prepared.call returns for a call it does not match


@dataclass(frozen=True)
class Prepared:
    """What one ``realize_with(sizes, inputs, out)`` call decided, for repeating it.

    ``images``: (name, shape, strides, dtype) per ImageParam; ``scalars``: (name, type,
    value) per Param, as given; ``outs``: (shape, dtype) per ``out=`` array, with
    ``out_list`` saying whether they came as a list (None: the call allocated its outputs);
    ``sources``: per kernel argument, ``(_INPUT, name)``, ``(_FIXED, array)`` (a constant or
    a 0-d scalar, read only), ``(_OUT, k)`` or ``(_ALLOC, shape, dtype, zeroed)``;
    ``returned``: per array realize returns, its argument index and region."""

    sizes: tuple[int, ...]
    images: tuple[tuple[str, tuple[int, ...], tuple[int, ...], np.dtype], ...]
    scalars: tuple[tuple[str, type, Any], ...]
    out_list: bool | None
    outs: tuple[tuple[tuple[int, ...], np.dtype], ...]
    kernel: Any
    params: tuple[int, ...]
    sources: tuple[tuple[Any, ...], ...]
    returned: tuple[tuple[int, OutputArray], ...]

    def call(self, sizes: Sequence[int], inputs: Mapping[str, Any], out: Any) -> Any:
        """The result of ``realize_with(sizes, inputs, out)`` if the call matches this one
        (the kernel run on the new arrays), else :data:`MISS` (nothing run)."""
        if tuple(sizes) != self.sizes or len(inputs) != len(self.images) + len(self.scalars):
            return MISS
        for name, shape, strides, dtype in self.images:
            a = inputs.get(name)
            if not (type(a) is np.ndarray and a.shape == shape and a.strides == strides
                    and a.dtype == dtype and a.flags.aligned):
                return MISS
        for name, kind, value in self.scalars:
            v = inputs.get(name, MISS)
            if type(v) is not kind or not v == value or (
                    v == 0 and math.copysign(1.0, v) != math.copysign(1.0, value)):
                return MISS  # -0.0 == 0.0, but 1 / w tells them apart
        outs = self._outs(out)
        if outs is None:
            return MISS
        arrays: list[np.ndarray] = []
        for src in self.sources:
            tag = src[0]
            if tag == _INPUT:
                arrays.append(inputs[src[1]])
            elif tag == _FIXED:
                arrays.append(src[1])
            elif tag == _OUT:
                arrays.append(outs[src[1]])
            else:
                arrays.append((np.zeros if src[3] else np.empty)(src[1], dtype=src[2]))
        self.kernel.run_prepared(list(self.params), arrays)
        if self.out_list is None:
            res = [r.returned_part(arrays[i]) for i, r in self.returned]
        else:
            res = outs
        return res[0] if len(res) == 1 else res

    def _outs(self, out: Any) -> list[np.ndarray] | None:
        """``out`` as its arrays if it is given as before (None or list-ness, count, type,
        shape, dtype, layout, writeable), else None."""
        if self.out_list is None:
            return [] if out is None else None
        if isinstance(out, list | tuple) != self.out_list:
            return None
        arrays = list(out) if self.out_list else [out]
        if len(arrays) != len(self.outs):
            return None
        for a, (shape, dtype) in zip(arrays, self.outs, strict=True):
            if not (type(a) is np.ndarray and a.shape == shape and a.dtype == dtype
                    and (fl := a.flags).c_contiguous and fl.aligned and fl.writeable):
                return None
        return arrays


def prepare(sizes: Sequence[int], inputs: Mapping[str, Any], out: Any,
            args: Mapping[str, Any], names: Mapping[str, str], kernel: Any,
            regions: Sequence[OutputArray]) -> Prepared | None:
    """The :class:`Prepared` call of a checked ``realize_with`` (``args``: the keyword
    arguments it passes to ``kernel``; ``names``: our argument name -> the input it
    comes from, for the ImageParams), or None where it cannot be repeated this way
    (an input not a C-contiguous ndarray, a kernel whose arguments are not all
    arrays of the signature, ...)."""
    image_names = set(names.values())
    images, scalars = [], []
    for name, v in sorted(inputs.items()):
        if isinstance(v, np.ndarray) and name in image_names:
            if type(v) is not np.ndarray or not v.flags.c_contiguous:
                return None
            images.append((name, v.shape, v.strides, v.dtype))
        elif name not in image_names and isinstance(v, int | float | bool | np.generic):
            scalars.append((name, type(v), v))
        else:
            return None  # an hl.Buffer, or something realize converted
    given = [] if out is None else (list(out) if isinstance(out, list | tuple) else [out])
    by_key = {r.key: k for k, r in enumerate(regions)}
    plan = kernel.plan(**args)  # checked as the call was; nothing allocated
    sources: list[tuple[Any, ...]] = []
    for name, absent, writes in zip(plan.names, plan.absent, plan.writes, strict=True):
        if name in names:
            sources.append((_INPUT, names[name]))
        elif out is not None and name in by_key:
            sources.append((_OUT, by_key[name]))
        elif absent is not None:
            sources.append((_ALLOC, *absent))
        elif writes or not isinstance(args[name], np.ndarray):
            return None
        else:
            sources.append((_FIXED, args[name]))
    index = {n: i for i, n in enumerate(plan.names)}
    return Prepared(tuple(int(s) for s in sizes), tuple(images), tuple(scalars),
                    None if out is None else isinstance(out, list | tuple),
                    tuple((a.shape, a.dtype) for a in given), kernel, plan.params,
                    tuple(sources), tuple((index[r.key], r) for r in regions))
