"""Authorized operations (KIP-430) as Kafka without an authorizer answers them: every operation
the resource type supports when the client asks, INT32_MIN when it does not.

The raw Metadata check runs in-process (``in_process_broker``: no socket needed to test what a
request gets back); the real clients' checks run against the broker process."""

from __future__ import annotations

import datetime
import uuid

import pytest
from confluent_kafka import Consumer, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient
from kio.schema.create_topics.v5 import request as create_topics_v5
from kio.schema.describe_groups.v5 import request as describe_groups_v5
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8 import request as metadata_v8
from kio.schema.metadata.v12 import request as metadata_v12

from tests.broker.conftest import Wire, create_topic
from tests.broker.inprocess import InProcessBroker
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 15.0
INT32_MIN = -(2**31)

# Kafka's AclEntry.supportedOperations
TOPIC = {
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
}
CLUSTER = {
    AclOperation.CREATE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
}
GROUP = {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}


def bits(operations: set[AclOperation]) -> int:
    return sum(1 << op.value for op in operations)


def test_admin_client_gets_every_supported_operation_when_it_asks(
    shared_broker: BrokerProcess,
) -> None:
    bootstrap = shared_broker.bootstrap
    name = f"ops-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = TopicCollection([name])
    asked = admin.describe_topics(topics, include_authorized_operations=True)[name]
    assert set(asked.result(TIMEOUT).authorized_operations) == TOPIC
    not_asked = admin.describe_topics(topics)[name].result(TIMEOUT)
    assert not not_asked.authorized_operations, not_asked.authorized_operations
    cluster = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert set(cluster.authorized_operations) == CLUSTER
    assert not admin.describe_cluster().result(TIMEOUT).authorized_operations


def test_metadata_answers_int32_min_unless_asked(in_process_broker: InProcessBroker) -> None:
    broker = in_process_broker
    (created,) = broker.request(
        create_topics_v5.CreateTopicsRequest(
            topics=(
                create_topics_v5.CreatableTopic(
                    name="ops", num_partitions=1, replication_factor=1, assignments=(), configs=()
                ),
            ),
            timeout=datetime.timedelta(seconds=5),
            validate_only=False,
        )
    ).topics
    assert created.error_code == ErrorCode.none, created
    for include in (False, True):
        v8 = broker.request(
            metadata_v8.MetadataRequest(
                topics=(metadata_v8.MetadataRequestTopic(name="ops"),),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=include,
                include_topic_authorized_operations=include,
            )
        )
        assert v8.cluster_authorized_operations == (bits(CLUSTER) if include else INT32_MIN)
        assert v8.topics[0].topic_authorized_operations == (bits(TOPIC) if include else INT32_MIN)
        v12 = broker.request(
            metadata_v12.MetadataRequest(
                topics=(metadata_v12.MetadataRequestTopic(name="ops", topic_id=None),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=include,
            )
        )
        assert v12.topics[0].topic_authorized_operations == (bits(TOPIC) if include else INT32_MIN)


def test_describe_groups_answers_the_group_operations_when_asked(
    shared_broker: BrokerProcess,
) -> None:
    bootstrap = shared_broker.bootstrap
    name = f"ops-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name)
    group = f"ops-group-{uuid.uuid4().hex[:8]}"
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        member.subscribe([name])
        member.poll(3)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        described = admin.describe_consumer_groups([group], include_authorized_operations=True)
        assert set(described[group].result(TIMEOUT).authorized_operations) == GROUP
        with Wire(bootstrap) as conn:
            for include in (False, True):
                (answer,) = conn.request(
                    describe_groups_v5.DescribeGroupsRequest(
                        groups=(group, "no-such-group"), include_authorized_operations=include
                    )
                ).groups[:1]
                assert answer.authorized_operations == (bits(GROUP) if include else INT32_MIN)
    finally:
        member.close()
