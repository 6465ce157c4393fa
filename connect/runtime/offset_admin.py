"""A connector's offsets read and changed from outside (``/connectors/{name}/offsets``).

Bodies are Kafka Connect's (KIP-875): a list of ``{"partition": {...}, "offset": {...}}``.

- A source connector's offsets are its entries in the worker's offset store: the partition and
  offset objects are the connector's own.
- A sink connector's offsets are the committed offsets of its consumer group
  ``connect-<name>``: ``{"kafka_topic": "t", "kafka_partition": 0}`` → ``{"kafka_offset": 42}``.

A null offset removes a partition's offset. Neither is safe while the connector's tasks run:
the caller makes sure the connector is stopped.

>>> parse_sink_offsets([{"partition": {"kafka_topic": "t", "kafka_partition": "1"},
...                      "offset": {"kafka_offset": 5}}])
{('t', 1): 5}
>>> parse_source_offsets([{"partition": {"file": "a"}, "offset": None}])
[({'file': 'a'}, None)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.offsets import OffsetStore

__all__ = [
    "ConnectorOffsets",
    "GroupOffsets",
    "alter_source_offsets",
    "parse_sink_offsets",
    "parse_source_offsets",
    "reset_source_offsets",
    "source_offsets",
]

SinkOffsets = dict[tuple[str, int], int | None]
"""Sink offsets to set: ``(topic, partition) → offset`` (None: remove)."""


def source_offsets(store: OffsetStore, connector: str) -> list[dict[str, Any]]:
    """The committed offsets of a source connector."""
    return [
        {"partition": partition, "offset": offset}
        for partition, offset in store.connector_offsets(connector)
    ]


def alter_source_offsets(
    store: OffsetStore,
    connector: str,
    offsets: list[tuple[dict[str, Any], dict[str, Any] | None]],
) -> None:
    """Write (or remove, for None) the given source offsets, durably."""
    for partition, offset in offsets:
        store.put(connector, partition, offset)
    store.flush()


def reset_source_offsets(store: OffsetStore, connector: str) -> None:
    """Remove every source offset of the connector, durably."""
    alter_source_offsets(
        store, connector, [(p, None) for p, _ in store.connector_offsets(connector)]
    )


def parse_source_offsets(entries: list[Any]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Source ``(partition, offset)`` pairs of a request; ValueError says what is wrong."""
    parsed = []
    for entry in entries:
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(partition, dict):
            raise ValueError("Source partitions must be JSON objects")
        offset = entry.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise ValueError("Source offsets must be JSON objects or null")
        parsed.append((partition, offset))
    return parsed


def _integer(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an integer, got {value!r}") from None


def parse_sink_offsets(entries: list[Any]) -> SinkOffsets:
    """Sink offsets of a request; ValueError says what is wrong."""
    parsed: SinkOffsets = {}
    for entry in entries:
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(partition, dict):
            raise ValueError("Every entry needs a 'partition' object")
        topic = partition.get("kafka_topic")
        if not isinstance(topic, str) or not topic:
            raise ValueError("Kafka partitions need a 'kafka_topic' string")
        number = _integer(partition.get("kafka_partition"), "'kafka_partition'")
        offset = entry.get("offset")
        if offset is None:
            parsed[topic, number] = None
            continue
        if not isinstance(offset, dict):
            raise ValueError("Kafka offsets must be JSON objects or null")
        position = _integer(offset.get("kafka_offset"), "'kafka_offset'")
        if position < 0:
            raise ValueError(f"'kafka_offset' must not be negative, got {position}")
        parsed[topic, number] = position
    return parsed


def _code(exc: BaseException | None) -> Any:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _reason(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else exc
    return str(error.str()) if isinstance(error, KafkaError) else str(error)


class GroupOffsets:
    """A sink connector's offsets: those of its consumer group, through an admin client."""

    def __init__(self, admin: AdminClient, timeout_s: float) -> None:
        self.admin = admin
        self.timeout_s = timeout_s

    def _wait(self, future: Any, doing: str) -> Any:
        try:
            return future.result(self.timeout_s + 5)
        except KafkaException as exc:
            raise ConnectError(f"Could not {doing}: {_reason(exc)}") from None
        except TimeoutError:
            raise ConnectError(f"Could not {doing}: no answer in {self.timeout_s:g} s") from None

    def get(self, connector: str) -> list[dict[str, Any]]:
        """The group's committed offsets, by topic and partition."""
        group = f"connect-{connector}"
        futures = self.admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout_s
        )
        answer = self._wait(futures[group], f"read the offsets of {group}")
        found = sorted(
            (tp.topic, tp.partition, tp.offset)
            for tp in answer.topic_partitions or ()
            if tp.error is None and tp.offset >= 0
        )
        return [
            {
                "partition": {"kafka_topic": topic, "kafka_partition": partition},
                "offset": {"kafka_offset": offset},
            }
            for topic, partition, offset in found
        ]

    def alter(self, connector: str, offsets: SinkOffsets) -> None:
        """Commit the offsets for the group (the group must have no member)."""
        group = f"connect-{connector}"
        resets = [KafkaPartition(t, p) for (t, p), o in offsets.items() if o is None]
        earliest: dict[tuple[str, int], int] = {}
        if resets:
            # No admin call of confluent-kafka deletes one partition's offset (OffsetDelete):
            # commit the log start offset, where the task's consumer (earliest reset) begins.
            listed_futures = self.admin.list_offsets(
                {tp: OffsetSpec.earliest() for tp in resets},  # type: ignore[no-untyped-call]
                request_timeout=self.timeout_s,
            )
            for tp, future in listed_futures.items():
                listed = self._wait(future, f"list the offsets of {tp.topic}[{tp.partition}]")
                earliest[tp.topic, tp.partition] = listed.offset
        partitions = [
            KafkaPartition(t, p, earliest[t, p] if o is None else o)
            for (t, p), o in sorted(offsets.items())
        ]
        futures = self.admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=self.timeout_s
        )
        self._wait(futures[group], f"alter the offsets of {group}")

    def reset(self, connector: str) -> None:
        """Delete the group, and with it every offset (a missing group is fine)."""
        group = f"connect-{connector}"
        futures = self.admin.delete_consumer_groups([group], request_timeout=self.timeout_s)
        try:
            self._wait(futures[group], f"delete the group {group}")
        except ConnectError:
            if _code(futures[group].exception()) != KafkaError.GROUP_ID_NOT_FOUND:
                raise


class ConnectorOffsets:
    """The offsets of any connector, by its kind (``source`` or ``sink``).

    Raises ValueError for a malformed request, ConnectError when the broker failed.
    """

    def __init__(
        self, store: OffsetStore, admin: Callable[[], AdminClient], timeout_s: float
    ) -> None:
        self.store = store
        self._admin = admin
        self.timeout_s = timeout_s

    def _group(self) -> GroupOffsets:
        return GroupOffsets(self._admin(), self.timeout_s)

    def get(self, connector: str, kind: str) -> list[dict[str, Any]]:
        """``[{"partition": ..., "offset": ...}]``."""
        if kind == "sink":
            return self._group().get(connector)
        return source_offsets(self.store, connector)

    def alter(self, connector: str, kind: str, entries: list[Any]) -> None:
        """Set the offsets of a request (a null offset removes one)."""
        if kind == "sink":
            self._group().alter(connector, parse_sink_offsets(entries))
        else:
            alter_source_offsets(self.store, connector, parse_source_offsets(entries))

    def reset(self, connector: str, kind: str) -> None:
        """Remove every offset of the connector."""
        if kind == "sink":
            self._group().reset(connector)
        else:
            reset_source_offsets(self.store, connector)
