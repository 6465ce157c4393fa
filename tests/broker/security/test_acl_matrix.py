"""The ACL matrix, generated from the broker's one table of API → required ACLs
(:data:`sluice.broker.security.required_acls.REQUIRED`): for every row a real client drives,
a principal (bob) with every ACL the scenario needs but the row's is denied with the row's
error code, and one (alice) with all of them is not. Rows no client sends (inter-broker APIs,
APIs without a client call here) are listed in :data:`NOT_DRIVEN` with the reason, and a test
checks that every row is one or the other.

One broker for the module (SASL_PLAINTEXT, PLAIN users, ``super.users=User:admin``); each
test uses topics, groups and transactional ids of its own, and ACLs for them only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from sluice.broker.security.acls import ResourceType as SluiceType
from sluice.broker.security.required_acls import DENIED_ERRORS, REQUIRED, Requirement
from tests.broker.security.acl_actions import (
    BROKER,
    GROUP,
    TOPIC,
    TXN,
    TYPES,
    Names,
    NotListedError,
    Op,
    Scenario,
    alter_broker_configs,
    alter_scram,
    alter_topic_configs,
    auto_create,
    broker_resource,
    commit,
    committed,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_broker_configs,
    describe_groups,
    describe_scram,
    describe_topic_configs,
    describe_transactions,
    elect_leaders,
    fetch,
    idempotent_produce,
    incremental_alter,
    list_groups,
    list_offsets,
    metadata,
    produce,
    send_offsets,
    subscribe,
    topic_resource,
    transaction,
)
from tests.broker.security.acl_fixtures import (
    CLUSTER,
    TIMEOUT,
    AclBroker,
    acl_broker,
    binding,
    code_of,
)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning"),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclBroker]:
    yield from acl_broker(tmp_path_factory.mktemp("acl-matrix"))


# ---- the scenarios, by row (api key, resource type, condition) --------------------------------

CLUSTER_DENIED, TOPIC_DENIED, NO_LEADERS = 31, 29, -156
SCENARIOS: dict[tuple[int, SluiceType, str], Scenario] = {
    (0, SluiceType.TOPIC, ""): Scenario(produce, ((TOPIC, Op.WRITE),)),
    (0, SluiceType.TRANSACTIONAL_ID, "transactional"): Scenario(
        transaction, ((TXN, Op.WRITE), (TOPIC, Op.WRITE))
    ),
    (1, SluiceType.TOPIC, ""): Scenario(
        fetch, ((TOPIC, Op.READ), (TOPIC, Op.DESCRIBE), (GROUP, Op.READ))
    ),
    # librdkafka asks Metadata for the leaders first: DESCRIBE refused there shows as _NOENT
    (2, SluiceType.TOPIC, ""): Scenario(list_offsets, ((TOPIC, Op.DESCRIBE),), NO_LEADERS),
    (3, SluiceType.TOPIC, ""): Scenario(metadata, ((TOPIC, Op.DESCRIBE),)),
    (3, SluiceType.CLUSTER, "auto-create"): Scenario(
        auto_create, ((BROKER, Op.CREATE), (TOPIC, Op.WRITE)), TOPIC_DENIED, fresh_topic=True
    ),
    (3, SluiceType.TOPIC, "auto-create"): Scenario(
        auto_create, ((TOPIC, Op.CREATE), (TOPIC, Op.WRITE)), fresh_topic=True
    ),
    (8, SluiceType.GROUP, ""): Scenario(commit, ((GROUP, Op.READ), (TOPIC, Op.READ))),
    (8, SluiceType.TOPIC, ""): Scenario(commit, ((GROUP, Op.READ), (TOPIC, Op.READ))),
    (9, SluiceType.GROUP, ""): Scenario(committed, ((GROUP, Op.DESCRIBE), (TOPIC, Op.DESCRIBE))),
    (9, SluiceType.TOPIC, ""): Scenario(committed, ((GROUP, Op.DESCRIBE), (TOPIC, Op.DESCRIBE))),
    (10, SluiceType.GROUP, "group"): Scenario(describe_groups, ((GROUP, Op.DESCRIBE),)),
    (10, SluiceType.TRANSACTIONAL_ID, "transaction"): Scenario(
        describe_transactions, ((TXN, Op.DESCRIBE),)
    ),
    (65, SluiceType.TRANSACTIONAL_ID, ""): Scenario(describe_transactions, ((TXN, Op.DESCRIBE),)),
    (15, SluiceType.GROUP, ""): Scenario(describe_groups, ((GROUP, Op.DESCRIBE),)),
    (16, SluiceType.CLUSTER, "or"): Scenario(list_groups, ((BROKER, Op.DESCRIBE),)),
    (16, SluiceType.GROUP, "or"): Scenario(list_groups, ((GROUP, Op.DESCRIBE),)),
    (19, SluiceType.CLUSTER, "or"): Scenario(
        create_topics, ((BROKER, Op.CREATE),), TOPIC_DENIED, fresh_topic=True
    ),
    (19, SluiceType.TOPIC, "or"): Scenario(create_topics, ((TOPIC, Op.CREATE),), fresh_topic=True),
    (20, SluiceType.TOPIC, ""): Scenario(delete_topics, ((TOPIC, Op.DELETE),)),
    (21, SluiceType.TOPIC, ""): Scenario(
        delete_records, ((TOPIC, Op.DELETE), (TOPIC, Op.DESCRIBE))
    ),
    (22, SluiceType.TRANSACTIONAL_ID, "transactional"): Scenario(
        transaction, ((TXN, Op.WRITE), (TOPIC, Op.WRITE))
    ),
    # KIP-679: WRITE on the topic alone lets a producer be idempotent; without it the broker
    # refuses InitProducerId (CLUSTER_AUTHORIZATION_FAILED, audited) and Produce; librdkafka
    # usually shows the Produce refusal, but under load the fatal InitProducerId one first
    (22, SluiceType.TOPIC, "idempotent: or, on any topic"): Scenario(
        idempotent_produce, ((TOPIC, Op.WRITE),), TOPIC_DENIED, also_denied=CLUSTER_DENIED
    ),
    (24, SluiceType.TRANSACTIONAL_ID, ""): Scenario(
        transaction, ((TXN, Op.WRITE), (TOPIC, Op.WRITE))
    ),
    (24, SluiceType.TOPIC, ""): Scenario(
        transaction, ((TXN, Op.WRITE), (TOPIC, Op.WRITE), (TOPIC, Op.DESCRIBE))
    ),
    (25, SluiceType.TRANSACTIONAL_ID, ""): Scenario(
        send_offsets, ((TXN, Op.WRITE), (GROUP, Op.READ), (TOPIC, Op.READ))
    ),
    (25, SluiceType.GROUP, ""): Scenario(
        send_offsets, ((TXN, Op.WRITE), (GROUP, Op.READ), (TOPIC, Op.READ))
    ),
    (26, SluiceType.TRANSACTIONAL_ID, ""): Scenario(
        transaction, ((TXN, Op.WRITE), (TOPIC, Op.WRITE))
    ),
    (28, SluiceType.TRANSACTIONAL_ID, ""): Scenario(
        send_offsets, ((TXN, Op.WRITE), (GROUP, Op.READ), (TOPIC, Op.READ))
    ),
    (28, SluiceType.GROUP, ""): Scenario(
        send_offsets, ((TXN, Op.WRITE), (GROUP, Op.READ), (TOPIC, Op.READ))
    ),
    (28, SluiceType.TOPIC, ""): Scenario(
        send_offsets, ((TXN, Op.WRITE), (GROUP, Op.READ), (TOPIC, Op.READ))
    ),
    (29, SluiceType.CLUSTER, ""): Scenario(describe_acls, ((BROKER, Op.DESCRIBE),)),
    (30, SluiceType.CLUSTER, ""): Scenario(create_acls, ((BROKER, Op.ALTER),), fresh_topic=True),
    (31, SluiceType.CLUSTER, ""): Scenario(delete_acls, ((BROKER, Op.ALTER),), fresh_topic=True),
    (32, SluiceType.TOPIC, "topic"): Scenario(
        describe_topic_configs, ((TOPIC, Op.DESCRIBE_CONFIGS),)
    ),
    (32, SluiceType.CLUSTER, "broker"): Scenario(
        describe_broker_configs, ((BROKER, Op.DESCRIBE_CONFIGS),)
    ),
    (33, SluiceType.TOPIC, "topic"): Scenario(alter_topic_configs, ((TOPIC, Op.ALTER_CONFIGS),)),
    (33, SluiceType.CLUSTER, "broker"): Scenario(
        alter_broker_configs, ((BROKER, Op.ALTER_CONFIGS),)
    ),
    (37, SluiceType.TOPIC, ""): Scenario(create_partitions, ((TOPIC, Op.ALTER),)),
    (42, SluiceType.GROUP, ""): Scenario(delete_groups, ((GROUP, Op.DELETE),)),
    (43, SluiceType.CLUSTER, ""): Scenario(elect_leaders, ((BROKER, Op.ALTER),)),
    (44, SluiceType.TOPIC, "topic"): Scenario(
        incremental_alter(topic_resource, "retention.ms", "3600000"),
        ((TOPIC, Op.ALTER_CONFIGS),),
    ),
    (44, SluiceType.CLUSTER, "broker"): Scenario(
        incremental_alter(lambda _n: broker_resource(), "log.cleaner.threads", "1"),
        ((BROKER, Op.ALTER_CONFIGS),),
    ),
    (50, SluiceType.CLUSTER, ""): Scenario(describe_scram, ((BROKER, Op.DESCRIBE),)),
    (51, SluiceType.CLUSTER, ""): Scenario(alter_scram, ((BROKER, Op.ALTER),)),
}
for _key in ((11, SluiceType.GROUP, ""), (12, SluiceType.GROUP, ""),
             (13, SluiceType.GROUP, ""), (14, SluiceType.GROUP, "")):  # fmt: skip
    SCENARIOS[_key] = Scenario(subscribe, ((GROUP, Op.READ), (TOPIC, Op.READ)))

NOT_DRIVEN: dict[tuple[int, SluiceType, str], str] = {
    (60, SluiceType.CLUSTER, ""): "the clients' describe_cluster sends Metadata "
    "(tests/broker/test_describe_cluster.py has the API)",
    (22, SluiceType.CLUSTER, "idempotent: or"): "a producer needs WRITE on its topic, which "
    "allows idempotence by itself (KIP-679): see test_idempotent_write_on_the_cluster",
    (1, SluiceType.CLUSTER, "follower"): "replica fetches: brokers only (tests/cluster)",
    (23, SluiceType.TOPIC, ""): "clients send it only after a leader change (tests/cluster)",
    (23, SluiceType.CLUSTER, "follower"): "brokers only",
    (27, SluiceType.CLUSTER, ""): "WriteTxnMarkers: brokers only",
    (34, SluiceType.CLUSTER, ""): "AlterReplicaLogDirs: no call in confluent-kafka",
    (35, SluiceType.CLUSTER, ""): "DescribeLogDirs: no call in confluent-kafka",
    (45, SluiceType.CLUSTER, ""): "AlterPartitionReassignments: no call in confluent-kafka",
    (46, SluiceType.CLUSTER, ""): "ListPartitionReassignments: no call in confluent-kafka",
    (47, SluiceType.GROUP, ""): "OffsetDelete: no call in confluent-kafka",
    (47, SluiceType.TOPIC, ""): "OffsetDelete: no call in confluent-kafka",
    (66, SluiceType.TRANSACTIONAL_ID, "filters the list"): "no call in confluent-kafka",
}


def _key(row: Requirement) -> tuple[int, SluiceType, str]:
    return row.api_key, row.resource_type, row.when


DRIVEN = [row for row in REQUIRED if _key(row) in SCENARIOS]


def test_every_row_is_driven_or_says_why() -> None:
    rows = {_key(row) for row in REQUIRED}
    missing = rows - set(SCENARIOS) - set(NOT_DRIVEN)
    assert not missing, f"rows of REQUIRED with no scenario and no reason: {sorted(missing)}"
    stale = (set(SCENARIOS) | set(NOT_DRIVEN)) - rows
    assert not stale, f"scenarios for rows REQUIRED no longer has: {sorted(stale)}"


def _names(b: AclBroker) -> Names:
    topic = b.new_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(b.conf("admin", **{"group.id": group}))
    try:  # the group exists (DeleteGroups, ListGroups): an offset committed by the super user
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()
    return Names(topic, group, f"tx-{uuid.uuid4().hex[:8]}", f"new-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize(
    "row", DRIVEN, ids=[f"{r.api}-{r.resource_type.name}-{r.operation.name}" for r in DRIVEN]
)
def test_denied_without_the_acl_allowed_with_it(broker: AclBroker, row: Requirement) -> None:
    scenario = SCENARIOS[_key(row)]
    own = (TYPES[row.resource_type], AclOperation[row.operation.name])
    assert own in scenario.needs, f"the scenario of {row} does not need the row's own ACL"
    n = _names(broker)

    def grants(user: str, needs: tuple[tuple[ResourceType, AclOperation], ...]) -> list[Any]:
        return [
            binding(user, rtype, n.of(rtype, fresh=scenario.fresh_topic), op) for rtype, op in needs
        ]

    broker.grant(grants("alice", scenario.needs) + grants("bob", tuple(
        need for need in scenario.needs if need != own
    )))  # fmt: skip
    expected = {scenario.denied or int(DENIED_ERRORS[row.resource_type]), scenario.also_denied}
    try:
        with pytest.raises((KafkaException, NotListedError)) as refused:
            scenario.run(broker, "bob", n)
        if refused.type is KafkaException:
            assert code_of(refused.value) in expected, (
                f"{row.api}: bob without {own} got {refused.value}, expected code {expected}"
            )
        try:
            scenario.run(broker, "alice", n)
        except KafkaException as exc:
            assert code_of(exc) not in expected, f"{row.api}: alice with {own} was refused: {exc}"
    finally:
        _forget(broker, n, scenario)


def _forget(b: AclBroker, n: Names, scenario: Scenario) -> None:
    """Remove the test's ACLs: every ACL of its resources, alice's and bob's on the cluster."""
    resources = {(rtype, n.of(rtype, fresh=f)) for rtype, _ in scenario.needs
                 for f in (False, True) if rtype != BROKER}  # fmt: skip
    filters = [AclBindingFilter(rtype, name, ResourcePatternType.ANY, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
               for rtype, name in sorted(resources)]  # fmt: skip
    filters += [AclBindingFilter(BROKER, CLUSTER, ResourcePatternType.ANY, f"User:{user}", None,
                                 AclOperation.ANY, AclPermissionType.ANY)
                for user in ("alice", "bob")]  # fmt: skip
    for future in b.admin().delete_acls(filters, request_timeout=TIMEOUT).values():
        future.result(TIMEOUT)


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    started = acl_broker(tmp_path)
    broker = next(started)
    topic = broker.new_topic()
    broker.grant([binding("alice", TOPIC, topic, Op.DESCRIBE)])
    broker.stop()
    broker.start()
    md = broker.admin("alice").list_topics(topic, timeout=TIMEOUT)
    assert md.topics[topic].error is None, "alice's DESCRIBE ACL was lost by the restart"
    listed = (
        broker.admin()
        .describe_acls(
            AclBindingFilter(
                TOPIC,
                topic,
                ResourcePatternType.LITERAL,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        )
        .result(TIMEOUT)
    )
    assert [(b.principal, b.operation) for b in listed] == [("User:alice", Op.DESCRIBE)]
    started.close()
