"""Named listeners and their SASL configuration: what ``parse_listeners`` makes of Kafka's keys,
and the configuration errors, each naming its key."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt
import pytest
import trustme
from cryptography.hazmat.primitives.asymmetric import rsa
from kio.schema.describe_configs.v4.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.static.primitive import i8

from sluice.broker.config import BrokerConfig
from sluice.broker.security.listeners import parse_listeners
from sluice.broker.security.sasl import JwksValidator, UnsecuredValidator
from sluice.errors import ConfigError
from tests.broker.inprocess import InProcessBroker

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a";'
)


def listeners_of(**props: str) -> list[tuple[str, str, str, int, tuple[str, int]]]:
    config = BrokerConfig.from_properties({k.replace("_", "."): v for k, v in props.items()})
    return [(x.name, x.protocol, x.host, x.port, x.advertised) for x in parse_listeners(config)]


def test_default_is_one_plaintext_listener() -> None:
    assert listeners_of() == [("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092, ("127.0.0.1", 9092))]


def test_named_listeners_with_their_protocols_and_advertised_endpoints() -> None:
    config = BrokerConfig.from_properties(
        {
            "listeners": "INTERNAL://0.0.0.0:9092,CLIENT://127.0.0.1:9093",
            "advertised.listeners": "CLIENT://broker.example:19093",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.client.oauthbearer.sasl.jaas.config": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredValidatorPrincipalClaimName="azp" '
                'unsecuredValidatorRequiredScope="read write" '
                'unsecuredValidatorAllowableClockSkewMs="2000";'
            ),
        }
    )
    internal, client = parse_listeners(config)
    assert (internal.name, internal.protocol, internal.advertised) == (
        "INTERNAL",
        "PLAINTEXT",
        ("127.0.0.1", 9092),
    )
    assert internal.sasl is None
    assert (client.name, client.protocol, client.advertised) == (
        "CLIENT",
        "SASL_PLAINTEXT",
        ("broker.example", 19093),
    )
    assert client.sasl is not None
    assert client.sasl.mechanisms == ("SCRAM-SHA-512", "OAUTHBEARER")
    validator = client.sasl.validator
    assert isinstance(validator, UnsecuredValidator)
    assert (validator.principal_claim, validator.required_scope, validator.clock_skew_ms) == (
        "azp",
        ("read", "write"),
        2000,
    )


def test_plain_users_come_from_the_listeners_jaas_config() -> None:
    config = BrokerConfig.from_properties(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        }
    )
    (listener,) = parse_listeners(config)
    assert listener.sasl is not None
    assert listener.sasl.mechanisms == ("PLAIN",)  # Sluice's default (Kafka's: GSSAPI)
    assert dict(listener.sasl.plain_users) == {"admin": "admin-secret", "alice": "a"}
    assert listener.sasl.failed_delay_ms == 100


@pytest.mark.parametrize(
    ("props", "key", "words"),
    [
        (
            {"listeners": "CLIENT://127.0.0.1:9093"},
            "listener.security.protocol.map",
            "CLIENT has no security protocol",
        ),
        ({"listeners": "SSL://127.0.0.1:9093"}, "ssl.keystore.location", "is needed"),
        (
            {
                "listeners": "SASL_SSL://127.0.0.1:9093",
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "listener.name.sasl_ssl.ssl.keystore.location": "/nonexistent.pem",
            },
            "listener.name.sasl_ssl.ssl.keystore.location",
            "cannot load /nonexistent.pem",
        ),
        (
            {
                "listeners": "SSL://127.0.0.1:9093",
                "ssl.keystore.type": "JKS",
            },
            "ssl.keystore.type",
            "Sluice reads PEM",
        ),
        (
            {
                "listeners": "A://127.0.0.1:1,A://127.0.0.1:2",
                "listener.security.protocol.map": "A:PLAINTEXT",
            },
            "listeners",
            "appears twice",
        ),
        (
            {"advertised.listeners": "OTHER://h:1"},
            "advertised.listeners",
            "not among listeners",
        ),
        (
            {"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"},
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "is required",
        ),
        (
            {
                "listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "nonsense",
            },
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "LoginModule",
        ),
        (
            {
                "listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'M required username="a";',
            },
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "user_<name>",
        ),
    ],
)
def test_configuration_errors_name_their_key(props: dict[str, str], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_listeners(BrokerConfig.from_properties(props))
    assert caught.value.key == key, caught.value
    assert words in str(caught.value), caught.value


def test_an_unknown_cipher_suite_of_a_listener_is_named(tmp_path: Path) -> None:
    pem = tmp_path / "server.pem"
    trustme.CA().issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(pem)
    props = {
        "listeners": "SSL://127.0.0.1:9093",
        "ssl.keystore.location": str(pem),
        "listener.name.ssl.ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_NOPE",
    }
    with pytest.raises(ConfigError) as caught:
        parse_listeners(BrokerConfig.from_properties(props))
    assert caught.value.key == "listener.name.ssl.ssl.cipher.suites", caught.value
    assert "unknown cipher suite TLS_NOPE" in str(caught.value), caught.value


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("sasl.enabled.mechanisms", "GSSAPI", "GSSAPI/Kerberos is not implemented"),
        ("listener.name.client.sasl.enabled.mechanisms", "PLAIN,MAGIC", "MAGIC not supported"),
        ("connections.max.reauth.ms", "-1", "at least 0"),
        ("security.inter.broker.protocol", "TLS", "must be one of PLAINTEXT"),
        ("listener.security.protocol.map", "CLIENT:TLS", "PROTOCOL one of"),
    ],
)
def test_bad_values_are_refused_when_read(key: str, value: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig.from_properties({key: value})
    assert caught.value.key == key, caught.value
    assert words in str(caught.value), caught.value


def test_oauthbearer_validates_against_a_jwks_when_one_is_configured(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "alg": "RS256"}]}))
    config = BrokerConfig.from_properties(
        {
            "listeners": "CLIENT://127.0.0.1:9093",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.client.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": f"file://{jwks}",
            "sasl.oauthbearer.expected.issuer": "https://idp",
            "sasl.oauthbearer.expected.audience": "kafka",
        }
    )
    (listener,) = parse_listeners(config)
    assert listener.sasl is not None
    assert isinstance(listener.sasl.validator, JwksValidator)
    claims = {"sub": "svc", "iss": "https://idp", "aud": "kafka", "exp": int(time.time()) + 60}
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
    server = listener.sasl.server("OAUTHBEARER", lambda _user: None)
    assert server.evaluate(f"n,,\x01auth=Bearer {token}\x01\x01".encode()) == b""
    assert server.principal == "User:svc"
    wrong = jwt.encode({**claims, "iss": "https://evil"}, key, algorithm="RS256")
    refused = listener.sasl.server("OAUTHBEARER", lambda _user: None)
    assert b"invalid_token" in refused.evaluate(f"n,,\x01auth=Bearer {wrong}\x01\x01".encode())

    missing = BrokerConfig.from_properties(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "sasl.oauthbearer.jwks.endpoint.url": f"file://{tmp_path / 'none.json'}",
        }
    )
    with pytest.raises(ConfigError) as caught:
        parse_listeners(missing)
    assert caught.value.key == "sasl.oauthbearer.jwks.endpoint.url"


def test_describe_configs_never_shows_a_secret(tmp_path: Path) -> None:
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=i8(4),  # BROKER
                resource_name="0",
                configuration_keys=("ssl.keystore.key", "sasl.enabled.mechanisms"),
            ),
        ),
        include_synonyms=True,
        include_documentation=False,
    )
    secret = "-----BEGIN PRIVATE KEY-----\nnot really\n-----END PRIVATE KEY-----"
    with InProcessBroker(tmp_path / "data", **{"ssl.keystore.key": secret}) as broker:
        configs = {c.name: c for c in broker.request(request).results[0].configs}
    key = configs["ssl.keystore.key"]
    assert (key.value, key.is_sensitive) == (None, True), key
    assert all(s.value is None for s in key.synonyms), key.synonyms
    mechanisms = configs["sasl.enabled.mechanisms"]
    assert (mechanisms.value, mechanisms.is_sensitive) == ("PLAIN", False), mechanisms
