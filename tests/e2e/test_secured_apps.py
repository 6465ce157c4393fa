"""A Streams app and a Connect pipeline on a secured broker: one ``sluice broker start`` process
with a single SASL_SSL listener (TLS from a ``trustme`` CA, SCRAM-SHA-512 users made by a PLAIN
super user) and the authorizer on. Each application authenticates as its own SCRAM user, given
Kafka's client settings (``security.protocol``, ``sasl.jaas.config``,
``ssl.truststore.location`` PEM), and holds least-privilege ACLs only. The Connect worker
serves its REST API over HTTPS with HTTP basic authentication (Kafka's
``BasicAuthSecurityRestExtension``); no password reaches its log.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # no __all__
    AclOperation,
    ResourcePatternType,
    ResourceType,
)

from sluice.dsl import App
from tests.conftest import free_port, stop_process, wait_for_port
from tests.connect.worker_helpers import standalone_worker, worker_log
from tests.security_fixtures import SaslSslBroker, sasl_ssl_broker

pytestmark = pytest.mark.timeout(240)

USERS = {"streams-app": "streams-pw-93f", "connect-worker": "connect-pw-7a2"}
REST_USER, REST_PASSWORD = "operator", "rest-pw-51c"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslSslBroker]:
    yield from sasl_ssl_broker(tmp_path_factory.mktemp("secure-broker"), USERS)


def _read(broker: SaslSslBroker, topic: str, until: int) -> list[tuple[bytes, bytes]]:
    consumer = Consumer(
        broker.super_user(
            **{"group.id": f"check-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"}
        )
    )
    consumer.subscribe([topic])
    found: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + 60
    try:
        while len(found) < until and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                found.append((message.key() or b"", message.value() or b""))
    finally:
        consumer.close()
    return found


# ---- Streams ---------------------------------------------------------------------------------


def test_a_streams_app_counts_by_key_on_sasl_ssl_with_least_privilege(
    broker: SaslSslBroker, tmp_path: Path
) -> None:
    app_id = f"secure-counts-{uuid.uuid4().hex[:6]}"
    source, sink = broker.topic("clicks"), broker.topic("click-counts")
    topic, group = ResourceType.TOPIC, ResourceType.GROUP
    broker.grant(
        "streams-app",
        (topic, source, AclOperation.READ),
        (topic, sink, AclOperation.WRITE),
        (ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
    )
    broker.grant(
        "streams-app",
        (topic, app_id, AclOperation.ALL),  # its internal topics
        (group, app_id, AclOperation.READ),
        pattern=ResourcePatternType.PREFIXED,
    )
    broker.produce_json(source, [(user, "click") for user in ["ann", "bob", "ann", "cy", "ann"]])
    app = App(
        app_id,
        broker.bootstrap,
        stores="memory",
        state_dir=tmp_path,
        commit_interval_ms=200,
        statestore_cache_max_bytes=0,  # all five updates are read below
        **broker.kafka_settings("streams-app"),
    )
    assert "streams-pw" not in repr(app.config), "the password shows in the config's repr"
    app.stream(source).group_by_key().count(name="clicks-per-user").to_stream().to(sink)
    app.start()
    try:
        records = _read(broker, sink, until=5)
        latest = {json.loads(key): json.loads(value) for key, value in records}
        assert latest == {"ann": 3, "bob": 1, "cy": 1}, f"counts: {records}"
    finally:
        app.close()


# ---- Connect ---------------------------------------------------------------------------------


def _https(url: str, ca: Path, user: str | None = None, password: str = "") -> tuple[int, Any]:
    request = urllib.request.Request(url)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    context = ssl.create_default_context(cafile=str(ca))
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        with error:  # its response's socket closed now, not when collected
            return error.code, {key.lower(): value for key, value in error.headers.items()}


def test_a_connect_pipeline_on_sasl_ssl_with_a_secured_rest_api(
    broker: SaslSslBroker, tmp_path: Path
) -> None:
    topic = broker.topic("lines")
    broker.grant(
        "connect-worker",
        (ResourceType.TOPIC, topic, AclOperation.WRITE),
        (ResourceType.TOPIC, topic, AclOperation.READ),
        (ResourceType.GROUP, "connect-write-lines", AclOperation.READ),
        (ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
    )
    rest_pem = tmp_path / "rest.pem"
    broker.ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(rest_pem)
    (tmp_path / "rest-users.properties").write_text(f"{REST_USER}={REST_PASSWORD}\n")
    jaas = tmp_path / "connect-jaas.conf"
    jaas.write_text(
        "KafkaConnect {\n"
        "  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n"
        f'  file="{tmp_path / "rest-users.properties"}";\n'
        "};\n"
    )
    rest_port = free_port()
    worker_file = tmp_path / "worker.properties"
    settings = {
        **broker.kafka_settings("connect-worker"),
        "listeners": f"https://127.0.0.1:{rest_port}",
        "listeners.https.ssl.keystore.location": str(rest_pem),
        "rest.extension.classes": (
            "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
        ),
        "java.security.auth.login.config": str(jaas),
    }
    worker_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    (tmp_path / "input.log").write_text("".join(f"line {i}\n" for i in range(20)))
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        f"""\
- name: read-lines
  class: file-source
  config:
    files: {tmp_path / "input.log"}
    topic: {topic}
    poll.interval.ms: 100
- name: write-lines
  class: file-sink
  config:
    topics: {topic}
    file: {tmp_path / "output.txt"}
"""
    )
    worker = standalone_worker(
        pipeline, broker.bootstrap, tmp_path, "--worker-config", str(worker_file)
    )
    try:
        wait_for_port(rest_port, worker, timeout=60)
        output = tmp_path / "output.txt"
        expected = [f"line {i}" for i in range(20)]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if output.exists() and output.read_text().splitlines() == expected:
                break
            time.sleep(0.2)
        else:
            got = output.read_text() if output.exists() else "(none)"
            raise AssertionError(f"output: {got!r}\nworker log:\n{worker_log(tmp_path)}")

        url = f"https://127.0.0.1:{rest_port}/connectors"
        status, headers = _https(url, broker.ca_pem)
        assert status == 401, f"without credentials: {status}"
        assert headers.get("www-authenticate", "").startswith("Basic"), headers
        assert _https(url, broker.ca_pem, REST_USER, "wrong")[0] == 401
        assert _https(url, broker.ca_pem, "nobody", REST_PASSWORD)[0] == 401
        status, names = _https(url, broker.ca_pem, REST_USER, REST_PASSWORD)
        assert (status, sorted(names)) == (200, ["read-lines", "write-lines"])
        with pytest.raises((OSError, http.client.HTTPException)):  # plain HTTP on HTTPS
            urllib.request.urlopen(f"http://127.0.0.1:{rest_port}/connectors", timeout=10)
    finally:
        stop_process(worker)
    log = worker_log(tmp_path)
    for secret in (USERS["connect-worker"], REST_PASSWORD):
        assert secret not in log, "a password reached the worker's log"
