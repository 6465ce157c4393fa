"""SaslHandshake (v0–1) and SaslAuthenticate (v0–2): a connection's SASL exchange, Kafka's
``SaslServerAuthenticator``.

On a SASL listener a client sends (after an optional ApiVersions) SaslHandshake naming its
mechanism — answered with the listener's enabled mechanisms, or UNSUPPORTED_SASL_MECHANISM and
the connection closed — then SaslAuthenticate requests carrying the mechanism's bytes, answered
with the server's (:mod:`sluice.broker.security.sasl`). A failure answers
SASL_AUTHENTICATION_FAILED with the mechanism's message, and the connection is closed
``connection.failed.authentication.delay.ms`` later. The server refuses every other request
before the exchange completes (:mod:`sluice.broker.server`). On a PLAINTEXT listener, or once
authenticated on a session that never ends, both APIs answer ILLEGAL_SASL_STATE, as Kafka's
``KafkaApis`` does.

Re-authentication (KIP-368): SaslAuthenticate v1+ answers ``session_lifetime_ms``, the least
of the mechanism's ``connections.max.reauth.ms`` on the listener and the time left on the
credential (an OAUTHBEARER token's ``exp``); 0 when neither limits it. A session that ends
may be renewed on the same connection with SaslHandshake (v1, the same mechanism) and
SaslAuthenticate again, at most once a second, as the same principal (else
SASL_AUTHENTICATION_FAILED and the connection closed); a request other than SaslHandshake
after the end closes the connection (:mod:`sluice.broker.server`), Kafka's behaviour.

A v0 SaslHandshake (clients before Kafka 1.0; librdkafka 2.0 needs v0 advertised) is followed by
raw tokens without Kafka's framing: the server reads those (:func:`evaluate`) and answers raw
tokens; a failure then closes the connection without an answer, as Kafka does.

SCRAM reads the credentials from :attr:`Broker.scram_credentials` (blocking: through
``run_blocking``) at each exchange's first message; OAUTHBEARER's validation runs there too (a
JWKS URL is fetched by the validator).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.protocol.api_keys import SASL_AUTHENTICATE, SASL_HANDSHAKE
from sluice.broker.protocol.codec import make
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.audit import audit_log
from sluice.broker.security.credential_store import Credentials
from sluice.broker.security.sasl import SaslAuthenticationError

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

log = logging.getLogger(__name__)

REAUTH_INTERVAL_S = 1.0
"""Kafka's least time between two re-authentications of a connection."""


async def handshake(
    _broker: Broker, request: SaslHandshakeRequest, client: Connection
) -> SaslHandshakeResponse:
    schema = response_schema(SASL_HANDSHAKE, request.__version__)
    sasl = client.listener.sasl if client.listener is not None else None
    if sasl is None or (client.mechanism is not None and not client.authenticated):
        return make(schema, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    mechanisms = sasl.mechanisms
    if client.authenticated:  # re-authentication (KIP-368), when the session can end
        now = time.monotonic()
        if (
            client.session_expires_at is None
            or request.__version__ == 0
            or (
                client.reauthenticated_at is not None
                and now - client.reauthenticated_at < REAUTH_INTERVAL_S
            )
        ):
            return make(schema, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
        if request.mechanism != client.mechanism:
            log.info(
                "refused re-authentication with %r from %s: the session is %s's",
                request.mechanism,
                client.client_host,
                client.mechanism,
            )
            client.close_after_ms = sasl.failed_delay_ms
            return make(
                schema, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=mechanisms
            )
        client.reauthenticated_at = now
        client.reauthenticating_from, client.principal = client.principal, None
        client.authenticator = None
        return make(schema, error_code=ErrorCode.none, mechanisms=mechanisms)
    if request.mechanism not in mechanisms:
        log.info(
            "refused SASL mechanism %r from %s (enabled: %s)",
            request.mechanism,
            client.client_host,
            ", ".join(mechanisms),
        )
        audit_log.authentication_failed(
            None, client.client_host.lstrip("/"), request.mechanism, "mechanism not enabled"
        )
        client.close_after_ms = sasl.failed_delay_ms
        return make(schema, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=mechanisms)
    client.mechanism = request.mechanism
    client.raw_tokens = request.__version__ == 0
    return make(schema, error_code=ErrorCode.none, mechanisms=mechanisms)


async def authenticate(
    broker: Broker, request: SaslAuthenticateRequest, client: Connection
) -> SaslAuthenticateResponse:
    schema = response_schema(SASL_AUTHENTICATE, request.__version__)
    sasl = client.listener.sasl if client.listener is not None else None
    if sasl is None or client.authenticated or client.mechanism is None:
        message = (
            "SaslAuthenticate request received after successful authentication"
            if client.authenticated
            else "Unexpected SaslAuthenticate request"
        )
        return make(
            schema, error_code=ErrorCode.illegal_sasl_state, error_message=message, auth_bytes=b""
        )
    try:
        answer = await evaluate(broker, client, bytes(request.auth_bytes))
    except SaslAuthenticationError as error:
        client.close_after_ms = sasl.failed_delay_ms
        return make(
            schema,
            error_code=ErrorCode.sasl_authentication_failed,
            error_message=str(error),
            auth_bytes=b"",
        )
    return make(
        schema,
        error_code=ErrorCode.none,
        error_message=None,
        auth_bytes=answer,
        session_lifetime=client.session_lifetime_ms if client.authenticated else 0,
    )


async def evaluate(broker: Broker, client: Connection, token: bytes) -> bytes:
    """One client token of the connection's exchange (SaslAuthenticate's bytes, or a raw
    token after a v0 SaslHandshake): the server's answer; sets :attr:`Connection.principal`
    when the exchange completes; SaslAuthenticationError when it fails (logged)."""
    assert client.listener is not None and client.listener.sasl is not None
    assert client.mechanism is not None
    sasl, mechanism = client.listener.sasl, client.mechanism
    server = client.authenticator
    try:
        if server is None:
            credentials: Credentials = {}
            if mechanism.startswith("SCRAM-"):
                credentials = await run_blocking(broker.scram_credentials.users)
            server = client.authenticator = sasl.server(
                mechanism, lambda user: credentials.get(user, {}).get(mechanism)
            )
        if mechanism == "OAUTHBEARER":
            answer = await run_blocking(server.evaluate, token)
        else:
            answer = server.evaluate(token)
    except SaslAuthenticationError as error:
        log.info(
            "failed authentication with %s from %s on listener %s: %s",
            mechanism,
            client.client_host,
            client.listener.name,
            error,
        )
        audit_log.authentication_failed(None, client.client_host.lstrip("/"), mechanism, str(error))
        raise
    if server.complete:
        previous = client.reauthenticating_from
        if previous is not None and server.principal != previous:
            log.info(
                "failed re-authentication with %s from %s on listener %s: %s became %s",
                mechanism,
                client.client_host,
                client.listener.name,
                previous,
                server.principal,
            )
            audit_log.authentication_failed(
                server.principal, client.client_host, mechanism, "principal changed"
            )
            raise SaslAuthenticationError(
                f"Cannot change principals during re-authentication from {previous}: "
                f"{server.principal}"
            )
        client.principal, client.reauthenticating_from = server.principal, None
        _start_session(client, sasl.max_reauth_ms.get(mechanism, 0), server.expires_at_ms)
    return answer


def _start_session(client: Connection, max_reauth_ms: int, expires_at_ms: int | None) -> None:
    """Kafka's ``calcCompletionTimesAndReturnSessionLifetimeMs``: the session lasts the least
    of ``connections.max.reauth.ms`` (when above 0) and the credential's time left."""
    now_ms = time.time() * 1000
    limits = [max_reauth_ms] if max_reauth_ms > 0 else []
    if expires_at_ms is not None:
        limits.append(max(0, int(expires_at_ms - now_ms)))
    if not limits:
        client.session_expires_at, client.session_lifetime_ms = None, 0
        return
    client.session_lifetime_ms = min(limits)
    client.session_expires_at = time.monotonic() + client.session_lifetime_ms / 1000
