"""Repeated calls of a Julia kernel in C: after a call of a specialization, the same
specialization called again with arrays of the same shapes, dtypes and layouts, Float64
values of any value and the same Int values goes straight to the kernel's packed entry
through an :func:`frontends.fastcall.make_args_stub` stub, which checks just that (and
that no written array overlaps another argument), as the specialization lookup
(:meth:`~frontends.julia.api.JuliaKernel.spec_of`) and the kernel's own checks would.

Why: those two cost 20-40 us a call in Python with the interpreter's code and data in
the caches and 120-200 us after a kernel has streamed large arrays, which is 5-15% of
the 1-2 ms PolyBench kernels (atax, bicg, gesummv) when numpy's BLAS calls run between
ours. Anything a stub does not match (another specialization, a numpy integer for an Int,
a read-only array the kernel writes, ...) takes the ordinary path and gets its errors."""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.fastcall import make_args_stub


def args_stub(args: tuple[Any, ...], spec: Any, buffer_of_arg: dict[int, str],
              returns: tuple[str, Any] | None, kernel: Any,
              kw: dict[str, np.ndarray]) -> Any:
    """The stub repeating a call that just ran ``kernel(**kw)`` for ``args`` (of the
    specialization ``spec``), or None where it cannot be repeated so: the kernel has no
    packed entry (another target), allocates an argument, returns a new array, or takes
    a scalar other than a Float64 value (an Int the kernel reads is a constant of its
    specialization, checked by value)."""
    entry = kernel.packed_entry()
    if entry is None or not (returns is None or returns[0] == "arg"):
        return None
    plan = kernel.plan(**kw)
    if any(a is not None for a in plan.absent):
        return None
    slot = {name: i for i, name in enumerate(plan.names)}
    nbytes = [0] * len(plan.names)
    images, values = [], []
    for k, name in buffer_of_arg.items():
        x, t, pos = args[k], spec.types[k], slot[name]
        if t.ndim:
            images.append((k, x.dtype, pos, x.shape, x.strides, plan.writes[pos]))
            nbytes[pos] = x.nbytes
        elif t.elem.numpy == np.float64 and not plan.writes[pos]:
            values.append((k, pos))
            nbytes[pos] = 8
        else:
            return None
    if 0 in nbytes:
        return None  # an empty array, or an argument the call did not pass
    ints = []
    for k, (t, value) in enumerate(zip(spec.types, spec.ints, strict=True)):
        if t.ndim == 0 and k not in buffer_of_arg:
            if value is None or not isinstance(args[k], int):
                return None  # a Bool or Float the kernel does not read: its type matters
            ints.append((k, value))
    return make_args_stub(
        nargs=len(args), images=tuple(images), values=tuple(values), ints=tuple(ints),
        params=tuple(plan.params), nbytes=tuple(nbytes), pairs=plan.pairs,
        result=None if returns is None else int(returns[1]), entry=entry,
        on_error=kernel.raise_status)
