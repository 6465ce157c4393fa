"""Kafka's ACL rules on a running broker, through real clients: prefixed patterns, DENY over
ALLOW, super users, host restrictions, ``allow.everyone.if.no.acl.found`` both ways, the
cluster's IDEMPOTENT_WRITE, Metadata's listing and authorized operations, the errors of the
ACL APIs without an authorizer, and the audit log's lines.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.broker.security.acl_fixtures import (
    TIMEOUT,
    AclBroker,
    acl_broker,
    binding,
    code_of,
)
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)

TOPIC, BROKER = ResourceType.TOPIC, ResourceType.BROKER
Op = AclOperation
TOPIC_DENIED = 29


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclBroker]:
    yield from acl_broker(tmp_path_factory.mktemp("acl-rules"))


def produce(b: AclBroker, user: str, topic: str, **conf: str) -> int | None:
    """Produce one record as ``user``: None when delivered, else the error code."""
    producer = Producer(b.conf(user, **{"enable.idempotence": False, **conf}))
    errors: list[object] = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(TIMEOUT)
    assert errors, "no delivery report"
    return None if errors[0] is None else int(errors[0].code())  # type: ignore[attr-defined]


def visible(b: AclBroker, user: str) -> set[str]:
    return set(b.admin(user).list_topics(timeout=TIMEOUT).topics)


def test_prefixed_patterns(broker: AclBroker) -> None:
    topic = broker.new_topic()
    prefix = topic[:8]
    broker.grant([binding("carol", TOPIC, prefix, Op.WRITE, pattern=ResourcePatternType.PREFIXED)])
    assert produce(broker, "carol", topic) is None, "a PREFIXED ALLOW did not apply"
    other = broker.new_topic()
    if other.startswith(prefix):  # the same random prefix: pick again
        other = broker.new_topic()
    assert produce(broker, "carol", other) == TOPIC_DENIED


def test_deny_wins_over_allow(broker: AclBroker) -> None:
    topic = broker.new_topic()
    broker.grant(
        [
            binding("*", TOPIC, topic, Op.WRITE),
            binding("carol", TOPIC, topic, Op.WRITE, permission=AclPermissionType.DENY),
        ]
    )
    assert produce(broker, "alice", topic) is None, "User:* ALLOW did not apply to alice"
    assert produce(broker, "carol", topic) == TOPIC_DENIED, "DENY did not win over ALLOW"


def test_super_users_need_no_acl(broker: AclBroker) -> None:
    topic = broker.new_topic()
    broker.grant([binding("alice", TOPIC, topic, Op.READ, permission=AclPermissionType.DENY)])
    assert produce(broker, "admin", topic) is None


def test_host_restrictions(broker: AclBroker) -> None:
    topic = broker.new_topic()
    broker.grant([binding("alice", TOPIC, topic, Op.WRITE, host="10.1.2.3")])
    assert produce(broker, "alice", topic) == TOPIC_DENIED, "an ACL of another host applied"
    broker.grant([binding("alice", TOPIC, topic, Op.WRITE, host="127.0.0.1")])
    assert produce(broker, "alice", topic) is None, "the ACL of the client's host did not apply"


def test_metadata_lists_only_described_topics_with_their_operations(broker: AclBroker) -> None:
    mine, hidden = broker.new_topic(), broker.new_topic()
    broker.grant([binding("carol", TOPIC, mine, Op.READ)])
    seen = visible(broker, "carol")
    assert mine in seen and hidden not in seen, f"carol sees {sorted(seen)}"
    described = broker.admin("carol").describe_topics(
        TopicCollection([mine]),
        include_authorized_operations=True,
    )
    ops = described[mine].result(TIMEOUT).authorized_operations
    assert set(ops) == {Op.READ, Op.DESCRIBE}, f"authorized operations: {ops}"


def test_idempotent_write_on_the_cluster(broker: AclBroker) -> None:
    """KIP-679: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic, lets InitProducerId
    give an idempotent producer its id: carol, with WRITE on her topic only, is one."""
    topic = broker.new_topic()
    broker.grant([binding("carol", TOPIC, topic, Op.WRITE)])
    assert produce(broker, "carol", topic, **{"enable.idempotence": "true"}) is None


def test_the_audit_log_has_a_line_per_denial(broker: AclBroker) -> None:
    topic = broker.new_topic()
    assert produce(broker, "bob", topic) == TOPIC_DENIED
    deadline = time.monotonic() + TIMEOUT
    wanted = (
        "denied principal='User:bob' host=127.0.0.1 api=Metadata operation=DESCRIBE "
        f"resource=TOPIC:'{topic}'"
    )
    while wanted not in (broker.root / "broker.log").read_text(errors="replace"):
        assert time.monotonic() < deadline, f"no audit line {wanted!r}"
        time.sleep(0.1)


@pytest.mark.parametrize("everyone", [True, False])
def test_allow_everyone_if_no_acl_found(tmp_path: Path, everyone: bool) -> None:
    started = acl_broker(tmp_path, **{"allow.everyone.if.no.acl.found": str(everyone).lower()})
    b = next(started)
    try:
        topic = b.new_topic()
        assert produce(b, "bob", topic) == (None if everyone else TOPIC_DENIED)
        b.grant([binding("alice", TOPIC, topic, Op.WRITE)])  # now an ACL names the topic
        assert produce(b, "bob", topic) == TOPIC_DENIED
    finally:
        started.close()


def test_acl_apis_without_an_authorizer(broker_factory: type[BrokerProcess]) -> None:
    plain = broker_factory()  # type: ignore[operator]
    admin = AdminClient({"bootstrap.servers": plain.bootstrap})
    filters = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                               AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    futures = admin.create_acls([binding("alice", TOPIC, "t", Op.READ)], request_timeout=TIMEOUT)
    for future in futures.values():
        with pytest.raises(KafkaException) as refused:
            future.result(TIMEOUT)
        assert code_of(refused.value) == 54, "CreateAcls without an authorizer"  # SECURITY_DISABLED
    for future in admin.delete_acls([filters], request_timeout=TIMEOUT).values():
        with pytest.raises(KafkaException) as refused:
            future.result(TIMEOUT)
        assert code_of(refused.value) == 54, "DeleteAcls without an authorizer"


def test_the_audit_log_has_a_line_per_failed_authentication(broker: AclBroker) -> None:
    wrong = AdminClient({**broker.conf("alice"), "sasl.password": "not-hers"})
    with pytest.raises(KafkaException):
        wrong.describe_cluster(request_timeout=5).result(10)
    deadline = time.monotonic() + TIMEOUT
    wanted = "authentication failed principal=None host=127.0.0.1 mechanism=PLAIN"
    while wanted not in (broker.root / "broker.log").read_text(errors="replace"):
        assert time.monotonic() < deadline, f"no audit line {wanted!r}"
        time.sleep(0.1)


def test_describe_groups_answers_the_principals_operations(broker: AclBroker) -> None:
    topic = broker.new_topic()
    group = f"ops-{topic}"
    consumer = Consumer(broker.conf("admin", **{"group.id": group}))
    try:  # the group exists: an offset committed by the super user
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()
    broker.grant([binding("carol", ResourceType.GROUP, group, Op.READ)])
    futures = broker.admin("carol").describe_consumer_groups(
        [group], include_authorized_operations=True
    )
    ops = futures[group].result(TIMEOUT).authorized_operations
    assert set(ops) == {Op.READ, Op.DESCRIBE}, f"authorized operations: {ops}"
