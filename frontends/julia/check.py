"""The up-front check of an ``@acc`` function: what no specialization could translate,
refused when the kernel is made (``compile_source``, the bridge), not at its first call.

Julia compiles a method when it is first called, but a user expects a ``while`` loop or a
call to a function the front-end does not know to be refused where the kernel is defined,
with the line and the construct. Everything this module refuses is independent of the
argument sizes and of Int argument values: statement kinds, assignments to arguments or
loop variables, loops over what is not a range, calls to unknown functions, unknown
names, indexing of what is not an array, index counts of annotated arrays, literal types,
unknown schedule directives and labels. What depends on the sizes (a local read before it
is assigned on some path, a step that folds to zero, a schedule's legality) is decided
when the kernel is specialized, at the call. The messages are the translator's own, so a
construct reads the same whichever of the two finds it.
"""

from __future__ import annotations

import re

from frontends.julia import jast as J
from frontends.julia import machine_ints
from frontends.julia.errors import UnsupportedJulia
from frontends.julia.exprs import CALLS, _show
from frontends.julia.jtypes import ELEMENT, ArgType, arg_type
from frontends.julia.localarrays import is_allocation, refuse_misplaced
from frontends.julia.program import assigned_names

BUILTIN_NAMES = frozenset({"true", "false", "pi", "π"})
"""Names a value may use without defining them (what ``Exprs`` knows)."""

DIRECTIVES = frozenset({"tile", "split", "interchange", "parallelize", "parallel",
                        "vectorize", "unroll", "skew", "shift", "reverse", "after", "before",
                        "compute_at", "allocate_at", "store_in", "copy_at", "pack"})
_TYPE_CALLS = frozenset({"zero", "one", *ELEMENT})  # calls whose argument may be a type
_SIZE_CALLS = frozenset({"size", "length"})
_DEFAULT_NAME = re.compile(r"S[0-9]+(_[0-9]+)?")  # an unlabelled statement's computation


def check_function(fn: J.Function) -> None:
    """Raise :class:`UnsupportedJulia` for the first construct (in source order) of ``fn``
    that no specialization translates."""
    _Checker(fn).run()


class _Checker:
    def __init__(self, fn: J.Function) -> None:
        self.fn = fn
        self.args = {a.name for a in fn.args}
        self.types: dict[str, ArgType | None] = {}
        for a in fn.args:
            self.types[a.name] = (arg_type(a.type, a.line, f"argument {a.name!r}")
                                  if a.type is not None else None)
        self.locals = set(assigned_names(fn.body)) - {"_"}
        counts = assigned_names(fn.body)
        self.local_arrays = {s.target.id for s in fn.body if isinstance(s, J.Assign) and
                             isinstance(s.target, J.Name) and is_allocation(s.value) and
                             counts.get(s.target.id) == 1 and s.op == "="}
        self.consts = {n for n, _ in fn.consts}
        self.labels: set[str] = set()

    def fail(self, line: int, what: str) -> UnsupportedJulia:
        return UnsupportedJulia(line, what, self.fn.name)

    def run(self) -> None:
        self.block(self.fn.body, frozenset(), top=True, guarded=False)
        for d in self.fn.schedule:  # a copy's name labels it for later directives
            if d.fn == "copy_at" and len(d.args) == 4 and isinstance(d.args[3], J.Name):
                self.labels.add(d.args[3].id)
            if d.fn == "pack" and len(d.args) > 1 and isinstance(d.args[1], J.Name):
                self.labels.add(d.args[1].id)
        for d in self.fn.schedule:
            self.directive(d)

    # ------------------------------------------------------------------ statements
    def block(self, body: tuple[J.Stmt, ...], loops: frozenset[str], top: bool,
              guarded: bool) -> None:
        for k, s in enumerate(body):
            if getattr(s, "label", None):
                self.labels.add(s.label)  # type: ignore[union-attr, arg-type]
            if isinstance(s, J.Unsupported):
                raise self.fail(s.line, s.construct)
            if isinstance(s, J.Return):
                if not top or guarded or k != len(body) - 1:
                    raise self.fail(s.line, "return before the end of the function")
                v = s.value
                if v is not None and not (isinstance(v, J.Name) and self.is_array(v.id)
                                          is not False):
                    self.expr(v, loops)  # an array name is returned as the array
            elif isinstance(s, J.Assign):
                self.assign(s, loops, top and not guarded)
            elif isinstance(s, J.For):
                self.loop(s, loops, guarded)
            elif isinstance(s, J.If):
                self.expr(s.cond, loops)
                self.block(s.then, loops, False, True)
                self.block(s.orelse, loops, False, True)

    def assign(self, s: J.Assign, loops: frozenset[str], top: bool) -> None:
        t = s.target
        names = ([t.id] if isinstance(t, J.Name) else
                 [x.id for x in t.items if isinstance(x, J.Name)]
                 if isinstance(t, J.TupleExpr) else [])
        for n in names:
            if n in self.args:
                raise self.fail(s.line, f"assignment to argument {n!r} (rebinding an "
                                "argument; assign to its elements or use a local)")
            if n in loops:
                raise self.fail(s.line, f"assignment to loop variable {n!r}")
        if isinstance(t, J.TupleExpr):
            v = s.value
            from_size = isinstance(v, J.Call) and v.fn == "size" and len(v.args) == 1 \
                and isinstance(v.args[0], J.Name) and self.is_array(v.args[0].id) is not False
            if not top or s.op != "=" or not (from_size or isinstance(v, J.TupleExpr)):
                raise self.fail(s.line, "tuple assignment other than `a, b = size(A)` or a "
                                "tuple of constant Ints at the top level")
            if from_size:
                self.expr(v, loops)
                return
            for item in v.items:  # type: ignore[union-attr]
                self.expr(item, loops)
            return
        if isinstance(t, J.Ref):
            self.ref(t, loops)
        if is_allocation(s.value):
            if not (top and isinstance(t, J.Name) and t.id in self.local_arrays):
                raise refuse_misplaced(s.line, self.fn.name)
            call = s.value
            assert isinstance(call, J.Call)
            first = call.args[:1]
            if call.fn == "similar" and (not first or not isinstance(first[0], J.Name) or
                                         self.is_array(first[0].id) is False):
                raise self.fail(s.line, f"similar of something other than an array: "
                                f"{t.id} = similar(...)")
            rest = call.args[1:] if call.fn == "similar" else call.args
            for a in rest:
                if not self.is_type(a):
                    self.expr(a, loops)
            return
        self.expr(s.value, loops)

    def loop(self, s: J.For, loops: frozenset[str], guarded: bool) -> None:
        if s.var in loops or s.var in self.args or s.var in self.locals:
            raise self.fail(s.line, f"loop variable {s.var!r} shadows another name")
        it = s.iter
        if isinstance(it, J.Range):
            for e in (it.start, it.stop) + ((it.step,) if it.step is not None else ()):
                self.expr(e, loops)
        elif isinstance(it, J.Call) and it.fn in ("axes", "eachindex") and \
                1 <= len(it.args) <= (2 if it.fn == "axes" else 1) and \
                isinstance(it.args[0], J.Name) and self.is_array(it.args[0].id) is not False:
            for a in it.args[1:]:
                self.expr(a, loops)
        else:
            raise self.fail(s.line, "loop over something other than a range a:b, a:s:b, "
                            "axes(A, d) or eachindex(v)")
        self.block(s.body, loops | {s.var}, False, guarded)

    # ------------------------------------------------------------------ expressions
    def is_array(self, name: str) -> bool | None:
        """True/False for an argument whose annotation says, or a local array; None when
        not known."""
        if name in self.local_arrays:
            return True
        if name not in self.args:
            return False
        t = self.types.get(name)
        return None if t is None else t.ndim > 0

    def ref(self, e: J.Ref, loops: frozenset[str]) -> None:
        if self.is_array(e.array) is False:
            raise self.fail(e.line, f"indexing {e.array!r}, which is not an array argument")
        t = self.types.get(e.array)
        if t is not None and len(e.indices) != t.ndim:
            raise self.fail(e.line, f"{e.array}[...] with {len(e.indices)} indices on a "
                            f"{t.ndim}-d array (linear or partial indexing)")
        for i in e.indices:
            self.expr(i, loops)

    def expr(self, e: J.Expr, loops: frozenset[str]) -> None:
        line = getattr(e, "line", 0)
        if isinstance(e, J.Num):
            if e.type not in ELEMENT:
                raise self.fail(line, f"literal of type {e.type}")
        elif isinstance(e, J.Name):
            self.name(e, loops)
        elif isinstance(e, J.Ref):
            self.ref(e, loops)
        elif isinstance(e, J.Call):
            self.call(e, loops)
        elif isinstance(e, J.Compare):
            for x in e.operands:
                self.expr(x, loops)
        elif isinstance(e, J.Logic):
            self.expr(e.a, loops)
            self.expr(e.b, loops)
        elif isinstance(e, J.Ternary):
            for x in (e.cond, e.a, e.b):
                self.expr(x, loops)
        else:
            what = "range" if isinstance(e, J.Range) else "tuple"
            raise self.fail(line, f"{what} used as a value: {_show(e)}")

    def name(self, e: J.Name, loops: frozenset[str]) -> None:
        n = e.id
        if n in self.local_arrays:
            raise self.fail(e.line, f"array {n!r} used as a value (index it: {n}[...])")
        if n in loops or n in self.locals or n in self.consts or n in BUILTIN_NAMES:
            return
        if n in self.args:
            if self.is_array(n):
                raise self.fail(e.line, f"array {n!r} used as a value (index it: "
                                f"{n}[...])")
            return
        raise self.fail(e.line, f"unknown name {n!r}")

    def call(self, e: J.Call, loops: frozenset[str]) -> None:
        if e.fn not in CALLS:
            raise self.fail(e.line, f"call to {e.fn}({', '.join(_show(a) for a in e.args)})")
        args = e.args
        if e.fn in _SIZE_CALLS:
            if not args or not isinstance(args[0], J.Name) or \
                    self.is_array(args[0].id) is False:
                raise self.fail(e.line, f"{_show(e)}: {e.fn} of something other than an "
                                "array argument")
            args = args[1:]
        elif e.fn in _TYPE_CALLS and len(args) == 1 and self.is_type(args[0]):
            return
        for a in args:
            self.expr(a, loops)

    def is_type(self, e: J.Expr) -> bool:
        """``Float64`` or ``eltype(A)``: the argument of ``zero``, ``one``, ``Float32(...)``
        may be a type rather than a value."""
        if isinstance(e, J.Name):
            return e.id in ELEMENT and e.id not in self.args and e.id not in self.locals
        return isinstance(e, J.Call) and e.fn == "eltype" and len(e.args) == 1 and \
            isinstance(e.args[0], J.Name) and self.is_array(e.args[0].id) is not False

    # ------------------------------------------------------------------ directives
    def directive(self, d: J.Call) -> None:
        if d.fn not in DIRECTIVES:
            raise self.fail(d.line, f"directive {d.fn}: unknown directive (directives: "
                            f"{', '.join(sorted(DIRECTIVES))})")
        arrays = self.local_arrays | {a for a, t in self.types.items() if t is None or t.ndim}
        if d.fn in ("store_in", "pack"):
            if not d.args or not isinstance(d.args[0], J.Name) or d.args[0].id not in arrays:
                raise self.fail(d.line, f"directive {d.fn}: the first argument must be an "
                                f"array (arrays: {sorted(arrays)})")
            for a in d.args[1:]:  # a block size may ask the machine: x % (2 * ...)
                if isinstance(a, J.Call) and a.fn == "%" and len(a.args) == 2 and \
                        (why := machine_ints.problem(a.args[1])) is not None:
                    raise self.fail(d.line, f"directive {d.fn}: {why}")
            return
        if not d.args or not isinstance(d.args[0], J.Name):
            raise self.fail(d.line, f"directive {d.fn}: the first argument must be a "
                            "statement label")
        for a in d.args[1:]:  # names, Ints, Int expressions of the machine queries
            why = machine_ints.problem(a)
            if why is not None:
                raise self.fail(d.line, f"directive {d.fn}: {why}")
        if d.fn == "copy_at" and (len(d.args) != 4 or not isinstance(d.args[2], J.Name) or
                                  d.args[2].id not in arrays):
            raise self.fail(d.line, "directive copy_at: takes (statement, loop, array, new "
                            f"buffer name) (arrays: {sorted(arrays)})")
        others = [d.args[0]] + ([d.args[1]] if d.fn in ("after", "before", "compute_at",
                                                        "allocate_at") and
                                len(d.args) > 1 and isinstance(d.args[1], J.Name) else [])
        for a in others:
            assert isinstance(a, J.Name)
            if a.id not in self.labels and not _DEFAULT_NAME.fullmatch(a.id):
                raise self.fail(d.line, f"directive {d.fn}: no statement labelled "
                                f"{a.id!r} (label statements with `@name {a.id} ...`; "
                                f"labels: {sorted(self.labels)})")
