"""A SASL_SSL broker for tests of what runs above it (Streams, Connect, Spark, the CLI): one
listener with TLS from a ``trustme`` CA, the authorizer on, a PLAIN super user ``admin`` and
SCRAM-SHA-512 users made through the admin client.

Use it from a module fixture::

    @pytest.fixture(scope="module")
    def broker(tmp_path_factory):
        yield from sasl_ssl_broker(tmp_path_factory.mktemp("secure"), {"app": "app-pw"})
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # no __all__
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

from tests.conftest import (
    CLIENT_TIMEOUT,
    SLUICE,
    BrokerProcess,
    free_port,
    stop_process,
    wait_for_port,
)

__all__ = [
    "SCRAM",
    "Listeners",
    "SaslSslBroker",
    "certificates",
    "listeners_broker",
    "sasl_ssl_broker",
]

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def certificates(ca: trustme.CA, folder: Path, name: str = "broker") -> tuple[Path, Path]:
    """``<name>.pem`` (key and chain for 127.0.0.1 and localhost) and ``ca.pem`` in ``folder``."""
    server_pem, ca_pem = folder / f"{name}.pem", folder / "ca.pem"
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(server_pem)
    ca.cert_pem.write_to_path(ca_pem)
    return server_pem, ca_pem


@dataclass
class SaslSslBroker:
    """The broker, the CA that signed it, its users' passwords, the super user's admin client."""

    proc: BrokerProcess
    ca: trustme.CA
    ca_pem: Path
    users: dict[str, str]
    admin_password: str
    admin: AdminClient = field(init=False)

    def __post_init__(self) -> None:
        self.admin = AdminClient(self.super_user())

    @property
    def bootstrap(self) -> str:
        return self.proc.bootstrap

    def super_user(self, **more: Any) -> dict[str, Any]:
        """librdkafka settings of the super user (PLAIN over SASL_SSL)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": self.admin_password,
            "ssl.ca.location": str(self.ca_pem),
            **more,
        }

    def kafka_settings(self, user: str, password: str | None = None) -> dict[str, str]:
        """Kafka's (Java client's) security settings of ``user`` (SCRAM-SHA-512)."""
        secret = self.users[user] if password is None else password
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="{user}" password="{secret}";',
            "ssl.truststore.location": str(self.ca_pem),
        }

    def topic(self, prefix: str, partitions: int = 1) -> str:
        """A new topic ``<prefix>-<random>``."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.admin.create_topics([NewTopic(name, partitions, 1)])[name].result(CLIENT_TIMEOUT)
        return name

    def produce_json(self, topic: str, records: list[tuple[Any, Any]]) -> None:
        """``records`` (key, value) as JSON, by the super user."""
        producer = Producer(self.super_user())
        for key, value in records:
            producer.produce(topic, json.dumps(value).encode(), json.dumps(key).encode())
        assert producer.flush(CLIENT_TIMEOUT) == 0, "the super user's records were not delivered"

    def grant(
        self,
        user: str,
        *acls: tuple[ResourceType, str, AclOperation],
        pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    ) -> None:
        """ALLOW ``user`` each (resource type, name, operation), by ``pattern``."""
        bindings = [
            AclBinding(kind, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)
            for kind, name, op in acls
        ]
        for future in self.admin.create_acls(bindings, request_timeout=CLIENT_TIMEOUT).values():
            future.result(CLIENT_TIMEOUT)


def sasl_ssl_broker(
    root: Path, users: dict[str, str], admin_password: str = "admin-pw-5b7e", **config: str
) -> Iterator[SaslSslBroker]:
    """Start the broker in ``root`` (``config``: more server.properties), make ``users``'
    SCRAM-SHA-512 credentials, yield it, stop it (its log's tail printed)."""
    ca = trustme.CA()
    server_pem, ca_pem = certificates(ca, root)
    proc = BrokerProcess(root / "data", {}, root / "broker.log")
    proc.config = {
        "listeners": f"SASL_SSL://127.0.0.1:{proc.port}",
        "ssl.keystore.location": str(server_pem),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": (
            f'{_PLAIN} required user_admin="{admin_password}";'
        ),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "group.initial.rebalance.delay.ms": "0",
        "connection.failed.authentication.delay.ms": "100",
        **config,
    }
    try:
        proc.start()
        broker = SaslSslBroker(proc, ca, ca_pem, dict(users), admin_password)
        upserts = [
            UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
            )
            for user, password in users.items()
        ]
        if upserts:
            for future in broker.admin.alter_user_scram_credentials(upserts).values():
                future.result(CLIENT_TIMEOUT)
        yield broker
    finally:
        try:
            proc.stop()
        finally:
            proc.kill()
            print(proc.log_text()[-4000:])


@dataclass(frozen=True)
class Listeners:
    """A broker's named listeners (name → port), its CA and a client certificate it trusts
    (key and chain: mTLS)."""

    ports: dict[str, int]
    ca_pem: Path
    client_pem: Path

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


def listeners_broker(
    root: Path, protocols: dict[str, str], client: tuple[str, str], **config: str
) -> Iterator[Listeners]:
    """A broker with one listener per ``protocols`` entry (name → security protocol; a listener
    named ``MTLS`` requires client certificates signed by the CA), TLS from a new ``trustme``
    CA, ``client`` (email, common name) a client certificate it issued; ``config`` more
    server.properties. Yields once every port listens; stops it after (its log's tail
    printed)."""
    ca = trustme.CA()
    server_pem, ca_pem = certificates(ca, root, "server")
    client_pem = root / "client.pem"
    email, common_name = client
    ca.issue_cert(email, common_name=common_name).private_key_and_cert_chain_pem.write_to_path(
        client_pem
    )
    ports = {name: free_port() for name in protocols}
    props = {
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in protocols.items()),
        "ssl.keystore.location": str(server_pem),
        "group.initial.rebalance.delay.ms": "0",
        "log.dirs": str(root / "data"),
        **config,
    }
    if "MTLS" in protocols:
        props["listener.name.mtls.ssl.client.auth"] = "required"
        props["listener.name.mtls.ssl.truststore.location"] = str(ca_pem)
    path = root / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    with (root / "broker.log").open("ab") as log:
        proc = subprocess.Popen(
            [str(SLUICE), "broker", "start", "--config", str(path)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for port in ports.values():
            wait_for_port(port, proc)
        yield Listeners(ports, ca_pem, client_pem)
    finally:
        stop_process(proc)
        print((root / "broker.log").read_text(errors="replace")[-4000:])
