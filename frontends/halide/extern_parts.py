"""The Funcs that cut a pipeline at its extern stages (:mod:`.externs`): a stand-in per
extern, and a wrapper per Func argument of an extern.

Both are built by Halide itself from an ImageParam per Tuple element and int32 Params for
the mins, then read back, so their definitions and default schedules are Halide's and the
names Halide gives them are the ones used (it renames a Func whose name a live one has):

* the **stand-in** of an extern ``e`` (one ImageParam ``e_extern`` per output, holding the
  region the extern computed from the mins ``m``): ``e(x) = e_extern(x - m)``, a Tuple
  of them for a Tuple extern. Every part of the split reads it in place of ``e``.
* the **wrapper** of a Func argument ``g``: ``w(x) = g(x + m)`` (a Tuple of ``g``'s
  elements for a Tuple Func), the one output of the part that computes the region the
  extern's bounds query asks of ``g``; built from ``w(x) = src(x + m)`` with the calls of
  ``src`` made calls of ``g``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import halide as hl

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import walk
from frontends.halide.hir import HExpr, HFunc, HParameter, HPipeline, HType
from frontends.halide.reader import read_pipeline


def hl_type(t: HType) -> Any:
    """The Halide type of an extern's buffer (a scalar element type)."""
    if t.code == "uint" and t.bits == 1:
        return hl.Bool()
    make = {"int": hl.Int, "uint": hl.UInt, "float": hl.Float}.get(t.code)
    if make is None or t.lanes != 1:
        raise UnsupportedHalideFeature(None, None, f"an extern buffer of type {t}")
    return make(t.bits)


class Names:
    """Fresh names beside the pipeline's Funcs and parameters."""

    def __init__(self, hp: HPipeline) -> None:
        self.used = {f.name for f in hp.funcs} | {p.name for p in hp.external_parameters}

    def __call__(self, base: str) -> str:
        base = re.sub(r"\W", "_", base)  # Halide's names may hold '$' or '.'
        name, k = base, 1
        while name in self.used or f"{name}_im" in self.used:
            name, k = f"{base}{k}", k + 1
        self.used |= {name, f"{name}_im"}
        return name


@dataclass(frozen=True)
class Template:
    """``func(args) = (srcs[k](args + sign * mins))_k`` read back: the Func, the Funcs
    Halide makes for the ImageParams (which ``func`` calls) and the parameters."""

    func: HFunc
    others: tuple[HFunc, ...]
    params: tuple[HParameter, ...]


def template(func: str, args: Sequence[str], types: Sequence[HType], srcs: Sequence[str],
             mins: Sequence[str], sign: int) -> Template:
    """The Func ``func`` reading the ImageParams ``srcs`` (one per Tuple element, of
    ``types``) at ``args + sign * mins``, the mins int32 Params."""
    imgs = [hl.ImageParam(hl_type(t), len(args), s) for t, s in zip(types, srcs, strict=True)]
    ps = [hl.Param(hl.Int(32), m, 0) for m in mins]
    vs = [hl.Var(a) for a in args]
    at = [v + p if sign > 0 else v - p for v, p in zip(vs, ps, strict=True)]
    f = hl.Func(func)
    if len(imgs) == 1:
        f[vs] = imgs[0][at]
    else:
        f[vs] = hl.Tuple([im[at] for im in imgs])
    got = read_back(f)
    main = got.func(f.name())
    names = {p.name for p in got.external_parameters}
    if names != {*srcs, *mins}:
        raise UnsupportedHalideFeature(func, None, f"extern stand-in parameters {names}")
    main = dataclasses.replace(main, name=func, origin_name=func)
    return Template(main, tuple(g for g in got.funcs if g.name != f.name()),
                    tuple(got.external_parameters))


def read_back(f: Any) -> HPipeline:
    """Our form of the pipeline of the Func ``f``."""
    return read_pipeline(hl.serialize_pipeline(hl.Pipeline(f)))


def image_funcs(w: HFunc) -> list[str]:
    """Per Tuple element of a template, the Func it calls (the one Halide made for its
    ImageParam)."""
    assert w.init is not None
    out: list[str] = []
    for v in w.init.values:
        got = [n.name for n in walk(v) if n.kind == "Call" and n.call_type == "Halide"]
        if not got:
            raise UnsupportedHalideFeature(w.name, None, "an extern stand-in without its "
                                           "image")
        out.append(got[0])
    return out


def wrapper_of(w: HFunc, func: str, func_index: int) -> HFunc:
    """The template ``w`` with its calls of its k-th image Func made calls of element k of
    ``func``."""
    assert w.init is not None
    srcs = image_funcs(w)
    values = tuple(_retarget(v, src, func, func_index, k)
                   for k, (v, src) in enumerate(zip(w.init.values, srcs, strict=True)))
    return dataclasses.replace(w, init=dataclasses.replace(w.init, values=values))


def _retarget(root: HExpr, src: str, func: str, func_index: int, value_index: int) -> HExpr:
    if root.kind == "Call" and root.call_type == "Halide" and root.name == src:
        args = tuple(_retarget(a, src, func, func_index, value_index) for a in root.args)
        return dataclasses.replace(root, args=args, call_type="Halide", name=func,
                                   func_index=func_index, value_index=value_index,
                                   image_name="", param_name="")
    if not root.args:
        return root
    return dataclasses.replace(root, args=tuple(
        _retarget(a, src, func, func_index, value_index) for a in root.args))


__all__ = ["Names", "Template", "hl_type", "image_funcs", "template", "wrapper_of"]
