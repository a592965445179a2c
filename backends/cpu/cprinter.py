"""The C99 + OpenMP printer of the CPU backend: one loop AST in, one translation unit out.

The generated kernel never aborts and never performs an out-of-bounds access: failures are
reported through two flags (``me_err``: a checked index was out of bounds, ``me_oom``: an
allocation failed) that threads set atomically, and the single exit frees what the entry
allocated. Names are printed verbatim from the loop AST after validation, because the
lowering owns the naming scheme (see :mod:`middleend.loopast`).
"""

from __future__ import annotations

from backends.clike.cexpr import ExprPrinter, ident, iexpr_c
from backends.clike.cruntime import runtime_text
from backends.clike.cstmt import comment, dims_lines, statement_lines
from backends.clike.entry import c_declaration, generate_header
from middleend.ir.errors import TargetError
from middleend.ir.intervals import Interval, loop_range
from middleend.ir.loopast import (
    Alloc,
    Block,
    BufferDecl,
    For,
    If,
    IOp,
    IVar,
    Node,
    Program,
    Stmt,
    ieval,
)

# Local buffers up to this many elements with constant sizes live on the stack.
STACK_LIMIT = 16384

_PRAGMAS = {
    "parallel": "#pragma omp parallel for schedule(dynamic)",
    "vector": "#pragma omp simd",
    "unroll": "#pragma GCC unroll 64",
}
_ROLES = frozenset({"input", "output", "inout", "temporary"})
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


class CPrinter:
    """Prints one :class:`Program`. Instances hold only per-call state (the output lines
    and the set of buffers in scope), so a printer is used once and thrown away."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.lines: list[str] = []
        self.buffers: dict[str, BufferDecl] = {}
        for b in program.buffers:
            if b.name in self.buffers:
                raise TargetError(f"program {program.name!r} declares buffer {b.name!r} twice")
            if b.role not in _ROLES:
                raise TargetError(f"buffer {b.name!r} has unknown role {b.role!r}")
            ident(b.name, "buffer name")
            self.buffers[b.name] = b
        self.in_scope = {b.name for b in program.buffers if not b.local}
        self.exprs = ExprPrinter(self.buffers, self.in_scope)
        self.loops: dict[str, Interval] = {}  # the ranges of the loops being printed

    # ------------------------------------------------------------------ output helpers
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

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
        self.lines = [runtime_text(), c_declaration(p), "{"]
        self.emit(1, "int me_err = 0;")
        self.emit(1, "int me_oom = 0;")
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
        return "\n".join(self.lines) + "\n"

    # ------------------------------------------------------------------ nodes
    def node(self, n: Node, depth: int) -> None:
        if isinstance(n, Block):
            for child in n.body:
                self.node(child, depth)
        elif isinstance(n, For):
            self._for(n, depth)
        elif isinstance(n, If):
            self.emit(depth, f"if ({iexpr_c(n.cond)}) {{")
            self.node(n.then, depth + 1)
            if n.orelse is not None:
                self.emit(depth, "} else {")
                self.node(n.orelse, depth + 1)
            self.emit(depth, "}")
        elif isinstance(n, Stmt):
            self._stmt(n, depth)
        elif isinstance(n, Alloc):
            self._alloc(n, depth)
        else:
            raise TargetError(f"unknown loop AST node {type(n).__name__}")

    def _for(self, f: For, depth: int) -> None:
        var = ident(f.var, "loop iterator")
        label = f.name or var
        if f.tag is not None and f.tag not in _PRAGMAS:
            raise TargetError(f"the cpu target cannot honour tag {f.tag} on loop {label}"
                              + (f" (set by {f.command})" if f.command else ""),
                              target="cpu", loop=label, command=f.command or None,
                              feature=("tag", f.tag))
        if not isinstance(f.step, int) or f.step == 0:
            raise TargetError(f"loop {label} has invalid step {f.step!r}")
        cond = _loop_cond(f, var)
        if f.tag == "parallel" and f.hi is None:
            raise TargetError(f"loop {label} is tagged parallel but For.hi is None: OpenMP "
                              f"needs the canonical condition '{var} <= hi'")
        if f.tag == "vector" and cond is None:
            raise TargetError(f"loop {label} is tagged {f.tag} but its condition is not the "
                              f"canonical '{var} <= hi' OpenMP needs (For.hi is None)")
        if cond is None:
            cond = iexpr_c(f.cond)
        self.emit(depth, f"/* loop {comment(label)} */")
        if f.tag == "vector" and f.width is not None and f.width > 1:
            self.emit(depth, f"{_PRAGMAS[f.tag]} simdlen({int(f.width)})")
        elif f.tag is not None:
            self.emit(depth, _PRAGMAS[f.tag])
        self.emit(depth, f"for (int64_t {var} = {iexpr_c(f.init)}; {cond}; {var} += {f.step}) {{")
        rng = loop_range(f, self.loops)
        outer = self.loops.get(f.var)
        if rng is not None:
            self.loops[f.var] = rng
        else:
            self.loops.pop(f.var, None)
        self.node(f.body, depth + 1)
        if outer is not None:
            self.loops[f.var] = outer
        else:
            self.loops.pop(f.var, None)
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
        for rel, line in statement_lines(self.exprs, self.buffers, s, info, self.loops):
            self.emit(depth + rel, line)

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
            self.emit(depth + 1, f"{c} b_{b.name}[{max(total, 1)}] __attribute__((aligned(64)));")
            self.node(a.body, depth + 1)
        else:
            self.emit(depth + 1, f"{c}* restrict b_{b.name} = ({c}*)me_alloc("
                                 f"{self._count(b)}, sizeof({c}));")
            self.emit(depth + 1, f"if (b_{b.name} == NULL) {{ me_flag(&me_oom); }} else {{")
            self.node(a.body, depth + 2)
            self.emit(depth + 2, f"free(b_{b.name});")
            self.emit(depth + 1, "}")
        if not shadowing:
            self.in_scope.discard(b.name)
        self.emit(depth, "}")


def generate_c(program: Program) -> str:
    """The complete C translation unit of ``program`` (helpers + ``me_<name>``)."""
    return CPrinter(program).generate()


__all__ = ["CPrinter", "STACK_LIMIT", "c_declaration", "generate_c", "generate_header"]
