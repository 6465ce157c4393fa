"""The SASL servers (:mod:`sluice.broker.security.sasl`) driven by kafka-python's own client
mechanisms, in process: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER (unsecured and JWKS-signed
tokens) authenticate the right users and refuse wrong passwords, unknown users, expired and
badly signed tokens with Kafka's messages; Hypothesis throws random and truncated tokens at
every mechanism, which must only ever fail with SaslAuthenticationError. The credentials'
text form and JAAS parsing are here too."""

from __future__ import annotations

import base64
import json
import time
import warnings
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.broker.security.credentials import ScramCredential, jaas_options, plain_users
from sluice.broker.security.sasl import (
    JwksValidator,
    OAuthBearerServer,
    PlainServer,
    SaslAuthenticationError,
    SaslServer,
    ScramServer,
    UnsecuredValidator,
)

with warnings.catch_warnings():  # kafka-python reads its schemas with a deprecated call
    warnings.filterwarnings("ignore", "(read|open)_text is deprecated", DeprecationWarning)
    from kafka.net.sasl.oauth import AbstractTokenProvider, SaslMechanismOAuth
    from kafka.net.sasl.plain import SaslMechanismPlain
    from kafka.net.sasl.scram import SaslMechanismScram

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def exchange(client: Any, server: SaslServer) -> None:
    """kafka-python's client loop (``kafka.net.sasl``) against ``server``; raises what either
    side raises."""
    while not client.is_done():
        client.receive(server.evaluate(client.auth_bytes()))


def scram_lookup(mechanism: str) -> Any:
    creds = {u: ScramCredential.from_password(mechanism, p) for u, p in USERS.items()}
    return creds.get


# -- PLAIN -----------------------------------------------------------------------------------


def test_plain_authenticates_the_listeners_users() -> None:
    server = PlainServer(USERS)
    client = SaslMechanismPlain(sasl_plain_username="alice", sasl_plain_password="alice-secret")
    exchange(client, server)
    assert client.is_authenticated() and server.complete and server.principal == "User:alice"


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("mallory", "alice-secret")])
def test_plain_refuses_a_wrong_password_and_an_unknown_user_alike(user: str, password: str) -> None:
    client = SaslMechanismPlain(sasl_plain_username=user, sasl_plain_password=password)
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        exchange(client, PlainServer(USERS))


def test_plain_refuses_another_authorization_id() -> None:
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        PlainServer(USERS).evaluate(b"bob\0alice\0alice-secret")


# -- SCRAM -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_authenticates_and_proves_the_server(mechanism: str) -> None:
    server = ScramServer(mechanism, scram_lookup(mechanism))
    client = SaslMechanismScram(
        sasl_plain_username="bob", sasl_plain_password="bob-secret", sasl_mechanism=mechanism
    )
    exchange(client, server)  # the client checks the server's signature (v=) itself
    assert client.is_authenticated() and server.principal == "User:bob"


@pytest.mark.parametrize("user, password", [("bob", "wrong"), ("mallory", "x")])
def test_scram_refuses_wrong_credentials_with_kafkas_message(user: str, password: str) -> None:
    mechanism = "SCRAM-SHA-256"
    client = SaslMechanismScram(
        sasl_plain_username=user, sasl_plain_password=password, sasl_mechanism=mechanism
    )
    with pytest.raises(SaslAuthenticationError, match="invalid credentials with SASL mechanism"):
        exchange(client, ScramServer(mechanism, scram_lookup(mechanism)))


def old_librdkafka_final(client_first: str, server_first: str, password: str, nonce: str) -> str:
    """The client-final message librdkafka before 2.6.1 sends: ``r=`` is its own nonce followed
    by the server's whole nonce (which starts with it), and the proof is over that message."""
    import hashlib
    import hmac

    fields = dict(f.split("=", 1) for f in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = f"c=biws,r={nonce}"
    auth = f"{client_first[3:]},{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}"


@pytest.mark.parametrize("password, accepted", [("bob-secret", True), ("wrong", False)])
def test_scram_accepts_old_librdkafkas_repeated_client_nonce(password: str, accepted: bool) -> None:
    server = ScramServer("SCRAM-SHA-256", scram_lookup("SCRAM-SHA-256"))
    client_first = "n,,n=bob,r=fyko+d2lbbFgONRv9qkxdawL"
    server_first = server.evaluate(client_first.encode()).decode()
    repeated = "fyko+d2lbbFgONRv9qkxdawL" + server_first.split(",")[0][2:]
    final = old_librdkafka_final(client_first, server_first, password, repeated)
    if accepted:
        assert server.evaluate(final.encode()).startswith(b"v=")
        assert server.principal == "User:bob"
    else:
        with pytest.raises(SaslAuthenticationError):
            server.evaluate(final.encode())


def test_scram_refuses_a_final_nonce_that_does_not_end_with_the_servers() -> None:
    server = ScramServer("SCRAM-SHA-256", scram_lookup("SCRAM-SHA-256"))
    client_first = "n,,n=bob,r=fyko+d2lbbFgONRv9qkxdawL"
    server_first = server.evaluate(client_first.encode()).decode()
    final = old_librdkafka_final(client_first, server_first, "bob-secret", "fyko+d2lbbFgONRv9qk")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(final.encode())


def test_a_credential_of_one_mechanism_does_not_serve_the_other() -> None:
    client = SaslMechanismScram(
        sasl_plain_username="bob", sasl_plain_password="bob-secret", sasl_mechanism="SCRAM-SHA-512"
    )
    with pytest.raises(SaslAuthenticationError):
        exchange(client, ScramServer("SCRAM-SHA-512", scram_lookup("SCRAM-SHA-256")))


def test_scram_credentials_from_a_salted_password_as_kip_554_sends_it() -> None:
    import hashlib

    salt = b"salt-of-sixteen!"
    salted = hashlib.pbkdf2_hmac("sha512", b"bob-secret", salt, 8192)
    made = ScramCredential.from_salted_password("SCRAM-SHA-512", salted, salt, 8192)
    assert made == ScramCredential.from_password("SCRAM-SHA-512", "bob-secret", 8192, salt)
    with pytest.raises(ValueError, match="4096-16384"):
        ScramCredential.from_salted_password("SCRAM-SHA-512", salted, salt, 100)
    text = made.to_text()
    assert text.startswith("salt=" + base64.b64encode(salt).decode() + ",stored_key=")
    assert text.endswith(",iterations=8192")
    assert ScramCredential.parse(text, "SCRAM-SHA-512") == made
    with pytest.raises(ValueError, match="not a SCRAM credential"):
        ScramCredential.parse("salt=AA==,iterations=4096")


# -- OAUTHBEARER -----------------------------------------------------------------------------


class Token(AbstractTokenProvider):
    def __init__(self, token: str) -> None:
        self._token = token

    def token(self) -> str:
        return self._token


def unsecured(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."


def oauth(token: str, server: OAuthBearerServer) -> None:
    client = SaslMechanismOAuth(sasl_oauth_token_provider=Token(token))
    answer = server.evaluate(client.auth_bytes())
    client.receive(answer)
    if not client.is_done():  # refused: the client answers \x01, the server fails
        server.evaluate(client.auth_bytes())


def test_oauthbearer_unsecured_tokens_for_development() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    exp = int(time.time()) + 3600
    oauth(unsecured({"sub": "carol", "exp": exp}), server)
    assert server.principal == "User:carol" and server.expires_at_ms == exp * 1000


@pytest.mark.parametrize(
    "claims, why",
    [
        ({"sub": "carol", "exp": -10}, "expired"),
        ({"sub": "carol"}, "no exp"),
        ({"exp": 60}, "no 'sub' claim"),
    ],
)
def test_oauthbearer_refuses_bad_unsecured_tokens(claims: dict[str, Any], why: str) -> None:
    # "exp" is given relative to now: parameters are built at collection, long before the run.
    if "exp" in claims:
        claims = {**claims, "exp": int(time.time()) + claims["exp"]}
    with pytest.raises(SaslAuthenticationError, match=why):
        oauth(unsecured(claims), OAuthBearerServer(UnsecuredValidator()))


def test_oauthbearer_answers_invalid_token_then_fails() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    assert server.evaluate(b"n,,\x01auth=Bearer nonsense\x01\x01") == b'{"status":"invalid_token"}'
    with pytest.raises(SaslAuthenticationError, match="unsecured JWS"):
        server.evaluate(b"\x01")
    assert not server.complete and server.principal is None


def test_a_required_scope_must_be_in_the_token() -> None:
    validator = UnsecuredValidator(required_scope=("kafka",))
    token = unsecured({"sub": "c", "exp": int(time.time()) + 60, "scope": "read kafka"})
    oauth(token, server := OAuthBearerServer(validator))
    assert server.complete
    with pytest.raises(SaslAuthenticationError, match="scope lacks"):
        oauth(unsecured({"sub": "c", "exp": int(time.time()) + 60}), OAuthBearerServer(validator))


@pytest.fixture(scope="module")
def signing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """An RSA key and a JWKS file holding its public half (kid "k1")."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    return key, path


def signed(key: Any, claims: dict[str, Any], kid: str = "k1") -> str:
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def test_oauthbearer_tokens_signed_by_a_jwks_key_with_issuer_and_audience(
    signing: tuple[Any, Path],
) -> None:
    key, jwks = signing
    validator = JwksValidator(str(jwks), issuer="https://idp", audience=("kafka",))
    good = {"sub": "svc", "iss": "https://idp", "aud": "kafka", "exp": int(time.time()) + 60}
    oauth(signed(key, good), server := OAuthBearerServer(validator))
    assert server.principal == "User:svc"

    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for token, why in [
        (signed(other_key, good), "Signature verification failed"),
        (signed(key, {**good, "iss": "https://evil"}), "(?i)issuer"),
        (signed(key, {**good, "aud": "other"}), "(?i)audience"),
        (signed(key, {**good, "exp": int(time.time()) - 120}), "expired"),
        (unsecured(good), "(?i)alg|key"),
    ]:
        with pytest.raises(SaslAuthenticationError, match=why):
            oauth(token, OAuthBearerServer(validator))


# -- bad input never crashes an exchange -----------------------------------------------------


def servers() -> list[SaslServer]:
    return [
        PlainServer(USERS),
        ScramServer("SCRAM-SHA-256", scram_lookup("SCRAM-SHA-256")),
        OAuthBearerServer(UnsecuredValidator()),
    ]


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.binary(max_size=200), min_size=1, max_size=4))
def test_random_tokens_only_ever_fail_cleanly(tokens: list[bytes]) -> None:
    for server in servers():
        try:
            for token in tokens:
                server.evaluate(token)
        except SaslAuthenticationError:
            pass
        assert server.complete is False or server.principal is not None


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(min_value=0, max_value=120))
def test_truncated_real_messages_fail_cleanly(cut: int) -> None:
    client = SaslMechanismScram(
        sasl_plain_username="bob", sasl_plain_password="bob-secret", sasl_mechanism="SCRAM-SHA-256"
    )
    server = ScramServer("SCRAM-SHA-256", scram_lookup("SCRAM-SHA-256"))
    client.receive(server.evaluate(client.auth_bytes()))
    final = client.auth_bytes()
    if cut < len(final):
        with pytest.raises(SaslAuthenticationError):
            server.evaluate(final[:cut])
        assert not server.complete


# -- configuration text ----------------------------------------------------------------------


def test_jaas_options_as_kafka_writes_them() -> None:
    text = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="admin" password="p\\"w" user_admin="p\\"w" user_eve=bare;'
    )
    options = jaas_options(text)
    assert options == {"username": "admin", "password": 'p"w', "user_admin": 'p"w',
                       "user_eve": "bare"}  # fmt: skip
    assert plain_users(options) == {"admin": 'p"w', "eve": "bare"}
    with pytest.raises(ValueError, match="LoginModule"):
        jaas_options('username="admin";')
