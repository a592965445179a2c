"""An on-disk, content-addressed cache of compile responses.

Why it is built this way:

* Content-addressed: the key is a sha256 the caller computes over everything that determines the
  response, so an entry can never be stale; a hit is always valid and there is nothing to
  invalidate.
* Each entry carries the sha256 of its payload, so a truncated or corrupted file (a crash, a full
  disk, bit rot) is detected, deleted and rebuilt by the caller instead of being served.
* Each entry also carries its own key (and the digest covers it): a hit is served only when the
  stored key is the requested one, so an entry copied or renamed under another key (by hand, a
  bad sync, an attacker with write access to one file) is a miss for that key, never the
  response to another program; such an entry is removed.
* The entry file's mtime is the LRU clock (a hit touches it), so the size bound survives restarts
  and is shared by every process on the same root, with no index file that could get out of sync.
* Several processes (server workers) may share one root: writes go to a temp file and are
  published with an atomic ``os.replace``, and every reader/evictor tolerates files vanishing.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"MECACHE2"
# magic, sha256 over the key (32 raw bytes) and the payload, payload length, the key (raw)
_HEADER = struct.Struct("<8s32sQ32s")
_KEY_RE = re.compile(r"[0-9a-f]{64}")
_TMP_PREFIX = ".tmp-"
STALE_TMP_SECONDS = 3600.0


def _digest(raw_key: bytes, payload: bytes) -> bytes:
    return hashlib.sha256(raw_key + payload).digest()


def validate_key(key: str) -> None:
    """Raise ValueError unless ``key`` is 64 lowercase hex chars (so no path traversal)."""
    if not isinstance(key, str) or _KEY_RE.fullmatch(key) is None:
        raise ValueError(f"invalid cache key {key!r}: expected 64 lowercase hex characters")


@dataclass
class CacheStats:
    """Per-instance counters; a corrupt entry counts as both ``corrupt`` and a miss, an entry
    stored under another key as both ``wrong_key`` and a miss."""

    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    evictions: int = 0
    wrong_key: int = 0


class ArtifactCache:
    """Bytes stored under hex-sha256 keys at ``root/<key[:2]>/<key>.entry``, bounded by size.

    The bound is enforced after each ``put`` by deleting the least recently used entries (oldest
    mtime first). A single payload larger than ``max_bytes`` is therefore not retained.
    """

    def __init__(self, root: Path | str, max_bytes: int = 1 << 30) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.stats = CacheStats()

    validate_key = staticmethod(validate_key)

    @staticmethod
    def key_for(*parts: bytes | str) -> str:
        """sha256 over length-prefixed parts, so ("ab", "c") and ("a", "bc") differ."""
        h = hashlib.sha256()
        for part in parts:
            data = part.encode("utf-8") if isinstance(part, str) else bytes(part)
            h.update(struct.pack("<Q", len(data)))
            h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        validate_key(key)
        return self.root / key[:2] / f"{key}.entry"

    def _entries(self) -> list[Path]:
        return list(self.root.glob("??/*.entry"))

    def get(self, key: str) -> bytes | None:
        """Return the payload, or None on a miss: absent, corrupt, or stored under another
        key (the last two are removed)."""
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
                ino = os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            self.stats.misses += 1
            return None
        payload = data[_HEADER.size:]
        ok = wrong_key = False
        if len(data) >= _HEADER.size:
            magic, digest, length, stored_key = _HEADER.unpack_from(data)
            ok = (magic == MAGIC and length == len(payload)
                  and _digest(stored_key, payload) == digest)
            wrong_key = ok and stored_key != bytes.fromhex(key)
        if not ok or wrong_key:
            if wrong_key:
                self.stats.wrong_key += 1
            else:
                self.stats.corrupt += 1
            self.stats.misses += 1
            try:  # only delete the file we read, not one a concurrent put just published
                if os.stat(path).st_ino == ino:
                    os.unlink(path)
            except FileNotFoundError:
                pass
            return None
        try:
            os.utime(path)  # the LRU clock
        except FileNotFoundError:
            pass  # evicted concurrently; the payload we read is still valid
        self.stats.hits += 1
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Atomically store ``payload`` under ``key``, then enforce the size bound."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = bytes(payload)
        raw_key = bytes.fromhex(key)
        header = _HEADER.pack(MAGIC, _digest(raw_key, payload), len(payload), raw_key)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_TMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(payload)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        self.evict()

    def evict(self) -> int:
        """Delete oldest-mtime entries until the total is <= max_bytes; return how many."""
        now = time.time()
        for tmp in self.root.glob(f"??/{_TMP_PREFIX}*"):
            try:
                if now - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                    tmp.unlink()
            except FileNotFoundError:
                pass
        sized: list[tuple[float, str, int, Path]] = []
        for entry in self._entries():
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue
            sized.append((st.st_mtime, entry.name, st.st_size, entry))
        total = sum(size for _, _, size, _ in sized)
        evicted = 0
        for _, _, size, entry in sorted(sized):
            if total <= self.max_bytes:
                break
            try:
                entry.unlink()
                evicted += 1
            except FileNotFoundError:
                pass  # another process evicted it; it no longer counts either way
            total -= size
        self.stats.evictions += evicted
        return evicted

    def total_bytes(self) -> int:
        """Total size on disk of all entries (headers included)."""
        total = 0
        for entry in self._entries():
            try:
                total += entry.stat().st_size
            except FileNotFoundError:
                pass
        return total

    def __len__(self) -> int:
        return len(self._entries())

    def clear(self) -> None:
        """Delete every entry (in-flight temp files of other processes are left alone)."""
        for entry in self._entries():
            try:
                entry.unlink()
            except FileNotFoundError:
                pass
