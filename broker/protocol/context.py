"""Who sent a request: what the group APIs report about members (client id and host), the
listener the connection came in on, and where its SASL authentication stands."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sluice.broker.security.listeners import Listener
    from sluice.broker.security.sasl import SaslServer


class Connection:
    """One client connection, as the handlers see it.

    On a SASL listener, :attr:`mechanism` is set by SaslHandshake (v0: :attr:`raw_tokens`),
    :attr:`authenticator` holds the exchange SaslAuthenticate drives, and :attr:`principal` is
    set once it completes (``User:ANONYMOUS`` elsewhere, Kafka's). :attr:`close_after_ms` set
    by a handler: the server sends the response, waits that long and closes the connection (a
    failed authentication, Kafka's ``connection.failed.authentication.delay.ms``).
    """

    __slots__ = (
        "authenticator",
        "client_host",
        "client_id",
        "close_after_ms",
        "listener",
        "mechanism",
        "principal",
        "raw_tokens",
    )

    def __init__(self, client_host: str, listener: Listener | None = None) -> None:
        self.client_host = client_host
        self.client_id: str | None = None
        self.listener = listener
        """The listener the connection came in on (None: in-process, as PLAINTEXT)."""
        self.mechanism: str | None = None
        self.authenticator: SaslServer | None = None
        self.principal: str | None = (
            None if listener is not None and listener.sasl is not None else "User:ANONYMOUS"
        )
        self.close_after_ms: int | None = None
        self.raw_tokens = False
        """After a v0 SaslHandshake: the client's next frames are raw SASL tokens, without
        Kafka's request header, answered with size-prefixed raw tokens (pre-KIP-152)."""

    @property
    def authenticated(self) -> bool:
        """Whether requests may be served: a SASL exchange completed, or none is required."""
        return self.principal is not None

    @property
    def advertised(self) -> tuple[str, int] | None:
        """The advertised endpoint of the connection's listener (None: the broker's own)."""
        return None if self.listener is None else self.listener.advertised
