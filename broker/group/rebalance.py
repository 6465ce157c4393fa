"""The rebalance of a group and the expiry of its members, as Kafka's ``GroupCoordinator``.

A join, a leave or an expired member moves the group to PreparingRebalance; the rebalance
completes when every member has rejoined or the largest rebalance timeout passed (members that
did not rejoin are removed); a group that was Empty first waits
``group.initial.rebalance.delay.ms``, extended as members arrive (Kafka's ``InitialDelayedJoin``).
Completing bumps the generation, chooses the protocol and answers every waiting JoinGroup
(:class:`JoinResult`); from then on a member lives as long as it heartbeats within
``session.timeout.ms``. :class:`SyncResult` is what a waiting SyncGroup gets. Timers run on the
event loop's monotonic clock. Mixed into :class:`~sluice.broker.group.coordinator.GroupCoordinator`;
not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from sluice.broker.group.group import Group, GroupState, Member

log = logging.getLogger(__name__)

S = GroupState


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


class _Coordinator(Protocol):
    clock: Callable[[], int]
    initial_delay: int

    def _persist_group(self, group: Group) -> None: ...

    def _prepare_rebalance(self, group: Group, reason: str) -> None: ...

    def _maybe_complete_join(self, group: Group) -> None: ...

    def _complete_join(self, group: Group, timed_out: bool) -> None: ...

    def _schedule_expiry(self, group: Group, member: Member) -> None: ...

    def _expire(self, group: Group, member: Member) -> None: ...

    def _remove_member(self, group: Group, member_id: str, reason: str) -> None: ...

    def _transition(self, group: Group, state: GroupState) -> None: ...

    def _join_response(self, group: Group, member: Member) -> JoinResult: ...


class GroupRebalance:
    """The rebalance state machine of the group coordinator, with its timers."""

    def _prepare_rebalance(self: _Coordinator, group: Group, reason: str) -> None:
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

    def _maybe_complete_join(self: _Coordinator, group: Group) -> None:
        if (
            group.state is S.PREPARING_REBALANCE
            and group.all_joined()
            and not group.initial_delay_ms
        ):
            self._complete_join(group, False)

    def _complete_join(self: _Coordinator, group: Group, timed_out: bool) -> None:
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
            self._persist_group(group)
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
            self._schedule_expiry(group, member)
            if waiter is not None and not waiter.done():
                waiter.set_result(self._join_response(group, member))

    def _schedule_expiry(self: _Coordinator, group: Group, member: Member) -> None:
        member.cancel_expiry()
        loop = asyncio.get_running_loop()
        member.expiry = loop.call_later(
            member.session_timeout_ms / 1000, self._expire, group, member
        )

    def _expire(self: _Coordinator, group: Group, member: Member) -> None:
        if group.members.get(member.member_id) is not member or member.join_waiter is not None:
            return
        log.info(
            "group %s: member %s expired (no heartbeat for %d ms)",
            group.group_id,
            member.member_id,
            member.session_timeout_ms,
        )
        self._remove_member(group, member.member_id, "session timeout")

    def _remove_member(self: _Coordinator, group: Group, member_id: str, reason: str) -> None:
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

    def _transition(self: _Coordinator, group: Group, state: GroupState) -> None:
        group.state = state
        group.state_timestamp = self.clock()

    def _join_response(self: _Coordinator, group: Group, member: Member) -> JoinResult:
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
