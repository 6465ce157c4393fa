"""One ``__consumer_offsets`` partition's share of the group coordinator, as Kafka's
``GroupCoordinatorShard``: the groups whose ids hash to that partition, loaded and unloaded as
a unit.

A shard holds a :class:`~sluice.broker.group.metadata_manager.GroupMetadataManager` (the groups
and their membership) and an :class:`~sluice.broker.group.offset_manager.OffsetMetadataManager`
(their committed offsets, which reaches the groups through the first's narrow interface). The
shard does what needs both: loading from the partition's records (:meth:`replay`), deleting a
group (its offsets and its metadata tombstoned in one batch) and expiring old offsets.

Loading replays the partition oldest first, latest record per key winning, so the last stable
generation of every group and every committed offset come back; transactional offset commits
are applied when their commit marker follows, those still open stay pending. Unloading
(:meth:`close`) cancels the shard's timers. Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.group import records as rec
from sluice.broker.group.group import GroupState
from sluice.broker.group.metadata_manager import GroupMetadataManager
from sluice.broker.group.offset_manager import OffsetMetadataManager
from sluice.broker.internal_topic import InternalTopic, ReplayedBatch
from sluice.broker.records.codec import Record
from sluice.errors import StorageError

log = logging.getLogger(__name__)

S = GroupState


class GroupCoordinatorShard:
    """The groups and offsets of ``__consumer_offsets`` partition :attr:`partition`."""

    def __init__(
        self,
        partition: int,
        store: InternalTopic,
        partition_exists: Callable[[str, int], bool],
        config: BrokerConfig,
        clock: Callable[[], int],
    ) -> None:
        self.partition = partition
        self.store = store
        self.clock = clock
        self.groups = GroupMetadataManager(store, config, clock)
        self.offsets = OffsetMetadataManager(self.groups, store, partition_exists, config, clock)
        # while replaying: the records of each open transaction, until its marker
        self._pending: dict[int, list[Record]] = {}

    # -- loading ------------------------------------------------------------------------------

    def replay(self, batches: Iterable[ReplayedBatch]) -> None:
        """Rebuild the shard from its partition's batches, as Kafka does when it loads a
        coordinator partition: :meth:`replay_batch` each, then :meth:`finish_replay`. Call
        :meth:`start` in the event loop afterwards."""
        for batch in batches:
            self.replay_batch(batch)
        self.finish_replay()

    def replay_batch(self, batch: ReplayedBatch) -> None:
        """Apply the next batch of the partition (oldest first); a transactional one waits
        for its marker."""
        if batch.control:
            records = self._pending.pop(batch.producer_id, [])
            if batch.commits:
                for record in records:
                    self._replay(record, None)
        elif batch.transactional:
            self._pending.setdefault(batch.producer_id, []).extend(batch.records)
        else:
            for record in batch.records:
                self._replay(record, None)

    def finish_replay(self) -> None:
        """The partition is replayed: the offsets of transactions still open stay pending."""
        for producer_id, records in self._pending.items():
            for record in records:
                self._replay(record, producer_id)
        self._pending.clear()
        self.groups.on_loaded()

    def _replay(self, record: Record, pending_for: int | None) -> None:
        if record.key is None:
            return
        try:
            key = rec.decode_key(record.key)
            if isinstance(key, rec.OffsetKey):
                self.offsets.replay(key, record.value, pending_for)
            else:
                self.groups.replay(key, record.value)
        except rec.RecordFormatError as exc:
            log.warning("skipping an unreadable record of __consumer_offsets: %s", exc)

    def start(self) -> None:
        """Start the session timers of the members the replay restored."""
        self.groups.start()

    def close(self) -> None:
        """Unload: cancel every timer of the shard."""
        self.groups.close()

    # -- what needs both managers -------------------------------------------------------------

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups of one Empty group: its offsets and metadata are tombstoned."""
        group = self.groups.group(group_id)
        if group is None or group.state is S.DEAD:
            return ErrorCode.group_id_not_found
        if group.state is not S.EMPTY:
            return ErrorCode.non_empty_group
        entries = self.offsets.tombstones(group_id, list(group.offsets))
        entries += self.groups.tombstone(group_id)
        try:
            self.store.append(group_id, entries)
        except StorageError:
            return ErrorCode.coordinator_not_available
        self.groups.delete(group)
        return ErrorCode.none

    def expire_offsets(self, retention_ms: int) -> int:
        """Drop offsets of empty groups older than ``retention_ms``, and a group left with no
        offsets that never had a generation; returns how many offsets went."""
        now = self.clock()
        expired = 0
        for group in self.groups.all():
            stale = self.offsets.expired(group, retention_ms, now)
            if not stale:
                continue
            entries = self.offsets.tombstones(group.group_id, stale)
            if len(stale) == len(group.offsets) and group.generation == 0:
                entries += self.groups.tombstone(group.group_id)
            try:
                self.store.append(group.group_id, entries)
            except StorageError as exc:
                log.error("could not expire offsets of %s: %s", group.group_id, exc)
                continue
            self.offsets.remove(group, stale)
            expired += len(stale)
            if not group.offsets and group.generation == 0:
                self.groups.forget(group.group_id)
        return expired
