"""Halide's bit-level and approximate math intrinsics, with Halide's values.

* ``popcount``, ``count_leading_zeros``, ``count_trailing_zeros``: the middle-end's
  ``popcount`` / ``clz`` / ``ctz``, in the operand's type, the width for a zero operand
  (measured on Halide 21: ``count_leading_zeros(u8(0)) == u8(8)``, ``int16(-1)`` has 16
  bits set and no leading zero);
* ``extract_bits`` / ``concat_bits``: a logical shift and a truncation, and the parts
  shifted into place and or-ed (the first the lowest), in unsigned types, reinterpreted;
* integer ``lerp`` (:func:`integer_lerp`), with Halide's rounding and weight scaling
  (the other pairings of types: :mod:`.lerp`);
* ``reinterpret`` between types of one width: the middle-end's ``reinterpret`` (a union in
  C). Halide writes ``fast_exp``, ``fast_log``, ``fast_pow`` and ``random_float`` /
  ``random_int`` as ordinary expressions over it (a polynomial on the float's exponent and
  mantissa bits, an integer hash of the coordinates, the seed and a per-call counter that
  Halide writes into the Func), so these come out with Halide's values, operation for
  operation (measured: bit for bit, with no contraction into FMAs on either side);
* ``fast_inverse`` and ``fast_inverse_sqrt``: Halide's x86 code uses the ``rcpps`` /
  ``rsqrtps`` estimates (relative error under 1.5 * 2^-12, values that differ between CPU
  vendors; measured: at most 3.0e-4 and 2.4e-4 from the exact ones); here they are the
  exact ``1 / x`` and ``1 / sqrt(x)``, within that bound of Halide's, as Halide's own
  lowering on targets without an estimate instruction computes them;
* ``asinh``, ``acosh``, ``atanh``: the C library's, as Halide's runtime calls them;
* ``strict_float(e)``: Halide 21 writes each float operation of ``e`` as ``strict_add``,
  ``strict_mul``, ``strict_lt``, ... (IEEE operations in the written order, never fused
  into an FMA). The middle-end never reassociates, and a pipeline with any of them is
  built without contraction into FMAs (``fp_contract=False``, see :func:`uses_strict_float`),
  so each is the plain operation with Halide's values bit for bit; ``strict_min`` /
  ``strict_max`` are ``a < b ? a : b`` / ``a > b ? a : b`` in Halide (measured with NaN
  and signed zeros), which are the middle-end's ``min`` / ``max``, and ``strict_le(a, b)``
  is ``!(b < a)`` (true where either is NaN, measured in scalar and vector code; ``a >= b``
  is ``strict_le(b, a)``).
"""

from __future__ import annotations

from frontends.halide.graph import definitions, exprs_of, walk
from frontends.halide.hir import HPipeline
from middleend.ir import types as t
from middleend.ir.expr import Cast, Const, Expr, binop, reinterpret
from middleend.ir.expr import call as intrinsic
from middleend.ir.types import DType

_COUNTS = {"popcount": "popcount", "count_leading_zeros": "clz",
           "count_trailing_zeros": "ctz"}
_FAST = frozenset({"fast_inverse", "fast_inverse_sqrt"})

# PureExtern math functions added to exprs._MATH's: Halide name stem -> middle-end intrinsic
HYPERBOLIC = {"asinh": "asinh", "acosh": "acosh", "atanh": "atanh"}
_UNSIGNED = {8: t.uint8, 16: t.uint16, 32: t.uint32}
_UNSIGNED_ALL = {**_UNSIGNED, 64: t.uint64}
_TWICE = {8: t.uint16, 16: t.uint32, 32: t.uint64}
_STRICT = {"strict_add": "add", "strict_sub": "sub", "strict_mul": "mul", "strict_div": "div",
           "strict_min": "min", "strict_max": "max", "strict_lt": "lt", "strict_le": "le",
           "strict_eq": "eq"}


def uses_strict_float(hp: HPipeline) -> bool:
    """Whether a definition of ``hp`` holds a ``strict_*`` operation (its kernel is then
    built without contraction into FMAs, as Halide computes it)."""
    return any(n.kind == "Call" and n.name in _STRICT for f in hp.funcs for d in definitions(f)
               for root in exprs_of(d) for n in walk(root))


def bit_intrinsic(name: str, dt: DType, args: list[Expr]) -> Expr | None:
    """The bit-count, bit-field or ``strict_*`` intrinsic ``name(args)`` of result type
    ``dt``; None for another."""
    if name in _STRICT and len(args) == 2 and args[0].dtype.is_float:
        if name == "strict_le":  # Halide's: not b < a, true where either is NaN
            return ~binop("lt", args[1], args[0])
        return binop(_STRICT[name], args[0], args[1])
    if name in ("extract_bits", "concat_bits"):
        return bit_fields(name, dt, args)
    fn = _COUNTS.get(name)
    if fn is None or not dt.is_int or len(args) != 1:
        return None
    x = args[0] if args[0].dtype == dt else Cast(dt, args[0])
    return intrinsic(fn, x)


def bit_fields(name: str, dt: DType, args: list[Expr]) -> Expr | None:
    """``extract_bits(e, lsb)`` (of result type ``dt``: ``e``'s bits from ``lsb`` up, zeros
    past its top, logically shifted) and ``concat_bits(e0, e1, ...)`` (``e0`` the lowest
    bits), as Halide defines them (measured on Halide 21); None for another call."""
    from frontends.halide.exprs import _shift, const

    if name == "extract_bits" and len(args) == 2 and not args[0].dtype.is_bool:
        e, lsb = args
        if not lsb.dtype.is_int or e.dtype.bits not in _UNSIGNED_ALL:
            return None
        src = _UNSIGNED_ALL[e.dtype.bits]
        bits = _shift("shift_right", src, [reinterpret(src, e), lsb])
        if dt.bits not in _UNSIGNED_ALL:
            return None
        out = _UNSIGNED_ALL[dt.bits]
        return reinterpret(dt, bits if src == out else Cast(out, bits))
    if name == "concat_bits" and args and dt.is_int and dt.bits in _UNSIGNED_ALL and all(
            a.dtype == args[0].dtype and a.dtype.is_int for a in args):
        w = args[0].dtype.bits
        part, out = _UNSIGNED_ALL[w], _UNSIGNED_ALL[dt.bits]
        acc: Expr | None = None
        for k, a in enumerate(args):
            v = Cast(out, reinterpret(part, a)) if part != out else reinterpret(part, a)
            v = v * const(2 ** (k * w), out) if k else v
            acc = v if acc is None else intrinsic("bitor", acc, v)
        assert acc is not None
        return reinterpret(dt, acc)
    return None


def fast_extern(stem: str, dt: DType, args: list[Expr]) -> Expr | None:
    """``fast_inverse_f32(x)`` / ``fast_inverse_sqrt_f32(x)`` (PureExtern calls): the exact
    value (see the module docstring for Halide's); None for another call."""
    if stem not in _FAST or not dt.is_float or len(args) != 1:
        return None
    x = args[0] if args[0].dtype == dt else Cast(dt, args[0])
    if stem == "fast_inverse_sqrt":
        x = intrinsic("sqrt", x)
    return binop("div", Const(1.0, dt), x)



def integer_lerp(zero: Expr, one: Expr, w: Expr) -> Expr | None:
    """Halide's ``lerp`` of integer values (measured on Halide 21, exhaustively for uint8):
    ``round((zero * (M - W) + one * W) / M)``, halves up, with ``M`` the values' largest
    unsigned value and signed values biased to unsigned (the sign bit flipped) and back.
    The weight ``W`` in ``[0, M]``: an unsigned weight of the values' width as it is, a
    narrower one scaled exactly (``u8`` weight 1 is ``u16`` 257), a wider one divided down
    (``floor(w * M / Mw)``), a float one ``floor(w * M)`` (in float32 for 8- and 16-bit
    values, in float64 for 32-bit ones). A float weight outside [0, 1] is clamped: Halide's
    own result there differs between its scalar and vector code. None for 64-bit or bool
    values and other weights (refused by the caller)."""
    dt = zero.dtype
    bits = dt.bits
    if not dt.is_int or bits == 64 or one.dtype != dt or not (
            w.dtype.kind == "uint" or w.dtype.is_float):
        return None
    u, wide = _UNSIGNED[bits], _TWICE[bits]
    top = 2**bits - 1
    if w.dtype.is_float:
        ft = t.float32 if bits <= 16 else t.float64
        x = w if w.dtype == ft else Cast(ft, w)
        x = binop("min", binop("max", x, Const(0.0, ft)), Const(1.0, ft))
        weight: Expr = Cast(u, binop("mul", x, Const(float(top), ft)))
    elif w.dtype.bits == bits:
        weight = w
    elif w.dtype.bits < bits:
        weight = binop("mul", Cast(u, w), Const(top // (2**w.dtype.bits - 1), u))
    else:
        weight = Cast(u, binop("floordiv", w, Const((2**w.dtype.bits - 1) // top, w.dtype)))
    bias = Const(2 ** (bits - 1), u)

    def unsigned(v: Expr) -> Expr:
        return Cast(u, v) + bias if dt.kind == "int" else v

    z, o = Cast(wide, unsigned(zero)), Cast(wide, unsigned(one))
    num = z * Cast(wide, Const(top, u) - weight) + o * Cast(wide, weight)
    r = Cast(u, binop("floordiv", num + Const(top // 2, wide), Const(top, wide)))
    return Cast(dt, r + bias) if dt.kind == "int" else r
