"""The C text of the bit-level helpers: ``popcount``, ``clz``, ``ctz`` and ``reinterpret``
(middleend.ir.expr's INTRINSICS), per element type, spelled per C dialect.

Each counting helper works on the operand's two's complement bits as an unsigned value of
its width, and gives the width for a zero operand where the builtins are undefined (gcc's
``__builtin_clz(0)``), so every target has one result for every value. Each dialect names
its own counting instructions (gcc's builtins on the host and in HLS C++, CUDA's device
intrinsics, OpenCL C's built-ins); the per-type helpers above them are one template.

``reinterpret`` of a float as an integer of the same width, or back, goes through a union:
C99 and OpenCL C define reading another member of a union as the stored bytes read as that
type, and gcc and nvcc document it for C++ too, where a pointer cast would break the
strict-aliasing rule. Integer to integer is a conversion, printed as a cast.
"""

from __future__ import annotations

from middleend.ir.types import ALL_TYPES, DType

# unsigned 32- and 64-bit counts, ``u`` nonzero for clz and ctz: (pop, clz, ctz) per dialect
_GCC = ("__builtin_popcount(u)", "__builtin_clz(u)", "__builtin_ctz(u)",
        "__builtin_popcountll(u)", "__builtin_clzll(u)", "__builtin_ctzll(u)")
_CUDA_DEVICE = ("__popc(u)", "__clz((int)u)", "(__ffs((int)u) - 1)",
                "__popcll(u)", "__clzll((long long)u)", "(__ffsll((long long)u) - 1)")
# OpenCL 1.2 has popcount and clz (ctz is 2.0's): the lowest set bit's position from clz
_OPENCL = ("popcount(u)", "clz(u)", "(31 - clz(u & (0u - u)))",
           "popcount(u)", "clz(u)", "(63 - clz(u & (0ul - u)))")


def _primitives(dialect: str, fn: str) -> str:
    """``me_pop32`` ... ``me_ctz64`` on unsigned operands (clz and ctz of a nonzero one)."""
    names = ("pop32", "clz32", "ctz32", "pop64", "clz64", "ctz64")
    out = []
    for k, name in enumerate(names):
        c = "uint32_t" if k < 3 else "uint64_t"
        if dialect == "cuda":  # device intrinsics on the device, gcc's in the host pass
            body = (f"\n#ifdef __CUDA_ARCH__\n    return {_CUDA_DEVICE[k]};\n#else\n"
                    f"    return {_GCC[k]};\n#endif\n")
        else:
            body = f" return {(_OPENCL if dialect == 'opencl' else _GCC)[k]}; "
        out.append(f"{fn} int me_{name}({c} u) {{{body}}}\n")
    return "".join(out)


def _counts(dt: DType, fn: str) -> str:
    """``me_popcount_<s>``, ``me_clz_<s>``, ``me_ctz_<s>`` of an integer type, in that type."""
    from .cruntime import SUFFIX

    c, s, n = dt.c_name, SUFFIX[dt.name], dt.bits
    u = f"uint{n}_t"
    w = 64 if n == 64 else 32  # the width the primitives count in
    clz = f"me_clz{w}(({u})a)" + (f" - {w - n}" if w > n else "")
    return f"""\
{fn} {c} me_popcount_{s}({c} a) {{ return ({c})me_pop{w}(({u})a); }}
{fn} {c} me_clz_{s}({c} a) {{ return ({u})a == 0 ? {n} : ({c})({clz}); }}
{fn} {c} me_ctz_{s}({c} a) {{ return ({u})a == 0 ? {n} : ({c})me_ctz{w}(({u})a); }}
"""


def reinterpret_name(src: DType, dst: DType) -> str:
    """The helper reading a ``src`` value's bits as ``dst`` (one of them a float)."""
    from .cruntime import SUFFIX

    return f"me_as_{SUFFIX[dst.name]}_{SUFFIX[src.name]}"


def _reinterprets(f: DType, i: DType, fn: str) -> str:
    fc, ic = f.c_name, i.c_name
    return f"""\
{fn} {ic} {reinterpret_name(f, i)}({fc} a) {{ union {{ {fc} f; {ic} i; }} v; v.f = a; return v.i; }}
{fn} {fc} {reinterpret_name(i, f)}({ic} a) {{ union {{ {fc} f; {ic} i; }} v; v.i = a; return v.f; }}
"""


def bits_text(dialect: str, fn: str, half: bool) -> str:
    """Every bit-level helper of a dialect; ``fn`` qualifies a helper, ``half``: whether
    the dialect has ``_Float16``."""
    parts = ["/* Bit counts (the width for 0) and reinterpretation (a union). */\n",
             _primitives(dialect, fn)]
    ints = [dt for dt in ALL_TYPES if dt.is_int]
    parts.extend(_counts(dt, fn) for dt in ints)
    for f in ALL_TYPES:
        if f.is_float and (half or f.bits > 16):
            parts.extend(_reinterprets(f, i, fn) for i in ints if i.bits == f.bits)
    return "".join(parts)
