"""A listener's certificate replaced on a running broker (Kafka's dynamic keystore update):
AlterConfigs of ``listener.name.ssl.ssl.keystore.location`` on the broker's own resource, through
confluent-kafka's AdminClient. New connections get the new certificate, a producer connected
before goes on, a keystore that does not load is refused with nothing changed, the cluster
default level is refused, a file renewed in place is picked up by setting the same path again,
and the broker restarted serves what was set."""

from __future__ import annotations

import socket
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from tests.broker.test_dynamic_broker_configs import RefusedError
from tests.broker.test_dynamic_broker_configs import alter as raw_alter
from tests.security_fixtures import Listeners, listeners_broker

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 15.0
KEY = "listener.name.ssl.ssl.keystore.location"


def served(broker: Listeners, ca_pem: Path) -> bytes:
    """The certificate a new TLS connection to the SSL listener gets, checked against
    ``ca_pem`` (DER)."""
    context = ssl.create_default_context(cafile=str(ca_pem))
    with (
        socket.create_connection(("127.0.0.1", broker.ports["SSL"]), timeout=TIMEOUT) as sock,
        context.wrap_socket(sock, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der


def der_of(pem: Path) -> bytes:
    text = pem.read_text()
    chain = text[text.index("-----BEGIN CERTIFICATE-----") :]
    first = chain[: chain.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    return ssl.PEM_cert_to_DER_cert(first)


def issue(folder: Path, name: str) -> tuple[Path, Path]:
    """A new CA's ``<name>.pem`` (key and chain for 127.0.0.1) and ``<name>-ca.pem``."""
    ca = trustme.CA()
    pem, ca_pem = folder / f"{name}.pem", folder / f"{name}-ca.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(pem)
    ca.cert_pem.write_to_path(ca_pem)
    return pem, ca_pem


def alter(admin: AdminClient, resource_name: str, value: str) -> None:
    resource = ConfigResource(
        ResourceType.BROKER,
        resource_name,
        incremental_configs=[ConfigEntry(KEY, value, incremental_operation=AlterConfigOpType.SET)],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(TIMEOUT)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def broker(root: Path) -> Iterator[Listeners]:
    yield from listeners_broker(
        root, {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, ("c@example.com", "c")
    )


def test_a_listeners_certificate_is_replaced_without_a_restart(
    broker: Listeners, root: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
    node = str(next(iter(admin.list_topics(timeout=TIMEOUT).brokers)))
    topic = f"rotate-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT)
    first = served(broker, broker.ca_pem)
    producer = Producer(
        {
            "bootstrap.servers": broker.address("SSL"),
            "security.protocol": "SSL",
            "ssl.ca.location": str(broker.ca_pem),
        }
    )
    producer.produce(topic, b"before")
    assert producer.flush(TIMEOUT) == 0

    renewed, renewed_ca = issue(root, "renewed")
    alter(admin, node, str(renewed))
    assert served(broker, renewed_ca) == der_of(renewed) != first
    with pytest.raises(ssl.SSLCertVerificationError):  # the old CA does not sign it
        served(broker, broker.ca_pem)
    producer.produce(topic, b"after")  # its connection was made before: it keeps its session
    assert producer.flush(TIMEOUT) == 0
    described = admin.describe_configs([ConfigResource(ResourceType.BROKER, node)])
    (entries,) = (future.result(TIMEOUT) for future in described.values())
    assert entries[KEY].value == str(renewed)
    assert entries[KEY].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value

    # a keystore that does not load: refused, naming it; the listener keeps its certificate
    with pytest.raises(KafkaException, match=r"cannot load .*missing\.pem"):
        alter(admin, node, str(root / "missing.pem"))
    with pytest.raises(RefusedError, match="broker id must be specified"):  # the default level
        raw_alter(broker.address("PLAINTEXT"), "", (KEY, str(renewed), 0))
    assert served(broker, renewed_ca) == der_of(renewed)

    # renewed in place: the same path set again loads the file that changed
    again, again_ca = issue(root, "again")
    renewed.write_bytes(again.read_bytes())
    alter(admin, node, str(renewed))
    assert served(broker, again_ca) == der_of(again)


def test_a_restarted_broker_serves_the_keystore_set_while_it_ran(root: Path) -> None:
    renewed, renewed_ca = issue(root, "renewed")
    first = listeners_broker(root, {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, ("c@x.org", "c"))
    broker = next(first)
    try:
        admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
        node = str(next(iter(admin.list_topics(timeout=TIMEOUT).brokers)))
        alter(admin, node, str(renewed))
    finally:
        first.close()  # stops the broker
    second = listeners_broker(root, {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, ("c@x.org", "c"))
    broker = next(second)
    try:
        assert served(broker, renewed_ca) == der_of(renewed)
    finally:
        second.close()
