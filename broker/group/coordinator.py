"""The group coordinator: Kafka's classic group protocol and committed offsets.

Every group of this broker is coordinated here (one node). The transitions follow Kafka's
``GroupCoordinator``:

- **JoinGroup** of an unknown member: v4+ gets MEMBER_ID_REQUIRED with a new id to join with
  (KIP-394); a static member (``group.instance.id``) rejoining a stable group with unchanged
  protocols gets its old place back without a rebalance (KIP-345). A new member, a member whose
  protocols changed, or the leader rejoining starts a rebalance (PreparingRebalance). The
  rebalance completes when every member has rejoined or the largest rebalance timeout passed
  (members that did not rejoin are removed); a group that was Empty first waits
  ``group.initial.rebalance.delay.ms`` (extended as members arrive, up to the rebalance timeout).
  Then the generation is bumped, a protocol chosen, and the leader receives the member list.
- **SyncGroup** from the leader carries every member's assignment: the group becomes Stable,
  its metadata is written to ``__consumer_offsets`` and every waiting member gets its part.
- **Heartbeat** keeps a member alive for ``session.timeout.ms``; an expired member is removed and
  the group rebalances. Stale generations get ILLEGAL_GENERATION, unknown members
  UNKNOWN_MEMBER_ID, and members of a rebalancing group REBALANCE_IN_PROGRESS so they rejoin.
- **OffsetCommit** from the current generation (or from anyone when the group has no members,
  generation -1) is appended to ``__consumer_offsets`` before it is acknowledged;
  ``offsets.retention.minutes`` after a group became empty its offsets expire.

The :class:`GroupCoordinator` itself holds SyncGroup, Heartbeat, LeaveGroup and the admin
calls; the rest is mixed in by concept: JoinGroup (:mod:`.join`), the rebalance and member expiry
(:mod:`.rebalance`), committed offsets (:mod:`.offsets`), and the records that let groups survive
a restart (:mod:`.persistence`).

Time: timers run on the event loop's monotonic clock; commit and state timestamps come from the
injected wall clock. Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.group import records as rec
from sluice.broker.group.group import Group, GroupState, Member
from sluice.broker.group.join import GroupJoin
from sluice.broker.group.offsets import GroupOffsets
from sluice.broker.group.persistence import GroupPersistence
from sluice.broker.group.rebalance import GroupRebalance, SyncResult
from sluice.broker.internal_topic import InternalTopic
from sluice.broker.topics import TopicManager
from sluice.config import BrokerConfig
from sluice.errors import StorageError

S = GroupState
OFFSETS_TOPIC = "__consumer_offsets"


class GroupCoordinator(GroupJoin, GroupRebalance, GroupOffsets, GroupPersistence):
    """All groups of the broker; the handlers of the group APIs call into it."""

    def __init__(
        self, topics: TopicManager, config: BrokerConfig, clock: Callable[[], int]
    ) -> None:
        self.config = config
        self.clock = clock
        self.store = InternalTopic(
            topics,
            OFFSETS_TOPIC,
            int(config["offsets.topic.num.partitions"]),
            int(config["offsets.topic.segment.bytes"]),
            clock,
        )
        self.topics = topics
        self.groups: dict[str, Group] = {}
        self.min_session = int(config["group.min.session.timeout.ms"])
        self.max_session = int(config["group.max.session.timeout.ms"])
        self.initial_delay = int(config["group.initial.rebalance.delay.ms"])
        self.max_metadata = int(config["offset.metadata.max.bytes"])
        self.max_size = int(config["group.max.size"])

    # -- loading --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the session timers of the members restored by :meth:`load` (in the loop):
        members that come back keep heartbeating in their generation; the others expire."""
        for group in self.groups.values():
            for member in group.members.values():
                self._schedule_expiry(group, member)

    # -- SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------

    def _member(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> tuple[Group, Member]:
        if not group_id:
            raise KafkaError(ErrorCode.invalid_group_id, "empty group id")
        group = self.groups.get(group_id)
        if group is None or group.state is S.DEAD:
            raise KafkaError(
                ErrorCode.unknown_member_id
                if group is None
                else ErrorCode.coordinator_not_available,
                "unknown group",
            )
        if (
            instance_id is not None
            and instance_id in group.static_members
            and (group.static_members[instance_id] != member_id)
        ):
            raise KafkaError(ErrorCode.fenced_instance_id, "fenced static member")
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.unknown_member_id, f"unknown member {member_id}")
        if generation != group.generation:
            raise KafkaError(
                ErrorCode.illegal_generation,
                f"generation {generation}, group is at {group.generation}",
            )
        return group, member

    async def sync(
        self,
        *,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        try:
            group, member = self._member(group_id, member_id, instance_id, generation)
        except KafkaError as exc:
            return SyncResult(exc.code)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol is not None and protocol != group.protocol
        ):
            return SyncResult(ErrorCode.inconsistent_group_protocol)
        if group.state is S.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.rebalance_in_progress)
        self._schedule_expiry(group, member)
        if group.state is S.STABLE:
            return SyncResult(
                ErrorCode.none, group.protocol_type, group.protocol, member.assignment
            )
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[SyncResult] = loop.create_future()
        member.sync_waiter = waiter
        if member_id == group.leader:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            try:
                self._persist_group(group)
            except StorageError:
                self._prepare_rebalance(group, "could not store the assignment")
                return SyncResult(ErrorCode.coordinator_not_available)
            self._transition(group, S.STABLE)
            for m in group.members.values():
                if m.sync_waiter is not None and not m.sync_waiter.done():
                    m.sync_waiter.set_result(
                        SyncResult(
                            ErrorCode.none, group.protocol_type, group.protocol, m.assignment
                        )
                    )
                m.sync_waiter = None
        return await waiter

    def heartbeat(
        self, *, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        if (
            group is not None
            and group.state is S.PREPARING_REBALANCE
            and (member_id in group.members)
        ):
            self._schedule_expiry(group, group.members[member_id])
            return ErrorCode.rebalance_in_progress
        try:
            group, member = self._member(group_id, member_id, instance_id, generation)
        except KafkaError as exc:
            return exc.code
        self._schedule_expiry(group, member)
        return ErrorCode.none

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        if not group_id:
            return ErrorCode.invalid_group_id, [ErrorCode.invalid_group_id] * len(members)
        group = self.groups.get(group_id)
        if group is None or group.state is S.DEAD:
            return ErrorCode.unknown_member_id, [ErrorCode.unknown_member_id] * len(members)
        codes = []
        for given_id, instance_id in members:
            member_id = given_id
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    codes.append(ErrorCode.unknown_member_id)
                    continue
                if given_id and given_id != known:
                    codes.append(ErrorCode.fenced_instance_id)
                    continue
                member_id = known
            if member_id in group.pending_members:
                group.pending_members.pop(member_id).cancel()
                self._maybe_complete_join(group)
                codes.append(ErrorCode.none)
            elif member_id in group.members:
                self._remove_member(group, member_id, "left the group")
                codes.append(ErrorCode.none)
            else:
                codes.append(ErrorCode.unknown_member_id)
        return ErrorCode.none, codes

    # -- admin ----------------------------------------------------------------------------

    def describe(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def list(self) -> list[Group]:
        return [g for g in self.groups.values() if g.state is not S.DEAD]

    def delete(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.state is S.DEAD:
            return ErrorCode.group_id_not_found
        if group.state is not S.EMPTY:
            return ErrorCode.non_empty_group
        entries: list[tuple[bytes, bytes | None]] = [
            (rec.offset_key(group_id, t, p), None) for t, p in group.offsets
        ]
        entries.append((rec.group_key(group_id), None))
        try:
            self.store.append(group_id, entries)
        except StorageError:
            return ErrorCode.coordinator_not_available
        self._transition(group, S.DEAD)
        del self.groups[group_id]
        return ErrorCode.none

    def close(self) -> None:
        for group in self.groups.values():
            if group.rebalance_timer is not None:
                group.rebalance_timer.cancel()
            for member in group.members.values():
                member.cancel_expiry()
            for handle in group.pending_members.values():
                handle.cancel()
