"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics (and describing the broker).

A topic's config is its overrides over the broker's defaults. DescribeConfigs reports every
topic-level key with its source (TOPIC_CONFIG for an override, STATIC_BROKER_CONFIG when the
value comes from a key set in ``server.properties``, DEFAULT_CONFIG otherwise) and, on request,
its synonyms and documentation. AlterConfigs replaces a topic's overrides; IncrementalAlterConfigs
applies SET, DELETE, APPEND and SUBTRACT per key. Changes are validated first, persisted, and
applied to the topic's logs at once (a new ``retention.ms`` applies at the next retention check).

The broker's own configuration is static (``server.properties``): altering a BROKER resource is
answered with INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.errors import KafkaError
from sluice.broker.protocol.codec import make, nested, response_schema
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.versions import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
from sluice.broker.topics import Topic
from sluice.config import BROKER_KEYS, TOPIC_KEYS, ConfigSource, render

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _synonyms(broker: Broker, topic: Topic | None, name: str) -> list[tuple[str, str | None, int]]:
    found: list[tuple[str, str | None, int]] = []
    if topic is not None and name in topic.overrides:
        found.append((name, topic.overrides[name], ConfigSource.TOPIC_CONFIG))
    key = TOPIC_KEYS.get(name)
    synonym = key.synonym if key is not None else name
    if synonym is not None and synonym in broker.config.explicit:
        found.append((synonym, render(broker.config[synonym]), ConfigSource.STATIC_BROKER_CONFIG))
    default = key.default if key is not None else BROKER_KEYS[name].default
    found.append((synonym or name, render(default), ConfigSource.DEFAULT_CONFIG))
    return found


async def describe_configs(broker: Broker, request: Any, _client: Connection) -> Any:
    schema = response_schema(DESCRIBE_CONFIGS, request.__version__)
    result_cls = nested(schema, "results")
    entry_cls = nested(schema, "results", "configs")
    synonym_cls = nested(schema, "results", "configs", "synonyms")
    with_synonyms = getattr(request, "include_synonyms", False)
    with_docs = getattr(request, "include_documentation", False)
    results = []
    for resource in request.resources:
        code, message, entries = ErrorCode.none, None, []
        topic: Topic | None = None
        keys: dict[str, Any]
        values: dict[str, Any]
        if resource.resource_type == TOPIC:
            topic = broker.topics.get(resource.resource_name)
            if topic is None:
                code = ErrorCode.unknown_topic_or_partition
                message = f"unknown topic {resource.resource_name!r}"
                keys, values = {}, {}
            else:
                keys, values = TOPIC_KEYS, topic.config
        elif resource.resource_type == BROKER and resource.resource_name in (
            "",
            str(broker.node_id),
        ):
            keys, values = BROKER_KEYS, dict(broker.config.values)
        else:
            code, message, keys, values = (
                ErrorCode.invalid_request,
                "unsupported resource",
                {},
                {},
            )
        wanted = resource.configuration_keys
        for name in sorted(keys):
            if wanted is not None and name not in wanted:
                continue
            synonyms = _synonyms(broker, topic, name)
            entries.append(
                make(
                    entry_cls,
                    name=name,
                    value=render(values[name]),
                    read_only=topic is None,
                    config_source=synonyms[0][2],
                    is_sensitive=False,
                    is_default=synonyms[0][2] == ConfigSource.DEFAULT_CONFIG,
                    config_type=keys[name].type,
                    documentation=keys[name].doc if with_docs else None,
                    synonyms=tuple(
                        make(synonym_cls, name=n, value=v, source=s) for n, v, s in synonyms
                    )
                    if with_synonyms
                    else (),
                )
            )
        results.append(
            make(
                result_cls,
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=tuple(entries),
            )
        )
    return make(schema, throttle_time=0, results=tuple(results))


def _apply(broker: Broker, resource: Any, change: Any, validate_only: bool) -> tuple[Any, Any]:
    """Run ``change(topic) -> new overrides`` on a topic resource; returns (code, message)."""
    if resource.resource_type != TOPIC:
        return (
            ErrorCode.invalid_request,
            "broker configuration is static (server.properties); alter topics instead",
        )
    topic = broker.topics.get(resource.resource_name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, f"unknown topic {resource.resource_name!r}"
    try:
        overrides = broker.topics.check_configs(change(topic))
    except KafkaError as exc:
        return exc.code, exc.message
    if not validate_only:
        broker.topics.set_overrides(topic, overrides)
    return ErrorCode.none, None


def _alter(
    broker: Broker,
    request: Any,
    api: Any,
    overrides_of: Callable[[Topic, Any], Mapping[str, str | None]],
) -> Any:
    """AlterConfigs and IncrementalAlterConfigs: ``overrides_of(topic, resource.configs)`` is
    the topic's new set of overrides, applied per resource unless ``validate_only``."""
    schema = response_schema(api, request.__version__)
    result_cls = nested(schema, "responses")
    results = []
    for resource in request.resources:
        code, message = _apply(
            broker,
            resource,
            lambda topic, r=resource: overrides_of(topic, r.configs),
            request.validate_only,
        )
        results.append(
            make(
                result_cls,
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return make(schema, throttle_time=0, responses=tuple(results))


async def alter_configs(broker: Broker, request: Any, _client: Connection) -> Any:
    return _alter(
        broker, request, ALTER_CONFIGS, lambda _topic, configs: {c.name: c.value for c in configs}
    )


def _incremental(topic: Topic, configs: Any) -> dict[str, str | None]:
    overrides: dict[str, str | None] = dict(topic.overrides)
    for config in configs:
        if config.name not in TOPIC_KEYS:
            raise KafkaError(ErrorCode.invalid_config, f"unknown topic config {config.name!r}")
        current = render(topic.config[config.name]) or ""
        items = [v for v in current.split(",") if v]
        value = config.value or ""
        op = config.config_operation
        if op == SET:
            overrides[config.name] = config.value
        elif op == DELETE:
            overrides.pop(config.name, None)
        elif op in (APPEND, SUBTRACT):
            if TOPIC_KEYS[config.name].type.name != "LIST":
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"{config.name} is not a list: APPEND/SUBTRACT do not apply",
                )
            new = [v for v in value.split(",") if v]
            items = (
                [*items, *(v for v in new if v not in items)]
                if op == APPEND
                else [v for v in items if v not in new]
            )
            overrides[config.name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.invalid_request, f"unknown config operation {op}")
    return overrides


async def incremental_alter_configs(broker: Broker, request: Any, _client: Connection) -> Any:
    return _alter(broker, request, INCREMENTAL_ALTER_CONFIGS, _incremental)
