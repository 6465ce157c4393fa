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

    KIP-368: :attr:`session_expires_at` (``time.monotonic()`` seconds) is when the session
    ends unless the client re-authenticates (SaslHandshake and SaslAuthenticate again on the
    connection; :attr:`reauthenticating_from` holds the principal meanwhile, which must not
    change); None: it never ends.
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
        "reauthenticated_at",
        "reauthenticating_from",
        "session_expires_at",
        "session_lifetime_ms",
        "throttle_ms",
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
        self.session_expires_at: float | None = None
        self.session_lifetime_ms = 0
        """What the last SaslAuthenticate answered as ``session_lifetime_ms``."""
        self.reauthenticated_at: float | None = None
        """When the last re-authentication started (at most one a second, Kafka's rule)."""
        self.reauthenticating_from: str | None = None
        self.throttle_ms = 0
        """Set by the server when a request exceeded a client quota: it reads nothing more
        from the connection for that long after the response (KIP-219's muting)."""

    @property
    def authenticated(self) -> bool:
        """Whether requests may be served: a SASL exchange completed, or none is required."""
        return self.principal is not None

    @property
    def listener_name(self) -> str | None:
        """The name of the connection's listener (None: in-process)."""
        return None if self.listener is None else self.listener.name

    @property
    def advertised(self) -> tuple[str, int] | None:
        """The advertised endpoint of the connection's listener (None: the broker's own)."""
        return None if self.listener is None else self.listener.advertised
