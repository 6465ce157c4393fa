"""CreateTopics, DeleteTopics, CreatePartitions.

Every entry is checked before anything changes (``validate_only`` stops there): a legal and
new name, a positive partition count (-1: ``num.partitions``), a replication factor one node can
satisfy (-1 or 1), manual assignments only to this node, and known, valid configs. Partitions
can only be added, never removed (INVALID_PARTITIONS), as in Kafka.

Topic ids: CreateTopics (v7) answers the new topic's id; DeleteTopics (v6) deletes by name or by
id (UNKNOWN_TOPIC_ID for an id no topic has) and answers both.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsRequestV6
from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.config import ConfigSource, render
from sluice.broker.errors import KafkaError
from sluice.broker.log.partition_metadata import format_topic_id
from sluice.broker.protocol.api_keys import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from sluice.broker.protocol.response_schema import response_schema


async def create_topics(
    broker: Broker, request: CreateTopicsRequest, _client: Connection
) -> CreateTopicsResponse:
    schema = response_schema(CREATE_TOPICS, request.__version__)
    result_cls = nested(schema, "topics")
    config_cls = nested(schema, "topics", "configs")
    validate_only = getattr(request, "validate_only", False)
    results = []
    for wanted in request.topics:
        partitions: int = wanted.num_partitions
        factor: int = wanted.replication_factor
        fields: dict[str, Any] = {
            "name": wanted.name,
            "topic_id": None,  # v7: the zero id unless the topic is created
            "error_code": ErrorCode.none,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": None,
        }
        try:
            if wanted.assignments:
                if partitions != -1 or factor != -1:
                    raise KafkaError(
                        ErrorCode.invalid_request,
                        "give either assignments or partitions and replication factor, not both",
                    )
                nodes = {n for a in wanted.assignments for n in a.broker_ids}
                if nodes - {broker.node_id}:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        f"unknown broker ids {sorted(nodes - {broker.node_id})}",
                    )
                partitions = len(wanted.assignments)
                factor = max(len(a.broker_ids) for a in wanted.assignments)
            if partitions == -1:
                partitions = broker.config.num_partitions
            if factor == -1:
                factor = broker.config["default.replication.factor"]
            overrides = broker.topics.check_create(
                wanted.name, partitions, factor, {c.name: c.value for c in wanted.configs}
            )
            if not validate_only:
                topic = broker.topics.create(wanted.name, partitions, overrides)
                fields["topic_id"] = topic.topic_id
            effective = broker.config.topic_config(overrides)
            fields.update(
                num_partitions=partitions,
                replication_factor=1,
                configs=None
                if config_cls is type(None)
                else tuple(
                    make(
                        config_cls,
                        name=name,
                        value=render(value),
                        read_only=False,
                        config_source=ConfigSource.TOPIC_CONFIG
                        if name in overrides
                        else ConfigSource.DEFAULT_CONFIG,
                        is_sensitive=False,
                    )
                    for name, value in sorted(effective.items())
                ),
            )
        except KafkaError as exc:
            fields.update(error_code=exc.code, error_message=exc.message)
        results.append(make(result_cls, **fields))
    return make(schema, throttle_time=0, topics=tuple(results))


async def delete_topics(
    broker: Broker, request: DeleteTopicsRequest, _client: Connection
) -> DeleteTopicsResponse:
    """Delete topics by name, or from v6 by topic id (one of the two per topic, as Kafka)."""
    schema = response_schema(DELETE_TOPICS, request.__version__)
    result_cls = nested(schema, "responses")
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if isinstance(request, DeleteTopicsRequestV6):
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    results = []
    for asked_name, asked_id in wanted:
        name, topic_id = asked_name, asked_id
        code, message = ErrorCode.none, None
        topic = broker.topics.get(name) if name is not None else None
        if asked_id is not None and asked_name is not None:
            code, message = ErrorCode.invalid_request, "give a topic name or a topic id, not both"
        elif asked_id is None and asked_name is None:
            code, message = ErrorCode.invalid_request, "give a topic name or a topic id"
        elif not broker.config["delete.topic.enable"]:
            code, message = ErrorCode.topic_deletion_disabled, "delete.topic.enable is false"
        elif asked_id is not None:
            topic = broker.topics.by_id(asked_id)
            if topic is None:
                code = ErrorCode.unknown_topic_id
                message = f"unknown topic id {format_topic_id(asked_id)}"
        elif topic is None:
            code, message = ErrorCode.unknown_topic_or_partition, f"unknown topic {name!r}"
        if code == ErrorCode.none and topic is not None:
            name, topic_id = topic.name, topic.topic_id
            broker.topics.delete(topic)
        results.append(
            make(
                result_cls,
                name=name,
                topic_id=topic_id,
                error_code=code,
                error_message=message,
            )
        )
    return make(schema, throttle_time=0, responses=tuple(results))


async def create_partitions(
    broker: Broker, request: CreatePartitionsRequest, _client: Connection
) -> CreatePartitionsResponse:
    schema = response_schema(CREATE_PARTITIONS, request.__version__)
    result_cls = nested(schema, "results")
    results = []
    for wanted in request.topics:
        code, message = ErrorCode.none, None
        topic = broker.topics.get(wanted.name)
        if topic is None:
            code, message = ErrorCode.unknown_topic_or_partition, f"unknown topic {wanted.name!r}"
        elif wanted.count <= topic.partition_count:
            code = ErrorCode.invalid_partitions
            message = (
                f"topic has {topic.partition_count} partitions; the count can only grow "
                f"(asked {wanted.count})"
            )
        elif wanted.assignments and {n for a in wanted.assignments for n in a.broker_ids} - {
            broker.node_id
        }:
            code, message = ErrorCode.invalid_replica_assignment, "unknown broker ids"
        elif not request.validate_only:
            broker.topics.add_partitions(topic, wanted.count)
        results.append(make(result_cls, name=wanted.name, error_code=code, error_message=message))
    return make(schema, throttle_time=0, results=tuple(results))
