"""The ordering commands (``after``/``before``/``then`` and compute_at's place) resolved
as a graph: the order they were written in does not matter.

The order of statements is a total order plus, between neighbours, the number of loops
they share (:class:`Order`). Each command moves one statement next to its anchors: an
``after`` puts its later statement right after its earlier one's nest at the command's
depth, a compute_at puts the producer just before its consumer (and the computations in
the consumer's loops that read it). Applied in the order written, a command that moves
a statement after another command anchored a third statement to it leaves that third
one behind (``y.after(t, i)`` then ``t.after(init, ROOT)``: y no longer shares t's loop
``i``). So the commands are applied in dependency order (each statement moved before
any command anchors another to it, a stable topological sort: commands already in that
order keep it, and so the time-space they always gave), and every ``after`` is checked
once the others are applied; what cannot all hold (a cycle, two depths that disagree) is
refused naming both commands.
"""

from __future__ import annotations

import heapq

from ..ir import commands as cmd
from ..ir.errors import ScheduleError
from .schedule import CompSchedule


class Order:
    """A total order of statements with the number of loops each shares with the next."""

    def __init__(self, names: list[str]) -> None:
        self.items = list(names)
        self.share = [0] * max(0, len(names) - 1)  # share[k]: between items k and k+1

    def remove(self, x: str) -> None:
        if x not in self.items:
            return  # an operation being placed for the first time
        k = self.items.index(x)
        if 0 < k < len(self.items) - 1:
            self.share[k - 1] = min(self.share[k - 1], self.share[k])
            del self.share[k]
        elif k == 0 and self.share:
            del self.share[0]
        elif self.share:
            del self.share[k - 1]
        del self.items[k]

    def insert_after(self, x: str, anchor: str, depth: int) -> None:
        """Put ``x`` after ``anchor`` and the statements sharing more than ``depth`` loops
        with it (its nest below that depth), sharing ``depth`` loops with it."""
        self.remove(x)
        k = self.items.index(anchor)
        while k < len(self.share) and self.share[k] > depth:
            k += 1
        nxt = self.share[k] if k < len(self.share) else None
        self.items.insert(k + 1, x)
        self.share.insert(k, depth)
        if nxt is not None:
            self.share[k + 1] = nxt

    def insert_at(self, x: str, k: int) -> None:
        """Put ``x`` at position ``k``, sharing no loop with its neighbours."""
        self.remove(x)
        self.items.insert(k, x)
        n = len(self.items)
        if n == 1:
            return
        if k == 0:
            self.share.insert(0, 0)
        elif k == n - 1:
            self.share.append(0)
        else:
            self.share[k - 1] = 0
            self.share.insert(k, 0)

    def append(self, x: str) -> None:
        self.remove(x)
        self.items.append(x)
        if len(self.items) > 1:
            self.share.append(0)

    def insert_before(self, x: str, anchor: str, depth: int) -> None:
        self.remove(x)
        k = self.items.index(anchor)
        while k > 0 and self.share[k - 1] > depth:
            k -= 1
        prev = self.share[k - 1] if k > 0 else None
        self.items.insert(k, x)
        self.share.insert(k, depth)
        if prev is not None:
            self.share[k - 1] = prev

    def shared(self, a: str, b: str) -> int | None:
        """The loops ``b`` shares with ``a`` when it runs after it, None when it does not."""
        i, j = self.items.index(a), self.items.index(b)
        if i >= j:
            return None
        return min(self.share[i:j])


def _moved(e: cmd.Command) -> str:
    """The statement an ordering command moves."""
    return e.later if isinstance(e, cmd.After) else e.comp


def _anchors(e: cmd.Command, also: dict[str, list[str]]) -> list[tuple[str, bool]]:
    """The statements an ordering command places its moved one against, each with whether
    only their compute_at (not an ``after``) must come first: a compute_at puts the
    producer before its consumer and before the computations placed in the consumer's
    loops that read it, but the ``after`` commands that order those (a Tuple update's
    elements, chained after the producer itself) place them against the producer."""
    if isinstance(e, cmd.After):
        return [(e.earlier, False)]
    assert isinstance(e, cmd.ComputeAt)
    return [(e.consumer, False), *((a, True) for a in also.get(e.comp, []))]


def check_after(comps: dict[str, CompSchedule], e: cmd.After) -> None:
    """An ``after``/``before``/``then`` naming an unknown statement or itself: refused
    before any ordering, since the graph of the commands would not mean anything."""
    for who in (e.comp, e.other):
        if who not in comps:
            raise ScheduleError(f"{e.describe()}: unknown or inlined computation {who!r}",
                                command=e.describe())
    if e.comp == e.other:
        raise ScheduleError(f"{e.describe()}: a computation cannot follow itself",
                            command=e.describe())


def dependency_order(events: list[cmd.Command], also: dict[str, list[str]]
                     ) -> list[cmd.Command]:
    """The ordering commands of ``events`` (``after``/``before``/``then``, compute_at),
    each after those that move a statement it is placed against; otherwise as written (a
    stable topological sort). A cycle is a contradiction, refused naming its commands."""
    evs = [e for e in events if isinstance(e, cmd.After | cmd.ComputeAt)]
    movers: dict[str, list[int]] = {}
    for i, e in enumerate(evs):
        movers.setdefault(_moved(e), []).append(i)
    preds = [sorted({i for a, only_at in _anchors(e, also) if a != _moved(e)
                     for i in movers.get(a, ())
                     if not only_at or isinstance(evs[i], cmd.ComputeAt)}) for e in evs]
    succs: list[list[int]] = [[] for _ in evs]
    for j, ps in enumerate(preds):
        for i in ps:
            succs[i].append(j)
    waiting = [len(ps) for ps in preds]
    ready = [j for j, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:  # the first one written among those whose anchors are placed
        i = heapq.heappop(ready)
        out.append(i)
        for j in succs[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(out) < len(evs):
        raise _cycle(evs, preds, set(out))
    return [evs[j] for j in out]


def _cycle(evs: list[cmd.Command], preds: list[list[int]], emitted: set[int]
           ) -> ScheduleError:
    """The error for the commands that each wait for another: one of their cycles."""
    j = min(k for k in range(len(evs)) if k not in emitted)
    path: list[int] = []
    while j not in path:
        path.append(j)
        j = max(p for p in preds[j] if p not in emitted)
    loop = list(reversed(path[path.index(j):]))  # each command's statement, then its next
    names = [_moved(evs[k]) for k in loop]
    written = sorted(loop)
    return ScheduleError(
        "contradictory ordering commands: " + " and ".join(evs[k].describe() for k in written)
        + " (a cycle: " + " -> ".join([*names, names[0]])
        + ", each placed against the one before it)",
        computations=tuple(names), command=evs[written[-1]].describe())


class Placer:
    """Applies ordering commands to an :class:`Order` and keeps every ``after`` applied
    so far true: a later command that undoes one is refused naming both."""

    def __init__(self, order: Order, comps: dict[str, CompSchedule],
                 also: dict[str, list[str]]) -> None:
        self.order, self.comps, self.also = order, comps, also
        self.applied: list[tuple[cmd.After, int]] = []

    def apply_all(self, events: list[cmd.Command]) -> None:
        for e in events:
            if isinstance(e, cmd.After):
                check_after(self.comps, e)
        for e in dependency_order(events, self.also):
            self.apply(e)

    def apply(self, e: cmd.Command) -> None:
        if isinstance(e, cmd.After):
            depth = 0 if e.level == cmd.ROOT else level_depth(self.comps, e)
            self.order.insert_after(e.later, e.earlier, depth)
            broken = self.broken()
            if broken and all(b.later == e.later for b, _ in broken):
                # the same statement after several others: after the last of them, the
                # commands that placed it after the earlier ones applied again
                placed = (list(self.order.items), list(self.order.share))
                for b, d in broken:
                    self.order.insert_after(b.later, b.earlier, d)
                if self.broken() or self.order.shared(e.earlier, e.later) != depth:
                    self.order.items, self.order.share = placed  # no: report the first
            self.check(e)
            self.applied.append((e, depth))
        elif isinstance(e, cmd.ComputeAt):
            # before the consumer and every computation placed in its loops that reads it
            first = min([e.consumer, *self.also.get(e.comp, [])], key=self.order.items.index)
            self.order.insert_before(e.comp, first, self.comps[e.comp].n_outer)
            self.check(e)

    def broken(self) -> list[tuple[cmd.After, int]]:
        return [(a, d) for a, d in self.applied if self.order.shared(a.earlier, a.later) != d]

    def check(self, e: cmd.Command | None, what: str = "") -> None:
        """Every ``after`` applied so far still holds once ``e`` is applied (``e`` None:
        once the operation ``what`` describes is placed by default)."""
        for a, d in self.broken():
            got = self.order.shared(a.earlier, a.later)
            now = f"runs before {a.earlier!r}" if got is None else \
                f"shares {got} loop{'s' * (got != 1)} with it"
            by = what or (e.describe() if e is not None else "")
            raise ScheduleError(
                f"contradictory ordering: {a.describe()} puts {a.later!r} after {a.earlier!r} "
                f"sharing {d} loop{'s' * (d != 1)}, but with {by} it {now}",
                computations=(a.later, a.earlier),
                command=e.describe() if e is not None else a.describe())


def level_depth(comps: dict[str, CompSchedule], e: cmd.After) -> int:
    """The number of loops an ``after`` shares: down to its level, a loop of the later
    statement that the earlier one must have as many loops around as."""
    a, b = comps[e.later], comps[e.earlier]
    adims: list[str] = a.ext_dims
    bdims: list[str] = b.ext_dims
    if e.level not in adims:
        raise ScheduleError(f"{e.describe()}: {e.later!r} has no loop {e.level!r}; its loops "
                            f"are {adims}", computations=(e.later, e.earlier),
                            command=e.describe())
    k = adims.index(e.level)
    if k >= len(bdims):
        raise ScheduleError(f"{e.describe()}: {e.earlier!r} has only {len(bdims)} loops",
                            computations=(e.later, e.earlier), command=e.describe())
    return k + 1
