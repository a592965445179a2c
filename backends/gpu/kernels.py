"""Device code: one kernel function per :class:`~backends.gpu.plan.KernelPlan`, printed
from the loop AST in CUDA or OpenCL C (the :class:`Spelling` says how each dialect writes
a block index, a barrier, shared memory, a kernel's signature; everything else is the
C-family printing the cpu target uses too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from backends.clike.cexpr import ExprPrinter, ident, iexpr_c
from backends.clike.cruntime import Dialect, runtime_text
from backends.clike.cstmt import comment, dims_lines, statement_lines
from middleend.ir.errors import TargetError
from middleend.ir.loopast import (
    Alloc,
    Block,
    BufferDecl,
    For,
    IExpr,
    If,
    IInt,
    IOp,
    Node,
    Program,
    Stmt,
    ieval,
)
from middleend.ir.types import DType

from .plan import KernelPlan, flatten

AXES = "xyz"
# comp.atomic()'s update as the dialect's atomic instruction: (computation, op, element,
# operand, element type, buffer) -> C
AtomicPrinter = Callable[[str, str, str, str, DType, str], str]


@dataclass(frozen=True)
class Spelling:
    """How a GPU dialect spells the kernel-level constructs."""

    dialect: Dialect
    kernel: str  # before the kernel's name
    global_: str  # address-space qualifier of a device buffer pointer
    constant: str  # ... of a buffer in constant memory
    restrict: str
    shared: str  # qualifier of a shared-memory array
    block_index: tuple[str, str, str]
    thread_index: tuple[str, str, str]
    barrier: str
    flag: str  # the error flag's parameter type
    bool_storage: str  # the element type of a bool buffer ("bool" or "uchar")
    unroll: str
    # the printer of atomic updates, from the kernel's local-memory (shared) and
    # per-thread buffers (backends/gpu/atomics.py)
    atomics: Callable[[frozenset[str], frozenset[str]], AtomicPrinter]


def _residue(e: IExpr, m: int) -> int | None:
    """``e mod m`` when it is the same for every value of the variables in ``e`` (their
    coefficients are multiples of ``m``), else None."""
    if isinstance(e, IInt):
        return e.value % m
    if isinstance(e, IOp):
        args = [_residue(a, m) for a in e.args]
        if e.op == "mul" and any(r == 0 for r in args):
            return 0
        if None in args:
            return None
        if e.op == "add":
            return sum(args) % m  # type: ignore[arg-type]
        if e.op == "sub":
            return (args[0] - args[1]) % m  # type: ignore[operator]
        if e.op == "neg":
            return -args[0] % m  # type: ignore[operator]
        if e.op == "mul":
            return args[0] * args[1] % m  # type: ignore[operator]
    return None


def _first_iteration(init: IExpr, tid: str, size: int) -> str:
    """The thread's first iteration of a thread loop: the first ``t >= init`` with
    ``t = thread (mod size)`` (the mapping the barrier check assumes). Where ``init mod
    size`` is a known constant (tiles aligned on the block) no run-time modulo is needed."""
    r = _residue(init, size)
    if r == 0:
        return f"{iexpr_c(init)} + (int64_t){tid}"
    if r is not None:
        return f"{iexpr_c(init)} + ((int64_t){tid} + {size - r}LL) % {size}LL"
    return f"{iexpr_c(init)} + me_fmod_i64((int64_t){tid} - {iexpr_c(init)}, {size}LL)"


def _elem(b: BufferDecl, sp: Spelling) -> str:
    return sp.bool_storage if b.dtype.is_bool else b.dtype.c_name


def kernel_signature(program: Program, k: KernelPlan, sp: Spelling,
                     decls: dict[str, BufferDecl]) -> str:
    """``<qualifiers> name(params..., host loop iterators..., buffers..., error flag)``."""
    args = [f"int64_t {ident('p_' + q, 'parameter name')}" for q in program.params]
    args += [f"int64_t {ident(v, 'loop iterator')}" for v in k.host_vars]
    for name in k.buffers:
        b = decls[name]
        if b.memory == "gpu_constant":
            qual = sp.constant
        elif b.role == "input":
            qual = f"{sp.global_}const "
        else:
            qual = sp.global_
        args.append(f"{qual}{_elem(b, sp)}* {sp.restrict} b_{ident(name, 'buffer name')}")
    args.append(f"{sp.flag} me_err")
    return f"{sp.kernel} {ident(k.name, 'kernel name')}({', '.join(args)})"


def device_source(program: Program, kernels: tuple[KernelPlan, ...], sp: Spelling,
                  prelude: str = "") -> str:
    """The device translation unit: the helpers, then every kernel."""
    decls = {b.name: b for b in program.buffers}
    parts = [prelude, runtime_text(sp.dialect)]
    for k in kernels:
        parts.append(_KernelPrinter(program, k, sp, decls).text())
    return "\n".join(p for p in parts if p)


class _KernelPrinter:
    def __init__(self, program: Program, k: KernelPlan, sp: Spelling,
                 decls: dict[str, BufferDecl]) -> None:
        self.p, self.k, self.sp, self.decls = program, k, sp, decls
        self.lines: list[str] = []
        self.in_scope = set(k.buffers)
        self.exprs = ExprPrinter(decls, self.in_scope, err="me_err")
        self.exprs.atomics = True
        private = frozenset(b for b in _allocated(k.body) if b not in k.shared)
        self.exprs.atomic_rmw = sp.atomics(frozenset(k.shared), private)
        self.npred = 0

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def text(self) -> str:
        k, sp = self.k, self.sp
        self.emit(0, f"{kernel_signature(self.p, k, sp, self.decls)} {{")
        for name in k.shared:
            b = self.decls[name]
            self.emit(1, f"{sp.shared} {_elem(b, sp)} b_{name}[{_constant_size(b)}];")
        for name in (*k.buffers, *k.shared):
            for line in dims_lines(self.decls[name]):
                self.emit(1, line)
            self.in_scope.add(name)
        self.node(k.body, 1, set())
        self.emit(0, "}")
        return "\n".join(self.lines) + "\n"

    def node(self, n: Node, depth: int, threads: set[int], pred: str | None = None) -> None:
        """``threads``: the axes whose thread loops enclose ``n``; ``pred``: the condition
        under which the block executes ``n``, kept as a value rather than as an ``if``
        around a region holding a barrier (every thread must reach every barrier, and
        OpenCL compilers such as PoCL's mishandle barriers inside conditionals)."""
        if pred is not None and not self._has_barrier(n):
            self.emit(depth, f"if ({pred}) {{")
            self.node(n, depth + 1, threads)
            self.emit(depth, "}")
        elif isinstance(n, Block):
            previous: Node | None = None
            for c in flatten(n.body):
                if not (self._is_barrier(c) and previous is not None
                        and self._is_barrier(previous)):
                    self.node(c, depth, threads, pred)  # two barriers in a row: one
                previous = c
        elif isinstance(n, For):
            self._for(n, depth, threads, pred)
        elif isinstance(n, If):
            if self._has_barrier(n):
                then = self._predicate(depth, pred, iexpr_c(n.cond))
                self.node(n.then, depth, threads, then)
                if n.orelse is not None:
                    other = self._predicate(depth, pred, f"!({iexpr_c(n.cond)})")
                    self.node(n.orelse, depth, threads, other)
                return
            self.emit(depth, f"if ({iexpr_c(n.cond)}) {{")
            self.node(n.then, depth + 1, threads)
            if n.orelse is not None:
                self.emit(depth, "} else {")
                self.node(n.orelse, depth + 1, threads)
            self.emit(depth, "}")
        elif isinstance(n, Alloc):
            self._alloc(n, depth, threads, pred)
        elif isinstance(n, Stmt):
            self._stmt(n, depth, threads)
        else:
            raise TargetError(f"unexpected node {type(n).__name__} in kernel {self.k.name}")

    def _is_barrier(self, n: Node) -> bool:
        return isinstance(n, Stmt) and self.p.stmts[n.comp].op == "barrier"

    def _has_barrier(self, n: Node) -> bool:
        if isinstance(n, Stmt):
            return self.p.stmts[n.comp].op == "barrier"
        if isinstance(n, (For, Alloc)):
            return self._has_barrier(n.body)
        if isinstance(n, Block):
            return any(self._has_barrier(c) for c in n.body)
        if isinstance(n, If):
            return self._has_barrier(n.then) or (n.orelse is not None and
                                                 self._has_barrier(n.orelse))
        return False

    def _predicate(self, depth: int, outer: str | None, cond: str) -> str:
        name = f"me_p{self.npred}"
        self.npred += 1
        self.emit(depth, f"const int {name} = {f'{outer} && ' if outer else ''}({cond});")
        return name

    def _for(self, f: For, depth: int, threads: set[int], pred: str | None) -> None:
        var = ident(f.var, "loop iterator")
        cond = iexpr_c(f.cond)
        self.emit(depth, f"/* loop {comment(f.name or var)} */")
        if f.tag == "gpu_block":
            assert f.axis is not None
            idx = self.sp.block_index[f.axis]
            self.emit(depth, f"{{ const int64_t {var} = {iexpr_c(f.init)} + "
                             f"(int64_t){idx} * {f.step}LL;")
            if self._has_barrier(f.body):
                inner = self._predicate(depth + 1, pred, cond)
                self.node(f.body, depth + 1, threads, inner)
            else:
                self.emit(depth + 1, f"if ({cond}) {{")
                self.node(f.body, depth + 2, threads)
                self.emit(depth + 1, "}")
            self.emit(depth, "}")
            return
        if pred is not None:  # a loop around a barrier: every thread iterates it
            cond = f"{pred} && {cond}"
        if f.tag == "gpu_thread":
            assert f.axis is not None
            size = self.k.block[f.axis]
            tid = self.sp.thread_index[f.axis]
            first = _first_iteration(f.init, tid, size)
            if isinstance(f.extent, IInt) and f.extent.value <= size:
                # at most one iteration per thread: no loop (which also lets an OpenCL
                # compiler for CPUs vectorize across the work-items)
                self.emit(depth, f"{{ const int64_t {var} = {first};")
                self.emit(depth + 1, f"if ({cond}) {{")
                self.node(f.body, depth + 2, threads | {f.axis})
                self.emit(depth + 1, "}")
                self.emit(depth, "}")
                return
            self.emit(depth, f"for (int64_t {var} = {first}; {cond}; {var} += {size}LL) {{")
            self.node(f.body, depth + 1, threads | {f.axis})
            self.emit(depth, "}")
            return
        if f.tag == "unroll":
            self.emit(depth, self.sp.unroll)
        self.emit(depth, f"for (int64_t {var} = {iexpr_c(f.init)}; {cond}; {var} += {f.step}) {{")
        self.node(f.body, depth + 1, threads, pred)
        self.emit(depth, "}")

    def _alloc(self, a: Alloc, depth: int, threads: set[int], pred: str | None) -> None:
        if a.buffer in self.k.shared:  # declared at the top of the kernel
            self.node(a.body, depth, threads, pred)
            return
        b = self.decls[a.buffer]
        self.emit(depth, f"{{ /* {b.name}: one per thread */")
        self.emit(depth + 1, f"{_elem(b, self.sp)} b_{b.name}[{_constant_size(b)}];")
        for line in dims_lines(b):
            self.emit(depth + 1, line)
        self.in_scope.add(b.name)
        self.node(a.body, depth + 1, threads, pred)
        self.in_scope.discard(b.name)
        self.emit(depth, "}")

    def _stmt(self, s: Stmt, depth: int, threads: set[int]) -> None:
        info = self.p.stmts[s.comp]
        if info.op == "barrier":
            self.emit(depth, f"{self.sp.barrier} /* {comment(s.comp)} */")
            return
        if info.op not in (None, "copy"):
            raise TargetError(f"operation {s.comp!r} ({info.op}) cannot run inside a kernel",
                              computations=(s.comp,))
        if info.critical is not None:
            raise TargetError(
                f"computation {s.comp!r} is in an atomic group (atomic(group=...)), a "
                "critical section under a lock, which the gpu target does not print (GPU "
                "threads spinning on one lock can deadlock); use the cpu target, or one "
                "atomic() update per computation", computations=(s.comp,))
        alone = [a for a in range(3) if a not in threads and self.k.block[a] > 1]
        if alone:  # outside the thread loops of these axes: their first thread only
            cond = " && ".join(f"{self.sp.thread_index[a]} == 0" for a in alone)
            self.emit(depth, f"if ({cond}) {{")
            depth += 1
        for rel, line in statement_lines(self.exprs, self.decls, s, info):
            self.emit(depth + rel, line)
        if alone:
            self.emit(depth - 1, "}")


def _allocated(n: Node) -> set[str]:
    """The buffers allocated inside a kernel's body."""
    if isinstance(n, Alloc):
        return {n.buffer} | _allocated(n.body)
    if isinstance(n, For):
        return _allocated(n.body)
    if isinstance(n, Block):
        return set().union(*(_allocated(c) for c in n.body))
    if isinstance(n, If):
        return _allocated(n.then) | (set() if n.orelse is None else _allocated(n.orelse))
    return set()


def _constant_size(b: BufferDecl) -> int:
    total = 1
    for e in b.sizes:
        try:
            v = ieval(e, {})
        except KeyError:
            raise TargetError(f"buffer {b.name!r} is allocated inside a kernel but its size "
                              f"is not a constant ({e}); tile the loops it is allocated in"
                              ) from None
        total *= max(int(v), 0)
    return max(total, 1)


def shared_bytes(k: KernelPlan, decls: dict[str, BufferDecl]) -> int:
    """The shared memory a block of kernel ``k`` needs."""
    return sum(_constant_size(decls[b]) * decls[b].dtype.bits // 8 for b in k.shared)


__all__ = ["AXES", "Spelling", "device_source", "kernel_signature", "shared_bytes"]
