"""Restoring stores from their changelogs.

A dedicated assign-only consumer (no group, never commits; ``read_committed`` under
exactly-once) reads each changelog partition from the checkpointed offset — or from the start
after wiping the store — to its end, applying every record to the store, in batches. "The end"
is where the consumer reports end-of-partition: the high watermark, or under read_committed the
last stable offset. Progress is kept on each :class:`Restoration` (``position`` after every
batch, ``remaining``) for the metrics, which read it from another thread while restoring.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from sluice import clients
from sluice.streams.errors import StreamsError
from sluice.streams.state.base import StateStore

__all__ = ["Restoration", "restore"]

log = logging.getLogger("sluice.streams")


@dataclass(slots=True)
class Restoration:
    """One store to fill from ``topic[partition]``, starting at ``offset`` (None: the start)."""

    store: StateStore
    topic: str
    partition: int
    offset: int | None
    restored: int = 0
    end_offset: int = -1
    """Where restoring stopped (set when done; -1 before)."""
    high_watermark: int = -1
    """The changelog's end when restoring began."""
    position: int = -1
    """The next offset to restore (updated once per batch)."""

    @property
    def remaining(self) -> int:
        """Records left to restore (an estimate from offsets; 0 once done)."""
        if self.end_offset >= 0 or self.position < 0:
            return 0
        return max(self.high_watermark - self.position, 0)


def restore(consumer: Consumer, work: list[Restoration], timeout_s: float = 600.0) -> None:
    """Fill every store of ``work``; returns when each changelog partition is read to its end."""
    if not work:
        return
    started = time.monotonic()
    by_partition: dict[tuple[str, int], list[Restoration]] = {}
    assignments = []
    for item in work:
        key = (item.topic, item.partition)
        if key not in by_partition:
            start = OFFSET_BEGINNING if item.offset is None else item.offset
            assignments.append(TopicPartition(item.topic, item.partition, start))
        by_partition.setdefault(key, []).append(item)
    pending = set(by_partition)
    # Empty partitions never report end-of-partition with some brokers; check watermarks first.
    for topic, partition in list(pending):
        [(low, high)] = clients.watermarks(consumer, [TopicPartition(topic, partition)], 30)
        first = by_partition[(topic, partition)][0].offset
        for item in by_partition[(topic, partition)]:
            item.high_watermark, item.position = high, low if first is None else max(first, low)
        if high <= low or (first is not None and first >= high):
            pending.discard((topic, partition))
            for item in by_partition[(topic, partition)]:
                item.end_offset = high
    active = [tp for tp in assignments if (tp.topic, tp.partition) in pending]
    if not active:
        return
    consumer.assign(active)
    try:
        while pending:
            if time.monotonic() - started > timeout_s:
                raise StreamsError(f"restoring {sorted(pending)} took over {timeout_s} s")
            # records go to the stores in batches, one batch per run of a partition
            batch: list[tuple[bytes, bytes | None, int]] = []
            current: tuple[str, int] = ("", -1)
            last = None  # the last message of the current run (its offset: the position)
            for message in consumer.consume(10_000, 0.5):
                key = (str(message.topic()), int(message.partition() or 0))
                if key != current:
                    _apply(by_partition.get(current), batch, last)
                    batch = []
                    current = key
                last = message
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        if key in pending:
                            pending.discard(key)
                            for item in by_partition[key]:
                                item.end_offset = int(message.offset() or 0)
                        continue
                    raise StreamsError(f"cannot read changelog {key[0]}[{key[1]}]: {error.str()}")
                raw_key = message.key()
                if raw_key is not None:
                    batch.append((raw_key, message.value(), message.timestamp()[1]))
            _apply(by_partition.get(current), batch, last)
    finally:
        consumer.unassign()
    for item in work:
        item.store.flush_restored()
    elapsed = time.monotonic() - started
    total = sum(item.restored for item in work)
    log.info("restored %d records into %d stores in %.2f s", total, len(work), elapsed)


def _apply(
    items: list[Restoration] | None, batch: list[tuple[bytes, bytes | None, int]], last: Any
) -> None:
    if not items:
        return
    if batch:
        for item in items:
            item.store.restore_batch(batch)
            item.restored += len(batch)
    if last is not None and last.error() is None:
        position = int(last.offset()) + 1
        for item in items:
            item.position = position
