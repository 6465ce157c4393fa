"""One consumer group of Kafka's classic protocol: members, generation, state, committed offsets.

States, as Kafka's ``GroupMetadata``::

    Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
      ▲                 ▲      │                                      │ leader's SyncGroup
      │                 │      └── no member left ──▶ Empty            ▼
      └── last leaves ──┴──── join, leave, member expired ────────── Stable
    any ──delete / offsets expired with no members──▶ Dead

This module holds the data and the small decisions (protocol choice, who is leader); the
transitions with their timers live in
:class:`~sluice.broker.group.metadata_manager.GroupMetadataManager`, the offsets' rules in
:class:`~sluice.broker.group.offset_manager.OffsetMetadataManager`.
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(eq=False)
class Member:
    """One member: what it joined with, what it was assigned, and its pending requests."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: asyncio.Future[Any] | None = None
    sync_waiter: asyncio.Future[Any] | None = None
    expiry: asyncio.TimerHandle | None = None
    is_new: bool = True

    def metadata(self, protocol: str) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def cancel_expiry(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int = 0
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    """group.instance.id → member id"""
    pending_members: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    """Member ids handed out with MEMBER_ID_REQUIRED that have not joined yet."""
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = field(
        default_factory=dict
    )
    """Offsets committed in a transaction not yet ended, by producer id."""
    state_timestamp: int = -1
    """Wall-clock ms of the last state change (Kafka's currentStateTimestamp)."""
    rebalance_timer: asyncio.TimerHandle | None = None
    rebalance_deadline: float = 0.0
    initial_delay_ms: int = 0

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.cancel_expiry()
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether a member with these protocols may join (Kafka's supportsProtocols)."""
        if not protocols or not protocol_type:
            return False
        if not self.members:
            return True
        names = {name for name, _ in protocols}
        common = set.intersection(*(m.protocol_names() for m in self.members.values()))
        return protocol_type == self.protocol_type and bool(names & common)

    def select_protocol(self) -> str:
        """The protocol every member supports with the most first-choice votes."""
        common = set.intersection(*(m.protocol_names() for m in self.members.values()))
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(name for name, _ in member.protocols if name in common)] += 1
        return max(sorted(common), key=lambda name: votes[name])

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_waiter is not None for m in self.members.values()
        )

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when not decodable."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            decoded = consumer_subscription(member.metadata(self.protocol))
            if decoded is None:
                return None
            topics |= decoded
        return topics


def consumer_subscription(metadata: bytes) -> set[str] | None:
    """Topics of a ``consumer`` protocol subscription (version int16, topics array of string).

    >>> consumer_subscription(b"\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x01t")
    {'t'}
    """
    try:
        count = int.from_bytes(metadata[2:6], "big", signed=True)
        pos, topics = 6, set()
        for _ in range(count):
            length = int.from_bytes(metadata[pos : pos + 2], "big", signed=True)
            topics.add(metadata[pos + 2 : pos + 2 + length].decode())
            pos += 2 + length
        return topics
    except (UnicodeDecodeError, ValueError):
        return None
