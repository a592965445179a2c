"""Directives that cannot change a pipeline's values, honoured as no-ops with a warning.

``memoize()`` caches a Func across calls, ``fold_storage()`` folds its buffer,
``align_storage()`` / ``bound_storage()`` pad it, the ``trace_*`` calls and ``print`` /
``print_when`` write to the side, ``prefetch()`` hints the cache,
``store_in(MemoryType...)`` chooses where a buffer lives and ``async()`` runs a producer in
a thread of its own, synchronized with its consumer: the values are the same without them.
The front-end translates the pipeline without them and says so once per Func and directive
(:class:`.errors.IgnoredHalideDirective`), at ``compile_pipeline``, instead of refusing a
pipeline Halide runs.
"""

from __future__ import annotations

import warnings

from frontends.halide.errors import IgnoredHalideDirective
from frontends.halide.graph import definitions, exprs_of, walk
from frontends.halide.hir import HExpr, HPipeline


def is_print(e: HExpr) -> bool:
    """``return_second(halide_print(...), value)``: Halide's ``print`` of ``value``."""
    return (e.kind == "Call" and e.name == "return_second" and len(e.args) == 2
            and e.args[0].kind == "Call" and e.args[0].name == "halide_print")


def ignored(hp: HPipeline, order: list[str]) -> list[tuple[str, str]]:
    """(Func, directive) for every no-op directive of the Funcs in ``order``."""
    out: list[tuple[str, str]] = []
    for name in order:
        f = hp.func(name)
        s = f.schedule
        if s.memoized:
            out.append((name, "memoize()"))
        folded = [sd.var for sd in s.storage_dims if sd.fold_factor is not None]
        if folded:
            out.append((name, f"fold_storage({', '.join(folded)})"))
        for what in ("alignment", "bound"):
            dims = [sd.var for sd in s.storage_dims if getattr(sd, what) is not None]
            if dims:
                word = "align_storage" if what == "alignment" else "bound_storage"
                out.append((name, f"{word}({', '.join(dims)})"))
        if f.traced:
            out.append((name, "trace_loads/trace_stores/trace_realizations"))
        if s.memory_type != "Auto":
            out.append((name, f"store_in(MemoryType.{s.memory_type})"))
        if s.async_:
            out.append((name, "async()"))
        if any(d.schedule.prefetches for d in definitions(f)):
            out.append((name, "prefetch()"))
        if any(is_print(n) for d in definitions(f) for root in exprs_of(d) for n in walk(root)):
            out.append((name, "print/print_when"))
    return out


def warn_ignored(hp: HPipeline, order: list[str]) -> None:
    for func, what in ignored(hp, order):
        warnings.warn(f"Halide Func {func!r}: {what} is not honoured (it does not change the "
                      "results); the pipeline is compiled without it",
                      IgnoredHalideDirective, stacklevel=3)
