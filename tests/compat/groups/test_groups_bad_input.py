"""Group requests the coordinator must refuse, or accept, exactly as Kafka does (raw kio requests).

- OffsetCommit (v8) and Heartbeat (v4) from a member id the group does not know get
  UNKNOWN_MEMBER_ID (25); from a member of an older generation, ILLEGAL_GENERATION (22); a commit
  without membership (generation -1) to a group that has members, UNKNOWN_MEMBER_ID; a commit
  with a generation to a group that does not exist, ILLEGAL_GENERATION (OffsetCommit < v9).
- The empty group id: JoinGroup, SyncGroup, Heartbeat and LeaveGroup get INVALID_GROUP_ID (24),
  while OffsetCommit and OffsetFetch accept it (Kafka keeps it for backward compatibility:
  ``GroupCoordinator.isValidGroupId`` checks only for null there).
- A group id of 2,000 characters is an ordinary group id (Kafka sets no length limit): a real
  consumer joins, commits and reads its offsets back; DescribeGroups and ListGroups show it.
"""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3 import request as find_coordinator_v3
from kio.schema.heartbeat.v4 import request as heartbeat_v4
from kio.schema.join_group.v7 import request as join_group_v7
from kio.schema.leave_group.v4 import request as leave_group_v4
from kio.schema.offset_commit.v8 import request as offset_commit_v8
from kio.schema.offset_fetch.v7 import request as offset_fetch_v7
from kio.schema.sync_group.v5 import request as sync_group_v5

from tests.broker.conftest import Wire
from tests.compat.groups.conftest import TIMEOUT, produce, wait_until
from tests.conftest import create_topic

SESSION = datetime.timedelta(milliseconds=30_000)
JOIN_WAIT = 30.0  # seconds: a JoinGroup may wait for group.initial.rebalance.delay.ms


# --- the consumer protocol's embedded formats (ConsumerProtocolSubscription/Assignment v0) ---


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topics: Sequence[str]) -> bytes:
    return (
        struct.pack(">hi", 0, len(topics)) + b"".join(map(_string, topics)) + struct.pack(">i", -1)
    )


def assignment(topic: str, partitions: Sequence[int]) -> bytes:
    body = struct.pack(">hi", 0, 1) + _string(topic) + struct.pack(">i", len(partitions))
    return body + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1)


# --- requests ------------------------------------------------------------------------------


def join(wire: Wire, group: str, topic: str, member_id: str = "") -> Any:
    """JoinGroup v7; a MEMBER_ID_REQUIRED answer (KIP-394) is followed by the second join."""
    request = join_group_v7.JoinGroupRequest(
        group_id=group,
        session_timeout=SESSION,
        rebalance_timeout=SESSION,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(
            join_group_v7.JoinGroupRequestProtocol(name="range", metadata=subscription([topic])),
        ),
    )
    response = wire.request(request)
    if response.error_code == ErrorCode.member_id_required and not member_id:
        return join(wire, group, topic, response.member_id)
    return response


def sync(wire: Wire, group: str, generation: int, member_id: str, topic: str = "") -> Any:
    assignments = (
        (
            sync_group_v5.SyncGroupRequestAssignment(
                member_id=member_id, assignment=assignment(topic, [0])
            ),
        )
        if topic
        else ()
    )
    return wire.request(
        sync_group_v5.SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        )
    )


def heartbeat(wire: Wire, group: str, generation: int, member_id: str) -> ErrorCode:
    response = wire.request(
        heartbeat_v4.HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=None
        )
    )
    return ErrorCode(response.error_code)


def leave(wire: Wire, group: str, member_id: str) -> Any:
    return wire.request(
        leave_group_v4.LeaveGroupRequest(
            group_id=group,
            members=(leave_group_v4.MemberIdentity(member_id=member_id, group_instance_id=None),),
        )
    )


def commit(
    wire: Wire, group: str, generation: int, member_id: str, *, topic: str, offset: int
) -> ErrorCode:
    """OffsetCommit v8 of partition 0; returns the partition's error code."""
    response = wire.request(
        offset_commit_v8.OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=(
                offset_commit_v8.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=(
                        offset_commit_v8.OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        ),
                    ),
                ),
            ),
        )
    )
    [t] = response.topics
    [p] = t.partitions
    assert (t.name, p.partition_index) == (topic, 0), f"answered for {t.name}-{p.partition_index}"
    return ErrorCode(p.error_code)


def fetch(wire: Wire, group: str, topic: str) -> int:
    """OffsetFetch v7: the committed offset of partition 0 (-1: none)."""
    response = wire.request(
        offset_fetch_v7.OffsetFetchRequest(
            group_id=group,
            topics=(offset_fetch_v7.OffsetFetchRequestTopic(name=topic, partition_indexes=(0,)),),
            require_stable=False,
        )
    )
    assert response.error_code == ErrorCode.none, f"OffsetFetch error {response.error_code!r}"
    [t] = response.topics
    [p] = t.partitions
    assert p.error_code == ErrorCode.none, f"OffsetFetch partition error {p.error_code!r}"
    return int(p.committed_offset)


def stable_member(wire: Wire, group: str, topic: str) -> tuple[str, int]:
    """Join ``group`` as its only member and sync: ``(member id, generation)``."""
    joined = join(wire, group, topic)
    assert joined.error_code == ErrorCode.none, f"JoinGroup: {joined.error_code!r}"
    assert joined.leader == joined.member_id, "the only member must be the leader"
    synced = sync(wire, group, joined.generation_id, joined.member_id, topic)
    assert synced.error_code == ErrorCode.none, f"SyncGroup: {synced.error_code!r}"
    assert synced.assignment == assignment(topic, [0]), "SyncGroup returned another assignment"
    return joined.member_id, int(joined.generation_id)


def expect(got: ErrorCode, want: ErrorCode, what: str) -> None:
    assert got == want, f"{what}: expected {want.name} ({want.value}), got {got!r}"


# --- tests -----------------------------------------------------------------------------------


def test_commit_and_heartbeat_from_unknown_member(bootstrap: str, group_id: str) -> None:
    topic = create_topic(bootstrap, 1)
    with Wire(bootstrap, timeout=JOIN_WAIT) as wire:
        member, generation = stable_member(wire, group_id, topic)
        expect(
            commit(wire, group_id, generation, "not-a-member", topic=topic, offset=5),
            ErrorCode.unknown_member_id,
            "OffsetCommit from a member id the group does not know",
        )
        expect(
            commit(wire, group_id, -1, "", topic=topic, offset=5),
            ErrorCode.unknown_member_id,
            "OffsetCommit without membership (generation -1) to a group with a member",
        )
        expect(
            heartbeat(wire, group_id, generation, "not-a-member"),
            ErrorCode.unknown_member_id,
            "Heartbeat from a member id the group does not know",
        )
        assert fetch(wire, group_id, topic) == -1, "a refused commit was stored"
        expect(
            commit(wire, group_id, generation, member, topic=topic, offset=7),
            ErrorCode.none,
            "OffsetCommit from the member, current generation",
        )
        assert fetch(wire, group_id, topic) == 7, "the member's commit was not stored"
        expect(heartbeat(wire, group_id, generation, member), ErrorCode.none, "Heartbeat")
        left = leave(wire, group_id, member)
        assert left.error_code == ErrorCode.none, f"LeaveGroup: {left.error_code!r}"
        expect(
            commit(wire, group_id, generation, member, topic=topic, offset=8),
            ErrorCode.unknown_member_id,
            "OffsetCommit from a member that has left",
        )
        assert fetch(wire, group_id, topic) == 7, "a commit after leaving was stored"


def test_commit_and_heartbeat_from_old_generation(bootstrap: str, group_id: str) -> None:
    topic = create_topic(bootstrap, 1)
    with Wire(bootstrap, timeout=JOIN_WAIT) as wire:
        member, first = stable_member(wire, group_id, topic)
        # the leader rejoining starts a new generation (Kafka: updateMemberAndRebalance)
        rejoined = join(wire, group_id, topic, member)
        assert rejoined.error_code == ErrorCode.none, f"rejoin: {rejoined.error_code!r}"
        second = int(rejoined.generation_id)
        assert second > first, f"a rejoin of the leader kept generation {first} (got {second})"
        synced = sync(wire, group_id, second, member, topic)
        assert synced.error_code == ErrorCode.none, f"SyncGroup: {synced.error_code!r}"

        expect(
            commit(wire, group_id, first, member, topic=topic, offset=3),
            ErrorCode.illegal_generation,
            f"OffsetCommit of generation {first} while the group is at {second}",
        )
        expect(
            heartbeat(wire, group_id, first, member),
            ErrorCode.illegal_generation,
            f"Heartbeat of generation {first} while the group is at {second}",
        )
        expect(
            commit(wire, group_id, second + 1, member, topic=topic, offset=3),
            ErrorCode.illegal_generation,
            "OffsetCommit of a generation that does not exist yet",
        )
        assert fetch(wire, group_id, topic) == -1, "a commit of a stale generation was stored"
        expect(
            commit(wire, group_id, second, member, topic=topic, offset=4),
            ErrorCode.none,
            "OffsetCommit",
        )
        assert fetch(wire, group_id, topic) == 4


def test_commit_with_generation_to_unknown_group(bootstrap: str, group_id: str) -> None:
    topic = create_topic(bootstrap, 1)
    with Wire(bootstrap, timeout=JOIN_WAIT) as wire:
        expect(
            commit(wire, group_id, 3, "someone", topic=topic, offset=1),
            ErrorCode.illegal_generation,
            "OffsetCommit v8 with generation 3 to a group that does not exist",
        )
        assert fetch(wire, group_id, topic) == -1
        # without a generation it is a "simple" commit (admin tools, assign-mode consumers)
        expect(
            commit(wire, group_id, -1, "", topic=topic, offset=2),
            ErrorCode.none,
            "simple OffsetCommit",
        )
        assert fetch(wire, group_id, topic) == 2


def test_empty_group_id_refused_by_membership_apis(bootstrap: str) -> None:
    topic = create_topic(bootstrap, 1)
    with Wire(bootstrap, timeout=JOIN_WAIT) as wire:
        got = {
            "JoinGroup": ErrorCode(join(wire, "", topic).error_code),
            "SyncGroup": ErrorCode(sync(wire, "", 1, "m").error_code),
            "Heartbeat": heartbeat(wire, "", 1, "m"),
            "LeaveGroup": ErrorCode(leave(wire, "", "m").error_code),
        }
    want = dict.fromkeys(got, ErrorCode.invalid_group_id)
    assert got == want, f"group id '': expected INVALID_GROUP_ID (24) from each, got {got}"


def test_empty_group_id_accepted_by_offset_apis(bootstrap: str) -> None:
    topic = create_topic(bootstrap, 1)
    with Wire(bootstrap, timeout=JOIN_WAIT) as wire:
        found = wire.request(find_coordinator_v3.FindCoordinatorRequest(key="", key_type=0))
        assert found.error_code == ErrorCode.none, f"FindCoordinator(''): {found.error_code!r}"
        assert f"{found.host}:{found.port}" == bootstrap, f"coordinator {found.host}:{found.port}"
        # Kafka accepts the offset APIs for the empty group id (backward compatibility)
        expect(
            commit(wire, "", -1, "", topic=topic, offset=2),
            ErrorCode.none,
            "OffsetCommit '' (generation -1, no member id)",
        )
        assert fetch(wire, "", topic) == 2, "OffsetFetch '' did not return the offset committed"


def test_group_id_of_2000_characters(bootstrap: str) -> None:
    group = ("g" + uuid.uuid4().hex) * 60
    group = group[:2000]
    topic = create_topic(bootstrap, 2)
    produced = produce(bootstrap, topic, {0: 5, 1: 5})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        while len(got) < len(produced) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, f"consumer error: {msg.error()}"
            got.append((msg.partition(), msg.offset()))
            consumer.commit(message=msg, asynchronous=False)
        assert sorted(got) == sorted(produced), (
            f"a group with a 2,000-character id consumed {len(got)} of {len(produced)} records"
        )
        admin = AdminClient({"bootstrap.servers": bootstrap})
        [described] = admin.describe_consumer_groups([group], request_timeout=TIMEOUT).values()
        description = described.result(timeout=TIMEOUT)
        assert description.group_id == group, "DescribeGroups answered for another group"
        assert len(description.members) == 1, f"members: {description.members}"
        wait_until(
            lambda: (
                group in {g.group_id for g in admin.list_consumer_groups().result(TIMEOUT).valid}
            ),
            TIMEOUT,
            lambda: "ListGroups does not list the group with a 2,000-character id",
        )
    finally:
        consumer.close()
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        offsets = reader.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], TIMEOUT)
    finally:
        reader.close()
    assert [(tp.partition, tp.offset) for tp in offsets] == [(0, 5), (1, 5)], (
        f"committed offsets of the 2,000-character group: {offsets}"
    )
