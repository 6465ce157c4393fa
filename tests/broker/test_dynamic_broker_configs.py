"""Dynamic broker configs through confluent-kafka's AdminClient: the BROKER resource per broker
("0") and cluster-wide (""), sources as Kafka reports them, topic defaults that follow, read-only
keys refused, and everything still there after a restart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import ConfigSource, ResourceType
from kio.schema.describe_configs.v4.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8

from tests.broker.conftest import Wire, create_topic
from tests.conftest import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TIMEOUT = 15.0
SET, DELETE = 0, 1


def describe(bootstrap: str, kind: ResourceType, name: str) -> dict[str, Any]:
    """``{key: (value, source, read_only)}`` through a raw DescribeConfigs v4 (confluent-kafka
    refuses the cluster-default resource, whose name is empty)."""
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=i8(kind.value), resource_name=name, configuration_keys=None
            ),
        ),
        include_synonyms=True,
        include_documentation=False,
    )
    with Wire(bootstrap) as wire:
        result = wire.request(request).results[0]
    assert result.error_code == 0, f"DescribeConfigs {name!r}: {result.error_message}"
    return {c.name: Entry(c.value, c.config_source, c.read_only) for c in result.configs}


def alter(bootstrap: str, name: str, *entries: tuple[str, str | None, int]) -> None:
    """IncrementalAlterConfigs on a BROKER resource; raises ``RefusedError`` with the answer."""
    request = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(4),
                resource_name=name,
                configs=tuple(
                    AlterableConfig(name=k, config_operation=i8(op), value=v)
                    for k, v, op in entries
                ),
            ),
        ),
        validate_only=False,
    )
    with Wire(bootstrap) as wire:
        response = wire.request(request).responses[0]
    if response.error_code != 0:
        raise RefusedError(int(response.error_code), response.error_message or "")


@dataclass(frozen=True)
class Entry:
    value: str | None
    source: int
    is_read_only: bool


class RefusedError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"error {code}: {message}")
        self.code, self.message = code, message


def seen(entries: dict[str, Any], *keys: str) -> dict[str, tuple[str, int]]:
    return {k: (entries[k].value, entries[k].source) for k in keys}


S = ConfigSource


def check_dynamic_state(bootstrap: str) -> None:
    broker = describe(bootstrap, ResourceType.BROKER, "0")
    assert seen(broker, "log.retention.ms", "log.cleanup.policy", "log.retention.hours") == {
        "log.retention.ms": ("1234567", S.DYNAMIC_BROKER_CONFIG.value),
        "log.cleanup.policy": ("compact", S.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        "log.retention.hours": ("100", S.STATIC_BROKER_CONFIG.value),
    }
    default = describe(bootstrap, ResourceType.BROKER, "")
    assert sorted(default) == ["log.cleanup.policy", "message.max.bytes"], sorted(default)
    plain = describe(bootstrap, ResourceType.TOPIC, "plain")
    assert seen(plain, "retention.ms", "cleanup.policy", "max.message.bytes") == {
        "retention.ms": ("1234567", S.DYNAMIC_BROKER_CONFIG.value),
        "cleanup.policy": ("compact", S.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        "max.message.bytes": ("500000", S.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
    }
    overridden = describe(bootstrap, ResourceType.TOPIC, "overridden")
    assert seen(overridden, "retention.ms") == {
        "retention.ms": ("1000", S.DYNAMIC_TOPIC_CONFIG.value)
    }


def produce_error(bootstrap: str, topic: str, size: int) -> int | None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    errors: list[int | None] = []
    producer.produce(
        topic, key=b"k", value=b"x" * size, on_delivery=lambda e, _m: errors.append(e and e.code())
    )
    assert producer.flush(20) == 0
    return errors[0]


def test_dynamic_broker_configs_round_trip_and_survive_a_restart(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    proc = broker_factory(**{"log.retention.hours": "100"})
    bootstrap = proc.bootstrap
    create_topic(bootstrap, "plain")
    create_topic(bootstrap, "overridden", config={"retention.ms": "1000"})
    broker = describe(bootstrap, ResourceType.BROKER, "0")
    assert broker["num.partitions"].is_read_only and not broker["log.retention.ms"].is_read_only
    assert seen(broker, "log.retention.hours", "num.io.threads") == {
        "log.retention.hours": ("100", S.STATIC_BROKER_CONFIG.value),
        "num.io.threads": ("8", S.DEFAULT_CONFIG.value),
    }
    assert produce_error(bootstrap, "plain", 600_000) is None

    alter(bootstrap, "0", ("log.retention.ms", "1234567", SET))
    alter(bootstrap, "", ("log.cleanup.policy", "compact", SET))
    alter(bootstrap, "", ("message.max.bytes", "500000", SET))
    check_dynamic_state(bootstrap)
    assert produce_error(bootstrap, "plain", 600_000) == KafkaError.MSG_SIZE_TOO_LARGE

    proc.stop()
    proc.start()
    check_dynamic_state(bootstrap)
    assert produce_error(bootstrap, "plain", 600_000) == KafkaError.MSG_SIZE_TOO_LARGE

    alter(bootstrap, "0", ("log.retention.ms", None, DELETE))
    alter(bootstrap, "", ("message.max.bytes", None, DELETE))
    plain = describe(bootstrap, ResourceType.TOPIC, "plain")
    assert seen(plain, "retention.ms", "max.message.bytes") == {
        "retention.ms": (str(100 * 3_600_000), S.STATIC_BROKER_CONFIG.value),
        "max.message.bytes": ("1048588", S.DEFAULT_CONFIG.value),
    }
    assert produce_error(bootstrap, "plain", 600_000) is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num.partitions", "3", "Cannot update these configs dynamically: Set(num.partitions)"),
        ("log.dirs", "/tmp/x", "Cannot update these configs dynamically"),
        ("log.retention.ms", "soon", "Invalid value soon for configuration log.retention.ms"),
        ("log.cleanup.policy", "shred", "log.cleanup.policy"),
    ],
)
def test_keys_kafka_does_not_alter_dynamically_are_refused(
    shared_broker: BrokerProcess, key: str, value: str, message: str
) -> None:
    with pytest.raises(RefusedError) as refused:
        alter(shared_broker.bootstrap, "0", (key, value, SET))
    assert refused.value.code == 42, f"expected INVALID_REQUEST, got {refused.value}"
    assert message in refused.value.message, f"expected {message!r} in {refused.value.message!r}"
    broker = describe(shared_broker.bootstrap, ResourceType.BROKER, "0")
    assert broker[key].source != S.DYNAMIC_BROKER_CONFIG.value
