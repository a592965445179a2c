"""Exceptions. Each carries the context a user needs to act: which computation, which
command, which dependence (as an ISL relation)."""

from __future__ import annotations


class MiddleEndError(Exception):
    """Base of every error the middle-end raises on purpose."""


def quoted(value: object, limit: int = 120) -> str:
    """``repr(value)``, shortened: errors quote what a user (or a request) sent, and a
    20,000-character name must not become a 20,000-character message."""
    r = repr(value)
    return r if len(r) <= limit else f"{r[:limit]}... ({len(r)} characters)"


class DefinitionError(MiddleEndError):
    """Layer I or the data mapping is malformed (bad name, bad bounds, unknown reference)."""


class InvalidProgramError(DefinitionError):
    """A wire-format program is malformed; ``field_path`` says where (e.g.
    ``function.computations[1].expression.binary.a``)."""

    def __init__(self, message: str, field_path: str = "") -> None:
        self.field_path = field_path
        self.reason = message
        super().__init__(f"{field_path}: {message}" if field_path else message)


class UnproducedReadError(DefinitionError):
    """A computation reads values that no computation or input produces. ``computation``
    reads ``target`` at the instances ``unproduced`` (ISL text) of its first such read;
    ``reads`` says, for every such read of the program, which computation reads what at
    which index, where, and the elements nobody produces (the message includes it; a
    message from afar is kept as it came, in ``message``)."""

    def __init__(self, computation: str, target: str, unproduced: str, reads: str = "",
                 message: str | None = None) -> None:
        self.computation = computation
        self.target = target
        self.unproduced = unproduced
        self.reads = reads
        super().__init__(message or (
            f"computation {computation!r} reads {target!r} where nothing produces a value: "
            f"unproduced reads {unproduced}" + (f"; {reads}" if reads else "")))


class ScheduleError(MiddleEndError):
    """A schedule is malformed or illegal. For an illegal one, ``dependence`` is the
    violated dependence as ISL text, ``computations`` the (source, sink) pair, ``command``
    the command that broke it (as written), ``level`` the loop concerned if any."""

    def __init__(self, message: str, *, computations: tuple[str, ...] = (),
                 dependence: str | None = None, command: str | None = None,
                 command_index: int | None = None, level: str | None = None) -> None:
        self.computations = computations
        self.dependence = dependence
        self.command = command
        self.command_index = command_index
        self.level = level
        parts = [message]
        if computations:
            parts.append("computations: " + ", ".join(computations))
        if dependence:
            parts.append(f"dependence: {dependence}")
        if command:
            where = f" (command #{command_index})" if command_index is not None else ""
            parts.append(f"broken by: {command}{where}")
        if level:
            parts.append(f"loop level: {level}")
        super().__init__("\n  ".join(parts))


def with_command_index(err: ScheduleError, commands: list[str],
                       index: int | None = None) -> ScheduleError:
    """The same error with ``command_index`` filled in: ``index`` when the failing command
    is known, else the first command with the error's command text."""
    if err.command_index is not None or err.command is None:
        return err
    if index is None:
        if err.command not in commands:
            return err
        index = commands.index(err.command)
    msg = str(err).split("\n")[0]
    return ScheduleError(msg, computations=err.computations, dependence=err.dependence,
                         command=err.command, command_index=index, level=err.level)


class TargetError(MiddleEndError):
    """The target cannot honour something the program asks for (a loop tag, a Layer IV
    operation, an option), or there is no such target. ``target``, ``computations``,
    ``loop`` and ``command`` say which target, where and which command asked for it."""

    def __init__(self, message: str, *, target: str | None = None,
                 computations: tuple[str, ...] = (), loop: str | None = None,
                 command: str | None = None, feature: tuple[str, str] | None = None) -> None:
        self.target = target
        self.computations = computations
        self.loop = loop
        self.command = command
        self.feature = feature  # ("tag", "gpu_block") or ("operation", "barrier")
        super().__init__(message)


class TargetUnavailable(TargetError):
    """A known target cannot be used on this machine: its toolchain (``tool``) is missing
    or it is not implemented yet; ``install`` says how to get it."""

    def __init__(self, message: str, *, target: str | None = None, tool: str = "",
                 install: str = "") -> None:
        self.tool = tool
        self.install = install
        super().__init__(message, target=target)


class ResourceLimitError(MiddleEndError):
    """ISL work exceeded its operation bound, or a size cap was hit."""


class BuildError(MiddleEndError):
    """The system compiler failed on generated code; carries the command and its log."""

    def __init__(self, message: str, command: list[str], log: str) -> None:
        self.command = command
        self.log = log
        super().__init__(f"{message}\n  command: {' '.join(command)}\n  log:\n{log}")


class KernelArgumentError(MiddleEndError, TypeError):
    """A kernel was called with a missing, mistyped, misshaped or non-contiguous array."""


class KernelRuntimeError(MiddleEndError, RuntimeError):
    """The generated code reported an error (e.g. a data-dependent index out of bounds)."""
