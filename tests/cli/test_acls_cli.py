"""``sluice acls add|remove|list`` against a broker with an authorizer, as the super user
(``-X`` SASL options), with kafka-acls' options; the ACLs it adds are enforced on clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from tests.broker.security.acl_fixtures import TIMEOUT, USERS, AclBroker, acl_broker
from tests.cli.conftest import Result, run_sluice

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclBroker]:
    yield from acl_broker(tmp_path_factory.mktemp("acls-cli"))


def acls(b: AclBroker, *args: str, user: str = "admin") -> Result:
    sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
            "-X", f"sasl.username={user}", "-X", f"sasl.password={USERS[user]}"]  # fmt: skip
    return run_sluice("acls", *args, "-b", b.bootstrap, *sasl)


def delivered(b: AclBroker, user: str, topic: str) -> bool:
    producer = Producer(b.conf(user, **{"enable.idempotence": False}))
    errors: list[object] = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(TIMEOUT)
    return errors == [None]


def test_add_list_remove(broker: AclBroker) -> None:
    topic = broker.new_topic()
    added = acls(broker, "add", "--allow-principal", "User:alice", "--operation", "Write",
                 "--operation", "Describe", "--topic", topic)  # fmt: skip
    assert added.code == 0, added
    assert "added 2 ACLs" in added.out, added
    assert delivered(broker, "alice", topic), "the ACLs added by the CLI are not enforced"
    listed = acls(broker, "list", "--topic", topic)
    assert listed.code == 0, listed
    rows = [line.split() for line in listed.out.splitlines()[1:]]
    assert sorted(rows) == [
        ["User:alice", "*", "DESCRIBE", "ALLOW", "TOPIC", topic, "LITERAL"],
        ["User:alice", "*", "WRITE", "ALLOW", "TOPIC", topic, "LITERAL"],
    ], listed
    removed = acls(broker, "remove", "--topic", topic, "--force")
    assert removed.code == 0, removed
    assert "removed 2 ACLs" in removed.out, removed
    md = broker.admin("alice").list_topics(topic, timeout=TIMEOUT)
    assert md.topics[topic].error is not None, "alice still describes the topic after removal"


def test_producer_and_consumer_conveniences(broker: AclBroker) -> None:
    topic = broker.new_topic()
    prefix = topic[:6]
    added = acls(broker, "add", "--allow-principal", "User:carol", "--producer", "--topic",
                 prefix, "--resource-pattern-type", "prefixed", "--transactional-id", "tx-",
                 "--idempotent")  # fmt: skip
    assert added.code == 0, added
    listed = acls(broker, "list", "--principal", "User:carol")
    ops = {(line.split()[2], line.split()[4]) for line in listed.out.splitlines()[1:]}
    assert ops == {("WRITE", "TOPIC"), ("DESCRIBE", "TOPIC"), ("CREATE", "TOPIC"),
                   ("WRITE", "TRANSACTIONAL_ID"), ("DESCRIBE", "TRANSACTIONAL_ID"),
                   ("IDEMPOTENT_WRITE", "CLUSTER")}, listed  # fmt: skip
    assert delivered(broker, "carol", topic), "--producer's prefixed ACLs are not enforced"
    consumer = acls(broker, "add", "--allow-principal", "User:carol", "--consumer", "--topic",
                    topic, "--group", "carol-app")  # fmt: skip
    assert consumer.code == 0 and "added 3 ACLs" in consumer.out, consumer
    matched = acls(broker, "list", "--topic", topic, "--resource-pattern-type", "match")
    assert {line.split()[2] for line in matched.out.splitlines()[1:]} >= {"READ", "WRITE"}


def test_errors_say_what_was_wrong(broker: AclBroker) -> None:
    bad_op = acls(broker, "add", "--allow-principal", "User:x", "--operation", "Fly",
                  "--topic", "t")  # fmt: skip
    assert bad_op.code == 2 and "Fly" in bad_op.err, bad_op
    no_principal = acls(broker, "add", "--operation", "Read", "--topic", "t")
    assert no_principal.code == 2 and "--allow-principal" in no_principal.err, no_principal
    refused = acls(broker, "add", "--allow-principal", "User:x", "--topic", "t", user="bob")
    assert refused.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.err, refused
    # librdkafka hands the CLI an empty result for a refused DescribeAcls: the CLI must not
    # print an empty table as if there were no ACLs
    hidden = acls(broker, "list", user="bob")
    assert hidden.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in hidden.err, hidden
    assert "PRINCIPAL" not in hidden.out, hidden
