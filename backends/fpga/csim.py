"""The C-simulation harness: a C entry point with the cpu target's calling convention
(``int me_<name>(int64_t params..., T *buffers...)``) around the HLS top function, so that
the same ctypes kernel runs the simulation on numpy arrays.

A wide port takes ``ap_uint<512>`` words: the harness packs each wide argument into words
before the call (outputs too, so that elements the kernel does not write keep the caller's
values) and unpacks the outputs after it, 64 bits at a time, as a host program moving data
to the card's memory would."""

from __future__ import annotations

from backends.clike.cexpr import ident
from backends.clike.cstmt import dims_lines
from middleend.ir.loopast import Program

from .hls import WORD_BITS

PACKING = f"""\
// host-side packing of wide ports ({WORD_BITS}-bit words, little-endian lanes)
static void me_pack(const void *src, int64_t bytes, me_word *dst, int64_t words) {{
    const unsigned char *s = (const unsigned char *)src;
    for (int64_t w = 0; w < words; w++) {{
        me_word word = 0;
        for (int q = 0; q < {WORD_BITS // 64}; q++) {{
            uint64_t chunk = 0;
            int64_t at = w * {WORD_BITS // 8} + 8 * q;
            if (at < bytes) memcpy(&chunk, s + at, (size_t)(bytes - at < 8 ? bytes - at : 8));
            word.range(64 * q + 63, 64 * q) = chunk;
        }}
        dst[w] = word;
    }}
}}
static void me_unpack(const me_word *src, int64_t words, void *dst, int64_t bytes) {{
    unsigned char *d = (unsigned char *)dst;
    for (int64_t w = 0; w < words; w++) {{
        for (int q = 0; q < {WORD_BITS // 64}; q++) {{
            int64_t at = w * {WORD_BITS // 8} + 8 * q;
            if (at >= bytes) return;
            uint64_t chunk = src[w].range(64 * q + 63, 64 * q).to_uint64();
            memcpy(d + at, &chunk, (size_t)(bytes - at < 8 ? bytes - at : 8));
        }}
    }}
}}
"""


def harness(program: Program, wide: set[str]) -> str:
    """The ``extern "C"`` entry point that calls ``me_<name>_top``."""
    p = program
    name = ident(p.name, "kernel name")
    args = [f"int64_t {ident('p_' + q, 'parameter name')}" for q in p.params]
    for b in p.arguments:
        const = "const " if b.role == "input" else ""
        args.append(f"{const}{b.dtype.c_name} *a_{ident(b.name, 'buffer name')}")
    out = [PACKING] if wide else []
    out.append(f'extern "C" int me_{name}({", ".join(args) or "void"}) {{')
    call = [f"p_{q}" for q in p.params]
    for b in p.arguments:
        if b.name not in wide:
            call.append(f"a_{b.name}")
            continue
        out.extend("    " + line for line in dims_lines(b))
        count = " * ".join(f"d_{b.name}_{k}" for k in range(len(b.sizes))) or "1"
        c = b.dtype.c_name
        out.append(f"    const int64_t n_{b.name} = ({count}) * (int64_t)sizeof({c});")
        out.append(f"    const int64_t w_{b.name} = n_{b.name} / {WORD_BITS // 8} + 1;")
        out.append(f"    me_word *b_{b.name} = new me_word[w_{b.name}];")
        out.append(f"    me_pack(a_{b.name}, n_{b.name}, b_{b.name}, w_{b.name});")
        call.append(f"b_{b.name}")
    out.append(f"    int rc = me_{name}_top({', '.join(call)});")
    for b in p.arguments:
        if b.name in wide:
            if b.role != "input":
                out.append(f"    me_unpack(b_{b.name}, w_{b.name}, a_{b.name}, "
                           f"n_{b.name});")
            out.append(f"    delete[] b_{b.name};")
    out.append("    return rc;")
    out.append("}")
    return "\n".join(out) + "\n"
