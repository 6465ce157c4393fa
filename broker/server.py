"""The network layer: one asyncio connection handler per client, requests answered in order.

Kafka's framing: every request and response is a 4-byte big-endian size followed by that many
bytes. A connection's requests are handled one at a time, as Kafka does (it mutes a channel
until the response is sent), which gives the ordering guarantee; connections are concurrent.
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
"""

from __future__ import annotations

import asyncio
import functools
import logging
from time import perf_counter
from typing import Any

from sluice.broker.broker import Broker
from sluice.broker.framing import FrameProtocol
from sluice.broker.handlers import BY_KEY, METRIC_NAMES, SUPPORTED
from sluice.broker.handlers.api_versions import unsupported_version_response
from sluice.broker.metrics import RequestMetrics
from sluice.broker.protocol.api_keys import API_VERSIONS
from sluice.broker.protocol.codec import (
    MalformedRequestError,
    decode_request,
    encode_response,
    read_prefix,
)
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.fetch_response import FetchAnswer, OutgoingFrame

log = logging.getLogger(__name__)

_DRAIN_ABOVE = 1 << 20
"""Queued response bytes above which a connection waits for its client to read."""


class Server:
    """Accepts connections and dispatches their requests to the handlers."""

    def __init__(self, broker: Broker, *, sendfile: bool = True) -> None:
        self.broker = broker
        self.sendfile = sendfile
        """Send fetched segment bytes with ``os.sendfile`` on plaintext connections (else: read
        and written; see :meth:`FrameProtocol.send_frame`)."""
        self.max_request = int(broker.config["socket.request.max.bytes"])
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.requests = RequestMetrics(METRIC_NAMES)
        """Count and latency of the requests answered, per API (:mod:`sluice.broker.metrics`)."""

    @property
    def connection_count(self) -> int:
        """Client connections open now."""
        return len(self._connections)

    async def start(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: FrameProtocol(self.max_request, self._on_connect, sendfile=self.sendfile),
            host,
            port,
            reuse_address=True,
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def _on_connect(self, conn: FrameProtocol) -> None:
        task = asyncio.get_running_loop().create_task(self._run(conn))
        self._connections.add(task)
        task.add_done_callback(functools.partial(self._on_done, conn))

    def _on_done(self, conn: FrameProtocol, task: asyncio.Task[None]) -> None:
        """Close the connection however its task ended (even cancelled before it started)."""
        self._connections.discard(task)
        conn.close()

    async def _run(self, conn: FrameProtocol) -> None:
        peer = conn.peer
        try:
            await self._serve(conn, peer)
        except ConnectionError:  # the client went away (ConnectionClosedError among them)
            pass
        except MalformedRequestError as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection from %s after an unexpected error", peer)

    async def _serve(self, conn: FrameProtocol, peer: Any) -> None:
        client = Connection(f"/{peer[0]}" if isinstance(peer, tuple) else str(peer))
        while True:
            frame = await conn.next_frame()
            try:
                response = await self.handle(frame, client)
            finally:
                conn.done_with(frame)
            if response is None:
                continue
            if isinstance(response, OutgoingFrame):
                await conn.send_frame(response)
            else:
                conn.write(response)
            if conn.write_buffer_size() > _DRAIN_ABOVE:
                await conn.drain()

    async def handle(
        self, frame: bytes | memoryview, client: Connection
    ) -> bytes | OutgoingFrame | None:
        """Answer one request frame; ``None`` when no response is due (acks=0).

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
        if response is None:
            self.requests.record(prefix.api_key, perf_counter() - started)
            return None
        if isinstance(response, FetchAnswer):
            framed = response.frame(prefix.correlation_id)
            self.requests.record(prefix.api_key, perf_counter() - started)
            return framed
        encoded = encode_response(
            prefix.api_key, prefix.api_version, prefix.correlation_id, response
        )
        self.requests.record(prefix.api_key, perf_counter() - started)
        return encoded
