"""CreateTopics, DeleteTopics, CreatePartitions.

Every entry is checked before anything changes (``validate_only`` stops there): a legal and
new name, a positive partition count (-1: ``num.partitions``), a replication factor the live
brokers can satisfy (-1: ``default.replication.factor``; one node: 1), manual assignments only
to live brokers, and known, valid configs. Partitions can only be added, never removed
(INVALID_PARTITIONS), as in Kafka.

In a cluster any broker takes these requests and writes them to the cluster's metadata store,
as in Kafka's ZooKeeper era (:class:`~sluice.broker.cluster.member.ClusterMember`): replicas by
Kafka's placement, the controller elects the leaders, and CreateTopics answers once every new
partition has a leader (DeleteTopics once the topic is gone) or its ``timeout_ms`` passed
(REQUEST_TIMED_OUT: the change goes on).

Topic ids: CreateTopics (v7) answers the new topic's id; DeleteTopics (v6) deletes by name or by
id (UNKNOWN_TOPIC_ID for an id no topic has) and answers both.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsRequestV6
from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.config import ConfigSource, render
from sluice.broker.errors import KafkaError
from sluice.broker.log.partition_metadata import format_topic_id
from sluice.broker.protocol.api_keys import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS
from sluice.broker.protocol.codec import make, millis, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed, allowed_operation
from sluice.broker.security.acls import AclOperation, ResourceType
from sluice.broker.topics import MAX_PARTITIONS_PER_REQUEST, check_partitions_added

TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        CreateTopicsRequest,
        CreateTopicsResponse,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
    )


async def create_topics(
    broker: Broker, request: CreateTopicsRequest, client: Connection
) -> CreateTopicsResponse:
    schema = response_schema(CREATE_TOPICS, request.__version__)
    result_cls = nested(schema, "topics")
    config_cls = nested(schema, "topics", "configs")
    validate_only = getattr(request, "validate_only", False)
    cluster = broker.cluster
    results = []
    created: list[str] = []
    authorizer = broker.authorizer
    cluster_create = authorizer is None or allowed_operation(
        authorizer, client, CREATE_TOPICS, AclOperation.CREATE, CLUSTER, audit=False
    )
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
            if not cluster_create and not allowed(
                authorizer,  # type: ignore[arg-type]  # not None when not cluster_create
                client,
                CREATE_TOPICS,
                TOPIC,
                wanted.name,
                "or",
            ):
                raise KafkaError(
                    ErrorCode.topic_authorization_failed,
                    "Authorization failed: CREATE on the cluster or the topic is needed",
                )
            if wanted.assignments:
                if partitions != -1 or factor != -1:
                    raise KafkaError(
                        ErrorCode.invalid_request,
                        "give either assignments or partitions and replication factor, not both",
                    )
                nodes = {n for a in wanted.assignments for n in a.broker_ids}
                live = {b.node_id for b in broker.live_brokers()}
                if nodes - live:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        f"unknown broker ids {sorted(nodes - live)}",
                    )
                partitions = len(wanted.assignments)
                factor = max(len(a.broker_ids) for a in wanted.assignments)
            if partitions == -1:
                partitions = broker.config.num_partitions
            if factor == -1:
                factor = broker.config["default.replication.factor"]
            overrides = broker.topics.check_create(
                wanted.name,
                partitions,
                factor,
                {c.name: c.value for c in wanted.configs},
                existing=broker.topic_names(),
                brokers=len(broker.live_brokers()),
            )
            if cluster is not None:
                fields["topic_id"] = await cluster.admin.create_topic(
                    wanted.name,
                    partitions,
                    factor,
                    overrides,
                    assignments={a.partition_index: list(a.broker_ids) for a in wanted.assignments}
                    or None,
                    validate_only=validate_only,
                )
                created.append(wanted.name)
            elif not validate_only:
                topic = broker.topics.create(wanted.name, partitions, overrides)
                fields["topic_id"] = topic.topic_id
            effective = broker.config.topic_config(overrides)
            fields.update(
                num_partitions=partitions,
                replication_factor=factor,
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
        results.append(fields)
    if cluster is not None and created and not validate_only and millis(request.timeout) > 0:
        # Kafka's DelayedCreatePartitions: answer once every new partition has a leader
        def led() -> bool:
            return all(cluster.cache.all_led(name) for name in created)

        if not await cluster.admin.wait_for(led, millis(request.timeout) / 1000):
            for fields in results:
                if fields["name"] in created and not cluster.cache.all_led(fields["name"]):
                    fields.update(
                        error_code=ErrorCode.request_timed_out,
                        error_message="the topic was created; its leaders are not elected yet",
                    )
    return make(
        schema, throttle_time=0, topics=tuple(make(result_cls, **fields) for fields in results)
    )


async def delete_topics(
    broker: Broker, request: DeleteTopicsRequest, client: Connection
) -> DeleteTopicsResponse:
    """Delete topics by name, or from v6 by topic id (one of the two per topic, as Kafka)."""
    schema = response_schema(DELETE_TOPICS, request.__version__)
    result_cls = nested(schema, "responses")
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if isinstance(request, DeleteTopicsRequestV6):
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    cluster = broker.cluster
    results: list[dict[str, Any]] = []
    deleting: list[str] = []
    for asked_name, asked_id in wanted:
        name, topic_id = asked_name, asked_id
        code, message = ErrorCode.none, None
        topic = broker.describe_topic(name) if name is not None else None
        if asked_id is not None and asked_name is not None:
            code, message = ErrorCode.invalid_request, "give a topic name or a topic id, not both"
        elif asked_id is None and asked_name is None:
            code, message = ErrorCode.invalid_request, "give a topic name or a topic id"
        elif asked_name is not None and not _may(broker, client, DELETE_TOPICS, asked_name):
            code = ErrorCode.topic_authorization_failed
        elif not broker.config["delete.topic.enable"]:
            code, message = ErrorCode.topic_deletion_disabled, "delete.topic.enable is false"
        elif asked_id is not None:
            topic = broker.describe_topic_by_id(asked_id)
            if topic is None:
                code = ErrorCode.unknown_topic_id
                message = f"unknown topic id {format_topic_id(asked_id)}"
            elif not _may(broker, client, DELETE_TOPICS, topic.name):
                code = ErrorCode.topic_authorization_failed
        elif topic is None:
            code, message = ErrorCode.unknown_topic_or_partition, f"unknown topic {name!r}"
        if code == ErrorCode.none and topic is not None:
            name, topic_id = topic.name, topic.topic_id
            if cluster is not None:  # the controller deletes it; brokers drop their replicas
                await cluster.admin.delete_topic(name)
                deleting.append(name)
            elif (local := broker.topics.get(name)) is not None:
                broker.topics.delete(local)
        results.append(
            {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
        )
    if cluster is not None and deleting and millis(request.timeout) > 0:

        def gone() -> bool:
            return not any(name in cluster.cache.assignments for name in deleting)

        if not await cluster.admin.wait_for(gone, millis(request.timeout) / 1000):
            for fields in results:
                if fields["name"] in cluster.cache.assignments and fields["name"] in deleting:
                    fields.update(
                        error_code=ErrorCode.request_timed_out,
                        error_message="the deletion is requested; it is not complete yet",
                    )
    return make(
        schema,
        throttle_time=0,
        responses=tuple(make(result_cls, **fields) for fields in results),
    )


async def create_partitions(
    broker: Broker, request: CreatePartitionsRequest, client: Connection
) -> CreatePartitionsResponse:
    schema = response_schema(CREATE_PARTITIONS, request.__version__)
    result_cls = nested(schema, "results")
    results = []
    for wanted in request.topics:
        code, message = ErrorCode.none, None
        if not _may(broker, client, CREATE_PARTITIONS, wanted.name):
            code = ErrorCode.topic_authorization_failed
            results.append(make(result_cls, name=wanted.name, error_code=code, error_message=None))
            continue
        if broker.cluster is not None:
            try:
                await broker.cluster.admin.add_partitions(
                    wanted.name,
                    wanted.count,
                    [list(a.broker_ids) for a in wanted.assignments or ()] or None,
                    validate_only=request.validate_only,
                )
            except KafkaError as exc:
                code, message = exc.code, exc.message
            results.append(
                make(result_cls, name=wanted.name, error_code=code, error_message=message)
            )
            continue
        topic = broker.topics.get(wanted.name)
        if topic is None:
            code, message = ErrorCode.unknown_topic_or_partition, f"unknown topic {wanted.name!r}"
        elif wanted.count <= topic.partition_count:
            code = ErrorCode.invalid_partitions
            message = (
                f"topic has {topic.partition_count} partitions; the count can only grow "
                f"(asked {wanted.count})"
            )
        elif wanted.count - topic.partition_count > MAX_PARTITIONS_PER_REQUEST:
            try:
                check_partitions_added(wanted.count - topic.partition_count)
            except KafkaError as exc:
                code, message = exc.code, exc.message
        elif wanted.assignments and {n for a in wanted.assignments for n in a.broker_ids} - {
            broker.node_id
        }:
            code, message = ErrorCode.invalid_replica_assignment, "unknown broker ids"
        elif not request.validate_only:
            broker.topics.add_partitions(topic, wanted.count)
        results.append(make(result_cls, name=wanted.name, error_code=code, error_message=message))
    return make(schema, throttle_time=0, results=tuple(results))


def _may(broker: Broker, client: Connection, api_key: int, topic: str) -> bool:
    """Whether the API's operation on ``topic`` is allowed (always, without an authorizer)."""
    return broker.authorizer is None or allowed(broker.authorizer, client, api_key, TOPIC, topic)
