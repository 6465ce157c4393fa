"""The REST proxy's own API on HTTPS with HTTP basic authentication (Confluent REST Proxy's
``listeners=https://``, ``authentication.method=BASIC`` with the ``KafkaRest`` realm), in front of
a schema registry that is secured too (``--schema-registry-config``): a request without valid
credentials is a 401 with Confluent's error body, an AVRO record produced through v3 registers
its schema over HTTPS. Real processes: the session's broker, a secured registry, the proxy."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cli.conftest import run_sluice
from tests.conftest import SLUICE, BrokerProcess, free_port, stop_process, wait_for_port
from tests.schema_registry.secured import (
    PASSWORD,
    USER,
    Material,
    SecuredRegistry,
    material,
    start_registry,
)

pytestmark = pytest.mark.timeout(180)

AVRO = json.dumps({"type": "record", "name": "Item", "fields": [{"name": "id", "type": "long"}]})
GOOD = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Material:
    return material(tmp_path_factory.mktemp("secured-proxy"))


@pytest.fixture(scope="module")
def registry(shared_broker: BrokerProcess, files: Material) -> Iterator[SecuredRegistry]:
    running = start_registry(shared_broker.bootstrap, files)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def proxy_url(
    shared_broker: BrokerProcess, registry: SecuredRegistry, files: Material
) -> Iterator[str]:
    port = free_port()
    command = [
        str(SLUICE), "rest-proxy", "start", "--listen", f"127.0.0.1:{port}",
        "-b", shared_broker.bootstrap, "--schema-registry", registry.url,
        "--schema-registry-config", str(files.client_properties()),
        "--ssl-keystore", str(files.server_pem), "--jaas-config", str(files.jaas),
    ]  # fmt: skip
    log = files.folder / "proxy.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"https://127.0.0.1:{port}"
    finally:
        stop_process(proc)
    assert "Traceback" not in log.read_text(errors="replace")


def call(
    files: Material, url: str, authorization: str | None, body: Any = None
) -> tuple[int, Any, Any]:
    context = ssl.create_default_context(cafile=str(files.ca_pem))
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, json.loads(answer.read()), answer.headers
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, json.loads(refused.read()), refused.headers


def test_credentials_are_required(proxy_url: str, files: Material) -> None:
    wrong = "Basic " + base64.b64encode(f"{USER}:nope".encode()).decode()
    for authorization in (None, wrong):
        status, body, headers = call(files, f"{proxy_url}/v3/clusters", authorization)
        assert (status, body) == (401, {"error_code": 401, "message": "Unauthorized"})
        assert headers["WWW-Authenticate"] == 'Basic realm="KafkaRest"'
    status, body, _ = call(files, f"{proxy_url}/v3/clusters", GOOD)
    assert status == 200 and body["data"], body


def test_avro_produce_registers_through_the_secured_registry(
    proxy_url: str, files: Material, shared_broker: BrokerProcess
) -> None:
    topic = f"items-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    cluster = call(files, f"{proxy_url}/v3/clusters", GOOD)[1]["data"][0]["cluster_id"]
    status, body, _ = call(
        files,
        f"{proxy_url}/v3/clusters/{cluster}/topics/{topic}/records",
        GOOD,
        {"value": {"type": "AVRO", "schema": AVRO, "data": {"id": 1}}},
    )
    assert status == 200, body
    assert body["value"]["subject"] == f"{topic}-value" and body["value"]["schema_version"] == 1


def test_bad_security_options_are_usage_errors(tmp_path: Path, files: Material) -> None:
    plain = tmp_path / "not.pem"
    plain.write_text("no PEM here")
    done = run_sluice("rest-proxy", "start", "--ssl-keystore", str(plain))
    assert done.code == 2 and "--ssl-keystore: " in done.err and "is not PEM" in done.err, done
    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n")
    done = run_sluice("schema-registry", "start", "--ssl-keystore", str(broken))
    assert done.code == 2 and "--ssl-keystore: cannot load" in done.err, done
    done = run_sluice("rest-proxy", "start", "--jaas-config", str(files.jaas), "--auth-realm", "X")
    assert done.code == 2 and "has no X { … }; section" in done.err, done
    done = run_sluice("schema-registry", "start", "--ssl-client-auth", "required")
    assert done.code == 2 and "--ssl-keystore: client certificates need HTTPS" in done.err, done
