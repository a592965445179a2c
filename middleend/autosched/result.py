"""What ``auto_schedule`` returns: the commands it chose, printable as Python a user can
paste, replay or edit, with the model's reasons beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import commands as cmd
from ..ir.errors import DefinitionError
from ..ir.function import Function
from .search import Choice

# the commands a schedule is made of (the data mapping a front-end wrote stays as it was)
_SHOWN = (cmd.Shift, cmd.Split, cmd.Interchange, cmd.Unroll, cmd.Vectorize,
          cmd.Parallelize, cmd.Tile, cmd.After, cmd.Gpu, cmd.TileGpu, cmd.Distribute,
          cmd.ComputeAt,
          cmd.AllocateAt, cmd.Pipeline)


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
    vals = [v for k, v in c.__dict__.items() if k != "comp"]
    return f"{on}.{c.kind}({', '.join(_arg(v) for v in vals)})"


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

    def schedule_commands(self) -> list[cmd.Command]:
        """The loop and ordering commands (what a user writes as a schedule)."""
        return [c for c in self.commands if isinstance(c, _SHOWN)]

    def python(self, function: str = "f") -> str:
        """The schedule as Python statements on the Function variable ``function``:
        pasted after the algorithm, they rebuild this schedule."""
        fmt = f'{function}.computation("{{}}")'
        return "\n".join(python_line(c, fmt) for c in self.schedule_commands())

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
        names = {x.name for x in (*fn.computations, *fn.operations, *fn.buffers)}
        missing = sorted({c.comp for c in self.commands} - names)
        if missing:
            raise DefinitionError(f"auto-schedule of {self.function!r}: function {fn.name!r} "
                                  f"has no computation, buffer or operation "
                                  f"{missing[0]!r}")
        fn.commands.items = list(self.commands)
        return fn
