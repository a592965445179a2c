"""The compile-time checks of a pipeline's extern stages (:mod:`.externs`): what is refused
in one line (Halide's own refusals in its words, and what the split cannot express), and
the schedules accepted as computing at root, each with one warning.

``compute_at`` of an extern, and of a Func an extern reads, is honoured by computing it at
root: the pipeline is cut at the extern, so the extern runs once over the union of the
regions its consumers read (and a Func it reads once over the region its bounds query
asks for). Halide assumes an extern's values do not depend on the region it is asked for
(it asks for overlapping regions itself), and a Func's values never depend on where it is
computed, so the results are Halide's; the warning says where the work moved.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

from frontends.halide.errors import IgnoredHalideDirective, UnsupportedHalideFeature
from frontends.halide.evaluate import unsupported_node
from frontends.halide.extern_call import check_symbol, scalar_supported
from frontends.halide.extern_parts import hl_type
from frontends.halide.hir import HExpr, HFunc, HLoopLevel, HParameter, HPipeline, HType


def at_a_loop(level: HLoopLevel) -> bool:
    return not (level.is_inlined or level.is_root)


def _warn_root(func: str, level: HLoopLevel, what: str, why: str) -> None:
    # stack: _warn_root, check_extern, ExternPipeline.__init__, _with_externs,
    # compile_pipeline, the user's call
    warnings.warn(f"Halide Func {func!r}: compute_at({level.func_name}, {level.var_name}) "
                  f"of {what} is computed at root instead ({why}); the results are the same",
                  IgnoredHalideDirective, stacklevel=6)


def check_extern(f: HFunc, hp: HPipeline, reads: Callable[[str, str], bool]) -> None:
    """Refuse in one line what the split does not run; warn once per Func computed at root
    in place of its ``compute_at``. ``reads(a, b)``: whether Func ``a`` reads ``b``,
    directly or not."""
    name, sym = f.name, f.extern_function_name
    what = f"define_extern({sym})"
    check_symbol(sym, name)
    if f.extern_mangling == "CPlusPlus":
        raise UnsupportedHalideFeature(name, None, f"{what} with C++ name mangling")
    if f.extern_device_api not in ("Host", "None"):
        raise UnsupportedHalideFeature(name, None, f"{what} on device {f.extern_device_api}")
    cl = f.schedule.compute_level
    if at_a_loop(cl) and not reads(cl.func_name, name):
        raise UnsupportedHalideFeature(  # as Halide refuses it
            name, None, f"compute_at({cl.func_name}, {cl.var_name}) of the extern stage: "
            f"an invalid location, since {cl.func_name!r} does not use {name!r}")
    if at_a_loop(cl):
        _warn_root(name, cl, "an extern stage", "one call over the union of the regions its "
                   "consumers read: Halide assumes an extern's values do not depend on the "
                   "region it is asked for")
    for t in f.output_types:
        hl_type(t)
    for a in f.extern_arguments:
        if a.kind == "Func":
            g = hp.func(a.name)
            for t in g.output_types:
                hl_type(t)
            gl = g.schedule.compute_level
            if gl.is_inlined:
                raise UnsupportedHalideFeature(  # Halide's refusal, in its words
                    name, None, f"Func {a.name} cannot be scheduled to be computed "
                    f"inline, because it is used in the externally-computed function "
                    f"{name}")
            if at_a_loop(gl) and not g.extern_function_name:
                _warn_root(a.name, gl, f"a Func read by the extern stage {name!r}",
                           "over the region the extern's bounds query asks for, before the "
                           "extern runs")
        elif a.kind == "Buffer" and not any(b.name == a.name for b in hp.buffers):
            raise UnsupportedHalideFeature(name, None, f"{what}: Buffer {a.name!r} "
                                           "missing from the serialization")


def scalar_type(f: HFunc, e: HExpr, params: Mapping[str, HParameter]) -> HType:
    """The type of an Expr argument of an extern: one known when the pipeline is called,
    as Halide evaluates it then (before the extern's bounds query): constants, scalar
    Params, an ImageParam's sizes (``im.width()``, ``im.dim(1).min()``, strides) and
    arithmetic of them, which :func:`.evaluate.evaluate` computes with Halide's
    arithmetic per call. A Var, a Func's value or an output's size is refused."""
    t = _type_of(e) if unsupported_node(e, params) is None else None
    if t is None or not scalar_supported(t.code, t.bits) or t.lanes != 1:
        # a computed Expr (x + 1) has neither a name nor a value: its kind says what it is
        what = repr(e.name) if e.name else "" if e.value is None else repr(e.value)
        raise UnsupportedHalideFeature(
            f.name, None, f"define_extern({f.extern_function_name}) with the Expr "
            f"argument {e.kind}{' ' + what if what else ''} (only constants and scalar "
            "Params, an ImageParam's sizes, and arithmetic of them)")
    return t


_BOOL = HType("uint", 1)


def _type_of(e: HExpr) -> HType | None:
    """The type of a scalar expression: the serialization gives it for leaves, casts and
    calls only; an operation's is its operands' (Halide makes them one), a comparison's
    bool."""
    if e.type is not None:
        return e.type
    if e.kind in ("EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not"):
        return _BOOL
    if e.kind in ("Add", "Sub", "Mul", "Div", "Mod", "Min", "Max") and e.args:
        return _type_of(e.args[0])
    if e.kind in ("Select", "Let") and e.args:
        return _type_of(e.args[-1])
    return None


__all__ = ["at_a_loop", "check_extern", "scalar_type"]
