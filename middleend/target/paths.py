"""Where the middle-end keeps what it builds (one root for every cache)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$MIDDLEEND_CACHE_DIR`` if the variable is set, else ``~/.cache/middleend``: the
    root of every cache of the middle-end (builds per target, artifacts, loaded kernels)."""
    root = os.environ.get("MIDDLEEND_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "middleend"
