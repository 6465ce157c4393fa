"""aiokafka's transactional producer (InitProducerId v0 and the v0 transaction APIs) and its
read_committed consumer against a real ``sluice broker start``.

``async with producer.transaction()`` commits, an exception inside it aborts; offsets sent with
``send_offsets_to_transaction`` become the group's committed offsets when the transaction commits
and are dropped when it aborts. A read_committed aiokafka consumer sees the committed records only;
read_uncommitted (confluent-kafka) sees the aborted ones too.
"""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.compat.harness import committed_offsets
from tests.compat.transactions.conftest import (
    TIMEOUT,
    read_topic,
    settle,
    unique,
    values,
)
from tests.conftest import create_topic

PARTITIONS = 2


class AbortError(Exception):
    """Raised inside a transaction to make aiokafka abort it."""


async def send_all(producer: AIOKafkaProducer, topic: str, tag: str) -> list[tuple[int, bytes]]:
    """Five records over both partitions, each acknowledged; ``(partition, value)`` of each."""
    sent = [(i % PARTITIONS, f"{tag}-{i}".encode()) for i in range(5)]
    futures = [await producer.send(topic, value=v, partition=p) for p, v in sent]
    await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
    return sent


async def produce(bootstrap: str, topic: str, group: str) -> list[tuple[int, bytes]]:
    """c1 committed, a1 aborted, c2 committed (with offsets 7), a2 aborted (with offsets 9).
    Returns the committed records."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=unique("aio-tid"),
        transaction_timeout_ms=30_000,
        request_timeout_ms=int(TIMEOUT * 1000),
    )
    await asyncio.wait_for(producer.start(), TIMEOUT)
    committed: list[tuple[int, bytes]] = []
    try:
        async with producer.transaction():
            committed += await send_all(producer, topic, "c1")
        try:
            async with producer.transaction():
                await send_all(producer, topic, "a1")
                raise AbortError
        except AbortError:
            pass
        async with producer.transaction():
            committed += await send_all(producer, topic, "c2")
            await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 7}, group)
        try:
            async with producer.transaction():
                await send_all(producer, topic, "a2")
                await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 9}, group)
                raise AbortError
        except AbortError:
            pass
    finally:
        await asyncio.wait_for(producer.stop(), TIMEOUT)
    return committed


async def consume_committed(bootstrap: str, topic: str, count: int) -> dict[int, list[bytes]]:
    """aiokafka, read_committed: ``count`` records, then nothing more for a second."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    await asyncio.wait_for(consumer.start(), TIMEOUT)
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + TIMEOUT
        extra_until = None
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for tp, records in batches.items():
                got[tp.partition].extend(r.value for r in records)
            if extra_until is None and sum(len(v) for v in got.values()) >= count:
                extra_until = time.monotonic() + 1.0
            if extra_until is not None and time.monotonic() > extra_until:
                break
    finally:
        await asyncio.wait_for(consumer.stop(), TIMEOUT)
    return got


def test_aiokafka_transactions_commit_and_abort(bootstrap: str) -> None:
    topic = create_topic(bootstrap, PARTITIONS)
    group = unique("aio-group")
    committed = asyncio.run(produce(bootstrap, topic, group))
    settle(bootstrap, topic, PARTITIONS)

    want = {p: [v for q, v in committed if q == p] for p in range(PARTITIONS)}
    got = asyncio.run(consume_committed(bootstrap, topic, len(committed)))
    assert got == want, "aiokafka read_committed must see the committed transactions only"
    assert values(read_topic(bootstrap, topic, PARTITIONS, "read_committed")) == want, (
        "confluent-kafka read_committed must see the committed transactions only"
    )
    everything = values(read_topic(bootstrap, topic, PARTITIONS, "read_uncommitted"))
    tags = sorted({v.split(b"-")[0] for vs in everything.values() for v in vs if v})
    assert tags == [b"a1", b"a2", b"c1", b"c2"], (
        f"read_uncommitted must see the aborted records too; saw transactions {tags}"
    )
    offsets = committed_offsets(bootstrap, group, topic, PARTITIONS)
    assert offsets == {0: 7, 1: -1001}, (
        f"the group's committed offsets are {offsets}: expected 7 on partition 0 (committed in a "
        f"transaction; the aborted one's 9 dropped) and none (-1001) on partition 1"
    )
