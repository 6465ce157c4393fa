"""The server accepts connections as soon as it listens but answers requests only once the
broker says it is ready (:meth:`Server.serve_requests`): a cluster member listens before it
registers, and a client it answered before would see a cluster without it."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.config import BrokerConfig
from sluice.broker.server import Server
from tests.broker.conftest import decode_response, encode_request
from tests.conftest import free_port


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def test_requests_wait_until_the_broker_serves_them(tmp_path: Path) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig.from_properties({"log.dirs": str(tmp_path)}))
        broker.open()
        server = Server(broker)
        port = free_port()
        await server.start("127.0.0.1", port)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
            writer.write(encode_request(request, 7))
            await writer.drain()
            early = asyncio.ensure_future(_read_frame(reader))
            done, _ = await asyncio.wait({early}, timeout=0.5)
            assert not done, "answered before the broker was ready"
            server.serve_requests()
            correlation, body = decode_response(18, 3, await asyncio.wait_for(early, 10))
            assert (correlation, body.error_code) == (7, ErrorCode.none)
            writer.close()
        finally:
            await server.close()
            await broker.close()

    asyncio.run(main())
