"""Fetch responses over a real socket, sent both ways: ``os.sendfile`` and read-then-write.

The connection sends a Fetch response's records from the segment files with ``os.sendfile`` on
a plaintext socket, or reads them and writes them (the path of transports without a socket, TLS
later, and of small responses: below ``COPY_BELOW`` bytes of records). The same tests run over
every way (the ``fetch_broker`` fixture is parametrized): a real
:class:`~sluice.broker.server.Server` with ``sendfile`` for every response, for none, and for
the large ones only (the broker process's default), on a loopback port, in a thread of this
process with its own uvloop loop, read by real clients over TCP.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvloop
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.index import load_request_schema
from kio.schema.types import BrokerId

from sluice.broker.broker import Broker
from sluice.broker.config import BrokerConfig
from sluice.broker.framing import COPY_BELOW
from sluice.broker.protocol.api_keys import FETCH, PRODUCE
from sluice.broker.protocol.codec import make, nested
from sluice.broker.server import Server
from tests.broker.conftest import Wire, create_topic, decode_response, encode_request, make_batch
from tests.conftest import free_port

pytestmark = pytest.mark.timeout(120)


class ThreadBroker:
    """A broker and its server on a loopback port, run by a thread's own event loop."""

    def __init__(self, data_dir: Path, sendfile: bool, copy_below: int) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.config = BrokerConfig.from_properties(
            {"log.dirs": str(data_dir), "listeners": f"PLAINTEXT://{self.bootstrap}"}
        )
        self.sendfile = sendfile
        self.copy_below = copy_below
        self.server: Server | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fetch-broker", daemon=True)

    def start(self) -> ThreadBroker:
        self._thread.start()
        assert self._ready.wait(30), "the broker thread did not start within 30 s"
        if self._failure is not None:
            raise self._failure
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "the broker thread did not stop within 30 s"

    def _run(self) -> None:
        try:
            uvloop.run(self._main())
        except BaseException as exc:  # seen by start() or the test through the server's state
            self._failure = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        broker = Broker(self.config)
        broker.open()
        self.server = Server(broker, sendfile=self.sendfile, copy_below=self.copy_below)
        try:
            await self.server.start("127.0.0.1", self.port)
            self.server.serve_requests()
            self._ready.set()
            await self._stop.wait()
        finally:
            await self.server.close()
            await broker.close()


@pytest.fixture(
    params=[(True, 0), (False, 0), (True, COPY_BELOW)],
    ids=["sendfile", "read-and-write", "sendfile-from-64KiB"],
)
def fetch_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ThreadBroker]:
    """Every response by ``sendfile``; every one read and written; and the broker's default:
    the small ones read and written, the others by ``sendfile``."""
    sendfile, copy_below = request.param
    broker = ThreadBroker(tmp_path / "data", sendfile=sendfile, copy_below=copy_below).start()
    try:
        yield broker
    finally:
        broker.stop()


def _fetch(
    version: int,
    topic: str,
    offsets: dict[int, int],
    *,
    max_bytes: int = 50 << 20,
    partition_max_bytes: int = 10 << 20,
) -> Any:
    """A Fetch request (by topic name: versions below 13) that does not wait."""
    schema = load_request_schema(FETCH, version)
    partitions = tuple(
        make(
            nested(schema, "topics", "partitions"),
            partition=p,
            fetch_offset=offset,
            partition_max_bytes=partition_max_bytes,
            current_leader_epoch=-1,
            last_fetched_epoch=-1,
            log_start_offset=-1,
        )
        for p, offset in offsets.items()
    )
    return make(
        schema,
        replica_id=BrokerId(-1),
        max_wait=0,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(make(nested(schema, "topics"), topic=topic, partitions=partitions),),
        forgotten_topics_data=(),
        rack_id="",
    )


def _produce(wire: Wire, topic: str, partition: int, batch: bytes) -> None:
    """One batch, acks=all, as a Produce request of its own (one batch in the log)."""
    schema = load_request_schema(PRODUCE, 3)
    data = make(nested(schema, "topic_data", "partition_data"), index=partition, records=batch)
    answer = wire.request(
        make(
            schema,
            transactional_id=None,
            acks=-1,
            timeout=10_000,
            topic_data=(make(nested(schema, "topic_data"), name=topic, partition_data=(data,)),),
        )
    )
    code = answer.responses[0].partition_responses[0].error_code
    assert code == 0, f"produce to {topic}-{partition} failed with error {code}"


def _values(count: int, size: int, tag: int) -> list[bytes]:
    return [f"{tag}:{i}:".encode().ljust(size, b"v") for i in range(count)]


def _batches_of(records: bytes) -> list[tuple[int, int]]:
    """``(base offset, record count)`` of each v2 batch in a fetched records field."""
    out, at = [], 0
    while at < len(records):
        base = int.from_bytes(records[at : at + 8], "big")
        length = int.from_bytes(records[at + 8 : at + 12], "big")
        count = int.from_bytes(records[at + 57 : at + 61], "big")
        out.append((base, count))
        at += 12 + length
    assert at == len(records), f"the records end inside a batch ({at} != {len(records)})"
    return out


def test_a_large_topic_read_by_librdkafka_with_big_fetches(fetch_broker: ThreadBroker) -> None:
    """~12 MB in ~1 MB batches read with 10 MB fetches (responses larger than the socket's
    buffers: sent in many pieces, waiting for the client), every value in order."""
    create_topic(fetch_broker.bootstrap, "big")
    values = _values(120_000, 100, 0)
    with Wire(fetch_broker.bootstrap) as wire:
        for start in range(0, len(values), 9_000):
            _produce(wire, "big", 0, make_batch(values[start : start + 9_000]))
    consumer = Consumer(
        {
            "bootstrap.servers": fetch_broker.bootstrap,
            "group.id": "fetch-paths",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.min.messages": 1_000_000,
        }
    )
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition("big", 0, 0)])
        deadline = time.monotonic() + 60
        while len(got) < len(values) and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, timeout=0.5):
                assert msg.error() is None, f"consume error: {msg.error()}"
                got.append(msg.value())
    finally:
        consumer.close()
    assert len(got) == len(values), f"expected {len(values)} records, got {len(got)}"
    assert got == values, "the values read differ from those written"


@pytest.mark.parametrize("version", [4, 11, 12])
def test_limits_and_many_partitions_in_one_response(
    fetch_broker: ThreadBroker, version: int
) -> None:
    """Several partitions' records in one response (each from its own file region), the
    per-partition and response limits at batch boundaries, and the first batch whole even when
    larger than both (KIP-74)."""
    create_topic(fetch_broker.bootstrap, "limits", partitions=3)
    with Wire(fetch_broker.bootstrap) as wire:
        for partition in range(3):
            for batch in range(4):
                values = _values(100, 200, partition * 10 + batch)  # ~21 KB per batch
                _produce(wire, "limits", partition, make_batch(values))
        everything = wire.request(_fetch(version, "limits", {0: 0, 1: 0, 2: 0}))
        sizes = []
        for answer in everything.responses[0].partitions:
            assert answer.error_code == 0 and answer.high_watermark == 400
            assert _batches_of(answer.records) == [(0, 100), (100, 100), (200, 100), (300, 100)]
            sizes.append(len(answer.records))
        batch = sizes[0] // 4

        limited = wire.request(
            _fetch(
                version,
                "limits",
                {0: 150, 1: 0, 2: 0},
                max_bytes=3 * batch,
                partition_max_bytes=2 * batch,
            )
        )
        parts = limited.responses[0].partitions
        # partition 0 from the batch holding offset 150: two batches fit its limit
        assert _batches_of(parts[0].records) == [(100, 100), (200, 100)]
        # partition 1 gets what is left of the response's limit: one batch; partition 2 none
        assert _batches_of(parts[1].records) == [(0, 100)]
        assert parts[2].records == b"" and parts[2].error_code == 0

        tiny = wire.request(_fetch(version, "limits", {1: 0, 2: 399}, max_bytes=10))
        first, second = tiny.responses[0].partitions
        assert _batches_of(first.records) == [(0, 100)], "the first batch comes whole (KIP-74)"
        assert second.records == b"", "only the response's first batch may pass the limit"

        past = wire.request(_fetch(version, "limits", {0: 400, 1: 401}))
        at_end, beyond = past.responses[0].partitions
        assert at_end.error_code == 0 and at_end.records == b""
        assert beyond.error_code == 1, "OFFSET_OUT_OF_RANGE past the log end"


def test_responses_stay_in_order_with_other_requests(fetch_broker: ThreadBroker) -> None:
    """Pipelined requests (fetches between metadata requests) answered in order: a response
    sent from files never overtakes or interleaves with one written by the transport."""
    create_topic(fetch_broker.bootstrap, "order")
    with Wire(fetch_broker.bootstrap) as wire:
        for batch in range(6):
            _produce(wire, "order", 0, make_batch(_values(5_000, 100, batch)))
        metadata = load_request_schema(3, 1)
        fetch = _fetch(11, "order", {0: 0})
        requests = []
        for i in range(12):
            body = fetch if i % 2 == 0 else make(metadata, topics=None)
            requests.append(body)
            wire.send(encode_request(body, 100 + i))
        for i, body in enumerate(requests):
            payload = wire.read_frame()
            assert payload is not None, f"the broker closed before answering request {i}"
            correlation, answer = decode_response(body.__api_key__, body.__version__, payload)
            assert correlation == 100 + i, f"expected answer {100 + i}, got {correlation}"
            if i % 2 == 0:
                records = answer.responses[0].partitions[0].records
                assert sum(count for _, count in _batches_of(records)) == 30_000


def test_a_client_gone_mid_response_costs_the_broker_nothing(fetch_broker: ThreadBroker) -> None:
    """A client that closes while a large response is being sent: the connection ends, the
    file regions are closed (no descriptor leaks) and other clients are served."""
    create_topic(fetch_broker.bootstrap, "gone")
    with Wire(fetch_broker.bootstrap) as wire:
        for batch in range(10):
            _produce(wire, "gone", 0, make_batch(_values(9_000, 100, batch)))
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        sock = socket.create_connection(("127.0.0.1", fetch_broker.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(encode_request(_fetch(11, "gone", {0: 0}), 1))
        sock.recv(1000)  # the response has started
        sock.close()
    deadline = time.monotonic() + 10
    server = fetch_broker.server
    assert server is not None
    while server.connection_count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.connection_count == 0, "the broker kept a connection of a client gone"
    assert len(os.listdir("/proc/self/fd")) <= before, "file descriptors leaked"
    with Wire(fetch_broker.bootstrap) as wire:
        answer = wire.request(_fetch(11, "gone", {0: 0}, partition_max_bytes=1))
        assert _batches_of(answer.responses[0].partitions[0].records) == [(0, 9_000)]


def test_a_segment_deleted_while_its_bytes_are_being_sent(fetch_broker: ThreadBroker) -> None:
    """A response waiting for a slow client keeps its bytes: the segment it reads is deleted
    (DeleteRecords, files removed at once) before the client reads, and the client still gets
    every byte of the response as it was."""
    create_topic(
        fetch_broker.bootstrap,
        "deleted",
        config={"segment.bytes": str(6 << 20), "file.delete.delay.ms": "0"},
    )
    with Wire(fetch_broker.bootstrap) as wire:
        for batch in range(14):  # ~860 KB each: two full segments and the active one
            _produce(wire, "deleted", 0, make_batch(_values(8_000, 100, batch)))
    slow = socket.create_connection(("127.0.0.1", fetch_broker.port))
    try:
        slow.sendall(encode_request(_fetch(11, "deleted", {0: 0}), 1))
        # ~6 MB: more than the sockets' buffers hold while the client does not read, so the
        # broker has sent what they take and waits for the client with the rest
        time.sleep(0.3)
        admin = AdminClient({"bootstrap.servers": fetch_broker.bootstrap})
        futures = admin.delete_records([TopicPartition("deleted", 0, 13 * 8_000)])
        low = next(iter(futures.values())).result(timeout=20)
        assert low.low_watermark == 13 * 8_000, f"expected the log to start at 104000: {low}"
        slow.settimeout(30)
        wire = Wire.__new__(Wire)  # read the response from this socket
        wire.sock = slow
        payload = wire.read_frame()
        assert payload is not None, "the broker closed the connection instead of answering"
    finally:
        slow.close()
    _, answer = decode_response(FETCH, 11, payload)
    records = answer.responses[0].partitions[0].records
    batches = _batches_of(records)
    assert batches[0] == (0, 8_000) and len(batches) >= 6, f"got batches {batches}"
    assert all(b == (i * 8_000, 8_000) for i, b in enumerate(batches)), batches
