"""Fuzzing the SASL exchange on the wire (Hypothesis): random and truncated tokens of every
mechanism — PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER — in SaslAuthenticate requests,
after a valid first SCRAM message, and as raw tokens after a v0 SaslHandshake. One broker
process serves every example (module scope): after each one it is alive, still authenticates
a good client and serves it, and its log holds no unexpected error.
"""

from __future__ import annotations

import socket
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scramp
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.sasl_authenticate.v2 import request as sasl_authenticate_v2
from kio.schema.sasl_handshake.v0 import request as sasl_handshake_v0
from kio.schema.sasl_handshake.v1 import request as sasl_handshake_v1

from sluice.wire import encode_request
from tests.broker.security.test_sasl_listeners import Raw, authenticate, handshake, metadata
from tests.conftest import SLUICE, free_port, stop_process, wait_for_port

pytestmark = pytest.mark.timeout(300)

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
USER, PASSWORD = "fuzzy", "fuzzy-secret"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{USER}="{PASSWORD}";'
EXAMPLES = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class FuzzBroker:
    def __init__(self, sasl_port: int, log_path: Path, proc: subprocess.Popen[bytes]) -> None:
        self.sasl_port, self.log_path, self.proc = sasl_port, log_path, proc


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzBroker]:
    root = tmp_path_factory.mktemp("sasl-fuzz")
    plain_port, sasl_port = free_port(), free_port()
    props = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "0",
        "connections.max.reauth.ms": "60000",
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
        wait_for_port(sasl_port, proc)
        wait_for_port(plain_port, proc)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain_port}"})
        upserts = [
            UserScramCredentialUpsertion(USER, ScramCredentialInfo(m, 4096), PASSWORD.encode())
            for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
        ]
        for future in admin.alter_user_scram_credentials(upserts).values():
            future.result(15)
        yield FuzzBroker(sasl_port, log_path, proc)
    finally:
        stop_process(proc)
        print(log_path.read_text(errors="replace")[-3000:])


def valid_first(mechanism: str) -> bytes:
    if mechanism == "PLAIN":
        return f"\0{USER}\0{PASSWORD}".encode()
    if mechanism == "OAUTHBEARER":
        return b"n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.\x01\x01"
    return str(scramp.ScramClient([mechanism], USER, PASSWORD).get_client_first()).encode()


def exchange(broker: FuzzBroker, mechanism: str, tokens: list[bytes]) -> None:
    """Handshake v1, then each token in a SaslAuthenticate, until the broker refuses or
    closes; every answer must be readable (or the connection closed)."""
    sock = socket.create_connection(("127.0.0.1", broker.sasl_port), timeout=5)
    try:
        raw = Raw.__new__(Raw)
        raw.sock, raw.correlation = sock, 0
        if handshake(raw, mechanism).error_code != 0:
            return
        for token in tokens:
            raw.correlation += 1
            sock.sendall(
                encode_request(
                    sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=token),
                    correlation_id=raw.correlation,
                    client_id="fuzz",
                )
            )
            frame = raw.read_frame()
            if frame is None or frame[4:6] != b"\0\0":  # closed, or an error code
                return
    except (ConnectionError, TimeoutError):
        return
    finally:
        sock.close()


def assert_still_serving(broker: FuzzBroker) -> None:
    assert broker.proc.poll() is None, "the broker exited"
    raw = Raw(broker.sasl_port)
    try:
        assert handshake(raw, "PLAIN").error_code == 0
        assert authenticate(raw, f"\0{USER}\0{PASSWORD}".encode()).error_code == 0
        assert raw.call(metadata()).brokers
    finally:
        raw.close()
    text = broker.log_path.read_text(errors="replace")
    assert "unexpected error" not in text and "Traceback" not in text, text[-3000:]


tokens = st.binary(max_size=400)


@EXAMPLES
@given(mechanism=st.sampled_from(MECHANISMS), token=tokens, more=st.lists(tokens, max_size=2))
def test_random_tokens_never_take_the_broker_down(
    broker: FuzzBroker, mechanism: str, token: bytes, more: list[bytes]
) -> None:
    exchange(broker, mechanism, [token, *more])
    assert_still_serving(broker)


@EXAMPLES
@given(mechanism=st.sampled_from(MECHANISMS), data=st.data())
def test_truncated_and_mangled_tokens_never_take_the_broker_down(
    broker: FuzzBroker, mechanism: str, data: Any
) -> None:
    first = valid_first(mechanism)
    cut = data.draw(st.integers(0, len(first)))
    flip = data.draw(st.integers(0, len(first) - 1))
    mangled = first[:flip] + bytes([first[flip] ^ 0xFF]) + first[flip + 1 :]
    exchange(broker, mechanism, [data.draw(st.sampled_from([first[:cut], mangled]))])
    if mechanism.startswith("SCRAM"):  # a valid first message, then a broken final one
        final = data.draw(st.binary(max_size=200))
        exchange(broker, mechanism, [first, final])
    assert_still_serving(broker)


@EXAMPLES
@given(mechanism=st.sampled_from(MECHANISMS), token=tokens)
def test_raw_tokens_after_a_v0_handshake_never_take_the_broker_down(
    broker: FuzzBroker, mechanism: str, token: bytes
) -> None:
    sock = socket.create_connection(("127.0.0.1", broker.sasl_port), timeout=5)
    try:
        sock.sendall(
            encode_request(
                sasl_handshake_v0.SaslHandshakeRequest(mechanism=mechanism),
                correlation_id=1,
                client_id="fuzz",
            )
        )
        raw = Raw.__new__(Raw)
        raw.sock, raw.correlation = sock, 1
        if raw.read_frame() is not None:
            sock.sendall(struct.pack(">i", len(token)) + token)
            raw.read_frame()
    except (ConnectionError, TimeoutError):
        pass
    finally:
        sock.close()
    assert_still_serving(broker)


def test_a_handshake_with_a_garbage_mechanism_is_refused(broker: FuzzBroker) -> None:
    raw = Raw(broker.sasl_port)
    try:
        answer = raw.call(sasl_handshake_v1.SaslHandshakeRequest(mechanism="\x00" * 300))
        assert answer.error_code != 0
    finally:
        raw.close()
    assert_still_serving(broker)
