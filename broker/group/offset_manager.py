"""Committed offsets of the groups of one coordinator shard, as Kafka's
``OffsetMetadataManager``: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, and which
offsets of empty groups have expired.

A commit from the current generation (or from anyone when the group has no members, generation
-1) is appended to ``__consumer_offsets`` before it is acknowledged. Offsets committed in a
transaction are appended at once as a transactional batch of the producer and become the
group's offsets when the transaction commits (:meth:`OffsetMetadataManager.complete_transaction`).
The offsets live on each :class:`~sluice.broker.group.group.Group` (as in Kafka's classic
``GroupMetadata``); the groups are reached through the shard's
:class:`~sluice.broker.group.metadata_manager.GroupMetadataManager` only.
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.errors import KafkaError
from sluice.broker.group import records as rec
from sluice.broker.group.group import CommittedOffset, Group, GroupState
from sluice.broker.group.metadata_manager import GroupMetadataManager
from sluice.broker.internal_topic import InternalTopic
from sluice.errors import StorageError

log = logging.getLogger(__name__)

S = GroupState

OffsetEntry = tuple[str, int, int, int, str | None]
"""``(topic, partition, offset, leader_epoch, metadata)`` of a commit."""


class OffsetMetadataManager:
    """The committed offsets of one ``__consumer_offsets`` partition's groups."""

    def __init__(
        self,
        groups: GroupMetadataManager,
        store: InternalTopic,
        partition_exists: Callable[[str, int], bool],
        config: BrokerConfig,
        clock: Callable[[], int],
    ) -> None:
        self.groups = groups
        self.store = store
        self.partition_exists = partition_exists
        self.clock = clock
        self.max_metadata = int(config["offset.metadata.max.bytes"])

    def commit(
        self,
        *,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: list[OffsetEntry],
    ) -> list[ErrorCode]:
        """Commit ``(topic, partition, offset, leader_epoch, metadata)`` entries."""
        group = self.groups.group(group_id)  # "" is a valid id here, as in Kafka (old clients)
        if group is None and generation >= 0:
            # Kafka: a generation for a group that does not exist is one that is gone
            return [ErrorCode.illegal_generation] * len(offsets)
        if generation < 0 and (group is None or group.state is S.EMPTY):
            if group is None:
                group = self.groups.get_or_create(group_id, self.clock())
        else:
            try:
                group, member = self.groups.validate_member(
                    group_id, member_id, instance_id, generation
                )
                if group.state is S.COMPLETING_REBALANCE:
                    raise KafkaError(ErrorCode.rebalance_in_progress, "rebalancing")
                self.groups.keep_alive(group, member)
            except KafkaError as exc:
                return [exc.code] * len(offsets)
        codes, accepted = self._write(group_id, offsets, check_metadata=True)
        if accepted is not None:
            group.offsets.update(accepted)
        return codes

    def txn_commit(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: list[OffsetEntry],
    ) -> list[ErrorCode]:
        """TxnOffsetCommit: offsets that become visible when the transaction commits.

        They are written to ``__consumer_offsets`` now, as a transactional batch of the
        producer, so that a commit marker written after a crash still finds them.
        """
        group = self.groups.group(group_id)
        if not group_id:
            return [ErrorCode.invalid_group_id] * len(offsets)
        # Kafka's validateOffsetCommit: a request naming a member or a generation must come
        # from a current member (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) — an expired member's
        # commit is refused even when the group has emptied; none named: a producer's own
        if generation >= 0 or member_id or instance_id is not None:
            try:
                self.groups.validate_member(group_id, member_id, instance_id, generation)
            except KafkaError as exc:
                return [exc.code] * len(offsets)
        if group is None:
            group = self.groups.get_or_create(group_id, self.clock())
        codes, accepted = self._write(
            group_id,
            offsets,
            check_metadata=False,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        if accepted is not None:
            group.pending_txn_offsets.setdefault(producer_id, {}).update(accepted)
        return codes

    def _write(
        self,
        group_id: str,
        offsets: list[OffsetEntry],
        *,
        check_metadata: bool,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> tuple[list[ErrorCode], dict[tuple[str, int], CommittedOffset] | None]:
        """Append the acceptable offsets (transactional with a ``producer_id``): a code per
        entry, and what was accepted (None: the write failed)."""
        now = self.clock()
        codes: list[ErrorCode] = []
        entries: list[tuple[bytes, bytes | None]] = []
        accepted: dict[tuple[str, int], CommittedOffset] = {}
        for topic, partition, offset, epoch, metadata in offsets:
            if not self.partition_exists(topic, partition):
                codes.append(ErrorCode.unknown_topic_or_partition)
            elif (
                check_metadata
                and metadata is not None
                and len(metadata.encode()) > self.max_metadata
            ):
                codes.append(ErrorCode.offset_metadata_too_large)
            else:
                committed = CommittedOffset(offset, epoch, metadata or "", now)
                accepted[(topic, partition)] = committed
                entries.append(_record(group_id, topic, partition, committed))
                codes.append(ErrorCode.none)
        try:
            self.store.append(
                group_id, entries, producer_id=producer_id, producer_epoch=producer_epoch
            )
        except StorageError as exc:
            kind = "transactional offsets" if producer_id >= 0 else "offsets"
            log.error("could not store %s of group %s: %s", kind, group_id, exc)
            failed: list[ErrorCode] = [
                ErrorCode.coordinator_not_available if c is ErrorCode.none else c for c in codes
            ]
            return failed, None
        return codes, accepted

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of this partition for the group."""
        group = self.groups.group(group_id)
        return group is not None and any(
            (topic, partition) in offsets for offsets in group.pending_txn_offsets.values()
        )

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """A transaction's marker reached ``__consumer_offsets``: apply or drop its offsets."""
        for group in self.groups.all():
            offsets = group.pending_txn_offsets.pop(producer_id, None)
            if offsets and commit:
                group.offsets.update(offsets)

    def fetch(
        self, group_id: str, wanted: list[tuple[str, list[int]]] | None
    ) -> list[tuple[str, int, CommittedOffset | None]]:
        """Committed offsets of ``group_id``: all of them when ``wanted`` is None."""
        group = self.groups.group(group_id)
        offsets = group.offsets if group is not None else {}
        if wanted is None:
            return [(t, p, o) for (t, p), o in sorted(offsets.items())]
        return [(topic, p, offsets.get((topic, p))) for topic, parts in wanted for p in parts]

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """OffsetDelete: the group error and one code per partition."""
        group = self.groups.group(group_id)
        if group is None or group.state is S.DEAD:
            return ErrorCode.group_id_not_found, []
        subscribed = group.subscribed_topics() if group.members else set()
        if group.members and subscribed is None:
            return ErrorCode.non_empty_group, []
        codes: list[ErrorCode] = []
        entries: list[tuple[bytes, bytes | None]] = []
        for topic, partition in partitions:
            if subscribed and topic in subscribed:
                codes.append(ErrorCode.group_subscribed_to_topic)
                continue
            codes.append(ErrorCode.none)
            if group.offsets.pop((topic, partition), None) is not None:
                entries.append((rec.offset_key(group_id, topic, partition), None))
        try:
            self.store.append(group_id, entries)
        except StorageError:
            return ErrorCode.coordinator_not_available, []
        return ErrorCode.none, codes

    # -- for the shard: deleting and expiring -------------------------------------------------

    def expired(self, group: Group, retention_ms: int, now: int) -> list[tuple[str, int]]:
        """The offsets of an Empty group older than ``retention_ms`` (from the later of their
        commit and the group's last state change)."""
        if group.state is not S.EMPTY:
            return []
        return [
            key
            for key, o in group.offsets.items()
            if max(o.commit_timestamp, group.state_timestamp) + retention_ms <= now
        ]

    @staticmethod
    def tombstones(
        group_id: str, partitions: list[tuple[str, int]]
    ) -> list[tuple[bytes, bytes | None]]:
        """The records that delete these offsets of the group."""
        return [(rec.offset_key(group_id, t, p), None) for t, p in partitions]

    @staticmethod
    def remove(group: Group, partitions: list[tuple[str, int]]) -> None:
        """Forget offsets whose tombstones are written."""
        for key in partitions:
            del group.offsets[key]

    def replay(self, key: rec.OffsetKey, value: bytes | None, pending_for: int | None) -> None:
        """Apply an offset record read back from ``__consumer_offsets`` (latest wins); with
        ``pending_for``, one of that producer's transaction still open.

        Raises :class:`~sluice.broker.group.records.RecordFormatError` for an unreadable value."""
        group = self.groups.get_or_create(key.group, -1)
        target = (
            group.offsets
            if pending_for is None
            else (group.pending_txn_offsets.setdefault(pending_for, {}))
        )
        if value is None:
            target.pop((key.topic, key.partition), None)
        else:
            v = rec.decode_offset_value(value)
            target[(key.topic, key.partition)] = CommittedOffset(
                v.offset, v.leader_epoch, v.metadata, v.commit_timestamp
            )


def _record(
    group_id: str, topic: str, partition: int, committed: CommittedOffset
) -> tuple[bytes, bytes | None]:
    """The ``__consumer_offsets`` record of a committed offset."""
    value = rec.OffsetValue(
        committed.offset, committed.leader_epoch, committed.metadata, committed.commit_timestamp
    )
    return rec.offset_key(group_id, topic, partition), rec.offset_value(value)
