"""Stride-2 float reads of a vector loop as dense loads and two shuffles.

A 2x downsampling reads ``in[2 x]`` and ``in[2 x + 1]`` in the loop that ``vectorize(x)``
makes (rgbyuv420's U and V planes, pyramids' downsampling stages). gcc 12 vectorizes each
as the even or odd lanes of two dense vectors, but extracts them with two ``vpermd`` and a
``vblendps`` per result: 36 shuffles per 8 results of the U plane, against Halide's 18
(``vshufps`` within 128-bit lanes, then one ``vpermpd``). Written that way in a C model
of the loop, the plane ran 0.88-0.92x the time of gcc's own form; through the printer,
rgbyuv420's U and V planes went from 1.17-1.19x Halide's time to 1.06-1.09x (kernels
printed with and without this, timed interleaved with Halide in one process, twice).

So, where a vector loop of ``W`` iterations (``W`` a multiple of 8 for float, of 4 for
double) reads a float or double buffer at ``2 t + c`` and ``2 t + c + 1`` along its
contiguous dim (``t`` the loop counter, the other subscripts not moving with it), the
printer loads the ``2 W`` values before the loop, splits them into two local arrays of
``W`` (``me_deint_f32`` / ``me_deint_f64``: those shuffles, in GCC's vector extensions,
so any x86 target compiles them), and the loop body reads the arrays instead; gcc keeps
them in registers. The loop's statements are otherwise printed as
before, so every value is the one the plain reads give.

Where the machine has 512-bit vectors (``__AVX512F__``, with the builds' 512-bit
preference, ``build.vector_flags``) the helpers take 16 floats (8 doubles) a step, one
``vpermt2ps`` per result, as Halide's code for the same planes does: on a Sapphire Rapids,
rgbyuv420's U and V planes went from 1.13-1.15x Halide's time to 1.03-1.05x with it (the
8-float shuffles then ran in ymm halves).

A third read ``2 t + c + 2`` (a 3-tap downsampling: ``in[2x - 1] + 2 in[2x] + in[2x + 1]``)
is the even elements one lane on. Split off on its own, gcc loaded the pair's data a second
time for it (the interpolate app's first downsampling, 10 % of its run). Read as the even
array at ``t + 1`` (one element longer, its last set by a scalar store), each vector of it
was an unaligned load across two stores still in flight: the store could not be forwarded,
and the load waited for both to retire. In a C model of interpolate's second
downsampling (3 rows of 3 taps, 4 x 265 x 440 floats, one thread) that ran 1.21 ms against
0.37 ms for a third array of whole vectors: the pair's helper, then per step the even
vector reloaded as it was stored (forwarded) and shifted one lane with the next step's
first even element (``me_deint3_f32``: a broadcast and a cross-lane shuffle); it reads
``p[0 .. 2 w]``, what the loop reads. Subscripts are compared with the
clamps that cannot bind inside the loop left out (``intervals.unclamped``: repeat_edge's
``max(min(2 x - 1, W - 1), 0)`` in the image's interior).

It applies only where the dense load reads nothing the loop does not read itself: both
members of the pair are read, in every iteration (the body is statements without guards,
in a loop with constant bounds), from a buffer the loop does not write; checked
(data-dependent) reads and loop-local buffers are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backends.clike.cexpr import ident
from backends.clike.cstmt import iterator_ranges
from backends.clike.divmod import Linear, _c, expr_linear
from middleend.ir.expr import walk
from middleend.ir.intervals import Interval, unclamped
from middleend.ir.loopast import Block, BufAccess, BufferDecl, For, IExpr, Stmt, StmtInfo, ieval
from middleend.ir.types import float32, float64

# the shuffles, per 8 floats: lanes 0 2 | 1 3 of each 128-bit half of the two vectors
# (one vshufps each on AVX), then the 64-bit pairs into order (one vpermpd on AVX2)
DEINT_C = """typedef float me_v8f __attribute__((vector_size(32)));
typedef double me_v4d __attribute__((vector_size(32)));
#if defined(__AVX512F__)
typedef float me_v16f __attribute__((vector_size(64)));
typedef double me_v8d __attribute__((vector_size(64)));
#endif
/* p[0 .. 2w-1] into its even (e) and odd (o) elements: 16 floats at a time where the
   machine has 512-bit vectors (one vpermt2ps per result), then 8 at a time */
static inline void me_deint_f32(const float* restrict p, float* restrict e,
                                float* restrict o, int64_t w) {
    int64_t k = 0;
#if defined(__AVX512F__)
    for (; k + 16 <= w; k += 16) {
        me_v16f a, b;
        __builtin_memcpy(&a, p + 2 * k, sizeof a);
        __builtin_memcpy(&b, p + 2 * k + 16, sizeof b);
        me_v16f ev = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14,
                                             16, 18, 20, 22, 24, 26, 28, 30);
        me_v16f ov = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15,
                                             17, 19, 21, 23, 25, 27, 29, 31);
        __builtin_memcpy(e + k, &ev, sizeof ev);
        __builtin_memcpy(o + k, &ov, sizeof ov);
    }
#endif
    for (; k < w; k += 8) {
        me_v8f a, b;
        __builtin_memcpy(&a, p + 2 * k, sizeof a);
        __builtin_memcpy(&b, p + 2 * k + 8, sizeof b);
        me_v8f ev = __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14);
        me_v8f ov = __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
        me_v4d e2 = __builtin_shufflevector((me_v4d)ev, (me_v4d)ev, 0, 2, 1, 3);
        me_v4d o2 = __builtin_shufflevector((me_v4d)ov, (me_v4d)ov, 0, 2, 1, 3);
        __builtin_memcpy(e + k, &e2, sizeof e2);
        __builtin_memcpy(o + k, &o2, sizeof o2);
    }
}
/* the same for doubles: 8 at a time with 512-bit vectors, then 4 at a time (vunpcklpd /
   vunpckhpd, then vpermpd) */
static inline void me_deint_f64(const double* restrict p, double* restrict e,
                                double* restrict o, int64_t w) {
    int64_t k = 0;
#if defined(__AVX512F__)
    for (; k + 8 <= w; k += 8) {
        me_v8d a, b;
        __builtin_memcpy(&a, p + 2 * k, sizeof a);
        __builtin_memcpy(&b, p + 2 * k + 8, sizeof b);
        me_v8d ev = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
        me_v8d ov = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
        __builtin_memcpy(e + k, &ev, sizeof ev);
        __builtin_memcpy(o + k, &ov, sizeof ov);
    }
#endif
    for (; k < w; k += 4) {
        me_v4d a, b;
        __builtin_memcpy(&a, p + 2 * k, sizeof a);
        __builtin_memcpy(&b, p + 2 * k + 4, sizeof b);
        me_v4d ev = __builtin_shufflevector(a, b, 0, 4, 2, 6);
        me_v4d ov = __builtin_shufflevector(a, b, 1, 5, 3, 7);
        ev = __builtin_shufflevector(ev, ev, 0, 2, 1, 3);
        ov = __builtin_shufflevector(ov, ov, 0, 2, 1, 3);
        __builtin_memcpy(e + k, &ev, sizeof ev);
        __builtin_memcpy(o + k, &ov, sizeof ov);
    }
}
/* as me_deint_f32, and s[k] = e[k + 1] (= p[2 k + 2]): each step's even vector one lane
   on, its last lane the next step's first even element (reloaded whole from e, where
   the store just put it: forwarded); reads p[0 .. 2w] */
#define ME_SHIFTED(T, V, N, ...) \\
    for (; k + N <= w; k += N) { \\
        V ev, sv; \\
        __builtin_memcpy(&ev, e + k, sizeof ev); \\
        const T x = p[2 * k + 2 * N]; \\
        V n = {__VA_ARGS__}; \\
        sv = __builtin_shufflevector(ev, n, ME_SHIFT##N); \\
        __builtin_memcpy(s + k, &sv, sizeof sv); \\
    }
#define ME_SHIFT4 1, 2, 3, 4
#define ME_SHIFT8 1, 2, 3, 4, 5, 6, 7, 8
#define ME_SHIFT16 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
#define ME_X4 x, x, x, x
#define ME_X8 ME_X4, ME_X4
static inline void me_deint3_f32(const float* restrict p, float* restrict e,
                                 float* restrict o, float* restrict s, int64_t w) {
    me_deint_f32(p, e, o, w);
    int64_t k = 0;
#if defined(__AVX512F__)
    ME_SHIFTED(float, me_v16f, 16, ME_X8, ME_X8)
#endif
    ME_SHIFTED(float, me_v8f, 8, ME_X8)
}
static inline void me_deint3_f64(const double* restrict p, double* restrict e,
                                 double* restrict o, double* restrict s, int64_t w) {
    me_deint_f64(p, e, o, w);
    int64_t k = 0;
#if defined(__AVX512F__)
    ME_SHIFTED(double, me_v8d, 8, ME_X8)
#endif
    ME_SHIFTED(double, me_v4d, 4, ME_X4)
}"""

# element type -> (its helper for a pair, for a triple, elements per step of them)
_HELPERS = {float32: ("me_deint_f32", "me_deint3_f32", 8),
            float64: ("me_deint_f64", "me_deint3_f64", 4)}

Key = tuple[str, tuple[tuple[tuple[str, int], ...], ...]]


def access_key(acc: BufAccess, bindings: Mapping[str, IExpr],
               ranges: Mapping[str, Interval] | None = None) -> Key | None:
    """``acc``'s buffer and subscripts as linear forms over the loop counters (each
    iterator replaced by its binding, clamps that cannot bind over the iterators'
    ``ranges`` left out), or None where one is not linear."""
    forms = []
    for ix in acc.indices:
        form = expr_linear(unclamped(ix, ranges) if ranges else ix, bindings)
        if form is None:
            return None
        forms.append(tuple(sorted(form.items())))
    return acc.buffer, tuple(forms)


@dataclass(frozen=True)
class Plan:
    """``prologue``: the C lines before the loop (arrays and their filling), for
    ``pairs`` pairs of arrays; ``reads``: access key -> the array element the body reads
    instead."""

    prologue: tuple[str, ...]
    reads: Mapping[Key, str]
    pairs: int


def _body_stmts(f: For) -> list[Stmt] | None:
    body = f.body.body if isinstance(f.body, Block) else (f.body,)
    return list(body) if all(isinstance(n, Stmt) for n in body) else None


@dataclass(frozen=True)
class PlainLoop:
    """A vector loop whose reads may be loaded before it: constant bounds ``lo..hi``, a
    body of statements without guards, atomics or locks (each one runs in every
    iteration), and the buffers they write (never read that way)."""

    lo: int
    hi: int
    body: tuple[tuple[Stmt, StmtInfo], ...]
    written: frozenset[str]

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1


def plain_loop(f: For, stmts: Mapping[str, StmtInfo]) -> PlainLoop | None:
    """``f`` as a :class:`PlainLoop`, or None where it is not one."""
    if f.hi is None or f.step != 1:
        return None
    try:
        lo, hi = ieval(f.init, {}), ieval(f.hi, {})
    except KeyError:
        return None
    body = _body_stmts(f)
    if body is None:
        return None
    pairs = []
    for s in body:
        i = stmts.get(s.comp)
        if i is None or i.guard is not None or i.atomic is not None or \
                i.critical is not None or i.store is None or i.value is None:
            return None
        pairs.append((s, i))
    written = frozenset(i.store.buffer for _, i in pairs if i.store is not None)
    return PlainLoop(lo, hi, tuple(pairs), written)


def plan(f: For, var: str, stmts: Mapping[str, StmtInfo], buffers: Mapping[str, BufferDecl],
         in_scope: set[str], first: int, loops: Mapping[str, Interval] | None = None
         ) -> Plan | None:
    """The deinterleaved reads of vector loop ``f`` (C counter ``var``), their arrays
    numbered from ``first``; None when it has none. ``loops``: the ranges of the loops
    around it, where known (clamps that cannot bind there are then seen through)."""
    loop = plain_loop(f, stmts)
    if loop is None:
        return None
    lo, width, written = loop.lo, loop.width, loop.written
    # (buffer, subscripts but the last, the last without its constant) -> constants read
    groups: dict[tuple[object, ...], set[int]] = {}
    for s, info in loop.body:
        assert info.value is not None
        bindings = {n[2:]: e for n, e in s.bindings if n.startswith("v_")}
        ranges = iterator_ranges(s, {**(loops or {}), f.var: (loop.lo, loop.hi)})
        for node in walk(info.value):
            if not isinstance(node, BufAccess) or node.checked or node.offset_names:
                continue
            decl = buffers.get(node.buffer)
            if decl is None or decl.dtype not in _HELPERS or width % _HELPERS[decl.dtype][2] \
                    or decl.local or node.buffer in written or node.buffer not in in_scope:
                continue
            key = access_key(node, bindings, ranges)
            if key is None or not key[1]:  # (a scalar: no subscript)
                continue
            forms = [dict(f_) for f_ in key[1]]
            if any(fm.get(var, 0) for fm in forms[:-1]) or forms[-1].get(var, 0) != 2:
                continue
            last = dict(forms[-1])
            const = last.pop("", 0)
            gkey = (node.buffer, key[1][:-1], tuple(sorted(last.items())))
            groups.setdefault(gkey, set()).add(const)
    lines: list[str] = []
    reads: dict[Key, str] = {}
    k = first
    for (buf, outer, last), consts in groups.items():
        used: set[int] = set()
        for c in sorted(consts):
            if c in used or c + 1 not in consts:
                continue
            # a 3-tap downsampling's c, c + 1, c + 2: the third is a third array, the even
            # elements one lane on (its last lane reads the element after the pair's);
            # where c + 3 is read too, c + 2 starts a pair of its own instead (4 taps:
            # the local Laplacian's downsampling ran 22 -> 34 ms with a triple and a lone)
            third = c + 2 in consts and c + 3 not in consts and c + 2 not in used
            used |= {c, c + 1, c + 2} if third else {c, c + 1}
            name = f"me_di{k}"
            k += 1
            base: Linear = dict(last)
            base[""] = c
            at_lo = [_at(dict(fm), var, lo) for fm in outer] + [_at(base, var, lo)]
            subs = [_c(fm) for fm in at_lo]
            b = ident(buf, "buffer name")
            terms = [t if j == len(subs) - 1 else f"{t} * s_{b}_{j}"
                     for j, t in enumerate(subs)]
            dtype = buffers[buf].dtype
            helper = _HELPERS[dtype][1 if third else 0]
            start = f"&b_{b}[{' + '.join(terms)}]"
            arrays = ("e", "o", "s") if third else ("e", "o")
            lines.append(f"{dtype.c_name} " + ", ".join(
                f"{name}_{a}[{width}] __attribute__((aligned(64)))" for a in arrays) + ";")
            lines.append(f"{helper}({start}, " + ", ".join(f"{name}_{a}" for a in arrays)
                         + f", {width});")
            at = f"{var} - {lo}LL" if lo else var
            members = [(c + j, f"{name}_{a}[{at}]") for j, a in enumerate(arrays)]
            for cc, elem in members:
                form = dict(base)
                form[""] = cc
                form[var] = 2
                reads[(buf, (*outer, tuple(sorted(form.items()))))] = elem
    return Plan(tuple(lines), reads, k - first) if reads else None


def _at(form: Linear, var: str, value: int) -> Linear:
    """``form`` with the counter ``var`` set to ``value``."""
    out = {n: c for n, c in form.items() if n != var}
    out[""] = out.get("", 0) + form.get(var, 0) * value
    return out
