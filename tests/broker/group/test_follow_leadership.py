"""The group coordinator in a cluster (driven directly, no network): a shard exists only while
its partition is led here; the others' groups are NOT_COORDINATOR, a shard loads in the
background (its groups COORDINATOR_LOAD_IN_PROGRESS meanwhile), and unloading stops a shard's
timers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.coordinator_loads import BATCHES_PER_SLICE
from sluice.broker.group.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sluice.broker.internal_topic import WrittenRecord, partition_for, write_error
from sluice.broker.topics import TopicManager

PARTITIONS = 3


def clustered(tmp_path: Path) -> tuple[GroupCoordinator, TopicManager]:
    config = BrokerConfig.from_properties(
        {
            "offsets.topic.num.partitions": str(PARTITIONS),
            "group.min.session.timeout.ms": "10",
            "group.initial.rebalance.delay.ms": "0",
        }
    )
    topics = TopicManager(tmp_path, config)
    topics.load()
    topics.create(OFFSETS_TOPIC, PARTITIONS, {"cleanup.policy": "compact"})
    topics.create("t", 1, {})
    coordinator = GroupCoordinator(topics, config, clock=lambda: 1_000)
    coordinator.follow_leadership(lambda topic, index: topic == "t" and index == 0, lambda: 3)
    return coordinator, topics


def test_only_the_groups_of_loaded_partitions_are_coordinated_here(tmp_path: Path) -> None:
    coordinator, topics = clustered(tmp_path)
    group = "g"
    index = partition_for(group, PARTITIONS)
    assert coordinator.coordinator_error(group) is ErrorCode.not_coordinator
    coordinator.load_partition(index)
    assert coordinator.coordinator_error(group) is ErrorCode.none
    codes = coordinator.offsets(group).commit(
        group_id=group,
        member_id="",
        instance_id=None,
        generation=-1,
        offsets=[("t", 0, 42, -1, None), ("t", 7, 1, -1, None)],
    )
    # "t"-7 is unknown to the cluster (the directory given), "t"-0 is known
    assert codes == [ErrorCode.none, ErrorCode.unknown_topic_or_partition], codes
    assert asyncio.run(coordinator.replicated(group)) is ErrorCode.not_coordinator, (
        "a partition without a Leadership in a cluster is not led: the write is not answered"
    )
    coordinator.unload_partition(index)
    assert coordinator.coordinator_error(group) is ErrorCode.not_coordinator
    assert coordinator.list() == []
    coordinator.load_partition(index)  # leadership comes back: the commit is replayed
    committed = coordinator.offsets(group).fetch(group, [("t", [0])])
    assert [(t, p, c.offset if c else None) for t, p, c in committed] == [("t", 0, 42)]
    # AddOffsetsToTxn's partition comes from the cluster's partition count
    assert coordinator.partition_for(group) == index
    topics.close()


def test_unloading_a_shard_stops_its_members_timers(tmp_path: Path) -> None:
    coordinator, topics = clustered(tmp_path)
    index = partition_for("g", PARTITIONS)

    async def body() -> None:
        coordinator.start()
        coordinator.load_partition(index)
        result = await coordinator.membership("g").join(
            group_id="g",
            member_id="",
            instance_id=None,
            session_timeout=50,
            rebalance_timeout=50,
            protocol_type="consumer",
            protocols=[("range", b"")],
            client_id="c",
            client_host="h",
            require_known_member=False,
        )
        assert result.error is ErrorCode.none, result
        group = coordinator.describe("g")
        assert group is not None and group.members
        coordinator.unload_partition(index)
        await asyncio.sleep(0.2)  # past the session timeout: an expiry would remove the member
        assert group.members, "the unloaded shard's session timer still ran"

    asyncio.run(asyncio.wait_for(body(), 10))
    topics.close()


def test_write_failures_are_answered_as_kafka_s_coordinators_answer() -> None:
    e = ErrorCode
    codes = (
        e.none,
        e.not_enough_replicas,
        e.not_enough_replicas_after_append,
        e.not_leader_or_follower,
        e.kafka_storage_error,
        e.request_timed_out,
        e.message_too_large,
    )
    kinds: tuple[WrittenRecord, ...] = ("offsets", "group", "transaction")
    answered = {written: [write_error(c, written=written) for c in codes] for written in kinds}
    moved, away = e.not_coordinator, e.coordinator_not_available
    assert answered == {
        # GroupMetadataManager.storeOffsets
        "offsets": [
            e.none,
            away,
            away,
            moved,
            moved,
            e.request_timed_out,
            e.invalid_commit_offset_size,
        ],
        # GroupMetadataManager.storeGroup: a timed-out SyncGroup asks the members to join again
        "group": [
            e.none,
            away,
            away,
            moved,
            moved,
            e.rebalance_in_progress,
            e.unknown_server_error,
        ],
        # TransactionStateManager.appendTransactionToLog
        "transaction": [e.none, away, away, moved, moved, away, e.unknown_server_error],
    }


def test_a_shard_loads_in_the_background_and_its_groups_wait_meanwhile(tmp_path: Path) -> None:
    """A partition led here is replayed in a task that hands the loop back every
    ``BATCHES_PER_SLICE`` batches: its groups are COORDINATOR_LOAD_IN_PROGRESS until the shard
    is installed, then coordinated with every commit replayed. Leadership lost mid-load
    cancels it: no shard is installed."""
    coordinator, topics = clustered(tmp_path)
    group = "g"
    index = partition_for(group, PARTITIONS)
    coordinator.load_partition(index)
    commits = BATCHES_PER_SLICE * 3  # one batch each
    for offset in range(commits):
        coordinator.offsets(group).commit(
            group_id=group,
            member_id="",
            instance_id=None,
            generation=-1,
            offsets=[("t", 0, offset, -1, None)],
        )
    coordinator.unload_partition(index)

    async def load() -> list[ErrorCode]:
        coordinator.begin_loading(index)
        seen = [coordinator.coordinator_error(group)]
        for _ in range(10 * commits):  # bounded: a load of this size needs ~commits/64 turns
            if not coordinator.loading():
                break
            await asyncio.sleep(0)
            seen.append(coordinator.coordinator_error(group))
        return seen

    seen = asyncio.run(load())
    assert seen[0] is ErrorCode.coordinator_load_in_progress
    assert seen[-1] is ErrorCode.none and not coordinator.loading()
    waited = seen.count(ErrorCode.coordinator_load_in_progress)
    assert waited >= commits // BATCHES_PER_SLICE, (
        f"the loop was handed back {waited - 1} times during a load of {commits} batches"
    )
    committed = coordinator.offsets(group).fetch(group, [("t", [0])])
    assert [(t, p, c.offset if c else None) for t, p, c in committed] == [("t", 0, commits - 1)]

    async def lose_it_mid_load() -> None:
        coordinator.begin_loading(index)
        await asyncio.sleep(0)  # the load has started, and is not done
        assert coordinator.coordinator_error(group) is ErrorCode.coordinator_load_in_progress
        coordinator.unload_partition(index)
        assert not coordinator.loading()
        for _ in range(commits):
            await asyncio.sleep(0)

    asyncio.run(lose_it_mid_load())
    assert coordinator.coordinator_error(group) is ErrorCode.not_coordinator, (
        "a load cancelled by a lost leadership installed its shard"
    )
    topics.close()
