"""A broker's own OAUTHBEARER login (its token for the other brokers), as Kafka's login
callback handlers make it.

- :class:`UnsecuredLogin` — Kafka's default ``OAuthBearerUnsecuredLoginCallbackHandler``, for
  development: an unsigned JWS (``alg: none``) naming ``unsecuredLoginStringClaim_sub``, valid
  ``unsecuredLoginLifetimeSeconds`` (3600), with ``unsecuredLoginListClaim_scope`` as its scope.
  Brokers with Kafka's unsecured validator accept it.
- :class:`ClientCredentialsLogin` — KIP-768's ``OAuthBearerLoginCallbackHandler``: the OAuth 2
  client credentials grant against ``sasl.oauthbearer.token.endpoint.url`` with the JAAS
  options ``clientId``, ``clientSecret`` and ``scope`` (HTTP basic authentication, a form body
  ``grant_type=client_credentials``), the ``access_token`` of the answer used until
  ``sasl.login.refresh.window.factor`` (0.8) of its lifetime has passed.

Both are called off the event loop (the endpoint is an HTTP round trip); the token's ``exp``
bounds the session, so the broker re-authenticates with a fresh token before it ends (KIP-368).

>>> login = UnsecuredLogin("broker", lifetime_s=60, clock=lambda: 1_700_000_000.0)
>>> header, payload, signature = login.token().split(".")
>>> signature, json.loads(base64.urlsafe_b64decode(payload + "=="))["exp"]
('', 1700000060)
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ClientCredentialsLogin", "TokenLogin", "UnsecuredLogin"]

REFRESH_WINDOW_FACTOR = 0.8
"""Kafka's ``sasl.login.refresh.window.factor``: a token is renewed past this share of its
lifetime."""


class TokenLogin(Protocol):
    """Where the broker's OAUTHBEARER token comes from."""

    def token(self) -> str:
        """A token valid now (ValueError saying why none could be had)."""


def _b64(value: dict[str, object]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True)
class UnsecuredLogin:
    """Kafka's unsecured login: an unsigned token for ``subject`` (see the module docstring)."""

    subject: str
    lifetime_s: int = 3600
    scope: tuple[str, ...] = ()
    clock: Callable[[], float] = field(default=time.time, repr=False)

    def token(self) -> str:
        now = int(self.clock())
        claims: dict[str, object] = {"sub": self.subject, "iat": now, "exp": now + self.lifetime_s}
        if self.scope:
            claims["scope"] = list(self.scope)
        return f"{_b64({'alg': 'none'})}.{_b64(claims)}."


class ClientCredentialsLogin:
    """KIP-768's login: tokens from an OAuth token endpoint (see the module docstring)."""

    def __init__(
        self,
        url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        context: ssl.SSLContext | None = None,
        timeout_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url, self.client_id = url, client_id
        self._secret, self._scope, self._context = client_secret, scope, context
        self._timeout_s, self._clock = timeout_s, clock
        self._lock = threading.Lock()
        self._cached: tuple[str, float] | None = None  # token, renew at (clock)

    def __repr__(self) -> str:
        return f"ClientCredentialsLogin(url={self.url!r}, client_id={self.client_id!r})"

    def token(self) -> str:
        with self._lock:
            if self._cached is not None and self._clock() < self._cached[1]:
                return self._cached[0]
            token, lifetime_s = self._fetch()
            self._cached = (token, self._clock() + lifetime_s * REFRESH_WINDOW_FACTOR)
            return token

    def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        quote = urllib.parse.quote
        basic = base64.b64encode(
            f"{quote(self.client_id, safe='')}:{quote(self._secret, safe='')}".encode()
        ).decode()
        request = urllib.request.Request(
            self.url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self._timeout_s, context=self._context
            ) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise ValueError(
                f"the token endpoint {self.url} refused client {self.client_id!r}: "
                f"HTTP {error.code}"
            ) from None
        except (OSError, ValueError) as error:
            raise ValueError(f"no token from {self.url}: {error}") from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise ValueError(f"the token endpoint {self.url} answered no access_token")
        expires_in = answer.get("expires_in")
        lifetime_s = float(expires_in) if isinstance(expires_in, (int, float)) else 3600.0
        return token, lifetime_s
