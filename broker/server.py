"""The network layer: one asyncio connection handler per client, requests answered in order.

Kafka's framing: every request and response is a 4-byte big-endian size followed by that many
bytes. A connection's requests are handled one at a time, as Kafka does (it mutes a channel
until the response is sent), which gives the ordering guarantee; connections are concurrent.

Bad input never takes the broker down: a frame with a negative size or one above
``socket.request.max.bytes``, an unknown API key or an unsupported version of an API other than
ApiVersions, or bytes that do not parse as the request they claim to be close that connection
(what Kafka does); ApiVersions above the supported maximum is answered with a v0 body and
UNSUPPORTED_VERSION so that clients can fall back.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from time import perf_counter
from typing import Any

from sluice.broker.broker import Broker
from sluice.broker.handlers import HANDLERS
from sluice.broker.handlers.api_versions import unsupported_version_response
from sluice.broker.metrics import RequestMetrics
from sluice.broker.protocol.codec import (
    MalformedRequestError,
    decode_request,
    encode_response,
    read_prefix,
)
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.versions import API_VERSIONS, is_supported

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


class Server:
    """Accepts connections and dispatches their requests to the handlers."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.max_request = int(broker.config["socket.request.max.bytes"])
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self.requests = RequestMetrics()
        """Count and latency of the requests answered, per API (:mod:`sluice.broker.metrics`)."""

    @property
    def connection_count(self) -> int:
        """Client connections open now."""
        return len(self._connections)

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(
            self._on_connect, host, port, reuse_address=True, limit=1 << 20
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

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            await self._serve(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except MalformedRequestError as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection from %s after an unexpected error", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = Connection(f"/{peer[0]}" if isinstance(peer, tuple) else str(peer))
        while True:
            size = _SIZE.unpack(await reader.readexactly(4))[0]
            if size < 8 or size > self.max_request:
                raise MalformedRequestError(
                    f"request size {size} is outside [8, {self.max_request}]"
                )
            frame = await reader.readexactly(size)
            response = await self.handle(frame, client)
            if response is not None:
                writer.write(response)
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()

    async def handle(self, frame: bytes, client: Connection) -> bytes | None:
        """Answer one request frame; ``None`` when no response is due (acks=0)."""
        started = perf_counter()
        prefix = read_prefix(frame)
        if not is_supported(prefix.api_key, prefix.api_version):
            if prefix.api_key == API_VERSIONS:
                return unsupported_version_response(prefix.correlation_id)
            raise MalformedRequestError(
                f"unsupported API {prefix.api_key} version {prefix.api_version}"
            )
        header, request = decode_request(frame, prefix)
        client.client_id = header.client_id
        handler = HANDLERS[prefix.api_key]
        response = await handler(self.broker, request, client)
        if response is None:
            self.requests.record(prefix.api_key, perf_counter() - started)
            return None
        encoded = encode_response(
            prefix.api_key, prefix.api_version, prefix.correlation_id, response
        )
        self.requests.record(prefix.api_key, perf_counter() - started)
        return encoded
