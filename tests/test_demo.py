"""The README's main job (``bash scripts/demo.sh`` runs ``middleend.api.demo``) on a small
image: both the cpu and the gpu parts agree with numpy and the illegal schedule is refused."""

from __future__ import annotations

import pytest
from conftest import opencl_cannot_build

from middleend.api import demo


def test_the_demo_runs_and_agrees_with_numpy(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    assert demo.main(["--rows", "40", "--cols", "70", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "equal to numpy: True" in out
    assert "== an illegal schedule, refused ==" in out and "broken by: by.after" in out
    gpu = out.split("== the gpu target: Figure 3-(b) ==")[1]
    assert "barrier barrier_by_j0" in gpu and "host_to_device inp_to_device" in gpu
    problem = opencl_cannot_build()
    if problem:  # a host whose OpenCL compiler builds nothing: one line says why
        assert gpu.rstrip().endswith(problem) and "\nskipped: target 'gpu'" in gpu
    else:
        assert gpu.rstrip().endswith("equal to numpy: True")


def test_the_first_screen_is_the_story_and_the_c_is_behind_a_flag(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The schedule, the layers, the speed-up and the refused schedule, in that order and
    in few lines; the generated C only with --show-c."""
    assert demo.main(["--rows", "40", "--cols", "70", "--no-gpu"]) == 0
    out = capsys.readouterr().out
    marks = ["by.tile(", "== Layer I ", "== Layer IV ", "speed-up", "equal to numpy: True",
             "== an illegal schedule, refused =="]
    assert [out.index(m) for m in marks] == sorted(out.index(m) for m in marks)
    assert "#include" not in out and len(out.splitlines()) < 60
    assert demo.main(["--rows", "40", "--cols", "70", "--no-gpu", "--show-c"]) == 0
    shown = capsys.readouterr().out
    assert "#include <stdint.h>" in shown and "int me_blur(" in shown
