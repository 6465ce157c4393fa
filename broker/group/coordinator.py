"""The group coordinator: Kafka's classic group protocol and committed offsets, one shard per
``__consumer_offsets`` partition.

A group belongs to the partition its id hashes to (Kafka's ``partitionFor``: Java's
``String.hashCode`` modulo the partition count), and all of its state — members, generation,
committed offsets, transactional offsets still pending — lives in that partition's
:class:`~sluice.broker.group.shard.GroupCoordinatorShard`, which is loaded from the partition's
records and unloaded as a unit (:meth:`GroupCoordinator.load_partition`,
:meth:`GroupCoordinator.unload_partition`): a coordinator moves with the leadership of its
partition, as Kafka's ``GroupCoordinatorService`` with its shards. This class finds a group's
shard: a handler calls :meth:`GroupCoordinator.membership` (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, the rebalance: :mod:`~sluice.broker.group.metadata_manager`) or
:meth:`GroupCoordinator.offsets` (OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete:
:mod:`~sluice.broker.group.offset_manager`) of the group's shard; what spans shards (listing,
expiry, a transaction's end) is here.

On one node every partition is led here: :meth:`GroupCoordinator.load` loads them all, and a
partition not loaded yet (the topic grew) starts empty when a group of it is first used.
In a cluster (:meth:`GroupCoordinator.follow_leadership`) a shard is loaded when this broker
becomes the leader of its partition (in the background: :meth:`GroupCoordinator.begin_loading`,
its groups answered COORDINATOR_LOAD_IN_PROGRESS until it is loaded) and unloaded when it stops
leading it; a group of a partition not loaded here is answered NOT_COORDINATOR
(:meth:`GroupCoordinator.coordinator_error`).
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.coordinator_loads import CoordinatorLoads
from sluice.broker.errors import KafkaError
from sluice.broker.group.group import Group, GroupState
from sluice.broker.group.metadata_manager import GroupMetadataManager
from sluice.broker.group.offset_manager import OffsetMetadataManager
from sluice.broker.group.shard import GroupCoordinatorShard
from sluice.broker.internal_topic import InternalTopic, WrittenRecord, partition_for, write_error
from sluice.broker.topics import TopicManager

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator"]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"


class GroupCoordinator:
    """All groups of the broker, by shard; the handlers of the group APIs call into it."""

    def __init__(
        self, topics: TopicManager, config: BrokerConfig, clock: Callable[[], int]
    ) -> None:
        self.config = config
        self.clock = clock
        self.topics = topics
        self.store = InternalTopic(
            topics,
            OFFSETS_TOPIC,
            int(config["offsets.topic.num.partitions"]),
            int(config["offsets.topic.segment.bytes"]),
            clock,
            replication_factor=int(config["offsets.topic.replication.factor"]),
        )
        self._shards: dict[int, GroupCoordinatorShard] = {}
        self._loads = CoordinatorLoads(OFFSETS_TOPIC)
        self._started = False
        self.partition_exists: Callable[[str, int], bool] = lambda topic, index: (
            topics.partition(topic, index) is not None
        )
        """Whether a topic partition exists (offsets of unknown ones are refused): hosted
        here on one node, known to the cluster in a cluster."""
        self._offsets_partitions: Callable[[], int | None] = lambda: None
        self.clustered = False

    def follow_leadership(
        self,
        partition_exists: Callable[[str, int], bool],
        offsets_partitions: Callable[[], int | None],
    ) -> None:
        """Cluster mode: shards are loaded and unloaded as this broker gains and loses the
        leadership of their partitions; ``offsets_partitions`` is the partition count of
        ``__consumer_offsets`` in the cluster (None while it does not exist)."""
        self.clustered = True
        self.store.clustered = True
        self.partition_exists = partition_exists
        self._offsets_partitions = offsets_partitions
        for index in list(self._shards):
            self.unload_partition(index)

    # -- shards -------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id`` (on one node the topic is
        created if it does not exist yet, as AddOffsetsToTxn needs it; in a cluster, its
        partition count there, or the configured one while it does not exist: Kafka's
        ``partitionFor``)."""
        if self.clustered:
            count = self._offsets_partitions()
            return partition_for(group_id, self.store.partitions if count is None else count)
        return partition_for(group_id, self.store.ensure().partition_count)

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this broker coordinates ``group_id`` (always on one node),
        COORDINATOR_LOAD_IN_PROGRESS while its partition's shard is being loaded here, else
        NOT_COORDINATOR (its partition's shard is not loaded here)."""
        if not self.clustered:
            return ErrorCode.none
        index = partition_for(group_id, self.store.partition_count())
        if index in self._shards:
            return ErrorCode.none
        if self._loads.loading(index):
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.not_coordinator

    def loading(self) -> bool:
        """Whether a shard is being loaded (ListGroups answers COORDINATOR_LOAD_IN_PROGRESS
        then, as Kafka's)."""
        return self._loads.any()

    async def replicated(self, group_id: str, written: WrittenRecord = "offsets") -> ErrorCode:
        """Wait until what ``group_id``'s shard wrote is on its partition's in-sync replicas
        (``offsets.commit.timeout.ms``); NONE, or the error to answer for what was ``written``
        (Kafka's mapping: :func:`~sluice.broker.internal_topic.write_error`)."""
        code = await self.store.replicated(group_id, int(self.config["offsets.commit.timeout.ms"]))
        return write_error(code, written=written)

    def load(self) -> None:
        """Load every partition of ``__consumer_offsets`` (one node leads them all). Call
        :meth:`start` in the event loop afterwards."""
        for index in range(self.store.partition_count()):
            self.load_partition(index)
        count = sum(len(shard.groups.groups) for shard in self._shards.values())
        log.info("loaded %d groups from %s", count, OFFSETS_TOPIC)

    def load_partition(self, index: int) -> GroupCoordinatorShard:
        """Become the coordinator of partition ``index`` at once (one node, before serving):
        replay it into a new shard (timers started at once when the coordinator runs)."""
        self.unload_partition(index)
        shard = self._new_shard(index)
        shard.replay(self.store.replay_partition(index))
        return self._install(shard)

    def begin_loading(self, index: int) -> None:
        """Cluster mode: this broker now leads partition ``index``; it coordinates the
        partition's groups once the partition is replayed into a new shard in the background
        (:class:`~sluice.broker.coordinator_loads.CoordinatorLoads`),
        COORDINATOR_LOAD_IN_PROGRESS until then. Call in the event loop."""
        self.unload_partition(index)
        shard = self._new_shard(index)

        def done() -> str:
            shard.finish_replay()
            self._install(shard)
            return f"{len(shard.groups.groups)} groups"

        self._loads.start(index, self.store.replay_partition(index), shard.replay_batch, done)

    def _install(self, shard: GroupCoordinatorShard) -> GroupCoordinatorShard:
        self._shards[shard.partition] = shard
        if self._started:
            shard.start()
        return shard

    def unload_partition(self, index: int) -> None:
        """Stop coordinating partition ``index`` (or loading it): its shard's timers stop, its
        state goes."""
        self._loads.cancel(index)
        shard = self._shards.pop(index, None)
        if shard is not None:
            shard.close()

    def _new_shard(self, index: int) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(index, self.store, self._exists, self.config, self.clock)

    def _exists(self, topic: str, index: int) -> bool:
        return self.partition_exists(topic, index)

    def _shard(self, group_id: str) -> GroupCoordinatorShard:
        index = partition_for(group_id, self.store.partition_count())
        shard = self._shards.get(index)
        if shard is None:
            if self.clustered:  # the handlers ask coordinator_error first
                raise KafkaError(ErrorCode.not_coordinator, f"{group_id!r} is not coordinated here")
            shard = self._shards[index] = self._new_shard(index)
        return shard

    def start(self) -> None:
        """Start the session timers of the members restored by :meth:`load` (in the loop):
        members that come back keep heartbeating in their generation; the others expire."""
        self._started = True
        for shard in self._shards.values():
            shard.start()

    def close(self) -> None:
        """Stop every load; cancel every timer of every shard."""
        self._loads.cancel_all()
        for shard in self._shards.values():
            shard.close()

    # -- what the handlers call ----------------------------------------------------------------

    def membership(self, group_id: str) -> GroupMetadataManager:
        """The membership side of ``group_id``'s shard: JoinGroup, SyncGroup, Heartbeat,
        LeaveGroup (:class:`~sluice.broker.group.metadata_manager.GroupMetadataManager`)."""
        return self._shard(group_id).groups

    def offsets(self, group_id: str) -> OffsetMetadataManager:
        """The offsets side of ``group_id``'s shard: OffsetCommit, TxnOffsetCommit,
        OffsetFetch, OffsetDelete
        (:class:`~sluice.broker.group.offset_manager.OffsetMetadataManager`)."""
        return self._shard(group_id).offsets

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """A transaction's markers are written: apply or drop the offsets it committed."""
        for shard in self._shards.values():
            shard.offsets.complete_transaction(producer_id, commit)

    def expire_offsets(self, retention_ms: int) -> int:
        """Drop offsets of empty groups older than ``retention_ms``; returns how many."""
        return sum(shard.expire_offsets(retention_ms) for shard in self._shards.values())

    # -- admin (last: the method ``list`` shadows the builtin in the class body) ------------

    def describe(self, group_id: str) -> Group | None:
        """The group ``group_id`` (None: unknown)."""
        return self._shard(group_id).groups.group(group_id)

    def list(self) -> list[Group]:
        """Every live group, shard by shard."""
        return [
            g
            for index in sorted(self._shards)
            for g in self._shards[index].groups.all()
            if g.state is not GroupState.DEAD
        ]

    @property
    def groups(self) -> Mapping[str, Group]:
        """Every group of the loaded shards by id (a snapshot, for metrics and tests)."""
        return {
            g.group_id: g
            for index in sorted(self._shards)
            for g in self._shards[index].groups.all()
        }

    def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups of one group (:meth:`.GroupCoordinatorShard.delete_group`)."""
        return self._shard(group_id).delete_group(group_id)
