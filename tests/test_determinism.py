"""The same program gives the same C in every process. Python salts ``str`` hashes per
process, so a pass that walks a set of names in its iteration order prints loops,
statements or buffers in an order that changes from run to run (the Halide placement
once refused a schedule or accepted it by the seed). Two processes with different hash
seeds translate and lower the papers' programs, the Halide benchmarks and apps, and must
print the same C, byte for byte (printed, not built: gcc adds nothing to this question)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from service_util import ROOT

_SCRIPT = """
import hashlib, json, sys
from backends.cpu import generate_c
from frontends.halide import apps, compile_pipeline, paper
from middleend.api import examples as ex
from middleend.driver.lowering import lower

fns = {"blur": ex.schedule_blur(ex.blur()).fn, "heat2d": ex.heat2d().fn,
       "sgemm": ex.sgemm_packed(96)}
for name, make in paper.ALL.items():
    b = make(48, 64, "expert")
    for i, (funcs, sizes) in enumerate(b.groups):
        fns[f"{name}[{i}]"] = compile_pipeline(funcs).translate(sizes, **b.inputs).fn
for name, make in apps.APPS.items():
    a = make()
    fns[name] = compile_pipeline([a.output]).translate(a.sizes, **a.by_name()).fn
out = {n: hashlib.sha256(generate_c(lower(f).program).encode()).hexdigest()
       for n, f in fns.items()}
json.dump(out, sys.stdout)
"""


def _sources(seed: str, cache: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "MIDDLEEND_CACHE_DIR": cache}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_the_same_program_prints_the_same_c_whatever_the_hash_seed(tmp_path) -> None:
    a = _sources("1", str(tmp_path / "a"))
    b = _sources("2", str(tmp_path / "b"))
    assert len(a) >= 14 and a.keys() == b.keys()
    differ = sorted(n for n in a if a[n] != b[n])
    assert not differ, f"C that depends on the hash seed: {differ}"
