"""From the loop AST to kernels and the host program that launches them.

A kernel is a subtree of the loop AST that runs on the device: it starts at the first GPU
loop (block or thread) met from the root, or at a device statement whose GPU loops all had
a single iteration (ISL then prints no loop for them). Everything around kernels is the
host program: host loops, conditions, bulk host/device copies, launches. Inside a kernel:

* a block loop's iteration is a block index: ``t = init + blockIdx * step``;
* a thread loop's iteration ``t`` runs on thread ``t mod blockDim`` of its axis (the
  legality check assumes exactly this), the loop striding by the block's size when it
  has more iterations than threads (a tile with its halo, copied by a smaller block);
* a statement outside the thread loops of an axis runs on thread 0 of that axis only;
* a barrier is executed by every thread of the block;
* a buffer allocated in the kernel outside its thread loops is one per block, in shared
  memory; inside them (or tagged gpu_local), one per thread.

Grid sizes are the block loops' extents (computed by the middle-end, evaluated by the
host at launch); block sizes the largest thread-loop extents per axis.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from middleend.ir.errors import TargetError
from middleend.ir.expr import walk
from middleend.ir.loopast import (
    Alloc,
    Block,
    BufAccess,
    BufferDecl,
    For,
    IExpr,
    If,
    IInt,
    IOp,
    Node,
    Program,
    Stmt,
    ivars,
    statements,
    walk_nodes,
)

TRANSFERS = ("host_to_device", "device_to_host")
DEVICE_MEMORY = ("both", "device", "gpu_global", "gpu_constant")


@dataclass(frozen=True)
class Launch(Node):
    """Launch kernel ``kernel`` (an index into :attr:`GpuPlan.kernels`)."""

    kernel: int


@dataclass(frozen=True)
class KernelPlan:
    name: str
    body: Node
    grid: tuple[IExpr, IExpr, IExpr]  # blocks along x, y, z
    block: tuple[int, int, int]  # threads along x, y, z
    buffers: tuple[str, ...]  # the device buffers it uses (arguments, in program order)
    host_vars: tuple[str, ...]  # the host loops' iterators it uses (arguments)
    shared: tuple[str, ...]  # buffers it keeps in shared memory (one per block)


@dataclass(frozen=True)
class GpuPlan:
    """``host``: the host program (For, If, Block, Launch and bulk-copy Stmt nodes);
    ``uploads``: copies back whose range is not exactly what they copy, so the range goes
    to the device first (the elements the device does not write come back unchanged);
    ``device``: the buffers with device memory, in program order."""

    host: Node
    kernels: tuple[KernelPlan, ...]
    uploads: tuple[Stmt, ...]
    device: tuple[BufferDecl, ...]


def plan(program: Program) -> GpuPlan:
    return _Planner(program).run()


class _Planner:
    def __init__(self, program: Program) -> None:
        self.p = program
        self.decls = {b.name: b for b in program.buffers}
        self.kernels: list[KernelPlan] = []
        self.uploads: list[Stmt] = []
        self.pending: dict[str, Alloc] = {}  # local buffers allocated around host code
        self.sunk: dict[str, int] = {}  # such a buffer -> the kernel it moved into

    def run(self) -> GpuPlan:
        host = self.host(self.p.body, [])
        device = tuple(b for b in self.p.buffers if b.memory in DEVICE_MEMORY and not b.local)
        return GpuPlan(host, tuple(self.kernels), tuple(self.uploads), device)

    # ------------------------------------------------------------------ host side
    def host(self, n: Node, host_vars: list[str]) -> Node:
        """The host program for ``n``: host loops and conditions stay, each maximal
        subtree of device statements sharing one kernel key becomes a launch."""
        if not isinstance(n, If) and self.key(n) is not None:
            return self.kernel(n, host_vars)
        if isinstance(n, For):
            if n.tag in ("gpu_block", "gpu_thread"):
                comps = sorted({s.comp for s in statements(n)})
                raise TargetError(
                    f"GPU loop {n.name!r} is shared by statements that start their GPU "
                    f"loops at different levels ({', '.join(comps)}); give them the same "
                    "GPU loops, or separate them with compute_at/after", computations=comps)
            return For(n.var, n.init, n.cond, n.step, self.host(n.body, [*host_vars, n.var]),
                       None, n.dim, n.name, n.hi)
        if isinstance(n, Block):
            return Block(tuple(self._host_block(n.body, host_vars)))
        if isinstance(n, If):
            els = self.host(n.orelse, host_vars) if n.orelse is not None else None
            return If(n.cond, self.host(n.then, host_vars), els)
        if isinstance(n, Alloc):
            if not self.decls[n.buffer].local:
                return self.host(n.body, host_vars)  # device buffers are allocated at entry
            # a loop-local buffer whose loops ISL did not print (GPU loops of one
            # iteration): it moves into the one kernel that uses it
            self.pending[n.buffer] = n
            out = self.host(n.body, host_vars)
            del self.pending[n.buffer]
            return out
        if isinstance(n, Stmt):
            return self._host_stmt(n, host_vars)
        raise TargetError(f"unexpected node {type(n).__name__} in the host program")

    def _host_block(self, body: tuple[Node, ...], host_vars: list[str]) -> list[Node]:
        """Consecutive siblings of one kernel key run in one launch (ISL may print no
        loop for a GPU loop of one iteration, leaving its statements side by side)."""
        out: list[Node] = []
        group: list[Node] = []
        key: tuple[int, tuple[int, ...]] | None = None

        def flush() -> None:
            if group:
                out.append(self.kernel(group[0] if len(group) == 1 else Block(tuple(group)),
                                       host_vars))
                group.clear()

        for c in flatten(body):
            k = self.key(c)
            if isinstance(c, If) and (not group or k != key):
                k = None  # a condition around whole launches stays on the host
            if k is None or k != key:
                flush()
            key = k
            if k is None:
                out.append(self.host(c, host_vars))
            else:
                group.append(c)
        flush()
        return out

    def _host_stmt(self, n: Stmt, host_vars: list[str]) -> Node:
        info = self.p.stmts[n.comp]
        if info.op in TRANSFERS:
            if n.box is None:
                raise TargetError(f"host/device copy {n.comp!r} has no range")
            if info.op == "device_to_host" and not n.box.exact:
                if ivars(*n.box.first + n.box.last) & set(host_vars):
                    raise TargetError(
                        f"copy back {n.comp!r}: its range is not exactly what it copies "
                        "and depends on the host loops around it; copy it back outside "
                        "them", computations=(n.comp,))
                self.uploads.append(n)
            return n
        if info.op == "barrier":
            return Block(())  # between launches: a launch boundary is a barrier
        raise TargetError(
            f"computation {n.comp!r} runs on the host: the gpu target runs every "
            "computation on the device (map a loop with gpu(), tile_gpu(), "
            "gpu_blocks() or gpu_threads(), or compute it inside a kernel)",
            computations=(n.comp,))

    def key(self, n: Node) -> tuple[int, tuple[int, ...]] | None:
        """The kernel key shared by every statement under ``n`` when ``n`` can be (part
        of) one kernel: all are device statements with one key and no loop under ``n``
        runs on the host (is above the first GPU loop); else None."""
        keys = {self.p.stmts[s.comp].kernel for s in statements(n)}
        if len(keys) != 1:
            return None
        (k,) = keys
        if k is None or any(d < 2 * k[0] + 1 for d in _loop_dims(n)):
            return None
        return k

    # ------------------------------------------------------------------ kernels
    def kernel(self, root: Node, host_vars: list[str]) -> Launch:
        used = set()
        names: set[str] = set()
        for s in statements(root):
            info = self.p.stmts[s.comp]
            for e in (info.store, info.value, info.guard):
                if e is not None:
                    used |= {a.buffer for a in walk(e) if isinstance(a, BufAccess)}
            names |= ivars(*tuple(x for _, x in s.bindings))
        names |= _loop_vars(root)
        for b, alloc in self.pending.items():
            if b not in used:
                continue
            if b in self.sunk:
                raise TargetError(
                    f"buffer {b!r} is local to a loop but used by two kernel launches (#"
                    f"{self.sunk[b]} and #{len(self.kernels)}); device memory local to a "
                    "loop lives in one kernel: compute it at a GPU loop of its consumer, or "
                    "at the root", computations=tuple(sorted(s.comp for s in statements(root))))
            self.sunk[b] = len(self.kernels)
            root = replace(alloc, body=root)
        grid: dict[int, list[IExpr]] = {}
        block: dict[int, int] = {}
        shared: list[str] = []
        self._scan(root, False, grid, block, shared)
        bufs = tuple(b.name for b in self.p.buffers
                     if b.name in used and not b.local)
        for b in bufs:
            if self.decls[b].memory not in DEVICE_MEMORY:
                raise TargetError(f"kernel reads or writes {b!r}, which has no device memory "
                                  f"({self.decls[b].memory})")
        axes = tuple(_max(grid.get(a, [])) for a in range(3))
        threads = tuple(block.get(a, 1) for a in range(3))
        k = KernelPlan(f"me_{self.p.name}_k{len(self.kernels)}", root, axes, threads,
                       bufs, tuple(v for v in host_vars if v in names), tuple(shared))
        self.kernels.append(k)
        return Launch(len(self.kernels) - 1)

    def _scan(self, n: Node, in_threads: bool, grid: dict[int, list[IExpr]],
              block: dict[int, int], shared: list[str]) -> None:
        if isinstance(n, For):
            if n.tag == "gpu_block":
                if in_threads:
                    raise TargetError(f"GPU block loop {n.name!r} inside a thread loop")
                assert n.axis is not None and n.extent is not None
                grid.setdefault(n.axis, []).append(n.extent)
            elif n.tag == "gpu_thread":
                assert n.axis is not None
                if not isinstance(n.extent, IInt):
                    raise TargetError(f"GPU thread loop {n.name!r} has no constant extent")
                if n.step != 1:
                    raise TargetError(f"GPU thread loop {n.name!r} has step {n.step}")
                block[n.axis] = max(block.get(n.axis, 1), n.extent.value)
            elif n.tag not in (None, "unroll"):
                raise TargetError(f"the gpu target cannot honour tag {n.tag} on loop "
                                  f"{n.name!r}")
            self._scan(n.body, in_threads or n.tag == "gpu_thread", grid, block, shared)
        elif isinstance(n, Block):
            for c in n.body:
                self._scan(c, in_threads, grid, block, shared)
        elif isinstance(n, If):
            self._scan(n.then, in_threads, grid, block, shared)
            if n.orelse is not None:
                self._scan(n.orelse, in_threads, grid, block, shared)
        elif isinstance(n, Alloc):
            if self.is_shared(n.buffer, in_threads) and n.buffer not in shared:
                shared.append(n.buffer)
            self._scan(n.body, in_threads, grid, block, shared)

    def is_shared(self, buf: str, in_threads: bool) -> bool:
        """One copy per block, in shared memory (else one per thread)."""
        memory = self.decls[buf].memory
        if memory == "gpu_shared":
            return True
        return memory != "gpu_local" and not in_threads


def _max(es: list[IExpr]) -> IExpr:
    if not es:
        return IInt(1)
    out = es[0]
    for e in es[1:]:
        out = IOp("max", (out, e))
    return out


def flatten(body: tuple[Node, ...]) -> list[Node]:
    """Nested blocks spliced into one sequence."""
    out: list[Node] = []
    for c in body:
        out.extend(flatten(c.body) if isinstance(c, Block) else [c])
    return out


def _loop_dims(n: Node) -> list[int]:
    return [f.dim for f, _ in walk_nodes(n) if isinstance(f, For)]


def _loop_vars(n: Node) -> set[str]:
    """The index variables the loops, conditions and extents under ``n`` use."""
    out: set[str] = set()
    if isinstance(n, For):
        out |= ivars(*(n.init, n.cond) + ((n.extent,) if n.extent is not None else ()))
        out |= _loop_vars(n.body)
    elif isinstance(n, Block):
        for c in n.body:
            out |= _loop_vars(c)
    elif isinstance(n, If):
        out |= ivars(n.cond) | _loop_vars(n.then)
        if n.orelse is not None:
            out |= _loop_vars(n.orelse)
    elif isinstance(n, Alloc):
        out |= _loop_vars(n.body)
    return out
