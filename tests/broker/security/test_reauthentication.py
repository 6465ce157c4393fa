"""KIP-368 re-authentication and the broker's own SASL client, on the wire: one broker process
with a PLAINTEXT, a SASL_PLAINTEXT and a SASL_SSL listener, ``connections.max.reauth.ms``
set (2 s for the broker, 1.5 s for SCRAM-SHA-256 on the SASL_SSL listener).

- SaslAuthenticate answers ``session_lifetime_ms``: the mechanism's limit, or less when the
  credential (an OAUTHBEARER token) expires sooner.
- A connection that lets its session end gets its next request refused: the connection is
  closed, nothing served. One that re-authenticates (SaslHandshake + SaslAuthenticate again,
  same mechanism, same principal) keeps being served; another principal, another mechanism or a
  second re-authentication within a second is refused.
- librdkafka, told a lifetime, re-authenticates by itself: a producer writing across several
  lifetimes is never cut off.
- The inter-broker client (:class:`~sluice.broker.replication.client.BrokerClient`) connects
  over TLS with SCRAM-SHA-256, re-authenticates on the same connection when its session is
  due, and reports refused credentials clearly.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v9 import request as metadata_v9

from sluice.broker.replication.client import BrokerClient, BrokerConnectionError
from sluice.broker.security.inter_broker import InterBrokerSecurity
from sluice.broker.security.tls import client_context
from sluice.wire import encode_request
from tests.broker.security.test_sasl_listeners import Raw, authenticate, handshake, metadata
from tests.conftest import SLUICE, free_port, stop_process, wait_for_port

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 15.0
BROKER_LIFETIME_MS = 2000
SCRAM_LIFETIME_MS = 1500
SCRAM_USER, SCRAM_PASSWORD = "replicator", "replicator-secret"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-secret" user_bob="bob-secret";'
)


class ReauthBroker:
    def __init__(self, ports: dict[str, int], ca: Path, proc: subprocess.Popen[bytes]) -> None:
        self.ports, self.ca, self.proc = ports, ca, proc
        self.log_path: Path | None = None

    def log_text(self) -> str:
        assert self.log_path is not None
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReauthBroker]:
    root = tmp_path_factory.mktemp("reauth-broker")
    authority = trustme.CA()
    server_pem, ca_pem = root / "server.pem", root / "ca.pem"
    authority.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        server_pem
    )
    authority.cert_pem.write_to_path(ca_pem)
    ports = {name: free_port() for name in ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")}
    props = {
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": str(BROKER_LIFETIME_MS),
        "listener.name.sasl_ssl.scram-sha-256.connections.max.reauth.ms": str(SCRAM_LIFETIME_MS),
        "ssl.keystore.location": str(server_pem),
        "group.initial.rebalance.delay.ms": "0",
        "log.dirs": str(root / "data"),
    }
    path = root / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log_path = root / "broker.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [str(SLUICE), "broker", "start", "--config", str(path)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for port in ports.values():
            wait_for_port(port, proc)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"})
        upsert = UserScramCredentialUpsertion(
            SCRAM_USER,
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
            SCRAM_PASSWORD.encode(),
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(TIMEOUT)
        served = ReauthBroker(ports, ca_pem, proc)
        served.log_path = log_path
        yield served
    finally:
        stop_process(proc)
        print(log_path.read_text(errors="replace")[-4000:])


def plain_session(broker: ReauthBroker, user: str = "alice") -> tuple[Raw, Any]:
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "PLAIN").error_code == ErrorCode.none
    answer = authenticate(raw, f"\0{user}\0{user}-secret".encode())
    assert answer.error_code == ErrorCode.none, answer
    return raw, answer


def lifetime_ms(answer: Any) -> int:
    return int(answer.session_lifetime.total_seconds() * 1000)


def unsecured_token(subject: str, expires_in_s: float) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    claims = {"sub": subject, "exp": time.time() + expires_in_s, "iat": int(time.time())}
    return f"{part({'alg': 'none'})}.{part(claims)}."


def test_authenticate_answers_the_session_lifetime(broker: ReauthBroker) -> None:
    raw, answer = plain_session(broker)
    assert lifetime_ms(answer) == BROKER_LIFETIME_MS
    raw.close()
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "OAUTHBEARER").error_code == ErrorCode.none
    token = unsecured_token("carol", 1.0)
    answer = authenticate(raw, f"n,,\x01auth=Bearer {token}\x01\x01".encode())
    assert answer.error_code == ErrorCode.none, answer
    assert 0 < lifetime_ms(answer) <= 1000, "the token expires before connections.max.reauth.ms"
    raw.close()


def test_an_expired_session_is_closed_at_its_next_request(broker: ReauthBroker) -> None:
    raw, _ = plain_session(broker)
    assert raw.call(metadata()).brokers, "served while the session lasts"
    time.sleep(BROKER_LIFETIME_MS / 1000 + 0.3)
    raw.sock.sendall(encode_request(metadata(), correlation_id=99, client_id="t"))
    assert raw.read_frame() is None, "a request after the session ended was served"
    raw.close()
    assert "was not renewed" in broker.log_text()


def test_re_authentication_keeps_the_connection(broker: ReauthBroker) -> None:
    raw, _ = plain_session(broker)
    for _ in range(3):  # three lifetimes long, renewed each time before the end
        time.sleep(BROKER_LIFETIME_MS / 1000 * 0.6)
        assert handshake(raw, "PLAIN").error_code == ErrorCode.none
        answer = authenticate(raw, b"\0alice\0alice-secret")
        assert answer.error_code == ErrorCode.none, answer
        assert lifetime_ms(answer) == BROKER_LIFETIME_MS
        assert raw.call(metadata()).brokers
    raw.close()


def test_re_authentication_cannot_change_principal_or_mechanism(broker: ReauthBroker) -> None:
    raw, _ = plain_session(broker)
    time.sleep(1.05)
    assert handshake(raw, "PLAIN").error_code == ErrorCode.none
    answer = authenticate(raw, b"\0bob\0bob-secret")
    assert answer.error_code == ErrorCode.sasl_authentication_failed
    assert "Cannot change principals" in (answer.error_message or "")
    assert raw.closed_within(5) < 5
    raw.close()
    raw, _ = plain_session(broker)
    time.sleep(1.05)
    assert handshake(raw, "SCRAM-SHA-256").error_code == ErrorCode.unsupported_sasl_mechanism
    assert raw.closed_within(5) < 5
    raw.close()


def test_at_most_one_re_authentication_a_second(broker: ReauthBroker) -> None:
    raw, _ = plain_session(broker)
    time.sleep(1.05)
    assert handshake(raw, "PLAIN").error_code == ErrorCode.none
    assert authenticate(raw, b"\0alice\0alice-secret").error_code == ErrorCode.none
    assert handshake(raw, "PLAIN").error_code == ErrorCode.illegal_sasl_state
    assert raw.call(metadata()).brokers, "the session goes on"
    raw.close()


def test_librdkafka_re_authenticates_when_told_a_lifetime(broker: ReauthBroker) -> None:
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.ports['PLAINTEXT']}"})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT)
    closed_before = broker.log_text().count("was not renewed")
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "linger.ms": 0,
        }
    )
    delivered: list[Any] = []
    deadline = time.monotonic() + 3 * BROKER_LIFETIME_MS / 1000
    while time.monotonic() < deadline:
        producer.produce(topic, b"x", on_delivery=lambda err, _msg: delivered.append(err))
        producer.flush(TIMEOUT)
        time.sleep(0.1)
    assert delivered and all(err is None for err in delivered), delivered[:3]
    assert broker.log_text().count("was not renewed") == closed_before, (
        "librdkafka let its session end instead of re-authenticating"
    )


def scram_security(broker: ReauthBroker, password: str = SCRAM_PASSWORD) -> InterBrokerSecurity:
    context = client_context({"ssl.truststore.location": str(broker.ca)})
    return InterBrokerSecurity(
        "SASL_SSL", "SASL_SSL", context, "SCRAM-SHA-256", SCRAM_USER, password
    )


def test_the_inter_broker_client_speaks_tls_and_scram_and_re_authenticates(
    broker: ReauthBroker,
) -> None:
    request = metadata_v9.MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )

    async def main() -> None:
        client = await BrokerClient.connect(
            "127.0.0.1",
            broker.ports["SASL_SSL"],
            client_id="test-replica",
            timeout_s=TIMEOUT,
            security=scram_security(broker),
        )
        try:
            for _ in range(3):  # across three SCRAM lifetimes of 1.5 s
                answer = await client.call(request, timeout_s=TIMEOUT)
                assert [b.port for b in answer.brokers] == [broker.ports["SASL_SSL"]]
                await asyncio.sleep(SCRAM_LIFETIME_MS / 1000 * 0.9)
            assert not client.closed
        finally:
            await client.wait_closed()
        with pytest.raises(BrokerConnectionError) as refused:
            await BrokerClient.connect(
                "127.0.0.1",
                broker.ports["SASL_SSL"],
                client_id="test-replica",
                timeout_s=TIMEOUT,
                security=scram_security(broker, "wrong"),
            )
        assert (
            f"SASL authentication failed as inter-broker user '{SCRAM_USER}' with "
            "SCRAM-SHA-256 on listener SASL_SSL: SASL_AUTHENTICATION_FAILED"
        ) in str(refused.value)

    asyncio.run(main())
