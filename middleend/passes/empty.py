"""Computations that compute nothing, dropped from a specialized program.

A front-end that specializes a program (Halide on its sizes and index Params, Julia on its
sizes and Int arguments) writes Layer I for those values, and some computations then have
no instance at all: the dead branch of an ``if d > 5`` on an Int argument, an ``RDom(0, n)``
with ``n = 0`` or a ``where`` that never holds, a loop over a zero-length array. Halide and
Julia simply run nothing there. Written by hand, such a domain is a mistake and stays a
``DefinitionError`` (:func:`middleend.passes.layer1._check_domain`); a front-end says that
it specializes with ``Function.allow_empty_domains`` (the wire format's
``Function.allow_empty_domains``), and Layer I then drops every computation whose domain is
empty for every parameter value allowed, inlined ones excepted (they are substituted, not
scheduled). This module says what the rest of the program means without them, so that no
later pass ever sees a dropped name:

- a *value* read of a dropped computation (``D[i]`` by a computation that has instances)
  reads what nothing produces: an ``UnproducedReadError``, as for any such read;
- its buffer stays: what other computations store into it (``U.store_in(D)``) or read of
  it through ``.memory`` is unchanged, a buffer that only dropped computations write is
  sized 0 in every dimension (an output is then an empty array), see
  ``Layer1.dropped_into`` and :func:`middleend.passes.data.build_layer3`;
- commands (:func:`kept_commands`): those that schedule, tag, place or order a dropped
  computation are dropped, since it has no instance to transform. An ordering command
  (``after``/``before``/``then``) with a dropped computation on either side orders
  nothing: the other statement keeps its other commands, or its default place, and the
  legality check proves the order that results, as for any schedule. ``P.compute_at(D,
  level)`` and ``P.allocate_at(D, level)`` with ``D`` dropped are dropped too: ``P`` is
  then computed over its own domain at its own place and its buffer allocated at function
  entry (a superset of the nothing ``D`` needed, so every other reader of ``P`` keeps its
  values). A Layer IV operation placed at a dropped consumer (``copy_at``,
  ``barrier_at``, ``cache_*_at``, ``exchange``) is dropped with every command on it.
  Commands that act on the dropped computation's *buffer* (``storage_fold``,
  ``tag_memory``, host/device copies, distribution, partition, scatter/gather) apply to it
  through a computation that still writes it, and are dropped when none does (the buffer
  then holds nothing computed); a field that names a buffer through the computation
  (``store_in(D)``, ``copy_at(..., src=D)``) names the buffer ``D``'s values would be in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..ir import commands as cmd
from ..ir.errors import UnproducedReadError
from ..ir.expr import Access, Expr, walk_shared
from ..ir.function import Computation

# commands whose ``comp`` may name a buffer, or a computation meaning its buffer
_ON_BUFFER = (cmd.StorageFold, cmd.TagMemory, cmd.HostToDevice, cmd.DeviceToHost,
              cmd.DistributeBuffer, cmd.PartitionBuffer, cmd.Scatter, cmd.Gather)


def storage_names(commands: list[cmd.Command]) -> dict[str, str]:
    """Each computation's last ``store_in`` target as written (a buffer or a computation):
    the one Layer III applies."""
    return {c.comp: c.buffer for c in commands if isinstance(c, cmd.StoreIn)}


def into(name: str, dropped: set[str], stores: dict[str, str]) -> str:
    """What a field naming ``name`` as a buffer means once the dropped computations are
    gone: ``name`` itself unless it is a dropped computation stored elsewhere, which
    means where it is stored (followed while that is dropped too); a dropped computation
    without ``store_in`` means its own buffer, which Layer III keeps."""
    seen = {name}
    while name in dropped and name in stores and stores[name] not in seen:
        name = stores[name]
        seen.add(name)
    return name


def refuse_value_reads(reader: str, exprs: Sequence[Expr | None], dropped: dict[str, str]
                       ) -> None:
    """A computation with instances that reads a dropped computation's *value* reads
    what nothing produces (``dropped``: each dropped computation's domain, as text)."""
    for root in exprs:
        if root is None:
            continue
        for n in walk_shared(root):
            if isinstance(n, Access) and isinstance(n.target, Computation) and \
                    n.target.name in dropped:
                t = n.target.name
                raise UnproducedReadError(reader, t, dropped[t], message=(
                    f"computation {reader!r} reads the value of {t!r}, whose iteration "
                    f"domain {dropped[t]} is empty for the parameter values allowed: nothing "
                    f"produces it (read its buffer, {t}.memory[...], for what it holds)"))


def kept_commands(commands: list[cmd.Command], dropped: set[str], kept: list[str]
                  ) -> list[tuple[int, cmd.Command]]:
    """The commands that still mean something once the computations ``dropped`` are gone,
    each with its position in ``commands`` (errors name the command as written) and
    rewritten where it names a buffer through a dropped computation (see the module's
    docstring for what each kind becomes). ``kept``: the computations that remain."""
    stores = storage_names(commands)
    gone = set(dropped)  # statements without instances: dropped computations, their ops

    def final(n: str) -> str:
        seen = {n}
        while n in stores and stores[n] not in seen:
            n = stores[n]
            seen.add(n)
        return n

    def writer_of(d: str) -> str | None:
        """A remaining computation stored in the buffer of dropped ``d``, if any."""
        f = final(d)
        return next((k for k in kept if final(k) == f), None)

    out: list[tuple[int, cmd.Command]] = []
    for k, c in enumerate(commands):
        got = _kept(c, gone, dropped, stores, writer_of)
        if got is None:
            gone.update(name for _, name in cmd.operations_of(c))
        else:
            out.append((k, got))
    return out


def _kept(c: cmd.Command, gone: set[str], dropped: set[str], stores: dict[str, str],
          writer_of: Callable[[str], str | None]) -> cmd.Command | None:
    """``c`` as it stays (possibly rewritten), or None when it is dropped."""
    def buf(n: str) -> str:
        return into(n, dropped, stores)

    if isinstance(c, cmd.After):
        return None if c.comp in gone or c.other in gone else c
    if isinstance(c, cmd.ComputeAt):
        return None if c.comp in gone or c.consumer in gone else c
    if isinstance(c, cmd.AllocateAt):
        if c.consumer in gone:
            return None
    if isinstance(c, (cmd.AllocateAt, *_ON_BUFFER)) and c.comp in dropped:
        w = writer_of(c.comp)
        return None if w is None else dataclasses.replace(c, comp=w)
    if isinstance(c, cmd.StoreIn):
        return None if c.comp in gone else dataclasses.replace(c, buffer=buf(c.buffer))
    if isinstance(c, (cmd.CacheSharedAt, cmd.CacheLocalAt)):
        if c.consumer in gone:
            return None
        return dataclasses.replace(c, comp=buf(c.comp))
    if c.comp in gone:
        return None
    if isinstance(c, cmd.CopyAt):
        return dataclasses.replace(c, src=buf(c.src))
    if isinstance(c, (cmd.Exchange, cmd.LineBuffer, cmd.Send)):
        return dataclasses.replace(c, buffer=buf(c.buffer))
    return c
