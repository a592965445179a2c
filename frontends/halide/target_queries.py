"""Halide's target queries, answered for the machine the target builds for.

``hl.target_arch_is(arch)``, ``target_os_is(os)``, ``target_bits()``,
``target_has_feature(feature)`` and ``target_natural_vector_size(type)`` reach the
serialized pipeline as ``PureIntrinsic`` calls (the enum's value, or a zero of the type,
as their argument); Halide replaces them by constants for the target it compiles for.
Here that target is the machine the middle-end target builds for, as its compiler
describes it (``me.target_machine``: the predefined macros of a ``-march=native``
compile), so a pipeline that picks a code path by the host's ISA picks the one Halide's
``realize(sizes, hl.get_host_target())`` picks on the same machine, whatever the ISA:

* the arch from ``__x86_64__`` / ``__aarch64__`` ..., the OS from ``__linux__`` /
  ``_WIN32`` / ``__APPLE__``, the bits from ``__SIZEOF_SIZE_T__`` (Halide: size_t's);
* x86 features as Halide's host detection sets them (``src/runtime/x86_cpu_detect.h``):
  SSE41, AVX, F16C, FMA, FMA4, AVX2 from their macros; AVX512 (F and CD), AVX512_KNL
  (+ PF, ER), AVX512_Skylake (+ VL, BW, DQ), AVX512_Cannonlake (+ IFMA). JIT and
  UserContext are true (our ``realize`` stands for Halide's, which adds them: measured on
  Halide 21 with ``get_host_target()`` and the JIT target); every other feature (other
  architectures' ISAs, and codegen modes: Debug, NoAsserts, CUDA, StrictFloat, ...) is
  false, as in Halide's host target;
* ``natural_vector_size`` by Halide's x86 rule (64 bytes with AVX-512BW for integers and
  AVX-512F for floats, 32 with AVX2, or with AVX for floats, else 16), 16 bytes on ARM
  without SVE; divided by the type's bytes.

Refused in one line: the queries on a target that does not say which machine it builds
for (a device, a simulator); the x86 features Halide decides by CPU model
(AVX512_SapphireRapids, AVX512_Zen4, AVX512_Zen5, AVXVNNI, AVX10_1, X86APX) on a machine
where the compiler says they may apply; features of non-x86 machines, and the vector size
of other architectures (or with SVE, whose length is known only at run time).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import halide as hl

from frontends.halide.errors import UnsupportedHalideFeature
from frontends.halide.graph import rebuild, walk
from frontends.halide.hir import HExpr, HFunc, HPipeline, HType
from middleend import Machine, target_machine

QUERIES = frozenset({"target_arch_is", "target_os_is", "target_bits", "target_has_feature",
                     "target_natural_vector_size"})

_BOOL = HType("uint", 1)
_INT = HType("int", 32)

# Halide x86 feature -> the compiler macros that must all be defined
_X86: dict[str, tuple[str, ...]] = {
    "SSE41": ("__SSE4_1__",), "AVX": ("__AVX__",), "F16C": ("__F16C__",),
    "FMA": ("__FMA__",), "FMA4": ("__FMA4__",), "AVX2": ("__AVX2__",),
    "AVX512": ("__AVX512F__", "__AVX512CD__"),
    "AVX512_KNL": ("__AVX512F__", "__AVX512CD__", "__AVX512PF__", "__AVX512ER__"),
    "AVX512_Skylake": ("__AVX512F__", "__AVX512CD__", "__AVX512VL__", "__AVX512BW__",
                       "__AVX512DQ__"),
    "AVX512_Cannonlake": ("__AVX512F__", "__AVX512CD__", "__AVX512VL__", "__AVX512BW__",
                          "__AVX512DQ__", "__AVX512IFMA__"),
}
# x86 features Halide's detection decides by CPU family and model: the macro under which
# they may apply (refused there, false elsewhere)
_X86_BY_MODEL = {"AVX512_SapphireRapids": "__AVX512F__", "AVX512_Zen4": "__AVX512F__",
                 "AVX512_Zen5": "__AVX512F__", "AVX10_1": "__AVX512F__",
                 "AVXVNNI": "__AVXVNNI__", "X86APX": "__APX_F__"}
_ARCHES = (("X86", ("__x86_64__", "__i386__")), ("ARM", ("__aarch64__", "__arm__")),
           ("POWERPC", ("__powerpc__", "__PPC__")), ("RISCV", ("__riscv",)),
           ("WebAssembly", ("__wasm__",)), ("Hexagon", ("__hexagon__",)))
_OSES = (("Windows", "_WIN32"), ("OSX", "__APPLE__"), ("Linux", "__linux__"))


def _names(enum: Any) -> dict[int, str]:
    return {int(v): n for n, v in enum.__members__.items()}


class _Answers:
    """The queries' values for one machine (``target`` names it in errors only)."""

    def __init__(self, machine: Machine, target: str) -> None:
        self.m, self.target = machine, target
        self.arch = next((a for a, ms in _ARCHES if any(machine.defines(x) for x in ms)),
                         "ArchUnknown")
        self.os = next((o for o, m in _OSES if machine.defines(m)), "OSUnknown")
        self.features = _names(hl.TargetFeature)

    def has(self, feature: str, func: str) -> bool:
        if self.arch != "X86":
            raise UnsupportedHalideFeature(func, None, f"target_has_feature({feature}) on a "
                                           f"{self.arch} machine (answered for x86 hosts)")
        if feature in ("JIT", "UserContext"):
            return True  # Halide's realize JIT-compiles, with a user context
        if feature in _X86_BY_MODEL:
            if self.m.defines(_X86_BY_MODEL[feature]):
                raise UnsupportedHalideFeature(
                    func, None, f"target_has_feature({feature}): Halide decides it by the "
                    "CPU's model, not answered from the compiler's description of this one")
            return False
        return all(self.m.defines(x) for x in _X86.get(feature, ("?",)))

    def vector_size(self, t: HType, func: str) -> int:
        size = max(1, t.bits // 8)
        is_int = t.code in ("int", "uint")
        if self.arch == "X86":
            if is_int and self.has("AVX512_Skylake", func):
                return 64 // size
            if t.code == "float" and self.has("AVX512", func):
                return 64 // size
            if self.has("AVX2", func) or (not is_int and self.has("AVX", func)):
                return 32 // size
            return 16 // size
        if self.arch == "ARM" and not self.m.defines("__ARM_FEATURE_SVE"):
            return 16 // size
        raise UnsupportedHalideFeature(func, None, f"target_natural_vector_size on a "
                                       f"{self.arch} machine (answered for x86, and ARM "
                                       "without SVE)")

    def bits(self) -> int:
        return 8 * int(self.m.value("__SIZEOF_SIZE_T__") or "8")

    def answer(self, e: HExpr, func: str) -> HExpr:
        """The constant ``e`` (a query) is on this machine."""
        if e.name == "target_bits":
            return HExpr("IntImm", _INT, value=self.bits())
        if e.name == "target_natural_vector_size":
            (arg,) = e.args
            assert arg.type is not None
            return HExpr("IntImm", _INT, value=self.vector_size(arg.type, func))
        (arg,) = e.args
        v = int(arg.value)  # type: ignore[arg-type]
        if e.name == "target_arch_is":
            got = _names(hl.TargetArch).get(v) == self.arch
        elif e.name == "target_os_is":
            got = _names(hl.TargetOS).get(v) == self.os
        else:
            got = self.has(self.features.get(v, f"#{v}"), func)
        return HExpr("UIntImm", _BOOL, value=int(got))


def _is_query(e: HExpr) -> bool:
    return e.kind == "Call" and e.name in QUERIES and e.call_type == "PureIntrinsic"


def _map_expr(root: HExpr, answers: _Answers, func: str) -> HExpr:
    """``root`` with every query replaced by its answer (RDom bounds included)."""
    return rebuild(root, lambda n: answers.answer(n, func) if _is_query(n) else None)


def _rebuild(obj: Any, answers: _Answers, func: str) -> Any:
    """``obj`` (a HIR record, a tuple of them, an expression) with the queries answered;
    the very object where nothing changed."""
    if isinstance(obj, HExpr):
        return _map_expr(obj, answers, func)
    if isinstance(obj, tuple):
        new = tuple(_rebuild(o, answers, func) for o in obj)
        return obj if all(a is b for a, b in zip(new, obj, strict=True)) else new
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        func = obj.name if isinstance(obj, HFunc) else func
        for f in dataclasses.fields(obj):
            if f.name == "funcs_by_name":
                continue
            v = getattr(obj, f.name)
            nv = _rebuild(v, answers, func)
            if nv is not v:
                changes[f.name] = nv
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj


def _first_query(hp: HPipeline) -> tuple[str, str] | None:
    """(Func or "pipeline", query name) of a query anywhere in ``hp``, else None."""
    def roots(obj: Any) -> Any:
        if isinstance(obj, HExpr):
            yield obj
        elif isinstance(obj, tuple):
            for o in obj:
                yield from roots(o)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                if f.name != "funcs_by_name":
                    yield from roots(getattr(obj, f.name))

    for owner, obj in [*((f.name, f) for f in hp.funcs), ("pipeline", hp.requirements),
                       ("pipeline", hp.parameters)]:
        for r in roots(obj):
            for n in walk(r):
                if _is_query(n):
                    return owner, n.name
    return None


def answer_target_queries(hp: HPipeline, target: str) -> HPipeline:
    """``hp`` with Halide's target queries replaced by their values on the machine the
    ``target`` builds for (``hp`` itself when it has none: the machine is not probed)."""
    first = _first_query(hp)
    if first is None:
        return hp
    machine = target_machine(target)
    if machine is None:
        raise UnsupportedHalideFeature(
            first[0], None, f"{first[1]}() on the {target} target, which does not say which "
            "machine its code runs on")
    answers = _Answers(machine, target)
    out = _rebuild(hp, answers, "pipeline")
    return dataclasses.replace(out, funcs_by_name={f.name: f for f in out.funcs})
