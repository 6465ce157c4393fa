"""The inter-broker listener and the broker's own credentials, read from the configuration
(:mod:`sluice.broker.security.inter_broker`): Kafka's rules, each error naming its key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trustme

from sluice.broker.config import BrokerConfig
from sluice.broker.security.inter_broker import SaslClient, inter_broker_security
from sluice.broker.security.listeners import parse_listeners
from sluice.errors import ConfigError
from tests.conftest import SLUICE, free_port

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="pw" user_broker="pw";'
)
BASE = {
    "listeners": "CLIENT://127.0.0.1:9092,BROKER://127.0.0.1:9093",
    "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_PLAINTEXT",
    "listener.name.broker.plain.sasl.jaas.config": PLAIN_JAAS,
}


def security_of(props: dict[str, str]) -> object:
    config = BrokerConfig.from_properties(props)
    return inter_broker_security(config, parse_listeners(config))


def test_scram_over_tls_with_the_brokers_own_credentials(tmp_path: Path) -> None:
    authority = trustme.CA()
    ca, server = tmp_path / "ca.pem", tmp_path / "server.pem"
    authority.cert_pem.write_to_path(ca)
    authority.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(server)
    config = BrokerConfig.from_properties(
        {
            "listeners": "CLIENT://127.0.0.1:9092,BROKER://127.0.0.1:9093",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_SSL",
            "inter.broker.listener.name": "broker",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.broker.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                'username="broker" password="pw";'
            ),
            "ssl.keystore.location": str(server),
            "ssl.truststore.location": str(ca),
        }
    )
    security = inter_broker_security(config, parse_listeners(config))
    assert (security.listener, security.protocol, security.mechanism) == (
        "BROKER",
        "SASL_SSL",
        "SCRAM-SHA-512",
    )
    assert (security.username, security.password) == ("broker", "pw")
    assert security.ssl_context is not None and security.ssl_context.check_hostname


def test_security_inter_broker_protocol_names_the_listener_of_that_name() -> None:
    plain = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    security = inter_broker_security(plain, parse_listeners(plain))
    assert (security.listener, security.protocol, security.ssl_context) == (
        "PLAINTEXT",
        "PLAINTEXT",
        None,
    )


@pytest.mark.parametrize(
    ("props", "key", "words"),
    [
        (BASE, "security.inter.broker.protocol", "not among listeners"),
        (
            {
                **BASE,
                "inter.broker.listener.name": "BROKER",
                "security.inter.broker.protocol": "SSL",
            },
            "inter.broker.listener.name",
            "only one of",
        ),
        ({**BASE, "inter.broker.listener.name": "OTHER"}, "inter.broker.listener.name", "OTHER"),
        (
            {
                **BASE,
                "inter.broker.listener.name": "BROKER",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            },
            "sasl.mechanism.inter.broker.protocol",
            "not enabled on the inter-broker listener BROKER",
        ),
        (
            {
                **BASE,
                "inter.broker.listener.name": "BROKER",
                "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
                "listener.name.broker.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
            },
            "sasl.mechanism.inter.broker.protocol",
            "brokers log in to each other with",
        ),
        (
            {
                **BASE,
                "inter.broker.listener.name": "BROKER",
                "listener.name.broker.plain.sasl.jaas.config": (
                    'PlainLoginModule required user_broker="pw";'
                ),
            },
            "listener.name.broker.plain.sasl.jaas.config",
            'username="..." password="..."',
        ),
    ],
)
def test_configuration_errors_name_their_key(props: dict[str, str], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        security_of(props)
    assert caught.value.key == key, caught.value
    assert words in str(caught.value), caught.value


def test_the_plain_client_token() -> None:
    client = SaslClient("PLAIN", "broker", "pw")
    assert client.first() == b"\0broker\0pw"
    assert client.answer(b"") is None


def test_a_broker_refuses_to_start_naming_the_inter_broker_key(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    props = {
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
        "inter.broker.listener.name": "BROKER",
        "log.dirs": str(tmp_path / "data"),
    }
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    done = subprocess.run(
        [str(SLUICE), "broker", "start", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0, done.stdout
    assert "inter.broker.listener.name" in done.stderr, done.stderr
    assert "not among listeners" in done.stderr, done.stderr
