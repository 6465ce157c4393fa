"""An asyncio Kafka-protocol connection from one broker to another (Kafka's
``NetworkClient`` as a ``ReplicaFetcherThread`` or the transaction marker channel uses it).

Requests are kio request instances; their class says the API and version, so no ApiVersions
exchange happens (brokers of one cluster speak the same versions, as Kafka's inter-broker
protocol version makes them). Frames are encoded and decoded by :mod:`sluice.wire`
(:func:`~sluice.wire.encode_request`, :func:`~sluice.wire.decode_response`); a Fetch
response's ``records`` come out as ``bytes``: the batches exactly as the leader sent them.
Response frames are received by the broker's own :class:`~sluice.broker.framing.FrameProtocol`,
straight into a buffer of their own (a follower's megabyte-sized Fetch responses are not
copied through a ``StreamReader``'s buffer, which cost a quarter of a follower's CPU).

One request is in flight at a time (a lock orders concurrent callers), as Kafka's fetcher
sends one Fetch at a time to each leader. Every failure to talk — connection refused, reset,
closed, a timeout, an unreadable answer — raises :class:`BrokerConnectionError` and closes the
connection (an answer arriving late would otherwise be read as the next one's): the caller
connects again. Nothing here waits without a bound.

The connection is secured as the inter-broker listener says
(:class:`~sluice.broker.security.inter_broker.InterBrokerSecurity`): TLS verifying the other
broker's certificate and host name, then SaslHandshake v1 and SaslAuthenticate v2 with the
broker's own credentials (PLAIN or SCRAM). A refused authentication is a
:class:`BrokerConnectionError` whose reason says so and quotes the other broker's message. When
the other broker answers a session lifetime (KIP-368, ``connections.max.reauth.ms``), the
client re-authenticates on the same connection before the next request once 85 % of it has
passed, as Kafka's clients do.

Not thread-safe: used from one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from sluice.broker.framing import FrameProtocol
from sluice.broker.protocol.codec import MalformedRequestError
from sluice.broker.security.inter_broker import PLAINTEXT, InterBrokerSecurity
from sluice.errors import SluiceError
from sluice.wire import decode_response, encode_request

__all__ = ["BrokerClient", "BrokerConnectionError"]

_SIZE = struct.Struct(">i")
MAX_FRAME = 2**31 - 1
"""The largest response frame accepted (Kafka's int32 size prefix)."""
MIN_FRAME = 4
"""The smallest response frame: its correlation id."""
REAUTH_AT = 0.85
"""The part of a SASL session's lifetime after which the client re-authenticates."""


class BrokerConnectionError(SluiceError):
    """Another broker could not be reached or did not answer: refused, reset, timed out, or
    its answer was unreadable. The connection is closed; connect again to retry."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"broker at {address}: {reason}")
        self.address = address
        self.reason = reason


class BrokerClient:
    """One connection to one broker. Open with :meth:`connect`; :meth:`close` when done."""

    def __init__(
        self,
        conn: FrameProtocol,
        address: str,
        client_id: str,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self._conn = conn
        self.address = address
        self.client_id = client_id
        self.security = security
        self._correlation = 0
        self._lock = asyncio.Lock()
        self._closed = False
        self._reauthenticate_at: float | None = None
        """When (monotonic seconds) to re-authenticate before the next request (KIP-368)."""

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        client_id: str,
        timeout_s: float,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> BrokerClient:
        """Open a connection to ``host:port`` within ``timeout_s`` seconds, secured and
        authenticated as ``security`` says, or raise :class:`BrokerConnectionError`."""
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        context = security.ssl_context
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await asyncio.get_running_loop().create_connection(
                    lambda: FrameProtocol(
                        MAX_FRAME,
                        lambda _conn: None,
                        sendfile=False,
                        min_frame=MIN_FRAME,
                        what="response",
                    ),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                )
        except TimeoutError:
            raise BrokerConnectionError(
                address, f"connecting timed out after {timeout_s:g}s"
            ) from None
        except ssl.SSLError as exc:
            raise BrokerConnectionError(
                address, f"TLS handshake failed on listener {security.listener}: {exc}"
            ) from None
        except OSError as exc:
            raise BrokerConnectionError(address, f"cannot connect: {exc.strerror or exc}") from None
        client = cls(conn, address, client_id, security)
        if security.mechanism is not None:
            try:
                async with asyncio.timeout(timeout_s):
                    async with client._lock:
                        await client._authenticate()
            except TimeoutError:
                await client._abandon()
                raise BrokerConnectionError(
                    address, f"SASL authentication timed out after {timeout_s:g}s"
                ) from None
            except BrokerConnectionError:
                await client._abandon()
                raise
        return client

    async def _abandon(self) -> None:
        """Close a connection that never served (its TLS shutdown bounded by a second)."""
        self.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await self._conn.wait_closed()

    async def _authenticate(self) -> None:
        """SaslHandshake and SaslAuthenticate round trips with the broker's own credentials
        (the lock held); BrokerConnectionError (connection closed) when refused."""
        security = self.security
        assert security.mechanism is not None
        who = (
            f"as inter-broker user {security.username!r} with {security.mechanism} on "
            f"listener {security.listener}"
        )
        handshake = await self._exchange(
            SaslHandshakeRequest(mechanism=security.mechanism), "SaslHandshake", reauth=False
        )
        if handshake.error_code != ErrorCode.none:
            self.close()
            raise BrokerConnectionError(
                self.address,
                f"SASL handshake refused {who}: {handshake.error_code.name.upper()} (the broker "
                f"enables {', '.join(handshake.mechanisms) or 'no mechanism'})",
            )
        bearer = None
        if security.login is not None:
            try:
                bearer = await asyncio.to_thread(security.login.token)
            except ValueError as error:
                self.close()
                raise BrokerConnectionError(
                    self.address, f"SASL authentication failed {who}: {error}"
                ) from None
        sasl = security.sasl_client(bearer)
        token: bytes | None = sasl.first()
        lifetime_ms = 0
        while token is not None:
            answer = await self._exchange(
                SaslAuthenticateRequest(auth_bytes=token), "SaslAuthenticate", reauth=False
            )
            if answer.error_code != ErrorCode.none:
                self.close()
                raise BrokerConnectionError(
                    self.address,
                    f"SASL authentication failed {who}: {answer.error_code.name.upper()}: "
                    f"{answer.error_message}",
                )
            lifetime_ms = int(answer.session_lifetime.total_seconds() * 1000)
            try:
                token = sasl.answer(bytes(answer.auth_bytes))
            except ValueError as error:
                self.close()
                raise BrokerConnectionError(
                    self.address, f"SASL authentication failed {who}: {error}"
                ) from None
        self._reauthenticate_at = (
            time.monotonic() + lifetime_ms * REAUTH_AT / 1000 if lifetime_ms > 0 else None
        )

    @property
    def closed(self) -> bool:
        return self._closed

    async def call(self, request: Any, *, timeout_s: float) -> Any:
        """Send ``request`` (a kio request instance) and return the decoded response body,
        within ``timeout_s`` seconds (waiting for the connection's previous call included).
        Raises :class:`BrokerConnectionError` (and closes the connection) on any failure."""
        name = type(request).__name__
        try:
            async with asyncio.timeout(timeout_s):
                async with self._lock:
                    return await self._exchange(request, name)
        except TimeoutError:
            self.close()
            raise BrokerConnectionError(
                self.address, f"no answer to {name} within {timeout_s:g}s"
            ) from None

    async def _exchange(self, request: Any, name: str, *, reauth: bool = True) -> Any:
        if self._closed:
            raise BrokerConnectionError(self.address, f"connection closed before {name}")
        due = self._reauthenticate_at
        if reauth and due is not None and time.monotonic() >= due:
            await self._authenticate()
        self._correlation += 1
        correlation = self._correlation
        api_key, version = int(request.__api_key__), int(request.__version__)
        try:
            self._conn.write(
                encode_request(request, correlation_id=correlation, client_id=self.client_id)
            )
            await self._conn.drain()
            frame = await self._conn.next_frame()
        except MalformedRequestError as exc:  # a size prefix out of bounds
            self.close()
            raise BrokerConnectionError(self.address, f"answered {name} with {exc}") from None
        except ConnectionError:  # reset, or closed before a whole frame came
            self.close()
            raise BrokerConnectionError(
                self.address, f"closed the connection instead of answering {name}"
            ) from None
        except OSError as exc:
            self.close()
            raise BrokerConnectionError(
                self.address, f"connection failed during {name}: {exc.strerror or exc}"
            ) from None
        except BaseException:
            self.close()
            raise
        try:
            (answered,) = _SIZE.unpack_from(frame)  # every response header starts with it
            if answered != correlation:
                self.close()
                raise BrokerConnectionError(
                    self.address, f"answered request {answered} instead of {correlation}"
                )
            try:  # kio copies what it keeps (records too): the frame's buffer may be reused
                return decode_response(api_key, version, frame.toreadonly())[1]
            except Exception as exc:  # kio raises several types on bad bytes; all mean the same
                self.close()
                raise BrokerConnectionError(
                    self.address, f"unreadable answer to {name} v{version}: {exc}"
                ) from None
        finally:
            self._conn.done_with(frame)

    def close(self) -> None:
        """Close the connection (at once; closing twice does nothing)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(RuntimeError):  # the loop may be closing already
            self._conn.close()

    async def wait_closed(self) -> None:
        """Close and wait until the transport is gone."""
        self.close()
        await self._conn.wait_closed()
