"""Where the middle-end keeps what it builds (one root for every cache)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    """``$MIDDLEEND_CACHE_DIR`` if the variable is set, else ``~/.cache/middleend``: the
    root of every cache of the middle-end (builds per target, artifacts, loaded kernels)."""
    root = os.environ.get("MIDDLEEND_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "middleend"


def write_atomic(path: Path, text: str, prefix: str = ".tmp-", suffix: str = "") -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, renamed
    over it: a reader (another process sharing the cache) sees the old file or the new
    one, never half of one. The temporary is removed if anything fails."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
