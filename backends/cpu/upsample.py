"""Reads at half the rate of a vector loop (``in[x / 2]``) as dense loads and a shuffle.

A 2x upsampling (interpolate's and the local Laplacian's upsampled levels) reads
``in[x / 2]`` and ``in[(x + 1) / 2]`` in the loop that ``vectorize(x)`` makes: each value
twice, in neighbouring lanes. gcc 12 has no vector form for that access (the index is not
linear in the counter) and builds every vector element by element, or with a gather where
the machine has one. Halide loads the half-width vector and duplicates its lanes with one
shuffle.

So, where a vector loop of ``W`` iterations (``W`` a multiple of 8 for float, of 4 for
double) reads a float or double buffer at ``(t + E + c) / 2`` (floor division) along its
contiguous dim (``t`` the loop counter with coefficient 1, ``E`` the other counters, each
with an even coefficient, ``c`` a constant; the other subscripts not moving with ``t``),
the printer fills a local array of ``W`` elements before the loop (``me_up2_f32`` /
``me_up2_f64``: element ``k`` is ``p[(k + odd) / 2]``, from dense loads of exactly the
elements the loop reads and one two-source shuffle per vector, in GCC's vector extensions)
and the loop body reads the array instead; gcc keeps it in registers. Every value is the
one the plain read gives. The conditions are those of :mod:`.deinterleave`: statements
without guards in a loop with constant bounds, a buffer in scope that the loop does not
write, no checked (data-dependent) reads. A buffer stored per tile
(its offsets bound in the statement from the tile's counters) is read at its subscripts
minus those offsets, as the plain read is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backends.clike.cexpr import ident
from backends.clike.divmod import Linear, _c, _iexpr_linear, expr_linear
from backends.cpu.deinterleave import plain_loop
from middleend.ir.expr import Binary, Const, Expr, walk
from middleend.ir.loopast import BufAccess, BufferDecl, For, IExpr, IterRef, StmtInfo
from middleend.ir.types import float32, float64

# out[k] = p[(k + odd) / 2]: 8 floats (4 doubles) a step from 4 (2) dense ones, or 16 (8)
# where the machine has 512-bit vectors; an odd start also loads the vector one element on
# (p + 1) and takes the lanes after the first from it


def _step(half: str, full: str, n: int, indent: str) -> str:
    """One step of ``n`` results: the even form duplicates each lane of the half vector
    (lanes 0 0 1 1 ...), the odd one takes lane 0 of ``a``, then lanes of ``b`` (p + 1)
    twice each, the last once."""
    even = ", ".join(str(k // 2) for k in range(n))
    odd = ", ".join(["0"] + [str(n // 2 + (k - 1) // 2) for k in range(1, n)])
    return f"""{indent}for (; k + {n} <= w; k += {n}) {{
{indent}    {half} a, b;
{indent}    __builtin_memcpy(&a, p + k / 2, sizeof a);
{indent}    {full} r;
{indent}    if (odd) {{
{indent}        __builtin_memcpy(&b, p + k / 2 + 1, sizeof b);
{indent}        r = __builtin_shufflevector(a, b, {odd});
{indent}    }} else {{
{indent}        r = __builtin_shufflevector(a, a, {even});
{indent}    }}
{indent}    __builtin_memcpy(out + k, &r, sizeof r);
{indent}}}"""


def _helper(name: str, ctype: str, lanes: int, v: dict[int, str]) -> str:
    """``name``: ``lanes`` results a step (``2 lanes`` with 512-bit vectors); ``v``:
    vector type name by element count."""
    return f"""static inline void {name}(const {ctype}* restrict p, {ctype}* restrict out,
        int64_t w, int odd) {{
    int64_t k = 0;
#if defined(__AVX512F__)
{_step(v[lanes], v[2 * lanes], 2 * lanes, "    ")}
#endif
{_step(v[lanes // 2], v[lanes], lanes, "    ")}
}}"""


_TYPES = {"float": {4: "me_v4f_u", 8: "me_v8f_u", 16: "me_v16f_u"},
          "double": {2: "me_v2d_u", 4: "me_v4d_u", 8: "me_v8d_u"}}
UPSAMPLE_C = "\n".join([
    *(f"typedef {c} {t} __attribute__((vector_size({n * (4 if c == 'float' else 8)})));"
      for c, ts in _TYPES.items() for n, t in ts.items()),
    "/* out[k] = p[(k + odd) / 2] for k < w: reads p[0 .. (w - 1 + odd) / 2] and nothing "
    "more */",
    _helper("me_up2_f32", "float", 8, _TYPES["float"]),
    _helper("me_up2_f64", "double", 4, _TYPES["double"]),
])

# element type -> (its helper, elements per step of it)
_HELPERS = {float32: ("me_up2_f32", 8), float64: ("me_up2_f64", 4)}

# (buffer, the subscripts but the last as C text over the loop counters, the last's
# dividend as a linear form, the names of the buffer's per-tile offsets or None)
Form = tuple[tuple[str, int], ...]
Key = tuple[str, tuple[str, ...], Form, tuple[str, ...] | None]


def _index_c(e: Expr, bindings: Mapping[str, IExpr]) -> str | None:
    """An integer subscript as C text over the loop counters (each iterator replaced by
    its binding): linear forms, and floor divisions of them by a positive constant (a
    half-rate row ``y / 2``); None for anything else."""
    form = expr_linear(e, bindings)
    if form is not None:
        return _c(form)
    if isinstance(e, Binary) and e.op == "floordiv" and e.type_.is_int and \
            isinstance(e.b, Const) and isinstance(e.b.value, int) and \
            not isinstance(e.b.value, bool) and e.b.value > 0:
        a = _index_c(e.a, bindings)
        d = e.b.value
        if a is None:
            return None
        return f"({a} >> {d.bit_length() - 1})" if d & (d - 1) == 0 else \
            f"me_fdiv_i64({a}, {d}LL)"
    return None


def _halved(e: Expr, bindings: Mapping[str, IExpr]) -> Linear | None:
    """The dividend of ``e`` when it is a floor division by 2 of a linear form, else
    None."""
    if not (isinstance(e, Binary) and e.op == "floordiv" and e.type_.is_int and
            isinstance(e.b, Const) and e.b.value == 2 and not isinstance(e.b.value, bool)):
        return None
    return expr_linear(e.a, bindings)


def access_key(acc: BufAccess, bindings: Mapping[str, IExpr]) -> Key | None:
    """``acc``'s buffer, its subscripts but the last as linear forms over the loop
    counters, and its last one's dividend (the last a floor division by 2); None where
    it is not of that form."""
    if not acc.indices:
        return None
    dividend = _halved(acc.indices[-1], bindings)
    if dividend is None:
        return None
    outer = []
    for ix in acc.indices[:-1]:
        text = _index_c(ix, bindings)
        if text is None:
            return None
        outer.append(text)
    names = tuple(acc.offset_names) if acc.offset_names is not None else None
    return acc.buffer, tuple(outer), tuple(sorted(dividend.items())), names


def _offsets(names: tuple[str, ...] | None, bindings: Mapping[str, IExpr], var: str
             ) -> tuple[Form, ...] | None:
    """The per-tile offsets ``names`` as linear forms from the statement's bindings
    (``()`` without offsets), or None where one is unknown or moves with ``var``."""
    if names is None:
        return ()
    out = []
    for n in names:
        e = bindings.get(n)
        form = _iexpr_linear(e) if e is not None else None
        if form is None or form.get(var, 0):
            return None
        out.append(tuple(sorted(form.items())))
    return tuple(out)


@dataclass(frozen=True)
class Plan:
    """``prologue``: the C lines before the loop; ``reads``: access key -> the array
    element the body reads instead; ``arrays``: how many arrays it fills."""

    prologue: tuple[str, ...]
    reads: Mapping[Key, str]
    arrays: int


def plan(f: For, var: str, stmts: Mapping[str, StmtInfo], buffers: Mapping[str, BufferDecl],
         in_scope: set[str], first: int) -> Plan | None:
    """The upsampled reads of vector loop ``f`` (C counter ``var``), their arrays numbered
    from ``first``; None when it has none."""
    loop = plain_loop(f, stmts)
    if loop is None:
        return None
    lo, width, written = loop.lo, loop.width, loop.written
    found: dict[Key, tuple[Form, ...]] = {}  # key -> its offsets
    clash: set[Key] = set()  # read with different offsets by two statements
    for s, info in loop.body:
        assert info.value is not None
        bindings = {n[2:]: e for n, e in s.bindings if n.startswith("v_")}
        for node in walk(info.value):
            if not isinstance(node, BufAccess) or node.checked:
                continue
            decl = buffers.get(node.buffer)
            if decl is None or decl.dtype not in _HELPERS or width % _HELPERS[decl.dtype][1] \
                    or node.buffer in written or node.buffer not in in_scope:
                continue
            key = access_key(node, bindings)
            if key is None:
                continue
            last = dict(key[2])
            offs = _offsets(key[3], dict(s.bindings), var)
            if offs is None or any(_moves(ix, bindings, var) for ix in node.indices[:-1]) or \
                    last.get(var, 0) != 1 or \
                    any(c % 2 for n, c in last.items() if n not in ("", var)):
                continue
            if found.setdefault(key, offs) != offs:
                clash.add(key)
    planned = [(key, offs) for key, offs in found.items() if key not in clash]
    lines: list[str] = []
    reads: dict[Key, str] = {}
    for k, (key, offs) in enumerate(planned, start=first):
        buf, outer, last, _ = key
        # (t + E + c) / 2 at t = lo + j: E / 2 + (lo + c) // 2 + (j + odd) / 2
        form = dict(last)
        start = lo + form.pop("", 0)
        form.pop(var)
        base: Linear = {n: c // 2 for n, c in form.items()}
        base[""] = start // 2
        subs = [f"({t} - {_c(dict(offs[j]))})" if offs else t for j, t in enumerate(outer)]
        subs.append(_c(_minus(base, dict(offs[-1])) if offs else base))
        b = ident(buf, "buffer name")
        terms = [t if j == len(subs) - 1 else f"{t} * s_{b}_{j}"
                 for j, t in enumerate(subs)]
        dtype = buffers[buf].dtype
        name = f"me_up{k}"
        lines.append(f"{dtype.c_name} {name}[{width}] __attribute__((aligned(64)));")
        lines.append(f"{_HELPERS[dtype][0]}(&b_{b}[{' + '.join(terms)}], {name}, {width}, "
                     f"{start % 2});")
        reads[key] = f"{name}[{var} - {lo}LL]" if lo else f"{name}[{var}]"
    return Plan(tuple(lines), reads, len(planned)) if reads else None


def _moves(e: Expr, bindings: Mapping[str, IExpr], var: str) -> bool:
    """Whether subscript ``e`` may depend on the loop counter ``var``."""
    for node in walk(e):
        if isinstance(node, IterRef):
            b = bindings.get(node.name)
            form = _iexpr_linear(b) if b is not None else None
            if form is None or form.get(var, 0):
                return True
    return False


def _minus(a: Linear, b: Linear) -> Linear:
    out = dict(a)
    for n, c in b.items():
        out[n] = out.get(n, 0) - c
    return out
