"""ZooKeeperMetadataStore against a real ZooKeeper: each operation, its znodes and Kafka's JSON."""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from sluice.broker.cluster.metadata_store import (
    PRODUCER_ID_BLOCK_SIZE,
    AdminRequestPendingError,
    BrokerIdInUseError,
    ControllerMovedError,
    MetadataStore,
    TopicExistsError,
    UnknownTopicError,
)
from sluice.broker.cluster.model import (
    BadVersion,
    ConfigChange,
    Endpoint,
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.cluster.fixtures import Events, registration
from tests.cluster.zookeeper import ZooKeeperServer

StoreFactory = Callable[..., ZooKeeperMetadataStore]


def raw(zookeeper: ZooKeeperServer, connect: str, path: str) -> bytes:
    """A znode's bytes, read by a plain kazoo client (what an operator's zkCli would show)."""
    chroot = connect[connect.index("/") :]
    client = KazooClient(hosts=zookeeper.hosts + chroot)
    client.start(timeout=10)
    try:
        data, _ = client.get(path)
        return bytes(data)
    finally:
        client.stop()
        client.close()


def test_the_store_satisfies_the_protocol(store_factory: StoreFactory) -> None:
    store: MetadataStore = store_factory()  # mypy checks the structural match
    assert store.topics() == frozenset()


def test_connect_creates_the_chroot_and_kafkas_persistent_paths(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    store_factory(zk_connect + "/nested")
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=10)
    try:
        root = zk_connect[zk_connect.index("/") :] + "/nested"
        for path in ("/brokers/ids", "/brokers/topics", "/config/changes", "/config/topics",
                     "/config/brokers", "/admin/delete_topics", "/isr_change_notification",
                     "/latest_producer_id_block"):  # fmt: skip
            assert client.exists(root + path) is not None, path
    finally:
        client.stop()
        client.close()


def test_a_malformed_connect_string_is_refused() -> None:
    with pytest.raises(ValueError, match="is not host:port"):
        ZooKeeperMetadataStore.connect("localhost/sluice")


def test_the_first_cluster_id_wins(store_factory: StoreFactory) -> None:
    a, b = store_factory(), store_factory()
    assert a.get_or_create_cluster_id("first-id-aaaaaaaaaaaaa") == "first-id-aaaaaaaaaaaaa"
    assert b.get_or_create_cluster_id("second-id-bbbbbbbbbbbb") == "first-id-aaaaaaaaaaaaa"


def test_registration_is_kafkas_json_and_the_epoch_is_the_creating_zxid(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    store = store_factory()
    epoch = store.register_broker(registration(1))
    live = store.live_brokers()
    assert list(live) == [1]
    assert live[1].registration == registration(1)
    assert live[1].epoch == epoch > 0
    assert live[1].registration.endpoint("PLAINTEXT") == Endpoint("PLAINTEXT", "127.0.0.1", 9092)
    assert live[1].registration.endpoint("SSL") is None
    doc = json.loads(raw(zookeeper, zk_connect, "/brokers/ids/1"))
    assert doc["version"] == 5 and doc["endpoints"] == ["PLAINTEXT://127.0.0.1:9092"]
    assert doc["rack"] == "r1" and doc["listener_security_protocol_map"] == {
        "PLAINTEXT": "PLAINTEXT"
    }


def test_a_second_broker_with_the_same_id_is_refused(store_factory: StoreFactory) -> None:
    first, second = store_factory(), store_factory()
    first.register_broker(registration(1))
    with pytest.raises(BrokerIdInUseError) as info:
        second.register_broker(registration(1, port=9093))
    message = str(info.value)
    assert "Error while creating ephemeral at /brokers/ids/1, node already exists" in message
    assert "broker.id 1 is registered by another live broker" in message
    # the first registration is untouched
    assert first.live_brokers()[1].registration.endpoints[0].port == 9092
    # registering again on the same session is not a conflict
    assert first.register_broker(registration(1)) == first.live_brokers()[1].epoch


def test_the_broker_watch_sees_brokers_come_and_go(store_factory: StoreFactory) -> None:
    observer, broker = store_factory(), store_factory()
    events = Events()
    watch = observer.watch_live_brokers(events)
    events.next_matching(lambda ids: ids == frozenset())
    broker.register_broker(registration(7))
    events.next_matching(lambda ids: ids == frozenset({7}))
    broker.close()  # a clean close ends the session: the ephemeral goes at once
    events.next_matching(lambda ids: ids == frozenset())
    watch.cancel()


def test_controller_election_bumps_the_epoch_in_one_step(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    a, b = store_factory(), store_factory()
    assert a.controller() is None
    assert a.controller_epoch().value == 0
    fence = a.elect_controller(1)
    assert fence is not None and fence.epoch == 1
    assert b.elect_controller(2) is None  # the office is taken
    assert a.elect_controller(1) == fence  # asking again keeps the term
    holder = b.controller()
    assert holder is not None and holder.value.broker_id == 1
    assert b.controller_epoch().value == 1
    assert raw(zookeeper, zk_connect, "/controller_epoch") == b"1"
    doc = json.loads(raw(zookeeper, zk_connect, "/controller"))
    assert (doc["version"], doc["brokerid"], doc["kraftControllerEpoch"]) == (2, 1, -1)


def test_topic_creation_assignment_and_versioned_writes(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    store = store_factory()
    topic_id = uuid.uuid4()
    assignment = TopicAssignment(
        {0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2, 1))}, topic_id
    )
    store.create_topic("orders", assignment, {"retention.ms": "1000"})
    with pytest.raises(TopicExistsError, match=r"Topic 'orders' already exists\."):
        store.create_topic("orders", assignment, {})
    assert store.topics() == frozenset({"orders"})
    assert store.configs.get("topics", "orders") == {"retention.ms": "1000"}
    read = store.topic_assignment("orders")
    assert read is not None and read.value == assignment and read.version == 0
    assert json.loads(raw(zookeeper, zk_connect, "/brokers/topics/orders"))["version"] == 3

    grown = TopicAssignment({**assignment.partitions, 2: ReplicaAssignment((1, 2))}, topic_id)
    assert store.set_topic_assignment("orders", grown, expected_version=0) == 1
    assert store.set_topic_assignment("orders", grown, expected_version=0) == BadVersion(
        "/brokers/topics/orders", 0
    )
    assert store.topic_assignment("missing") is None


def test_partition_state_writes_are_fenced_by_version_and_controller_epoch(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    store.create_topic("t", TopicAssignment({0: ReplicaAssignment((1, 2))}), {})
    fence = store.elect_controller(1)
    assert fence is not None
    first = PartitionState(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=fence.epoch)
    assert store.create_partition_state("t", 0, first, fence) == 0
    assert store.create_partition_state("t", 0, first, fence) == BadVersion(
        "/brokers/topics/t/partitions/0/state", -1
    )
    # the leader shrinks the ISR at the version it read
    shrunk = PartitionState(1, 0, (1,), fence.epoch)
    assert store.set_partition_state("t", 0, shrunk, expected_version=0, fence=None) == 1
    # a stale writer (it read version 0) is refused and told so
    stale = PartitionState(1, 0, (1, 2), fence.epoch)
    assert store.set_partition_state("t", 0, stale, 0, None) == BadVersion(
        "/brokers/topics/t/partitions/0/state", 0
    )
    assert store.set_partition_state("t", 0, stale, 0, fence) == BadVersion(
        "/brokers/topics/t/partitions/0/state", 0
    )
    # the controller elects a new leader at the current version
    moved = PartitionState(2, 1, (2,), fence.epoch)
    assert store.set_partition_state("t", 0, moved, 1, fence) == 2
    state = store.partition_state("t", 0)
    assert state is not None and state.value == moved and state.version == 2
    assert store.partition_state("t", 1) is None


def test_a_deposed_controller_cannot_write(store_factory: StoreFactory) -> None:
    old, new = store_factory(), store_factory()
    old.create_topic("t", TopicAssignment({0: ReplicaAssignment((1,))}), {})
    old_fence = old.elect_controller(1)
    assert old_fence is not None
    assert old.create_partition_state("t", 0, PartitionState(1, 0, (1,), 1), old_fence) == 0
    old.close()  # its session ends: the office is free
    new_fence = new.elect_controller(2)
    assert new_fence is not None and new_fence.epoch == 2
    # a write fenced by the old epoch is refused, whatever version it names
    with pytest.raises(ControllerMovedError, match="controller elected at epoch 1 was deposed"):
        new.set_partition_state("t", 0, PartitionState(1, 1, (1,), 1), 0, old_fence)
    assert new.set_partition_state("t", 0, PartitionState(1, 1, (1,), 2), 0, new_fence) == 1


def test_partition_state_and_topic_watches(store_factory: StoreFactory) -> None:
    store = store_factory()
    fence = store.elect_controller(1)
    assert fence is not None
    topics, states = Events(), Events()
    store.watch_topics(topics)
    topics.next_matching(lambda names: names == frozenset())
    store.create_topic("w", TopicAssignment({0: ReplicaAssignment((1,))}), {})
    topics.next_matching(lambda names: names == frozenset({"w"}))
    watch = store.watch_partition_state("w", 0, states)
    states.next_matching(lambda v: v is None)
    store.create_partition_state("w", 0, PartitionState(1, 0, (1,), 1), fence)
    seen = states.next_matching(lambda v: v is not None)
    assert getattr(seen, "version", None) == 0
    watch.cancel()
    assert store.set_partition_state("w", 0, PartitionState(1, 1, (1,), 1), 0, fence) == 1
    # kazoo may repeat a value it delivered before; nothing of the new version comes
    with pytest.raises(AssertionError, match="no matching event"):
        states.next_matching(lambda v: getattr(v, "version", -1) >= 1, timeout=1.0)


def test_topic_and_broker_configs_publish_change_notifications(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    writer, reader = store_factory(), store_factory()
    changes = Events()
    reader.configs.watch_changes(changes)
    changes.next_matching(lambda v: v == [])
    writer.configs.set("topics", "t", {"retention.ms": "5"})
    writer.configs.set("brokers", "<default>", {"log.retention.ms": "7"})
    writer.configs.set("brokers", "1", {})
    latest = changes.next_matching(lambda v: isinstance(v, list) and len(v) == 3)
    assert [c.entity_path for c in latest] == ["topics/t", "brokers/<default>", "brokers/1"]
    assert reader.configs.changes(after=latest[0].sequence) == latest[1:]
    assert reader.configs.get("brokers", "<default>") == {"log.retention.ms": "7"}
    assert reader.configs.get("topics", "nope") == {}
    assert json.loads(raw(zookeeper, zk_connect, "/config/topics/t")) == {
        "version": 1,
        "config": {"retention.ms": "5"},
    }
    assert raw(zookeeper, zk_connect, "/config/changes/config_change_0000000000") == (
        b'{"version":2,"entity_path":"topics/t"}'
    )
    assert isinstance(latest[0], ConfigChange)
    with pytest.raises(ValueError, match="config entity type 'groups'"):
        writer.configs.get("groups", "g")


def test_producer_id_blocks_are_claimed_in_order(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    store = store_factory()
    first, second = store.allocate_producer_id_block(1), store.allocate_producer_id_block(2)
    assert (first.first, first.last) == (0, PRODUCER_ID_BLOCK_SIZE - 1)
    assert (second.first, second.broker_id) == (PRODUCER_ID_BLOCK_SIZE, 2)
    assert raw(zookeeper, zk_connect, "/latest_producer_id_block") == (
        b'{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
    )


def test_producer_id_blocks_are_unique_under_concurrent_allocators(
    store_factory: StoreFactory,
) -> None:
    stores = [store_factory(), store_factory()]
    claimed: list[list[tuple[int, int]]] = [[], []]
    errors: list[BaseException] = []

    def allocate(index: int) -> None:
        try:
            for _ in range(40):
                block = stores[index].allocate_producer_id_block(index)
                claimed[index].append((block.first, block.last))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=allocate, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    blocks = sorted(claimed[0] + claimed[1])
    assert len(blocks) == 80
    # contiguous, never overlapping: each block starts right after the previous one
    assert blocks[0][0] == 0
    for (_, last), (first, _) in itertools.pairwise(blocks):
        assert first == last + 1


def test_topic_deletion_is_requested_then_completed_by_the_controller(
    store_factory: StoreFactory,
) -> None:
    client, controller = store_factory(), store_factory()
    fence = controller.elect_controller(1)
    assert fence is not None
    client.create_topic("gone", TopicAssignment({0: ReplicaAssignment((1,))}), {"a": "b"})
    controller.create_partition_state("gone", 0, PartitionState(1, 0, (1,), 1), fence)
    with pytest.raises(UnknownTopicError, match=r"Topic 'nope' does not exist\."):
        client.admin.request_topic_deletion("nope")
    pending = Events()
    controller.admin.watch_topic_deletions(pending)
    client.admin.request_topic_deletion("gone")
    client.admin.request_topic_deletion("gone")  # asking twice is one request
    pending.next_matching(lambda v: v == frozenset({"gone"}))
    with pytest.raises(TopicExistsError, match="marked for deletion"):
        client.create_topic("gone", TopicAssignment({0: ReplicaAssignment((1,))}), {})
    controller.admin.complete_topic_deletion("gone", fence)
    pending.next_matching(lambda v: v == frozenset())
    assert client.topics() == frozenset()
    assert client.topic_assignment("gone") is None
    assert client.partition_state("gone", 0) is None
    assert client.configs.get("topics", "gone") == {}
    # the name is free again
    client.create_topic("gone", TopicAssignment({0: ReplicaAssignment((1,))}), {})


def test_a_preferred_election_is_one_request_at_a_time(store_factory: StoreFactory) -> None:
    client, controller = store_factory(), store_factory()
    fence = controller.elect_controller(1)
    assert fence is not None
    requests = Events()
    controller.admin.watch_preferred_election(requests)
    requests.next_matching(lambda v: v is None)
    wanted = {TopicPartition("t", 0), TopicPartition("t", 1)}
    client.admin.request_preferred_election(wanted)
    requests.next_matching(lambda v: v == frozenset(wanted))
    with pytest.raises(AdminRequestPendingError, match="currently in progress for t-0, t-1"):
        client.admin.request_preferred_election({TopicPartition("u", 0)})
    assert client.admin.pending_preferred_election() == frozenset(wanted)
    controller.admin.complete_preferred_election(fence)
    requests.next_matching(lambda v: v is None)
    client.admin.request_preferred_election({TopicPartition("u", 0)})


def test_isr_change_notifications_are_sequential(
    zookeeper: ZooKeeperServer, zk_connect: str, store_factory: StoreFactory
) -> None:
    store = store_factory()
    store.notify_isr_change([TopicPartition("t", 0)])
    store.notify_isr_change([TopicPartition("t", 1)])
    assert raw(zookeeper, zk_connect, "/isr_change_notification/isr_change_0000000001") == (
        b'{"version":1,"partitions":[{"topic":"t","partition":1}]}'
    )
