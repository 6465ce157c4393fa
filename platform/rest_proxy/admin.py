"""The cluster operations behind API v3, through the pool's AdminClient (blocking: called from
worker threads).

Each method returns plain data (or raises a :class:`~sluice.rest_proxy.errors.RestError`);
:mod:`sluice.rest_proxy.v3` shapes it into Confluent's bodies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # no __all__
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from sluice.rest_proxy.errors import (
    GROUP_NOT_FOUND,
    KAFKA_BAD_REQUEST,
    PARTITION_NOT_FOUND,
    RestError,
    from_kafka,
    topic_not_found,
)
from sluice.rest_proxy.pool import ClientPool

__all__ = ["ClusterAdmin", "GroupInfo", "PartitionLag", "TopicInfo"]


@dataclass(frozen=True)
class TopicInfo:
    """A topic's name, partitions (id → leader, replicas) and whether it is internal."""

    name: str
    partitions: dict[int, tuple[int | None, list[int]]]
    internal: bool

    @property
    def replication_factor(self) -> int:
        """The replicas of its first partition."""
        return len(next(iter(self.partitions.values()), (None, []))[1])


@dataclass(frozen=True)
class GroupInfo:
    """A consumer group as DescribeGroups tells it."""

    group_id: str
    simple: bool
    assignor: str
    state: str
    coordinator: int | None
    group_type: str
    members: list[tuple[str, str | None, str, list[tuple[str, int]]]]
    """(consumer id, instance id, client id, assigned partitions)."""


@dataclass(frozen=True)
class PartitionLag:
    """A group's committed offset of a partition against its end."""

    topic: str
    partition: int
    current: int
    end: int
    member: tuple[str, str | None, str] | None


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value) or "UNKNOWN")


def _source(value: Any) -> str:
    """A config source's name (confluent-kafka gives the number)."""
    if isinstance(value, int):
        try:
            return ConfigSource(value).name
        except ValueError:
            return "UNKNOWN_CONFIG"
    return _enum_name(value)


class ClusterAdmin:
    """v3's cluster operations over a :class:`ClientPool`."""

    def __init__(self, pool: ClientPool) -> None:
        self.pool = pool

    # -- cluster and topics -------------------------------------------------------------------

    def controller(self) -> int | None:
        """The controller's broker id."""
        described = self.pool.wait(self.pool.admin.describe_cluster(**self.pool.options))
        return None if described.controller is None else int(described.controller.id)

    def topics(self, name: str | None = None) -> list[TopicInfo]:
        """Every topic (or the one named: 40401 if it does not exist)."""
        admin = self.pool.admin
        try:
            metadata = admin.list_topics(topic=name, timeout=self.pool.timeout_s)
        except Exception as error:
            raise self.pool.failure(error, topic=name or "") from None
        found = []
        for topic in sorted(metadata.topics.values(), key=lambda t: t.topic or ""):
            if topic.error is not None:
                if name is not None and topic.error.code() in (
                    KafkaError.UNKNOWN_TOPIC_OR_PART,
                    KafkaError._UNKNOWN_TOPIC,
                ):
                    raise topic_not_found(name)
                if name is not None:
                    raise from_kafka(topic.error, topic=name)
                continue
            partitions = {
                p.id: (None if p.leader < 0 else p.leader, list(p.replicas))
                for p in topic.partitions.values()
            }
            name_of = topic.topic or ""
            found.append(TopicInfo(name_of, partitions, name_of.startswith("__")))
        if name is not None and not found:
            raise topic_not_found(name)
        return found

    def topic(self, name: str) -> TopicInfo:
        """One topic (40401 if it does not exist)."""
        return self.topics(name)[0]

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication: int,
        configs: dict[str, str],
        validate_only: bool,
    ) -> None:
        """CreateTopics (-1 for a count: the broker's default)."""
        new = NewTopic(
            name, num_partitions=partitions, replication_factor=replication, config=configs
        )
        futures = self.pool.admin.create_topics(
            [new],
            validate_only=validate_only,
            operation_timeout=self.pool.timeout_s,
            **self.pool.options,
        )
        self.pool.wait(futures[name], topic=name)
        self.pool.forget(name)

    def delete_topic(self, name: str) -> None:
        """DeleteTopics (40401 if it does not exist)."""
        self.topic(name)
        futures = self.pool.admin.delete_topics(
            [name], operation_timeout=self.pool.timeout_s, **self.pool.options
        )
        self.pool.wait(futures[name], topic=name)
        self.pool.forget(name)

    def partition(self, topic: str, partition: int) -> tuple[int | None, list[int]]:
        """A partition's leader and replicas (40402 if the topic has no such partition)."""
        info = self.topic(topic)
        if partition not in info.partitions:
            raise RestError(PARTITION_NOT_FOUND, f"Partition {partition} of {topic} not found.")
        return info.partitions[partition]

    # -- configs ------------------------------------------------------------------------------

    def configs(self, topic: str) -> list[dict[str, Any]]:
        """Every config of ``topic`` as v3's config fields."""
        self.topic(topic)
        resource = ConfigResource(ResourceType.TOPIC, topic)
        futures = self.pool.admin.describe_configs([resource], **self.pool.options)
        entries: dict[str, ConfigEntry] = self.pool.wait(futures[resource], topic=topic)
        return [_config_fields(entry) for _, entry in sorted(entries.items())]

    def config(self, topic: str, name: str) -> dict[str, Any]:
        """One config of ``topic`` (404 if the topic has no config of that name)."""
        for entry in self.configs(topic):
            if entry["name"] == name:
                return entry
        raise RestError(404, f"Config {name} not found for topic {topic}.")

    def alter_configs(
        self, topic: str, changes: list[tuple[str, str | None]], validate_only: bool = False
    ) -> None:
        """IncrementalAlterConfigs: ``(name, value)`` sets, ``(name, None)`` deletes (resets)."""
        self.topic(topic)
        entries = [
            ConfigEntry(
                name,
                value or "",
                incremental_operation=AlterConfigOpType.SET
                if value is not None
                else AlterConfigOpType.DELETE,
            )
            for name, value in changes
        ]
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        futures = self.pool.admin.incremental_alter_configs(
            [resource], validate_only=validate_only, **self.pool.options
        )
        self.pool.wait(futures[resource], topic=topic)

    # -- consumer groups ----------------------------------------------------------------------

    def groups(self) -> list[str]:
        """The ids of every consumer group."""
        listed = self.pool.wait(self.pool.admin.list_consumer_groups(**self.pool.options))
        return sorted(g.group_id for g in listed.valid)

    def group(self, group_id: str) -> GroupInfo:
        """One consumer group (40404 if the broker knows nothing of it)."""
        futures = self.pool.admin.describe_consumer_groups([group_id], **self.pool.options)
        described = self.pool.wait(futures[group_id])
        state = _enum_name(described.state)
        if state in ("DEAD", "UNKNOWN") and not described.members:
            raise RestError(GROUP_NOT_FOUND, f"Consumer group {group_id} not found.")
        members = [
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                [
                    (tp.topic, tp.partition)
                    for tp in (m.assignment.topic_partitions if m.assignment else [])
                ],
            )
            for m in described.members
        ]
        coordinator = None if described.coordinator is None else int(described.coordinator.id)
        group_type = _enum_name(getattr(described, "type", None))
        return GroupInfo(
            group_id,
            bool(described.is_simple_consumer_group),
            described.partition_assignor or "",
            state,
            coordinator,
            "CLASSIC" if group_type == "UNKNOWN" else group_type,
            members,
        )

    def lags(self, group_id: str) -> list[PartitionLag]:
        """The group's committed offset and the log end of every partition it committed."""
        info = self.group(group_id)
        request = [ConsumerGroupTopicPartitions(group_id)]
        futures = self.pool.admin.list_consumer_group_offsets(request, **self.pool.options)
        committed = self.pool.wait(futures[group_id]).topic_partitions or []
        committed = [tp for tp in committed if tp.offset >= 0 and tp.error is None]
        if not committed:
            return []
        spec = {
            TopicPartition(tp.topic, tp.partition): OffsetSpec.latest()  # type: ignore[no-untyped-call]
            for tp in committed
        }
        ends = self.pool.admin.list_offsets(spec, **self.pool.options)
        owners = {
            (topic, partition): (member, instance, client)
            for member, instance, client, assigned in info.members
            for topic, partition in assigned
        }
        lags = []
        for tp in sorted(committed, key=lambda t: (t.topic, t.partition)):
            key = TopicPartition(tp.topic, tp.partition)
            end = self.pool.wait(ends[key], topic=tp.topic).offset
            lags.append(
                PartitionLag(
                    tp.topic, tp.partition, tp.offset, end, owners.get((tp.topic, tp.partition))
                )
            )
        return lags


def _config_fields(entry: ConfigEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": None if entry.is_sensitive else entry.value,
        "is_default": entry.is_default,
        "is_read_only": entry.is_read_only,
        "is_sensitive": entry.is_sensitive,
        "source": _source(entry.source),
        "synonyms": [
            {
                "name": s.name,
                "value": None if s.is_sensitive else s.value,
                "source": _source(s.source),
            }
            for s in (entry.synonyms or {}).values()
        ],
    }


def bad_request(message: str) -> RestError:
    """Kafka's refusal of an invalid request (40002)."""
    return RestError(KAFKA_BAD_REQUEST, message)
