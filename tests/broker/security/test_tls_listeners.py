"""TLS on the wire: one broker process with PLAINTEXT, SSL, SASL_SSL and an mTLS listener
(certificates made here with ``trustme``, PEM keys). Real clients produce and consume over SSL
and SASL_SSL; a plaintext client on a TLS port, a client that does not trust the broker's CA
and a client without a certificate on the mTLS listener are refused, and the broker keeps
serving everyone else.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import ssl
import subprocess
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sluice.cipher_suites import restrict
from tests.security_fixtures import Listeners as TlsBroker
from tests.security_fixtures import listeners_broker

READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning"),
]

TIMEOUT = 15.0
SUITES = "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
"""The SUITES listener's ssl.cipher.suites (the certificates' keys are ECDSA)."""
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    yield from listeners_broker(
        tmp_path_factory.mktemp("tls-broker"),
        {
            "PLAINTEXT": "PLAINTEXT",
            "SSL": "SSL",
            "SASL_SSL": "SASL_SSL",
            "MTLS": "SSL",
            "SUITES": "SSL",
        },
        ("writer@example.com", "writer"),
        **{
            "listener.name.suites.ssl.cipher.suites": SUITES,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        },
    )


def new_topic(broker: TlsBroker) -> str:
    name = f"tls-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(TIMEOUT)
    return name


def confluent_round_trip(bootstrap: str, topic: str, config: dict[str, Any]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for i in range(3):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **config,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    return got


@pytest.mark.parametrize(
    ("listener", "extra"),
    [
        ("SSL", {"security.protocol": "SSL"}),
        (
            "SASL_SSL",
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
            },
        ),
        ("MTLS", {"security.protocol": "SSL"}),
        ("SUITES", {"security.protocol": "SSL"}),
    ],
)
def test_confluent_kafka_over_tls(broker: TlsBroker, listener: str, extra: dict[str, str]) -> None:
    topic = new_topic(broker)
    config = {"ssl.ca.location": str(broker.ca_pem), **extra}
    if listener == "MTLS":
        config |= {
            "ssl.certificate.location": str(broker.client_pem),
            "ssl.key.location": str(broker.client_pem),
        }
    got = confluent_round_trip(broker.address(listener), topic, config)
    assert got == [b"v0", b"v1", b"v2"]
    metadata = AdminClient({"bootstrap.servers": broker.address(listener), **config}).list_topics(
        timeout=TIMEOUT
    )
    assert [b.port for b in metadata.brokers.values()] == [broker.ports[listener]]


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_kafka_python_over_tls(broker: TlsBroker, listener: str) -> None:
    topic = new_topic(broker)
    config: dict[str, Any] = {"security_protocol": listener, "ssl_cafile": str(broker.ca_pem)}
    if listener == "SASL_SSL":
        config |= {
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice",
            "sasl_plain_password": "alice-secret",
        }
    producer = KafkaProducer(bootstrap_servers=broker.address(listener), **config)
    for i in range(3):
        producer.send(topic, f"k{i}".encode())
    producer.flush(TIMEOUT)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.address(listener),
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(TIMEOUT * 1000),
        **config,
    )
    got = []
    for record in consumer:
        got.append(record.value)
        if len(got) == 3:
            break
    consumer.close()
    # kafka-python's closed clients can leave an SSLSocket for the garbage collector, whose
    # ResourceWarning then fails whichever test runs when it is collected (seen once in CI,
    # in a replication test): collected here, its warning ignored — the leak is the client's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    assert got == [b"k0", b"k1", b"k2"]


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_aiokafka_over_tls(broker: TlsBroker, listener: str) -> None:
    topic = new_topic(broker)
    config: dict[str, Any] = {"security_protocol": listener}
    if listener == "SASL_SSL":
        config |= {
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice",
            "sasl_plain_password": "alice-secret",
        }

    async def run() -> list[bytes]:
        context = ssl.create_default_context(cafile=str(broker.ca_pem))
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address(listener), ssl_context=context, **config
        )
        await asyncio.wait_for(producer.start(), TIMEOUT)
        try:
            for i in range(3):
                await asyncio.wait_for(producer.send_and_wait(topic, f"a{i}".encode()), TIMEOUT)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.address(listener),
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            ssl_context=context,
            **config,
        )
        await asyncio.wait_for(consumer.start(), TIMEOUT)
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + TIMEOUT
            while len(got) < 3 and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in records)
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [b"a0", b"a1", b"a2"]


def test_kcat_over_ssl(broker: TlsBroker, tmp_path: Path) -> None:
    topic = new_topic(broker)
    tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={broker.ca_pem}"]
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\n")
    produce = ["kcat", "-P", "-b", broker.address("SSL"), "-t", topic, "-l", str(source), *tls]
    consume = ["kcat", "-C", "-b", broker.address("SSL"), "-t", topic, "-e", "-o", "beginning"]
    done = subprocess.run(produce, check=False, timeout=TIMEOUT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = subprocess.run(
        [*consume, *tls], check=False, timeout=TIMEOUT, capture_output=True, text=True
    )
    assert out.stdout.split() == ["one", "two"], out.stderr


def refused(bootstrap: str, config: dict[str, Any]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **config})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)


def still_serving(broker: TlsBroker) -> None:
    metadata = AdminClient(
        {
            "bootstrap.servers": broker.address("SSL"),
            "security.protocol": "SSL",
            "ssl.ca.location": str(broker.ca_pem),
        }
    ).list_topics(timeout=TIMEOUT)
    assert [b.port for b in metadata.brokers.values()] == [broker.ports["SSL"]]


def test_a_plaintext_client_on_a_tls_port_is_refused(broker: TlsBroker) -> None:
    refused(broker.address("SSL"), {})
    with socket.create_connection(("127.0.0.1", broker.ports["SSL"]), timeout=TIMEOUT) as sock:
        sock.sendall(b"\x00\x00\x00\x0c" + b"\x00\x03\x00\x09\x00\x00\x00\x01\xff\xff\x00\x00")
        sock.settimeout(TIMEOUT)
        try:
            answer = sock.recv(100)
        except ConnectionResetError:
            answer = b""
        assert not answer.startswith(b"\x00\x00"), "a Kafka answer in clear on a TLS port"
    still_serving(broker)


def test_a_client_that_does_not_trust_the_broker_is_refused(broker: TlsBroker) -> None:
    refused(broker.address("SSL"), {"security.protocol": "SSL"})  # the system CAs only
    still_serving(broker)


def test_mtls_refuses_a_client_without_a_certificate(broker: TlsBroker) -> None:
    refused(
        broker.address("MTLS"), {"security.protocol": "SSL", "ssl.ca.location": str(broker.ca_pem)}
    )
    still_serving(broker)


def _negotiated(broker: TlsBroker, listener: str, suites: list[str] | None = None) -> str:
    context = ssl.create_default_context(cafile=str(broker.ca_pem))
    if suites is not None:
        restrict(context, suites, [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
    with (
        socket.create_connection(("127.0.0.1", broker.ports[listener]), timeout=TIMEOUT) as sock,
        context.wrap_socket(sock, server_hostname="127.0.0.1") as tls,
    ):
        suite = tls.cipher()
        assert suite is not None
        return suite[0]


def test_cipher_suites_of_a_listener_are_the_only_ones_it_negotiates(broker: TlsBroker) -> None:
    """``listener.name.suites.ssl.cipher.suites``: that listener agrees on its suites only (a
    client preferring AES-256 gets AES-128; one offering AES-256 alone is refused), the other
    TLS listeners keep the defaults."""
    assert _negotiated(broker, "SSL") == "TLS_AES_256_GCM_SHA384"
    assert _negotiated(broker, "SUITES") == "TLS_AES_128_GCM_SHA256"
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _negotiated(broker, "SUITES", ["TLS_AES_256_GCM_SHA384"])
    tls12 = ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]
    assert _negotiated(broker, "SUITES", tls12) == "ECDHE-ECDSA-AES128-GCM-SHA256"
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _negotiated(broker, "SUITES", ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"])
    still_serving(broker)
