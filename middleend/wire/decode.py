"""Wire format -> Python API: a ``Request``'s function rebuilt as a
:class:`~middleend.ir.function.Function`, checking everything on the way.

A request comes from anywhere, so nothing in it is trusted: names go through the API's
checks (identifiers, no reserved prefixes), expression trees must be well typed and refer
to declared params, iterators, inputs, buffers and computations, and caps bound the size of
what ISL will be asked to do. Every error is an :class:`InvalidProgramError` carrying the
field path of the offending part, e.g. ``function.computations[1].expression.binary.a``.
Commands are replayed through the API methods, so a wire program means exactly what the
same Python calls mean.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import islpy as isl

from ..ir import commands as cmd
from ..ir import operations as ops
from ..ir import types as t
from ..ir.errors import DefinitionError, InvalidProgramError, ResourceLimitError, quoted
from ..ir.expr import (
    ARITH,
    COMPARE,
    INTRINSICS,
    LOGIC,
    Access,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    Select,
    Unary,
)
from ..ir.function import (
    INOUT,
    INPUT,
    OUTPUT,
    TEMPORARY,
    Buffer,
    Computation,
    Function,
    Input,
    Param,
    Var,
    _BufferOf,
)
from ..ir.names import check_name
from ..ir.operations import Operation
from .encode import BINARY, ELEM, KIND, RUNTIME_RANKS, RUNTIME_RANKS_WIRE, UNARY
from .limits import (  # noqa: F401  (re-exported: the wire's public names)
    PROTOBUF_MAX_DEPTH,
    WIRE_MAX_EXPR_DEPTH,
    Limits,
    check_known_fields,
    parse_request,
    range_tuple_size,
)
from .v1 import middleend_pb2 as pb

# Commands called on a buffer or a computation's buffer.
_ON_BUFFERS = frozenset({"host_to_device", "device_to_host", "cache_shared_at",
                         "cache_local_at", "tag_memory", "distribute_buffer",
                         "partition_buffer", "scatter", "gather", "expand"})
SPACES = {pb.GPU_GLOBAL: "gpu_global", pb.GPU_SHARED: "gpu_shared", pb.GPU_LOCAL: "gpu_local",
          pb.GPU_CONSTANT: "gpu_constant"}
# Commands that only a Layer I computation can take (not an operation).
_COMPUTATION_ONLY = frozenset({"compute_at", "inline", "atomic", "commute", "store_in",
                               "storage_fold", "allocate_at", "copy_at", "barrier_at", "exchange",
                               "stream", "line_buffer"})

TYPES = {v: t.BY_NAME[k] for k, v in ELEM.items()}
OPS = {v: k for k, v in BINARY.items()}
UOPS = {v: k for k, v in UNARY.items()}
KINDS = {v: k for k, v in KIND.items()}


class _Decoder:
    def __init__(self, limits: Limits, function_class: type[Function] = Function) -> None:
        self.limits = limits
        self.function_class = function_class
        self.nodes = 0
        self.fn: Function | None = None
        self.params: dict[str, Param] = {}
        self.buffers: dict[str, Buffer] = {}
        self.comps: dict[str, Computation] = {}
        self.ops: dict[str, Operation] = {}
        self.isl_ctx: isl.Context | None = None

    # ------------------------------------------------------------------ helpers
    def fail(self, path: str, msg: str) -> InvalidProgramError:
        return InvalidProgramError(msg, path)

    def guarded(self, path: str, f: Callable[[], Any]) -> Any:
        """Run an API call; its DefinitionError gets the field path."""
        try:
            return f()
        except InvalidProgramError:
            raise
        except DefinitionError as e:
            raise self.fail(path, str(e)) from None

    def dtype(self, v: int, path: str, allow_unspecified: bool = False) -> t.DType | None:
        if v == pb.ELEM_TYPE_UNSPECIFIED and allow_unspecified:
            return None
        if v not in TYPES:
            raise self.fail(path, f"unknown or missing element type {v}")
        return TYPES[v]

    # ------------------------------------------------------------------ expressions
    def expr(self, m: Any, path: str, iters: dict[str, Var], depth: int = 0) -> Expr:
        self.nodes += 1
        if self.nodes > self.limits.max_expr_nodes:
            raise ResourceLimitError(f"{path}: the expressions exceed "
                                     f"{self.limits.max_expr_nodes} nodes")
        if depth > self.limits.max_expr_depth:
            raise self.fail(path, f"expression nested deeper than the limit of "
                                  f"{self.limits.max_expr_depth} levels")
        which = m.WhichOneof("node")
        sub = f"{path}.{which}"
        d = depth + 1
        if which == "iterator":
            if m.iterator not in iters:
                raise self.fail(sub, f"{quoted(m.iterator)} is not an iterator here "
                                     f"(iterators: {sorted(iters)})")
            return iters[m.iterator]
        if which == "param":
            if m.param not in self.params:
                raise self.fail(sub, f"unknown parameter {quoted(m.param)}")
            return self.params[m.param]
        if which == "constant":
            return self.constant(m.constant, sub)
        if which == "binary":
            b = m.binary
            op = OPS.get(b.op)
            if op is None:
                raise self.fail(f"{sub}.op", f"unknown binary operator {b.op}")
            a = self.expr(b.a, f"{sub}.a", iters, d)
            c = self.expr(b.b, f"{sub}.b", iters, d)
            rt = self.dtype(b.type, f"{sub}.type")
            assert rt is not None
            if a.dtype != c.dtype:
                raise self.fail(sub, f"operands of {op} have types {a.dtype.name} and "
                                     f"{c.dtype.name}; the sender must cast them to one type")
            want = t.bool_ if op in COMPARE or op in LOGIC else a.dtype
            if rt != want or (op in LOGIC and not a.dtype.is_bool) or \
                    (op in ARITH and a.dtype.is_bool):
                raise self.fail(sub, f"{op} of {a.dtype.name} operands cannot have type "
                                     f"{rt.name}")
            return Binary(op, a, c, rt)
        if which == "unary":
            op = UOPS.get(m.unary.op)
            if op is None:
                raise self.fail(f"{sub}.op", f"unknown unary operator {m.unary.op}")
            a = self.expr(m.unary.a, f"{sub}.a", iters, d)
            if op == "not" and not a.dtype.is_bool:
                raise self.fail(sub, f"'not' needs a bool operand, got {a.dtype.name}")
            return Unary(op, a)
        if which == "select":
            s = m.select
            cond = self.expr(s.condition, f"{sub}.condition", iters, d)
            x = self.expr(s.if_true, f"{sub}.if_true", iters, d)
            y = self.expr(s.if_false, f"{sub}.if_false", iters, d)
            if not cond.dtype.is_bool or x.dtype != y.dtype:
                raise self.fail(sub, "select needs a bool condition and two operands of one "
                                     "type")
            return Select(cond, x, y)
        if which == "cast":
            rt = self.dtype(m.cast.type, f"{sub}.type")
            assert rt is not None
            return Cast(rt, self.expr(m.cast.a, f"{sub}.a", iters, d))
        if which == "call":
            return self.call(m.call, sub, iters, d)
        if which == "access":
            return self.access(m.access, sub, iters, d)
        raise self.fail(path, "empty expression")

    def constant(self, c: Any, path: str) -> Const:
        dt = self.dtype(c.type, f"{path}.type")
        assert dt is not None
        which = c.WhichOneof("value")
        want = {"bool": "bool_value", "float": "float_value", "uint": "uint_value",
                "int": "int_value"}[dt.kind]
        if which != want:
            raise self.fail(path, f"a {dt.name} constant must set {want}")
        v = getattr(c, which)
        if dt.is_float:
            return Const(float(v), dt)
        if dt.is_bool:
            return Const(bool(v), dt)
        lo, hi = (0, 2 ** dt.bits - 1) if dt.kind == "uint" else \
            (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1)
        if not lo <= v <= hi:
            raise self.fail(path, f"constant {v} does not fit in {dt.name}")
        return Const(int(v), dt)

    def call(self, c: Any, path: str, iters: dict[str, Var], d: int) -> Call:
        if c.function not in INTRINSICS:
            raise self.fail(f"{path}.function", f"unknown intrinsic {quoted(c.function)} (known: "
                                                f"{', '.join(sorted(INTRINSICS))})")
        n, rule = INTRINSICS[c.function]
        if len(c.args) != n:
            raise self.fail(path, f"{c.function} takes {n} argument(s), got {len(c.args)}")
        rt = self.dtype(c.type, f"{path}.type")
        assert rt is not None
        args = tuple(self.expr(a, f"{path}.args[{k}]", iters, d) for k, a in enumerate(c.args))
        if rule == "bits":  # reinterpret: the same width, another type
            if args[0].dtype.bits != rt.bits or args[0].dtype.is_bool or rt.is_bool:
                raise self.fail(path, f"reinterpret of {args[0].dtype.name} as {rt.name}: "
                                      "the types must have one width (not bool)")
            return Call(c.function, args, rt)
        if any(a.dtype != rt for a in args) or (rule == "float" and not rt.is_float) or \
                (rule == "int" and not rt.is_int):
            raise self.fail(path, f"{c.function} of type {rt.name} needs arguments of that "
                                  "type (float intrinsics need float arguments, bit "
                                  "operations integer ones)")
        return Call(c.function, args, rt)

    def access(self, a: Any, path: str, iters: dict[str, Var], d: int) -> Access:
        idx = tuple(self.expr(i, f"{path}.indices[{k}]", iters, d)
                    for k, i in enumerate(a.indices))
        for k, i in enumerate(idx):
            if not i.dtype.is_int:
                raise self.fail(f"{path}.indices[{k}]", f"an index must be an integer, got "
                                                        f"{i.dtype.name}")
        if a.kind in (pb.VALUE, pb.PREVIOUS):
            if a.target not in self.comps:
                raise self.fail(f"{path}.target", f"unknown computation {quoted(a.target)}")
            comp = self.comps[a.target]
            target: Any = comp if a.kind == pb.VALUE else _BufferOf(comp)
        elif a.kind == pb.MEMORY:
            if a.target not in self.buffers:
                raise self.fail(f"{path}.target", f"unknown input or buffer {quoted(a.target)}")
            target = self.buffers[a.target]
        else:
            raise self.fail(f"{path}.kind", "access kind must be VALUE, MEMORY or PREVIOUS")
        return Access(target, idx)

    # ------------------------------------------------------------------ program
    def function(self, m: Any, path: str) -> Function:
        lim = self.limits
        if len(m.computations) > lim.max_computations:
            raise ResourceLimitError(f"{path}.computations: {len(m.computations)} computations "
                                     f"exceed the cap of {lim.max_computations}")
        if len(m.commands) > lim.max_commands:
            raise ResourceLimitError(f"{path}.commands: {len(m.commands)} commands exceed the "
                                     f"cap of {lim.max_commands}")
        fn = self.guarded(f"{path}.name", lambda: self.function_class(
            m.name, allow_empty_domains=m.allow_empty_domains))
        self.fn = fn
        with fn:
            for k, p in enumerate(m.params):
                pp = f"{path}.params[{k}]"
                self.params[p.name] = self.guarded(pp, lambda p=p: Param(
                    p.name, p.min if p.HasField("min") else None,
                    p.max if p.HasField("max") else None))
            for field in ("inputs", "buffers"):
                for k, b in enumerate(getattr(m, field)):
                    self.buffer(b, f"{path}.{field}[{k}]", field == "inputs")
            for k, c in enumerate(m.computations):
                self.declare(c, f"{path}.computations[{k}]")
            for k, c in enumerate(m.computations):
                cp = f"{path}.computations[{k}]"
                self.guarded(cp, lambda c=c, cp=cp: self.define(c, cp))
            for k, c in enumerate(m.commands):
                self.command(c, f"{path}.commands[{k}]")
        return fn

    def buffer(self, b: Any, path: str, is_input: bool) -> None:
        dt = self.dtype(b.type, f"{path}.type")
        kind = KINDS.get(b.kind)
        if is_input and kind not in (INPUT, None):
            raise self.fail(f"{path}.kind", "an input must have kind INPUT")
        if not is_input and kind not in (OUTPUT, TEMPORARY, INOUT):
            raise self.fail(f"{path}.kind", "a buffer must have kind OUTPUT, INOUT or TEMPORARY "
                                            "(inputs go in function.inputs)")
        if b.memory_space not in (pb.MEMORY_SPACE_UNSPECIFIED, pb.HOST):
            raise self.fail(f"{path}.memory_space", "only host memory exists on the cpu "
                                                    "target")
        if len(b.sizes) > self.limits.max_dims:
            raise ResourceLimitError(f"{path}.sizes: more than {self.limits.max_dims} dims")
        sizes = [self.expr(s, f"{path}.sizes[{k}]", {}) for k, s in enumerate(b.sizes)]
        if is_input:
            self.buffers[b.name] = self.guarded(path, lambda: Input(b.name, sizes, dt))
        else:
            self.buffers[b.name] = self.guarded(path, lambda: Buffer(b.name, sizes, dt, kind))

    def declare(self, c: Any, path: str) -> None:
        self.guarded(f"{path}.name", lambda: check_name(c.name, "computation"))
        if len(c.domain) > self.limits.max_domain_chars:
            raise ResourceLimitError(f"{path}.domain: {len(c.domain)} characters exceed the "
                                     f"cap of {self.limits.max_domain_chars}")
        names = self.domain_dims(c.domain, c.name, f"{path}.domain")
        if len(names) > self.limits.max_dims:
            raise ResourceLimitError(f"{path}.domain: {len(names)} dims exceed the cap of "
                                     f"{self.limits.max_dims}")
        dt = self.dtype(c.type, f"{path}.type", allow_unspecified=True)
        iters = [self.guarded(f"{path}.domain", lambda n=n: Var(n)) for n in names]
        if len(c.order) > self.limits.max_domain_chars:
            raise ResourceLimitError(f"{path}.order: {len(c.order)} characters exceed the "
                                     f"cap of {self.limits.max_domain_chars}")
        if c.order:
            self.schedule_dims(c.order, f"{path}.order")
        self.comps[c.name] = self.guarded(path, lambda: Computation(
            c.name, iters, dtype=dt, domain=c.domain, order=c.order or None))

    def schedule_dims(self, text: str, path: str) -> None:
        """Refuse a schedule map (``set_schedule``, ``order``) whose text or number of
        time dimensions is over the caps, before any analysis sees it; a malformed map is
        left to the command, which names the error."""
        if len(text) > self.limits.max_domain_chars:
            raise ResourceLimitError(f"{path}: {len(text)} characters exceed the cap of "
                                     f"{self.limits.max_domain_chars}")
        n = range_tuple_size(text)  # before ISL: parsing 2,000 dims exhausts its quota
        if n is None:
            if self.isl_ctx is None:
                self.isl_ctx = isl.Context()
                self.isl_ctx.set_max_operations(1_000_000)
            try:
                n = isl.Map.read_from_str(self.isl_ctx, text).dim(isl.dim_type.out)
            except isl.Error:
                return
        if n > self.limits.max_schedule_dims:
            raise ResourceLimitError(f"{path}: {n} time dimensions exceed the cap of "
                                     f"{self.limits.max_schedule_dims} (max_schedule_dims)")

    def domain_dims(self, text: str, name: str, path: str) -> list[str]:
        """Parse the domain with ISL (bounded) to report a malformed one with its field
        path; returns the iterator names."""
        if self.isl_ctx is None:
            self.isl_ctx = isl.Context()
            self.isl_ctx.set_max_operations(1_000_000)
        try:
            dom = isl.Set.read_from_str(self.isl_ctx, text)
        except isl.Error as e:
            raise self.fail(path, f"not an ISL set: {quoted(text)} ({e})") from None
        sp = dom.get_space()
        names = [sp.get_dim_name(isl.dim_type.set, k) or ""
                 for k in range(dom.dim(isl.dim_type.set))]
        if dom.get_tuple_name() != name or not all(names):
            raise self.fail(path, f"expected a set {name}[i, ...] with named iterators, got "
                                  f"{quoted(text)}")
        for k in range(dom.dim(isl.dim_type.param)):
            p = sp.get_dim_name(isl.dim_type.param, k)
            if p not in self.params:
                raise self.fail(path, f"the domain uses {quoted(p)}, which is not a parameter")
        return names

    def define(self, c: Any, path: str) -> None:
        comp = self.comps[c.name]
        iters = {v.name: v for v in comp.vars}
        if not c.HasField("expression"):
            raise self.fail(f"{path}.expression", "missing")
        e = self.expr(c.expression, f"{path}.expression", iters)
        self.guarded(f"{path}.expression", lambda: comp.set_expression(e))
        if c.HasField("predicate"):
            p = self.expr(c.predicate, f"{path}.predicate", iters)
            if not p.dtype.is_bool:
                raise self.fail(f"{path}.predicate", f"must be bool, got {p.dtype.name}")
            comp.predicate = p

    def command(self, m: Any, path: str) -> None:
        which = m.WhichOneof("command")
        if which is None:
            raise self.fail(path, "empty command")
        a = getattr(m, which)
        sub = f"{path}.{which}"
        if which in ("send", "receive"):
            self.guarded(sub, lambda: self.send(m.computation, which, a, sub))
            return
        if which in _ON_BUFFERS:
            buf = self.comps.get(m.computation) or self.buffers.get(m.computation)
            if buf is None:
                raise self.fail(f"{path}.computation", f"unknown buffer or computation "
                                                       f"{quoted(m.computation)}")
            self.guarded(sub, lambda: self.on_buffer(buf, which, a, sub))
            return
        if which == "set_schedule":
            self.schedule_dims(a.isl_map, f"{sub}.isl_map")
        comp: Any = self.comps.get(m.computation) or self.ops.get(m.computation)
        if comp is None:
            raise self.fail(f"{path}.computation", f"unknown computation "
                                                   f"{quoted(m.computation)} (no computation "
                                                   "or operation has that name)")

        def other(name: str, field: str = "other") -> Any:
            found = self.comps.get(name) or self.ops.get(name)
            if found is None:
                raise self.fail(f"{sub}.{field}", f"unknown computation {quoted(name)} (no "
                                                  "computation or operation has that name)")
            return found

        def consumer(name: str) -> Computation:
            if name not in self.comps:
                raise self.fail(f"{sub}.consumer", f"unknown computation {quoted(name)}")
            return self.comps[name]

        def level(v: str) -> str:
            return cmd.ROOT if v == cmd.ROOT else v

        def buffer_or_name(name: str) -> Any:
            return self.comps.get(name) or self.buffers.get(name) or name

        calls: dict[str, Callable[[], Any]] = {
            "interchange": lambda: comp.interchange(a.a, a.b),
            "split": lambda: comp.split(a.dim, a.factor, a.outer, a.inner),
            "fuse": lambda: comp.fuse(a.outer, a.inner, a.fused),
            "tile": lambda: comp.tile(*a.dims, *a.sizes, *a.outers, *a.inners),
            "shift": lambda: comp.shift(a.dim, a.amount),
            "skew": lambda: comp.skew(a.a, a.b, a.factor, a.new_a, a.new_b),
            "reverse": lambda: comp.reverse(a.dim),
            "after": lambda: comp.after(other(a.other), level(a.level)),
            "before": lambda: comp.before(other(a.other), level(a.level)),
            "then": lambda: comp.then(other(a.other), level(a.level)),
            "compute_at": lambda: comp.compute_at(consumer(a.consumer), a.level),
            "inline": lambda: comp.inline(),
            "atomic": lambda: comp.atomic(a.group or None),
            "commute": lambda: comp.commute(),
            "unroll": lambda: comp.unroll(a.dim, a.factor if a.HasField("factor") else None,
                                          a.outer, a.inner),
            "vectorize": lambda: comp.vectorize(a.dim, a.factor, a.outer, a.inner),
            "parallelize": lambda: comp.parallelize(a.dim),
            "set_schedule": lambda: comp.set_schedule(a.isl_map),
            "gpu": lambda: comp.gpu_loops(a.blocks, a.threads),
            "tile_gpu": lambda: comp.tile_gpu(a.i, a.j, a.t1, a.t2, a.i0, a.j0, a.i1, a.j1),
            "distribute": lambda: comp.distribute(a.dim),
            "pipeline": lambda: comp.pipeline(a.dim, a.ii if a.HasField("ii") else 1),
            "stream": lambda: comp.stream(a.depth if a.HasField("depth") else None),
            "line_buffer": lambda: comp.line_buffer(buffer_or_name(a.buffer)),
            "storage_fold": lambda: comp.storage_fold(a.dim, a.factor),
            "allocate_at": lambda: comp.allocate_at(consumer(a.consumer), level(a.level)),
            "store_in": lambda: self.store_in(comp, a, sub),
            "copy_at": lambda: self._op(ops.copy_at(comp, a.level, buffer_or_name(a.src),
                                                    buffer_or_name(a.dst), a.name or None,
                                                    tuple(a.order), a.panel or None,
                                                    a.along or None)),
            "barrier_at": lambda: self._op(ops.barrier_at(comp, a.level, a.name or None)),
            "exchange": lambda: self._op(ops.exchange(comp, buffer_or_name(a.buffer),
                                                      a.level, a.name or None)),
        }
        if isinstance(comp, Operation) and which in _COMPUTATION_ONLY:
            raise self.fail(sub, f"{which} applies to computations, and {comp.name!r} is "
                                 f"a {comp.kind} operation")
        self.guarded(sub, calls[which])

    def _op(self, op: Operation) -> None:
        self.ops[op.name] = op

    def on_buffer(self, buf: Any, which: str, a: Any, path: str) -> None:
        """The commands called on a buffer (or a computation's buffer)."""
        if which == "distribute_buffer":
            ops.distribute_buffer(buf, a.dim)
        elif which == "partition_buffer":
            ops.partition_buffer(buf, a.dim, a.factor, a.scheme)
        elif which == "expand":
            if len(a.folds) != len(a.loops):
                raise self.fail(f"{path}.folds", f"{len(a.folds)} folds for "
                                                 f"{len(a.loops)} loops")
            ops.expand(buf, [(n, f) if f else n for n, f in zip(a.loops, a.folds,
                                                                strict=True)],
                       a.name or None)
        elif which == "tag_memory":
            if a.space not in SPACES:
                raise self.fail(f"{path}.space", "a memory space to tag must be GPU_GLOBAL, "
                                                 "GPU_SHARED, GPU_LOCAL or GPU_CONSTANT")
            ops.tag_memory(buf, SPACES[a.space])
        elif which in ("host_to_device", "device_to_host"):
            move = ops.host_to_device if which == "host_to_device" else ops.device_to_host
            self._op(move(buf, a.name or None))
        elif which in ("scatter", "gather"):
            at_root = ops.scatter if which == "scatter" else ops.gather
            self._op(at_root(buf, a.root, a.name or None))
        else:
            if a.consumer not in self.comps:
                raise self.fail(f"{path}.consumer", f"unknown computation "
                                                    f"{quoted(a.consumer)}")
            space = "shared" if which == "cache_shared_at" else "local"
            op = ops.cache_at(buf, self.comps[a.consumer], a.level, space, a.name or None)
            self._op(op)
            for o in self.fn.operations if self.fn is not None else ():
                self.ops.setdefault(o.name, o)  # its barriers

    def send(self, name: str, which: str, a: Any, path: str) -> None:
        """A send or receive: its domain (ISL text) gives the iterators its expressions
        use; the buffer is an input, a declared buffer or a computation's."""
        self.guarded(f"{path}.name", lambda: check_name(name, "operation"))
        if len(a.domain) > self.limits.max_domain_chars:
            raise ResourceLimitError(f"{path}.domain: {len(a.domain)} characters exceed the "
                                     f"cap of {self.limits.max_domain_chars}")
        names = self.domain_dims(a.domain, name, f"{path}.domain")
        iters = {n: self.guarded(f"{path}.domain", lambda n=n: Var(n)) for n in names}
        target: Any = self.comps.get(a.buffer) or self.buffers.get(a.buffer)
        if target is None:
            raise self.fail(f"{path}.buffer", f"unknown buffer or computation "
                                              f"{quoted(a.buffer)}")
        start = [self.expr(e, f"{path}.start[{k}]", iters) for k, e in enumerate(a.start)]
        size = [self.expr(e, f"{path}.size[{k}]", iters) for k, e in enumerate(a.size)]
        if not a.HasField("peer"):
            raise self.fail(f"{path}.peer", "missing")
        peer = self.expr(a.peer, f"{path}.peer", iters)
        region = Access(target, tuple(start))
        its = list(iters.values())
        if which == "send":
            op = ops.send(its, region, size, peer, tuple(a.properties), name, a.domain)
        else:
            match = self.ops.get(a.matching) if a.matching else None
            if a.matching and (match is None or match.kind != "send"):
                raise self.fail(f"{path}.matching", f"unknown send {quoted(a.matching)}")
            op = ops.receive(its, region, size, peer, tuple(a.properties), match, name,
                             a.domain)
        self._op(op)

    def store_in(self, comp: Computation, a: Any, path: str) -> None:
        target: Any = self.comps.get(a.buffer) or self.buffers.get(a.buffer)
        if target is None:
            raise self.fail(f"{path}.buffer", f"unknown buffer or computation {quoted(a.buffer)}")
        if a.identity and a.indices:
            raise self.fail(path, "identity and indices are exclusive")
        iters = {v.name: v for v in comp.vars}
        idx = None if a.identity else [self.expr(i, f"{path}.indices[{k}]", iters)
                                       for k, i in enumerate(a.indices)]
        comp.store_in(target, idx)


def decode_function(m: Any, limits: Limits | None = None, path: str = "function",
                    function_class: type[Function] = Function) -> Function:
    """Rebuild the Function of a ``pb.Function`` (raises InvalidProgramError with the field
    path, or ResourceLimitError for a cap). ``function_class``: the class to build (the
    IR record by default; ``me.Function.from_request`` asks for itself)."""
    return _Decoder(limits or Limits(), function_class).function(m, path)


def decode_outputs(m: Any) -> list[str] | None:
    return list(m.outputs) or None


def decode_target(t: Any) -> tuple[str, dict[str, Any]]:
    """The target's name and the options the request sets (the target fills the rest
    with its defaults); no target means cpu."""
    which = t.WhichOneof("target")
    if which is None:
        return "cpu", {}
    msg = getattr(t, which)
    if which == "named":
        if not msg.name:
            raise InvalidProgramError("missing", "target.named.name")
        return msg.name, dict(msg.options)
    opts = {f.name: v for f, v in msg.ListFields()}
    if which == "mpi" and opts.get("ranks") == RUNTIME_RANKS_WIRE:
        opts["ranks"] = RUNTIME_RANKS  # a number of ranks read at run time
    return which, opts


def decode_request(req: Any, limits: Limits | None = None,
                   function_class: type[Function] = Function
                   ) -> tuple[Function, dict[str, Any]]:
    """The Function of a ``pb.Request`` and its compile options (target, target_options,
    outputs, check_legality, max_isl_operations)."""
    if not req.HasField("function"):
        raise InvalidProgramError("missing", "function")
    fn = decode_function(req.function, limits, function_class=function_class)
    names = {c.name for c in fn.computations} | {b.name for b in fn.buffers}
    for k, o in enumerate(req.function.outputs):
        if o not in names:
            raise InvalidProgramError(f"unknown output {quoted(o)}", f"function.outputs[{k}]")
    target, target_options = decode_target(req.target)
    opts = {
        "target": target,
        "target_options": target_options,
        "outputs": decode_outputs(req.function),
        "check_legality": not req.options.skip_legality_check,
        "max_isl_operations": int(req.options.max_isl_operations),
        "auto_schedule": bool(req.options.auto_schedule),
        "estimates": _estimates(fn, req.options),
        "auto_schedule_budget_s": _budget(req.options),
    }
    return fn, opts


def _estimates(fn: Function, o: Any) -> dict[str, int]:
    params = {p.name for p in fn.params}
    for k in sorted(o.estimates):
        if k not in params:
            raise InvalidProgramError(f"an estimate of {quoted(k)}, which is not a parameter "
                                      "of the function", f"options.estimates[{quoted(k)}]")
    if o.estimates and not o.auto_schedule:
        raise InvalidProgramError("estimates without auto_schedule", "options.estimates")
    return {k: int(o.estimates[k]) for k in sorted(o.estimates)}


def _budget(o: Any) -> float | None:
    b = float(o.auto_schedule_budget_s)
    if b == 0:
        return None
    if not 0 < b < float("inf"):
        raise InvalidProgramError(f"a budget of {b!r} seconds (positive and finite, or 0: "
                                  "no limit)", "options.auto_schedule_budget_s")
    if not o.auto_schedule:
        raise InvalidProgramError("a budget without auto_schedule",
                                  "options.auto_schedule_budget_s")
    return b
