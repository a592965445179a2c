"""A progress bar for the command line's work that can take seconds (a batch of compiles,
each a lowering and a C build), drawn with ``rich`` on stderr.

It is shown only where someone watches: stderr is a terminal and ``-q`` was not given; in a
pipe, a log file or CI nothing is printed. While a compile runs, the bar names the phase
that just ended (the ``middleend`` logger's phase records, the ones ``-v`` prints), so that
a long C build is visibly a build and not a hang.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


def wanted(stream: IO[str], quiet: bool) -> bool:
    """Whether to draw a bar on ``stream``: a terminal, and not ``-q``."""
    isatty = getattr(stream, "isatty", None)
    return not quiet and bool(isatty and isatty())


class Bar:
    """One bar over ``total`` items; :meth:`start` names the item being done."""

    def __init__(self, progress: Any, total: int) -> None:
        self._p = progress
        self._task = progress.add_task("", total=total, phase="") if progress else None

    def start(self, label: str) -> None:
        if self._p is not None:
            self._p.update(self._task, description=label, phase="")

    def phase(self, text: str) -> None:
        if self._p is not None:
            self._p.update(self._task, phase=text)

    def echo(self, text: str) -> None:
        """Print a result line on stdout; above the bar when both are the terminal (a
        plain print there would land in the middle of the bar's line)."""
        if self._p is not None and wanted(sys.stdout, False):
            self._p.console.print(text, highlight=False, markup=False, soft_wrap=True)
        else:
            print(text, flush=True)

    def advance(self) -> None:
        if self._p is not None:
            self._p.advance(self._task)


class _PhaseHandler(logging.Handler):
    """Shows each phase record of the ``middleend`` logger on the bar."""

    def __init__(self, bar: Bar) -> None:
        super().__init__(logging.INFO)
        self.bar = bar

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.bar.phase(record.getMessage()[:60])
        except Exception:  # a display problem must never fail a compile
            self.handleError(record)


@contextmanager
def bar(total: int, stream: IO[str], enabled: bool) -> Iterator[Bar]:
    """A bar on ``stream`` while the block runs (removed when it ends), or a bar that
    draws nothing when not ``enabled``."""
    if not enabled:
        yield Bar(None, total)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(file=stream, force_terminal=True)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("[dim]{task.fields[phase]}"))
    log = logging.getLogger("middleend")
    level = log.level
    with Progress(*columns, console=console, transient=True, redirect_stderr=False,
                  redirect_stdout=False) as p:
        b = Bar(p, total)
        handler = _PhaseHandler(b)
        log.addHandler(handler)
        if not log.isEnabledFor(logging.INFO):
            log.setLevel(logging.INFO)
        try:
            yield b
        finally:
            log.removeHandler(handler)
            log.setLevel(level)
