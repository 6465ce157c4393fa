"""An asyncio Kafka-protocol connection from one broker to another (Kafka's
``NetworkClient`` as a ``ReplicaFetcherThread`` or the transaction marker channel uses it).

Requests are kio request instances; their class says the API and version, so no ApiVersions
exchange happens (brokers of one cluster speak the same versions, as Kafka's inter-broker
protocol version makes them). Frames are encoded and decoded by :mod:`sluice.wire`
(:func:`~sluice.wire.encode_request`, :func:`~sluice.wire.decode_response`); a Fetch
response's ``records`` come out as ``bytes``: the batches exactly as the leader sent them.

One request is in flight at a time (a lock orders concurrent callers), as Kafka's fetcher
sends one Fetch at a time to each leader. Every failure to talk — connection refused, reset,
closed, a timeout, an unreadable answer — raises :class:`BrokerConnectionError` and closes the
connection (an answer arriving late would otherwise be read as the next one's): the caller
connects again. Nothing here waits without a bound.

Not thread-safe: used from one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any

from sluice.errors import SluiceError
from sluice.wire import decode_response, encode_request

__all__ = ["BrokerClient", "BrokerConnectionError"]

_SIZE = struct.Struct(">i")
MAX_FRAME = 2**31 - 1
"""The largest response frame accepted (Kafka's int32 size prefix)."""


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
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        address: str,
        client_id: str,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.address = address
        self.client_id = client_id
        self._correlation = 0
        self._lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def connect(
        cls, host: str, port: int, *, client_id: str, timeout_s: float
    ) -> BrokerClient:
        """Open a connection to ``host:port`` within ``timeout_s`` seconds, or raise
        :class:`BrokerConnectionError`."""
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            raise BrokerConnectionError(
                address, f"connecting timed out after {timeout_s:g}s"
            ) from None
        except OSError as exc:
            raise BrokerConnectionError(address, f"cannot connect: {exc.strerror or exc}") from None
        return cls(reader, writer, address, client_id)

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

    async def _exchange(self, request: Any, name: str) -> Any:
        if self._closed:
            raise BrokerConnectionError(self.address, f"connection closed before {name}")
        self._correlation += 1
        correlation = self._correlation
        api_key, version = int(request.__api_key__), int(request.__version__)
        try:
            self._writer.write(
                encode_request(request, correlation_id=correlation, client_id=self.client_id)
            )
            await self._writer.drain()
            (size,) = _SIZE.unpack(await self._reader.readexactly(4))
            if not 4 <= size <= MAX_FRAME:
                raise BrokerConnectionError(
                    self.address, f"answered {name} with a frame of {size} bytes"
                )
            frame = await self._reader.readexactly(size)
        except asyncio.IncompleteReadError:
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
        (answered,) = _SIZE.unpack_from(frame)  # every response header starts with it
        if answered != correlation:
            self.close()
            raise BrokerConnectionError(
                self.address, f"answered request {answered} instead of {correlation}"
            )
        try:
            return decode_response(api_key, version, frame)[1]
        except Exception as exc:  # kio raises several types on bad bytes; all mean the same
            self.close()
            raise BrokerConnectionError(
                self.address, f"unreadable answer to {name} v{version}: {exc}"
            ) from None

    def close(self) -> None:
        """Close the connection (at once; closing twice does nothing)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(RuntimeError):  # the loop may be closing already
            self._writer.close()

    async def wait_closed(self) -> None:
        """Close and wait until the transport is gone."""
        self.close()
        with contextlib.suppress(OSError, RuntimeError):
            await self._writer.wait_closed()
