"""``__consumer_offsets``: the compacted internal topic that makes groups and offsets durable.

Like Kafka, the topic is created on first use with ``offsets.topic.num.partitions`` partitions,
``cleanup.policy=compact`` and ``offsets.topic.segment.bytes``; a group's records all go to
partition ``partition_for(group)``. Writes are ordinary appends to the partition's log (so they
share its flush policy and crash recovery); at start the whole topic is replayed, latest record
per key winning, to rebuild the coordinator's cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from sluice.broker.group.records import partition_for
from sluice.broker.records.batch import iter_headers
from sluice.broker.records.codec import Record, decode_records, encode_batch
from sluice.broker.topics import Topic, TopicManager
from sluice.config import BrokerConfig

log = logging.getLogger(__name__)

NAME = "__consumer_offsets"
_READ_CHUNK = 1 << 20


class OffsetsTopic:
    """Appends group records to, and replays them from, ``__consumer_offsets``."""

    def __init__(
        self, topics: TopicManager, config: BrokerConfig, clock: Callable[[], int]
    ) -> None:
        self.topics = topics
        self.partitions = int(config["offsets.topic.num.partitions"])
        self.segment_bytes = int(config["offsets.topic.segment.bytes"])
        self.clock = clock

    def ensure(self) -> Topic:
        """The topic, created if it does not exist yet."""
        topic = self.topics.get(NAME)
        if topic is None:
            topic = self.topics.create(
                NAME,
                self.partitions,
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(self.segment_bytes),
                    "compression.type": "producer",
                },
            )
        self.partitions = len(topic.partitions)
        return topic

    def append(self, group: str, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Write ``(key, value)`` records (value None: tombstone) for ``group`` in one batch.

        Raises :class:`~sluice.errors.StorageError` when the disk refuses the write.
        """
        if not entries:
            return
        topic = self.ensure()
        now = self.clock()
        records = [Record(i, 0, key, value) for i, (key, value) in enumerate(entries)]
        data = encode_batch(
            base_offset=0, records=records, compression=0, base_timestamp=now, max_timestamp=now
        )
        partition = topic.partitions[partition_for(group, len(topic.partitions))]
        partition.log.append(bytearray(data), now_ms=now)

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        """Every ``(key, value)`` of the topic, oldest first per partition."""
        topic = self.topics.get(NAME)
        if topic is None:
            return
        for partition in topic.partitions:
            plog = partition.log
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                data = plog.read(offset, _READ_CHUNK).data
                if not data:
                    break
                for header in iter_headers(data):
                    offset = header.next_offset
                    if header.is_control:
                        continue
                    for record in decode_records(data, header):
                        if record.key is not None:
                            yield record.key, record.value
