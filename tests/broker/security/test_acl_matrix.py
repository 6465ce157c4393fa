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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    ElectionType,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from sluice.broker.security.acls import ResourceType as SluiceType
from sluice.broker.security.required_acls import DENIED_ERRORS, REQUIRED, Requirement
from tests.broker.security.acl_fixtures import (
    CLUSTER,
    TIMEOUT,
    USERS,
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

TOPIC, GROUP, TXN, BROKER = (
    ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.BROKER,
)  # fmt: skip
TYPES = {SluiceType.TOPIC: TOPIC, SluiceType.GROUP: GROUP, SluiceType.TRANSACTIONAL_ID: TXN,
         SluiceType.CLUSTER: BROKER}  # fmt: skip
Op = AclOperation


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclBroker]:
    yield from acl_broker(tmp_path_factory.mktemp("acl-matrix"))


@dataclass
class Names:
    """The resources of one test: a topic with a record, a group with a committed offset, a
    transactional id, and a topic that does not exist yet."""

    topic: str
    group: str
    txn: str
    fresh: str

    def of(self, rtype: ResourceType, *, fresh: bool = False) -> str:
        if rtype == TOPIC:
            return self.fresh if fresh else self.topic
        return {GROUP: self.group, TXN: self.txn, BROKER: CLUSTER}[rtype]


@contextmanager
def kafka_python_admin(b: AclBroker, user: str) -> Iterator[Any]:
    """kafka-python's admin client as ``user``; its errors become :class:`KafkaException`."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError as KpError

    admin = KafkaAdminClient(
        bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_plain_username=user,
        sasl_plain_password=USERS[user], request_timeout_ms=int(TIMEOUT * 1000),
    )  # fmt: skip
    try:
        yield admin
    except KpError as exc:
        raise KafkaException(ConfluentError(int(exc.errno), str(exc))) from exc
    finally:
        admin.close()


class NotListedError(Exception):
    """A listing left the resource out (ListGroups filters rather than refuses)."""


@dataclass(frozen=True)
class Scenario:
    """What a client does to use an API, and every ACL it needs for it: ``(resource type,
    operation, on the fresh topic)``. ``denied`` is the error code the row's refusal shows
    (None: the row's resource type's)."""

    run: Callable[[AclBroker, str, Names], None]
    needs: tuple[tuple[ResourceType, AclOperation], ...]
    denied: int | None = None
    fresh_topic: bool = False


# ---- what the clients do ---------------------------------------------------------------------


def _raise_partition_errors(partitions: list[TopicPartition]) -> None:
    for tp in partitions:
        if tp.error is not None:
            raise KafkaException(tp.error)


def produce(b: AclBroker, user: str, n: Names, **conf: Any) -> None:
    producer = Producer(b.conf(user, **{"enable.idempotence": False, **conf}))
    errors: list[Any] = []
    topic = n.fresh if conf.get("allow.auto.create.topics") else n.topic
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(TIMEOUT)
    assert errors, "no delivery report"
    if errors[0] is not None:
        raise KafkaException(errors[0])


def idempotent_produce(b: AclBroker, user: str, n: Names) -> None:
    produce(b, user, n, **{"enable.idempotence": True})


def auto_create(b: AclBroker, user: str, n: Names) -> None:
    produce(b, user, n, **{"allow.auto.create.topics": True})


def fetch(b: AclBroker, user: str, n: Names) -> None:
    consumer = Consumer(b.conf(user, **{"group.id": n.group, "enable.auto.commit": False}))
    try:
        consumer.assign([TopicPartition(n.topic, 0, 0)])
        for _ in range(int(TIMEOUT * 2)):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                raise KafkaException(msg.error())
            return
        raise AssertionError("no record and no error")
    finally:
        consumer.close()


def list_offsets(b: AclBroker, user: str, n: Names) -> None:
    futures = b.admin(user).list_offsets({TopicPartition(n.topic, 0): OffsetSpec.latest()})
    for future in futures.values():
        future.result(TIMEOUT)


def metadata(b: AclBroker, user: str, n: Names) -> None:
    md = b.admin(user).list_topics(n.topic, timeout=TIMEOUT)
    error = md.topics[n.topic].error
    if error is not None:
        raise KafkaException(error)


def commit(b: AclBroker, user: str, n: Names) -> None:
    wanted = ConsumerGroupTopicPartitions(n.group, [TopicPartition(n.topic, 0, 1)])
    for future in b.admin(user).alter_consumer_group_offsets([wanted]).values():
        _raise_partition_errors(future.result(TIMEOUT).topic_partitions)


def committed(b: AclBroker, user: str, n: Names) -> None:
    wanted = ConsumerGroupTopicPartitions(n.group, [TopicPartition(n.topic, 0)])
    for future in b.admin(user).list_consumer_group_offsets([wanted]).values():
        _raise_partition_errors(future.result(TIMEOUT).topic_partitions)


def subscribe(b: AclBroker, user: str, n: Names) -> None:
    """A group member: JoinGroup and SyncGroup (an assignment), Heartbeat, LeaveGroup."""
    conf = {"group.id": n.group, "enable.auto.commit": False}
    consumer = Consumer(b.conf(user, **conf))
    assigned: list[Any] = []
    try:
        consumer.subscribe([n.topic], on_assign=lambda _c, parts: assigned.extend(parts))
        for _ in range(int(TIMEOUT * 2)):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None:
                raise KafkaException(msg.error())
            if assigned:
                return
        raise AssertionError("no assignment and no error")
    finally:
        consumer.close()


def describe_groups(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).describe_consumer_groups([n.group]).values():
        future.result(TIMEOUT)


def list_groups(b: AclBroker, user: str, n: Names) -> None:
    listed = b.admin(user).list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
    if n.group not in {g.group_id for g in listed.valid}:
        raise NotListedError(n.group)


def delete_groups(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).delete_consumer_groups([n.group]).values():
        future.result(TIMEOUT)


def create_topics(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).create_topics([NewTopic(n.fresh, 1, 1)]).values():
        future.result(TIMEOUT)


def delete_topics(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).delete_topics([n.topic]).values():
        future.result(TIMEOUT)


def delete_records(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).delete_records([TopicPartition(n.topic, 0, 1)]).values():
        result = future.result(TIMEOUT)
        if getattr(result, "error", None) is not None:
            raise KafkaException(result.error)


def create_partitions(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).create_partitions([NewPartitions(n.topic, 2)]).values():
        future.result(TIMEOUT)


def transaction(b: AclBroker, user: str, n: Names) -> None:
    """InitProducerId, AddPartitionsToTxn, Produce, EndTxn."""
    producer = Producer(b.conf(user, **{"transactional.id": n.txn}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(n.topic, b"t")
    producer.commit_transaction(TIMEOUT)


def send_offsets(b: AclBroker, user: str, n: Names) -> None:
    """AddOffsetsToTxn and TxnOffsetCommit."""
    producer = Producer(b.conf(user, **{"transactional.id": n.txn}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    consumer = Consumer(b.conf(user, **{"group.id": n.group}))
    try:
        producer.send_offsets_to_transaction(
            [TopicPartition(n.topic, 0, 1)], consumer.consumer_group_metadata(), TIMEOUT
        )
        producer.commit_transaction(TIMEOUT)
    finally:
        consumer.close()


def _everything() -> AclBindingFilter:
    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                            AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip


def describe_acls(b: AclBroker, user: str, n: Names) -> None:
    """kafka-python's: librdkafka answers an empty list when the broker refuses."""
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpType

    everything = ACLFilter(
        principal=None, host="*", operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(KpType.ANY, None, ACLResourcePatternType.ANY),
    )  # fmt: skip
    with kafka_python_admin(b, user) as admin:
        admin.describe_acls(everything)


def create_acls(b: AclBroker, user: str, n: Names) -> None:
    new = binding("carol", TOPIC, n.fresh, Op.READ)
    for future in b.admin(user).create_acls([new], request_timeout=TIMEOUT).values():
        future.result(TIMEOUT)


def delete_acls(b: AclBroker, user: str, n: Names) -> None:
    mine = AclBindingFilter(TOPIC, n.fresh, ResourcePatternType.ANY, None, None,
                            AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    for future in b.admin(user).delete_acls([mine], request_timeout=TIMEOUT).values():
        future.result(TIMEOUT)


def _topic_resource(n: Names) -> ConfigResource:
    return ConfigResource(ConfigResource.Type.TOPIC, n.topic)


def _broker_resource() -> ConfigResource:
    return ConfigResource(ConfigResource.Type.BROKER, "0")


def describe_topic_configs(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).describe_configs([_topic_resource(n)]).values():
        future.result(TIMEOUT)


def describe_broker_configs(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).describe_configs([_broker_resource()]).values():
        future.result(TIMEOUT)


def _alter(resource: ConfigResource, key: str, value: str) -> ConfigResource:
    resource.set_config(key, value)
    return resource


def alter_topic_configs(b: AclBroker, user: str, n: Names) -> None:
    wanted = _alter(_topic_resource(n), "retention.ms", "3600000")
    for future in b.admin(user).alter_configs([wanted]).values():
        future.result(TIMEOUT)


def alter_broker_configs(b: AclBroker, user: str, n: Names) -> None:
    wanted = _alter(_broker_resource(), "log.cleaner.threads", "1")
    for future in b.admin(user).alter_configs([wanted]).values():
        future.result(TIMEOUT)


def incremental_alter(resource: Callable[[Names], ConfigResource], key: str, value: str) -> Any:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    def run(b: AclBroker, user: str, n: Names) -> None:
        wanted = resource(n)
        wanted.add_incremental_config(
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        )
        for future in b.admin(user).incremental_alter_configs([wanted]).values():
            future.result(TIMEOUT)

    return run


def elect_leaders(b: AclBroker, user: str, n: Names) -> None:
    future = b.admin(user).elect_leaders(ElectionType.PREFERRED, [TopicPartition(n.topic, 0)])
    for error in future.result(TIMEOUT).values():
        if error is not None:
            raise KafkaException(error)


def describe_transactions(b: AclBroker, user: str, n: Names) -> None:
    """FindCoordinator for the transactional id, then DescribeTransactions (kafka-python's)."""
    with kafka_python_admin(b, user) as admin:
        for state in admin.describe_transactions([n.txn]):
            code = state.get("error_code", 0) if isinstance(state, dict) else 0
            if code:
                raise KafkaException(ConfluentError(int(code)))


def describe_scram(b: AclBroker, user: str, n: Names) -> None:
    """kafka-python's: librdkafka answers an empty result when the broker refuses."""
    with kafka_python_admin(b, user) as admin:
        admin.describe_user_scram_credentials()


def alter_scram(b: AclBroker, user: str, n: Names) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism
    from confluent_kafka.admin import UserScramCredentialUpsertion as Upsert

    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    futures = b.admin(user).alter_user_scram_credentials([Upsert(n.group, info, b"pw")])
    for future in futures.values():
        future.result(TIMEOUT)


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
    # KIP-679: WRITE on the topic alone lets a producer be idempotent; without it, librdkafka
    # shows the Produce refusal (InitProducerId's CLUSTER_AUTHORIZATION_FAILED is audited)
    (22, SluiceType.TOPIC, "idempotent: or, on any topic"): Scenario(
        idempotent_produce, ((TOPIC, Op.WRITE),), TOPIC_DENIED
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
        incremental_alter(_topic_resource, "retention.ms", "3600000"),
        ((TOPIC, Op.ALTER_CONFIGS),),
    ),
    (44, SluiceType.CLUSTER, "broker"): Scenario(
        incremental_alter(lambda _n: _broker_resource(), "log.cleaner.threads", "1"),
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
    expected = scenario.denied or int(DENIED_ERRORS[row.resource_type])
    try:
        with pytest.raises((KafkaException, NotListedError)) as refused:
            scenario.run(broker, "bob", n)
        if refused.type is KafkaException:
            assert code_of(refused.value) == expected, (
                f"{row.api}: bob without {own} got {refused.value}, expected code {expected}"
            )
        try:
            scenario.run(broker, "alice", n)
        except KafkaException as exc:
            assert code_of(exc) != expected, f"{row.api}: alice with {own} was refused: {exc}"
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
