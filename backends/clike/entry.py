"""The entry point every native target exports, the cpu target's calling convention:
``int me_<name>(int64_t params..., T *buffers...)`` over host arrays, and its C header."""

from __future__ import annotations

from middleend.ir.loopast import Program

from .cexpr import ident


def c_declaration(program: Program) -> str:
    """``int me_<name>(int64_t p_<param>..., T* restrict b_<buffer>...)`` (no semicolon):
    params first, then the input and output buffers in declaration order."""
    name = ident(f"me_{program.name}", "kernel name")
    args = [f"int64_t {ident('p_' + q, 'parameter name')}" for q in program.params]
    for b in program.arguments:
        const = "const " if b.role == "input" else ""
        args.append(f"{const}{b.dtype.c_name}* restrict {ident('b_' + b.name, 'buffer name')}")
    return f"int {name}({', '.join(args) or 'void'})"


def packed_definition(program: Program) -> str:
    """``int me_<name>_packed(const int64_t *me_w)``: the entry point called with its
    arguments as one array of 64-bit words (the params, then each buffer's address, in
    :func:`c_declaration`'s order). Why: a caller written in C that serves any kernel (the
    Halide front-end's repeated calls, ``frontends/fastcall.c``) cannot call a
    function whose number of arguments it learns at run time; this one it can."""
    name = ident(f"me_{program.name}", "kernel name")
    words = [f"me_w[{k}]" for k in range(len(program.params))]
    for k, b in enumerate(program.arguments, start=len(program.params)):
        const = "const " if b.role == "input" else ""
        words.append(f"({const}{b.dtype.c_name}*)(uintptr_t)me_w[{k}]")
    return (f"int {name}_packed(const int64_t *me_w);\n"
            f"int {name}_packed(const int64_t *me_w)\n{{\n"
            f"    (void)me_w;\n    return {name}({', '.join(words)});\n}}")


def generate_header(program: Program) -> str:
    """A C header declaring the entry point, for callers outside Python."""
    guard = ident(f"ME_{program.name.upper()}_H", "header guard")
    return "\n".join([
        f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>",
        "/* Returns 0; 1: a data-dependent index was out of bounds; 2: out of memory; 3: the",
        "   device's runtime failed (a GPU target: me_<name>_error() says why). */",
        f"{c_declaration(program)};", f"#endif /* {guard} */", ""])
