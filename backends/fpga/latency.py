"""The latency estimate: cycles from the schedule, without a synthesis tool.

Built once from the loop AST (:func:`model`, a JSON-able tree that travels in the
artifact's launch facts) and evaluated for the parameters of each call (:func:`estimate`):

* a pipelined loop costs ``depth + II × trips``: ``depth`` is its body's latency (the
  longest statement, from :mod:`middleend.ir.latency`, plus two cycles of address and
  loop control), the loops inside it are unrolled (as HLS does), and ``II`` is the one
  asked for, raised where the memories cannot serve the accesses of one iteration in
  ``II`` cycles: an off-chip port moves one element per cycle each way, a wide port one
  512-bit word, an on-chip array two elements (dual-port), times its partition factors,
  a FIFO one each way;
* a loop that is not pipelined costs its trips × (its body + 1 cycle of control); an
  unrolled or vector loop outside a pipeline is costed as a pipeline of II 1 (or what its
  memories allow);
* a sequence adds up; a DATAFLOW region (a kernel with streams) costs its slowest stage
  plus the pipeline depth of the others (they overlap, each one's fill delays the next).

It ignores: the AXI burst set-up and memory latency (tens of cycles per burst), the
clock frequency actually reached, resource limits (DSPs, BRAMs), stalls of FIFOs between
stages running at different rates, and everything below the C++ (HLS's own optimisations).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from middleend.ir.latency import statement_latency
from middleend.ir.loopast import (
    Alloc,
    Block,
    BufferDecl,
    For,
    IExpr,
    If,
    Node,
    Program,
    Stmt,
    ieval,
    statements,
)
from middleend.ir.loopast import iexpr_from_json as _xi
from middleend.ir.loopast import iexpr_json as _ix

from .hls import WORD_BITS, accesses, wide_buffers

CONTROL = 2  # cycles of address computation and loop control in a pipeline's depth
EXACT_TRIPS = 4096  # a loop whose body's cost varies is summed exactly up to this many trips


class _Builder:
    def __init__(self, program: Program) -> None:
        self.p = program
        self.decls: dict[str, BufferDecl] = {b.name: b for b in program.buffers}
        self.wide = wide_buffers(program)

    def ports(self, buf: str) -> tuple[float, bool]:
        """Elements per cycle a buffer serves, and whether reads and writes have separate
        channels (AXI and FIFOs do; a BRAM's two ports are shared; an array partitioned
        completely along every dimension is registers, which never limit the II)."""
        b = self.decls[buf]
        if b.stream:
            return 1, True
        if b.role != "temporary":
            return (WORD_BITS // b.dtype.bits if buf in self.wide else 1), True
        if {d for d, _, kind in b.partition if kind == "complete"} >= set(range(len(b.sizes))):
            return math.inf, True  # registers: every element has its own
        n = 2
        for _, factor, _ in b.partition:
            n *= factor
        return n, False

    def memory_ii(self, body: Node) -> tuple[int, str]:
        """The smallest II the memories allow for one iteration of ``body`` (its inner
        loops unrolled), and the buffer that sets it."""
        reads: Counter[str] = Counter()
        writes: Counter[str] = Counter()
        self._count(body, 1, reads, writes)
        best, who = 1, ""
        for buf in set(reads) | set(writes):
            per, split = self.ports(buf)
            need = (max(reads[buf], writes[buf]) if split else reads[buf] + writes[buf])
            ii = math.ceil(need / per)
            if ii > best:
                best, who = ii, buf
        return best, who

    def _count(self, n: Node, times: int, reads: Counter[str], writes: Counter[str]) -> None:
        if isinstance(n, Block):
            for c in n.body:
                self._count(c, times, reads, writes)
        elif isinstance(n, For):
            self._count(n.body, times * _const_trips(n), reads, writes)
        elif isinstance(n, If):
            self._count(n.then, times, reads, writes)
            if n.orelse is not None:
                self._count(n.orelse, times, reads, writes)
        elif isinstance(n, Alloc):
            self._count(n.body, times, reads, writes)
        elif isinstance(n, Stmt):
            info = self.p.stmts[n.comp]
            if info.store is not None:
                writes[info.store.buffer] += times
            # a load repeated in the expression tree is one load (HLS shares it)
            for acc in {_key(a): a for a in accesses(info.value, info.guard)}.values():
                reads[acc.buffer] += times

    def offchip(self, body: Node) -> dict[str, list[int]]:
        """Elements of each kernel argument one execution of ``body`` reads and writes
        through its port (``[reads, writes]``; inner loops unrolled, a repeated load once):
        what :func:`traffic` sums."""
        reads: Counter[str] = Counter()
        writes: Counter[str] = Counter()
        self._count(body, 1, reads, writes)
        args = {b.name for b in self.p.arguments}
        return {b: [reads[b], writes[b]] for b in sorted((set(reads) | set(writes)) & args)}

    def depth(self, body: Node) -> int:
        lat = [statement_latency(self.p.stmts[s.comp].value)  # type: ignore[arg-type]
               for s in statements(body) if self.p.stmts[s.comp].value is not None]
        return max(lat, default=1) + CONTROL

    def node(self, n: Node) -> Any:
        if isinstance(n, Block):
            return {"k": "seq", "body": [self.node(c) for c in n.body]}
        if isinstance(n, Alloc):
            return self.node(n.body)
        if isinstance(n, If):
            return {"k": "if", "cond": _ix(n.cond), "then": self.node(n.then),
                    "else": None if n.orelse is None else self.node(n.orelse)}
        if isinstance(n, Stmt):
            info = self.p.stmts[n.comp]
            lat = statement_latency(info.value) if info.value is not None else 1
            return {"k": "stmt", "lat": lat, "io": self.offchip(n)}
        assert isinstance(n, For)
        hi = None if n.hi is None else _ix(n.hi)
        loop = {"var": n.var, "init": _ix(n.init), "hi": hi, "cond": _ix(n.cond),
                "step": n.step, "name": n.name}
        if n.tag in ("pipeline", "unroll", "vector"):
            ii, who = self.memory_ii(n.body)
            asked = int(n.width or 1) if n.tag == "pipeline" else 1
            return {"k": "pipe", **loop, "ii": max(asked, ii), "asked": asked,
                    "bound_by": who if ii > asked else "", "depth": self.depth(n.body),
                    "io": self.offchip(n.body)}
        return {"k": "loop", **loop, "body": self.node(n.body)}


def _key(e: Any) -> Any:
    """A structural identity of an expression (nodes compare by identity otherwise)."""
    own = tuple(getattr(e, a, None) for a in ("op", "fn", "name", "buffer"))
    value = getattr(e, "value", None)
    return (type(e).__name__, own, repr(value), tuple(_key(c) for c in e.children()))


def _const_trips(f: For) -> int:
    """The trip count of a loop inside a pipeline (unrolled: it must not vary; a loop
    whose bounds depend on outer iterators counts once per evaluation, as 1)."""
    try:
        return _trips(f.init, f.hi, f.cond, f.var, f.step, {})
    except KeyError:
        return 1


def _trips(init: IExpr, hi: IExpr | None, cond: IExpr, var: str, step: int,
           env: dict[str, int]) -> int:
    lo = ieval(init, env)
    if hi is not None and step > 0:
        return max(0, (ieval(hi, env) - lo) // step + 1)
    n, v = 0, lo
    while n < 10**7 and ieval(cond, {**env, var: v}):
        n, v = n + 1, v + step
    return n


def model(program: Program) -> str:
    """The latency model of ``program`` as JSON text (the artifact's ``latency_model``)."""
    b = _Builder(program)
    top = b.node(program.body)
    if any(d.stream for d in program.buffers):
        body = top["body"] if top["k"] == "seq" else [top]
        top = {"k": "dataflow", "body": body}
    return json.dumps(top, separators=(",", ":"))


def estimate(model_text: str, params: dict[str, int]) -> int:
    """Estimated cycles of one call with these parameter values."""
    env = {f"p_{k}": v for k, v in params.items()}
    return int(_cost(json.loads(model_text), env))


def _cost(n: Any, env: dict[str, int]) -> float:
    k = n["k"]
    if k == "stmt":
        return n["lat"]
    if k == "seq":
        return sum(_cost(c, env) for c in n["body"])
    if k == "dataflow":
        costs = [_cost(c, env) for c in n["body"]]
        fills = [_fill(c) for c in n["body"]]
        if not costs:
            return 0
        slow = max(range(len(costs)), key=costs.__getitem__)
        return costs[slow] + sum(f for i, f in enumerate(fills) if i != slow)
    if k == "if":
        if ieval(_xi(n["cond"]), env):
            return _cost(n["then"], env)
        return _cost(n["else"], env) if n["else"] is not None else 0
    hi = _xi(n["hi"]) if n["hi"] is not None else None
    trips = _trips(_xi(n["init"]), hi, _xi(n["cond"]), n["var"], n["step"], env)
    if k == "pipe":
        return n["depth"] + n["ii"] * trips if trips else 0
    if trips == 0:
        return 0
    first = ieval(_xi(n["init"]), env)
    last = first + (trips - 1) * n["step"]
    a = _cost(n["body"], {**env, n["var"]: first})
    b = _cost(n["body"], {**env, n["var"]: last})
    if a == b:
        return trips * (a + 1)
    if trips <= EXACT_TRIPS:
        return sum(_cost(n["body"], {**env, n["var"]: first + i * n["step"]}) + 1
                   for i in range(trips))
    return trips * ((a + b) / 2 + 1)


def traffic(model_text: str, params: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Elements each kernel argument moves through its port in one call with these
    parameter values, as ``(reads, writes)`` (a wide port's lanes counted one by one):
    how often the schedule reads each input element from off-chip memory. An access under
    a condition inside a pipelined loop counts on every iteration of it (an upper bound:
    a line-buffered consumer's guarded writes count over the extended scan, 64 x 48 x 3
    for a 62 x 46 x 3 output)."""
    env = {f"p_{k}": v for k, v in params.items()}
    out: Counter[str] = Counter()
    _traffic(json.loads(model_text), env, 1, out)
    names = sorted({k[:-2] for k in out})
    return {b: (int(out[b + ":r"]), int(out[b + ":w"])) for b in names}


def _traffic(n: Any, env: dict[str, int], times: float, out: Counter[str]) -> None:
    k = n["k"]
    if k in ("stmt", "pipe"):
        trips = 1
        if k == "pipe":
            hi = _xi(n["hi"]) if n["hi"] is not None else None
            trips = _trips(_xi(n["init"]), hi, _xi(n["cond"]), n["var"], n["step"], env)
        for b, (r, w) in n.get("io", {}).items():
            out[b + ":r"] += times * trips * r
            out[b + ":w"] += times * trips * w
        return
    if k in ("seq", "dataflow"):
        for c in n["body"]:
            _traffic(c, env, times, out)
        return
    if k == "if":
        branch = n["then"] if ieval(_xi(n["cond"]), env) else n["else"]
        if branch is not None:
            _traffic(branch, env, times, out)
        return
    hi = _xi(n["hi"]) if n["hi"] is not None else None
    trips = _trips(_xi(n["init"]), hi, _xi(n["cond"]), n["var"], n["step"], env)
    first = ieval(_xi(n["init"]), env)
    if trips <= EXACT_TRIPS:
        for i in range(trips):
            _traffic(n["body"], {**env, n["var"]: first + i * n["step"]}, times, out)
        return
    one: Counter[str] = Counter()  # large loops: the first iteration's, times the trips
    _traffic(n["body"], {**env, n["var"]: first}, 1, one)
    for key, v in one.items():
        out[key] += times * trips * v


def _fill(n: Any) -> float:
    """The pipeline depth a dataflow stage adds before its first result."""
    k = n["k"]
    if k == "pipe":
        return n["depth"]
    if k in ("seq", "dataflow"):
        return sum(_fill(c) for c in n["body"])
    if k == "loop":
        return _fill(n["body"])
    if k == "if":
        return _fill(n["then"])
    return n.get("lat", 0)
