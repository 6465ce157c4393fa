"""What a broker knows of the cluster: live brokers, the controller, every topic's assignment
and every partition's state — Kafka's ``MetadataCache``, fed by the metadata store's watches.

The cache is written and read on the broker's event loop only (the member hands each watch's
value over with ``loop.call_soon_threadsafe``). Metadata, DescribeCluster, CreateTopics'
wait for leaders and the routing of requests all read it; nothing here talks to the store.

>>> from sluice.broker.cluster.model import ReplicaAssignment
>>> cache = ClusterMetadata()
>>> assignment = TopicAssignment({0: ReplicaAssignment((1, 2))}, uuid.UUID(int=7))
>>> cache.set_assignment("t", Versioned(assignment, 0))
>>> cache.set_state("t", 0, Versioned(PartitionState(2, 3, (2,), 1), 4))
>>> cache.topic("t").partitions[0]  # no broker registered yet: no live leader
PartitionInfo(index=0, leader=-1, leader_epoch=3, replicas=(1, 2), isr=(2,), offline=(1, 2))
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sluice.broker.cluster.model import (
    LiveBroker,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    Versioned,
)

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionInfo:
    """One partition as clients are told about it (Metadata's partition entry)."""

    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    """One topic as clients are told about it."""

    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo]

    @property
    def internal(self) -> bool:
        return self.name.startswith("__")


@dataclass
class ClusterMetadata:
    """The broker's copy of the cluster's metadata; see the module docstring."""

    brokers: dict[int, LiveBroker] = field(default_factory=dict)
    controller_id: int | None = None
    assignments: dict[str, Versioned[TopicAssignment]] = field(default_factory=dict)
    states: dict[tuple[str, int], Versioned[PartitionState]] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each topic's config overrides (``/config/topics/<t>``)."""
    offline_replicas: dict[int, frozenset[TopicPartition]] = field(default_factory=dict)
    """Per broker, its replicas on a failed log directory (``/log_dir_event_notification``):
    listed as offline replicas, as Kafka's metadata lists them."""
    inter_broker_listener: str = "PLAINTEXT"
    """The listener brokers connect to each other on (``inter.broker.listener.name``): the
    endpoint :meth:`endpoint` gives when no listener is named."""

    # -- updates (from the store's watches) -------------------------------------------------

    def set_assignment(self, topic: str, assignment: Versioned[TopicAssignment] | None) -> None:
        """The topic's assignment, or None once it was deleted (its states go with it)."""
        if assignment is None:
            self.assignments.pop(topic, None)
            self.topic_configs.pop(topic, None)
            for key in [k for k in self.states if k[0] == topic]:
                del self.states[key]
        else:
            self.assignments[topic] = assignment

    def set_state(
        self, topic: str, partition: int, state: Versioned[PartitionState] | None
    ) -> None:
        """The partition's state; a state older than the one known (by version) is ignored,
        as watches of one znode can deliver in order only per session."""
        known = self.states.get((topic, partition))
        if state is None:
            self.states.pop((topic, partition), None)
        elif known is None or state.version >= known.version:
            self.states[(topic, partition)] = state

    # -- queries ----------------------------------------------------------------------------

    def topic_names(self) -> list[str]:
        return sorted(self.assignments)

    def topic(self, name: str) -> TopicInfo | None:
        """The topic as clients see it, or None when it does not exist (or has no id yet)."""
        assignment = self.assignments.get(name)
        if assignment is None or assignment.value.topic_id is None:
            return None
        partitions = {
            index: self.partition(name, index, replicas.replicas)
            for index, replicas in sorted(assignment.value.partitions.items())
        }
        return TopicInfo(name, assignment.value.topic_id, partitions)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for name, assignment in self.assignments.items():
            if assignment.value.topic_id == topic_id:
                return self.topic(name)
        return None

    def partition(self, topic: str, index: int, replicas: tuple[int, ...]) -> PartitionInfo:
        state = self.states.get((topic, index))
        tp = TopicPartition(topic, index)
        offline = tuple(
            r
            for r in replicas
            if r not in self.brokers or tp in self.offline_replicas.get(r, frozenset())
        )
        if state is None:
            return PartitionInfo(index, NO_LEADER, -1, replicas, (), offline)
        leader = state.value.leader if state.value.leader in self.brokers else NO_LEADER
        return PartitionInfo(
            index, leader, state.value.leader_epoch, replicas, state.value.isr, offline
        )

    def endpoint(self, node_id: int, listener: str | None = None) -> tuple[str, int] | None:
        """The advertised host and port of a live broker on ``listener`` (None: the
        inter-broker listener); None: not live, or it has no such listener."""
        live = self.brokers.get(node_id)
        name = self.inter_broker_listener if listener is None else listener
        found = None if live is None else live.registration.endpoint(name)
        return None if found is None else (found.host, found.port)

    def leader_of(self, topic: str, index: int) -> int:
        """The partition's live leader, or -1."""
        state = self.states.get((topic, index))
        if state is None or state.value.leader not in self.brokers:
            return NO_LEADER
        return state.value.leader

    def all_led(self, topic: str) -> bool:
        """Whether every partition of the topic has a live leader (CreateTopics waits for it)."""
        assignment = self.assignments.get(topic)
        return assignment is not None and all(
            self.leader_of(topic, index) != NO_LEADER for index in assignment.value.partitions
        )
