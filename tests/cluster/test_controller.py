"""The controller against a real ZooKeeper: brokers are metadata-store sessions that register
(no broker processes), the controller runs on its thread as in a broker, and the tests read the
partition states it writes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from sluice.broker.cluster.controller import Controller
from sluice.broker.cluster.model import (
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.cluster.fixtures import registration

StoreFactory = Callable[..., ZooKeeperMetadataStore]


def state_of(
    store: ZooKeeperMetadataStore,
    topic: str,
    partition: int,
    accept: Callable[[PartitionState], bool],
    timeout: float = 15.0,
) -> PartitionState:
    """The partition's state once ``accept`` holds (the controller acts asynchronously)."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        found = store.partition_state(topic, partition)
        seen = None if found is None else found.value
        if seen is not None and accept(seen):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{topic}-{partition}: state {seen} never accepted")


def brokers(store_factory: StoreFactory, ids: list[int]) -> dict[int, ZooKeeperMetadataStore]:
    sessions = {}
    for broker_id in ids:
        store = store_factory()
        store.register_broker(registration(broker_id))
        sessions[broker_id] = store
    return sessions


def controller_on(
    store: ZooKeeperMetadataStore, broker_id: int, unclean: bool = False
) -> Controller:
    controller = Controller(store, broker_id, unclean_default=unclean)
    controller.start()
    return controller


def create(
    store: ZooKeeperMetadataStore, topic: str, partitions: dict[int, tuple[int, ...]]
) -> None:
    store.create_topic(
        topic,
        TopicAssignment({p: ReplicaAssignment(r) for p, r in partitions.items()}, uuid.uuid4()),
        {},
    )


def test_new_partitions_get_the_first_live_replica_as_leader(store_factory: StoreFactory) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    controller = controller_on(sessions[1], 1)
    try:
        create(sessions[2], "t", {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)})
        for index, leader in ((0, 1), (1, 2), (2, 3)):
            state = state_of(sessions[3], "t", index, lambda s: True)
            assert (state.leader, state.leader_epoch) == (leader, 0)
            assert sorted(state.isr) == [1, 2, 3]
            assert state.controller_epoch == controller.fence.epoch  # type: ignore[union-attr]
    finally:
        controller.close()


def test_a_dead_leader_is_replaced_from_the_isr_and_dead_followers_leave_it(
    store_factory: StoreFactory,
) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    controller = controller_on(sessions[1], 1)
    try:
        create(sessions[1], "t", {0: (2, 3, 1), 1: (1, 3, 2)})
        state_of(sessions[1], "t", 0, lambda s: s.leader == 2)
        state_of(sessions[1], "t", 1, lambda s: s.leader == 1)
        sessions[2].close()  # broker 2 goes: its session ends, its registration with it
        after = state_of(sessions[1], "t", 0, lambda s: s.leader != 2)
        assert (after.leader, after.leader_epoch, sorted(after.isr)) == (3, 1, [1, 3])
        follower = state_of(sessions[1], "t", 1, lambda s: 2 not in s.isr)
        assert (follower.leader, follower.leader_epoch, sorted(follower.isr)) == (1, 1, [1, 3])
    finally:
        controller.close()


def test_no_unclean_election_unless_enabled_and_the_last_isr_member_is_waited_for(
    store_factory: StoreFactory,
) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    controller = controller_on(sessions[1], 1)
    try:
        create(sessions[1], "t", {0: (2, 3)})
        state_of(sessions[1], "t", 0, lambda s: s.leader == 2)
        sessions[3].close()
        state_of(sessions[1], "t", 0, lambda s: s.isr == (2,))
        sessions[2].close()
        offline = state_of(sessions[1], "t", 0, lambda s: s.leader == -1)
        assert offline.isr == (2,)  # the last member stays: only it has every record
        sessions[3] = store_factory()
        sessions[3].register_broker(registration(3))  # out of sync: must not lead
        time.sleep(1.0)
        assert sessions[1].partition_state("t", 0).value.leader == -1  # type: ignore[union-attr]
        sessions[2] = store_factory()
        sessions[2].register_broker(registration(2))
        back = state_of(sessions[1], "t", 0, lambda s: s.leader != -1)
        assert back.leader == 2
    finally:
        controller.close()


def test_an_unclean_election_when_the_topic_allows_it(store_factory: StoreFactory) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    controller = controller_on(sessions[1], 1)
    try:
        create(sessions[1], "t", {0: (2, 3)})
        sessions[1].configs.set("topics", "t", {"unclean.leader.election.enable": "true"})
        state_of(sessions[1], "t", 0, lambda s: s.leader == 2)
        sessions[3].close()
        state_of(sessions[1], "t", 0, lambda s: s.isr == (2,))
        sessions[2].close()
        state_of(sessions[1], "t", 0, lambda s: s.leader == -1)
        sessions[3] = store_factory()
        sessions[3].register_broker(registration(3))
        unclean = state_of(sessions[1], "t", 0, lambda s: s.leader == 3)
        assert unclean.isr == (3,) and unclean.leader_recovery_state == 1
    finally:
        controller.close()


def test_controlled_shutdown_moves_leadership_and_leaves_the_isr(
    store_factory: StoreFactory,
) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    controller = controller_on(sessions[1], 1)
    try:
        create(sessions[1], "t", {0: (2, 3, 1), 1: (3, 2, 1)})
        state_of(sessions[1], "t", 0, lambda s: s.leader == 2)
        state_of(sessions[1], "t", 1, lambda s: s.leader == 3)
        sessions[2].admin.request_controlled_shutdown(2)
        moved = state_of(sessions[1], "t", 0, lambda s: s.leader != 2)
        assert moved.leader == 3 and 2 not in moved.isr
        follower = state_of(sessions[1], "t", 1, lambda s: 2 not in s.isr)
        assert follower.leader == 3
    finally:
        controller.close()


def test_the_controller_fails_over_and_deletes_and_elects_preferred(
    store_factory: StoreFactory,
) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    first = controller_on(sessions[1], 1)
    second = controller_on(sessions[2], 2)
    try:
        deadline = time.monotonic() + 10
        while not (first.active or second.active) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.active != second.active
        winner, loser = (first, second) if first.active else (second, first)
        winner.close()
        sessions[winner.broker_id].close()  # the controller's broker goes
        deadline = time.monotonic() + 15
        while not loser.active and time.monotonic() < deadline:
            time.sleep(0.05)
        assert loser.active
        survivor = sessions[loser.broker_id]
        create(survivor, "gone", {0: (loser.broker_id,)})
        state_of(survivor, "gone", 0, lambda s: True)
        survivor.admin.request_topic_deletion("gone")
        deadline = time.monotonic() + 15
        while "gone" in survivor.topics() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "gone" not in survivor.topics()
        # preferred election: partition 0 prefers broker 3, down when the topic is created
        sessions[3].close()
        create(survivor, "p", {0: (3, loser.broker_id)})
        state_of(survivor, "p", 0, lambda s: s.leader == loser.broker_id)
        sessions[3] = store_factory()
        sessions[3].register_broker(registration(3))
        current = survivor.partition_state("p", 0)
        assert current is not None
        with_3 = PartitionState(
            current.value.leader,
            current.value.leader_epoch,
            (*current.value.isr, 3),
            current.value.controller_epoch,
        )
        assert (
            survivor.set_partition_state("p", 0, with_3, current.version, None)
            == current.version + 1
        )
        survivor.admin.request_preferred_election([TopicPartition("p", 0)])
        assert state_of(survivor, "p", 0, lambda s: s.leader == 3).leader == 3
    finally:
        first.close()
        second.close()


def test_auto_rebalance_gives_leaders_back_to_their_preferred_replicas(
    store_factory: StoreFactory,
) -> None:
    sessions = brokers(store_factory, [1, 2])
    controller = Controller(sessions[1], 1, unclean_default=False, rebalance_interval_s=0.5)
    controller.start()
    try:
        create(sessions[1], "t", {0: (2, 1), 1: (2, 1), 2: (1, 2)})
        for index in (0, 1):
            state_of(sessions[1], "t", index, lambda s: s.leader == 2)
        sessions[2].close()
        for index in (0, 1):
            state_of(sessions[1], "t", index, lambda s: s.leader == 1 and s.isr == (1,))
        sessions[2] = store_factory()
        sessions[2].register_broker(registration(2))
        for index in (0, 1):  # broker 2 caught up: its leader puts it back in the ISR
            current = sessions[1].partition_state("t", index)
            assert current is not None
            rejoined = PartitionState(
                1, current.value.leader_epoch, (1, 2), current.value.controller_epoch
            )
            sessions[1].set_partition_state("t", index, rejoined, current.version, None)
        for index in (0, 1):
            assert state_of(sessions[1], "t", index, lambda s: s.leader == 2).isr == (1, 2)
        assert sessions[1].partition_state("t", 2).value.leader == 1  # type: ignore[union-attr]
    finally:
        controller.close()
