"""Tests of the on-disk, content-addressed artifact cache (middleend.service.cache)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from middleend.service.cache import MAGIC, ArtifactCache, CacheStats, validate_key

HEADER = len(MAGIC) + 32 + 8 + 32  # magic, digest, length, key


def key(n: int) -> str:
    return ArtifactCache.key_for("test-entry", str(n))


def entry_path(root: Path, k: str) -> Path:
    return root / k[:2] / f"{k}.entry"


def leftover_tmp_files(root: Path) -> list[Path]:
    return list(root.glob("*/.tmp-*"))


def test_round_trip_and_layout(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    k = key(1)
    payload = b"\x00\x01serialized response\xff" * 10
    cache.put(k, payload)
    assert cache.get(k) == payload
    path = entry_path(tmp_path, k)
    raw = path.read_bytes()
    assert raw[:8] == MAGIC
    assert raw[48:80] == bytes.fromhex(k)
    assert int.from_bytes(raw[40:48], "little") == len(payload)
    assert raw[HEADER:] == payload
    assert len(cache) == 1
    assert cache.total_bytes() == HEADER + len(payload)
    assert cache.stats == CacheStats(hits=1, misses=0, corrupt=0, evictions=0)
    assert leftover_tmp_files(tmp_path) == []


def test_empty_payload_round_trips(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    cache.put(key(1), b"")
    assert cache.get(key(1)) == b""


def test_miss_returns_none(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path / "not-created-yet")
    assert cache.get(key(7)) is None
    assert cache.stats == CacheStats(hits=0, misses=1)
    assert len(cache) == 0
    assert cache.total_bytes() == 0


def test_overwrite_replaces_payload(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    cache.put(key(1), b"first")
    cache.put(key(1), b"second")
    assert cache.get(key(1)) == b"second"
    assert len(cache) == 1


def test_persists_across_instances(tmp_path: Path) -> None:
    ArtifactCache(tmp_path).put(key(1), b"survives a restart")
    restarted = ArtifactCache(tmp_path)
    assert restarted.get(key(1)) == b"survives a restart"
    assert restarted.stats.hits == 1


def _flip_payload_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[HEADER + 3] ^= 0x40
    path.write_bytes(bytes(raw))


def _truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[:-5])


def _truncate_into_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:20])


def _wrong_magic(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(b"MECACHE0" + raw[8:])


def _bad_length(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[40:48] = (len(raw) - HEADER + 1).to_bytes(8, "little")
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    "damage", [_flip_payload_byte, _truncate, _truncate_into_header, _wrong_magic, _bad_length]
)
def test_corrupt_entry_is_removed_and_rebuilt(tmp_path: Path, damage) -> None:
    cache = ArtifactCache(tmp_path)
    k = key(1)
    payload = b"a payload long enough to be damaged" * 3
    cache.put(k, payload)
    path = entry_path(tmp_path, k)
    damage(path)
    assert cache.get(k) is None
    assert not path.exists()
    assert cache.stats.corrupt == 1
    assert cache.stats.misses == 1
    assert cache.stats.hits == 0
    cache.put(k, payload)
    assert cache.get(k) == payload
    assert cache.stats.hits == 1
    assert cache.stats.corrupt == 1


def test_lru_eviction_keeps_recently_used(tmp_path: Path) -> None:
    payload_size = 100
    entry_size = HEADER + payload_size
    writer = ArtifactCache(tmp_path, max_bytes=100 * entry_size)
    keys = [key(i) for i in range(5)]
    base = time.time() - 10_000
    for i, k in enumerate(keys):
        writer.put(k, bytes([i]) * payload_size)
        os.utime(entry_path(tmp_path, k), (base + i, base + i))
    assert len(writer) == 5
    assert writer.stats.evictions == 0

    cache = ArtifactCache(tmp_path, max_bytes=3 * entry_size + entry_size // 2)
    assert cache.get(keys[1]) == bytes([1]) * payload_size  # touch an old entry
    assert entry_path(tmp_path, keys[1]).stat().st_mtime > base + 100
    assert cache.evict() == 2
    assert cache.stats.evictions == 2
    survivors = {k for k in keys if entry_path(tmp_path, k).exists()}
    assert survivors == {keys[1], keys[3], keys[4]}
    assert cache.total_bytes() == 3 * entry_size
    assert cache.get(keys[0]) is None
    assert cache.get(keys[2]) is None
    assert cache.evict() == 0


def test_put_enforces_bound_and_keeps_new_entry(tmp_path: Path) -> None:
    entry_size = HEADER + 50
    cache = ArtifactCache(tmp_path, max_bytes=3 * entry_size)
    keys = [key(i) for i in range(5)]
    base = time.time() - 10_000
    for i, k in enumerate(keys):
        cache.put(k, bytes([i]) * 50)
        os.utime(entry_path(tmp_path, k), (base + i, base + i))
        assert cache.total_bytes() <= 3 * entry_size
    assert cache.stats.evictions == 2
    assert [cache.get(k) is not None for k in keys] == [False, False, True, True, True]


def test_oversized_payload_is_not_retained(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path, max_bytes=10)
    cache.put(key(1), b"x" * 100)
    assert len(cache) == 0
    assert cache.get(key(1)) is None
    assert cache.stats.evictions == 1


def test_evict_removes_only_stale_temp_files(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    cache.put(key(1), b"payload")
    directory = entry_path(tmp_path, key(1)).parent
    stale, fresh = directory / ".tmp-stale", directory / ".tmp-fresh"
    stale.write_bytes(b"partial")
    fresh.write_bytes(b"in flight")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    cache.evict()
    assert not stale.exists()
    assert fresh.exists()
    assert cache.get(key(1)) == b"payload"


def test_failed_put_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ArtifactCache(tmp_path)

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        cache.put(key(1), b"payload")
    monkeypatch.undo()
    assert leftover_tmp_files(tmp_path) == []
    assert not entry_path(tmp_path, key(1)).exists()
    assert cache.get(key(1)) is None


@pytest.mark.parametrize(
    "bad",
    ["../etc", "../" + "a" * 61, "A" * 64, "a" * 63, "a" * 65, "g" * 64, "a" * 64 + "\n", ""],
)
def test_invalid_keys_rejected(tmp_path: Path, bad: str) -> None:
    cache = ArtifactCache(tmp_path)
    with pytest.raises(ValueError):
        validate_key(bad)
    with pytest.raises(ValueError):
        cache.get(bad)
    with pytest.raises(ValueError):
        cache.put(bad, b"payload")
    assert list(tmp_path.iterdir()) == []


def test_valid_key_accepted() -> None:
    validate_key("0123456789abcdef" * 4)
    ArtifactCache.validate_key("f" * 64)


def test_key_for_is_length_prefixed() -> None:
    k = ArtifactCache.key_for("ab", "c")
    assert k != ArtifactCache.key_for("a", "bc")
    assert k != ArtifactCache.key_for("abc")
    assert k == ArtifactCache.key_for(b"ab", b"c")
    assert ArtifactCache.key_for() != ArtifactCache.key_for("")
    assert len(k) == 64
    validate_key(k)


def test_concurrent_puts_of_same_key(tmp_path: Path) -> None:
    k = key(42)
    payload = bytes(range(256)) * 64
    n_threads = 8
    barrier = threading.Barrier(n_threads)
    errors: list[BaseException] = []

    def worker() -> None:
        cache = ArtifactCache(tmp_path)  # one instance per "process"
        try:
            barrier.wait()
            for _ in range(20):
                cache.put(k, payload)
                got = cache.get(k)
                assert got == payload
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    cache = ArtifactCache(tmp_path)
    assert cache.get(k) == payload
    assert len(cache) == 1
    assert leftover_tmp_files(tmp_path) == []
    assert cache.stats.corrupt == 0


def test_clear(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    for i in range(3):
        cache.put(key(i), b"x" * i)
    assert len(cache) == 3
    cache.clear()
    assert len(cache) == 0
    assert cache.total_bytes() == 0
    assert cache.get(key(0)) is None
