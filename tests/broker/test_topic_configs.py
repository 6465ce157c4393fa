"""Every Kafka topic config through confluent-kafka's AdminClient against the real broker.

Kafka's topic-level keys are listed here on their own (not read from Sluice's table), each with
two valid values, so that a key Sluice forgot fails the round trip: create a topic with it,
describe it back (value and source), alter it incrementally, delete it (back to the default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kio.schema.describe_configs.v4.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.static.primitive import i8

from sluice.broker.config import TOPIC_KEYS
from tests.broker.conftest import Wire
from tests.conftest import BrokerProcess, create_topic

pytestmark = pytest.mark.timeout(300)

TIMEOUT = 15.0

# Kafka 3.9 / 4.x topic-level keys (TopicConfig, LogConfig, QuotaConfig): two valid values each.
KAFKA_TOPIC_KEYS: dict[str, tuple[str, str]] = {
    "cleanup.policy": ("compact", "compact,delete"),
    "compression.gzip.level": ("1", "9"),
    "compression.lz4.level": ("1", "17"),
    "compression.type": ("gzip", "zstd"),
    "compression.zstd.level": ("-5", "19"),
    "delete.retention.ms": ("1000", "2000"),
    "file.delete.delay.ms": ("0", "1000"),
    "flush.messages": ("10", "20"),
    "flush.ms": ("1000", "2000"),
    "follower.replication.throttled.replicas": ("0:0", "*"),
    "index.interval.bytes": ("1024", "2048"),
    "leader.replication.throttled.replicas": ("0:0,1:0", "*"),
    "local.retention.bytes": ("-1", "1000000"),
    "local.retention.ms": ("-1", "60000"),
    "max.compaction.lag.ms": ("60000", "120000"),
    "max.message.bytes": ("100000", "200000"),
    "message.downconversion.enable": ("false", "true"),
    "message.format.version": ("2.8", "3.0-IV1"),
    "message.timestamp.after.max.ms": ("3600000", "7200000"),
    "message.timestamp.before.max.ms": ("3600000", "7200000"),
    "message.timestamp.difference.max.ms": ("3600000", "7200000"),
    "message.timestamp.type": ("LogAppendTime", "CreateTime"),
    "min.cleanable.dirty.ratio": ("0.1", "0.9"),
    "min.compaction.lag.ms": ("1000", "2000"),
    "min.insync.replicas": ("2", "1"),
    "preallocate": ("true", "false"),
    "remote.log.copy.disable": ("true", "false"),
    "remote.log.delete.on.disable": ("true", "false"),
    "remote.storage.enable": ("false", "false"),
    "retention.bytes": ("1000000", "2000000"),
    "retention.ms": ("3600000", "-1"),
    "segment.bytes": ("1048576", "2097152"),
    "segment.index.bytes": ("4096", "8192"),
    "segment.jitter.ms": ("1000", "2000"),
    "segment.ms": ("3600000", "7200000"),
    "unclean.leader.election.enable": ("true", "false"),
}

# Values Kafka refuses, with a part of the message it answers.
INVALID: list[tuple[str, str, str]] = [
    ("retention.ms", "-5", "Invalid value -5 for configuration retention.ms"),
    ("compression.gzip.level", "10", "compression.gzip.level"),
    ("compression.lz4.level", "0", "compression.lz4.level"),
    ("compression.zstd.level", "23", "compression.zstd.level"),
    ("cleanup.policy", "shred", "cleanup.policy"),
    ("message.timestamp.type", "WallClock", "message.timestamp.type"),
    ("min.cleanable.dirty.ratio", "1.5", "min.cleanable.dirty.ratio"),
    ("max.compaction.lag.ms", "0", "max.compaction.lag.ms"),
    ("preallocate", "maybe", "preallocate"),
    ("leader.replication.throttled.replicas", "zero", "leader.replication.throttled.replicas"),
    ("message.format.version", "banana", "message.format.version"),
    ("local.retention.ms", "-3", "local.retention.ms"),
    ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker"),
    ("no.such.key", "1", "Unknown topic config name: no.such.key"),
]


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def describe(bootstrap: str, topic: str, kind: ResourceType = ResourceType.TOPIC) -> dict[str, Any]:
    client, resource = admin(bootstrap), ConfigResource(kind, topic)
    return dict(client.describe_configs([resource])[resource].result(TIMEOUT))


def alter(
    bootstrap: str, topic: str, *entries: ConfigEntry, kind: ResourceType = ResourceType.TOPIC
) -> None:
    client = admin(bootstrap)
    resource = ConfigResource(kind, topic, incremental_configs=list(entries))
    client.incremental_alter_configs([resource])[resource].result(TIMEOUT)


def create(bootstrap: str, name: str, config: dict[str, str]) -> None:
    client = admin(bootstrap)
    futures = client.create_topics([NewTopic(name, 1, 1, config=config)], request_timeout=TIMEOUT)
    futures[name].result(TIMEOUT)


def canonical(value: str) -> str:
    return ",".join(part.strip() for part in value.split(","))


@pytest.mark.parametrize("key", sorted(KAFKA_TOPIC_KEYS))
def test_every_kafka_topic_key_round_trips(shared_broker: BrokerProcess, key: str) -> None:
    bootstrap = shared_broker.bootstrap
    first, second = KAFKA_TOPIC_KEYS[key]
    topic = f"configs-{key.replace('.', '-')}"
    create(bootstrap, topic, {key: first})
    entry = describe(bootstrap, topic)[key]
    assert (entry.value, entry.source) == (first, ConfigSource.DYNAMIC_TOPIC_CONFIG.value), (
        f"{key}: created with {first!r}, described as {entry.value!r} from source {entry.source}"
    )
    alter(bootstrap, topic, ConfigEntry(key, second, incremental_operation=AlterConfigOpType.SET))
    entry = describe(bootstrap, topic)[key]
    assert canonical(entry.value) == second, f"{key}: set to {second!r}, got {entry.value!r}"
    alter(bootstrap, topic, ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE))
    entry = describe(bootstrap, topic)[key]
    assert entry.source == ConfigSource.DEFAULT_CONFIG.value, (
        f"{key}: after DELETE the source is {entry.source}, value {entry.value!r}"
    )


def test_describe_lists_every_kafka_topic_key(shared_broker: BrokerProcess) -> None:
    topic = create_topic(shared_broker.bootstrap)
    described = describe(shared_broker.bootstrap, topic)
    missing = sorted(set(KAFKA_TOPIC_KEYS) - set(described))
    assert not missing, f"DescribeConfigs lacks Kafka topic keys {missing}"
    expected_defaults = {
        "segment.jitter.ms": "0",
        "max.compaction.lag.ms": str(2**63 - 1),
        "compression.gzip.level": "-1",
        "compression.lz4.level": "9",
        "compression.zstd.level": "3",
        "local.retention.ms": "-2",
        "preallocate": "false",
        "message.timestamp.before.max.ms": str(2**63 - 1),
    }
    got = {k: described[k].value for k in expected_defaults}
    assert got == expected_defaults


@pytest.mark.parametrize(("key", "value", "message"), INVALID)
def test_invalid_values_are_refused_with_kafkas_message(
    shared_broker: BrokerProcess, key: str, value: str, message: str
) -> None:
    name = f"bad-{key.replace('.', '-')}-{abs(hash(value)) % 10_000}"
    with pytest.raises(KafkaException) as refused:
        create(shared_broker.bootstrap, name, {key: value})
    error = refused.value.args[0]
    assert error.name() == "INVALID_CONFIG", f"{key}={value}: {error}"
    assert message in error.str(), f"{key}={value}: expected {message!r} in {error.str()!r}"
    topic = create_topic(shared_broker.bootstrap)
    with pytest.raises(KafkaException) as refused:
        alter(
            shared_broker.bootstrap,
            topic,
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET),
        )
    assert refused.value.args[0].name() == "INVALID_CONFIG"


def test_no_effect_keys_say_so_in_their_documentation(shared_broker: BrokerProcess) -> None:
    topic = create_topic(shared_broker.bootstrap)
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=i8(2),
                resource_name=topic,
                configuration_keys=("preallocate", "retention.ms"),
            ),
        ),
        include_synonyms=True,
        include_documentation=True,
    )
    with Wire(shared_broker.bootstrap) as wire:
        response = wire.request(request)
    docs = {c.name: c.documentation for c in response.results[0].configs}
    assert "No effect in Sluice" in (docs["preallocate"] or ""), docs
    assert "No effect" not in (docs["retention.ms"] or ""), docs


def test_docs_say_for_every_key_whether_it_has_an_effect() -> None:
    text = (Path(__file__).parents[2] / "docs" / "broker.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1]: line for line in text.splitlines() if line.startswith("| `")}
    for key in KAFKA_TOPIC_KEYS:
        row = rows.get(key)
        assert row is not None, f"docs/broker.md has no row for {key}"
        no_effect = TOPIC_KEYS[key].no_effect is not None
        assert ("| no effect" in row) == no_effect and ("| implemented" in row) != no_effect, (
            f"docs/broker.md's row of {key} disagrees with Sluice (no effect: {no_effect}): {row}"
        )
