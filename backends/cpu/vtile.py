"""Register tiles printed with explicit vectors: the sums of a tile in vector variables.

A register tile (:mod:`backends.cpu.regtile`) is a reduction loop ``k`` whose body updates
a small block of sums that do not move with ``k``: ``C[i, j] += A[i, k] * B[k, j]`` for
the ``8 x 6`` ``(i, j)`` of a tile. Printed as scalar statements, gcc has to find the
vectors itself (SLP): it unrolls the constant loops, packs the sums into vectors and keeps
them in registers across ``k``. How well it does depends on the tile's shape and on the
ISA: on a Sapphire Rapids (32 zmm registers, 8 doubles each) doitgen's ``8 x 10`` and
covariance's ``8 x 12`` tiles kept some of their columns as scalar sums, so the shapes
that suit the machine's registers ran slower than the small ones they replaced.

So the printer writes such a tile itself, in GCC's vector extensions: each run of ``W``
sums contiguous in memory along the tile's vector dimension (``W`` lanes of the widest
vectors the machine has: 64 bytes under ``__AVX512F__``, else 32) is one vector
variable, loaded once before the ``k`` loop and stored once after it; each update is one
vector expression of the lanes' operands, which are either the same element in every lane
(printed as the scalar it is: C broadcasts it) or ``W`` contiguous elements (one vector
load, made once per iteration and, where several updates read it, kept in a register:
:attr:`Width.loads`). Sums no run of ``W`` covers (a partial tile's rows) go into 16-byte
vectors, then scalar variables. The source stays the same on every machine: both widths
are printed, under ``#if defined(__AVX512F__)``. Measured on a Sapphire Rapids (Julia PolyBench,
``benchmarks/julia/compare.py``): doitgen's 8 x 5 tile went from 17.7 to 13.7 ms
(2.13 -> 1.40x numpy's time) as is, and the tile shapes that use the 32 registers
(kernels.jl) now run as planned: doitgen 0.80, covariance 0.92, 2mm 0.84x numpy's wall
time.

Every lane computes exactly what its scalar statement did, in the same order over ``k``:
``+ - * /`` and negation are the same IEEE operations lane by lane, ``fma`` (Julia's
``muladd``) one fused operation (the FMA intrinsics where the machine has them, else
``fma`` per lane), and ``fp_contract`` applies to the vector form as it does to the
scalar one. Within one iteration of ``k`` the updates run in another order than the
statements', which is why the tile qualifies only when no update reads what another
writes: every store is to its own element, reads of a buffer the tile writes are each
update's own sum, the statements have no guard, no atomic or critical part and no checked
subscript. The sums are loaded and stored only when the ``k`` loop runs at least once, so
no element is touched that the statements would not touch. Anything else (a gather, a
cast, a call other than ``fma``, sums apart by more than constants, sums no vector holds)
is printed as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from backends.clike.cexpr import const_c, ident, iexpr_c
from backends.clike.divmod import Linear, _c, expr_linear
from middleend.ir.expr import Binary, Call, Const, Expr, Unary
from middleend.ir.intervals import Interval
from middleend.ir.loopast import (
    Block,
    BufAccess,
    For,
    IExpr,
    IInt,
    Node,
    Program,
    Stmt,
    StmtInfo,
)
from middleend.ir.types import DType, float32, float64
from middleend.target.base import register_tile_fits

# the vector widths printed, in bytes: 64 where the machine has AVX-512, else 32 (two
# 16-byte halves on SSE-only and NEON machines, split by gcc); the sums a run of that
# many does not cover in 16-byte vectors, then one by one (a partial tile's rows)
WIDE, NARROW = (64, 32, 16), (32, 16)
# the vector registers of the machines that print each (AVX-512: 32; AVX2, SSE: 16)
REGISTERS = {64: 32, 32: 16}
_SUFFIX = {float32: "f32", float64: "f64"}
_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
# the FMA intrinsic per (element type, bytes), x86 only (immintrin.h)
_FMA_INTRIN = {(float64, 64): "_mm512_fmadd_pd", (float32, 64): "_mm512_fmadd_ps",
               (float64, 32): "_mm256_fmadd_pd", (float32, 32): "_mm256_fmadd_ps",
               (float64, 16): "_mm_fmadd_pd", (float32, 16): "_mm_fmadd_ps"}
_INTRIN_TYPE = {(float64, 64): "__m512d", (float32, 64): "__m512",
                (float64, 32): "__m256d", (float32, 32): "__m256",
                (float64, 16): "__m128d", (float32, 16): "__m128"}

Form = tuple[tuple[str, int], ...]  # a Linear form, hashable


@dataclass(frozen=True)
class Width:
    """One printed form of a tile: ``sums[k]`` is sum ``k``'s lanes (1: a scalar) and the
    C element of its lane 0; ``updates`` the body of one iteration of the reduction loop,
    ``(k, expression)`` in the statements' order."""

    dtype: DType
    sums: tuple[tuple[int, str], ...]
    updates: tuple[tuple[int, str], ...]
    # the updates' vector operands, loaded into ``me_l{k}`` at the top of each iteration
    # (the updates name them): (type, load, whether it is pinned). One that several read
    # is kept in a vector register by an empty ``asm`` (``ME_IN_REG``) where the registers
    # allow: gcc merges the repeated loads itself, but its register allocator may then
    # put each use back as a memory operand of its FMA. Doitgen's 8 x 4 tile so ran 8
    # vector loads and 4 broadcasts per 8 FMAs (19.2 ms; the 8 x 5 tile, whose 2 loads it
    # kept, 12.8 ms; AVX2 Zen 3).
    loads: tuple[tuple[str, str, bool], ...] = ()

    def ctype(self, lanes: int) -> str:
        return vector_type(self.dtype, lanes) if lanes > 1 else self.dtype.c_name

    @property
    def vectors(self) -> int:
        return sum(1 for n, _ in self.sums if n > 1)


@dataclass(frozen=True)
class Plan:
    """The tile at the machine's widest vectors (``wide``) and at 32 bytes (``narrow``);
    the same object where the sums' runs allow only one."""

    wide: Width
    narrow: Width


def vector_type(dtype: DType, lanes: int) -> str:
    return f"me_v{_SUFFIX[dtype]}x{lanes}"


@dataclass(frozen=True)
class _Inst:
    stmt: Stmt
    info: StmtInfo
    bindings: Mapping[str, IExpr]  # iterator name -> binding (over the loop counters)
    env: Mapping[str, int]  # the tile's constant loops' counters -> their values


def plan(f: For, program: Program, loops: Mapping[str, Interval]) -> Plan | None:
    """Register-tile loop ``f`` (``regtile.register_tile_loop``, which the printer asks
    first) as an explicit-vector tile, or None where it is not one this module prints
    (see the module doc). ``loops``: the ranges of the loop counters around it and of its
    own."""
    if f.tag is not None or f.step == 0:
        return None
    insts = list(_instances(f.body, {}, program))
    if not insts or any(i is None for i in insts):
        return None
    wide = _width(f.var, insts, WIDE, loops)  # type: ignore[arg-type]
    narrow = _width(f.var, insts, NARROW, loops)  # type: ignore[arg-type]
    if wide is None or narrow is None or not narrow.vectors:
        return None  # (sums that fill no vector: gcc's scalar code is as good)
    return Plan(wide, narrow)


def _instances(node: Node, env: dict[str, int], program: Program
               ) -> Iterator[_Inst | None]:
    """Every statement instance of one iteration of the tile loop, in program order; a
    None where the body is not constant loops around plain statements."""
    if isinstance(node, Block):
        for child in node.body:
            yield from _instances(child, env, program)
    elif isinstance(node, For):
        if node.step != 1 or not isinstance(node.init, IInt) or \
                not isinstance(node.hi, IInt):
            yield None
            return
        for v in range(node.init.value, node.hi.value + 1):
            yield from _instances(node.body, {**env, node.var: v}, program)
    elif isinstance(node, Stmt):
        info = program.stmts.get(node.comp)
        if info is None or info.op is not None or info.guard is not None or \
                info.atomic is not None or info.critical is not None or \
                info.store is None or info.value is None or \
                info.store.type_ not in _SUFFIX:
            yield None
            return
        yield _Inst(node, info, {n[2:]: e for n, e in node.bindings if n.startswith("v_")},
                    env)
    else:
        yield None


def _forms(acc: BufAccess, inst: _Inst, loops: Mapping[str, Interval]
           ) -> tuple[Form, ...] | None:
    """``acc``'s subscripts in instance ``inst`` as linear forms over the counters outside
    the tile's constant loops (their values substituted); None where one is not linear or
    the access is checked or offset. ``loops``: the counters' ranges, for the floor
    divisions and remainders by constants of packed layouts (exact only where the range
    keeps the remainder within one multiple: see ``divmod.div_mod``)."""
    if acc.checked or acc.offset_names is not None:
        return None
    out = []
    for ix in acc.indices:
        form = _linear(ix, inst, loops)
        if form is None:
            return None
        out.append(tuple(sorted(form.items())))
    return tuple(out)


def _linear(e: Expr, inst: _Inst, loops: Mapping[str, Interval]) -> Linear | None:
    """``e`` in ``inst``: read with the tile's counters as the one value each has there
    (so that a division or remainder sees it), then those counters replaced by it."""
    env = inst.env
    form = expr_linear(e, inst.bindings, {**loops, **{k: (v, v) for k, v in env.items()}})
    if form is None:
        return None
    out: Linear = {"": form.get("", 0)}
    for k, c in form.items():
        if k in env:
            out[""] += c * env[k]
        elif k and c:
            out[k] = c
    return out


def _shift(form: Form, by: int) -> Form:
    d = dict(form)
    d[""] = d.get("", 0) + by
    return tuple(sorted(d.items()))


def _element(buf: str, forms: tuple[Form, ...]) -> str:
    b = ident(buf, "buffer name")
    subs = [_c(dict(fm)) for fm in forms]
    terms = [t if k == len(subs) - 1 else f"{t} * s_{b}_{k}" for k, t in enumerate(subs)]
    return f"b_{b}[{' + '.join(terms) if terms else '0'}]"


def _width(var: str, insts: list[_Inst], sizes: tuple[int, ...],
           loops: Mapping[str, Interval]) -> Width | None:
    """The tile with its sums in vectors of the first of ``sizes`` (bytes) they fill, then
    the next, the rest one by one; None where an update is not printable so."""
    stores = [i.info.store for i in insts]
    dtype = stores[0].type_  # type: ignore[union-attr]
    if any(s.type_ != dtype for s in stores):  # type: ignore[union-attr]
        return None
    forms = [_forms(s, i, loops) for s, i in zip(stores, insts, strict=True)]  # type: ignore
    places: dict[tuple[str, tuple[Form, ...]], int] = {}
    for n, (s, fm) in enumerate(zip(stores, forms, strict=True)):
        if not fm or any(var in dict(x) for x in fm):
            return None
        key = (s.buffer, fm)  # type: ignore[union-attr]
        if key in places:
            return None  # two updates of one sum in an iteration: their order matters
        places[key] = n
    shapes: dict[str, set[tuple[Form, ...]]] = {}
    for buf, fm in places:
        shapes.setdefault(buf, set()).add(tuple(_shift(x, -dict(x).get("", 0)) for x in fm))
    if any(len(v) > 1 for v in shapes.values()):
        return None  # sums apart by more than constants might be one element for some k
    written = set(shapes)
    taken: set[int] = set()
    runs: list[list[int]] = []  # per sum, its lanes' instances
    for lanes in [size * 8 // dtype.bits for size in sizes] + [1]:
        for (buf, fm), n in places.items():
            if n in taken:
                continue
            run = [places.get((buf, (*fm[:-1], _shift(fm[-1], j)))) for j in range(lanes)]
            if any(m is None or m in taken or insts[m].stmt.comp != insts[n].stmt.comp
                   for m in run):
                continue
            taken.update(run)  # type: ignore[arg-type]
            runs.append(run)  # type: ignore[arg-type]
    sums = tuple((len(r), _element(stores[r[0]].buffer, forms[r[0]]))  # type: ignore
                 for r in runs)
    updates = []
    loads = _Loads()
    for k, run in sorted(enumerate(runs), key=lambda kr: kr[1][0]):  # statements' order
        lanes_of = [insts[m] for m in run]
        text = _Lanes(lanes_of, [forms[m] for m in run], k, dtype, len(run), written,
                      loops, loads).vector(lanes_of[0].info.value)  # type: ignore[arg-type]
        if text is None:
            return None
        updates.append((k, text))
    # pinned only where the sums and the pinned operands leave room (the search's rule)
    shared = sum(1 for _, _, n in loads.made if n > 1)
    pin = register_tile_fits(sum(1 for n, _ in sums if n > 1), shared, REGISTERS[sizes[0]])
    return Width(dtype, sums, tuple(updates),
                 tuple((t, text, pin and n > 1) for t, text, n in loads.made))


class _Loads:
    """The vector loads of one tile's updates, each named once (``me_l{k}``) with how
    many updates read it."""

    def __init__(self) -> None:
        self.made: list[tuple[str, str, int]] = []  # (vector type, load, readers)
        self._index: dict[str, int] = {}

    def name(self, vt: str, load: str) -> str:
        k = self._index.get(load)
        if k is None:
            k = self._index[load] = len(self.made)
            self.made.append((vt, load, 0))
        self.made[k] = (vt, load, self.made[k][2] + 1)
        return f"me_l{k}"


class _Lanes:
    """Prints one update's value over its ``lanes`` instances as a vector expression."""

    def __init__(self, insts: list[_Inst], stores: list[tuple[Form, ...] | None],
                 sum_index: int, dtype: DType, lanes: int, written: set[str],
                 loops: Mapping[str, Interval], loads: _Loads) -> None:
        self.insts, self.stores, self.k, self.dtype, self.lanes, self.written = \
            insts, stores, sum_index, dtype, lanes, written
        self.loops, self.loads = loops, loads

    def vector(self, e: Expr) -> str | None:
        r = self._value(e)
        if r is None:
            return None
        is_vec, text = r
        if is_vec or self.lanes == 1:
            return text
        return f"{vector_type(self.dtype, self.lanes)}_splat({text})"

    def _value(self, e: Expr) -> tuple[bool, str] | None:
        """(whether it is a vector, its C text), or None where it is not printable."""
        if e.dtype != self.dtype:
            return None
        if isinstance(e, Const):
            return False, const_c(e.value, self.dtype)
        if isinstance(e, BufAccess):
            return self._read(e)
        if isinstance(e, Binary) and e.op in _OPS:
            a, b = self._value(e.a), self._value(e.b)
            if a is None or b is None:
                return None
            return a[0] or b[0], f"({a[1]} {_OPS[e.op]} {b[1]})"
        if isinstance(e, Unary) and e.op == "neg":
            a = self._value(e.a)
            return None if a is None else (a[0], f"(-{a[1]})")
        if isinstance(e, Call) and e.fn == "fma" and len(e.args) == 3:
            args = [self._value(x) for x in e.args]
            if any(x is None for x in args):
                return None
            if self.lanes == 1 or not any(x[0] for x in args):  # type: ignore[index]
                f = "fmaf" if self.dtype == float32 else "fma"
                return False, f"{f}({', '.join(x[1] for x in args)})"  # type: ignore[index]
            vt = vector_type(self.dtype, self.lanes)
            texts = [x[1] if x[0] else f"{vt}_splat({x[1]})" for x in args]  # type: ignore
            return True, f"{vt}_fma({', '.join(texts)})"
        return None

    def _read(self, acc: BufAccess) -> tuple[bool, str] | None:
        forms = [_forms(acc, i, self.loops) for i in self.insts]
        if any(fm is None for fm in forms):
            return None
        if acc.buffer in self.written:
            own = all(acc.buffer == i.info.store.buffer and fm == st  # type: ignore
                      for i, fm, st in zip(self.insts, forms, self.stores, strict=True))
            return (True, f"me_s{self.k}") if own else None
        first = forms[0]
        assert first is not None
        if all(fm == first for fm in forms):
            return False, _element(acc.buffer, first)
        if first and all(fm is not None and fm[:-1] == first[:-1] and fm[-1] ==
                         _shift(first[-1], j) for j, fm in enumerate(forms)):
            vt = vector_type(self.dtype, self.lanes)
            return True, self.loads.name(vt, f"{vt}_ld(&{_element(acc.buffer, first)})")
        return None  # a gather


def print_tile(f: For, p: Plan, emit: Callable[[int, str], None], depth: int,
               label: str) -> None:
    """Print tile loop ``f`` as planned, through the printer's ``emit(depth, line)``."""
    var = ident(f.var, "loop iterator")
    cond = f"{var} <= {iexpr_c(f.hi)}" if f.hi is not None else iexpr_c(f.cond)
    emit(depth, f"{{ /* loop {label}: a register tile, its sums in vector variables "
                "(vtile.py) */")
    emit(depth + 1, f"int64_t {var} = {iexpr_c(f.init)};")
    emit(depth + 1, f"if ({cond}) {{")
    variants = [("#if defined(__AVX512F__)", p.wide), ("#else", p.narrow)] \
        if p.wide != p.narrow else [("", p.narrow)]
    d = depth + 2
    for pre, w in variants:
        if pre:
            emit(0, pre)
        for k, (lanes, el) in enumerate(w.sums):
            t = w.ctype(lanes)
            emit(d, f"{t} me_s{k} = {f'{t}_ld(&{el})' if lanes > 1 else el};")
        emit(d, f"for (; {cond}; {var} += {f.step}) {{")
        for j, (t, load, shared) in enumerate(w.loads):
            emit(d + 1, f"{t} me_l{j} = {load};")
            if shared:
                emit(d + 1, f"ME_IN_REG(me_l{j});")
        for k, text in w.updates:
            emit(d + 1, f"me_s{k} = {text};")
        emit(d, "}")
        for k, (lanes, el) in enumerate(w.sums):
            emit(d, f"{w.ctype(lanes)}_st(&{el}, me_s{k});" if lanes > 1 else
                 f"{el} = me_s{k};")
    if len(variants) > 1:
        emit(0, "#endif")
    emit(depth + 1, "}")
    emit(depth, "}")


def helpers_c(plans: list[Plan]) -> str:
    """The vector types the tiles use, with their load, store, splat and fma helpers (the
    64-byte ones only where the machine has AVX-512)."""
    kinds = sorted({(w.dtype.bits, lanes, w.dtype) for p in plans
                    for w in (p.wide, p.narrow) for lanes, _ in w.sums if lanes > 1},
                   key=lambda k: k[:2])
    # ME_IN_REG (Width.loads) where the 32-byte vectors are registers (AVX); elsewhere
    # (SSE2 alone splits them in halves: no register holds one) nothing
    out = ["#if defined(__x86_64__) || defined(__i386__)", "#include <immintrin.h>", "#endif",
           "#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX__)",
           '#define ME_IN_REG(v) __asm__("" : "+v"(v))', "#else",
           "#define ME_IN_REG(v) ((void)0)", "#endif"]
    for _, lanes, dt in kinds:
        size = lanes * dt.bits // 8
        vt, c = vector_type(dt, lanes), dt.c_name
        intrin, it = _FMA_INTRIN[(dt, size)], _INTRIN_TYPE[(dt, size)]
        fma = "fmaf" if dt == float32 else "fma"
        body = [f"typedef {c} {vt} __attribute__((vector_size({size})));",
                f"static inline {vt} {vt}_ld(const {c} *p) {{ {vt} v; "
                "__builtin_memcpy(&v, p, sizeof v); return v; }",
                f"static inline void {vt}_st({c} *p, {vt} v) {{ "
                "__builtin_memcpy(p, &v, sizeof v); }",
                f"static inline {vt} {vt}_splat({c} x) {{ {vt} v = {{"
                + ", ".join(["x"] * lanes) + "}; return v; }",
                f"static inline {vt} {vt}_fma({vt} a, {vt} b, {vt} c) {{",
                f"#if defined({'__AVX512F__' if size == 64 else '__FMA__'})",
                f"    return ({vt}){intrin}(({it})a, ({it})b, ({it})c);",
                "#else",
                f"    {vt} r; for (int i = 0; i < {lanes}; ++i) r[i] = {fma}(a[i], b[i], "
                "c[i]); return r;",
                "#endif", "}"]
        out += ["#if defined(__AVX512F__)", *body, "#endif"] if size == 64 else body
    return "\n".join(out)


__all__ = ["Plan", "Width", "helpers_c", "plan", "print_tile", "vector_type"]
