"""What a real client does for each row of the ACL matrix (``test_acl_matrix.py``): one
function per client action (produce, fetch, commit, a transaction, each admin call…), run as a
user against the module's broker with names of the test's own, raising what the client raised;
:class:`Scenario` pairs an action with the ACLs it needs besides the row's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

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
from tests.broker.security.acl_fixtures import (
    CLUSTER,
    TIMEOUT,
    USERS,
    AclBroker,
    binding,
)

TOPIC, GROUP, TXN, BROKER = (
    ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.BROKER,
)  # fmt: skip
TYPES = {SluiceType.TOPIC: TOPIC, SluiceType.GROUP: GROUP, SluiceType.TRANSACTIONAL_ID: TXN,
         SluiceType.CLUSTER: BROKER}  # fmt: skip
Op = AclOperation


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
    (None: the row's resource type's); ``also_denied``, another code the client may show first
    for the same refusal."""

    run: Callable[[AclBroker, str, Names], None]
    needs: tuple[tuple[ResourceType, AclOperation], ...]
    denied: int | None = None
    fresh_topic: bool = False
    also_denied: int | None = None


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


def topic_resource(n: Names) -> ConfigResource:
    return ConfigResource(ConfigResource.Type.TOPIC, n.topic)


def broker_resource() -> ConfigResource:
    return ConfigResource(ConfigResource.Type.BROKER, "0")


def describe_topic_configs(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).describe_configs([topic_resource(n)]).values():
        future.result(TIMEOUT)


def describe_broker_configs(b: AclBroker, user: str, n: Names) -> None:
    for future in b.admin(user).describe_configs([broker_resource()]).values():
        future.result(TIMEOUT)


def _alter(resource: ConfigResource, key: str, value: str) -> ConfigResource:
    resource.set_config(key, value)
    return resource


def alter_topic_configs(b: AclBroker, user: str, n: Names) -> None:
    wanted = _alter(topic_resource(n), "retention.ms", "3600000")
    for future in b.admin(user).alter_configs([wanted]).values():
        future.result(TIMEOUT)


def alter_broker_configs(b: AclBroker, user: str, n: Names) -> None:
    wanted = _alter(broker_resource(), "log.cleaner.threads", "1")
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
