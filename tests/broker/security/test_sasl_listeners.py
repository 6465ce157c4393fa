"""SASL_PLAINTEXT on the wire: one broker process with a PLAINTEXT and a SASL_PLAINTEXT
listener; real clients (confluent-kafka, kafka-python, aiokafka, kcat) authenticate with PLAIN,
SCRAM-SHA-256/512 (users made with AdminClient.alter_user_scram_credentials on the PLAINTEXT
listener) and OAUTHBEARER (unsecured tokens), produce and consume. Refusals — wrong password,
unknown user, no authentication at all, an unsupported mechanism — are driven with raw frames
(kio), so that what the broker answers and when it closes is seen byte for byte; the broker
keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import struct
import subprocess
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.describe_cluster.v0 import request as describe_cluster_v0
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4 import request as find_coordinator_v4
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.sasl_authenticate.v2 import request as sasl_authenticate_v2
from kio.schema.sasl_handshake.v0 import request as sasl_handshake_v0
from kio.schema.sasl_handshake.v1 import request as sasl_handshake_v1
from kio.static.primitive import i8

from sluice.wire import decode_response, encode_request
from tests.conftest import SLUICE, free_port, stop_process, wait_for_port

READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider as KafkaPythonTokenProvider

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402
from aiokafka.abc import AbstractTokenProvider as AioKafkaTokenProvider  # noqa: E402

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning"),
]

TIMEOUT = 15.0
PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SCRAM_USER, SCRAM_PASSWORD = "scrammy", "scram-secret"
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required " + " ".join(
    f'user_{user}="{password}"' for user, password in PLAIN_USERS.items()
)


class SecuredBroker:
    def __init__(self, plain_port: int, sasl_port: int, proc: subprocess.Popen[bytes]) -> None:
        self.plain_port, self.sasl_port, self.proc = plain_port, sasl_port, proc
        self.plaintext = f"127.0.0.1:{plain_port}"
        self.sasl = f"127.0.0.1:{sasl_port}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    root = tmp_path_factory.mktemp("sasl-broker")
    plain_port, sasl_port = free_port(), free_port()
    props = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS + ";",
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
        wait_for_port(sasl_port, proc)
        wait_for_port(plain_port, proc)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain_port}"})
        upserts = [
            UserScramCredentialUpsertion(
                SCRAM_USER, ScramCredentialInfo(mechanism, 4096), SCRAM_PASSWORD.encode()
            )
            for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
        ]
        for future in admin.alter_user_scram_credentials(upserts).values():
            future.result(TIMEOUT)
        yield SecuredBroker(plain_port, sasl_port, proc)
    finally:
        stop_process(proc)
        print((root / "broker.log").read_text(errors="replace")[-4000:])


def new_topic(broker: SecuredBroker) -> str:
    name = f"sasl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.plaintext})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(TIMEOUT)
    return name


# ---- raw frames ------------------------------------------------------------------------------


class Raw:
    """One blocking connection speaking kio frames."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.correlation = 0

    def call(self, request: Any) -> Any:
        self.correlation += 1
        self.sock.sendall(encode_request(request, correlation_id=self.correlation, client_id="t"))
        frame = self.read_frame()
        assert frame is not None, f"connection closed instead of answering {type(request)}"
        correlation, response = decode_response(request.__api_key__, request.__version__, frame)
        assert correlation == self.correlation
        return response

    def read_frame(self) -> bytes | None:
        size = self._exactly(4)
        if size is None:
            return None
        return self._exactly(struct.unpack(">i", size)[0])

    def _exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def closed_within(self, seconds: float) -> float:
        """Seconds until the broker closed the connection (fails if it sent anything)."""
        started = time.monotonic()
        self.sock.settimeout(seconds)
        assert self.sock.recv(1) == b"", "expected the connection closed, not an answer"
        return time.monotonic() - started

    def close(self) -> None:
        self.sock.close()


def handshake(raw: Raw, mechanism: str) -> Any:
    return raw.call(sasl_handshake_v1.SaslHandshakeRequest(mechanism=mechanism))


def authenticate(raw: Raw, token: bytes) -> Any:
    return raw.call(sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=token))


def metadata() -> Any:
    return metadata_v9.MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def assert_still_serving(broker: SecuredBroker) -> None:
    raw = Raw(broker.sasl_port)
    assert handshake(raw, "PLAIN").error_code == ErrorCode.none
    assert authenticate(raw, b"\0alice\0alice-secret").error_code == ErrorCode.none
    assert raw.call(metadata()).brokers[0].port == broker.sasl_port
    raw.close()


# ---- the clients -----------------------------------------------------------------------------


def confluent_config(mechanism: str) -> dict[str, Any]:
    config: dict[str, Any] = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism}
    if mechanism == "OAUTHBEARER":
        config |= {
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=alice",
        }
    elif mechanism == "PLAIN":
        config |= {"sasl.username": "alice", "sasl.password": "alice-secret"}
    else:
        config |= {"sasl.username": SCRAM_USER, "sasl.password": SCRAM_PASSWORD}
    return config


def unsecured_token(principal: str) -> str:
    """An unsecured JWS (``alg: none``), as Kafka's default OAUTHBEARER validator accepts."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    claims = {"sub": principal, "iat": int(time.time()), "exp": int(time.time()) + 3600}
    return f"{part({'alg': 'none'})}.{part(claims)}."


class KafkaPythonToken(KafkaPythonTokenProvider):
    def token(self) -> str:
        return unsecured_token("alice")


class AioKafkaToken(AioKafkaTokenProvider):
    async def token(self) -> str:
        return unsecured_token("alice")


def python_config(mechanism: str, client: str = "kafka-python") -> dict[str, Any]:
    config: dict[str, Any] = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism}
    if mechanism == "OAUTHBEARER":
        provider = KafkaPythonToken() if client == "kafka-python" else AioKafkaToken()
        return config | {"sasl_oauth_token_provider": provider}
    user, password = (
        ("alice", "alice-secret") if mechanism == "PLAIN" else (SCRAM_USER, SCRAM_PASSWORD)
    )
    return config | {"sasl_plain_username": user, "sasl_plain_password": password}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_confluent_kafka_produces_and_consumes(broker: SecuredBroker, mechanism: str) -> None:
    topic = new_topic(broker)
    config = {"bootstrap.servers": broker.sasl, **confluent_config(mechanism)}
    producer = Producer(config)
    for i in range(5):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_kafka_python_produces_and_consumes(broker: SecuredBroker, mechanism: str) -> None:
    topic = new_topic(broker)
    producer = KafkaProducer(bootstrap_servers=broker.sasl, **python_config(mechanism))
    for i in range(3):
        producer.send(topic, f"k{i}".encode())
    producer.flush(TIMEOUT)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.sasl,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(TIMEOUT * 1000),
        **python_config(mechanism),
    )
    got = []
    for record in consumer:
        got.append(record.value)
        if len(got) == 3:
            break
    consumer.close()
    assert got == [f"k{i}".encode() for i in range(3)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_aiokafka_produces_and_consumes(broker: SecuredBroker, mechanism: str) -> None:
    topic = new_topic(broker)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.sasl, **python_config(mechanism, "aiokafka")
        )
        await asyncio.wait_for(producer.start(), TIMEOUT)
        try:
            for i in range(3):
                await asyncio.wait_for(producer.send_and_wait(topic, f"a{i}".encode()), TIMEOUT)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.sasl,
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            **python_config(mechanism, "aiokafka"),
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

    assert asyncio.run(run()) == [f"a{i}".encode() for i in range(3)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_kcat_produces_and_consumes(broker: SecuredBroker, tmp_path: Path, mechanism: str) -> None:
    topic = new_topic(broker)
    sasl = [f"-X{key}={value}" for key, value in confluent_config(mechanism).items()]
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\n")
    produce = ["kcat", "-P", "-b", broker.sasl, "-t", topic, "-l", str(source), *sasl]
    consume = ["kcat", "-C", "-b", broker.sasl, "-t", topic, "-e", "-o", "beginning", *sasl]
    done = subprocess.run(produce, check=False, timeout=TIMEOUT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = subprocess.run(consume, check=False, timeout=TIMEOUT, capture_output=True, text=True)
    assert out.stdout.split() == ["one", "two"], out.stderr


def test_each_listener_advertises_its_own_port(broker: SecuredBroker) -> None:
    plain = AdminClient({"bootstrap.servers": broker.plaintext}).list_topics(timeout=TIMEOUT)
    assert [b.port for b in plain.brokers.values()] == [broker.plain_port]
    sasl = AdminClient({"bootstrap.servers": broker.sasl, **confluent_config("PLAIN")}).list_topics(
        timeout=TIMEOUT
    )
    assert [b.port for b in sasl.brokers.values()] == [broker.sasl_port]


def test_confluent_kafka_with_a_wrong_password_is_refused(broker: SecuredBroker) -> None:
    errors: list[Any] = []
    config = {
        "bootstrap.servers": broker.sasl,
        **confluent_config("PLAIN"),
        "sasl.password": "wrong",
        "error_cb": errors.append,
        "log_level": 0,
    }
    admin = AdminClient(config)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)
    admin.poll(1)  # the error callbacks
    assert any("Authentication failed" in str(e) for e in errors), errors


# ---- refusals, byte for byte -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "token"),
    [
        ("PLAIN", b"\0alice\0wrong"),
        ("PLAIN", b"\0nobody\0alice-secret"),
        ("SCRAM-SHA-256", b"n,,n=nobody,r=abcdefghijklmnop"),
        ("OAUTHBEARER", b"n,,\x01auth=Bearer not.a.token\x01\x01"),
    ],
)
def test_a_failed_authentication_is_answered_then_closed(
    broker: SecuredBroker, mechanism: str, token: bytes
) -> None:
    raw = Raw(broker.sasl_port)
    versions = api_versions_v3.ApiVersionsRequest(
        client_software_name="t", client_software_version="1"
    )
    assert raw.call(versions).error_code == ErrorCode.none
    answer = handshake(raw, mechanism)
    assert answer.error_code == ErrorCode.none
    assert mechanism in answer.mechanisms
    answer = authenticate(raw, token)
    if mechanism == "OAUTHBEARER":  # RFC 7628: the error as bytes, the client answers \x01
        assert answer.error_code == ErrorCode.none
        assert b"invalid_token" in answer.auth_bytes
        answer = authenticate(raw, b"\x01")
    assert answer.error_code == ErrorCode.sasl_authentication_failed, answer
    assert answer.error_message and "Authentication failed" in answer.error_message
    assert 0.05 <= raw.closed_within(5) < 4  # connection.failed.authentication.delay.ms: 100
    raw.close()
    assert_still_serving(broker)


@pytest.mark.parametrize("port_of", ["before handshake", "after handshake"])
def test_a_request_before_authentication_closes_the_connection(
    broker: SecuredBroker, port_of: str
) -> None:
    raw = Raw(broker.sasl_port)
    if port_of == "after handshake":
        assert handshake(raw, "PLAIN").error_code == ErrorCode.none
    raw.sock.sendall(encode_request(metadata(), correlation_id=9, client_id="skipper"))
    raw.closed_within(5)
    raw.close()
    assert_still_serving(broker)


def test_a_plaintext_client_on_the_sasl_port_is_refused(broker: SecuredBroker) -> None:
    errors: list[Any] = []
    admin = AdminClient(
        {"bootstrap.servers": broker.sasl, "error_cb": errors.append, "log_level": 0}
    )
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)
    assert_still_serving(broker)


def test_an_unsupported_mechanism_is_answered_with_the_enabled_ones(
    broker: SecuredBroker,
) -> None:
    raw = Raw(broker.sasl_port)
    answer = handshake(raw, "GSSAPI")
    assert answer.error_code == ErrorCode.unsupported_sasl_mechanism
    assert set(answer.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
    raw.closed_within(5)
    raw.close()


def test_sasl_apis_on_plaintext_or_after_authentication_are_illegal(
    broker: SecuredBroker,
) -> None:
    raw = Raw(broker.plain_port)
    assert handshake(raw, "PLAIN").error_code == ErrorCode.illegal_sasl_state
    assert authenticate(raw, b"\0alice\0alice-secret").error_code == ErrorCode.illegal_sasl_state
    assert raw.call(metadata()).brokers[0].port == broker.plain_port  # still served
    raw.close()
    raw = Raw(broker.sasl_port)
    assert handshake(raw, "PLAIN").error_code == ErrorCode.none
    assert authenticate(raw, b"\0alice\0alice-secret").error_code == ErrorCode.none
    assert handshake(raw, "PLAIN").error_code == ErrorCode.illegal_sasl_state
    raw.close()


def test_a_v0_handshake_is_followed_by_raw_tokens(broker: SecuredBroker) -> None:
    """Before KIP-152 (v0): the tokens go without Kafka's header, answered size-prefixed; a
    failure closes the connection without an answer."""
    raw = Raw(broker.sasl_port)
    answer = raw.call(sasl_handshake_v0.SaslHandshakeRequest(mechanism="PLAIN"))
    assert answer.error_code == ErrorCode.none
    raw.sock.sendall(struct.pack(">i", 4) + b"\0a\0b")  # shorter than a request header
    raw.closed_within(5)
    raw.close()
    raw = Raw(broker.sasl_port)
    assert raw.call(sasl_handshake_v0.SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
    token = b"\0alice\0alice-secret"
    raw.sock.sendall(struct.pack(">i", len(token)) + token)
    assert raw.read_frame() == b""  # PLAIN's empty answer
    assert raw.call(metadata()).brokers[0].port == broker.sasl_port
    raw.close()


def test_the_cli_works_on_the_sasl_listener(broker: SecuredBroker) -> None:
    sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
            "-X", "sasl.username=admin", "-X", "sasl.password=admin-secret"]  # fmt: skip
    done = subprocess.run(
        [str(SLUICE), "users", "scram", "describe", "-b", broker.sasl, *sasl],
        check=False,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert SCRAM_USER in done.stdout and "SCRAM-SHA-512" in done.stdout, done.stdout


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_coordinator_and_cluster_answers_name_the_listener_asked(
    broker: SecuredBroker, listener: str
) -> None:
    port = broker.plain_port if listener == "PLAINTEXT" else broker.sasl_port
    raw = Raw(port)
    if listener == "SASL_PLAINTEXT":
        assert handshake(raw, "PLAIN").error_code == ErrorCode.none
        assert authenticate(raw, b"\0alice\0alice-secret").error_code == ErrorCode.none
    found = raw.call(
        find_coordinator_v4.FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("g",))
    )
    assert [c.port for c in found.coordinators] == [port], found
    cluster = raw.call(
        describe_cluster_v0.DescribeClusterRequest(include_cluster_authorized_operations=False)
    )
    assert [b.port for b in cluster.brokers] == [port], cluster
    raw.close()
