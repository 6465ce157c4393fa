"""JoinGroup: how a member enters a group or comes back to it, as Kafka's ``handleJoinGroup``.

An unknown member of a v4+ JoinGroup first gets MEMBER_ID_REQUIRED with a new id to join with
(KIP-394), pending until it joins with it or its session timeout passes. A static member
(``group.instance.id``) back under a new member id takes its old place, without a rebalance when
the group is stable and its protocols are unchanged (KIP-345). A new member, a member whose
protocols changed, or the leader rejoining starts a rebalance
(:mod:`sluice.broker.group.rebalance`) and waits for it to complete. Mixed into
:class:`~sluice.broker.group.coordinator.GroupCoordinator`; not thread-safe.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Protocol

from kio.schema.errors import ErrorCode

from sluice.broker.group.group import Group, GroupState, Member
from sluice.broker.group.rebalance import JoinResult, SyncResult
from sluice.errors import StorageError

S = GroupState


class _Coordinator(Protocol):
    groups: dict[str, Group]
    clock: Callable[[], int]
    min_session: int
    max_session: int
    max_size: int

    def _add_pending(self, group: Group, member_id: str, session_timeout: int) -> None: ...

    async def _join_new(self, group: Group, member: Member) -> JoinResult: ...

    async def _join_existing(
        self,
        group: Group,
        member: Member,
        protocols: list[tuple[str, bytes]],
        session_timeout: int,
        rebalance_timeout: int,
    ) -> JoinResult: ...

    async def _rejoin_static(
        self,
        group: Group,
        instance_id: str,
        new_id: str,
        *,
        protocols: list[tuple[str, bytes]],
        session_timeout: int,
        rebalance_timeout: int,
    ) -> JoinResult: ...

    def _persist_group(self, group: Group) -> None: ...

    def _prepare_rebalance(self, group: Group, reason: str) -> None: ...

    def _maybe_complete_join(self, group: Group) -> None: ...

    def _schedule_expiry(self, group: Group, member: Member) -> None: ...

    def _join_response(self, group: Group, member: Member) -> JoinResult: ...


class GroupJoin:
    """JoinGroup of the group coordinator."""

    async def join(
        self: _Coordinator,
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
        if not group_id:
            return JoinResult(ErrorCode.invalid_group_id, member_id=member_id)
        if not self.min_session <= session_timeout <= self.max_session:
            return JoinResult(ErrorCode.invalid_session_timeout, member_id=member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.unknown_member_id, member_id=member_id)
            group = self.groups[group_id] = Group(group_id, state_timestamp=self.clock())
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

    def _add_pending(
        self: _Coordinator, group: Group, member_id: str, session_timeout: int
    ) -> None:
        loop = asyncio.get_running_loop()

        def expire() -> None:
            if group.pending_members.pop(member_id, None) is not None:
                self._maybe_complete_join(group)

        group.pending_members[member_id] = loop.call_later(session_timeout / 1000, expire)

    async def _join_new(self: _Coordinator, group: Group, member: Member) -> JoinResult:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[JoinResult] = loop.create_future()
        member.join_waiter = waiter
        group.add(member)
        self._prepare_rebalance(group, f"{member.member_id} joined")
        self._maybe_complete_join(group)
        return await waiter

    async def _join_existing(
        self: _Coordinator,
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
            self._schedule_expiry(group, member)
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
        self: _Coordinator,
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
                self._persist_group(group)  # the new member id must survive a restart
            except StorageError:
                return JoinResult(ErrorCode.coordinator_not_available, member_id=new_id)
            self._schedule_expiry(group, old)
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
