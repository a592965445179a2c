"""Automatic scheduling: a legal, fast schedule for a program that comes without one.

Policy on top of the mechanism (``../shared/DESIGN.md``): this package proposes commands of
the scheduling language and the middle-end checks them like any user's. It reads a program
through :mod:`middleend.driver.summary` (numbers from ISL), ranks candidate loop nests with
an analytical model (:mod:`.cost`), keeps the best legal one per statement
(:mod:`.search`), optionally times the best few on the machine (:mod:`.tune`), and returns
an :class:`~.result.AutoSchedule`: the commands, printable and replayable.
"""

from .api import auto_schedule
from .result import AutoSchedule

__all__ = ["AutoSchedule", "auto_schedule"]
