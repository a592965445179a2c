"""The C99 + OpenMP printer of the CPU backend: one loop AST in, one translation unit out.

The generated kernel never aborts and never performs an out-of-bounds access: failures are
reported through two flags (``me_err``: a checked index was out of bounds, ``me_oom``: an
allocation failed) that threads set atomically, and the single exit frees what the entry
allocated. Names are printed verbatim from the loop AST after validation, because the
lowering owns the naming scheme (see :mod:`middleend.loopast`).
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.clike.cexpr import ExprPrinter, fn_name, ident, iexpr_c
from backends.clike.cruntime import runtime_text
from backends.clike.cstmt import comment, dims_lines, statement_lines
from backends.clike.entry import c_declaration, generate_header, packed_definition
from backends.clike.printer import LoopPrinter
from backends.cpu import deinterleave, upsample, vtile
from backends.cpu.pool import POOL_C, POOL_HEADERS
from backends.cpu.regtile import register_tile_loop
from middleend.ir.errors import TargetError
from middleend.ir.intervals import Interval, loop_range
from middleend.ir.loopast import (
    Alloc,
    BufAccess,
    BufferDecl,
    For,
    IExpr,
    IOp,
    IVar,
    Program,
    Stmt,
    ieval,
    statements,
)

# Local buffers up to this many elements with constant sizes live on the stack.
STACK_LIMIT = 16384

# "parallel" loops are outlined and run on the thread pool of backends/cpu/pool.py
_PRAGMAS = {
    "parallel": "",
    "vector": "#pragma omp simd",
    "unroll": "#pragma GCC unroll 64",
}
_ROLES = frozenset({"input", "output", "inout", "temporary"})

# The lock of an atomic group (comp.atomic(group=...), passes/critical.py): a spin lock,
# one int per group and kernel call; the first statement of a group instance takes it
# (acquire), the last releases it (release), so each instance's reads and writes happen
# after the previous holder's. A waiting thread yields its core while the lock is held.
LOCK_C = """#include <sched.h>
static inline void me_lock(int *l) {
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) sched_yield();
}
static inline void me_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }"""
_CANONICAL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _const_size(e: object) -> int | None:
    """The value of a size that involves no variable, else None."""
    try:
        return ieval(e, {})  # type: ignore[arg-type]
    except KeyError:
        return None


def _loop_cond(f: For, var: str) -> str | None:
    """The loop condition in OpenMP canonical form (``var <= hi``, no outer parentheses:
    gcc rejects a parenthesized predicate under ``omp for``/``omp simd``), or None when
    the condition is not a comparison of the iterator."""
    if f.hi is not None:
        return f"{var} <= {iexpr_c(f.hi)}"
    c = f.cond
    if isinstance(c, IOp) and c.op in _CANONICAL and len(c.args) == 2 \
            and c.args[0] == IVar(f.var):
        return f"{var} {_CANONICAL[c.op]} {iexpr_c(c.args[1])}"
    return None


class CPrinter(LoopPrinter):
    """Prints one :class:`Program`. Instances hold only per-call state (the output lines
    and the set of buffers in scope), so a printer is used once and thrown away."""

    def __init__(self, program: Program) -> None:
        super().__init__(program)
        for b in program.buffers:
            if b.role not in _ROLES:
                raise TargetError(f"buffer {b.name!r} has unknown role {b.role!r}")
        self.in_scope = {b.name for b in program.buffers if not b.local}
        self.exprs = ExprPrinter(self.buffers, self.in_scope, err="me_errp")
        self.exprs.atomics = True  # comp.atomic(): gcc's __atomic builtins
        self.exprs.float16 = True  # gcc has _Float16
        self.loops: dict[str, Interval] = {}  # the ranges of the loops being printed
        self.loop_vars: list[str] = []  # the iterators of the loops being printed
        self.functions: list[str] = []  # outlined parallel loop bodies
        self.outlined = False  # printing inside one (a nested parallel loop is serial)
        self.fn_defs: list[str] = []  # inlined computations kept as functions
        self.deint_arrays = 0  # pairs of deinterleaved arrays printed (deinterleave.py)
        self.up_arrays = 0  # upsampled arrays printed (upsample.py)
        self.vtiles: list[vtile.Plan] = []  # register tiles printed as vectors (vtile.py)
        self.scalar_tiles = False  # and whether one was printed as scalar statements
        # the locks of atomic groups, one per group (StmtInfo.critical)
        self.locks = sorted({i.critical[0] for i in program.stmts.values()
                             if i.critical is not None})
        if self.locks and program.distribution is not None:
            first = next(n for n, i in program.stmts.items() if i.critical is not None)
            raise TargetError(f"computation {first!r} is in an atomic group (atomic(group="
                              "...)), a critical section under a lock, which the mpi target "
                              "does not print; use the cpu target")
        if program.functions:
            self._inline_functions()

    def _inline_functions(self) -> None:
        """One C function per inlined computation kept as a function (``FnCall``): the
        kernel's params, the buffers the functions read and the error flag, then the
        iteration's buffer of each loop-local buffer it reads (a ``const T* restrict``,
        named as the statements name it, so a call passes on what is in scope), then its
        iterators and those buffers' offsets, and it returns its body's value (shared
        values computed once)."""
        p = self.program
        bufs = sorted({b for f in p.functions for b in f.buffers})
        for b in bufs:
            if b not in self.in_scope:
                raise TargetError(f"inlined computations read the local buffer {b!r} "
                                  "from their functions")
        caps = [("int64_t", ident(f"p_{q}", "parameter name")) for q in p.params]
        for b in bufs:
            const = "const " if self.buffers[b].role == "input" else ""
            caps.append((f"{const}{self.buffers[b].dtype.c_name}* restrict",
                         ident(f"b_{b}", "buffer name")))
        caps.append(("int*", "me_errp"))
        self.exprs.call_context = ", ".join(name for _, name in caps)
        body_printer = ExprPrinter(self.buffers, set(bufs), err="me_errp")
        body_printer.call_context = self.exprs.call_context
        for f in p.functions:
            params = [f"{ctype} {name}" for ctype, name in caps]
            for b in f.locals:
                decl = self.buffers.get(b)
                if decl is None or not decl.local:
                    raise TargetError(f"inlined {f.name!r} reads {b!r} as a loop-local "
                                      "buffer, which it is not")
                params.append(f"const {decl.dtype.c_name}* restrict "
                              f"{ident('b_' + b, 'buffer name')}")
            params += [f"int64_t {ident('v_' + v, 'iterator name')}" for v in f.params]
            body_printer.in_scope = {*bufs, *f.locals}
            lines = [f"/* inlined {comment(f.name)} */",
                     f"static {f.body.dtype.c_name} {fn_name(f.name)}({', '.join(params)}) {{"]
            lines += [f"    (void){name};" for _, name in caps]
            for b in (*f.buffers, *f.locals):  # a local's per-iteration sizes: params only
                lines += [f"    {x}" for x in dims_lines(self.buffers[b])]
                lines += [f"    (void)s_{b}_{k}; (void)d_{b}_{k};"
                          for k in range(len(self.buffers[b].sizes))]
            try:
                lines += [f"    {x}" for x in body_printer.hoist(f.body)]
                lines.append(f"    return {body_printer.value(f.body)};")
            finally:
                body_printer.temps = {}
            lines.append("}")
            self.fn_defs.append("\n".join(lines))

    # ------------------------------------------------------------------ output helpers

    def _dims(self, depth: int, b: BufferDecl) -> None:
        for line in dims_lines(b):
            self.emit(depth, line)

    def _count(self, b: BufferDecl) -> str:
        """Number of elements of ``b`` (saturating; the allocator clamps it to >= 1)."""
        count = "1LL"
        for k in range(len(b.sizes)):
            count = f"me_mul_sat({count}, d_{b.name}_{k})"
        return count

    # ------------------------------------------------------------------ the kernel
    def generate(self) -> str:
        p = self.program
        temps = [b for b in p.buffers if b.role == "temporary" and not b.local]
        self.lines = [c_declaration(p), "{"]
        self.emit(1, "int me_err = 0;")
        self.emit(1, "int me_oom = 0;")
        self.emit(1, "int *const me_errp = &me_err;")
        self.emit(1, "int *const me_oomp = &me_oom;")
        self.emit(1, "(void)me_errp; (void)me_oomp;")
        for k in self.locks:
            self.emit(1, f"int me_lock_{k} = 0;")
            self.emit(1, f"int *const me_lockp_{k} = &me_lock_{k};")
        for b in p.buffers:
            if not b.local:
                self._dims(1, b)
        for b in temps:
            c = b.dtype.c_name
            self.emit(1, f"{c}* restrict b_{b.name} = ({c}*)me_alloc({self._count(b)}, "
                         f"sizeof({c}));")
            self.emit(1, f"if (b_{b.name} == NULL) me_oom = 1;")
        self.emit(1, "if (!me_oom) {")
        self.node(p.body, 2)
        self.emit(1, "}")
        for b in temps:
            self.emit(1, f"free(b_{b.name});")
        self.emit(1, "if (__atomic_load_n(&me_oom, __ATOMIC_RELAXED)) return 2;")
        self.emit(1, "return __atomic_load_n(&me_err, __ATOMIC_RELAXED) ? 1 : 0;")
        self.emit(0, "}")
        self.lines.append(packed_definition(p))
        locks = [LOCK_C] if self.locks else []
        if self.deint_arrays:
            locks.append(deinterleave.DEINT_C)
        if self.up_arrays:
            locks.append(upsample.UPSAMPLE_C)
        if self.vtiles:
            locks.append(vtile.helpers_c(self.vtiles))
        head = [runtime_text(), *locks, *self.fn_defs]
        if self.functions:
            head = ["#define _GNU_SOURCE", runtime_text(), POOL_HEADERS, POOL_C, *locks,
                    *self.fn_defs, *self.functions]
        return "\n".join([*head, *self.lines]) + "\n"

    # ------------------------------------------------------------------ nodes
    def _for(self, f: For, depth: int) -> None:
        var, label = self._loop_header(f, _PRAGMAS, "cpu")
        cond = _loop_cond(f, var)
        if f.tag == "parallel" and f.hi is None:
            raise TargetError(f"loop {label} is tagged parallel but For.hi is None: OpenMP "
                              f"needs the canonical condition '{var} <= hi'")
        if f.tag == "vector" and cond is None:
            raise TargetError(f"loop {label} is tagged {f.tag} but its condition is not the "
                              f"canonical '{var} <= hi' OpenMP needs (For.hi is None)")
        if cond is None:
            cond = iexpr_c(f.cond)
        if f.tag == "parallel" and not self.outlined:
            self._parallel(f, depth, var, label)
            return
        if f.tag is None and register_tile_loop(f, self.program):
            rng = loop_range(f, self.loops)
            tile = vtile.plan(f, self.program, {**self.loops, **(
                {f.var: rng} if rng is not None else {})})
            if tile is not None:  # its sums in vector variables (vtile.py)
                self.vtiles.append(tile)
                vtile.print_tile(f, tile, self.emit, depth, comment(label))
                return
            self.scalar_tiles = True
        critical = f.tag == "vector" and self._critical(f)
        vec = f.tag == "vector" and not critical
        deint = deinterleave.plan(f, var, self.program.stmts, self.buffers, self.in_scope,
                                  self.deint_arrays, self.loops) if vec else None
        up = upsample.plan(f, var, self.program.stmts, self.buffers, self.in_scope,
                           self.up_arrays) if vec else None
        if deint is not None or up is not None:  # reads loaded before the loop
            self.emit(depth, "{")
            depth += 1
        if deint is not None:  # stride-2 reads (deinterleave.py)
            self.deint_arrays += deint.pairs
            for line in deint.prologue:
                self.emit(depth, line)
        if up is not None:  # half-rate reads (upsample.py)
            self.up_arrays += up.arrays
            for line in up.prologue:
                self.emit(depth, line)
        self.emit(depth, f"/* loop {comment(label)} */")
        if critical:
            self.emit(depth, "/* vector loop run one lane at a time: its body takes a lock */")
        elif f.tag == "vector" and f.width is not None and f.width > 1:
            self.emit(depth, f"{_PRAGMAS[f.tag]} simdlen({int(f.width)})")
        elif f.tag is not None and _PRAGMAS[f.tag]:
            self.emit(depth, _PRAGMAS[f.tag])
        self.emit(depth, f"for (int64_t {var} = {iexpr_c(f.init)}; {cond}; {var} += {f.step}) {{")
        if deint is not None or up is not None:
            dreads = deint.reads if deint is not None else {}
            ureads = up.reads if up is not None else {}
            exprs = self.exprs
            self.exprs.element_hook = lambda acc, b: _planned_read(acc, b, exprs.ranges, dreads,
                                                                   ureads)
        try:
            self._body(f, depth + 1)
        finally:
            self.exprs.element_hook = None
        self.emit(depth, "}")
        if deint is not None or up is not None:
            self.emit(depth - 1, "}")

    def _critical(self, f: For) -> bool:
        """Whether ``f``'s body holds a critical section (no simd: its lanes would take
        one lock at once)."""
        stmts = self.program.stmts
        return bool(self.locks) and any(
            s.comp in stmts and stmts[s.comp].critical is not None
            for s in statements(f.body))

    def _body(self, f: For, depth: int) -> None:
        """The body of ``f``, with its iterator's range known to the statements."""
        rng = loop_range(f, self.loops)
        outer = self.loops.get(f.var)
        if rng is not None:
            self.loops[f.var] = rng
        else:
            self.loops.pop(f.var, None)
        self.loop_vars.append(f.var)
        self.node(f.body, depth)
        self.loop_vars.pop()
        if outer is not None:
            self.loops[f.var] = outer
        else:
            self.loops.pop(f.var, None)

    def _captures(self) -> list[tuple[str, str]]:
        """(C type, name) of everything a loop body may use from the code around it: the
        params, the buffers in scope, the iterators of the loops around it, the flags.
        Dimensions and strides are not captured: the body recomputes them from the
        params, so that constant sizes stay constants gcc can fold."""
        caps = [("int64_t", ident(f"p_{q}", "parameter name")) for q in self.program.params]
        for name in sorted(self.in_scope):
            b = self.buffers[name]
            const = "const " if b.role == "input" else ""
            caps.append((f"{const}{b.dtype.c_name}*", f"b_{name}"))
        caps.extend(("int64_t", v) for v in self.loop_vars)
        caps.extend([("int*", "me_errp"), ("int*", "me_oomp")])
        caps.extend(("int*", f"me_lockp_{k}") for k in self.locks)
        return caps

    def _parallel(self, f: For, depth: int, var: str, label: str) -> None:
        """A parallel loop: its body outlined into ``me_body_<k>(ctx, iterator)`` and run
        by ``me_parallel_for`` on the thread pool (backends/cpu/pool.py)."""
        assert f.hi is not None  # checked by the caller
        if f.step <= 0:
            raise TargetError(f"parallel loop {label} has step {f.step}; the cpu target runs "
                              "increasing parallel loops only")
        k = len(self.functions)
        caps = self._captures()
        outer_lines, self.lines = self.lines, []
        self.outlined = True
        self.emit(0, f"struct me_ctx_{k} {{")
        for ctype, name in caps:
            self.emit(1, f"{ctype} {name};")
        self.emit(0, "};")
        # the body takes the captures as parameters: gcc honours ``restrict`` on
        # parameters (loop-invariant loads are hoisted; 10% on conv2D) where it does not
        # on locals loaded from the context
        params = ", ".join(f"{ctype} restrict {name}" if name.startswith("b_")
                           else f"{ctype} {name}" for ctype, name in caps)
        self.emit(0, f"/* the body of loop {comment(label)} */")
        self.emit(0, f"static inline __attribute__((always_inline)) void me_impl_{k}("
                     f"{params}, int64_t {var}) {{")
        for name in sorted(self.in_scope):
            self._dims(1, self.buffers[name])
        self.emit(1, "(void)me_errp; (void)me_oomp;")
        self._body(f, 1)
        self.emit(0, "}")
        self.emit(0, f"static void me_body_{k}(void *me_vctx, int64_t {var}) {{")
        self.emit(1, f"const struct me_ctx_{k} *me_ctx = (const struct me_ctx_{k} *)me_vctx;")
        args = ", ".join(f"me_ctx->{name}" for _, name in caps)
        self.emit(1, f"me_impl_{k}({args}, {var});")
        self.emit(0, "}")
        self.functions.append("\n".join(self.lines))
        self.lines, self.outlined = outer_lines, False
        self.emit(depth, f"/* loop {comment(label)}: parallel, on the thread pool */")
        self.emit(depth, "{")
        self.emit(depth + 1, f"struct me_ctx_{k} me_c = {{{', '.join(n for _, n in caps)}}};")
        self.emit(depth + 1, f"me_parallel_for({iexpr_c(f.init)}, {iexpr_c(f.hi)}, {f.step}, "
                             f"me_body_{k}, &me_c);")
        self.emit(depth, "}")

    def _stmt(self, s: Stmt, depth: int) -> None:
        info = self.program.stmts.get(s.comp)
        if info is None:
            raise TargetError(f"statement of computation {s.comp!r} has no StmtInfo in "
                              f"program {self.program.name!r}")
        if info.op not in (None, "copy") or info.store is None or info.value is None:
            raise TargetError(f"the cpu target cannot honour the {info.op} operation "
                              f"{s.comp!r}" + (f" (created by {info.command})"
                                               if info.command else ""),
                              target="cpu", computations=(s.comp,),
                              command=info.command or None, feature=("operation",
                                                                     str(info.op)))
        if info.critical is not None and info.critical[1]:  # the group's first: lock
            self.emit(depth, f"me_lock(me_lockp_{int(info.critical[0])});")
        for rel, line in statement_lines(self.exprs, self.buffers, s, info, self.loops):
            self.emit(depth + rel, line)
        if info.critical is not None and info.critical[2]:  # its last: unlock
            self.emit(depth, f"me_unlock(me_lockp_{int(info.critical[0])});")

    def _alloc(self, a: Alloc, depth: int) -> None:
        b = self.buffers.get(a.buffer)
        if b is None or not b.local:
            raise TargetError(f"Alloc node for {a.buffer!r}, which is not a local buffer")
        # An Alloc inside another of the same buffer is a thread's private copy inside a
        # parallel loop (the outer one serves the statements outside that loop): the C
        # declaration shadows the outer one for the loop's body.
        shadowing = a.buffer in self.in_scope
        c = b.dtype.c_name
        sizes = [_const_size(e) for e in b.sizes]
        total: int | None = 1
        for v in sizes:
            total = None if v is None or total is None else total * max(v, 0)
        self.emit(depth, f"{{ /* alloc {b.name} */")
        self._dims(depth + 1, b)
        self.in_scope.add(b.name)
        if total is not None and total <= STACK_LIMIT:
            # The array is reached through a restrict pointer, as heap buffers are: with
            # two local arrays (a packed panel and a register tile) gcc 12 keeps the tile
            # in memory when the panel is an array, in registers when it is a restrict
            # pointer (sgemm's K-blocked micro-kernel: 12 accumulators spilled per FMA).
            self.emit(depth + 1, f"{c} m_{b.name}[{max(total, 1)}] "
                                 "__attribute__((aligned(64)));")
            self.emit(depth + 1, f"{c}* restrict b_{b.name} = m_{b.name};")
            self.node(a.body, depth + 1)
        else:
            self.emit(depth + 1, f"{c}* restrict b_{b.name} = ({c}*)me_alloc("
                                 f"{self._count(b)}, sizeof({c}));")
            self.emit(depth + 1, f"if (b_{b.name} == NULL) {{ me_flag(me_oomp); }} else {{")
            self.node(a.body, depth + 2)
            self.emit(depth + 2, f"free(b_{b.name});")
            self.emit(depth + 1, "}")
        if not shadowing:
            self.in_scope.discard(b.name)
        self.emit(depth, "}")


def _planned_read(acc: BufAccess, bindings: Mapping[str, IExpr],
                  ranges: Mapping[str, Interval], deint: Mapping[deinterleave.Key, str],
                  up: Mapping[upsample.Key, str]) -> str | None:
    """The local array element a read planned before its vector loop is printed as
    (deinterleave.py, upsample.py), or None for a read printed as it is."""
    if acc.checked:
        return None
    if deint and not acc.offset_names:
        key = deinterleave.access_key(acc, bindings, ranges)
        if key is not None and key in deint:
            return deint[key]
    if up:
        ukey = upsample.access_key(acc, bindings)
        if ukey is not None and ukey in up:
            return up[ukey]
    return None


def generate_c(program: Program) -> str:
    """The complete C translation unit of ``program`` (helpers + ``me_<name>``)."""
    return CPrinter(program).generate()


__all__ = ["CPrinter", "STACK_LIMIT", "c_declaration", "generate_c", "generate_header"]
