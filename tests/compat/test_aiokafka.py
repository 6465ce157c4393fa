"""aiokafka against a real ``sluice broker start`` process, over TCP.

aiokafka speaks older versions than the other clients (InitProducerId v0, for one). Each test is a
plain function that drives its coroutine with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

TIMEOUT = 15.0  # seconds: the bound on every client wait
T0 = (time.time_ns() // 1_000_000) - 60_000

Sent = tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]


def records(n: int, tag: str) -> list[Sent]:
    out: list[Sent] = []
    for i in range(n):
        key: bytes | None = None if i == 1 else f"{tag}-k{i}".encode()
        value: bytes | None = None if i == 2 else f"{tag}-v{i}-".encode() * (1 + i % 9)
        headers = [] if i == 3 else [("i", str(i).encode()), ("dup", b"a"), ("dup", b"b")]
        out.append((key, value, headers, T0 + 10 * i))
    return out


def as_sent(record: Any) -> Sent:
    return (record.key, record.value, [tuple(h) for h in record.headers], record.timestamp)


async def produce(bootstrap: str, topic: str, recs: list[Sent], **config: Any) -> list[int]:
    """Send ``recs`` to partition 0 concurrently (so they batch); returns their offsets."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, request_timeout_ms=int(TIMEOUT * 1000), **config
    )
    await asyncio.wait_for(producer.start(), TIMEOUT)
    try:
        futures = [
            await producer.send(topic, value=v, key=k, headers=h, timestamp_ms=ts, partition=0)
            for k, v, h, ts in recs
        ]
        metas = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
    finally:
        await asyncio.wait_for(producer.stop(), TIMEOUT)
    return [m.offset for m in metas]


async def read(consumer: AIOKafkaConsumer, tp: TopicPartition, count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        batch = await consumer.getmany(tp, timeout_ms=500)
        got.extend(batch.get(tp, []))
    assert len(got) == count, f"expected {count} records, got {len(got)} within {TIMEOUT}s"
    return got


def new_consumer(bootstrap: str, **config: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=int(TIMEOUT * 1000),
        **config,
    )


@pytest.mark.parametrize(
    ("idempotent", "codec"),
    [
        pytest.param(False, None, id="plain"),
        pytest.param(False, "gzip", id="plain-gzip"),
        pytest.param(True, None, id="idempotent"),
        pytest.param(True, "snappy", id="idempotent-snappy"),
        pytest.param(True, "lz4", id="idempotent-lz4"),
        pytest.param(True, "zstd", id="idempotent-zstd"),
    ],
)
def test_produce_consume_round_trip(
    bootstrap: str, create_topic: Callable[..., str], idempotent: bool, codec: str | None
) -> None:
    topic = create_topic()
    recs = records(40, f"{idempotent}-{codec}")

    async def scenario() -> list[Any]:
        offsets = await produce(
            bootstrap, topic, recs, enable_idempotence=idempotent, compression_type=codec
        )
        assert offsets == list(range(40)), f"offsets: expected 0..39, got {offsets}"
        consumer = new_consumer(bootstrap, isolation_level="read_committed")
        await asyncio.wait_for(consumer.start(), TIMEOUT)
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await asyncio.wait_for(consumer.seek_to_beginning(tp), TIMEOUT)
            return await read(consumer, tp, 40)
        finally:
            await asyncio.wait_for(consumer.stop(), TIMEOUT)

    got = asyncio.run(scenario())
    assert [r.offset for r in got] == list(range(40))
    assert [as_sent(r) for r in got] == recs


def test_seek_and_end_offsets(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=2)
    recs = records(15, "seek")

    async def scenario() -> tuple[list[Any], dict[TopicPartition, int], dict[TopicPartition, int]]:
        await produce(bootstrap, topic, recs, compression_type="gzip")
        consumer = new_consumer(bootstrap)
        await asyncio.wait_for(consumer.start(), TIMEOUT)
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp, TopicPartition(topic, 1)])
            consumer.seek(tp, 9)
            got = await read(consumer, tp, 6)
            tps = [tp, TopicPartition(topic, 1)]
            begin = await asyncio.wait_for(consumer.beginning_offsets(tps), TIMEOUT)
            end = await asyncio.wait_for(consumer.end_offsets(tps), TIMEOUT)
            return got, begin, end
        finally:
            await asyncio.wait_for(consumer.stop(), TIMEOUT)

    got, begin, end = asyncio.run(scenario())
    assert [r.offset for r in got] == list(range(9, 15))
    assert [as_sent(r) for r in got] == recs[9:]
    marks = {tp.partition: (begin[tp], end[tp]) for tp in begin}
    assert marks == {0: (0, 15), 1: (0, 0)}, f"watermarks: expected p0 (0, 15), p1 (0, 0): {marks}"
