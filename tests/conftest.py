"""Generic fixtures shared by the test files (nothing specific to one example here)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import grpc
import numpy as np
import pytest
from service_util import MAX_MESSAGE_BYTES, ServerProcess, start_server

from middleend.ir.loopast import Alloc, Block, For, If, Node, Stmt
from middleend.service.client import RemoteClient, connect


@functools.cache
def opencl_cannot_build() -> str:
    """Why this host's OpenCL device cannot build any kernel ('' if it can, or if there is
    no device at all: the gpu files skip then on importorskip), probed once a session."""
    from backends.gpu.target import CANNOT_BUILD, GpuTarget

    problem = GpuTarget()._opencl_problem()
    return problem if CANNOT_BUILD in problem else ""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that fails only because the host's OpenCL compiler cannot build any kernel
    (PoCL 3.0's LLVM on a CPU it does not know, as AMD's Zen 5) is skipped with that one
    line: its error names the probe's finding (TargetUnavailable in-process, the same
    text from the service), so a kernel this compiler refuses on a host it knows, or any
    other failure, still fails. The CUDA builds and the checks that need no device run."""
    try:
        return (yield)
    except Exception as e:
        problem = opencl_cannot_build()
        if problem and problem in str(e):
            pytest.skip(f"OpenCL kernels cannot run on this host: {problem}")
        raise


@pytest.fixture(autouse=True)
def _middleend_cache(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the tests' builds out of the user's cache (shared by the session for speed)."""
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _wire_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every program a test compiles is also checked for a lossless trip through the wire
    format: ``f.compile()`` goes Function -> Request -> Function' -> C in the embedded
    middle-end; here the same Function is lowered directly and its C must be identical,
    and re-encoding the decoded Function must give the same message."""
    from backends.cpu import generate_c
    from middleend.api.function import Function
    from middleend.driver.lowering import lower
    from middleend.wire import decode_request, encode_request

    compile_ = Function.compile

    def checked(self: Function, target: str = "cpu", outputs: object = None,
                check_legality: bool = True, service: object = None,
                **options: object) -> object:
        kernel = compile_(self, target, outputs, check_legality, service, **options)
        # the compile checked legality: lowering again without it (ISL's dependence
        # analysis, a quarter of a lowering) gives the same program, as cheaper
        saved = list(self.commands.items)
        if options.get("schedule") == "auto":  # the service's choice, made here too
            chosen = self.auto_schedule(target, outputs, options.get("estimates"),
                                        options.get("budget"), apply=False,
                                        **({"ranks": options["ranks"]} if "ranks" in options
                                           else {}))
            self.commands.items = list(chosen.commands)
        try:
            low = lower(self, outputs=outputs, check_legality=False)  # type: ignore
        finally:
            self.commands.items = saved
        if target == "cpu":
            assert kernel.source == generate_c(low.program), f"{self.name}: wire changed the C"
        req = encode_request(self, target, outputs, check_legality, **options)  # type: ignore
        again = encode_request(decode_request(req)[0], target, outputs,  # type: ignore
                               check_legality, **options)
        assert again.SerializeToString(deterministic=True) == \
            req.SerializeToString(deterministic=True), f"{self.name}: wire round trip differs"
        kernel._lowered = low
        return kernel

    monkeypatch.setattr(Function, "compile", checked)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, so that failures reproduce."""
    return np.random.default_rng(20240611)


def _assert_close_f32(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == np.float32, actual.dtype
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.fixture
def assert_close_f32() -> Callable[[np.ndarray, np.ndarray], None]:
    """float32 comparison (dtype, shape, then rtol 1e-5 / atol 1e-6)."""
    return _assert_close_f32


def _walk(node: Node, path: tuple[str, ...], out: dict[str, set[tuple[str, ...]]]) -> None:
    if isinstance(node, For):
        label = node.name if node.tag is None else f"{node.name}[{node.tag}]"
        _walk(node.body, (*path, label), out)
    elif isinstance(node, Block):
        for child in node.body:
            _walk(child, path, out)
    elif isinstance(node, If):
        _walk(node.then, path, out)
        if node.orelse is not None:
            _walk(node.orelse, path, out)
    elif isinstance(node, Alloc):
        _walk(node.body, (*path, f"alloc({node.buffer})"), out)
    elif isinstance(node, Stmt):
        out.setdefault(node.comp, set()).add(path)


def _loop_nest(kernel: object) -> dict[str, set[tuple[str, ...]]]:
    out: dict[str, set[tuple[str, ...]]] = {}
    _walk(kernel.program.body, (), out)  # type: ignore[attr-defined]
    return out


@pytest.fixture
def loop_nest() -> Callable[[object], dict[str, set[tuple[str, ...]]]]:
    """``loop_nest(kernel)`` -> {computation: {enclosing loops, outermost first}}: each loop
    is its user-visible name, with ``[tag]`` appended when tagged (``"i0[parallel]"``), and
    ``"alloc(buf)"`` marks a buffer allocated at that point."""
    return _loop_nest


def _outer(node: Node, out: list[str]) -> None:
    if isinstance(node, For):
        out.append(node.name)
    elif isinstance(node, Block):
        for child in node.body:
            _outer(child, out)
    elif isinstance(node, If):
        _outer(node.then, out)
        if node.orelse is not None:
            _outer(node.orelse, out)
    elif isinstance(node, Alloc):
        _outer(node.body, out)


def _outer_loops(kernel: object) -> list[str]:
    out: list[str] = []
    _outer(kernel.program.body, out)  # type: ignore[attr-defined]
    return out


@pytest.fixture
def outer_loops() -> Callable[[object], list[str]]:
    """``outer_loops(kernel)`` -> names of the outermost loops, in program order (fused
    computations share one)."""
    return _outer_loops


def _count(node: Node, out: dict[str, int]) -> None:
    if isinstance(node, Stmt):
        out[node.comp] = out.get(node.comp, 0) + 1
    elif isinstance(node, For | Alloc):
        _count(node.body, out)
    elif isinstance(node, Block):
        for child in node.body:
            _count(child, out)
    elif isinstance(node, If):
        _count(node.then, out)
        if node.orelse is not None:
            _count(node.orelse, out)


@pytest.fixture
def stmt_counts() -> Callable[[object], dict[str, int]]:
    """``stmt_counts(kernel)`` -> {computation: number of statement copies in the loop AST}
    (more than one when a loop around it was unrolled or split into pieces)."""
    def count(kernel: object) -> dict[str, int]:
        out: dict[str, int] = {}
        _count(kernel.program.body, out)  # type: ignore[attr-defined]
        return out
    return count


# ---------------------------------------------------------------------------- the service


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``middleend serve`` on loopback for one test module (2 workers, its own caches, a
    1 MiB message cap, at most 64 computations)."""
    base = tmp_path_factory.mktemp("service")
    s = start_server(base / "logs", base / "artifacts", "--max-message-bytes",
                     str(MAX_MESSAGE_BYTES), "--max-computations", "64", workers=2,
                     cache_root=base / "root")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[RemoteClient]:
    c = connect(server.address, timeout=120)
    yield c
    c.close()


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    ch = grpc.insecure_channel(server.address)
    yield ch
    ch.close()
