"""Internal topics: how many partitions each gets, creating them, checking co-partitioning.

- A repartition topic gets as many partitions as the topics feeding the sub-topology that
  writes it (Kafka's rule), or the count of the topics it must be co-partitioned with.
- A changelog topic gets one partition per task of its sub-topology, and is compacted.
- Topics that must be co-partitioned (both sides of a join) must have equal partition counts;
  otherwise the application refuses to start and says which topics differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sluice.streams.errors import StreamsError, TopologyError
from sluice.streams.topology import SinkNode, Topology

__all__ = ["InternalTopics"]

log = logging.getLogger("sluice.streams")


class InternalTopics:
    """Partition counts of every topic a topology reads, and of the topics it creates."""

    def __init__(self, topology: Topology, application_id: str, replication_factor: int) -> None:
        self.topology = topology
        self.application_id = application_id
        self.replication_factor = replication_factor
        self.partitions: dict[str, int] = {}
        self.changelogs: dict[str, str] = {}  # store -> changelog topic

    def changelog_topic(self, store: str) -> str | None:
        """The topic a store is logged to / restored from (None: not logged)."""
        return self.changelogs.get(store)

    def prepare(self, admin: AdminClient, timeout_s: float = 30.0) -> None:
        """Look up source topics, size and create internal topics, check co-partitioning."""
        topology = self.topology
        external = [t for t in topology.source_topics() if t not in topology.repartition_topics] + [
            g.topic for g in topology.global_stores.values()
        ]
        metadata = admin.list_topics(timeout=timeout_s)
        missing = []
        for topic in external:
            found = metadata.topics.get(topic)
            if found is None or found.error is not None:
                missing.append(topic)
            else:
                self.partitions[topic] = len(found.partitions)
        if missing:
            raise StreamsError(
                f"source topics do not exist: {', '.join(sorted(missing))} "
                "(create them first: sluice topics create <name> --partitions N)"
            )
        self._size_repartition_topics()
        self._check_copartitioning()
        subs = topology.subtopologies()
        to_create: list[NewTopic] = []
        for topic in topology.repartition_topics:
            to_create.append(NewTopic(topic, self.partitions[topic], self.replication_factor))
        for sub in subs:
            tasks = max((self.partitions[t] for t in sub.source_topics), default=1)
            for store in sub.stores:
                if store in topology.source_changelogs:
                    self.changelogs[store] = topology.source_changelogs[store]
                    continue
                spec = topology.stores[store]
                if not spec.logged:
                    continue
                topic = f"{self.application_id}-{store}-changelog"
                self.changelogs[store] = topic
                self.partitions[topic] = tasks
                to_create.append(
                    NewTopic(
                        topic, tasks, self.replication_factor, config=dict(spec.changelog_config)
                    )
                )
        self._create(admin, metadata.topics, to_create, timeout_s)

    def _size_repartition_topics(self) -> None:
        topology = self.topology
        writers: dict[str, list[str]] = {}  # repartition topic -> source topics upstream
        subs = topology.subtopologies()
        for sub in subs:
            for name in sub.nodes:
                node = topology.nodes[name]
                if (
                    isinstance(node, SinkNode)
                    and isinstance(node.topic, str)
                    and node.topic in topology.repartition_topics
                ):
                    writers.setdefault(node.topic, []).extend(sub.source_topics)
        for topic, internal in topology.repartition_topics.items():
            if internal.partitions is not None:
                self.partitions[topic] = internal.partitions
        # Co-partitioned with an external topic: take its count.
        for group in self._groups():
            known = [self.partitions[t] for t in group if t in self.partitions]
            for topic in group:
                if topic in topology.repartition_topics and topic not in self.partitions and known:
                    self.partitions[topic] = max(known)
        for _ in range(len(topology.repartition_topics) + 1):
            for topic in topology.repartition_topics:
                if topic in self.partitions:
                    continue
                upstream = writers.get(topic, [])
                if upstream and all(t in self.partitions for t in upstream):
                    self.partitions[topic] = max(self.partitions[t] for t in upstream)
        for topic in topology.repartition_topics:
            self.partitions.setdefault(topic, 1)

    def _groups(self) -> list[set[str]]:
        """Joined topics, and the topics one sub-topology reads together: one task reads
        partition *p* of each, so their partition counts must match."""
        groups = list(self.topology.copartition_groups)
        for sub in self.topology.subtopologies():
            if len(sub.source_topics) > 1:
                groups.append(set(sub.source_topics))
        return groups

    def _check_copartitioning(self) -> None:
        for group in self._groups():
            counts = {t: self.partitions[t] for t in group if t in self.partitions}
            if len(set(counts.values())) > 1:
                listed = ", ".join(f"{t} ({n})" for t, n in sorted(counts.items()))
                raise TopologyError(
                    "topics joined or read together must have the same number of partitions "
                    f"(co-partitioning): {listed}. Repartition one side with "
                    "stream.repartition(partitions=N) or recreate the topic."
                )

    def _create(
        self,
        admin: AdminClient,
        existing: Mapping[str, object],
        topics: list[NewTopic],
        timeout_s: float,
    ) -> None:
        wanted = [t for t in topics if t.topic not in existing]
        for topic in topics:
            found = existing.get(topic.topic)
            if found is not None:
                have = len(found.partitions)  # type: ignore[attr-defined]
                if have != topic.num_partitions:
                    raise StreamsError(
                        f"internal topic {topic.topic} has {have} partitions, "
                        f"{topic.num_partitions} expected: delete it (sluice topics delete) "
                        "to let the application recreate it"
                    )
        if not wanted:
            return
        futures = admin.create_topics(wanted, operation_timeout=timeout_s)
        for name, future in futures.items():
            try:
                future.result(timeout_s)
                log.info("created internal topic %s", name)
            except Exception as error:
                if "TOPIC_ALREADY_EXISTS" in str(error) or "already exists" in str(error):
                    continue  # another instance created it first
                raise StreamsError(f"cannot create internal topic {name}: {error}") from error


PartitionsOf = Callable[[str], int]
