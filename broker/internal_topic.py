"""The broker's own compacted topics: ``__consumer_offsets`` and ``__transaction_state``.

Like Kafka, an internal topic is created on first use (``cleanup.policy=compact``, its own
partition count and segment size) and each key — a group id, a transactional id — always goes to
partition ``abs(hashCode(key)) % partitions``. Writes are ordinary appends to the partition's log
(so they share its flush policy and crash recovery); at start the whole topic is replayed, oldest
first, one partition at a time: each partition rebuilds one coordinator shard
(:meth:`InternalTopic.replay_partition`). Transactional offset commits are written
as transactional batches and resolved by the commit or abort markers that follow them.

In a cluster (:attr:`InternalTopic.clustered`) the topic is created in the cluster's metadata
store by FindCoordinator, with its replication factor and :attr:`InternalTopic.config`
(Kafka's: compact, the segment size, and for ``__transaction_state`` its own
``min.insync.replicas``); a broker writes only to the partitions it leads (the shards its
coordinator loaded), and a write is answered once the partition's in-sync replicas have it
(:meth:`InternalTopic.replicated`, whose failures :func:`write_error` turns into the answer
Kafka's ``GroupMetadataManager`` / ``TransactionStateManager`` give).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.kafka_hash import java_string_hash, kafka_abs
from sluice.broker.records.batch import iter_headers
from sluice.broker.records.codec import Record, decode_records, encode_batch
from sluice.broker.topics import Partition, Topic, TopicManager

log = logging.getLogger(__name__)

_READ_CHUNK = 1 << 20
_MARKER = struct.Struct(">hh")
COMMIT_MARKER = 1


@dataclass(frozen=True, slots=True)
class ReplayedBatch:
    """One batch read back from an internal topic."""

    producer_id: int
    transactional: bool
    control: bool
    records: list[Record]

    @property
    def commits(self) -> bool:
        """For a control batch: whether it is a COMMIT marker (else ABORT)."""
        key = self.records[0].key if self.records else None
        return key is not None and len(key) >= 4 and _MARKER.unpack_from(key)[1] == COMMIT_MARKER


WrittenRecord = Literal["offsets", "group", "transaction"]
"""What a coordinator wrote: offsets (and offset deletions, group tombstones), a group's
metadata (members and assignment: JoinGroup, SyncGroup), a transaction's state."""

_TOO_LARGE = (
    ErrorCode.message_too_large,
    ErrorCode.record_list_too_large,
    ErrorCode.invalid_fetch_size,
)


def write_error(code: ErrorCode, *, written: WrittenRecord) -> ErrorCode:
    """What a coordinator answers when a write to its partition failed with ``code`` (Kafka's
    mappings: ``GroupMetadataManager.storeOffsets`` and ``storeGroup`` for
    ``__consumer_offsets``, ``TransactionStateManager.appendTransactionToLog`` for
    ``__transaction_state``): a group's metadata that timed out asks the members to join again
    (REBALANCE_IN_PROGRESS, which every client retries; a Java consumer takes an unknown code
    in SyncGroup as fatal).

    >>> write_error(ErrorCode.not_enough_replicas, written="offsets").name
    'coordinator_not_available'
    >>> write_error(ErrorCode.request_timed_out, written="transaction").name
    'coordinator_not_available'
    >>> write_error(ErrorCode.request_timed_out, written="group").name
    'rebalance_in_progress'
    >>> write_error(ErrorCode.message_too_large, written="offsets").name
    'invalid_commit_offset_size'
    """
    if code in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
    ):
        return ErrorCode.coordinator_not_available
    if code in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if code is ErrorCode.request_timed_out and written != "offsets":
        return (
            ErrorCode.rebalance_in_progress
            if written == "group"
            else ErrorCode.coordinator_not_available
        )
    if code in _TOO_LARGE:
        return (
            ErrorCode.invalid_commit_offset_size
            if written == "offsets"
            else ErrorCode.unknown_server_error
        )
    return code


def partition_for(key: str, partitions: int) -> int:
    """The partition of ``key``: Java's ``String.hashCode``, then Kafka's ``Utils.abs``.

    >>> partition_for("my-group", 50)
    12
    """
    return kafka_abs(java_string_hash(key)) % partitions


class InternalTopic:
    """Appends records to, and replays them from, one internal topic."""

    def __init__(
        self,
        topics: TopicManager,
        name: str,
        partitions: int,
        segment_bytes: int,
        clock: Callable[[], int],
        *,
        replication_factor: int = 1,
        cluster_config: Mapping[str, str] | None = None,
    ) -> None:
        self.topics = topics
        self.name = name
        self.partitions = partitions
        self.segment_bytes = segment_bytes
        self.clock = clock
        self.replication_factor = replication_factor
        """The topic's replication factor when it is created in a cluster."""
        self.config: dict[str, str] = {
            "cleanup.policy": "compact",
            "segment.bytes": str(segment_bytes),
            "compression.type": "producer",
        }
        """The topic's configs when it is created on one node."""
        self.cluster_config: dict[str, str] = {**self.config, **(cluster_config or {})}
        """The topic's configs when it is created in a cluster."""
        self.clustered = False
        """In a cluster the topic is created in the metadata store (by FindCoordinator), never
        here; :meth:`ensure` then only finds the replica this broker hosts."""

    def ensure(self) -> Topic:
        """The topic, created if it does not exist yet (on one node). In a cluster: the
        replica hosted here, or :class:`KafkaError` NOT_COORDINATOR when there is none."""
        topic = self.topics.get(self.name)
        if topic is None:
            if self.clustered:
                raise KafkaError(
                    ErrorCode.not_coordinator, f"this broker hosts no replica of {self.name}"
                )
            topic = self.topics.create(self.name, self.partitions, self.config)
        self.partitions = topic.partition_count
        return topic

    def partition_count(self) -> int:
        """The partitions of the topic: as created, or as configured while it does not exist."""
        topic = self.topics.get(self.name)
        return self.partitions if topic is None else topic.partition_count

    def partition_of(self, key: str) -> Partition:
        """The partition holding ``key``'s records (see :meth:`ensure`)."""
        topic = self.ensure()
        found = topic.partitions.get(partition_for(key, topic.partition_count))
        if found is None:
            raise KafkaError(
                ErrorCode.not_coordinator, f"this broker hosts no replica of {key!r}'s partition"
            )
        return found

    async def replicated(self, key: str, timeout_ms: int) -> ErrorCode:
        """Wait until what was written so far to ``key``'s partition is on its in-sync
        replicas (at once without replication: one node); NONE, or the replication's error
        (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER after a resignation:
        see :func:`write_error`)."""
        topic = self.topics.get(self.name)
        if topic is None:
            return ErrorCode.none if not self.clustered else ErrorCode.not_leader_or_follower
        partition = topic.partitions.get(partition_for(key, topic.partition_count))
        if partition is None:
            return ErrorCode.not_leader_or_follower
        leadership = partition.leadership
        if leadership is None:
            return ErrorCode.not_leader_or_follower if self.clustered else ErrorCode.none
        return await leadership.wait_for_replication(partition.log.log_end_offset, timeout_ms)

    def append(
        self,
        key: str,
        entries: list[tuple[bytes, bytes | None]],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        """Write ``(key, value)`` records (value None: tombstone) for ``key`` in one batch;
        transactional when ``producer_id`` is given.

        Raises :class:`~sluice.errors.StorageError` when the disk refuses the write.
        """
        if not entries:
            return
        now = self.clock()
        records = [Record(i, 0, k, v) for i, (k, v) in enumerate(entries)]
        data = encode_batch(
            base_offset=0,
            records=records,
            compression=0,
            base_timestamp=now,
            max_timestamp=now,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=producer_id >= 0,
        )
        partition = self.partition_of(key)
        partition.log.append(bytearray(data), now_ms=now)
        partition.appended(now)

    def replay_partition(self, index: int) -> Iterator[ReplayedBatch]:
        """Every batch of partition ``index``, oldest first (none while the topic or the
        partition does not exist)."""
        topic = self.topics.get(self.name)
        partition = None if topic is None else topic.partitions.get(index)
        if partition is None:
            return
        plog = partition.log
        offset = plog.log_start_offset
        while offset < plog.log_end_offset:
            data = plog.read(offset, _READ_CHUNK).data
            if not data:
                break
            for header in iter_headers(data):
                offset = header.next_offset
                yield ReplayedBatch(
                    header.producer_id,
                    header.is_transactional,
                    header.is_control,
                    decode_records(data, header),
                )
