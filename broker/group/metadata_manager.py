"""The groups of one coordinator shard and Kafka's classic group protocol, as Kafka's
``GroupMetadataManager``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance with its
timers, member expiry, and the group records of ``__consumer_offsets``.

- **JoinGroup** of an unknown member: v4+ gets MEMBER_ID_REQUIRED with a new id to join with
  (KIP-394), pending until it joins with it or its session timeout passes; a static member
  (``group.instance.id``) back under a new member id takes its old place, without a rebalance
  when the group is stable and its protocols are unchanged (KIP-345). A new member, a member
  whose protocols changed, or the leader rejoining starts a rebalance and waits for it.
- **The rebalance** (PreparingRebalance) completes when every member has rejoined or the largest
  rebalance timeout passed (members that did not rejoin are removed); a group that was Empty
  first waits ``group.initial.rebalance.delay.ms``, extended as members arrive (Kafka's
  ``InitialDelayedJoin``). Completing bumps the generation, chooses the protocol and answers
  every waiting JoinGroup (:class:`JoinResult`); the leader receives the member list.
- **SyncGroup** from the leader carries every member's assignment: the group becomes Stable,
  its metadata is written to ``__consumer_offsets`` and every waiting member gets its part
  (:class:`SyncResult`).
- **Heartbeat** keeps a member alive for ``session.timeout.ms``; an expired member is removed and
  the group rebalances. Stale generations get ILLEGAL_GENERATION, unknown members
  UNKNOWN_MEMBER_ID, and members of a rebalancing group REBALANCE_IN_PROGRESS so they rejoin.

At each generation that becomes stable (and when a group becomes empty) the group's metadata
with its members and assignments is appended (:meth:`GroupMetadataManager.replay` reads it
back when the shard loads). Committed offsets are the
:class:`~sluice.broker.group.offset_manager.OffsetMetadataManager`'s, which reaches the groups
through :meth:`~GroupMetadataManager.group`, :meth:`~GroupMetadataManager.get_or_create`,
:meth:`~GroupMetadataManager.validate_member` and :meth:`~GroupMetadataManager.keep_alive`.

Time: timers run on the event loop's monotonic clock; state timestamps come from the injected
wall clock. Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.errors import KafkaError
from sluice.broker.group import records as rec
from sluice.broker.group.group import Group, GroupState, Member
from sluice.broker.internal_topic import InternalTopic
from sluice.errors import StorageError

log = logging.getLogger(__name__)

S = GroupState


@dataclass(frozen=True, slots=True)
class JoinResult:
    """What a JoinGroup gets."""

    error: ErrorCode
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What a SyncGroup gets."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


class GroupMetadataManager:
    """The groups of one ``__consumer_offsets`` partition and their membership."""

    def __init__(
        self, store: InternalTopic, config: BrokerConfig, clock: Callable[[], int]
    ) -> None:
        self.store = store
        self.clock = clock
        self.groups: dict[str, Group] = {}
        self.min_session = int(config["group.min.session.timeout.ms"])
        self.max_session = int(config["group.max.session.timeout.ms"])
        self.initial_delay = int(config["group.initial.rebalance.delay.ms"])
        self.max_size = int(config["group.max.size"])

    # -- what the offset manager and the shard see ------------------------------------------

    def group(self, group_id: str) -> Group | None:
        """The group ``group_id`` (None: unknown)."""
        return self.groups.get(group_id)

    def get_or_create(self, group_id: str, state_timestamp: int) -> Group:
        """The group ``group_id``, created Empty if unknown."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=state_timestamp)
        return group

    def all(self) -> list[Group]:
        """Every group, Dead ones included."""
        return list(self.groups.values())

    def validate_member(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> tuple[Group, Member]:
        """The group and member of a request, or :class:`KafkaError` with Kafka's code."""
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

    def keep_alive(self, group: Group, member: Member) -> None:
        """Restart the member's session timer (a heartbeat, or a request that counts as one)."""
        member.cancel_expiry()
        loop = asyncio.get_running_loop()
        member.expiry = loop.call_later(
            member.session_timeout_ms / 1000, self._expire, group, member
        )

    def forget(self, group_id: str) -> None:
        """Drop ``group_id`` (its records are tombstoned by the caller)."""
        self.groups.pop(group_id, None)

    def delete(self, group: Group) -> None:
        """The group was deleted (its tombstones are written): it is Dead and gone."""
        self._transition(group, S.DEAD)
        del self.groups[group.group_id]

    # -- JoinGroup ----------------------------------------------------------------------------

    async def join(
        self,
        *,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        session_timeout: int,
        rebalance_timeout: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        client_id: str,
        client_host: str,
        require_known_member: bool,
    ) -> JoinResult:
        """JoinGroup, as Kafka's ``handleJoinGroup`` (see the module docs)."""
        if not group_id:
            return JoinResult(ErrorCode.invalid_group_id, member_id=member_id)
        if not self.min_session <= session_timeout <= self.max_session:
            return JoinResult(ErrorCode.invalid_session_timeout, member_id=member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.unknown_member_id, member_id=member_id)
            group = self.get_or_create(group_id, self.clock())
        if group.state is S.DEAD:
            return JoinResult(ErrorCode.coordinator_not_available, member_id=member_id)
        if not group.supports(protocol_type, protocols):
            return JoinResult(ErrorCode.inconsistent_group_protocol, member_id=member_id)
        rebalance_timeout = rebalance_timeout if rebalance_timeout > 0 else session_timeout

        def new_member(joining_id: str) -> Member:
            return Member(
                joining_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                protocol_type,
                protocols,
            )

        known_static = instance_id is not None and instance_id in group.static_members

        if not member_id or (known_static and member_id not in group.members):
            if len(group.members) >= self.max_size and not known_static:
                return JoinResult(ErrorCode.group_max_size_reached)
            new_id = f"{client_id or 'member'}-{uuid.uuid4()}"
            if instance_id is not None:
                if known_static:
                    return await self._rejoin_static(
                        group,
                        instance_id,
                        new_id,
                        protocols=protocols,
                        session_timeout=session_timeout,
                        rebalance_timeout=rebalance_timeout,
                    )
            elif require_known_member:
                self._add_pending(group, new_id, session_timeout)
                return JoinResult(ErrorCode.member_id_required, member_id=new_id)
            return await self._join_new(group, new_member(new_id))

        if member_id in group.pending_members:
            group.pending_members.pop(member_id).cancel()
            return await self._join_new(group, new_member(member_id))
        existing = group.members.get(member_id)
        if existing is None:
            return JoinResult(ErrorCode.unknown_member_id, member_id=member_id)
        if instance_id is not None and group.static_members.get(instance_id) != member_id:
            return JoinResult(ErrorCode.fenced_instance_id, member_id=member_id)
        return await self._join_existing(
            group, existing, protocols, session_timeout, rebalance_timeout
        )

    def _add_pending(self, group: Group, member_id: str, session_timeout: int) -> None:
        loop = asyncio.get_running_loop()

        def expire() -> None:
            if group.pending_members.pop(member_id, None) is not None:
                self._maybe_complete_join(group)

        group.pending_members[member_id] = loop.call_later(session_timeout / 1000, expire)

    async def _join_new(self, group: Group, member: Member) -> JoinResult:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[JoinResult] = loop.create_future()
        member.join_waiter = waiter
        group.add(member)
        self._prepare_rebalance(group, f"{member.member_id} joined")
        self._maybe_complete_join(group)
        return await waiter

    async def _join_existing(
        self,
        group: Group,
        member: Member,
        protocols: list[tuple[str, bytes]],
        session_timeout: int,
        rebalance_timeout: int,
    ) -> JoinResult:
        loop = asyncio.get_running_loop()
        if group.state is S.COMPLETING_REBALANCE and member.same_protocols(protocols):
            return self._join_response(group, member)  # a resend of the join just answered
        if (
            group.state is S.STABLE
            and member.member_id != group.leader
            and (member.same_protocols(protocols))
        ):
            self.keep_alive(group, member)
            return self._join_response(group, member)
        member.protocols = protocols
        member.session_timeout_ms = session_timeout
        member.rebalance_timeout_ms = rebalance_timeout
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(JoinResult(ErrorCode.rebalance_in_progress))
        waiter: asyncio.Future[JoinResult] = loop.create_future()
        member.join_waiter = waiter
        member.cancel_expiry()
        self._prepare_rebalance(group, f"{member.member_id} rejoined")
        self._maybe_complete_join(group)
        return await waiter

    async def _rejoin_static(
        self,
        group: Group,
        instance_id: str,
        new_id: str,
        *,
        protocols: list[tuple[str, bytes]],
        session_timeout: int,
        rebalance_timeout: int,
    ) -> JoinResult:
        """A static member back under a new member id: it takes its old place (KIP-345)."""
        old_id = group.static_members[instance_id]
        old = group.members.pop(old_id)
        old.cancel_expiry()
        if old.join_waiter is not None and not old.join_waiter.done():
            old.join_waiter.set_result(JoinResult(ErrorCode.fenced_instance_id))
        if old.sync_waiter is not None and not old.sync_waiter.done():
            old.sync_waiter.set_result(SyncResult(ErrorCode.fenced_instance_id))
        old.member_id, old.join_waiter, old.sync_waiter = new_id, None, None
        old.session_timeout_ms, old.rebalance_timeout_ms = session_timeout, rebalance_timeout
        group.members[new_id] = old
        group.static_members[instance_id] = new_id
        was_leader = group.leader == old_id
        if was_leader:
            group.leader = new_id
        if group.state is S.STABLE and old.same_protocols(protocols):
            # Kafka answers without a rebalance; a returning leader is told the old leader id
            # and no members, so it does not assign again (JoinGroup < v9 has no skip flag).
            try:
                self._persist(group)  # the new member id must survive a restart
            except StorageError:
                return JoinResult(ErrorCode.coordinator_not_available, member_id=new_id)
            self.keep_alive(group, old)
            response = self._join_response(group, old)
            if was_leader:
                response = JoinResult(
                    response.error,
                    response.generation,
                    response.protocol_type,
                    response.protocol,
                    old_id,
                    new_id,
                    (),
                )
            return response
        old.protocols = protocols
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        old.join_waiter = waiter
        self._prepare_rebalance(group, f"static member {instance_id} rejoined")
        self._maybe_complete_join(group)
        return await waiter

    def _join_response(self, group: Group, member: Member) -> JoinResult:
        assert group.protocol is not None
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if member.member_id == group.leader:
            members = tuple(
                (m.member_id, m.group_instance_id, m.metadata(group.protocol))
                for m in group.members.values()
            )
        return JoinResult(
            ErrorCode.none,
            group.generation,
            group.protocol_type,
            group.protocol,
            group.leader or "",
            member.member_id,
            members,
        )

    # -- SyncGroup, Heartbeat, LeaveGroup -----------------------------------------------------

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
        """SyncGroup: the leader's assignments make the group Stable (see the module docs)."""
        try:
            group, member = self.validate_member(group_id, member_id, instance_id, generation)
        except KafkaError as exc:
            return SyncResult(exc.code)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol is not None and protocol != group.protocol
        ):
            return SyncResult(ErrorCode.inconsistent_group_protocol)
        if group.state is S.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.rebalance_in_progress)
        self.keep_alive(group, member)
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
                self._persist(group)
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
        """Heartbeat: keeps the member alive; REBALANCE_IN_PROGRESS asks it to rejoin."""
        group = self.groups.get(group_id)
        if (
            group is not None
            and group.state is S.PREPARING_REBALANCE
            and (member_id in group.members)
        ):
            self.keep_alive(group, group.members[member_id])
            return ErrorCode.rebalance_in_progress
        try:
            group, member = self.validate_member(group_id, member_id, instance_id, generation)
        except KafkaError as exc:
            return exc.code
        self.keep_alive(group, member)
        return ErrorCode.none

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup of ``(member_id, group_instance_id)`` members: the group error and one
        code per member."""
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

    # -- the rebalance ------------------------------------------------------------------------

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        loop = asyncio.get_running_loop()
        if group.state is S.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
                if member.sync_waiter is not None and not member.sync_waiter.done():
                    member.sync_waiter.set_result(SyncResult(ErrorCode.rebalance_in_progress))
                    member.sync_waiter = None
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if group.state is S.PREPARING_REBALANCE:
            if group.initial_delay_ms and group.rebalance_timer is not None:
                # Kafka's InitialDelayedJoin: each arrival extends the wait, up to the timeout.
                remaining = group.rebalance_deadline - loop.time()
                delay = min(group.initial_delay_ms / 1000, max(remaining, 0))
                group.rebalance_timer.cancel()
                group.rebalance_timer = loop.call_later(delay, self._complete_join, group, True)
            return
        log.info(
            "group %s rebalancing (generation %d): %s", group.group_id, group.generation, reason
        )
        was_empty = group.state is S.EMPTY
        self._transition(group, S.PREPARING_REBALANCE)
        group.rebalance_deadline = loop.time() + timeout / 1000
        if was_empty and self.initial_delay > 0:
            group.initial_delay_ms = self.initial_delay
            group.rebalance_timer = loop.call_later(
                min(self.initial_delay, timeout) / 1000, self._complete_join, group, True
            )
        else:
            group.initial_delay_ms = 0
            group.rebalance_timer = loop.call_later(
                timeout / 1000, self._complete_join, group, True
            )

    def _maybe_complete_join(self, group: Group) -> None:
        if (
            group.state is S.PREPARING_REBALANCE
            and group.all_joined()
            and not group.initial_delay_ms
        ):
            self._complete_join(group, False)

    def _complete_join(self, group: Group, timed_out: bool) -> None:
        if group.state is not S.PREPARING_REBALANCE:
            return
        if timed_out and group.initial_delay_ms:
            group.initial_delay_ms = 0
            if not group.all_joined():
                loop = asyncio.get_running_loop()
                remaining = max(group.rebalance_deadline - loop.time(), 0)
                group.rebalance_timer = loop.call_later(remaining, self._complete_join, group, True)
                return
        if group.rebalance_timer is not None:
            group.rebalance_timer.cancel()
            group.rebalance_timer = None
        for member in [m for m in group.members.values() if m.join_waiter is None]:
            log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
            group.remove(member.member_id)
        for handle in group.pending_members.values():
            handle.cancel()
        group.pending_members.clear()
        group.generation += 1
        if not group.members:
            group.protocol = None
            self._transition(group, S.EMPTY)
            self._persist(group)
            return
        group.protocol = group.select_protocol()
        self._transition(group, S.COMPLETING_REBALANCE)
        log.info(
            "group %s generation %d with %d members, protocol %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol,
        )
        for member in group.members.values():
            waiter, member.join_waiter = member.join_waiter, None
            member.is_new = False
            self.keep_alive(group, member)
            if waiter is not None and not waiter.done():
                waiter.set_result(self._join_response(group, member))

    def _expire(self, group: Group, member: Member) -> None:
        if group.members.get(member.member_id) is not member or member.join_waiter is not None:
            return
        log.info(
            "group %s: member %s expired (no heartbeat for %d ms)",
            group.group_id,
            member.member_id,
            member.session_timeout_ms,
        )
        self._remove_member(group, member.member_id, "session timeout")

    def _remove_member(self, group: Group, member_id: str, reason: str) -> None:
        member = group.remove(member_id)
        if member is None:
            return
        for waiter, result in (
            (member.join_waiter, JoinResult(ErrorCode.unknown_member_id)),
            (member.sync_waiter, SyncResult(ErrorCode.unknown_member_id)),
        ):
            if waiter is not None and not waiter.done():
                waiter.set_result(result)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"{member_id} left ({reason})")
        self._maybe_complete_join(group)

    def _transition(self, group: Group, state: GroupState) -> None:
        group.state = state
        group.state_timestamp = self.clock()

    # -- records ------------------------------------------------------------------------------

    def _persist(self, group: Group) -> None:
        members = tuple(
            rec.MemberValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(group.protocol) if group.protocol else b"",
                m.assignment,
            )
            for m in group.members.values()
        )
        value = rec.GroupValue(
            group.protocol_type or "",
            group.generation,
            group.protocol,
            group.leader if group.members else None,
            group.state_timestamp,
            members,
        )
        self.store.append(group.group_id, [(rec.group_key(group.group_id), rec.group_value(value))])

    @staticmethod
    def tombstone(group_id: str) -> list[tuple[bytes, bytes | None]]:
        """The record that deletes the group's metadata."""
        return [(rec.group_key(group_id), None)]

    def replay(self, key: rec.GroupKey, value: bytes | None) -> None:
        """Apply a group metadata record read back from ``__consumer_offsets`` (latest wins).

        Raises :class:`~sluice.broker.group.records.RecordFormatError` for an unreadable value."""
        if value is None:
            self.groups.pop(key.group, None)
            return
        meta = rec.decode_group_value(value)
        group = self.groups.setdefault(key.group, Group(key.group))
        group.protocol_type = meta.protocol_type or None
        group.generation = meta.generation
        group.state_timestamp = meta.state_timestamp
        group.protocol = meta.protocol
        group.members.clear()
        group.static_members.clear()
        group.leader = None
        for m in meta.members:
            group.add(
                Member(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout,
                    m.session_timeout,
                    meta.protocol_type,
                    [(meta.protocol or "", m.subscription)],
                    m.assignment,
                    is_new=False,
                )
            )
        group.leader = meta.leader if meta.leader in group.members else group.leader

    def on_loaded(self) -> None:
        """After the replay: a group with members and a protocol is Stable in its last stable
        generation, any other Empty."""
        for group in self.groups.values():
            group.state = S.STABLE if group.members and group.protocol else S.EMPTY
            if group.state is S.EMPTY:
                group.members.clear()
                group.static_members.clear()
                group.leader = None

    # -- timers -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the session timers of the members restored by the replay (in the loop):
        members that come back keep heartbeating in their generation; the others expire."""
        for group in self.groups.values():
            for member in group.members.values():
                self.keep_alive(group, member)

    def close(self) -> None:
        """Cancel every timer (the shard is unloaded or the broker stops)."""
        for group in self.groups.values():
            if group.rebalance_timer is not None:
                group.rebalance_timer.cancel()
            for member in group.members.values():
                member.cancel_expiry()
            for handle in group.pending_members.values():
                handle.cancel()
