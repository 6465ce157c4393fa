"""The inter-broker listener and the broker's own credentials, read from the configuration
(:mod:`sluice.broker.security.inter_broker`): Kafka's rules, each error naming its key."""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import subprocess
import threading
import urllib.parse
from pathlib import Path
from typing import Any, ClassVar

import pytest
import trustme

from sluice.broker.config import BrokerConfig
from sluice.broker.security.inter_broker import (
    InterBrokerSecurity,
    SaslClient,
    inter_broker_security,
)
from sluice.broker.security.listeners import parse_listeners
from sluice.broker.security.oauth_login import ClientCredentialsLogin, UnsecuredLogin
from sluice.broker.security.sasl import OAuthBearerServer, UnsecuredValidator
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
    props = {
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
    config = BrokerConfig.from_properties(props)
    security = inter_broker_security(config, parse_listeners(config))
    assert (security.listener, security.protocol, security.mechanism) == (
        "BROKER",
        "SASL_SSL",
        "SCRAM-SHA-512",
    )
    assert (security.username, security.password) == ("broker", "pw")
    assert security.ssl_context is not None and security.ssl_context.check_hostname
    unchecked = BrokerConfig.from_properties(
        {**props, "listener.name.broker.ssl.endpoint.identification.algorithm": ""}
    )
    context = inter_broker_security(unchecked, parse_listeners(unchecked)).ssl_context
    assert context is not None and not context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED  # the chain is still checked


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
                "sasl.mechanism.inter.broker.protocol": "GSSAPI",
                "listener.name.broker.sasl.enabled.mechanisms": "PLAIN",
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


OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_BASE = {
    "listeners": "CLIENT://127.0.0.1:9092,BROKER://127.0.0.1:9093",
    "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_PLAINTEXT",
    "inter.broker.listener.name": "BROKER",
    "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
    "listener.name.broker.sasl.enabled.mechanisms": "OAUTHBEARER",
}
OAUTH_JAAS = "listener.name.broker.oauthbearer.sasl.jaas.config"


def test_an_unsecured_oauthbearer_login_is_what_kafkas_unsecured_validator_accepts() -> None:
    security = security_of(
        {
            **OAUTH_BASE,
            OAUTH_JAAS: f'{OAUTH} required unsecuredLoginStringClaim_sub="broker" '
            'unsecuredLoginLifetimeSeconds="120" unsecuredLoginListClaim_scope=",kafka,admin";',
        }
    )
    assert isinstance(security, InterBrokerSecurity)
    assert isinstance(security.login, UnsecuredLogin)
    token = security.login.token()
    claims = UnsecuredValidator(required_scope=("kafka", "admin")).claims(token)
    assert claims["sub"] == "broker" and claims["exp"] - claims["iat"] == 120
    client = security.sasl_client(token)
    first = client.first()
    assert first == f"n,,\x01auth=Bearer {token}\x01\x01".encode()
    server = OAuthBearerServer(UnsecuredValidator())
    assert server.evaluate(first) == b"" and server.principal == "User:broker"
    assert client.answer(b"") is None
    with pytest.raises(ValueError, match="refused the token"):
        security.sasl_client(token).answer(b'{"status":"invalid_token"}')


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        ({OAUTH_JAAS: f"{OAUTH} required;"}, OAUTH_JAAS, "unsecuredLoginStringClaim_sub"),
        (
            {
                OAUTH_JAAS: f'{OAUTH} required clientId="broker";',
                "listener.name.broker.oauthbearer.sasl.oauthbearer.token.endpoint.url": (
                    "http://127.0.0.1:1/token"
                ),
            },
            OAUTH_JAAS,
            'clientSecret="..."',
        ),
        (
            {
                OAUTH_JAAS: f'{OAUTH} required clientId="b" clientSecret="s";',
                "listener.name.broker.oauthbearer.sasl.login.callback.handler.class": (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
                ),
            },
            "listener.name.broker.oauthbearer.sasl.login.callback.handler.class",
            "sasl.oauthbearer.token.endpoint.url",
        ),
        (
            {
                OAUTH_JAAS: f'{OAUTH} required clientId="b" clientSecret="s";',
                "sasl.oauthbearer.token.endpoint.url": "ftp://idp/token",
            },
            "sasl.oauthbearer.token.endpoint.url",
            "http:// or https://",
        ),
    ],
)
def test_oauthbearer_login_errors_name_their_key(
    extra: dict[str, str], key: str, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        security_of({**OAUTH_BASE, **extra})
    assert caught.value.key == key, caught.value
    assert words in str(caught.value), caught.value


class _TokenEndpoint(http.server.BaseHTTPRequestHandler):
    """An OAuth token endpoint: client ``broker``/``s3cret`` gets a token valid 60 s."""

    requests: ClassVar[list[tuple[str, dict[str, list[str]]]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.requests.append((self.headers["Authorization"], urllib.parse.parse_qs(body)))
        if self.headers["Authorization"] != "Basic " + base64.b64encode(b"broker:s3cret").decode():
            self.send_response(401)
            self.end_headers()
            return
        answer = json.dumps({"access_token": f"t{len(self.requests)}", "expires_in": 60})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_client_credentials_login_asks_the_endpoint_and_reuses_its_token() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/token"
    now = [0.0]
    try:
        login = ClientCredentialsLogin(url, "broker", "s3cret", scope="kafka", clock=lambda: now[0])
        assert login.token() == "t1"
        now[0] = 47.0  # within 0.8 of its 60 s: the same token
        assert login.token() == "t1"
        now[0] = 49.0
        assert login.token() == "t2"
        _, form = _TokenEndpoint.requests[0]
        assert form == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
        assert "s3cret" not in repr(login)
        with pytest.raises(ValueError, match="HTTP 401"):
            ClientCredentialsLogin(url, "broker", "wrong").token()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
