"""Records handed to the shared producer, and their delivery reports awaited on the event loop.

:func:`send` queues a batch of records on the pool's producer (a non-blocking call: librdkafka
only queues them) and returns an asyncio future that completes, once, when every record of the
batch has its delivery report: one wake-up of the event loop per batch, not per record.
While records are awaited, the event loop itself serves the producer's reports (``poll(0)``
between other work, a millisecond's pause when none is ready); the pool's thread serves them
the rest of the time. A full local queue (``BufferError``) is waited out a millisecond at a
time, without blocking the loop.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from sluice.rest_proxy.errors import RestError, from_kafka
from sluice.rest_proxy.pool import ClientPool

__all__ = ["Delivered", "OutRecord", "send"]

_ANY_PARTITION = -1  # librdkafka's RD_KAFKA_PARTITION_UA: let the partitioner choose


@dataclass(slots=True)
class OutRecord:
    """A record ready for the producer."""

    key: bytes | None
    value: bytes | None
    partition: int | None = None
    headers: list[tuple[str, bytes | None]] | None = None
    timestamp_ms: int | None = None


@dataclass(slots=True)
class Delivered:
    """Where a record landed."""

    partition: int
    offset: int
    timestamp_ms: int


class _Batch:
    """The records of one :func:`send`: their reports as they come (a message, or the error
    that it met), counted without a lock (``itertools.count`` is atomic under the GIL) since
    the event loop or the pool's poll thread may deliver them."""

    def __init__(
        self, pool: ClientPool, loop: asyncio.AbstractEventLoop, topic: str, size: int
    ) -> None:
        self.pool = pool
        self.size = size
        self.loop = loop
        self.topic = topic
        self.results: list[Message | KafkaError | RestError | None] = [None] * size
        self.counted = itertools.count(1)
        self.future: asyncio.Future[list[Delivered | RestError]] = loop.create_future()

    def report(self, index: int, error: KafkaError | None, message: Message) -> None:
        """A delivery report (on the thread that polls the producer)."""
        self.results[index] = message if error is None else error
        if next(self.counted) == self.size:
            self.loop.call_soon_threadsafe(self._complete)

    def fail(self, index: int, error: RestError) -> None:
        """A record the producer refused at once (on the event loop)."""
        self.results[index] = error
        if next(self.counted) == self.size:
            self._complete()

    def _complete(self) -> None:
        self.pool.in_flight -= self.size
        if self.future.done():
            return
        reports: list[Delivered | RestError] = []
        for result in self.results:
            if isinstance(result, Message):
                reports.append(
                    Delivered(result.partition() or 0, result.offset() or 0, result.timestamp()[1])
                )
            elif isinstance(result, KafkaError):
                reports.append(from_kafka(result, topic=self.topic))
            elif result is not None:
                reports.append(result)
        self.future.set_result(reports)


async def send(
    pool: ClientPool, topic: str, records: list[OutRecord]
) -> list[Delivered | RestError]:
    """Produce ``records`` to ``topic``; their reports, in order, once all are in."""
    if not records:
        return []
    batch = _Batch(pool, asyncio.get_running_loop(), topic, len(records))
    pool.in_flight += len(records)
    produce = pool.producer.produce
    report = batch.report
    partial = functools.partial
    for index, record in enumerate(records):
        partition = _ANY_PARTITION if record.partition is None else record.partition
        while True:
            try:
                if record.headers is None and record.timestamp_ms is None:
                    produce(
                        topic,
                        record.value,
                        record.key,
                        partition=partition,
                        on_delivery=partial(report, index),
                    )
                else:
                    kwargs: dict[str, Any] = {}
                    if record.headers:
                        kwargs["headers"] = record.headers
                    if record.timestamp_ms is not None:
                        kwargs["timestamp"] = record.timestamp_ms
                    produce(
                        topic,
                        record.value,
                        record.key,
                        partition=partition,
                        on_delivery=partial(report, index),
                        **kwargs,
                    )
                break
            except BufferError:
                await asyncio.sleep(0.001)  # the poll thread drains the queue meanwhile
            except KafkaException as error:
                batch.fail(index, from_kafka(error, topic=topic))
                break
    if not pool.loop_polls:
        pool.loop_polls = True
        _drainers.add(asyncio.ensure_future(_drain(pool)))
    return await batch.future


_drainers: set[asyncio.Future[None]] = set()


async def _drain(pool: ClientPool) -> None:
    """Serve the producer's delivery reports on the event loop while records are awaited
    (no thread hand-off per report); a millisecond's pause when none is ready."""
    producer = pool.producer
    try:
        while pool.in_flight > 0:
            if producer.poll(0) == 0:
                await asyncio.sleep(0.001)
            else:
                await asyncio.sleep(0)
    finally:
        pool.loop_polls = False
        task = asyncio.current_task()
        if task is not None:
            _drainers.discard(task)
