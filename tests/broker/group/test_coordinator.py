"""The group coordinator's state machine, driven directly on an event loop (no network)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.group.coordinator import GroupCoordinator
from sluice.broker.group.group import GroupState
from sluice.broker.group.metadata_manager import JoinResult
from sluice.broker.internal_topic import partition_for
from sluice.broker.topics import TopicManager

SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t"


def make_coordinator(
    tmp_path: Path, clock: Callable[[], int] = lambda: 1_700_000_000_000, **overrides: str
) -> GroupCoordinator:
    config = BrokerConfig.from_properties(
        {
            "group.initial.rebalance.delay.ms": "100",
            "offsets.topic.num.partitions": "3",
            "group.min.session.timeout.ms": "10",
            **overrides,
        }
    )
    topics = TopicManager(tmp_path, config)
    topics.load()
    topics.create("t", 2, {})
    coordinator = GroupCoordinator(topics, config, clock=clock)
    coordinator.load()
    return coordinator


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(body(), 10))


async def join(
    c: GroupCoordinator,
    member_id: str = "",
    *,
    instance: str | None = None,
    session: int = 5000,
    protocols: list[tuple[str, bytes]] | None = None,
) -> JoinResult:
    return await c.membership("g").join(
        group_id="g",
        member_id=member_id,
        instance_id=instance,
        session_timeout=session,
        rebalance_timeout=5000,
        protocol_type="consumer",
        protocols=protocols or [("range", SUBSCRIPTION)],
        client_id="c",
        client_host="/127.0.0.1",
        require_known_member=True,
    )


async def join_known(c: GroupCoordinator, **kw: Any) -> JoinResult:
    first = await join(c, **kw)
    assert first.error is ErrorCode.member_id_required, first
    return await join(c, first.member_id, **kw)


def test_two_members_join_sync_and_commit(tmp_path: Path) -> None:
    c = make_coordinator(tmp_path)

    async def body() -> None:
        a, b = await asyncio.gather(join_known(c), join_known(c))
        assert a.error is b.error is ErrorCode.none
        assert a.generation == b.generation == 1
        leader, follower = (a, b) if a.member_id == a.leader else (b, a)
        assert {m[0] for m in leader.members} == {a.member_id, b.member_id}
        assert follower.members == ()
        assignments = {leader.member_id: b"L", follower.member_id: b"F"}
        synced = await asyncio.gather(
            c.membership("g").sync(
                group_id="g",
                member_id=follower.member_id,
                instance_id=None,
                generation=1,
                protocol_type="consumer",
                protocol="range",
                assignments={},
            ),
            c.membership("g").sync(
                group_id="g",
                member_id=leader.member_id,
                instance_id=None,
                generation=1,
                protocol_type="consumer",
                protocol="range",
                assignments=assignments,
            ),
        )
        assert [s.assignment for s in synced] == [b"F", b"L"]
        assert c.groups["g"].state is GroupState.STABLE
        ok = c.offsets("g").commit(
            group_id="g",
            member_id=a.member_id,
            instance_id=None,
            generation=1,
            offsets=[("t", 0, 42, -1, "meta")],
        )
        assert ok == [ErrorCode.none]
        stale = c.offsets("g").commit(
            group_id="g",
            member_id=a.member_id,
            instance_id=None,
            generation=0,
            offsets=[("t", 0, 43, -1, None)],
        )
        assert stale == [ErrorCode.illegal_generation]
        unknown = c.offsets("g").commit(
            group_id="g",
            member_id="nobody",
            instance_id=None,
            generation=1,
            offsets=[("t", 0, 44, -1, None)],
        )
        assert unknown == [ErrorCode.unknown_member_id]
        missing = c.offsets("g").commit(
            group_id="g",
            member_id=a.member_id,
            instance_id=None,
            generation=1,
            offsets=[("nope", 0, 1, -1, None)],
        )
        assert missing == [ErrorCode.unknown_topic_or_partition]
        assert c.offsets("g").fetch("g", [("t", [0, 1])])[0][2].offset == 42  # type: ignore[union-attr]
        assert c.offsets("g").fetch("g", [("t", [0, 1])])[1][2] is None
        c.close()

    run(body)


def test_a_transactional_commit_must_come_from_a_current_member(tmp_path: Path) -> None:
    """Kafka's validateOffsetCommit for TxnOffsetCommit: a member id or a generation must be
    the group's current ones — also once the member is gone and the group is empty (an expired
    member of an exactly-once app must not commit) — while a producer that names neither
    (``send_offsets_to_transaction`` with a bare group id) may commit."""
    c = make_coordinator(tmp_path)

    def txn_commit(member_id: str, generation: int, offset: int) -> list[ErrorCode]:
        return c.offsets("g").txn_commit(
            group_id="g",
            producer_id=7,
            producer_epoch=0,
            member_id=member_id,
            instance_id=None,
            generation=generation,
            offsets=[("t", 0, offset, -1, None)],
        )

    async def body() -> None:
        a = await join_known(c)
        await c.membership("g").sync(
            group_id="g",
            member_id=a.member_id,
            instance_id=None,
            generation=1,
            protocol_type="consumer",
            protocol="range",
            assignments={a.member_id: b""},
        )
        assert txn_commit(a.member_id, 1, 10) == [ErrorCode.none]
        assert txn_commit(a.member_id, 0, 11) == [ErrorCode.illegal_generation]
        assert txn_commit("nobody", 1, 12) == [ErrorCode.unknown_member_id]
        assert c.membership("g").leave("g", [(a.member_id, None)])[0] is ErrorCode.none
        assert c.groups["g"].state is GroupState.EMPTY
        assert txn_commit(a.member_id, 1, 13) == [ErrorCode.unknown_member_id]
        assert txn_commit("", -1, 14) == [ErrorCode.none]
        c.close()

    run(body)


def test_a_member_that_stops_heartbeating_is_removed_and_the_group_rebalances(
    tmp_path: Path,
) -> None:
    c = make_coordinator(tmp_path)

    async def body() -> None:
        a, b = await asyncio.gather(join_known(c, session=1000), join_known(c, session=1000))
        await asyncio.gather(
            *(
                c.membership("g").sync(
                    group_id="g",
                    member_id=r.member_id,
                    instance_id=None,
                    generation=1,
                    protocol_type=None,
                    protocol=None,
                    assignments={a.member_id: b"", b.member_id: b""},
                )
                for r in (a, b)
            )
        )
        # Only `a` heartbeats; `b` expires after its 1 s session (bounded: 5 s).
        for _ in range(50):
            await asyncio.sleep(0.1)
            code = c.membership("g").heartbeat(
                group_id="g", member_id=a.member_id, instance_id=None, generation=1
            )
            if code is ErrorCode.rebalance_in_progress:
                break
        assert code is ErrorCode.rebalance_in_progress
        again = await join(c, a.member_id)
        assert again.error is ErrorCode.none and again.generation == 2
        assert [m[0] for m in again.members] == [a.member_id]
        old = c.membership("g").heartbeat(
            group_id="g", member_id=b.member_id, instance_id=None, generation=1
        )
        assert old is ErrorCode.unknown_member_id
        c.close()

    run(body)


def test_a_static_member_rejoining_gets_its_place_back_without_rebalance(
    tmp_path: Path,
) -> None:
    c = make_coordinator(tmp_path)

    async def body() -> None:
        a, b = await asyncio.gather(join(c, instance="i-a"), join(c, instance="i-b"))
        leader = a if a.member_id == a.leader else b
        follower = b if leader is a else a
        follower_instance = "i-b" if follower is b else "i-a"
        await asyncio.gather(
            *(
                c.membership("g").sync(
                    group_id="g",
                    member_id=r.member_id,
                    instance_id=None,
                    generation=1,
                    protocol_type=None,
                    protocol=None,
                    assignments={leader.member_id: b"L", follower.member_id: b"F"},
                )
                for r in (a, b)
            )
        )
        back = await join(c, instance=follower_instance)  # restarted: no member id
        assert back.error is ErrorCode.none and back.generation == 1, back
        assert back.member_id != follower.member_id
        synced = await c.membership("g").sync(
            group_id="g",
            member_id=back.member_id,
            instance_id=None,
            generation=1,
            protocol_type=None,
            protocol=None,
            assignments={},
        )
        assert synced.assignment == b"F"
        assert c.groups["g"].state is GroupState.STABLE
        fenced = c.membership("g").heartbeat(
            group_id="g", member_id=follower.member_id, instance_id=follower_instance, generation=1
        )
        assert fenced is ErrorCode.fenced_instance_id
        c.close()

    run(body)


def test_bad_group_ids_and_session_timeouts(tmp_path: Path) -> None:
    c = make_coordinator(tmp_path, **{"group.min.session.timeout.ms": "6000"})

    async def body() -> None:
        assert (
            await c.membership("").join(
                group_id="",
                member_id="",
                instance_id=None,
                session_timeout=6000,
                rebalance_timeout=6000,
                protocol_type="consumer",
                protocols=[("range", b"")],
                client_id="c",
                client_host="h",
                require_known_member=True,
            )
        ).error is ErrorCode.invalid_group_id
        assert (await join(c, session=10)).error is ErrorCode.invalid_session_timeout
        long_id = "g" * 2000
        ok = c.offsets(long_id).commit(
            group_id=long_id,
            member_id="",
            instance_id=None,
            generation=-1,
            offsets=[("t", 1, 7, -1, None)],
        )
        assert ok == [ErrorCode.none]
        c.close()

    run(body)


def test_offsets_and_groups_survive_a_reload_and_deletes_are_durable(tmp_path: Path) -> None:
    c = make_coordinator(tmp_path)
    for group in ("kept", "deleted"):
        assert c.offsets(group).commit(
            group_id=group,
            member_id="",
            instance_id=None,
            generation=-1,
            offsets=[("t", 0, 5, 3, "m"), ("t", 1, 9, -1, None)],
        ) == [ErrorCode.none, ErrorCode.none]
    assert c.delete("deleted") is ErrorCode.none
    c.topics.close()
    config = BrokerConfig.from_properties({"offsets.topic.num.partitions": "3"})
    topics = TopicManager(tmp_path, config)
    topics.load()
    again = GroupCoordinator(topics, config, clock=lambda: 0)
    again.load()
    assert set(again.groups) == {"kept"}
    fetched = {(t, p): o for t, p, o in again.offsets("kept").fetch("kept", None)}
    assert fetched[("t", 0)] is not None and fetched[("t", 0)].offset == 5
    assert fetched[("t", 0)].leader_epoch == 3 and fetched[("t", 0)].metadata == "m"
    assert fetched[("t", 1)] is not None and fetched[("t", 1)].offset == 9
    topics.close()


@pytest.mark.parametrize("retention_minutes", ["1"])
def test_offsets_of_empty_groups_expire(tmp_path: Path, retention_minutes: str) -> None:
    now = [1_000_000]
    c = make_coordinator(tmp_path, clock=lambda: now[0])
    c.offsets("old").commit(
        group_id="old",
        member_id="",
        instance_id=None,
        generation=-1,
        offsets=[("t", 0, 1, -1, None)],
    )
    now[0] += 59_000
    assert c.expire_offsets(60_000) == 0
    now[0] += 2_000
    assert c.expire_offsets(60_000) == 1
    assert "old" not in c.groups


def test_a_shard_holds_its_partitions_groups_and_is_loaded_and_unloaded_as_a_unit(
    tmp_path: Path,
) -> None:
    """Each group lives in the shard of its ``__consumer_offsets`` partition: unloading that
    partition drops its groups (and only them), loading it replays them back."""
    c = make_coordinator(tmp_path)
    # "a" and "c" hash to different partitions of 3 (Java's String.hashCode: 97 and 99).
    assert partition_for("a", 3) != partition_for("c", 3)
    for group in ("a", "c"):
        c.offsets(group).commit(
            group_id=group,
            member_id="",
            instance_id=None,
            generation=-1,
            offsets=[("t", 0, 7, -1, None)],
        )
    index = partition_for("a", 3)
    assert c.partition_for("a") == index
    c.unload_partition(index)
    assert c.describe("a") is None, "the unloaded shard's group is still there"
    assert [o for _, _, o in c.offsets("a").fetch("a", None)] == []
    assert c.describe("c") is not None, "another shard's group went with it"
    shard = c.load_partition(index)
    assert shard.partition == index and set(shard.groups.groups) == {"a"}
    fetched = c.offsets("a").fetch("a", None)
    assert [(t, p, o.offset if o else None) for t, p, o in fetched] == [("t", 0, 7)]
    c.topics.close()


def test_a_shard_loaded_while_running_restores_its_stable_group_with_live_timers(
    tmp_path: Path,
) -> None:
    """Unloading a shard stops its members' session timers; loading it again (the coordinator
    running) brings back the last stable generation with the timers started."""
    c = make_coordinator(tmp_path)

    async def body() -> None:
        c.start()
        joined = await join_known(c)
        assert joined.error is ErrorCode.none, joined
        synced = await c.membership("g").sync(
            group_id="g",
            member_id=joined.member_id,
            instance_id=None,
            generation=joined.generation,
            protocol_type="consumer",
            protocol="range",
            assignments={joined.member_id: b"A"},
        )
        assert synced.assignment == b"A"
        before = c.describe("g")
        assert before is not None and before.members[joined.member_id].expiry is not None
        index = c.partition_for("g")
        c.unload_partition(index)
        assert before.members[joined.member_id].expiry is None, "a timer outlived its shard"
        c.load_partition(index)
        after = c.describe("g")
        assert after is not None and after is not before
        assert after.state is GroupState.STABLE and after.generation == joined.generation
        member = after.members[joined.member_id]
        assert member.assignment == b"A" and member.expiry is not None
        code = c.membership("g").heartbeat(
            group_id="g", member_id=joined.member_id, instance_id=None, generation=1
        )
        assert code is ErrorCode.none
        c.close()

    run(body)
    c.topics.close()
