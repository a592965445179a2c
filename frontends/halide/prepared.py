"""A repeated ``realize``: a call that matches an earlier one skips what that call did.

Why: Halide's own ``realize`` costs about 2 us; ours, translating nothing, still reads the
inputs into arrays and scalars, runs Halide's checks, looks its build up by specialization
and checks every array against the kernel's signature: about 15 us, and 100-200 us once
a kernel has streamed a large image through the caches (every object that path touches
is then a cache miss). On a 2 ms pipeline that is 5-10% of the call.

A call with the same sizes, the same input shapes, strides and dtypes, the same Param
values (type and value) and ``out=`` arrays of the same shapes and dtypes as a prepared
one takes the same build, passes the same checks (they read only those, :mod:`.checks`;
the kernel's own checks read the parameters those fix) and hands the kernel the same
parameters: only the arrays' addresses may differ, so the one check that depends on them,
that no output overlaps another argument, is made again (on the addresses, as
``np.may_share_memory`` bounds them), and the kernel's C entry is called directly
(:meth:`~middleend.target.kernel.Kernel.raw_entry`; other targets' kernels through
:meth:`~middleend.target.kernel.Kernel.run_prepared`). Any difference, an ``hl.Buffer`` or
a non-contiguous input included, takes the ordinary path, whose errors are the ones users
see. A :class:`Prepared` keeps no array of a call, only shapes (and the build's own
constant inputs). Where the call passes ``out=`` arrays and the kernel has a packed C
entry, the same checks and the call run in C (:mod:`frontends.fastcall`: 23-52 us against 66-118
us in Python after a large kernel, Halide 38-72), this Python code serving what the C
stub does not match. :class:`~frontends.halide.pipeline.HalideKernel` prepares a call that
takes the build the call before it took (a caller whose sizes change every call pays
nothing for it) and keeps the last four.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontends.fastcall import MISS, make_stub
from frontends.halide.outputs import OutputArray


@dataclass(frozen=True)
class Prepared:
    """What one ``realize_with(sizes, inputs, out)`` call decided, for repeating it.

    Per kernel argument (its position in the signature): ``images``, (name, shape,
    strides, dtype, position) per ImageParam; ``scalars``, (name, type, value) per Param as
    given; ``outs``, (shape, dtype, position) per ``out=`` array, ``out_list`` saying
    whether they came as a list (None: the call allocated its outputs); ``allocs``,
    (position, shape, dtype, zeroed) per output the kernel allocates; ``base``, the arrays
    every call passes (constants and 0-d scalars, read only; None elsewhere) and
    ``base_addresses`` theirs; ``nbytes`` per argument; ``pairs``, the arguments that
    must not overlap (one of them written); ``returned``, per array realize returns, its
    argument and region. ``entry``: the kernel's C entry (``Kernel.raw_entry``), called
    directly, or None (``Kernel.run_prepared``). ``stub``: the same call checked and made
    in C (:func:`frontends.fastcall.make_stub`), tried first; None where there is none (an
    allocating call, a kernel without a packed entry, no extension)."""

    sizes: tuple[int, ...]
    images: tuple[tuple[str, tuple[int, ...], tuple[int, ...], np.dtype, int], ...]
    scalars: tuple[tuple[str, type, Any], ...]
    out_list: bool | None
    outs: tuple[tuple[tuple[int, ...], np.dtype, int], ...]
    allocs: tuple[tuple[int, tuple[int, ...], np.dtype, bool], ...]
    base: tuple[np.ndarray | None, ...]
    base_addresses: tuple[int, ...]
    nbytes: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...]
    kernel: Any
    entry: Any
    params: tuple[int, ...]
    returned: tuple[tuple[int, OutputArray], ...]
    stub: Any = None

    def call(self, sizes: Sequence[int], inputs: Mapping[str, Any], out: Any) -> Any:
        """The result of ``realize_with(sizes, inputs, out)`` if the call matches this one
        (the kernel run on the new arrays), else :data:`MISS` (nothing run). One flat
        function on purpose: after a kernel has streamed a large image, every object and
        function this path touches is a cache miss (see the module's docstring)."""
        if tuple(sizes) != self.sizes or len(inputs) != len(self.images) + len(self.scalars):
            return MISS
        arrays = list(self.base)
        addresses = list(self.base_addresses)
        for name, shape, strides, dtype, pos in self.images:
            a = inputs.get(name)
            if not (type(a) is np.ndarray and a.shape == shape and a.strides == strides
                    and a.dtype == dtype and a.flags.aligned):
                return MISS
            arrays[pos] = a
        for name, kind, value in self.scalars:
            v = inputs.get(name, MISS)
            if type(v) is not kind or not v == value or (
                    v == 0 and math.copysign(1.0, v) != math.copysign(1.0, value)):
                return MISS  # -0.0 == 0.0, but 1 / w tells them apart
        if self.out_list is None:
            if out is not None:
                return MISS
            given: list[np.ndarray] = []
        else:
            if isinstance(out, list | tuple) != self.out_list:
                return MISS
            given = list(out) if self.out_list else [out]
            if len(given) != len(self.outs):
                return MISS
            for a, (shape, dtype, pos) in zip(given, self.outs, strict=True):
                if not (type(a) is np.ndarray and a.shape == shape and a.dtype == dtype
                        and (fl := a.flags).c_contiguous and fl.aligned and fl.writeable):
                    return MISS
                arrays[pos] = a
        for pos, shape, dtype, zeroed in self.allocs:
            arrays[pos] = (np.zeros if zeroed else np.empty)(shape, dtype=dtype)
        if self.entry is None:
            self.kernel.run_prepared(list(self.params), arrays)
        else:
            for pos, a in enumerate(arrays):
                if addresses[pos] == 0:
                    addresses[pos] = a.__array_interface__["data"][0]
            nb = self.nbytes
            if any(addresses[i] < addresses[j] + nb[j] and addresses[j] < addresses[i] + nb[i]
                   for i, j in self.pairs):
                self.kernel.run_prepared(list(self.params), arrays)  # raises: they overlap
            else:
                rc = self.entry(*self.params, *addresses)
                if rc != 0:
                    self.kernel.raise_status(rc)
        if self.out_list is None:
            res = [r.returned_part(arrays[i]) for i, r in self.returned]
        else:
            res = given
        return res[0] if len(res) == 1 else res


def prepare(sizes: Sequence[int], inputs: Mapping[str, Any], out: Any,
            args: Mapping[str, Any], names: Mapping[str, str], kernel: Any,
            regions: Sequence[OutputArray]) -> Prepared | None:
    """The :class:`Prepared` call of a checked ``realize_with`` (``args``: the keyword
    arguments it passes to ``kernel``; ``names``: our argument name -> the input it
    comes from, for the ImageParams), or None where it cannot be repeated this way
    (an input not a C-contiguous ndarray, a kernel argument that is neither an input, an
    output nor a read-only array of the build, ...)."""
    image_names = set(names.values())
    for name, v in inputs.items():
        if name in image_names:
            if type(v) is not np.ndarray or not v.flags.c_contiguous:
                return None  # an hl.Buffer, or an array realize would copy
        elif not isinstance(v, int | float | bool | np.generic):
            return None
    given = [] if out is None else (list(out) if isinstance(out, list | tuple) else [out])
    by_key = {r.key: k for k, r in enumerate(regions)}
    plan = kernel.plan(**args)  # checked as the call was; nothing allocated
    n = len(plan.names)
    images, outs, allocs = [], [], []
    base: list[np.ndarray | None] = [None] * n
    nbytes = [0] * n
    for pos, (name, absent, writes) in enumerate(zip(plan.names, plan.absent, plan.writes,
                                                     strict=True)):
        if name in names:
            a = inputs[names[name]]
            images.append((names[name], a.shape, a.strides, a.dtype, pos))
        elif out is not None and name in by_key:
            a = given[by_key[name]]
            outs.append((a.shape, a.dtype, pos))
        elif absent is not None:
            shape, dtype, zeroed = absent
            allocs.append((pos, shape, dtype, zeroed))
            nbytes[pos] = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            continue
        elif writes or not isinstance(args[name], np.ndarray):
            return None
        else:
            a = base[pos] = args[name]
        nbytes[pos] = a.nbytes
    if 0 in nbytes:
        return None  # an empty array: the kernel is handed element 0 of another
    scalars = tuple((name, type(v), v) for name, v in sorted(inputs.items())
                    if name not in image_names)
    index = {nm: i for i, nm in enumerate(plan.names)}
    entry = kernel.raw_entry()
    out_list = None if out is None else isinstance(out, list | tuple)
    sizes_t = tuple(int(s) for s in sizes)
    addresses = tuple(0 if a is None else a.__array_interface__["data"][0] for a in base)
    packed = kernel.packed_entry() if out_list is not None and not allocs else None
    stub = None if packed is None else make_stub(
        sizes=sizes_t, images=tuple(images), scalars=scalars, out_list=out_list,
        outs=tuple(outs), params=tuple(plan.params), base_addresses=addresses,
        nbytes=tuple(nbytes), pairs=plan.pairs, entry=packed, on_error=kernel.raise_status,
        keep=tuple(base))
    return Prepared(
        sizes_t, tuple(images), scalars, out_list, tuple(outs), tuple(allocs),
        tuple(base), addresses, tuple(nbytes), plan.pairs,
        kernel, entry, plan.params, tuple((index[r.key], r) for r in regions), stub)
