"""The inter-broker client (:mod:`sluice.broker.replication.client`) against a real broker process,
and against loopback servers that fail in each way a broker can: refusing, never answering,
closing, sending bytes that are no answer. Every failure is a :class:`BrokerConnectionError`
within the timeout, never a hang."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.errors import ErrorCode

from sluice.broker.records.batch import iter_headers
from sluice.broker.replication.client import BrokerClient, BrokerConnectionError
from tests.broker.conftest import Wire, produce_values
from tests.conftest import BrokerProcess, create_topic, free_port
from tests.replication.fixtures import fetch_request

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 10.0


API_VERSIONS = api_versions_v3.ApiVersionsRequest(
    client_software_name="sluice-tests", client_software_version="1"
)


@asynccontextmanager
async def server(
    on_request: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[int]:
    """A loopback server handling each connection with ``on_request`` and then holding it
    open until the server stops; yields its port."""
    stopping = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        try:
            await on_request(reader, writer)
            await stopping.wait()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went first
        finally:
            writer.close()

    listening = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        stopping.set()
        await asyncio.wait_for(asyncio.gather(*handlers), TIMEOUT)
        listening.close()
        await listening.wait_closed()


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def test_calls_a_real_broker_and_gets_records_as_the_leader_sent_them(
    broker: BrokerProcess,
) -> None:
    topic = create_topic(broker.bootstrap)
    produce_values(broker.bootstrap, topic, [b"a", b"b", b"c"], one_batch_each=True)
    with Wire(broker.bootstrap) as wire:
        expected = wire.request(fetch_request(topic, 0)).responses[0].partitions[0].records

    async def main() -> None:
        client = await BrokerClient.connect(
            "127.0.0.1", broker.port, client_id="test", timeout_s=TIMEOUT
        )
        try:
            versions = await client.call(API_VERSIONS, timeout_s=TIMEOUT)
            assert versions.error_code == ErrorCode.none and versions.api_keys
            answer = await client.call(fetch_request(topic, 0, replica_id=1), timeout_s=TIMEOUT)
            (partition,) = answer.responses[0].partitions
            assert isinstance(partition.records, bytes)
            assert partition.records == expected
            assert [h.base_offset for h in iter_headers(partition.records)] == [0, 1, 2]
            # calls from several tasks take turns on the one connection
            answers = await asyncio.gather(
                *(
                    client.call(fetch_request(topic, offset), timeout_s=TIMEOUT)
                    for offset in (0, 1, 2)
                )
            )
            firsts = [
                next(iter_headers(a.responses[0].partitions[0].records)).base_offset
                for a in answers
            ]
            assert firsts == [0, 1, 2]
        finally:
            await client.wait_closed()
        assert client.closed

    asyncio.run(main())


def test_a_refused_connection_is_an_error_at_once() -> None:
    port = free_port()  # nothing listens there

    async def main() -> None:
        with pytest.raises(BrokerConnectionError, match=f"127.0.0.1:{port}: cannot connect"):
            await BrokerClient.connect("127.0.0.1", port, client_id="test", timeout_s=TIMEOUT)

    asyncio.run(main())


def test_no_answer_times_out_and_closes_the_connection() -> None:
    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)

    async def main() -> None:
        async with server(never_answer) as port:
            client = await BrokerClient.connect(
                "127.0.0.1", port, client_id="test", timeout_s=TIMEOUT
            )
            with pytest.raises(BrokerConnectionError, match="no answer to ApiVersionsRequest"):
                await client.call(API_VERSIONS, timeout_s=0.5)
            assert client.closed
            with pytest.raises(BrokerConnectionError, match="connection closed"):
                await client.call(API_VERSIONS, timeout_s=TIMEOUT)

    asyncio.run(main())


def test_a_connection_closed_instead_of_an_answer_is_an_error() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.close()

    async def main() -> None:
        async with server(hang_up) as port:
            client = await BrokerClient.connect(
                "127.0.0.1", port, client_id="test", timeout_s=TIMEOUT
            )
            with pytest.raises(BrokerConnectionError, match="closed the connection instead"):
                await client.call(API_VERSIONS, timeout_s=TIMEOUT)
            assert client.closed

    asyncio.run(main())


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (struct.pack(">ii", 6, 1) + b"\xff\xff", "unreadable answer to ApiVersionsRequest v3"),
        (struct.pack(">ii", 8, 99) + b"\0\0\0\0", "answered request 99 instead of 1"),
        (struct.pack(">i", -5), "response size -5 is outside"),
    ],
    ids=["garbage", "wrong-correlation-id", "negative-size"],
)
def test_bytes_that_are_no_answer_are_an_error(answer: bytes, error: str) -> None:
    async def babble(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(answer)
        await writer.drain()

    async def main() -> None:
        async with server(babble) as port:
            client = await BrokerClient.connect(
                "127.0.0.1", port, client_id="test", timeout_s=TIMEOUT
            )
            with pytest.raises(BrokerConnectionError, match=error):
                await client.call(API_VERSIONS, timeout_s=TIMEOUT)
            assert client.closed

    asyncio.run(main())


def test_a_broker_that_stops_fails_the_call_and_a_new_connection_works_after_it_restarts(
    broker: BrokerProcess,
) -> None:
    async def call_once() -> None:
        client = await BrokerClient.connect(
            "127.0.0.1", broker.port, client_id="test", timeout_s=TIMEOUT
        )
        try:
            assert (await client.call(API_VERSIONS, timeout_s=TIMEOUT)).error_code == 0
        finally:
            await client.wait_closed()

    async def main() -> None:
        client = await BrokerClient.connect(
            "127.0.0.1", broker.port, client_id="test", timeout_s=TIMEOUT
        )
        try:
            await client.call(API_VERSIONS, timeout_s=TIMEOUT)
            await asyncio.to_thread(broker.stop)
            with pytest.raises(BrokerConnectionError):
                await client.call(API_VERSIONS, timeout_s=TIMEOUT)
            with pytest.raises(BrokerConnectionError, match="cannot connect"):
                await call_once()
            await asyncio.to_thread(broker.start)
            await call_once()
        finally:
            await client.wait_closed()

    asyncio.run(main())
