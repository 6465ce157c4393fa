"""Metadata: the broker, and the topics with their partitions' leader, replicas and ISR.

One node leads every partition. Leader epochs are reported as -1 (unknown) and authorized
operations as INT32_MIN (not requested), which is what clients expect from a broker without
ACLs. Unknown topics are created when ``auto.create.topics.enable`` and the request allows it.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.errors import KafkaError
from sluice.broker.protocol.codec import make, nested, response_schema
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.versions import METADATA
from sluice.broker.topics import Topic, validate_topic_name

INT32_MIN = -(2**31)


async def handle(broker: Broker, request: Any, _client: Connection) -> Any:
    schema = response_schema(METADATA, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    allow_create = getattr(request, "allow_auto_topic_creation", True)

    if request.topics is None:
        wanted = [t.name for t in broker.topics.topics.values()]
    else:
        wanted = [t.name for t in request.topics if t.name is not None]

    def describe(topic: Topic) -> Any:
        node = broker.node_id
        partitions = tuple(
            make(
                partition_cls,
                error_code=ErrorCode.none,
                partition_index=p.index,
                leader_id=node,
                leader_epoch=-1,
                replica_nodes=(node,),
                isr_nodes=(node,),
                offline_replicas=(),
            )
            for p in topic.partitions
        )
        return make(
            topic_cls,
            error_code=ErrorCode.none,
            name=topic.name,
            topic_id=topic.topic_id,
            is_internal=topic.internal,
            partitions=partitions,
            topic_authorized_operations=INT32_MIN,
        )

    topics = []
    for name in wanted:
        topic = broker.topics.get(name)
        if topic is None and allow_create:
            topic = broker.auto_create(name)
        if topic is not None:
            topics.append(describe(topic))
            continue
        try:
            validate_topic_name(name)
            code = ErrorCode.unknown_topic_or_partition
        except KafkaError as exc:
            code = exc.code
        topics.append(
            make(
                topic_cls,
                error_code=code,
                name=name,
                is_internal=False,
                partitions=(),
                topic_authorized_operations=INT32_MIN,
            )
        )

    broker_entry = make(
        nested(schema, "brokers"),
        node_id=broker.node_id,
        host=broker.host,
        port=broker.port,
        rack=None,
    )
    return make(
        schema,
        throttle_time=0,
        brokers=(broker_entry,),
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        topics=tuple(topics),
        cluster_authorized_operations=INT32_MIN,
    )
