"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics and the broker.

A topic's config is its overrides over the broker's defaults. DescribeConfigs reports every
topic-level key (Kafka's whole list: keys without effect on one node are stored and shown too)
with its source — TOPIC_CONFIG for an override, else where the broker-level synonym comes from:
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG (``server.properties``)
or DEFAULT_CONFIG — and, on request, its synonyms and documentation. AlterConfigs replaces a
resource's overrides; IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT per key.
Changes are validated first (INVALID_CONFIG with Kafka's message for topics), persisted, and
applied at once (a new ``retention.ms`` applies at the next retention check).

The BROKER resource (name: this broker's id, or ``""`` for the cluster default) takes the keys
Kafka allows dynamically (:mod:`sluice.broker.dynamic_config`); another key is answered
INVALID_REQUEST "Cannot update these configs dynamically: ...", as Kafka answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.config import (
    BROKER_KEYS,
    DYNAMIC_BROKER_KEYS,
    TOPIC_KEYS,
    ConfigKey,
    ConfigSource,
    ConfigType,
    dynamic_key,
    render,
)
from sluice.broker.config_keys import dynamic_listener_key
from sluice.broker.dynamic_config import DEFAULT_ENTITY
from sluice.broker.errors import KafkaError
from sluice.broker.protocol.api_keys import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed
from sluice.broker.security.acls import CLUSTER_NAME, ResourceType
from sluice.broker.topics import Topic
from sluice.errors import ConfigError, StorageError

ACL_TOPIC, ACL_CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
_TOPIC_RESOURCE = 2
"""Kafka's ``ConfigResource.Type.TOPIC`` (the others are the broker's: the cluster's ACLs)."""

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AlterConfigsRequest,
        AlterConfigsResponse,
        DescribeConfigsRequest,
        DescribeConfigsResponse,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Synonyms = list[tuple[str, str | None, int]]


def _topic_synonyms(broker: Broker, topic: Topic, name: str) -> Synonyms:
    found: Synonyms = []
    if name in topic.overrides:
        found.append((name, topic.overrides[name], ConfigSource.TOPIC_CONFIG))
    found += [(n, render(v), s) for n, v, s in broker.config.topic_synonyms(name)]
    return found


def _broker_synonyms(broker: Broker, name: str) -> Synonyms:
    return [(n, render(v), s) for n, v, s in broker.config.synonyms(name)]


def _describe_one(broker: Broker, resource: Any) -> tuple[Any, str | None, list[Any]]:
    """(error code, message, [(name, value, read_only, key, synonyms)]) of one resource."""
    rows: list[Any] = []
    if resource.resource_type == TOPIC:
        topic = broker.topic_configs(resource.resource_name)
        if topic is None:
            return (
                ErrorCode.unknown_topic_or_partition,
                f"unknown topic {resource.resource_name!r}",
                rows,
            )
        for name in sorted(TOPIC_KEYS):
            rows.append(
                (
                    name,
                    render(topic.config[name]),
                    False,
                    TOPIC_KEYS[name],
                    _topic_synonyms(broker, topic, name),
                )
            )
        return ErrorCode.none, None, rows
    if resource.resource_type == BROKER:
        entity = broker.dynamic_configs.entity_of(resource.resource_name)
        if entity is None:
            return (
                ErrorCode.invalid_request,
                f"broker {resource.resource_name!r} is not this broker ({broker.node_id})",
                rows,
            )
        config = broker.config
        for name in sorted(BROKER_KEYS):
            if entity == DEFAULT_ENTITY:
                if name not in config.dynamic_default:
                    continue  # the cluster default shows only what is set at its level
                synonyms: Synonyms = [
                    (
                        name,
                        render(config.dynamic_default[name]),
                        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                    )
                ]
            else:
                synonyms = _broker_synonyms(broker, name)
            value = synonyms[0][1]
            rows.append((name, value, name not in DYNAMIC_BROKER_KEYS, BROKER_KEYS[name], synonyms))
        for name, typed in sorted(config.dynamic_broker.items()):
            listener_key = dynamic_listener_key(name)  # a listener's keystore, set dynamically
            if entity != DEFAULT_ENTITY and listener_key is not None:
                text = render(typed)
                source = ConfigSource.DYNAMIC_BROKER_CONFIG
                rows.append((name, text, False, listener_key, [(name, text, source)]))
        return ErrorCode.none, None, rows
    return ErrorCode.invalid_request, "unsupported resource", rows


async def describe_configs(
    broker: Broker, request: DescribeConfigsRequest, client: Connection
) -> DescribeConfigsResponse:
    schema = response_schema(DESCRIBE_CONFIGS, request.__version__)
    result_cls = nested(schema, "results")
    entry_cls = nested(schema, "results", "configs")
    synonym_cls = nested(schema, "results", "configs", "synonyms")
    with_synonyms = getattr(request, "include_synonyms", False)
    with_docs = getattr(request, "include_documentation", False)
    results = []
    for resource in request.resources:
        refusal = _refused(broker, client, DESCRIBE_CONFIGS, resource)
        code, message, rows = (*refusal, []) if refusal else _describe_one(broker, resource)
        wanted = resource.configuration_keys
        entries = []
        for name, shown, read_only, key, levels in rows:
            if wanted is not None and name not in wanted:
                continue
            sensitive = key.type == ConfigType.PASSWORD  # Kafka's: the value is never shown
            value = None if sensitive else shown
            synonyms = [(n, None, s) for n, _, s in levels] if sensitive else levels
            entries.append(
                make(
                    entry_cls,
                    name=name,
                    value=value,
                    read_only=read_only,
                    config_source=synonyms[0][2],
                    is_sensitive=sensitive,
                    is_default=synonyms[0][2] == ConfigSource.DEFAULT_CONFIG,
                    config_type=key.type,
                    documentation=_documentation(key) if with_docs else None,
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


def _documentation(key: ConfigKey) -> str:
    if key.no_effect is None:
        return key.doc
    return f"{key.doc} No effect in Sluice: {key.no_effect}."


async def _apply(
    broker: Broker,
    resource: Any,
    change: Callable[[Mapping[str, str], Callable[[str], str | None]], Mapping[str, str | None]],
    validate_only: bool,
) -> tuple[Any, Any]:
    """Run ``change(current overrides, current value of) -> new overrides`` on a resource;
    returns (code, message)."""
    if resource.resource_type == BROKER:
        return _apply_broker(broker, resource, change, validate_only)
    if resource.resource_type != TOPIC:
        return ErrorCode.invalid_request, f"unsupported resource type {resource.resource_type}"
    topic = broker.topic_configs(resource.resource_name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, f"unknown topic {resource.resource_name!r}"
    try:
        for_topic = lambda name: _known_topic_value(topic, name)  # noqa: E731
        overrides = broker.topics.check_configs(change(topic.overrides, for_topic))
    except KafkaError as exc:
        return exc.code, exc.message
    if not validate_only:
        await broker.set_topic_overrides(topic, overrides)
    return ErrorCode.none, None


def _known_topic_value(topic: Topic, name: str) -> str | None:
    if name not in TOPIC_KEYS:
        raise KafkaError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
    return render(topic.config[name])


def _apply_broker(
    broker: Broker,
    resource: Any,
    change: Callable[[Mapping[str, str], Callable[[str], str | None]], Mapping[str, str | None]],
    validate_only: bool,
) -> tuple[Any, Any]:
    dynamic = broker.dynamic_configs
    entity = dynamic.entity_of(resource.resource_name)
    if entity is None:
        return (
            ErrorCode.invalid_request,
            f"broker {resource.resource_name!r} is not this broker ({broker.node_id})",
        )
    where = f"ConfigResource(type=BROKER, name='{resource.resource_name}')"

    def value_of(name: str) -> str | None:
        try:
            dynamic_key(name)
        except KeyError:
            raise ConfigError(f"Unknown broker config name: {name}") from None
        return render(broker.config.values.get(name))

    try:
        overrides = dynamic.check(entity, change(dynamic.overrides(entity), value_of))
        broker.validate_config(dynamic.preview(entity, overrides))
    except ConfigError as exc:
        return ErrorCode.invalid_request, f"Invalid config value for resource {where}: {exc}"
    except KafkaError as exc:
        return exc.code, exc.message
    if not validate_only:
        try:
            broker.apply_config(dynamic.replace(entity, overrides))
        except (StorageError, OSError) as exc:
            return ErrorCode.kafka_storage_error, f"cannot persist the broker config: {exc}"
        except ConfigError as exc:  # a keystore changed on disk since it was validated
            return ErrorCode.invalid_request, f"Invalid config value for resource {where}: {exc}"
    return ErrorCode.none, None


T = TypeVar("T")


async def _alter(
    broker: Broker,
    request: Any,
    schema: type[T],
    overrides_of: Callable[
        [Mapping[str, str], Callable[[str], str | None], Any], Mapping[str, str | None]
    ],
    client: Connection,
    api_key: int,
) -> T:
    """AlterConfigs and IncrementalAlterConfigs: ``overrides_of(overrides, value_of,
    resource.configs)`` is the resource's new set of overrides, applied per resource unless
    ``validate_only``."""
    result_cls = nested(schema, "responses")
    results = []
    for resource in request.resources:

        def change(
            overrides: Mapping[str, str],
            value_of: Callable[[str], str | None],
            configs: Any = resource.configs,
        ) -> Mapping[str, str | None]:
            return overrides_of(overrides, value_of, configs)

        code, message = _refused(broker, client, api_key, resource) or await _apply(
            broker, resource, change, request.validate_only
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


async def alter_configs(
    broker: Broker, request: AlterConfigsRequest, client: Connection
) -> AlterConfigsResponse:
    schema = response_schema(ALTER_CONFIGS, request.__version__)
    return await _alter(
        broker,
        request,
        schema,
        lambda _old, _value_of, new: {c.name: c.value for c in new},
        client,
        ALTER_CONFIGS,
    )


def _incremental(
    current: Mapping[str, str], value_of: Callable[[str], str | None], configs: Any
) -> dict[str, str | None]:
    overrides: dict[str, str | None] = dict(current)
    for config in configs:
        items = [v for v in (value_of(config.name) or "").split(",") if v]
        value = config.value or ""
        op = config.config_operation
        if op == SET:
            overrides[config.name] = config.value
        elif op == DELETE:
            overrides.pop(config.name, None)
        elif op in (APPEND, SUBTRACT):
            key = TOPIC_KEYS.get(config.name) or dynamic_key(config.name)
            if key.type.name != "LIST":
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


async def incremental_alter_configs(
    broker: Broker, request: IncrementalAlterConfigsRequest, client: Connection
) -> IncrementalAlterConfigsResponse:
    schema = response_schema(INCREMENTAL_ALTER_CONFIGS, request.__version__)
    return await _alter(broker, request, schema, _incremental, client, INCREMENTAL_ALTER_CONFIGS)


def _refused(
    broker: Broker, client: Connection, api_key: int, resource: Any
) -> tuple[ErrorCode, str | None] | None:
    """Kafka's checks: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED)
    or, for a broker or broker logger, on the cluster (CLUSTER_AUTHORIZATION_FAILED)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return None
    if int(resource.resource_type) == _TOPIC_RESOURCE:
        if allowed(authorizer, client, api_key, ACL_TOPIC, resource.resource_name, "topic"):
            return None
        return ErrorCode.topic_authorization_failed, None
    if allowed(authorizer, client, api_key, ACL_CLUSTER, CLUSTER_NAME, "broker"):
        return None
    return ErrorCode.cluster_authorization_failed, None
