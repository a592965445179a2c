"""The ``middleend`` command as a user meets it: every mistake is one line on stderr and a
non-zero exit (a missing file, a malformed program, an address in use, ISL's operation
bound, a usage error), never a traceback; --version, ``python -m middleend``, help text
for every flag and no reST markup in it; ``-v`` logs the phases of a compile as it runs;
every command that lowers draws a progress bar on a terminal, and only there."""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import socket
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

import middleend as me
from middleend.api import cli
from middleend.api.examples import blur, schedule_blur
from middleend.driver.lowering import lower

ROOT = Path(__file__).resolve().parents[1]


def _run(argv: list[str]) -> int:
    """``middleend argv`` as the console script runs it: a SystemExit with a message is
    that message on stderr and status 1, as Python's own exit handling does."""
    try:
        return cli.main(argv)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 1
        return int(e.code or 0)


def _one_line_error(capsys: pytest.CaptureFixture[str], rc: int, *parts: str) -> str:
    err = capsys.readouterr().err
    assert rc != 0 and err.count("\n") == 1 and "Traceback" not in err, err
    for p in parts:
        assert p in err, err
    return err


@pytest.fixture
def blur_json(tmp_path: Path) -> Path:
    path = tmp_path / "blur.json"
    assert cli.main(["example", "blur", "-o", str(path)]) == 0
    return path


def test_missing_and_malformed_programs(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    missing = str(tmp_path / "nope.json")
    _one_line_error(capsys, _run(["compile", missing, "-o", str(tmp_path / "o")]),
                    "middleend compile:", "No such file", missing)
    _one_line_error(capsys, _run(["layers", str(tmp_path)]), "middleend layers:")
    bad = tmp_path / "bad.json"
    bad.write_text('{"function": 3}')
    _one_line_error(capsys, _run(["check", str(bad)]), "not a middleend.v1.Request")


def test_usage_mistakes_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, part in ((["compile"], "required"), (["serve", "--port", "70000"], "65535"),
                       (["serve", "--workers", "-1"], ">= 0"), (["bogus"], "invalid choice"),
                       (["serve", "--default-timeout", "0"], "positive")):
        _one_line_error(capsys, _run(argv), part, "--help")


def test_an_address_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as e:
            cli.main(["serve", "--port", str(port), "--workers", "1"])
    msg = str(e.value.code)
    assert msg.startswith(f"middleend serve: cannot listen on 127.0.0.1:{port}: ")
    assert "in use" in msg and "\n" not in msg


def test_the_isl_bound_is_reported_as_such(blur_json: Path) -> None:
    """Under a small bound ISL fails while reading a domain (as a syntax error, at times):
    the user reads that the bound was hit, not that the domain is malformed; and the
    command runs as ``python -m middleend``."""
    env = dict(os.environ, MIDDLEEND_ISL_MAX_OPS="100", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "middleend", "check", str(blur_json)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "ResourceLimitError" in r.stderr and "bound of 100 operations" in r.stderr
    assert "malformed" not in r.stderr


@pytest.mark.parametrize("cap", [2_000, 14_000, 60_500, 95_000, 420_000, 520_000])
def test_no_traceback_leaks_and_every_failure_is_the_bound(
        cap: int, capfd: pytest.CaptureFixture[str]) -> None:
    """Caps where ISL used to fail inside a callback (islpy printed its traceback and went
    on), in text the middle-end wrote (a 'syntax error'), or in a constant it could not
    print (a TypeError): each is the bound now, and nothing reaches stderr."""
    fn = schedule_blur(blur()).fn
    try:
        lower(fn, max_isl_ops=cap)
    except me.ResourceLimitError:
        pass
    assert capfd.readouterr().err == ""


def test_version_and_python_dash_m() -> None:
    r = subprocess.run([sys.executable, "-m", "middleend", "--version"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == f"middleend {me.__version__}"


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [p]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                out += _parsers(sp)
    return out


def test_help_has_text_for_every_flag_and_no_markup() -> None:
    parsers = _parsers(cli.parser())
    assert len(parsers) == 8  # the program, and its 7 commands
    for p in parsers:
        text = p.format_help()
        for mark in ("``", ":func:", ":class:", ":mod:", "`"):
            assert mark not in text, (p.prog, mark)
    serve = next(p for p in parsers if p.prog.endswith(" serve"))
    for a in serve._actions:
        assert a.help, f"serve {a.option_strings} has no help"


def test_verbose_logs_the_phases_as_they_run(blur_json: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", str(blur_json), "-v"]) == 0
    out, err = capfd.readouterr()
    assert out == "legal\n"
    lines = err.splitlines()
    order = ["phase decode", "layer I (domains, reads)", "legality", "phase lower"]
    at = [next(k for k, line in enumerate(lines) if line.startswith(f"middleend: {w}:"))
          for w in order]
    assert at == sorted(at) and all(line.endswith(" ms") for line in lines), err


def test_layers_and_check_take_the_target(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """'middleend example blur_gpu' is a GPU schedule (gpu_block/gpu_thread tags): layers
    and check lower it for --target gpu as compile does; without it the request's own
    target (cpu) refuses the tags in one line, which names the target that honours them."""
    path = tmp_path / "blur_gpu.json"
    assert cli.main(["example", "blur_gpu", "-o", str(path)]) == 0
    _one_line_error(capsys, _run(["check", str(path)]), "middleend check:", "TargetError",
                    "'gpu_block'", "honoured by: gpu")
    assert _run(["layers", str(path), "--target", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "i0(gpu_block)" in out and "in gpu shared memory" in out, out
    assert _run(["check", str(path), "--target", "gpu"]) == 0
    assert capsys.readouterr().out == "legal\n"
    _one_line_error(capsys, _run(["layers", str(path), "--target", "nosuch"]),
                    "unknown target 'nosuch'")
    _one_line_error(capsys, _run(["check", str(path), "--target", "cpu", "-O", "nosuch=1"]),
                    "target 'cpu' has no option 'nosuch'")


def _on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """``middleend argv`` with stderr on a pseudo-terminal (120 columns), stdout a pipe:
    the exit status, stdout, and everything written to the terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    p = subprocess.Popen([sys.executable, "-m", "middleend", *argv], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = p.stdout.read().decode() if p.stdout else ""
    return p.wait(timeout=120), out, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("command", ["layers", "check", "plot"])
def test_commands_that_lower_show_progress_on_a_terminal_only(
        command: str, blur_json: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """layers, check and plot draw compile's bar (program, n/1, a phase that ended) while
    stderr is a terminal; nothing with -q, nor in a pipe; -v prints phase lines instead."""
    argv = [command, blur_json.name]
    if command == "plot":
        argv += ["-o", "b.svg", "--params", "N=8,M=8"]
    want = {"layers": "Layer I", "check": "legal", "plot": "wrote b.svg"}[command]
    rc, out, tty = _on_a_terminal(argv, blur_json.parent)
    assert rc == 0 and want in out, (out, tty)
    assert "blur.json" in tty and "1/1" in tty and " ms" in tty, tty
    if command == "plot":
        assert "plot drawing (svg)" in tty or "plot points" in tty, tty
    rc, out, tty = _on_a_terminal([*argv, "-q"], blur_json.parent)
    assert rc == 0 and want in out and tty == "", tty
    rc, out, tty = _on_a_terminal([*argv, "-v"], blur_json.parent)
    lines = tty.splitlines()
    assert rc == 0 and "1/1" not in tty and lines, tty
    assert all(line.startswith("middleend: ") and line.endswith(" ms") for line in lines), tty
    assert any("loop AST" in line for line in lines), tty
    # not a terminal (pytest's capture): nothing on stderr, the result on stdout
    monkeypatch.chdir(blur_json.parent)
    assert cli.main(argv) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and want in cap.out, cap


def test_plot_verbose_logs_its_phases(blur_json: Path, tmp_path: Path,
                                      capfd: pytest.CaptureFixture[str]) -> None:
    """plot takes -v as compile does: the lowering's passes, then the plot's own two."""
    svg = tmp_path / "b.svg"
    assert cli.main(["plot", str(blur_json), "-o", str(svg), "--params", "N=8,M=8",
                     "-v"]) == 0
    out, err = capfd.readouterr()
    assert out.startswith(f"wrote {svg}"), out
    lines = err.splitlines()
    order = ["layer I (domains, reads)", "loop AST", "plot points and dependences",
             "plot drawing (svg)"]
    at = [next(k for k, line in enumerate(lines) if line.startswith(f"middleend: {w}:"))
          for w in order]
    assert at == sorted(at) and all(line.endswith(" ms") for line in lines), err
