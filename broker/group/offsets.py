"""Committed offsets of the groups: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete,
and the expiry of the offsets of empty groups.

A commit is appended to ``__consumer_offsets`` before it is acknowledged. Offsets committed in a
transaction are appended at once as a transactional batch of the producer and become the
group's offsets when the transaction commits (:meth:`GroupOffsets.complete_transaction`).
Mixed into :class:`~sluice.broker.group.coordinator.GroupCoordinator`; not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.group import records as rec
from sluice.broker.group.group import CommittedOffset, Group, GroupState, Member
from sluice.broker.internal_topic import InternalTopic
from sluice.broker.topics import TopicManager
from sluice.errors import StorageError

log = logging.getLogger(__name__)

S = GroupState


class _Coordinator(Protocol):
    groups: dict[str, Group]
    store: InternalTopic
    topics: TopicManager
    clock: Callable[[], int]
    max_metadata: int

    def _member(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> tuple[Group, Member]: ...

    def _schedule_expiry(self, group: Group, member: Member) -> None: ...


class GroupOffsets:
    """The offset half of the group coordinator."""

    def commit(
        self: _Coordinator,
        *,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: list[tuple[str, int, int, int, str | None]],
    ) -> list[ErrorCode]:
        """Commit ``(topic, partition, offset, leader_epoch, metadata)`` entries."""
        group = self.groups.get(group_id)  # "" is a valid id here, as in Kafka (old clients)
        if group is None and generation >= 0:
            # Kafka: a generation for a group that does not exist is one that is gone
            return [ErrorCode.illegal_generation] * len(offsets)
        if generation < 0 and (group is None or group.state is S.EMPTY):
            if group is None:
                group = self.groups[group_id] = Group(group_id, state_timestamp=self.clock())
        else:
            try:
                group, _member = self._member(group_id, member_id, instance_id, generation)
                if group.state is S.COMPLETING_REBALANCE:
                    raise KafkaError(ErrorCode.rebalance_in_progress, "rebalancing")
                self._schedule_expiry(group, _member)
            except KafkaError as exc:
                return [exc.code] * len(offsets)
        now = self.clock()
        codes: list[ErrorCode] = []
        entries: list[tuple[bytes, bytes | None]] = []
        accepted: dict[tuple[str, int], CommittedOffset] = {}
        for topic, partition, offset, epoch, metadata in offsets:
            if self.topics.partition(topic, partition) is None:
                codes.append(ErrorCode.unknown_topic_or_partition)
            elif metadata is not None and len(metadata.encode()) > self.max_metadata:
                codes.append(ErrorCode.offset_metadata_too_large)
            else:
                committed = CommittedOffset(offset, epoch, metadata or "", now)
                accepted[(topic, partition)] = committed
                entries.append(
                    (
                        rec.offset_key(group_id, topic, partition),
                        rec.offset_value(rec.OffsetValue(offset, epoch, metadata or "", now)),
                    )
                )
                codes.append(ErrorCode.none)
        try:
            self.store.append(group_id, entries)
        except StorageError as exc:
            log.error("could not store offsets of group %s: %s", group_id, exc)
            return [
                ErrorCode.coordinator_not_available if c is ErrorCode.none else c for c in codes
            ]
        group.offsets.update(accepted)
        return codes

    def txn_commit(
        self: _Coordinator,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: list[tuple[str, int, int, int, str | None]],
    ) -> list[ErrorCode]:
        """TxnOffsetCommit: offsets that become visible when the transaction commits.

        They are written to ``__consumer_offsets`` now, as a transactional batch of the
        producer, so that a commit marker written after a crash still finds them.
        """
        group = self.groups.get(group_id)
        if not group_id:
            return [ErrorCode.invalid_group_id] * len(offsets)
        if group is not None and group.members and generation >= 0:
            try:
                self._member(group_id, member_id, instance_id, generation)
            except KafkaError as exc:
                return [exc.code] * len(offsets)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=self.clock())
        now = self.clock()
        codes: list[ErrorCode] = []
        entries: list[tuple[bytes, bytes | None]] = []
        accepted: dict[tuple[str, int], CommittedOffset] = {}
        for topic, partition, offset, epoch, metadata in offsets:
            if self.topics.partition(topic, partition) is None:
                codes.append(ErrorCode.unknown_topic_or_partition)
                continue
            accepted[(topic, partition)] = CommittedOffset(offset, epoch, metadata or "", now)
            entries.append(
                (
                    rec.offset_key(group_id, topic, partition),
                    rec.offset_value(rec.OffsetValue(offset, epoch, metadata or "", now)),
                )
            )
            codes.append(ErrorCode.none)
        try:
            self.store.append(
                group_id, entries, producer_id=producer_id, producer_epoch=producer_epoch
            )
        except StorageError as exc:
            log.error("could not store transactional offsets of %s: %s", group_id, exc)
            return [
                ErrorCode.coordinator_not_available if c is ErrorCode.none else c for c in codes
            ]
        group.pending_txn_offsets.setdefault(producer_id, {}).update(accepted)
        return codes

    def has_pending(self: _Coordinator, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of this partition for the group."""
        group = self.groups.get(group_id)
        return group is not None and any(
            (topic, partition) in offsets for offsets in group.pending_txn_offsets.values()
        )

    def complete_transaction(self: _Coordinator, producer_id: int, commit: bool) -> None:
        """A transaction's marker reached ``__consumer_offsets``: apply or drop its offsets."""
        for group in self.groups.values():
            offsets = group.pending_txn_offsets.pop(producer_id, None)
            if offsets and commit:
                group.offsets.update(offsets)

    def fetch(
        self: _Coordinator, group_id: str, wanted: list[tuple[str, list[int]]] | None
    ) -> list[tuple[str, int, CommittedOffset | None]]:
        """Committed offsets of ``group_id``: all of them when ``wanted`` is None."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if wanted is None:
            return [(t, p, o) for (t, p), o in sorted(offsets.items())]
        return [(topic, p, offsets.get((topic, p))) for topic, parts in wanted for p in parts]

    def delete_offsets(
        self: _Coordinator, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        group = self.groups.get(group_id)
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

    def expire_offsets(self: _Coordinator, retention_ms: int) -> int:
        """Drop offsets of empty groups older than ``retention_ms``; returns how many."""
        now = self.clock()
        expired = 0
        for group in list(self.groups.values()):
            if group.state is not S.EMPTY:
                continue
            stale = [
                key
                for key, o in group.offsets.items()
                if max(o.commit_timestamp, group.state_timestamp) + retention_ms <= now
            ]
            if not stale:
                continue
            entries: list[tuple[bytes, bytes | None]] = [
                (rec.offset_key(group.group_id, t, p), None) for t, p in stale
            ]
            if len(stale) == len(group.offsets) and group.generation == 0:
                entries.append((rec.group_key(group.group_id), None))
            try:
                self.store.append(group.group_id, entries)
            except StorageError as exc:
                log.error("could not expire offsets of %s: %s", group.group_id, exc)
                continue
            for key in stale:
                del group.offsets[key]
            expired += len(stale)
            if not group.offsets and group.generation == 0:
                del self.groups[group.group_id]
        return expired
