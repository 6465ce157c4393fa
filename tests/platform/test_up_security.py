"""`sluice up` with a ``security:`` section: the file's checks (secrets from the environment or
files, each mistake at its line and key, no secret in a message), and a real deployment — the
broker on SASL_SSL with the authorizer, SCRAM users and least-privilege ACLs made at start, a
distributed Connect worker and a Streams app logging in as their own users — whose output
and files never show a password."""

from __future__ import annotations

import json
import os
import ssl
import stat
import subprocess
import textwrap
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from sluice.connect.deploy import DeploymentError
from sluice.up import load
from tests.conftest import free_port
from tests.platform.fixtures import SLUICE, Running

ADMIN_PW, CONNECT_PW, APP_PW = "adm-9f3e1", "conn-77ab2", "app-5c0d4"

APP = """\
import os
from sluice.dsl import App

app = App("up-counts", os.environ["SLUICE_BOOTSTRAP"], stores="memory", commit_interval_ms=200)
app.stream("clicks").group_by_key().count(name="per-user").to_stream().to("click-counts")
app.run()
"""


def _certificates(folder: Path) -> None:
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        folder / "broker.pem"
    )
    ca.cert_pem.write_to_path(folder / "ca.pem")


def problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "sluice.yaml").write_text(textwrap.dedent(text))
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path / "sluice.yaml")
    return [f"{p.line}: {p.key}: {p.reason}" for p in caught.value.problems]


def test_security_mistakes_are_named_at_their_line_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_PASSWORD", raising=False)
    (tmp_path / "notpem.txt").write_text("hello")
    found = problems(
        tmp_path,
        """\
        security:
          protocol: SSL
          mechanism: GSSAPI
          keystore: notpem.txt
          admin:
            name: admin
            password: ${env:NO_SUCH_PASSWORD}
          users:
            - name: etl
              password_file: missing.pass
            - name: app
          acls:
            - principal: etl
              topic: orders
              operations: [read, fly]
          connect_user: nobody
        """,
    )
    assert found == [
        "2: security.protocol: must be SASL_SSL or SASL_PLAINTEXT, not 'SSL'",
        "3: security.mechanism: must be one of SCRAM-SHA-256, SCRAM-SHA-512, not 'GSSAPI'",
        f"4: security.keystore: {tmp_path / 'notpem.txt'} is not a PEM file",
        "7: security.admin.password: the environment variable NO_SUCH_PASSWORD is not set",
        f"10: security.users[0].password_file: cannot read {tmp_path / 'missing.pass'}: "
        "No such file or directory",
        "11: security.users[1]: give one of password: (${env:VAR} for a variable) or "
        "password_file:",
        "13: security.acls[0].principal: must be TYPE:NAME (User:alice), not 'etl'",
        "15: security.acls[0].operations: unknown operation 'fly'; known: all, read, write, "
        "create, delete, alter, describe, cluster_action, describe_configs, alter_configs, "
        "idempotent_write",
        "16: security.connect_user: 'nobody' is neither the admin nor one of security.users",
    ]


def test_secrets_come_from_the_environment_and_files_and_are_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _certificates(tmp_path)
    monkeypatch.setenv("UP_ADMIN_PASSWORD", ADMIN_PW)
    (tmp_path / "connect.pass").write_text(CONNECT_PW + "\n")
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            """\
            security:
              keystore: broker.pem
              truststore: ca.pem
              admin: {name: admin, password: "${env:UP_ADMIN_PASSWORD}"}
              users:
                - {name: connect, password_file: connect.pass}
              connect_user: connect
            """
        )
    )
    deployment = load(tmp_path / "sluice.yaml")
    security = deployment.security
    assert security is not None
    assert security.password_of("admin") == ADMIN_PW
    assert security.password_of("connect") == CONNECT_PW  # the file's line break dropped
    assert ADMIN_PW not in repr(deployment) and CONNECT_PW not in repr(deployment)
    assert security.client("connect")["sasl.jaas.config"].endswith(
        f'username="connect" password="{CONNECT_PW}";'
    )


def _client(ca: Path, bootstrap: str, admin: str, **more: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "admin",
        "sasl.password": admin,
        "ssl.ca.location": str(ca),
        **more,
    }


@pytest.mark.timeout(420)
def test_sluice_up_runs_connect_and_streams_on_sasl_ssl_with_least_privilege(
    tmp_path: Path,
) -> None:
    _certificates(tmp_path)
    (tmp_path / "app.pass").write_text(APP_PW)
    (tmp_path / "input.log").write_text("".join(f"line {i}\n" for i in range(10)))
    (tmp_path / "counts.py").write_text(APP)
    port, rest = free_port(), free_port()
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            f"""\
            broker:
              listen: 127.0.0.1:{port}
            topics:
              - name: lines
              - name: clicks
              - name: click-counts
            security:
              keystore: broker.pem
              truststore: ca.pem
              admin: {{name: admin, password: "${{env:UP_ADMIN_PASSWORD}}"}}
              users:
                - {{name: connect, password: "${{env:UP_CONNECT_PASSWORD}}"}}
                - {{name: counter, password_file: app.pass}}
              acls:
                - {{principal: "User:connect", topic: connect-, pattern: prefixed,
                   operations: [all]}}
                - {{principal: "User:connect", topic: lines, operations: [read, write]}}
                - {{principal: "User:connect", group: sluice-connect, operations: [read]}}
                - {{principal: "User:connect", group: connect-, pattern: prefixed,
                   operations: [read]}}
                - {{principal: "User:connect", cluster: kafka-cluster,
                   operations: [idempotent_write]}}
                - {{principal: "User:counter", topic: clicks, operations: [read]}}
                - {{principal: "User:counter", topic: click-counts, operations: [write]}}
                - {{principal: "User:counter", topic: up-counts, pattern: prefixed,
                   operations: [all]}}
                - {{principal: "User:counter", group: up-counts, operations: [read]}}
                - {{principal: "User:counter", cluster: kafka-cluster,
                   operations: [idempotent_write]}}
              connect_user: connect
              streams_user: counter
            connect:
              rest: 127.0.0.1:{rest}
            connectors:
              - name: read-lines
                class: file-source
                config: {{files: {tmp_path / "input.log"}, topic: lines}}
              - name: write-lines
                class: file-sink
                config: {{topics: lines, file: {tmp_path / "output.txt"}}}
            streams:
              - name: counter
                app: counts.py
            """
        )
    )
    os.environ["UP_ADMIN_PASSWORD"] = ADMIN_PW
    os.environ["UP_CONNECT_PASSWORD"] = CONNECT_PW
    try:
        run = Running(tmp_path)
    finally:
        del os.environ["UP_ADMIN_PASSWORD"], os.environ["UP_CONNECT_PASSWORD"]
    bootstrap = f"127.0.0.1:{port}"
    try:
        _pipeline_and_counts(run, tmp_path, bootstrap, tmp_path / "ca.pem", ADMIN_PW)
    finally:
        run.stop()
    _never_shown(run, tmp_path / ".sluice", (ADMIN_PW, CONNECT_PW, APP_PW))


def _pipeline_and_counts(
    run: Running, tmp_path: Path, bootstrap: str, ca: Path, admin: str
) -> None:
    """The file pipeline delivered its lines and the Streams app counts clicks by user."""
    run.wait_running({"broker", "connect", "counter-0"}, timeout=180)
    output = tmp_path / "output.txt"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if output.exists() and len(output.read_text().splitlines()) == 10:
            break
        time.sleep(0.3)
    got = output.read_text() if output.exists() else "(none)"
    assert got.splitlines() == [f"line {i}" for i in range(10)], got + run.output()
    producer = Producer(_client(ca, bootstrap, admin))
    for user in ["ann", "bob", "ann"]:
        producer.produce("clicks", b'"click"', json.dumps(user).encode())
    assert producer.flush(30) == 0
    group = {"group.id": f"t-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"}
    consumer = Consumer(_client(ca, bootstrap, admin, **group))
    consumer.subscribe(["click-counts"])
    counts: dict[str, int] = {}
    deadline = time.monotonic() + 120
    while counts != {"ann": 2, "bob": 1} and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            counts[json.loads(message.key() or b"")] = json.loads(message.value() or b"")
    consumer.close()
    assert counts == {"ann": 2, "bob": 1}, f"{counts}\n{run.output()}"


def _rest_is_https_with_basic_auth(url: str, ca: Path, admin: str) -> None:
    """The worker's REST API answers HTTPS only, 401 without a login, and `sluice connect
    status` reaches it with the CA and admin's password."""
    context = ssl.create_default_context(cafile=ca)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{url}/connectors", context=context, timeout=30)
    refused.value.close()  # its TLS socket, now rather than when collected
    assert refused.value.code == 401, refused.value
    with pytest.raises(OSError):  # plain HTTP on the TLS port: the handshake fails
        urllib.request.urlopen(f"{url.replace('https', 'http')}/connectors", timeout=30)
    listed = subprocess.run(
        [SLUICE, "connect", "status", "--url", url, "--rest-ca-file", str(ca),
         "--rest-user", "admin"],
        env={**os.environ, "SLUICE_CONNECT_PASSWORD": admin},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert listed.returncode == 0 and "read-lines" in listed.stdout, listed


def _never_shown(run: Running, home: Path, secrets: tuple[str, ...]) -> None:
    """The private files are the owner's only; no secret in the output, state or logs."""
    for private in (home / "broker.properties", home / "connect-worker.properties"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    shown = run.output() + (home / "up.json").read_text()
    shown += "".join(p.read_text(errors="replace") for p in (home / "logs").glob("*"))
    for secret in secrets:
        assert secret not in shown, "a password reached sluice up's output, state or logs"


@pytest.mark.timeout(420)
def test_sluice_up_secure_generates_a_ca_users_and_acls(tmp_path: Path) -> None:
    (tmp_path / "input.log").write_text("".join(f"line {i}\n" for i in range(10)))
    (tmp_path / "counts.py").write_text(APP)
    port, rest = free_port(), free_port()
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            f"""\
            broker: {{listen: "127.0.0.1:{port}"}}
            topics: [{{name: lines}}, {{name: clicks}}, {{name: click-counts}}]
            connect: {{rest: "127.0.0.1:{rest}"}}
            connectors:
              - name: read-lines
                class: file-source
                config: {{files: {tmp_path / "input.log"}, topic: lines}}
              - name: write-lines
                class: file-sink
                config: {{topics: lines, file: {tmp_path / "output.txt"}}}
            streams:
              - {{name: counter, app: counts.py, application_id: up-counts}}
            """
        )
    )
    run = Running(tmp_path, "--secure")
    secure = tmp_path / ".sluice" / "secure"
    try:
        run.wait_running({"broker", "connect", "counter-0"}, timeout=180)
        admin = (secure / "admin.pass").read_text()
        _pipeline_and_counts(run, tmp_path, f"127.0.0.1:{port}", secure / "ca.pem", admin)
        _rest_is_https_with_basic_auth(f"https://127.0.0.1:{rest}", secure / "ca.pem", admin)
    finally:
        run.stop()
    passwords = tuple(
        (secure / f"{user}.pass").read_text() for user in ("admin", "connect", "streams")
    )
    for private in (secure / "broker.pem", *(secure / f"{u}.pass" for u in ("admin", "connect"))):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    _never_shown(run, tmp_path / ".sluice", passwords)


@pytest.mark.timeout(420)
def test_sluice_up_secure_runs_a_cluster_replicating_on_sasl_ssl(tmp_path: Path) -> None:
    """`--secure` of a two-broker cluster: clients and replication on SASL_SSL (the brokers log
    in to each other as the admin and check each other's certificate), SCRAM users kept in
    ZooKeeper; an anonymous client is refused."""
    ports = [free_port(), free_port()]
    brokers = "".join(
        f"    - {{id: {i}, listen: 127.0.0.1:{port}}}\n" for i, port in enumerate(ports, 1)
    )
    (tmp_path / "sluice.yaml").write_text(
        "broker:\n"
        "  zookeeper: embedded\n"
        f"  zookeeper_listen: 127.0.0.1:{free_port()}\n"
        f"  brokers:\n{brokers}"
        "  config: {min.insync.replicas: 2, offsets.topic.num.partitions: 2,"
        " zookeeper.session.timeout.ms: 6000}\n"
        "topics: [{name: events, partitions: 1, replication_factor: 2}]\n"
    )
    run = Running(tmp_path, "--secure")
    secure = tmp_path / ".sluice" / "secure"
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in ports)
    try:
        run.wait_running({"zookeeper", "broker-1", "broker-2"}, timeout=180)
        admin = (secure / "admin.pass").read_text()
        config = _client(secure / "ca.pem", bootstrap, admin)

        def isr() -> list[int]:
            topics = AdminClient(config).list_topics(timeout=30).topics
            return sorted(topics["events"].partitions[0].isrs) if "events" in topics else []

        deadline = time.monotonic() + 120
        while isr() != [1, 2]:  # sluice up makes the topic once the brokers are up
            assert time.monotonic() < deadline, f"no ISR [1, 2] for events:\n{run.output()}"
            time.sleep(0.5)
        producer = Producer({**config, "acks": "all"})
        failed: list[object] = []
        for n in range(50):
            producer.produce("events", str(n).encode(), on_delivery=lambda e, _m: failed.append(e))
        assert producer.flush(60) == 0, run.output()
        assert failed == [None] * 50, f"acks=all writes on the SASL_SSL ISR: {failed[:3]}"
        assert isr() == [1, 2], "replication on SASL_SSL"
        streams = AdminClient(
            {**config, "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "streams",
             "sasl.password": (secure / "streams.pass").read_text()}
        )  # fmt: skip
        # a SCRAM user (kept in ZooKeeper) logs in; without a Streams app it holds no ACL
        assert "events" not in streams.list_topics(timeout=30).topics
        anonymous = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
        with pytest.raises(KafkaException):
            anonymous.list_topics(timeout=5)
    finally:
        run.stop()
    home = tmp_path / ".sluice"
    for properties in (home / "broker-1.properties", home / "broker-2.properties"):
        assert stat.S_IMODE(properties.stat().st_mode) == 0o600, properties
    shown = run.output() + "".join(p.read_text(errors="replace") for p in home.glob("logs/*"))
    assert (secure / "admin.pass").read_text() not in shown, "the admin's password was shown"
