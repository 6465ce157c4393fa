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
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from sluice.dsl import App
from tests.conftest import SLUICE, free_port, stop_process, wait_for_port
from tests.connect.worker_helpers import standalone_worker, worker_log

pytestmark = pytest.mark.timeout(240)

TIMEOUT = 30.0
ADMIN_PASSWORD = "admin-secret-4d1"
USERS = {"streams-app": "streams-pw-93f", "connect-worker": "connect-pw-7a2"}
REST_USER, REST_PASSWORD = "operator", "rest-pw-51c"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass
class SecureBroker:
    """The broker's SASL_SSL address, the CA that signed it, its super user's admin client."""

    port: int
    ca: Path
    root: Path
    admin: AdminClient

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def super_user(self, **more: Any) -> dict[str, Any]:
        """librdkafka settings of the super user (PLAIN over SASL_SSL)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(self.ca),
            **more,
        }

    def kafka_settings(self, user: str) -> dict[str, str]:
        """Kafka's (Java client's) security settings of ``user``."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="{user}" password="{USERS[user]}";',
            "ssl.truststore.location": str(self.ca),
        }

    def topic(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.admin.create_topics([NewTopic(name, 1, 1)])[name].result(TIMEOUT)
        return name

    def grant(
        self, user: str, *acls: tuple[ResourceType, str, ResourcePatternType, AclOperation]
    ) -> None:
        bindings = [
            AclBinding(kind, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)
            for kind, name, pattern, op in acls
        ]
        for future in self.admin.create_acls(bindings, request_timeout=TIMEOUT).values():
            future.result(TIMEOUT)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, ca: trustme.CA) -> Iterator[SecureBroker]:
    root = tmp_path_factory.mktemp("secure-broker")
    server_pem, ca_pem = root / "broker.pem", root / "ca.pem"
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(server_pem)
    ca.cert_pem.write_to_path(ca_pem)
    port = free_port()
    props = {
        "listeners": f"SASL_SSL://127.0.0.1:{port}",
        "ssl.keystore.location": str(server_pem),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_admin="{ADMIN_PASSWORD}";'
        ),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "group.initial.rebalance.delay.ms": "0",
        "log.dirs": str(root / "data"),
    }
    path = root / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    with (root / "broker.log").open("ab") as log:
        proc = subprocess.Popen(
            [str(SLUICE), "broker", "start", "--config", str(path)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, proc, timeout=60)
        secured = SecureBroker(port, ca_pem, root, AdminClient({}))
        secured.admin = AdminClient(secured.super_user())
        upserts = [
            UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
            )
            for user, password in USERS.items()
        ]
        for future in secured.admin.alter_user_scram_credentials(upserts).values():
            future.result(TIMEOUT)
        yield secured
    finally:
        stop_process(proc)
        print((root / "broker.log").read_text(errors="replace")[-4000:])


def _produce(broker: SecureBroker, topic: str, records: list[tuple[str, str]]) -> None:
    producer = Producer(broker.super_user())
    for key, value in records:
        producer.produce(topic, json.dumps(value).encode(), json.dumps(key).encode())
    assert producer.flush(TIMEOUT) == 0, "the super user's records were not delivered"


def _read(broker: SecureBroker, topic: str, until: int) -> list[tuple[bytes, bytes]]:
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
    broker: SecureBroker, tmp_path: Path
) -> None:
    app_id = f"secure-counts-{uuid.uuid4().hex[:6]}"
    source, sink = broker.topic("clicks"), broker.topic("click-counts")
    topic, group, prefixed, literal = (
        ResourceType.TOPIC, ResourceType.GROUP, ResourcePatternType.PREFIXED,
        ResourcePatternType.LITERAL,
    )  # fmt: skip
    broker.grant(
        "streams-app",
        (topic, source, literal, AclOperation.READ),
        (topic, sink, literal, AclOperation.WRITE),
        (topic, app_id, prefixed, AclOperation.ALL),  # its internal topics
        (group, app_id, prefixed, AclOperation.READ),
        (ResourceType.BROKER, "kafka-cluster", literal, AclOperation.IDEMPOTENT_WRITE),
    )
    _produce(broker, source, [(user, "click") for user in ["ann", "bob", "ann", "cy", "ann"]])
    app = App(
        app_id,
        broker.bootstrap,
        stores="memory",
        state_dir=tmp_path,
        commit_interval_ms=200,
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
        return error.code, {key.lower(): value for key, value in error.headers.items()}


def test_a_connect_pipeline_on_sasl_ssl_with_a_secured_rest_api(
    broker: SecureBroker, ca: trustme.CA, tmp_path: Path
) -> None:
    topic = broker.topic("lines")
    literal = ResourcePatternType.LITERAL
    broker.grant(
        "connect-worker",
        (ResourceType.TOPIC, topic, literal, AclOperation.WRITE),
        (ResourceType.TOPIC, topic, literal, AclOperation.READ),
        (ResourceType.GROUP, "connect-write-lines", literal, AclOperation.READ),
        (ResourceType.BROKER, "kafka-cluster", literal, AclOperation.IDEMPOTENT_WRITE),
    )
    rest_pem = tmp_path / "rest.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(rest_pem)
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
        status, headers = _https(url, broker.ca)
        assert status == 401, f"without credentials: {status}"
        assert headers.get("www-authenticate", "").startswith("Basic"), headers
        assert _https(url, broker.ca, REST_USER, "wrong")[0] == 401
        assert _https(url, broker.ca, "nobody", REST_PASSWORD)[0] == 401
        status, names = _https(url, broker.ca, REST_USER, REST_PASSWORD)
        assert (status, sorted(names)) == (200, ["read-lines", "write-lines"])
        with pytest.raises((OSError, http.client.HTTPException)):  # plain HTTP on HTTPS
            urllib.request.urlopen(f"http://127.0.0.1:{rest_port}/connectors", timeout=10)
    finally:
        stop_process(worker)
    log = worker_log(tmp_path)
    for secret in (USERS["connect-worker"], REST_PASSWORD):
        assert secret not in log, "a password reached the worker's log"
