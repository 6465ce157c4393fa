"""SaslHandshake (v0–1) and SaslAuthenticate (v0–2): a connection's SASL exchange, Kafka's
``SaslServerAuthenticator``.

On a SASL listener a client sends (after an optional ApiVersions) SaslHandshake naming its
mechanism — answered with the listener's enabled mechanisms, or UNSUPPORTED_SASL_MECHANISM and
the connection closed — then SaslAuthenticate requests carrying the mechanism's bytes, answered
with the server's (:mod:`sluice.broker.security.sasl`). A failure answers
SASL_AUTHENTICATION_FAILED with the mechanism's message, and the connection is closed
``connection.failed.authentication.delay.ms`` later. The server refuses every other request
before the exchange completes (:mod:`sluice.broker.server`). On a PLAINTEXT listener, or once
authenticated (no re-authentication: ``connections.max.reauth.ms`` is 0), both APIs answer
ILLEGAL_SASL_STATE, as Kafka's ``KafkaApis`` does; ``session_lifetime_ms`` is 0.

A v0 SaslHandshake (clients before Kafka 1.0; librdkafka 2.0 needs v0 advertised) is followed by
raw tokens without Kafka's framing: the server reads those (:func:`evaluate`) and answers raw
tokens; a failure then closes the connection without an answer, as Kafka does.

SCRAM reads the credentials from :attr:`Broker.scram_credentials` (blocking: through
``run_blocking``) at each exchange's first message; OAUTHBEARER's validation runs there too (a
JWKS URL is fetched by the validator).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.protocol.api_keys import SASL_AUTHENTICATE, SASL_HANDSHAKE
from sluice.broker.protocol.codec import make
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
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


async def handshake(
    _broker: Broker, request: SaslHandshakeRequest, client: Connection
) -> SaslHandshakeResponse:
    schema = response_schema(SASL_HANDSHAKE, request.__version__)
    sasl = client.listener.sasl if client.listener is not None else None
    if sasl is None or client.authenticated or client.mechanism is not None:
        return make(schema, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    mechanisms = sasl.mechanisms
    if request.mechanism not in mechanisms:
        log.info(
            "refused SASL mechanism %r from %s (enabled: %s)",
            request.mechanism,
            client.client_host,
            ", ".join(mechanisms),
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
    return make(schema, error_code=ErrorCode.none, error_message=None, auth_bytes=answer)


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
        raise
    if server.complete:
        client.principal = server.principal
    return answer
