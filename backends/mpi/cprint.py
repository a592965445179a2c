"""The C + MPI printer: the cpu target's printer for one rank's program, plus distributed
loops, sends, receives and exchanges as MPI calls.

A loop tagged ``distribute`` becomes a condition on the rank (its iteration ``v`` runs on
rank ``v``, as in the papers' SPMD code). A send or receive of the loop AST is one
statement per element; the printer turns the element loops of one instance into one
message: the elements are counted, packed into a contiguous message in loop order, and
sent (the receiver walks the same loops to unpack). An exchange prints the messages the
middle-end computed for it, every rank sending first (non-blocking) and then receiving.
With the ranks read at run time (``Distribution.runtime``), a distributed loop runs the
iterations in the rank's block (``rank * B ..``, ``B`` a param of the rank's kernel) and
an exchange's messages go to and come from the two neighbouring ranks, each side walking
the same loops over the receiver's block start.

A loop tagged ``parallel`` runs inside each rank as on the cpu target: its body outlined
and run on the cpu backend's thread pool (:mod:`backends.cpu.pool`). MPI is initialised
with ``MPI_THREAD_FUNNELED``: only a rank's main thread calls MPI, so a parallel loop may
hold no send, receive, exchange or distributed loop (refused here, by name).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from backends.clike.cexpr import ident, iexpr_c
from backends.clike.cstmt import comment
from backends.cpu.cprinter import CPrinter
from middleend.ir.distribution import BLOCK_C, ELEMENT, RECV_LO_C, Distribution, Transfer
from middleend.ir.errors import TargetError
from middleend.ir.expr import walk
from middleend.ir.loopast import (
    Alloc,
    Block,
    BufAccess,
    For,
    If,
    IInt,
    IOp,
    IterRef,
    IVar,
    Node,
    Program,
    Stmt,
    StmtInfo,
    ivars,
    statements,
    walk_loops,
)

from .local import RANK, shifted
from .rootio import blocks_call

EXCHANGE_TAG = 1 << 16  # exchanges' message tags start here; sends have 1, 2, ...
_MESSAGES = ("send", "receive")


def _element_dims(info: StmtInfo) -> set[str]:
    """The iterators of a send's (receive's) element loops: those indexing its box."""
    acc = info.value if info.op == "send" else info.store
    assert isinstance(acc, BufAccess)
    return {n.name for i in acc.indices for n in walk(i) if isinstance(n, IterRef)}


class MpiPrinter(CPrinter):
    """Prints one rank's program (see :func:`backends.mpi.local.local_program`)."""

    def __init__(self, program: Program, dist: Distribution, whole: Program) -> None:
        """``whole``: the program before windowing (the global shapes of its buffers)."""
        super().__init__(program)
        self.dist = dist
        self.whole = whole
        self.windows = {n: w for n, w in dist.windows.items() if not w.whole}

    # ------------------------------------------------------------------ loops
    def _for(self, f: For, depth: int) -> None:
        msg = self._message_root(f)
        if msg is not None:
            if self._guarded(msg, depth):
                self._message(f, msg, depth + 1)
                self.emit(depth, "}")
            else:
                self._message(f, msg, depth)
            return
        if f.tag == "parallel":
            self._check_parallel(f)
        if f.tag != "distribute":
            super()._for(f, depth)
            return
        var = ident(f.var, "loop iterator")
        label = f.name or var
        if f.step != 1 or f.hi is None:
            raise TargetError(f"distributed loop {label} must have unit step and a canonical "
                              "bound", target="mpi", loop=label)
        if self.dist.runtime:
            self._block_loop(f, depth)
            return
        lo, hi = iexpr_c(f.init), iexpr_c(f.hi)
        self.emit(depth, f"/* loop {comment(label)}: distributed, iteration v on rank v */")
        self.emit(depth, f"if (({lo}) < 0 || ({hi}) >= {self.dist.ranks}) "
                         f"me_range_error(\"{comment(label)}\", {lo}, {hi});")
        self.emit(depth, "{")
        self.emit(depth + 1, f"const int64_t {var} = p_{RANK};")
        self.emit(depth + 1, f"if ({var} >= {lo} && {var} <= {hi}) {{")
        self._body(f, depth + 2)
        self.emit(depth + 1, "}")
        self.emit(depth, "}")

    def _block_loop(self, f: For, depth: int) -> None:
        """Ranks read at run time: the rank runs the iterations in its block
        (``rank * B .. rank * B + B - 1``); iterations beyond every rank's block are a
        run-time error naming the loop."""
        assert f.hi is not None
        label = f.name or f.var
        lo, hi = iexpr_c(f.init), iexpr_c(f.hi)
        start = IOp("mul", (IVar(f"p_{RANK}"), IVar(BLOCK_C)))
        end = IOp("sub", (IOp("add", (start, IVar(BLOCK_C))), IInt(1)))
        top = IOp("min", (f.hi, end))
        self.emit(depth, f"/* loop {comment(label)}: distributed, iteration v on the rank "
                         "whose block holds v */")
        self.emit(depth, f"if (({lo}) < 0 || ({hi}) >= me_nranks() * {BLOCK_C}) "
                         f"me_blocks_error(\"{comment(label)}\", {lo}, {hi}, {BLOCK_C});")
        super()._for(dataclasses.replace(f, tag=None, init=IOp("max", (f.init, start)),
                                         cond=IOp("le", (IVar(f.var), top)), hi=top), depth)

    def _check_parallel(self, f: For) -> None:
        """A parallel loop's body runs on worker threads, which never call MPI."""
        label = f.name or f.var
        for n, _ in walk_loops(f.body):
            what = None
            if isinstance(n, For) and n.tag == "distribute":
                what = f"the distributed loop {n.name or n.var}"
            elif isinstance(n, Stmt):
                info = self.program.stmts.get(n.comp)
                if info is not None and info.op in (*_MESSAGES, "exchange", "scatter",
                                                    "gather"):
                    what = f"the {info.op} {n.comp!r}"
            if what is not None:
                raise TargetError(
                    f"the mpi target cannot run loop {label} in parallel: it holds {what}, "
                    "whose MPI calls must stay on the rank's main thread (tag a loop inside "
                    "the distributed one, around computations only)"
                    + (f" (tagged by {f.command})" if f.command else ""),
                    target="mpi", loop=label, command=f.command or None)

    def _message_root(self, f: For) -> str | None:
        """The send or receive whose element loops start at ``f``: ``f`` holds only that
        operation's statements and iterates one of its element dimensions."""
        stmts = statements(f)
        comps = {s.comp for s in stmts}
        if len(comps) != 1:
            return None
        (c,) = comps
        info = self.program.stmts.get(c)
        if info is None or info.op not in _MESSAGES:
            return None
        elem = {f"v_{d}" for d in _element_dims(info)}
        for s in stmts:
            for name, e in s.bindings:
                if name not in elem and f.var in ivars(e):
                    return None  # ``f`` iterates the operation's own iterators
        return c

    # ------------------------------------------------------------------ statements
    def _guarded(self, comp: str, depth: int) -> bool:
        """Open ``if (rank == v)`` for a statement whose distributed loop has one
        iteration (ISL printed no loop for it); returns whether it did."""
        fixed = self.dist.fixed_rank.get(comp)
        if fixed is None or fixed[0] in self.loop_vars:
            return False
        if self.dist.runtime:  # the iteration, on the rank whose block holds it
            self.emit(depth, f"if (p_{RANK} * {BLOCK_C} <= {fixed[1]} && {fixed[1]} < "
                             f"p_{RANK} * {BLOCK_C} + {BLOCK_C}) {{ /* {comment(comp)} */")
            return True
        self.emit(depth, f"if (p_{RANK} == {fixed[1]}) {{ /* {comment(comp)}: on rank "
                         f"{fixed[1]} only */")
        return True

    def _stmt(self, s: Stmt, depth: int) -> None:
        if self._guarded(s.comp, depth):
            self._stmt_on_rank(s, depth + 1)
            self.emit(depth, "}")
        else:
            self._stmt_on_rank(s, depth)

    def _stmt_on_rank(self, s: Stmt, depth: int) -> None:
        info = self.program.stmts.get(s.comp)
        if info is not None and info.op in _MESSAGES:
            self._message(s, s.comp, depth)
        elif info is not None and info.op == "exchange":
            self._exchange(s.comp, depth)
        elif info is not None and info.op in ("scatter", "gather"):
            self._root_op(s.comp, depth)
        else:
            super()._stmt(s, depth)

    def _message(self, root: Node, op: str, depth: int) -> None:
        """One instance of a send or receive: its elements under ``root``, one message."""
        info = self.program.stmts[op]
        acc = info.value if info.op == "send" else info.store
        assert isinstance(acc, BufAccess) and info.peer is not None
        first = statements(root)[0]
        elem = {f"v_{d}" for d in _element_dims(info)}
        c = acc.type_.c_name
        tag = self.dist.tags.get(op)
        if tag is None:
            raise TargetError(f"{info.op} {op!r} has no matching message tag", target="mpi")
        self.emit(depth, f"{{ /* {info.op} {comment(op)} */")
        d = depth + 1
        for name, e in first.bindings:
            if name not in elem:  # its own iterators, bound outside the element loops
                self.emit(d, f"const int64_t {ident(name, 'binding')} = {iexpr_c(e)};")
        self.exprs.ranges = {}
        peer = self.exprs.index(info.peer)
        local = acc  # the local program's accesses are relative to their windows already
        mode = 2 if {"async", "nonblocking"} & set(info.properties) else \
            1 if "sync" in info.properties else 0
        self._packed(root, d, elem, local, c, info.op == "send", peer, tag, mode, comment(op))
        self.emit(depth, "}")

    def _packed(self, loops: Node, d: int, names: set[str], acc: BufAccess, c: str,
                send: bool, peer: str, tag: int | str, mode: int, label: str) -> None:
        """One message of the elements ``acc`` takes under ``loops`` (their statements
        bind ``names``): counted, then packed and sent, or received and unpacked; the
        point-to-point send/receive and each transfer of an exchange alike."""
        self._walk(loops, d, lambda s, k: self.emit(k, "me_n++;"), prelude="int64_t me_n = 0;")
        self.emit(d, f"{c} *me_msg = ({c} *)me_alloc(me_n, sizeof({c}));")
        self.emit(d, "if (me_msg == NULL) me_fail(\"out of memory for a message\");")
        nbytes = f"me_n * (int64_t)sizeof({c})"
        if send:
            self._walk(loops, d, self._binding_action(
                names, lambda: f"me_msg[me_n++] = {self.exprs.value(acc)};"),
                prelude="me_n = 0;")
            self.emit(d, f"me_send(me_msg, {nbytes}, {peer}, {tag}, {mode}, \"{label}\");")
        else:
            self.emit(d, f"me_recv(me_msg, {nbytes}, {peer}, {tag}, \"{label}\");")
            self._walk(loops, d, self._binding_action(
                names, lambda: f"{self.exprs.element(acc)} = me_msg[me_n++];"),
                prelude="me_n = 0;")
            self.emit(d, "free(me_msg);")

    def _binding_action(self, names: set[str], line: Callable[[], str]
                        ) -> Callable[[Stmt, int], None]:
        def act(s: Stmt, k: int) -> None:
            self.emit(k, "{")
            for name, e in s.bindings:
                if name in names:
                    self.emit(k + 1, f"const int64_t {ident(name, 'binding')} = {iexpr_c(e)};")
            self.emit(k + 1, line())
            self.emit(k, "}")
        return act

    def _walk(self, n: Node, depth: int, action: Callable[[Stmt, int], None],
              prelude: str = "") -> None:
        """Print the loops of ``n`` plainly, with ``action`` at each statement."""
        if prelude:
            self.emit(depth, prelude)
        if isinstance(n, Block):
            for ch in n.body:
                self._walk(ch, depth, action)
        elif isinstance(n, For):
            var = ident(n.var, "loop iterator")
            self.emit(depth, f"for (int64_t {var} = {iexpr_c(n.init)}; {iexpr_c(n.cond)}; "
                             f"{var} += {int(n.step)}) {{")
            self._walk(n.body, depth + 1, action)
            self.emit(depth, "}")
        elif isinstance(n, If):
            self.emit(depth, f"if ({iexpr_c(n.cond)}) {{")
            self._walk(n.then, depth + 1, action)
            if n.orelse is not None:
                self.emit(depth, "} else {")
                self._walk(n.orelse, depth + 1, action)
            self.emit(depth, "}")
        elif isinstance(n, Stmt):
            action(n, depth)
        elif isinstance(n, Alloc):
            raise TargetError("an allocation inside a message's element loops", target="mpi")

    def _exchange(self, op: str, depth: int) -> None:
        """The messages of an exchange: every rank posts its sends, then receives."""
        transfers = self.dist.exchanges.get(op, ())
        k0 = EXCHANGE_TAG + sorted(self.dist.exchanges).index(op)
        self.emit(depth, f"{{ /* exchange {comment(op)}: {len(transfers)} message(s) */")
        for var, e in self.dist.loop_values.get(op, ()):
            if var not in self.loop_vars:  # a loop of one iteration: ISL printed none
                self.emit(depth + 1, f"const int64_t {ident(var, 'loop iterator')} = "
                                     f"{iexpr_c(e)};")
        for t in transfers:
            self._transfer(t, k0, depth + 1, send=True)
        for t in transfers:
            self._transfer(t, k0, depth + 1, send=False)
        self.emit(depth + 1, "me_wait_sends();")
        self.emit(depth, "}")

    def _root_op(self, op: str, depth: int) -> None:
        """A scatter (gather): every rank's block from (to) the root's whole copy, which
        ``me_run_job`` put in ``me_root_copy``."""
        ro = self.dist.root_ops[op]
        args = [b.name for b in self.whole.arguments]
        decl = self.whole.arguments[args.index(ro.buffer)]
        w = self.dist.windows[ro.buffer]
        dims = [f"me_dim({iexpr_c(x)})" for x in decl.sizes]
        gather = ro.kind == "gather"
        self.emit(depth, f"/* {ro.kind} {comment(op)}: the blocks of {ro.buffer} "
                         f"{'to' if gather else 'from'} rank {ro.root} */")
        self.emit(depth, blocks_call(decl, w, f"(char *)me_root_copy[{args.index(ro.buffer)}]",
                                     f"b_{ident(ro.buffer, 'buffer')}",
                                     f"d_{ro.buffer}_{w.dim}", iexpr_c(w.block), gather,
                                     ro.root, dims))

    def _transfer(self, t: Transfer, tag: int, depth: int, send: bool) -> None:
        decl = self.buffers[t.buffer]
        c = decl.dtype.c_name
        me = t.src if send else t.dst
        names = {f"v_me_e{q}" for q in range(len(decl.sizes))}
        acc = shifted(self.windows, BufAccess(t.buffer, tuple(
            IterRef(f"me_e{q}") for q in range(len(decl.sizes))), decl.dtype))
        loops = _rename(t.loops)
        if self.dist.runtime:  # src: the sender's offset from the receiver
            peer = f"p_{RANK} - ({t.src})" if send else f"p_{RANK} + ({t.src})"
            self.emit(depth, f"{{ const int64_t me_peer = {peer}; /* {'to' if send else 'from'}"
                             " a neighbour */")
            self.emit(depth + 1, "if (me_peer >= 0 && me_peer < me_nranks()) {")
            rlo = "me_peer" if send else f"p_{RANK}"
            self.emit(depth + 2, f"const int64_t {RECV_LO_C} = {rlo} * {BLOCK_C};")
            self._packed(loops, depth + 2, names, acc, c, send, "me_peer", tag, 2, "exchange")
            self.emit(depth + 1, "}")
            self.emit(depth, "}")
            return
        self.emit(depth, f"if (p_{RANK} == {me}) {{ /* {'to' if send else 'from'} rank "
                         f"{t.dst if send else t.src} */")
        d = depth + 1
        self._packed(loops, d, names, acc, c, send, str(t.dst if send else t.src), tag, 2,
                     "exchange")
        self.emit(depth, "}")


def _rename(n: Node) -> Node:
    """A transfer's loops with its element statements binding ``v_me_e<q>``."""
    if isinstance(n, Stmt):
        assert n.comp == ELEMENT
        return Stmt(n.comp, tuple((f"v_me_{k}", e) for k, e in n.bindings))
    if isinstance(n, Block):
        return Block(tuple(_rename(c) for c in n.body))
    if isinstance(n, For):
        return For(n.var, n.init, n.cond, n.step, _rename(n.body), hi=n.hi)
    if isinstance(n, If):
        return If(n.cond, _rename(n.then), None if n.orelse is None else _rename(n.orelse))
    return n


__all__ = ["MpiPrinter"]
