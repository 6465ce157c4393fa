"""The cluster's admin operations, taken by any broker and written to the metadata store as in
Kafka's ZooKeeper era: topics created (Kafka's placement over the live brokers, or the request's
own assignment), grown, configured and deleted, partitions reassigned, and leader elections
requested.

A :class:`ClusterAdmin` reads what it checks from the broker's metadata cache and writes
through the store (blocking calls, in the loop's executor); the controller and the brokers'
watches do the rest. :meth:`ClusterAdmin.wait_for` lets a handler answer once the cache shows
the change (CreateTopics waits for leaders, DeleteTopics for the topic to go).
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Mapping

from kio.schema.errors import ErrorCode

from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.cluster.metadata_cache import NO_LEADER, ClusterMetadata
from sluice.broker.cluster.metadata_store import (
    AdminRequestPendingError,
    MetadataStore,
    TopicExistsError,
)
from sluice.broker.cluster.model import (
    BadVersion,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from sluice.broker.cluster.placement import Broker as PlacedBroker
from sluice.broker.cluster.placement import assign_replicas
from sluice.broker.errors import KafkaError
from sluice.broker.log.partition_metadata import random_topic_id
from sluice.broker.topics import check_partitions_added


class ClusterAdmin:
    """See the module docstring."""

    def __init__(self, store: MetadataStore, cache: ClusterMetadata) -> None:
        self.store = store
        self.cache = cache

    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        config: Mapping[str, str],
        *,
        assignments: Mapping[int, list[int]] | None = None,
        validate_only: bool = False,
    ) -> uuid.UUID | None:
        """Create a topic in the cluster (any broker may: ZooKeeper-era admin); replicas by
        Kafka's placement over the live brokers unless ``assignments`` are given. Raises
        :class:`KafkaError` (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR,
        INVALID_REPLICA_ASSIGNMENT); the new topic's id (None when only validating)."""
        live = self.cache.brokers
        if assignments is None:
            placed = [PlacedBroker(b, live[b].registration.rack) for b in sorted(live)]
            assignments = assign_replicas(placed, partitions, replication_factor)
        else:
            self._check_assignments(assignments)
        assignment = TopicAssignment(
            {i: ReplicaAssignment(tuple(r)) for i, r in assignments.items()}, random_topic_id()
        )
        if validate_only:
            if name in self.cache.assignments:
                raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
            return None
        try:
            await run_blocking(self.store.create_topic, name, assignment, dict(config))
        except TopicExistsError as exc:
            raise KafkaError(ErrorCode.topic_already_exists, str(exc)) from None
        return assignment.topic_id

    async def add_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None, *, validate_only: bool
    ) -> None:
        """Grow a topic to ``count`` partitions (CreatePartitions): the new partitions' replicas
        by Kafka's placement (or as given), written to the topic's assignment at the version
        read; the controller then elects their leaders."""
        current = self.cache.assignments.get(name)
        if current is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"unknown topic {name!r}")
        have = len(current.value.partitions)
        if count <= have:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"topic has {have} partitions; the count can only grow (asked {count})",
            )
        check_partitions_added(count - have)
        live = self.cache.brokers
        factor = len(current.value.partitions[0].replicas)
        if assignments:
            if len(assignments) != count - have:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"{len(assignments)} assignments for {count - have} new partitions",
                )
            added = dict(enumerate(assignments, start=have))
            self._check_assignments(added)
        else:
            placed = [PlacedBroker(b, live[b].registration.rack) for b in sorted(live)]
            added = assign_replicas(placed, count - have, factor, first_partition=have)
        if validate_only:
            return
        partitions = dict(current.value.partitions)
        partitions.update({i: ReplicaAssignment(tuple(r)) for i, r in added.items()})
        written = await run_blocking(
            self.store.set_topic_assignment,
            name,
            TopicAssignment(partitions, current.value.topic_id),
            current.version,
        )
        if isinstance(written, BadVersion):
            raise KafkaError(
                ErrorCode.reassignment_in_progress, f"topic {name!r} changed meanwhile: retry"
            )

    async def alter_reassignments(
        self, topic: str, targets: Mapping[int, list[int] | None]
    ) -> dict[int, tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments for ``topic``'s partitions (KIP-455): each target (None:
        cancel) is written into the topic's assignment — the replicas being the target first,
        then the original ones not in it, with ``adding``/``removing`` — and the controller
        completes it once the target is in sync. Kafka's answers per partition:
        UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, doubled or unknown
        brokers), NO_REASSIGNMENT_IN_PROGRESS (a cancel with none); a target equal to the
        replicas of a partition not being reassigned changes nothing."""
        answers: dict[int, tuple[ErrorCode, str | None]] = {}
        current = self.cache.assignments.get(topic)
        for _ in range(10):  # versioned write, retried when a concurrent change raced it
            if current is None:
                message = f"Topic '{topic}' does not exist."
                return {i: (ErrorCode.unknown_topic_or_partition, message) for i in targets}
            partitions = dict(current.value.partitions)
            for index, target in targets.items():
                answers[index] = self._reassign_one(partitions, index, target)
            if partitions == current.value.partitions:
                return answers
            written = await run_blocking(
                self.store.set_topic_assignment,
                topic,
                TopicAssignment(partitions, current.value.topic_id),
                current.version,
            )
            if not isinstance(written, BadVersion):
                return answers
            current = await run_blocking(self.store.topic_assignment, topic)
        raise KafkaError(ErrorCode.reassignment_in_progress, f"topic {topic!r} kept changing")

    def _reassign_one(
        self, partitions: dict[int, ReplicaAssignment], index: int, target: list[int] | None
    ) -> tuple[ErrorCode, str | None]:
        """Put partition ``index``'s reassignment to ``target`` (None: cancelled) in
        ``partitions``; the answer for it."""
        current = partitions.get(index)
        if current is None:
            return ErrorCode.unknown_topic_or_partition, f"Partition {index} does not exist."
        original = tuple(r for r in current.replicas if r not in current.adding)
        if target is None:
            if not current.adding and not current.removing:
                return ErrorCode.no_reassignment_in_progress, None
            partitions[index] = ReplicaAssignment(original)
            return ErrorCode.none, None
        unknown = [r for r in target if r not in self.cache.brokers]
        if not target or len(set(target)) != len(target) or unknown:
            return (
                ErrorCode.invalid_replica_assignment,
                f"replicas {target} must be distinct registered brokers"
                + (f" ({unknown} are not)" if unknown else ""),
            )
        wanted = tuple(target)
        if wanted == original:
            partitions[index] = ReplicaAssignment(original)
        else:
            partitions[index] = ReplicaAssignment(
                wanted + tuple(r for r in original if r not in wanted),
                adding=tuple(r for r in wanted if r not in original),
                removing=tuple(r for r in original if r not in wanted),
            )
        return ErrorCode.none, None

    def reassignments(self) -> dict[TopicPartition, ReplicaAssignment]:
        """The partitions being reassigned (ListPartitionReassignments), from the cache."""
        return {
            TopicPartition(topic, index): replicas
            for topic, assignment in sorted(self.cache.assignments.items())
            for index, replicas in sorted(assignment.value.partitions.items())
            if replicas.adding or replicas.removing
        }

    def _check_assignments(self, assignments: Mapping[int, list[int]]) -> None:
        live = self.cache.brokers
        for index, replicas in assignments.items():
            unknown = [r for r in replicas if r not in live]
            if len(set(replicas)) != len(replicas) or not replicas or unknown:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"partition {index}: replicas {replicas} must be distinct live brokers",
                )

    async def ensure_topic(
        self, name: str, partitions: int, replication_factor: int, config: Mapping[str, str]
    ) -> None:
        """Create the topic unless it exists (the internal topics, auto-creation)."""
        if name in self.cache.assignments:
            return
        try:
            await self.create_topic(name, partitions, replication_factor, config)
        except KafkaError as exc:
            if exc.code != ErrorCode.topic_already_exists:
                raise

    async def set_topic_config(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's config overrides in the cluster; every broker hosting it applies
        them when the change notification reaches it."""
        await run_blocking(self.store.configs.set, "topics", name, dict(overrides))
        self.cache.topic_configs[name] = dict(overrides)

    async def delete_topic(self, name: str) -> None:
        """Ask the controller to delete the topic."""
        await run_blocking(self.store.admin.request_topic_deletion, name)

    async def elect_leaders(
        self, partitions: list[TopicPartition], *, unclean: bool, timeout_s: float
    ) -> set[TopicPartition]:
        """Ask the controller for a preferred (or unclean) election of ``partitions`` and wait
        (at most ``timeout_s``) until the cache shows them elected; those that are."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                await run_blocking(
                    functools.partial(
                        self.store.admin.request_preferred_election, partitions, unclean=unclean
                    )
                )
                break
            except AdminRequestPendingError:  # one request of a kind at a time: queue up
                if loop.time() >= deadline:
                    return set()
                await asyncio.sleep(0.1)

        def elected(tp: TopicPartition) -> bool:
            leader = self.cache.leader_of(tp.topic, tp.partition)
            if unclean:
                return leader != NO_LEADER
            assignment = self.cache.assignments.get(tp.topic)
            found = None if assignment is None else assignment.value.partitions.get(tp.partition)
            return found is not None and leader == found.replicas[0]

        await self.wait_for(lambda: all(elected(tp) for tp in partitions), deadline - loop.time())
        return {tp for tp in partitions if elected(tp)}

    async def wait_for(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Wait (bounded) until ``condition`` holds on the cache, checked at each change."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not condition():
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True
