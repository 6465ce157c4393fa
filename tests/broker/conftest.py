"""Helpers of the broker integration tests: raw Kafka requests, record batches, real clients.

The tests import them (``from tests.broker.conftest import Wire``): :class:`Wire` speaks the
protocol over a bare socket (kio message classes; hand-made frames when the point is a bad
frame), :func:`make_batch` builds v2 record batches, and :func:`produce_values` /
:func:`read_partition` go through confluent-kafka, the client the rest of Sluice uses. The
broker process itself comes from the ``broker`` / ``broker_factory`` fixtures of
``tests/conftest.py``; the ``in_process_broker`` fixture gives a broker answering in the test's own
process (:mod:`tests.broker.inprocess`), for API tests that need no socket.
"""

from __future__ import annotations

import io
import socket
import struct
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from sluice.broker.records.codec import Record, encode_batch
from tests.conftest import BrokerProcess, free_port

if TYPE_CHECKING:
    from tests.broker.inprocess import InProcessBroker

_SIZE = struct.Struct(">i")


def encode_request(body: Any, correlation_id: int, client_id: str | None = "sluice-tests") -> bytes:
    """A whole request frame (size prefix included) for a kio request instance."""
    header_cls = body.__header_schema__
    header = header_cls(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(type(body))(buf, body)
    payload = buf.getvalue()
    return _SIZE.pack(len(payload)) + payload


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, Any]:
    """``(correlation_id, body)`` of a response frame without its size prefix."""
    schema = load_response_schema(api_key, version)
    header, offset = entity_reader(schema.__header_schema__)(payload, 0)
    body, _ = entity_reader(schema)(payload, offset)
    return header.correlation_id, body


class Wire:
    """One raw client connection to a broker."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response frame (without its size), ``None`` if the broker closed."""
        head = self._read_exactly(4)
        if head is None:
            return None
        (size,) = _SIZE.unpack(head)
        assert 0 <= size < 1 << 30, f"response size prefix {size} is not sane"
        payload = self._read_exactly(size)
        assert payload is not None, "the broker closed the connection in the middle of a response"
        return payload

    def _read_exactly(self, n: int) -> bytes | None:
        chunks, got = [], 0
        while got < n:
            try:
                chunk = self.sock.recv(n - got)
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def request(self, body: Any) -> Any:
        """Send a kio request, return the decoded response body."""
        self._correlation += 1
        self.send(encode_request(body, self._correlation))
        payload = self.read_frame()
        assert payload is not None, f"the broker closed the connection instead of answering {body}"
        correlation, response = decode_response(body.__api_key__, body.__version__, payload)
        assert correlation == self._correlation, (
            f"expected correlation id {self._correlation}, got {correlation}"
        )
        return response

    def closed_by_peer(self, timeout: float = 10.0) -> bool:
        """Whether the broker closes the connection within ``timeout`` without sending anything."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        assert not data, f"expected the connection to be closed, got bytes {data!r}"
        return True


def make_batch(
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp: int | None = None,
    compression: int = 0,
) -> bytes:
    """One v2 record batch (base offset 0, no producer id) holding ``values``."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    keys = keys if keys is not None else [None] * len(values)
    records = [Record(i, 0, k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    return encode_batch(
        base_offset=0,
        records=records,
        compression=compression,
        base_timestamp=ts,
        max_timestamp=ts,
    )


@dataclass(frozen=True)
class Rec:
    """A consumed record."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None
) -> None:
    """Create a topic through the admin API and fail the test if the broker refuses."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=10,
        request_timeout=15,
    )
    futures[name].result(timeout=20)


def consumer(bootstrap: str) -> Consumer:
    """A consumer for manual assignment (it never joins or commits to its unique group)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"sluice-tests-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )


def read_partition(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    start: int = OFFSET_BEGINNING,
    timeout: float = 30.0,
) -> list[Rec]:
    """Every record of one partition from ``start`` up to the high watermark at call time."""
    c = consumer(bootstrap)
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        if high <= max(low, start):
            return []
        c.assign([TopicPartition(topic, partition, start)])
        records: list[Rec] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if records and records[-1].offset >= high - 1:
                        return records
                    continue
                raise AssertionError(f"consuming {topic}-{partition} failed: {msg.error()}")
            records.append(
                Rec(msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1])
            )
            if msg.offset() >= high - 1:
                return records
        raise AssertionError(
            f"read {len(records)} records of {topic}-{partition} up to offset "
            f"{records[-1].offset if records else None}, expected up to {high - 1} "
            f"within {timeout}s"
        )
    finally:
        c.close()


def watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    c = consumer(bootstrap)
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        return int(low), int(high)
    finally:
        c.close()


def produce_values(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes | None],
    *,
    keys: Iterable[bytes | None] | None = None,
    partition: int = 0,
    timestamps: Iterable[int] | None = None,
    one_batch_each: bool = False,
    config: dict[str, Any] | None = None,
) -> list[int]:
    """Produce with acks=all; return the offsets the broker acknowledged, in order.

    ``one_batch_each`` flushes after every record, so each record is a batch of its own.
    """
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **(config or {})}
    )
    offsets: list[int] = []
    errors: list[str] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            offsets.append(msg.offset())

    values = list(values)
    keys_list = list(keys) if keys is not None else [None] * len(values)
    stamps = list(timestamps) if timestamps is not None else [0] * len(values)
    for key, value, ts in zip(keys_list, values, stamps, strict=True):
        producer.produce(
            topic, value=value, key=key, partition=partition, timestamp=ts, on_delivery=report
        )
        if one_batch_each:
            producer.flush(30)
    remaining = producer.flush(30)
    assert remaining == 0 and not errors, f"{remaining} undelivered, errors: {errors[:5]}"
    return offsets


@pytest.fixture
def in_process_broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    """A broker with default configuration answering through ``Server.handle`` in this process
    (no socket, no process: :mod:`tests.broker.inprocess`); closed after the test."""
    from tests.broker.inprocess import InProcessBroker  # it uses this module's codec helpers

    with InProcessBroker(tmp_path / "data") as broker:
        yield broker


@pytest.fixture
def metered(tmp_path: Path) -> Iterator[tuple[BrokerProcess, int]]:
    """A broker process serving its metrics on a free port: ``(broker, metrics port)``."""
    port = free_port()
    proc = BrokerProcess(
        tmp_path / "data",
        {"group.initial.rebalance.delay.ms": "0"},
        tmp_path / "broker.log",
        args=("--metrics-listen", f"127.0.0.1:{port}"),
    )
    try:
        yield proc.start(), port
    finally:
        try:
            proc.stop()
        finally:
            proc.kill()
