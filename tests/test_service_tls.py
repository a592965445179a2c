"""TLS and token together: a server with a certificate and a token, reached by a client
that trusts the certificate (in-process server; the subprocess server is in
test_service.py)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import middleend as me
from middleend.api import examples as ex
from middleend.service.core import ServiceConfig
from middleend.service.diagnostics import ServiceError
from middleend.service.server import Server, ServerConfig


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, bytes]]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    cert, key = (d / "cert.pem").read_bytes(), (d / "key.pem").read_bytes()
    server = Server(ServerConfig(port=0, token="s3cret", tls_cert=cert, tls_key=key),
                    ServiceConfig(cache_dir=d / "cache")).start()
    try:
        yield server.port, cert
    finally:
        server.stop()


def test_tls_with_token_compiles_and_runs(tls_server: tuple[int, bytes],
                                          rng: np.random.Generator) -> None:
    port, cert = tls_server
    with me.connect(f"localhost:{port}", token="s3cret", tls_ca=cert) as client:
        assert client.health() == "SERVING"
        b = ex.blur()
        k = b.fn.compile(service=client)
        x = rng.random((23, 41, 3), dtype=np.float32)
        bx = (x[:, :-2] + x[:, 1:-1] + x[:, 2:]) / 3
        want = (bx[:-2] + bx[1:-1] + bx[2:]) / 3
        np.testing.assert_allclose(k(inp=x)["by"], want, rtol=1e-5, atol=1e-6)


def test_tls_server_refuses_wrong_token_and_plaintext(tls_server: tuple[int, bytes]) -> None:
    port, cert = tls_server
    req = me.wire.encode_request(ex.blur().fn)
    with me.connect(f"localhost:{port}", token="wrong", tls_ca=cert) as client:
        with pytest.raises(ServiceError) as ei:
            client.check(req)
        assert ei.value.code == "UNAUTHENTICATED"
    with me.connect(f"localhost:{port}", token="s3cret", timeout=5) as plain:
        with pytest.raises(ServiceError) as ei:
            plain.check(req)
        assert ei.value.code == "UNAVAILABLE"


def test_non_loopback_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="token"):
        Server(ServerConfig(host="0.0.0.0", port=0), ServiceConfig(cache_dir=tmp_path))
