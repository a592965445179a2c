"""The README's main job (``bash scripts/demo.sh`` runs ``middleend.api.demo``) on a small
image: both the cpu and the gpu parts agree with numpy and the illegal schedule is refused."""

from __future__ import annotations

import pytest

from middleend.api import demo


def test_the_demo_runs_and_agrees_with_numpy(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyopencl", reason="the gpu extra (pyopencl, PoCL) is not installed")
    assert demo.main(["--rows", "40", "--cols", "70", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "equal to numpy: True" in out
    assert "== an illegal schedule, refused ==" in out and "broken by: by.after" in out
    gpu = out.split("== the gpu target: Figure 3-(b) ==")[1]
    assert "barrier barrier_by_j0" in gpu and "host_to_device inp_to_device" in gpu
    assert gpu.rstrip().endswith("equal to numpy: True")
