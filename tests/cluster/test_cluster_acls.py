"""ACLs in a cluster: kept in ZooKeeper in Kafka's layout, and enforced by every broker within
a second of their creation through any one of them (each broker watches the change
notifications and reloads)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from sluice.broker.security.acls import from_znode
from tests.cluster.brokers import BrokerCluster

pytestmark = pytest.mark.timeout(180)


def test_an_acl_made_through_one_broker_is_enforced_by_another_within_a_second(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    """Every principal is allowed where no ACL names the resource (brokers replicate as
    User:ANONYMOUS on PLAINTEXT); a DENY on one topic, created through broker 1, makes broker
    2 refuse that topic's metadata to User:ANONYMOUS within a second."""
    cluster = broker_cluster_factory(
        size=2,
        **{
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
        },
    )
    via_1 = AdminClient({"bootstrap.servers": cluster.broker(1).bootstrap})
    via_2 = AdminClient({"bootstrap.servers": cluster.broker(2).bootstrap})
    for future in via_1.create_topics([NewTopic("guarded", 1, 2), NewTopic("open", 1, 2)]).values():
        future.result(30)
    deny = AclBinding(
        ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
        AclOperation.DESCRIBE, AclPermissionType.DENY,
    )  # fmt: skip
    for future in via_1.create_acls([deny], request_timeout=30).values():
        future.result(30)
    created = time.monotonic()
    while via_2.list_topics("guarded", timeout=10).topics["guarded"].error is None:
        assert time.monotonic() - created < 1.0, "broker 2 does not enforce the ACL after 1 s"
        time.sleep(0.02)
    assert via_2.list_topics("open", timeout=10).topics["open"].error is None
    stored = cluster.store().acls.read_all()
    [entry] = from_znode(stored["/kafka-acl/Topic/guarded"])
    assert (entry.principal, entry.operation.name, entry.permission.name, entry.host) == (
        "User:ANONYMOUS",
        "DESCRIBE",
        "DENY",
        "*",
    )
    changes = cluster.store()._client.get_children("/kafka-acl-changes")
    assert any(c.startswith("acl_changes_") for c in changes), changes


def test_brokers_replicate_as_super_users_under_an_authorizer(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    """No resource open to everyone: brokers replicating over PLAINTEXT are User:ANONYMOUS,
    which ``super.users`` names (docs/security.md); ``acks=all`` writes need the follower's
    replica fetches (CLUSTER_ACTION) to be allowed."""
    cluster = broker_cluster_factory(
        size=2,
        **{
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
            "min.insync.replicas": "2",
        },
    )
    admin = AdminClient({"bootstrap.servers": cluster.broker(1).bootstrap})
    admin.create_topics([NewTopic("replicated", 1, 2)])["replicated"].result(30)
    producer = Producer({"bootstrap.servers": cluster.broker(2).bootstrap, "acks": "all"})
    errors: list[object] = []
    for i in range(5):
        producer.produce("replicated", f"r{i}".encode(), on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors == [None] * 5, f"acks=all writes failed: {errors}"
