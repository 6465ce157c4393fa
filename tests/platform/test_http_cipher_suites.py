"""``ssl.cipher.suites`` on Sluice's HTTP services (:mod:`sluice.http_security`): an HTTPS app
served by :func:`sluice.http_server.serve` negotiates only the listed suites; the Connect worker
takes ``listeners.https.ssl.cipher.suites``, the registry and the proxy ``--ssl-cipher-suites``;
mistakes name their key or option."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from fastapi import FastAPI

from sluice.cipher_suites import restrict
from sluice.connect.rest_security import rest_security
from sluice.errors import ConfigError
from sluice.http_security import TlsSettings, uvicorn_tls
from sluice.http_server import HttpServer, bind, serve
from tests.cli.conftest import run_sluice

BOTH = [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3]
SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def pem(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("https") / "server.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(path)
    return path


@pytest.fixture
def server(pem: Path) -> Iterator[HttpServer]:
    app = FastAPI()
    sock = bind("127.0.0.1", 0)
    running = serve(
        app, sock, what="test app", **uvicorn_tls(TlsSettings(pem, cipher_suites=SUITES))
    )
    try:
        yield running
    finally:
        running.stop()


def negotiated(ca: trustme.CA, running: HttpServer, suites: list[str] | None = None) -> str:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    if suites is not None:
        restrict(context, suites, BOTH)
    with (
        socket.create_connection((running.host, running.port), timeout=10) as sock,
        context.wrap_socket(sock, server_hostname="127.0.0.1") as tls,
    ):
        found = tls.cipher()
        assert found is not None
        return found[0]


def test_an_https_service_negotiates_only_its_suites(ca: trustme.CA, server: HttpServer) -> None:
    assert negotiated(ca, server) == "TLS_AES_128_GCM_SHA256"  # the client prefers AES-256
    with pytest.raises((ssl.SSLError, ConnectionError)):
        negotiated(ca, server, ["TLS_AES_256_GCM_SHA384"])
    tls12 = ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]
    assert negotiated(ca, server, tls12) == "ECDHE-ECDSA-AES128-GCM-SHA256"


def test_the_connect_worker_takes_its_rest_listeners_suites(pem: Path) -> None:
    settings = {
        "listeners": "https://127.0.0.1:8443",
        "listeners.https.ssl.keystore.location": str(pem),
        "listeners.https.ssl.cipher.suites": ",".join(SUITES),
    }
    security = rest_security(settings)
    assert security.tls is not None and security.tls.cipher_suites == SUITES
    settings["listeners.https.ssl.cipher.suites"] = "TLS_AES_128_GCM_SHA256,TLS_NOPE"
    with pytest.raises(ConfigError, match="unknown cipher suite TLS_NOPE") as caught:
        rest_security(settings)
    assert caught.value.key == "listeners.https.ssl.cipher.suites"


def test_the_services_options_name_a_bad_suite(pem: Path) -> None:
    done = run_sluice(
        "schema-registry", "start", "--ssl-keystore", str(pem), "--ssl-cipher-suites", "TLS_X"
    )
    assert done.code == 2 and "--ssl-cipher-suites: unknown cipher suite TLS_X" in done.err, done
    done = run_sluice("rest-proxy", "start", "--ssl-cipher-suites", ",".join(SUITES))
    assert done.code == 2 and "--ssl-cipher-suites: cipher suites need HTTPS" in done.err, done
