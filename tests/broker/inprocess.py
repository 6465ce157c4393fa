"""A broker answering requests in the test's own process: :class:`InProcessBroker`.

An API test that is about what a request gets back (not about sockets, framing, crashes or
restarts) need not start a process: this builds a real :class:`~sluice.broker.broker.Broker` on
a temporary data directory and its :class:`~sluice.broker.server.Server`, and hands each request
frame to :meth:`Server.handle <sluice.broker.server.Server.handle>` — the path every frame from
a socket takes (version check, decoding, the handler of the API table, encoding, the request
metrics). Requests are encoded and responses decoded with kio, exactly as
:class:`tests.broker.conftest.Wire` does over TCP.

The broker's event loop is an :class:`asyncio.Runner` of its own, running only while a request
is handled; the periodic housekeeping (retention, the cleaner, group timers) is not started.
Tests of framing, durability, housekeeping or real clients start the process
(``broker`` / ``broker_factory`` of ``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sluice.broker.broker import Broker
from sluice.broker.config import BrokerConfig
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.fetch_response import OutgoingFrame
from sluice.broker.server import Server
from tests.broker.conftest import decode_response, encode_request


class InProcessBroker:
    """A real broker and server on a private event loop; use as a context manager."""

    def __init__(self, data_dir: Path, **properties: str) -> None:
        config = BrokerConfig.from_properties({"log.dirs": str(data_dir), **properties})
        self._runner = asyncio.Runner()
        self.broker = Broker(config)
        self.server = Server(self.broker)
        self.client = Connection("/127.0.0.1")
        self._correlation = 0
        self.broker.open()

    def __enter__(self) -> InProcessBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the broker (flushes its logs) and the event loop."""
        try:
            self._runner.run(self.broker.close())
        finally:
            self._runner.close()

    def handle(self, frame: bytes) -> bytes | None:
        """What ``Server.handle`` answers to one request frame (without its size prefix); a
        response sent in parts (Fetch) is joined, its file regions read."""
        answer = self._runner.run(self._answer(bytearray(frame)))
        if isinstance(answer, OutgoingFrame):
            try:
                return answer.to_bytes()
            finally:
                answer.close()
        return answer

    async def _answer(self, frame: bytearray) -> bytes | OutgoingFrame | None:
        answer = await self.server.handle(frame, self.client)
        if isinstance(answer, asyncio.Future):  # a deferred response
            return await answer
        return answer

    def request(self, body: Any) -> Any:
        """Send a kio request, return the decoded response body."""
        self._correlation += 1
        answer = self.handle(encode_request(body, self._correlation)[4:])
        assert answer is not None, f"no response to {body}"
        correlation, response = decode_response(body.__api_key__, body.__version__, answer[4:])
        assert correlation == self._correlation, (
            f"expected correlation id {self._correlation}, got {correlation}"
        )
        return response
