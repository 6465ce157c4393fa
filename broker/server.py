"""The network layer: one asyncio connection handler per client, requests answered in order.

Kafka's framing: every request and response is a 4-byte big-endian size followed by that many
bytes. A connection's requests are handled one at a time, in order, as Kafka does (it mutes a
channel until the response is sent), which gives the ordering guarantee; connections are
concurrent. One departure: a Produce that waits for its in-sync replicas (acks=all in a
cluster) answers with a :class:`~sluice.broker.protocol.deferred.Deferred` response once its
appends are done, and the connection goes on reading the next Produce requests meanwhile —
appended in request order, answered in request order by a task of the connection's own
(:class:`_InOrder`), at most :data:`MAX_OWED` owed at once. Any other request waits until every
response owed before it is sent, so that only appends ever run ahead of an answer. Kafka's
replication round trip is short enough that it does not need this; Sluice's goes through three
Python processes, and one producer would otherwise commit one request per round trip.
Frames are received by :class:`~sluice.broker.framing.FrameProtocol` straight into their own
buffers (no copy between the socket and the handlers); each connection has one task that takes
its frames in turn, answers them and writes the responses, waiting for the client to read when
more than 1 MiB of responses is queued. A Fetch response is the exception to encoding a whole
response in memory: its records stay in the segment files, and the connection sends them from
there (:meth:`~sluice.broker.framing.FrameProtocol.send_frame`: ``os.sendfile`` on plaintext).

Bad input never takes the broker down: a frame whose size is below 8 (negative included) or
above ``socket.request.max.bytes``, an unknown API key or an unsupported version of an API
other than ApiVersions, or bytes that do not parse as the request they claim to be close that
connection (what Kafka does); ApiVersions above the supported maximum is answered with a v0
body and UNSUPPORTED_VERSION so that clients can fall back.

The server listens on each listener (:meth:`Server.start` once per
:class:`~sluice.broker.security.listeners.Listener`); a connection knows its listener. On a
SASL listener, a request other than ApiVersions and SaslHandshake (then SaslAuthenticate only)
before the authentication completes closes the connection, nothing served (Kafka's rule); after
a v0 SaslHandshake the client's frames are raw SASL tokens, answered with raw tokens; a
handler that sets :attr:`Connection.close_after_ms` (a failed authentication) gets its
response sent, then the connection closed that long after (:mod:`sluice.broker.handlers.sasl`).
A connection whose SASL session ended (KIP-368) is closed at its next request unless that
request is a SaslHandshake starting a re-authentication.

Client quotas (:mod:`sluice.broker.quotas`): when any is configured, each request is recorded
against its connection's quotas after its handler ran; one over its quota gets the throttle
time in its response's ``throttle_time_ms``, sent at once, and the connection reads nothing
more for that long (KIP-219's muting). With none configured this costs one attribute read.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import struct
import time
from collections import deque
from time import perf_counter
from typing import Any

from sluice.broker.broker import Broker
from sluice.broker.framing import COPY_BELOW, FrameProtocol
from sluice.broker.handlers import BY_KEY, METRIC_NAMES, SUPPORTED, fetch, sasl
from sluice.broker.handlers.api_versions import unsupported_version_response
from sluice.broker.metrics import RequestMetrics
from sluice.broker.protocol.api_keys import (
    API_VERSIONS,
    FETCH,
    PRODUCE,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
)
from sluice.broker.protocol.codec import (
    MalformedRequestError,
    RequestPrefix,
    decode_request,
    encode_response,
    read_prefix,
)
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.deferred import Deferred
from sluice.broker.protocol.fetch_response import FetchAnswer, OutgoingFrame
from sluice.broker.quotas.requests import EXEMPT, record_request, with_throttle
from sluice.broker.security.listeners import Listener
from sluice.broker.security.sasl import SaslAuthenticationError

log = logging.getLogger(__name__)

_DRAIN_ABOVE = 1 << 20
"""Queued response bytes above which a connection waits for its client to read."""
MAX_OWED = 100
"""Responses a connection may owe at once (deferred ones and those queued behind them) before
it stops reading requests until all are sent."""

Response = bytes | OutgoingFrame | None
"""An encoded response, a Fetch response's frame, or nothing (acks=0)."""


class Server:
    """Accepts connections and dispatches their requests to the handlers."""

    def __init__(
        self, broker: Broker, *, sendfile: bool = True, copy_below: int = COPY_BELOW
    ) -> None:
        self.broker = broker
        self.sendfile = sendfile
        """Send fetched segment bytes with ``os.sendfile`` on plaintext connections (else: read
        and written; see :meth:`FrameProtocol.send_frame`)..."""
        self.copy_below = copy_below
        """... except a response with fewer bytes of records than this, read and written."""
        self.max_request = int(broker.config["socket.request.max.bytes"])
        self._servers: list[asyncio.Server] = []
        """One per listener."""
        self._connections: set[asyncio.Task[None]] = set()
        self._serving = asyncio.Event()
        """Set by :meth:`serve_requests`: until then connections are accepted and wait."""
        self.requests = RequestMetrics()
        """Count and latency of the requests answered, per request name (Kafka's: FetchConsumer
        and FetchFollower apart; :mod:`sluice.broker.metrics`)."""

    @property
    def connection_count(self) -> int:
        """Client connections open now."""
        return len(self._connections)

    async def start(self, host: str, port: int, listener: Listener | None = None) -> None:
        """Listen on ``host:port``; connections there belong to ``listener`` (None: a
        PLAINTEXT listener that advertises the broker's own endpoint). Called once per
        listener."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: FrameProtocol(
                self.max_request,
                functools.partial(self._on_connect, listener),
                sendfile=self.sendfile,
                copy_below=self.copy_below,
            ),
            host,
            port,
            reuse_address=True,
            ssl=listener.tls.context if listener is not None and listener.tls else None,
        )
        self._servers.append(server)

    def serve_requests(self) -> None:
        """Start answering requests (Kafka's ``enableRequestProcessing``). The listeners are
        open before — a cluster member registers endpoints that already accept connections —
        but a client is served only once the broker is ready: a member that has not
        registered yet would answer Metadata without itself among the brokers."""
        self._serving.set()

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    def _on_connect(self, listener: Listener | None, conn: FrameProtocol) -> None:
        task = asyncio.get_running_loop().create_task(self._run(conn, listener))
        self._connections.add(task)
        task.add_done_callback(functools.partial(self._on_done, conn))

    def _on_done(self, conn: FrameProtocol, task: asyncio.Task[None]) -> None:
        """Close the connection however its task ended (even cancelled before it started)."""
        self._connections.discard(task)
        conn.close()

    async def _run(self, conn: FrameProtocol, listener: Listener | None) -> None:
        peer = conn.peer
        try:
            await self._serve(conn, peer, listener)
        except ConnectionError:  # the client went away (ConnectionClosedError among them)
            pass
        except MalformedRequestError as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection from %s after an unexpected error", peer)

    async def _serve(self, conn: FrameProtocol, peer: Any, listener: Listener | None) -> None:
        await self._serving.wait()
        client = Connection(f"/{peer[0]}" if isinstance(peer, tuple) else str(peer), listener)
        if listener is not None and listener.tls is not None and listener.sasl is None:
            assert conn.transport is not None  # an SSL listener: the certificate's principal
            try:
                client.principal = listener.tls.principal(
                    conn.transport.get_extra_info("ssl_object")
                )
            except ValueError as exc:  # no ssl.principal.mapping.rules applies
                log.info("closing connection from %s on listener %s: %s", peer, listener.name, exc)
                return
        in_order: _InOrder | None = None  # made at the first deferred response
        min_frame = conn.min_frame
        try:
            while True:
                frame = await conn.next_frame()
                if client.raw_tokens and not client.authenticated:
                    try:
                        if not await self._raw_token(conn, frame, client):
                            return
                    finally:
                        conn.done_with(frame)
                    if client.authenticated:
                        conn.min_frame = min_frame
                    continue
                if not client.authenticated and not _before_authentication(frame, client):
                    conn.done_with(frame)
                    return
                if client.session_expires_at is not None and _expired(frame, client):
                    conn.done_with(frame)
                    return
                if in_order is not None and (
                    len(in_order) >= MAX_OWED or read_prefix(frame).api_key != PRODUCE
                ):
                    await in_order.idle()
                try:
                    response = await self.handle(frame, client)
                finally:
                    conn.done_with(frame)
                if client.raw_tokens:  # raw SASL tokens may be shorter than a request header
                    conn.min_frame = 1
                if isinstance(response, asyncio.Future):
                    if in_order is None:
                        in_order = _InOrder(conn, peer)
                    in_order.add(response)
                elif in_order is not None and len(in_order):
                    in_order.add(_done(response))
                else:
                    await _send(conn, response)
                if client.throttle_ms:  # over a client quota: muted that long (KIP-219)
                    await asyncio.sleep(client.throttle_ms / 1000)
                    client.throttle_ms = 0
                if client.close_after_ms is not None:  # a failed authentication
                    await asyncio.sleep(client.close_after_ms / 1000)
                    return
        finally:
            if in_order is not None:
                in_order.close()

    async def _raw_token(
        self, conn: FrameProtocol, frame: bytes | memoryview, client: Connection
    ) -> bool:
        """A raw SASL token after a v0 SaslHandshake, answered with a size-prefixed raw token;
        False (after the failed-authentication delay) when the authentication failed."""
        try:
            answer = await sasl.evaluate(self.broker, client, bytes(frame))
        except SaslAuthenticationError:
            assert client.listener is not None and client.listener.sasl is not None
            await asyncio.sleep(client.listener.sasl.failed_delay_ms / 1000)
            return False
        conn.write(struct.pack(">i", len(answer)) + answer)
        return True

    async def handle(
        self, frame: bytes | memoryview, client: Connection
    ) -> Response | asyncio.Future[Response]:
        """Answer one request frame; ``None`` when no response is due (acks=0), a future of
        the response when the handler deferred it (:class:`Deferred`).

        A Produce request's big batches are views of ``frame``: nothing may keep them after
        this returns (the connection reuses the buffer for its next frame). A Fetch response
        comes as an :class:`OutgoingFrame` of parts holding its segment files' regions: the
        caller sends it (or calls its ``close``).
        """
        started = perf_counter()
        prefix = read_prefix(frame)
        spec = BY_KEY.get(prefix.api_key)
        if spec is None or not spec.serves(prefix.api_version):
            if prefix.api_key == API_VERSIONS:
                return unsupported_version_response(prefix.correlation_id, SUPPORTED)
            raise MalformedRequestError(
                f"unsupported API {prefix.api_key} version {prefix.api_version}"
            )
        header, request = decode_request(frame, prefix)
        client.client_id = header.client_id
        response = await spec.handler(self.broker, request, client)
        metric = METRIC_NAMES[prefix.api_key]
        if prefix.api_key == FETCH and fetch.replica_id(request) >= 0:
            metric = "FetchFollower"  # Kafka's name for a follower's replica fetches
        quotas = self.broker.client_quotas
        if quotas.enabled and metric != "FetchFollower" and prefix.api_key not in EXEMPT:
            client.throttle_ms = record_request(
                quotas, prefix.api_key, client.principal, client.client_id, len(frame),
                response, perf_counter() - started,
            )  # fmt: skip
            if isinstance(response, Deferred):
                return asyncio.ensure_future(
                    self._encode_later(prefix, response, metric, started, client.throttle_ms)
                )
            response = with_throttle(response, client.throttle_ms)
        if isinstance(response, Deferred):
            return asyncio.ensure_future(self._encode_later(prefix, response, metric, started))
        return self._encode(prefix, response, metric, started)

    async def _encode_later(
        self,
        prefix: RequestPrefix,
        deferred: Deferred[Any],
        metric: str,
        started: float,
        throttle_ms: int = 0,
    ) -> Response:
        answer = await deferred.answer
        if throttle_ms:
            answer = with_throttle(answer, throttle_ms)
        return self._encode(prefix, answer, metric, started)

    def _encode(
        self, prefix: RequestPrefix, response: Any, metric: str, started: float
    ) -> Response:
        """The response frame, once the request's time is recorded under ``metric``."""
        if response is None:
            encoded: Response = None
        elif isinstance(response, FetchAnswer):
            encoded = response.frame(prefix.correlation_id)
        else:
            encoded = encode_response(
                prefix.api_key, prefix.api_version, prefix.correlation_id, response
            )
        self.requests.record(metric, perf_counter() - started)
        return encoded


_BEFORE_HANDSHAKE = frozenset({API_VERSIONS, SASL_HANDSHAKE})


def _before_authentication(frame: bytes | memoryview, client: Connection) -> bool:
    """Whether a request may come before the connection's SASL authentication completes
    (Kafka's rule: ApiVersions and SaslHandshake, then SaslAuthenticate only); else the
    connection is closed, nothing served."""
    api_key = read_prefix(frame).api_key
    allowed = api_key == SASL_AUTHENTICATE if client.mechanism else api_key in _BEFORE_HANDSHAKE
    if not allowed:
        log.info(
            "closing connection from %s on SASL listener %s: API %d before authentication",
            client.client_host,
            client.listener.name if client.listener is not None else "-",
            api_key,
        )
    return allowed


def _expired(frame: bytes | memoryview, client: Connection) -> bool:
    """Whether the connection's SASL session ended (KIP-368) and ``frame`` does not start a
    re-authentication: then the connection is closed, nothing served (Kafka's rule)."""
    assert client.session_expires_at is not None
    if time.monotonic() < client.session_expires_at or not client.authenticated:
        return False
    if read_prefix(frame).api_key == SASL_HANDSHAKE:
        return False
    log.info(
        "closing connection from %s on listener %s: its SASL session of %s ended and was "
        "not renewed (connections.max.reauth.ms, or the credential expired)",
        client.client_host,
        client.listener.name if client.listener is not None else "-",
        client.principal,
    )
    return True


async def _send(conn: FrameProtocol, response: Response) -> None:
    if response is None:
        return
    if isinstance(response, OutgoingFrame):
        await conn.send_frame(response)
    else:
        conn.write(response)
    if conn.write_buffer_size() > _DRAIN_ABOVE:
        await conn.drain()


def _done(response: Response) -> asyncio.Future[Response]:
    future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
    future.set_result(response)
    return future


class _InOrder:
    """The responses one connection owes, sent in request order by a task of their own: a
    deferred one holds back those after it. If sending fails (the client went away, or a
    deferred answer raised), the connection is closed, which ends its reading too."""

    def __init__(self, conn: FrameProtocol, peer: Any) -> None:
        self._conn = conn
        self._peer = peer
        self._owed: deque[asyncio.Future[Response]] = deque()
        """Owed responses, the one being sent first."""
        self._more = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._failed = False
        self._task = asyncio.get_running_loop().create_task(self._send_in_order())
        self._task.add_done_callback(self._ended)

    def __len__(self) -> int:
        return len(self._owed)

    def add(self, response: asyncio.Future[Response]) -> None:
        self._owed.append(response)
        self._idle.clear()
        self._more.set()

    async def idle(self) -> None:
        """Wait until every owed response is sent."""
        await self._idle.wait()
        if self._failed:
            raise ConnectionResetError("the connection failed sending a response")

    def close(self) -> None:
        self._task.cancel()

    async def _send_in_order(self) -> None:
        while True:
            if not self._owed:
                self._idle.set()
                self._more.clear()
                await self._more.wait()
                continue
            await _send(self._conn, await self._owed[0])
            self._owed.popleft()

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._failed = True
        self._idle.set()
        for owed in self._owed:
            owed.cancel()
        if not task.cancelled():
            exc = task.exception()
            if exc is not None and not isinstance(exc, ConnectionError):
                log.error(
                    "closing connection from %s after an unexpected error",
                    self._peer,
                    exc_info=exc,
                )
        self._conn.close()
