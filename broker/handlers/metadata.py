"""Metadata: the brokers, and the topics with their ids, partitions' leader, replicas and ISR.

On one node this node leads every partition, in the partition's leader epoch
(:mod:`sluice.broker.log.epochs`: 0 from the partition's creation on one node), against which
clients check their fetch positions (KIP-320). In a cluster the answer is the broker's metadata
cache (:mod:`sluice.broker.cluster.metadata_cache`): the live brokers, the controller, each
partition's leader (-1 with LEADER_NOT_AVAILABLE while it has none), leader epoch, replicas,
ISR and offline replicas, the same from every broker.

Authorized operations are answered as Kafka answers them: with an authorizer, the operations
the principal is allowed; without one, every operation the topic or cluster supports
(:mod:`sluice.broker.protocol.authorized_operations`); INT32_MIN when the request does not ask.
With an authorizer (:mod:`sluice.broker.security.required_acls`), a listing of every topic
leaves out those the principal may not DESCRIBE, a named one is answered
TOPIC_AUTHORIZATION_FAILED, and an auto-creation needs CREATE on the cluster or the topic.

Unknown topics are created when ``auto.create.topics.enable`` and the request allows it (by
name only, as Kafka); in a cluster the topic is created in the cluster and answered
LEADER_NOT_AVAILABLE until its leaders are elected, as Kafka answers.

Topic ids (v10+): every topic entry carries its id. From v12 a requested topic may be named by
id alone (name null): an unknown id is answered UNKNOWN_TOPIC_ID with a null name; an id
together with a name that is not that topic's is INCONSISTENT_TOPIC_ID. In v10 and v11 a
requested topic must have a name and no id (INVALID_REQUEST otherwise), as in Kafka.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.metadata_cache import TopicInfo
from sluice.broker.errors import KafkaError
from sluice.broker.protocol.api_keys import METADATA
from sluice.broker.protocol.authorized_operations import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    authorized,
)
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed_operation, authorized_bits
from sluice.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from sluice.broker.topics import validate_topic_name

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import MetadataRequest, MetadataResponse

TOPIC = ResourceType.TOPIC
DESCRIBE, CREATE = AclOperation.DESCRIBE, AclOperation.CREATE

LOOKUP_BY_ID_FROM = 12
"""The first version in which a requested topic may be named by its id alone."""


async def handle(broker: Broker, request: MetadataRequest, client: Connection) -> MetadataResponse:
    version = request.__version__
    schema = response_schema(METADATA, version)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    allow_create = getattr(request, "allow_auto_topic_creation", True)
    operations_wanted = getattr(request, "include_topic_authorized_operations", False)
    topic_operations = authorized(TOPIC_OPERATIONS, requested=operations_wanted)
    authorizer = broker.authorizer

    def may(op: AclOperation, name: str, *, audit: bool = True) -> bool:
        assert authorizer is not None
        return allowed_operation(authorizer, client, METADATA, op, TOPIC, name, audit=audit)

    def operations_of(name: str) -> int:
        if authorizer is None or not operations_wanted:
            return topic_operations
        return authorized_bits(authorizer, client, TOPIC, name, TOPIC_OPERATIONS)

    def describe(topic: TopicInfo) -> Any:
        partitions = tuple(
            make(
                partition_cls,
                error_code=ErrorCode.none if p.leader >= 0 else ErrorCode.leader_not_available,
                partition_index=p.index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=p.replicas,
                isr_nodes=p.isr,
                offline_replicas=p.offline,
            )
            for p in topic.partitions.values()
        )
        return make(
            topic_cls,
            error_code=ErrorCode.none,
            name=topic.name,
            topic_id=topic.topic_id,
            is_internal=topic.internal,
            partitions=partitions,
            topic_authorized_operations=operations_of(topic.name),
        )

    def refuse(code: ErrorCode, name: str | None, topic_id: uuid.UUID | None = None) -> Any:
        return make(
            topic_cls,
            error_code=code,
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=topic_operations,
        )

    async def by_name(name: str) -> Any:
        if authorizer is not None and not may(DESCRIBE, name):
            return refuse(ErrorCode.topic_authorization_failed, name)
        topic = broker.describe_topic(name)
        if topic is None and allow_create and authorizer is not None:
            cluster_create = allowed_operation(
                authorizer, client, METADATA, CREATE, ResourceType.CLUSTER, audit=False
            )
            if not cluster_create and not may(CREATE, name):
                return refuse(ErrorCode.topic_authorization_failed, name)
        if topic is None and broker.cluster is not None and not broker.cluster.loaded:
            return refuse(ErrorCode.leader_not_available, name)  # still reading the cluster
        if topic is None and allow_create:
            if broker.cluster is not None:  # created by the cluster: leaders come next
                if await broker.auto_create_in_cluster(name):
                    return refuse(ErrorCode.leader_not_available, name)
            elif broker.auto_create(name) is not None:
                topic = broker.describe_topic(name)
        if topic is not None:
            return describe(topic)
        try:
            validate_topic_name(name)
            return refuse(ErrorCode.unknown_topic_or_partition, name)
        except KafkaError as exc:
            return refuse(exc.code, name)

    topics: list[Any] = []
    if request.topics is None:
        names = broker.topic_names()
        if authorizer is not None:
            names = [name for name in names if may(DESCRIBE, name, audit=False)]
        described = (broker.describe_topic(name) for name in names)
        topics = [describe(t) for t in described if t is not None]
    else:
        for wanted in request.topics:
            name: str | None = wanted.name
            topic_id: uuid.UUID | None = getattr(wanted, "topic_id", None)
            if topic_id is None and name is not None:
                topics.append(await by_name(name))
            elif version < LOOKUP_BY_ID_FROM:  # names are not nullable in these responses
                topics.append(refuse(ErrorCode.invalid_request, name or "", topic_id))
            elif topic_id is None:  # neither a name nor an id
                topics.append(refuse(ErrorCode.invalid_request, name))
            elif (topic := broker.describe_topic_by_id(topic_id)) is None:
                topics.append(refuse(ErrorCode.unknown_topic_id, None, topic_id))
            elif authorizer is not None and not may(DESCRIBE, topic.name):
                topics.append(refuse(ErrorCode.topic_authorization_failed, None, topic_id))
            elif name is not None and name != topic.name:
                topics.append(refuse(ErrorCode.inconsistent_topic_id, name, topic_id))
            else:
                topics.append(describe(topic))

    broker_cls = nested(schema, "brokers")
    brokers = tuple(
        make(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in broker.live_brokers(client.advertised, client.listener_name)
    )
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        brokers=brokers,
        cluster_id=broker.cluster_id,
        controller_id=broker.controller_id,
        topics=tuple(topics),
        cluster_authorized_operations=_cluster_operations(broker, request, client),
    )


def _cluster_operations(broker: Broker, request: Any, client: Connection) -> int:
    """The cluster's authorized operations (v8–v10 ask for them; INT32_MIN when not asked)."""
    wanted = getattr(request, "include_cluster_authorized_operations", False)
    if broker.authorizer is None or not wanted:
        return authorized(CLUSTER_OPERATIONS, requested=wanted)
    return authorized_bits(
        broker.authorizer, client, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS
    )
