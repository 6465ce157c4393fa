"""The replicas a broker hosts and its role for each (Kafka's ``ReplicaManager``, driven by the
partition states the controller writes instead of LeaderAndIsr requests).

:meth:`ReplicaManager.apply` puts a partition's state in force on this broker: it hosts the
replica when the partition is assigned here (:meth:`TopicManager.host`, creating the log) and
removes it when no longer; the leader named by the state leads — it records the leader epoch in
its log and keeps a :class:`~sluice.broker.replication.leadership.Leadership` (high watermark,
ISR, ``acks=all``), and goes on in the same one when only the epoch moved (the controller took a
dead follower out of the ISR) — and every other replica follows it with the replica fetcher. A
partition without a live leader is served by nobody (NOT_LEADER_OR_FOLLOWER). The coordinators
hear of every leadership won or lost (``Broker.leadership_changed``).

It is also the leaders' :class:`~sluice.broker.replication.leadership.IsrStore`: an ISR change
is a versioned write of the partition's state (:meth:`ReplicaManager.propose_isr`), and it
shrinks the ISRs every half ``replica.lag.time.max.ms`` and checkpoints the high watermarks
(``replication-offset-checkpoint``). Everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.cluster.metadata_cache import NO_LEADER, ClusterMetadata
from sluice.broker.cluster.metadata_store import MetadataStore, MetadataStoreError
from sluice.broker.cluster.model import BadVersion, PartitionState, Versioned
from sluice.broker.replication.fetcher import ReplicaFetcherManager
from sluice.broker.replication.hw_checkpoint import (
    checkpoint_high_watermarks,
    read_high_watermarks,
    write_high_watermarks,
)
from sluice.broker.replication.leadership import Leadership
from sluice.broker.security.inter_broker import PLAINTEXT, InterBrokerSecurity
from sluice.broker.topics import Partition
from sluice.errors import StorageError

if TYPE_CHECKING:
    from sluice.broker.broker import Broker

log = logging.getLogger(__name__)


class ReplicaManager:
    """See the module docstring."""

    def __init__(
        self,
        broker: Broker,
        store: MetadataStore,
        cache: ClusterMetadata,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.broker = broker
        self.store = store
        self.cache = cache
        self.broker_id = broker.node_id
        self.fetchers = ReplicaFetcherManager(
            self.broker_id,
            broker.config,
            broker.clock,
            throttles=broker.replication_throttles,
            security=security,
        )
        self.fetchers.on_storage_error = self._storage_error
        self.closed = False
        self._writing: asyncio.Future[None] | None = None
        """The last periodic checkpoint's write (:meth:`checkpoint_in_thread`)."""
        self.isr_shrinks = 0
        """ISR changes this broker wrote as a leader that dropped followers (Kafka's
        ``IsrShrinksPerSec`` meter, as a count)."""
        self.isr_expands = 0
        """ISR changes this broker wrote as a leader that added followers (``IsrExpandsPerSec``)."""
        self._applied: dict[tuple[str, int], tuple[int, int, tuple[str, int] | None]] = {}
        """Per hosted partition, the leader, leader epoch and leader's address (None: this
        broker, or unknown) last put in force."""

    def prepare(self) -> None:
        """Before the listener opens: no hosted partition is led until the cluster says so,
        and each gets the high watermark of the last checkpoint (the log end is not known to
        be committed)."""
        saved: dict[tuple[str, int], int] = {}
        for directory in self.broker.log_dirs.online():  # one checkpoint per log directory
            saved.update(read_high_watermarks(directory.path))
        for partition in self.broker.topics.all_partitions():
            partition.is_leader = False
            partition.log.set_high_watermark(saved.get((partition.topic, partition.index), 0))

    async def close(self) -> None:
        """Stop fetching and leading; checkpoint the high watermarks."""
        self.closed = True
        await self.fetchers.close()
        for partition in self.broker.topics.all_partitions():
            self.stop_leading(partition)
        if self._writing is not None:  # a periodic checkpoint still being written: first
            with contextlib.suppress(StorageError):
                await self._writing
        self.checkpoint()

    def forget(self, topic: str, index: int) -> None:
        """The partition's state went (its topic was deleted)."""
        self._applied.pop((topic, index), None)

    def resign_all(self) -> None:
        """The broker's session expired: stop leading everything at once."""
        for partition in self.broker.topics.all_partitions():
            if partition.is_leader:
                self.stop_leading(partition)
                self.broker.leadership_changed(partition.topic, partition.index, False)
        self._applied.clear()

    def _storage_error(self, partition: Partition, error: str) -> None:
        """A followed partition's disk failed: its log directory goes offline."""
        self.broker.storage_failed(partition.log.directory, error)

    def take_offline(self, partitions: list[Partition]) -> None:
        """Their log directory failed: stop leading and following them (the controller moves
        their leadership away once the member tells it)."""
        for partition in partitions:
            was_leader = partition.is_leader
            self.stop_leading(partition)
            self.fetchers.unfollow(partition)
            self._applied.pop((partition.topic, partition.index), None)
            if was_leader:
                self.broker.leadership_changed(partition.topic, partition.index, False)

    async def apply(self, topic: str, index: int) -> None:
        """Put the partition's state in force on this broker's replica."""
        assignment = self.cache.assignments.get(topic)
        if assignment is None or assignment.value.topic_id is None or self.closed:
            return
        replicas = assignment.value.partitions.get(index)
        if replicas is None or self.broker_id not in replicas.replicas:
            local = self.broker.topics.get(topic)
            if local is not None and index in local.partitions:
                self.stop_leading(local.partitions[index])
                self.fetchers.unfollow(local.partitions[index])
                self.broker.topics.unhost(local, index)
                self._applied.pop((topic, index), None)
            return
        partition = self.broker.topics.partition(topic, index)
        if partition is None:
            overrides = await run_blocking(self.store.configs.get, "topics", topic)
            partition = self.broker.topics.partition(topic, index)  # may exist by now
            if partition is None:
                partition = self.broker.topics.host(
                    topic,
                    assignment.value.topic_id,
                    len(assignment.value.partitions),
                    overrides,
                    index,
                )
                partition.is_leader = False
                partition.log.set_high_watermark(0)
        if partition.offline:  # its log directory failed: neither led nor followed here
            self.take_offline([partition])
            return
        partition.adding_replicas = replicas.adding  # reassignment metrics
        versioned = self.cache.states.get((topic, index))
        if versioned is None:
            return
        state = versioned.value
        leader_at = None if state.leader == self.broker_id else self.cache.endpoint(state.leader)
        wanted = (state.leader, state.leader_epoch, leader_at)
        if self._applied.get((topic, index)) == wanted:
            if partition.leadership is not None:
                partition.leadership.update_replicas(replicas.replicas)
                partition.leadership.update_state(versioned)
            return
        self._applied[(topic, index)] = wanted
        if state.leader == self.broker_id and partition.leadership is not None:
            partition.leadership.update_replicas(replicas.replicas)
            self._lead_on(partition, versioned)
        elif state.leader == self.broker_id:
            self._become_leader(partition, replicas.replicas, versioned)
        else:
            self._become_follower(partition, state)

    def _become_leader(
        self, partition: Partition, replicas: tuple[int, ...], state: Versioned[PartitionState]
    ) -> None:
        self.fetchers.unfollow(partition)
        self.stop_leading(partition)
        try:
            partition.log.become_leader(state.value.leader_epoch)
        except ValueError as exc:  # an older epoch than the log's: a stale state
            log.warning("%s-%d: not leading: %s", partition.topic, partition.index, exc)
            return
        partition.leadership = Leadership(
            partition,
            self.broker_id,
            replicas,
            state,
            self.broker.config,
            self.broker.clock,
            self,
            self._live_ids,
        )
        partition.is_leader = True
        log.info(
            "%s-%d: leader in epoch %d (isr %s)",
            partition.topic,
            partition.index,
            state.value.leader_epoch,
            list(state.value.isr),
        )
        self.broker.leadership_changed(partition.topic, partition.index, True)

    def _lead_on(self, partition: Partition, state: Versioned[PartitionState]) -> None:
        """Still the leader, in a new epoch (the controller changed the ISR): the followers'
        positions and the waiting writes carry on."""
        assert partition.leadership is not None
        try:
            partition.log.become_leader(state.value.leader_epoch)
        except ValueError as exc:
            log.warning("%s-%d: %s", partition.topic, partition.index, exc)
            return
        partition.leadership.update_state(state)
        log.info(
            "%s-%d: leader in epoch %d (isr %s)",
            partition.topic,
            partition.index,
            state.value.leader_epoch,
            list(state.value.isr),
        )

    def _become_follower(self, partition: Partition, state: PartitionState) -> None:
        was_leader = partition.is_leader
        self.stop_leading(partition)
        endpoint = self.cache.endpoint(state.leader) if state.leader != NO_LEADER else None
        if endpoint is None:
            self.fetchers.unfollow(partition)
            log.info("%s-%d: no live leader", partition.topic, partition.index)
        else:
            self.fetchers.follow(partition, state.leader, endpoint, state.leader_epoch)
            log.info(
                "%s-%d: following %d in epoch %d",
                partition.topic,
                partition.index,
                state.leader,
                state.leader_epoch,
            )
        if was_leader:
            self.broker.leadership_changed(partition.topic, partition.index, False)

    def stop_leading(self, partition: Partition) -> None:
        partition.is_leader = False
        if partition.leadership is not None:
            partition.leadership.resign()
            partition.leadership = None
        partition.notify()

    def unhost_topic(self, name: str) -> None:
        """The topic was deleted: drop this broker's replicas of it."""
        topic = self.broker.topics.get(name)
        if topic is None:
            return
        for partition in list(topic.partitions.values()):
            was_leader = partition.is_leader
            self.stop_leading(partition)
            self.fetchers.unfollow(partition)
            if was_leader:
                self.broker.leadership_changed(name, partition.index, False)
        self.broker.topics.delete(topic)

    async def propose_isr(
        self, topic: str, partition: int, state: Versioned[PartitionState], isr: tuple[int, ...]
    ) -> Versioned[PartitionState] | None:
        """Write ``state`` with ``isr`` at its version (no controller fence: the version is the
        fence); the state written, or None when the state changed first."""
        new = PartitionState(
            state.value.leader,
            state.value.leader_epoch,
            isr,
            state.value.controller_epoch,
            state.value.leader_recovery_state,
        )
        try:
            written = await run_blocking(
                self.store.set_partition_state, topic, partition, new, state.version, None
            )
        except MetadataStoreError as exc:
            log.warning("%s-%d: ISR change to %s not written: %s", topic, partition, isr, exc)
            return None
        if isinstance(written, BadVersion):
            return None
        log.info("%s-%d: ISR is now %s", topic, partition, list(isr))
        if len(isr) < len(state.value.isr):
            self.isr_shrinks += 1
        elif len(isr) > len(state.value.isr):
            self.isr_expands += 1
        result = Versioned(new, written)
        self.cache.set_state(topic, partition, result)
        return result

    async def shrink_isrs(self) -> None:
        """Every half ``replica.lag.time.max.ms``: each leader drops its lagging followers."""
        now = self.broker.clock()
        for partition in self.broker.topics.all_partitions():
            if partition.leadership is not None:
                await partition.leadership.maybe_shrink_isr(now)

    def checkpoint(self) -> None:
        """Write every hosted partition's high watermark to ``replication-offset-checkpoint``."""
        for directory in self.broker.log_dirs.online():  # one checkpoint per log directory
            checkpoint_high_watermarks(directory.path, self.broker.topics.in_dir(directory))

    async def checkpoint_in_thread(self) -> None:
        """:meth:`checkpoint`, the high watermarks taken here and the file written (and
        fsynced) by a thread, as Kafka's scheduler thread writes it: an fsync behind a lot of
        written data can take hundreds of milliseconds, which must not stall the event loop.
        A cancelled caller leaves the write to finish (:meth:`close` waits for it)."""
        snapshots = {
            directory.path: {
                (p.topic, p.index): p.log.high_watermark
                for p in self.broker.topics.in_dir(directory)
            }
            for directory in self.broker.log_dirs.online()
        }
        self._writing = asyncio.ensure_future(run_blocking(_write_checkpoints, snapshots))
        await asyncio.shield(self._writing)

    def _live_ids(self) -> Collection[int]:
        return self.cache.brokers.keys()


def _write_checkpoints(snapshots: dict[Path, dict[tuple[str, int], int]]) -> None:
    """Write each log directory's ``replication-offset-checkpoint``."""
    for directory, snapshot in snapshots.items():
        write_high_watermarks(directory, snapshot)
