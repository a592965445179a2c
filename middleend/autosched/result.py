"""What ``auto_schedule`` returns: the commands it chose, printable as Python a user can
paste, replay or edit, with the model's reasons beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import commands as cmd
from ..ir.errors import DefinitionError
from ..ir.expr import Binary, Const, Expr
from ..ir.function import Buffer, Function, Var
from ..ir.operations import Operation
from .search import Choice

# the commands a schedule is made of (the data mapping a front-end wrote stays as it was)
_SHOWN = (cmd.Shift, cmd.Split, cmd.Interchange, cmd.Unroll, cmd.Vectorize,
          cmd.Parallelize, cmd.Tile, cmd.After, cmd.Gpu, cmd.TileGpu, cmd.Distribute,
          cmd.ComputeAt,
          cmd.AllocateAt, cmd.Pipeline, cmd.CopyAt, cmd.Expand)


def _arg(v: Any) -> str:
    if v == cmd.ROOT:
        return "me.ROOT"
    return repr(v)


def python_line(c: cmd.Command, comp: str = "{}") -> str:
    """``c`` as the API call that records it, on ``comp`` formatted with the statement's
    name (``"{}"``: the bare name; ``'f.computation("{}")'``: replayable as is)."""
    on = comp.format(c.comp)
    if isinstance(c, cmd.After):
        verb = "before" if isinstance(c, cmd.Before) and not isinstance(c, cmd.Then) \
            else ("then" if isinstance(c, cmd.Then) else "after")
        other = comp.format(c.other)
        return f"{on}.{verb}({other}, {_arg(c.level)})"
    if isinstance(c, (cmd.ComputeAt, cmd.AllocateAt)):
        return f"{on}.{c.kind}({comp.format(c.consumer)}, {_arg(c.level)})"
    if isinstance(c, cmd.Unroll):
        args = [c.dim] if c.factor is None else [c.dim, c.factor]
        return f"{on}.unroll({', '.join(_arg(a) for a in args)}, outer={c.outer!r}, " \
               f"inner={c.inner!r})"
    if isinstance(c, cmd.Gpu):
        return f"{on}.gpu_loops({c.blocks!r}, {c.threads!r})"
    if isinstance(c, cmd.CopyAt):  # a packed operand (pack.py): an operation of its own
        order = (f", order={c.order!r}" if c.order else "") + \
            (f", panel={c.panel}" if c.panel else "") + \
            (f", along={c.along!r}" if c.along else "")
        return (f"me.copy_at({on}, {_arg(c.level)}, {c.src!r}, {c.dst!r}, name={c.name!r}"
                f"{order})")
    if isinstance(c, cmd.Expand):  # on the buffer: comp formats a computation's name
        on = on.replace(".computation(", ".buffer(")
        loops = [repr(v) if not f else f"({v!r}, {f})" for v, f in zip(c.loops, c.folds,
                                                                        strict=True)]
        return f"{on}.expand({', '.join(loops)}, name={c.name!r})"
    vals = [v for k, v in c.__dict__.items() if k != "comp"]
    return f"{on}.{c.kind}({', '.join(_arg(v) for v in vals)})"


_OPS = {"add": "+", "sub": "-", "mul": "*"}


def _index(e: Expr, on: str, names: list[str]) -> str:
    """A store index placement wrote (a variable plus or minus a constant) as Python on
    the computation ``on``'s variables."""
    if isinstance(e, Var) and e.name in names:
        return f"{on}.vars[{names.index(e.name)}]"
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return repr(e.value)
    if isinstance(e, Binary) and e.op in ("add", "sub") and isinstance(e.b, Const) and \
            isinstance(e.b.value, int) and e.b.value <= 0:
        k = -e.b.value if e.op == "sub" else e.b.value  # v - -2 as v + 2, v - 0 as v
        a = _index(e.a, on, names)
        return a if k == 0 else f"{a} {'+' if k > 0 else '-'} {abs(k)}"
    if isinstance(e, Binary) and e.op in _OPS:
        return f"({_index(e.a, on, names)} {_OPS[e.op]} {_index(e.b, on, names)})"
    raise DefinitionError(f"auto-schedule: a store_in index of {on} ({e!r}) has no "
                          "Python form")


@dataclass(frozen=True)
class Stored:
    """A ``store_in`` placement added: the command, its new buffer, and the names of the
    computation's variables (what its indices are written in)."""

    command: cmd.StoreIn
    buffer: Buffer
    vars: tuple[str, ...]

    def python(self, function: str) -> list[str]:
        """The buffer's declaration (inside ``with``) and the command, on ``function``."""
        return _store_lines(self, function)


def _store_lines(st: Stored, function: str) -> list[str]:
    c, b, names = st.command, st.buffer, list(st.vars)
    on = f'{function}.computation("{c.comp}")'
    sizes = ", ".join(repr(int(getattr(s, "value", s))) for s in b.sizes)
    idx = ", ".join(_index(e, on, names) for e in c.indices or ())
    return [f"with {function}:",
            f"    {b.name} = me.Buffer({b.name!r}, [{sizes}], me.{b.dtype.name})",
            f"{on}.store_in({b.name}, [{idx}])"]


@dataclass
class AutoSchedule:
    """The schedule ``auto_schedule`` chose for ``function``: ``commands`` is the whole
    command log it leaves (the data mapping as it was, then the loop commands, then the
    ordering); ``choices`` says per statement which plan, the model's estimates (cycles,
    chosen and as written) and how many candidates the legality check refused;
    ``search_s`` is the time the search took, ``checks`` the legality checks it ran."""

    function: str
    target: str
    commands: list[cmd.Command]
    choices: list[Choice]
    search_s: float
    checks: int
    notes: list[str] = field(default_factory=list)
    tuned: bool = False
    measured: dict[str, float] = field(default_factory=dict)  # candidate -> seconds
    from_cache: bool = False
    # placement's additions: buffers for producers it materialized whose domain starts
    # below 0, and the producers it took out of their front-end's inline() commands
    stores: list[Stored] = field(default_factory=list)
    uninlined: list[str] = field(default_factory=list)
    # data-mapping commands the search added (a sliding window's storage_fold), shown
    # with the schedule; the program's own stay in its algorithm, as store_in does
    added: list[cmd.Command] = field(default_factory=list)

    def schedule_commands(self) -> list[cmd.Command]:
        """The loop and ordering commands (what a user writes as a schedule)."""
        return [c for c in self.commands
                if isinstance(c, _SHOWN) or any(c is a for a in self.added)]

    def python(self, function: str = "f") -> str:
        """The schedule as Python statements on the Function variable ``function``:
        pasted after the algorithm, they rebuild this schedule."""
        fmt = f'{function}.computation("{{}}")'
        lines = [f"# {p}: computed, no longer inlined (drop its inline() command first)"
                 for p in self.uninlined]
        for st in self.stores:
            lines += st.python(function)
        ops = {c.name for c in self.commands if isinstance(c, cmd.CopyAt)}  # the copies'
        on_op = f'{function}.operation("{{}}")'  # own loops: commands on the operation
        return "\n".join(lines + [python_line(c, on_op if c.comp in ops else fmt)
                                   for c in self.schedule_commands()])

    def __str__(self) -> str:
        head = (f"# auto-schedule of {self.function!r} for {self.target}: "
                f"{len(self.schedule_commands())} commands, {self.checks} legality checks, "
                f"{self.search_s:.2f} s" + (" (tuned)" if self.tuned else "")
                + (" (cached)" if self.from_cache else ""))
        lines = [head]
        for ch in self.choices:
            what = ch.plan.describe() if ch.plan else (ch.what or "as written")
            gain = ch.baseline / ch.estimate if ch.estimate else 1.0
            why = [f"model: {gain:.1f}x the loops as written"] if ch.plan else []
            if ch.refused:
                why.append(f"{ch.refused} candidates refused as illegal")
            lines.append(f"#   {ch.stmt}: {what}" + (f" ({', '.join(why)})" if why else ""))
        lines += [f"#   note: {n}" for n in self.notes]
        lines += [python_line(c) for c in self.schedule_commands()]
        return "\n".join(lines)

    def apply(self, fn: Function) -> Function:
        """Make ``fn``'s command log this schedule's (``fn`` is the program it was found
        for, or the same program built again)."""
        if fn.name != self.function:
            raise DefinitionError(f"auto-schedule of {self.function!r} applied to function "
                                  f"{fn.name!r}")
        for c in self.commands:  # the copies the search added, made in a rebuilt program
            if isinstance(c, cmd.Expand):  # its buffers' names, as Buffer.expand claims
                for n in (c.name, f"{c.name}_back"):
                    if n not in fn._names():
                        fn._reserve(n)
            if isinstance(c, cmd.CopyAt) and c.name not in {o.name for o in fn.operations}:
                Operation(fn, c.name, "copy")
                if c.dst not in fn._names():
                    fn._reserve(c.dst)
        names = {x.name for x in (*fn.computations, *fn.operations, *fn.buffers)}
        missing = sorted({c.comp for c in self.commands} - names)
        if missing:
            raise DefinitionError(f"auto-schedule of {self.function!r}: function {fn.name!r} "
                                  f"has no computation, buffer or operation "
                                  f"{missing[0]!r}")
        fn.commands.items = list(self.commands)
        return fn
