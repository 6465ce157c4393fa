"""Topics made to match a deployment: created when missing, configs and partitions altered.

Only what the file declares is touched: a config key not written in the file keeps its value,
a topic not in the file stays. Partitions can only grow (Kafka cannot shrink a topic): a
smaller count is reported and left, as is a different replication factor (changing it moves
replicas: a reassignment).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported without __all__
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from sluice import clients
from sluice.up.spec import TopicSpec

__all__ = ["ensure_topics"]

_TIMEOUT = 30.0


def ensure_topics(
    bootstrap: str,
    topics: Sequence[TopicSpec],
    report: Callable[[str], None],
    client_config: Mapping[str, str] | None = None,
) -> None:
    """Create or alter ``topics`` on the cluster at ``bootstrap`` (``client_config``: the admin
    client's security); raises KafkaException when the cluster refuses (an invalid config,
    say), naming the topic."""
    if not topics:
        return
    admin = clients.admin(bootstrap, **(client_config or {}))
    existing = admin.list_topics(timeout=_TIMEOUT).topics
    missing = [topic for topic in topics if topic.name not in existing]
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(
                    topic.name,
                    topic.partitions or -1,
                    topic.replication_factor or -1,
                    config=dict(topic.config),
                )
                for topic in missing
            ],
            operation_timeout=_TIMEOUT,
            request_timeout=_TIMEOUT,
        )
        for name, future in futures.items():
            _wait(future, f"topic {name}: cannot create it")
            report(f"topic {name}: created")
    for topic in topics:
        if topic.name not in existing:
            continue
        partitions = existing[topic.name].partitions
        factors = {len(p.replicas) for p in partitions.values()}
        if topic.replication_factor is not None and factors != {topic.replication_factor}:
            report(
                f"topic {topic.name}: replication factor {'/'.join(map(str, sorted(factors)))},"
                f" the file says {topic.replication_factor}: changing it is a reassignment"
                " (sluice up does not do it), left as it is"
            )
        _alter(admin, topic, len(partitions), report)


def _alter(admin: Any, topic: TopicSpec, partitions: int, report: Callable[[str], None]) -> None:
    changes = []
    if topic.partitions is not None and topic.partitions > partitions:
        future = admin.create_partitions(
            [NewPartitions(topic.name, topic.partitions)], request_timeout=_TIMEOUT
        )[topic.name]
        _wait(future, f"topic {topic.name}: cannot add partitions")
        changes.append(f"partitions {partitions} -> {topic.partitions}")
    elif topic.partitions is not None and topic.partitions < partitions:
        report(
            f"topic {topic.name}: has {partitions} partitions, the file says {topic.partitions}:"
            " a topic cannot shrink, left as it is"
        )
    if topic.config:
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic.name)
        [described] = admin.describe_configs([resource], request_timeout=_TIMEOUT).values()
        current = {name: entry.value for name, entry in _wait(described, topic.name).items()}
        differing = {key: value for key, value in topic.config if current.get(key) != value}
        if differing:
            resource = ConfigResource(
                ConfigResource.Type.TOPIC,
                topic.name,
                incremental_configs=[
                    ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
                    for key, value in differing.items()
                ],
            )
            [future] = admin.incremental_alter_configs([resource]).values()
            _wait(future, f"topic {topic.name}: cannot alter its configs")
            changes += [f"{key}={value}" for key, value in differing.items()]
    report(f"topic {topic.name}: {'altered: ' + ', '.join(changes) if changes else 'unchanged'}")


def _wait(future: Any, doing: str) -> Any:
    try:
        return future.result()
    except KafkaException as error:
        raise KafkaException(f"{doing}: {error.args[0].str()}") from None
