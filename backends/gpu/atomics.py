"""Atomic updates (``comp.atomic()``, Halide's ``atomic()``) as GPU atomic instructions.

An atomic computation's instance is ``b[i] = b[i] op e`` (:mod:`middleend.passes.atomic`);
the legality check lets GPU block and thread loops carry the dependences between its
instances because each one is printed here as one atomic read-modify-write of its element:

* CUDA: ``atomicAdd``/``atomicSub``/``atomicMin``/``atomicMax``/``atomicAnd``/``atomicOr``/
  ``atomicXor`` where CUDA has the instruction for the element type (32-bit integers; 64-bit
  through the ``unsigned long long`` / ``long long`` overloads; float and double add), else
  a compare-and-swap loop (``atomicCAS`` on the element's bits): float min/max/multiply,
  integer multiply.
* OpenCL C: ``atomic_add``... on 32-bit integers (core since OpenCL 1.1), ``atom_add``...
  on 64-bit integers (the ``cl_khr_int64_base_atomics`` / ``cl_khr_int64_extended_atomics``
  extensions, enabled in the source and checked against the device when the kernels are
  loaded, refused by name where it lacks them), and a compare-and-swap loop
  (``atomic_cmpxchg`` / ``atom_cmpxchg`` on the element's bits) for float add, min, max and
  any multiply.

The loop compares bits, not values, so a NaN element cannot spin it forever, and combines
with the same helpers the plain update uses (``me_min_f32``...: Halide's min/max), so an
atomic update stores what the plain one would. Elements narrower than 32 bits (and bool,
float16) have no atomic instruction in either dialect: refused, naming the computation.
A per-thread (private) buffer is no other thread's: its update is printed plainly.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.clike.cruntime import suffix
from middleend.ir.errors import TargetError
from middleend.ir.loopast import Program
from middleend.ir.types import DType

# the middle-end's operator -> the instruction's name (CUDA atomicX, OpenCL atomic_x)
_CUDA = {"add": "Add", "sub": "Sub", "min": "Min", "max": "Max", "bitand": "And",
         "bitor": "Or", "bitxor": "Xor"}
_OPENCL = {"add": "add", "sub": "sub", "min": "min", "max": "max", "bitand": "and",
           "bitor": "or", "bitxor": "xor"}
_COMBINE = {"add": "+", "sub": "-", "mul": "*", "bitand": "&", "bitor": "|", "bitxor": "^"}
BASE64 = "cl_khr_int64_base_atomics"
EXTENDED64 = "cl_khr_int64_extended_atomics"


def _checked(comp: str, op: str, target: str, operand: str, dt: DType, private: bool
             ) -> str | None:
    """Refuse an element type no GPU atomic works on; the plain update of a per-thread
    (private) element, which no other thread touches; else None (print it atomically)."""
    if dt.bits not in (32, 64) or dt.is_bool:
        raise TargetError(
            f"computation {comp!r} is an atomic update of {dt.name} elements, which the gpu "
            "target cannot print: GPU atomic operations work on 32- and 64-bit elements "
            "(store it in an int32/uint32/float32 buffer, or use the cpu target)",
            computations=(comp,))
    if private:
        return f"{target} = {_combine(op, dt, target, f'({dt.c_name})({operand})')};"
    return None


def _combine(op: str, dt: DType, old: str, v: str) -> str:
    """The new value of an element holding ``old`` (both of type ``dt``): what the plain
    update computes (integers wrap around: computed unsigned)."""
    c = dt.c_name
    if op in ("min", "max"):
        return f"me_{op}_{suffix(dt)}({old}, {v})"
    if op not in _COMBINE:
        raise TargetError(f"no atomic update for the operation {op!r}")
    if dt.kind == "int" and op in ("add", "sub", "mul"):
        u = f"uint{dt.bits}_t"
        return f"({c})(({u}){old} {_COMBINE[op]} ({u}){v})"
    return f"({c})({old} {_COMBINE[op]} {v})"


@dataclass(frozen=True)
class CudaAtomics:
    """Prints an atomic update in CUDA (the hook of :class:`~backends.clike.cexpr.
    ExprPrinter`); ``private``: the per-thread buffers of the kernel."""

    private: frozenset[str] = frozenset()

    def __call__(self, comp: str, op: str, target: str, operand: str, dt: DType,
                 buffer: str) -> str:
        if (plain := _checked(comp, op, target, operand, dt, buffer in self.private)):
            return plain
        c = dt.c_name
        if dt.is_float and op in ("add", "sub"):  # float and double atomicAdd (sm_60+)
            sign = "-" if op == "sub" else ""
            return f"atomicAdd(&{target}, {sign}({c})({operand}));"
        if dt.bits == 32 and dt.kind in ("int", "uint") and op in _CUDA:
            return f"atomic{_CUDA[op]}(&{target}, ({c})({operand}));"
        if dt.bits == 64 and dt.kind in ("int", "uint") and op in _CUDA:
            if op in ("min", "max"):  # signedness matters: the matching overload
                t = "long long" if dt.kind == "int" else "unsigned long long"
                return f"atomic{_CUDA[op]}(({t} *)&{target}, ({t})({operand}));"
            u = "unsigned long long"
            if op == "sub":  # two's complement: adding the negation wraps the same way
                return f"atomicAdd(({u} *)&{target}, 0ULL - ({u})({operand}));"
            return f"atomic{_CUDA[op]}(({u} *)&{target}, ({u})({operand}));"
        return self._cas(op, target, operand, dt)

    @staticmethod
    def _cas(op: str, target: str, operand: str, dt: DType) -> str:
        c = dt.c_name
        u = "unsigned int" if dt.bits == 32 else "unsigned long long"
        if dt.is_float and dt.bits == 32:
            to_t, to_u = "__uint_as_float(me_seen)", "__float_as_uint"
        elif dt.is_float:
            to_t = "__longlong_as_double((long long)me_seen)"
            to_u = f"({u})__double_as_longlong"
        else:
            to_t, to_u = f"({c})me_seen", f"({u})"
        new = _combine(op, dt, to_t, "me_v")
        return (f"{c} me_v = ({c})({operand}); {u} *me_p = ({u} *)&{target}; "
                f"{u} me_seen, me_old = *me_p; do {{ me_seen = me_old; me_old = "
                f"atomicCAS(me_p, me_seen, {to_u}({new})); }} while (me_old != me_seen);")


@dataclass(frozen=True)
class OpenCLAtomics:
    """Prints an atomic update in OpenCL C; ``local``: the kernel's buffers in local
    (shared) memory, ``private``: its per-thread buffers."""

    local: frozenset[str] = frozenset()
    private: frozenset[str] = frozenset()

    def __call__(self, comp: str, op: str, target: str, operand: str, dt: DType,
                 buffer: str) -> str:
        if (plain := _checked(comp, op, target, operand, dt, buffer in self.private)):
            return plain
        c = dt.c_name
        space = "__local" if buffer in self.local else "__global"
        if dt.kind in ("int", "uint") and op in _OPENCL:
            t = {("int", 32): "int", ("uint", 32): "uint", ("int", 64): "long",
                 ("uint", 64): "ulong"}[dt.kind, dt.bits]
            fn = "atomic_" if dt.bits == 32 else "atom_"
            return f"{fn}{_OPENCL[op]}((volatile {space} {t} *)&{target}, ({t})({operand}));"
        u = "uint" if dt.bits == 32 else "ulong"
        cas = "atomic_cmpxchg" if dt.bits == 32 else "atom_cmpxchg"
        if dt.is_float:
            to_t, to_u = f"as_{c}(me_seen)", f"as_{u}"
        else:
            to_t, to_u = f"({c})me_seen", f"({u})"
        new = _combine(op, dt, to_t, "me_v")
        return (f"{c} me_v = ({c})({operand}); volatile {space} {u} *me_p = (volatile {space} "
                f"{u} *)&{target}; {u} me_seen, me_old = *me_p; do {{ me_seen = me_old; "
                f"me_old = {cas}(me_p, me_seen, {to_u}({new})); }} while (me_old != me_seen);")


def opencl_extensions(program: Program) -> dict[str, list[str]]:
    """The OpenCL extensions the program's atomic updates need, each with the
    computations that need it: 64-bit elements need ``cl_khr_int64_base_atomics``
    (add, sub, compare-and-swap) and, for an integer min/max/&/|/^, the extended set."""
    out: dict[str, list[str]] = {}
    for name, info in sorted(program.stmts.items()):
        if info.atomic is None or info.store is None or info.store.type_.bits != 64:
            continue
        dt, op = info.store.type_, info.atomic[0]
        out.setdefault(BASE64, []).append(name)
        if dt.kind in ("int", "uint") and op in ("min", "max", "bitand", "bitor", "bitxor"):
            out.setdefault(EXTENDED64, []).append(name)
    return out


__all__ = ["CudaAtomics", "OpenCLAtomics", "opencl_extensions"]
