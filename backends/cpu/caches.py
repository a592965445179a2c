"""This host's CPU caches, as Linux reports them under ``/sys/devices/system/cpu``: the
cpu target's :class:`~middleend.target.base.Machine` carries them, so that a schedule can
size its tiles by the caches of the machine it is built for (a Julia directive's
``cache_bytes(2)``) instead of one machine's figures."""

from __future__ import annotations

from pathlib import Path

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int | None:
    """Bytes of a sysfs size ("48K", "1024K", "32M", "512"), None where unreadable."""
    t = text.strip().upper()
    scale = _UNITS.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in _UNITS else t
    return int(digits) * scale if digits.isdigit() else None


def host_caches(root: Path = CACHE_DIR) -> tuple[tuple[int, str, int], ...]:
    """(level, type, bytes) per cache of CPU 0 (``index*/level``, ``type``, ``size``),
    sorted; empty where the files do not exist (another OS, a container hiding them) or
    cannot be read: a schedule that asks then gets a clear error, never a guess."""
    out = []
    try:
        entries = sorted(root.glob("index*"))
    except OSError:
        return ()
    for d in entries:
        try:
            level = int((d / "level").read_text().strip())
            kind = (d / "type").read_text().strip()
            size = _size((d / "size").read_text())
        except (OSError, ValueError):
            continue
        if size is not None:
            out.append((level, kind, size))
    return tuple(sorted(out))
