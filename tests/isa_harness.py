"""Build a C harness of the cpu target's vector helpers for an ISA this machine may lack
(with AddressSanitizer, so a read past a buffer of exactly the size a helper may read
fails), and run it where the machine has that ISA: the helpers' 512-bit paths are checked
on the machines that have them and at least compiled everywhere."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

ISAS = [["-msse4.2"], ["-mavx2", "-mfma"], ["-mavx512f", "-mavx512vl"]]
_FLAG = {"-msse4.2": "sse4_2", "-mavx2": "avx2", "-mavx512f": "avx512f"}


def build_and_run(source: str, isa: list[str], d: pathlib.Path) -> None:
    """``source`` (a program printing the count of wrong values) built for ``isa`` in
    ``d``; run, and its count asserted 0, where this machine has the ISA (else skipped)."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    (d / "t.c").write_text(source)
    exe = d / "t"
    subprocess.run(["gcc", "-O2", "-std=gnu11", *isa, "-fsanitize=address", str(d / "t.c"),
                    "-o", str(exe)], check=True, capture_output=True)
    info = pathlib.Path("/proc/cpuinfo")
    flags = info.read_text() if info.exists() else ""
    need = _FLAG[isa[0]]
    if f" {need}" not in flags:
        pytest.skip(f"built for {isa[0]}; this machine has no {need} to run it")
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "0", run.stdout + run.stderr
