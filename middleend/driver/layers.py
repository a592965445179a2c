"""The four layers as text, in the ISL notation of the papers (``f.layers()``, the Lower
RPC, ``middleend layers``): what the compiler made of the program, layer by layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import islpy as isl

from ..ir.loopast import BufAccess, BufferDecl, IExpr
from ..ir.printing import expr_str, iexpr_str
from ..passes.layer4 import Op

if TYPE_CHECKING:
    from .lowering import Lowered

LAYER_TITLES = ("Layer I (abstract algorithm)", "Layer II (computation placement)",
                "Layer III (data)", "Layer IV (allocation, communication)")


def layers_sections(low: Lowered) -> tuple[str, str, str, str]:
    """Layers I, II, III and IV as text."""
    l2 = []
    for n in low.ts.order:
        s = low.ts.comps[n]
        tags = ", ".join(f"{d}({t})" for d, t in s.tags.items())
        l2.append(f"{s.full}" + (f"   tags: {tags}" if tags else ""))
    l3 = []
    cb = isl.AstBuild.from_context(low.l1.context)
    for b in low.l3.buffers.values():
        la = low.ph.local.get(b.name)
        if la is not None and not b.sizes:  # a copy's destination: sized per iteration
            sizes = ", ".join(iexpr_str(x) for x in _decl(low, b.name))
        else:
            sizes = ", ".join(cb.expr_from_pw_aff(x.project_domain_on_params()).to_C_str()
                              for x in b.sizes)
        fold = f" storage_fold {b.fold}" if b.fold else ""
        mem = ""
        if low.dev.on_device:
            m = low.dev.memory.get(b.name, "host")
            mem = "  memory: " + {"both": "host and device (host_to_device/device_to_host "
                                  "copies)", "device": "device only"}.get(
                                      m, _MEMORY_TEXT.get(m, m))
        l3.append(f"buffer {b.name}[{sizes}] {b.dtype.name} {b.role}{fold}{mem}")
    for n in low.ts.order:
        if n in low.l4.ops:
            continue
        acc = str(low.l3.logical[n].intersect_domain(low.l1.comps[n].domain))
        if n in low.l3.may:
            at = ", ".join(expr_str(e) for e in low.l3.index[n])
            acc += f"   (may write: data-dependent index [{at}], checked at run time)"
        l3.append(acc)
    return low.l1.text(), "\n".join(l2), "\n".join(l3), "\n".join(_layer4(low))


def _decl(low: Lowered, buf: str) -> tuple[IExpr, ...]:
    return next(b.sizes for b in low.program.buffers if b.name == buf)


def _layer4(low: Lowered) -> list[str]:
    """Allocations, then each operation: its instances in the time-space, what it reads
    and writes (exact, from ISL), and the reads a copy serves."""
    out = []
    for b in low.program.buffers:
        if b.role == "temporary":
            la = low.ph.local.get(b.name)
            where = "function entry" if la is None else f"{la.where} ({_copies(low, b)})"
            if (la is None and b.memory == "device") or b.memory in ("gpu_global",
                                                                      "gpu_constant"):
                where += f", in {_MEMORY_TEXT[b.memory]} memory"
            sizes = ", ".join(iexpr_str(x) for x in b.sizes)
            out.append(f"allocate {b.name}[{sizes}] at {where}")
    for o in low.l4.ops.values():
        out.extend(_operation(low, o))
    if not low.l4.ops:
        out.append("no communication or synchronisation")
    return out


_MEMORY_TEXT = {"host": "host", "device": "gpu global", "gpu_global": "gpu global",
                "gpu_shared": "gpu shared", "gpu_local": "gpu local (registers)",
                "gpu_constant": "gpu constant"}


def _copies(low: Lowered, b: BufferDecl) -> str:
    """How many copies of a loop-local buffer exist at once: on a GPU one per block
    (shared memory) outside the thread loops, one per thread inside them."""
    if b.memory in ("host", "both"):
        return "one array per thread"
    if b.memory == "gpu_shared":
        return "one array per block, in gpu shared memory"
    la = low.ph.local[b.name]
    writers = [n for n, info in low.program.stmts.items()
               if isinstance(info.store, BufAccess) and info.store.buffer == b.name]
    threads = any(2 * d + 1 < la.dim for n in writers
                  for d in low.ts.gpu_dims(n, "gpu_thread"))
    if b.memory == "gpu_local" or threads:
        return "one array per GPU thread"
    return "one array per block, in gpu shared memory"


def _operation(low: Lowered, o: Op) -> list[str]:
    s = low.ts.comps[o.name]
    lines = [f"{o.kind} {o.name}: {o.described}",
             f"  schedule {s.full}"]
    inst = s.ext_domain if s.ext_domain is not None else o.domain
    proj = s.proj
    side = {"host_to_device": ("", " (its device copy)"),
            "device_to_host": (" (its device copy)", "")}.get(o.kind, ("", ""))
    if o.read is not None and proj is not None:
        lines.append(f"  reads    {proj.apply_range(o.read).intersect_domain(inst).coalesce()}"
                     + side[0])
    if o.write is not None and proj is not None:
        w = proj.apply_range(o.write).intersect_domain(inst).coalesce()
        la = low.ph.local.get(o.dst or "")
        lines.append(f"  writes   {w}" + (" (minus the tile's origin)" if la else "")
                     + side[1])
    if o.peer is not None:
        lines.append(f"  peer     {expr_str(o.peer)}   properties: "
                     f"{', '.join(o.properties) or '-'}")
    if o.refs:
        readers = sorted({r.comp for r in low.exp.reads if r.ref in o.refs})
        lines.append(f"  serves   the reads of {o.src!r} by {', '.join(readers)}")
    return lines


def format_layers(sections: Sequence[str]) -> str:
    return "\n\n".join(f"== {t} ==\n{s}" for t, s in zip(LAYER_TITLES, sections,
                                                          strict=True))


def layers_text(low: Lowered) -> str:
    return format_layers(layers_sections(low))
