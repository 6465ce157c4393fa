"""The server side of Kafka's SASL mechanisms: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

A connection's authenticator makes one :class:`SaslServer` for the mechanism SaslHandshake named
and hands it each SaslAuthenticate's ``auth_bytes`` (:meth:`SaslServer.evaluate`); the bytes it
returns are the response's. When :attr:`SaslServer.complete`, :attr:`SaslServer.principal` is
who the connection is (``User:<name>``) and :attr:`SaslServer.expires_at_ms` when that stops
holding (an OAUTHBEARER token's ``exp``; KIP-368 re-authentication). A failure raises
:class:`SaslAuthenticationError` with the message the client gets beside
SASL_AUTHENTICATION_FAILED — Kafka's, which never says whether the user or the password was
wrong.

- **PLAIN** (RFC 4616): one message, ``authzid NUL authcid NUL password``, checked against the
  listener's users (:func:`~.credentials.plain_users`); an authzid other than the user is
  refused, as Kafka does.
- **SCRAM** (RFC 5802, 7677): client-first, server-first, client-final, server-final, by
  ``scramp`` against the user's :class:`~.credentials.ScramCredential`; no channel binding
  (Kafka's GS2 header is ``n,,``). An unknown user fails at the first message.
- **OAUTHBEARER** (RFC 7628, KIP-255): one client message, ``n,,\\x01auth=Bearer <jwt>\\x01…\\x01``;
  the token is checked by a :class:`TokenValidator` — Kafka's unsecured development validator
  (``alg: none``; ``exp`` and the subject required) or signatures from a JWKS with issuer and
  audience (KIP-768). On a bad token the server answers ``{"status":"invalid_token"}``, the client
  answers ``\\x01``, and the authentication fails (RFC 7628 §3.2.3).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import jwt
import scramp

from sluice.broker.security.credentials import SCRAM_MECHANISMS, ScramCredential

__all__ = [
    "JwksValidator",
    "OAuthBearerServer",
    "PlainServer",
    "SaslAuthenticationError",
    "SaslServer",
    "ScramServer",
    "TokenValidator",
    "UnsecuredValidator",
]

_INVALID_TOKEN: Final = b'{"status":"invalid_token"}'


class SaslAuthenticationError(Exception):
    """The exchange failed; ``str()`` is the message the client gets."""


class SaslServer(Protocol):
    """One exchange of one mechanism (see the module docstring)."""

    mechanism: str
    complete: bool
    principal: str | None
    expires_at_ms: int | None

    def evaluate(self, token: bytes) -> bytes:
        """The answer to the client's ``token``; SaslAuthenticationError when it fails."""
        ...


@dataclass
class PlainServer:
    """PLAIN against ``users`` (name → password)."""

    users: Mapping[str, str]
    mechanism: str = "PLAIN"
    complete: bool = False
    principal: str | None = None
    expires_at_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if self.complete or len(parts) != 3:
            raise SaslAuthenticationError(
                "Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts))
            )
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        expected = self.users.get(user)
        if expected is None or not _same(expected, password):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        self.complete, self.principal = True, f"User:{user}"
        return b""


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@dataclass
class ScramServer:
    """SCRAM-SHA-256 or -512 against the credentials ``lookup`` finds (None: unknown user)."""

    mechanism: str
    lookup: Callable[[str], ScramCredential | None]
    complete: bool = False
    principal: str | None = None
    expires_at_ms: int | None = None
    _server: Any = field(default=None, repr=False)
    _user: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {self.mechanism}")

    def evaluate(self, token: bytes) -> bytes:
        failed = SaslAuthenticationError(
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism}"
        )
        try:
            message = token.decode()
        except UnicodeDecodeError:
            raise failed from None
        try:
            if self._server is None:
                self._server = scramp.ScramMechanism(self.mechanism).make_server(self._auth)
                self._server.set_client_first(message)
                return str(self._server.get_server_first()).encode()
            if self.complete:
                raise failed
            self._accept_repeated_client_nonce(message)
            self._server.set_client_final(message)
            final = str(self._server.get_server_final()).encode()
        except scramp.ScramException:
            raise failed from None
        self.complete, self.principal = True, f"User:{self._user}"
        return final

    def _accept_repeated_client_nonce(self, client_final: str) -> None:
        """librdkafka before 2.6.1 (kcat on Debian 12 among them) repeats its own nonce in the
        client-final message: ``r=<client nonce><client nonce + server nonce>``. Kafka accepts
        a nonce that *ends with* the server's (``ScramSaslServer``, since 3.8.1) and checks the
        proof over the message as sent; scramp wants equality, so it is told that nonce."""
        nonce = next((f[2:] for f in client_final.split(",") if f.startswith("r=")), None)
        expected = str(self._server.nonce)
        if nonce is not None and nonce != expected and nonce.endswith(expected):
            self._server.nonce = type(self._server.nonce)(nonce)

    def _auth(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        credential = self.lookup(user)
        if credential is None or credential.mechanism != self.mechanism:
            raise scramp.ScramException("unknown user")
        self._user = user
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations


class TokenValidator(Protocol):
    """Checks an OAUTHBEARER token: its claims, or ValueError saying why it is refused; the
    principal is the value of its ``principal_claim``."""

    @property
    def principal_claim(self) -> str: ...

    def claims(self, token: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class UnsecuredValidator:
    """Kafka's default validator, for development only: an unsigned JWS (``alg: none``) whose
    ``exp`` has not passed (give or take ``clock_skew_ms``) and which names the subject
    (``principal_claim``); ``required_scope`` must all be in its ``scope``."""

    principal_claim: str = "sub"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0
    clock: Callable[[], float] = time.time

    def claims(self, token: str) -> dict[str, Any]:
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise ValueError("an unsecured JWS is header.payload. (no signature)")
        header, payload = (_b64json(p) for p in parts[:2])
        if header.get("alg") != "none":
            raise ValueError(f"an unsecured JWS has alg none, not {header.get('alg')!r}")
        _check_times(payload, self.clock() * 1000, self.clock_skew_ms)
        scope = payload.get("scope", [])
        scope = scope.split() if isinstance(scope, str) else list(scope)
        missing = [s for s in self.required_scope if s not in scope]
        if missing:
            raise ValueError(f"the token's scope lacks {missing}")
        return payload


class JwksValidator:
    """KIP-768's validator: the token is signed by a key of a JWKS (a file, or an http(s) URL
    fetched and cached by ``pyjwt``), its issuer and audience are the expected ones, ``exp``
    has not passed (give or take ``clock_skew_s``)."""

    def __init__(
        self,
        jwks: str,
        *,
        issuer: str | None = None,
        audience: tuple[str, ...] = (),
        principal_claim: str = "sub",
        clock_skew_s: int = 30,
    ) -> None:
        self.issuer, self.audience = issuer, audience
        self.principal_claim, self.clock_skew_s = principal_claim, clock_skew_s
        self._key: Callable[[str], Any]
        if jwks.startswith(("http://", "https://")):
            client = jwt.PyJWKClient(jwks, cache_keys=True)
            self._key = lambda token: client.get_signing_key_from_jwt(token).key
        else:
            path = jwks.removeprefix("file://")
            with open(path, encoding="utf-8") as f:
                keys = jwt.PyJWKSet.from_json(f.read())
            self._key = lambda token: _key_of(keys, token)

    def claims(self, token: str) -> dict[str, Any]:
        try:
            key = self._key(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256"],
                audience=list(self.audience) or None,
                issuer=self.issuer,
                leeway=self.clock_skew_s,
                options={"require": ["exp", self.principal_claim]},
            )
        except jwt.PyJWTError as error:
            raise ValueError(str(error)) from None
        return claims


def _key_of(keys: jwt.PyJWKSet, token: str) -> Any:
    kid = jwt.get_unverified_header(token).get("kid")
    for key in keys.keys:
        if kid is None or key.key_id == kid:
            return key.key
    raise jwt.InvalidKeyError(f"no key {kid!r} in the JWKS")


@dataclass
class OAuthBearerServer:
    """OAUTHBEARER with ``validator``; the principal is ``User:<its principal claim>``."""

    validator: TokenValidator
    mechanism: str = "OAUTHBEARER"
    complete: bool = False
    principal: str | None = None
    expires_at_ms: int | None = None
    _refused: str | None = field(default=None, repr=False)

    def evaluate(self, token: bytes) -> bytes:
        if self._refused is not None:  # the client's \x01 after our error: the end
            raise SaslAuthenticationError(f"Authentication failed: {self._refused}")
        if self.complete:
            raise SaslAuthenticationError("Authentication failed: already authenticated")
        try:
            bearer = _bearer(token)
            claims = self.validator.claims(bearer)
            claim = self.validator.principal_claim
            subject = claims.get(claim)
            if not isinstance(subject, str) or not subject:
                raise ValueError(f"the token has no {claim!r} claim")
        except ValueError as error:
            self._refused = str(error)
            return _INVALID_TOKEN
        self.complete, self.principal = True, f"User:{subject}"
        exp = claims.get("exp")
        self.expires_at_ms = int(exp * 1000) if isinstance(exp, (int, float)) else None
        return b""


def _bearer(message: bytes) -> str:
    """The token of an OAUTHBEARER client first message (RFC 7628 §3.1)."""
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise ValueError("the client message is not UTF-8") from None
    header, sep, rest = text.partition("\x01")
    if not sep or not header.startswith(("n,", "y,")) or not rest.endswith("\x01\x01"):
        raise ValueError("not an OAUTHBEARER client first message")
    pairs = dict(kv.split("=", 1) for kv in rest[:-2].split("\x01") if "=" in kv)
    auth = pairs.get("auth", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise ValueError("no auth=Bearer <token> in the client message")
    return token.strip()


def _b64json(part: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        raise ValueError("a JWS part is not base64url JSON") from None
    if not isinstance(value, dict):
        raise ValueError("a JWS part is not a JSON object")
    return value


def _check_times(claims: Mapping[str, Any], now_ms: float, skew_ms: int) -> None:
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)):
        raise ValueError("the token has no exp (expiration) claim")
    if exp * 1000 + skew_ms <= now_ms:
        raise ValueError("the token expired")
    iat = claims.get("iat")
    if isinstance(iat, (int, float)) and iat * 1000 - skew_ms > now_ms:
        raise ValueError("the token was issued in the future")
