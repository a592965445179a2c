"""Where Xilinx's open-source HLS headers (``ap_int.h``, ``hls_stream.h``) are: in the
installed ``hls4ml`` wheel (``hls4ml/templates/vivado/ap_types/``), found at run time and
never copied into the project."""

from __future__ import annotations

import importlib.util
from pathlib import Path

INSTALL = "pip install --no-deps hls4ml (it ships Xilinx's ap_int.h and hls_stream.h)"
_SUBDIR = ("templates", "vivado", "ap_types")


def ap_types_dir() -> Path | None:
    """The directory holding ``ap_int.h`` and ``hls_stream.h``, or None when hls4ml is not
    installed (or ships no headers)."""
    try:
        spec = importlib.util.find_spec("hls4ml")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    for root in roots:
        d = Path(root).joinpath(*_SUBDIR)
        if (d / "ap_int.h").is_file() and (d / "hls_stream.h").is_file():
            return d
    return None
