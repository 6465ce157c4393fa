"""The Streams instance as a member of its group, over the Kafka protocol (``sluice.wire``).

librdkafka's consumer assigns partitions with its own assignors only; Kafka Streams needs its
own (:mod:`sluice.streams.runtime.assignor`: tasks where their state is, warm-ups, standbys), so
the stream thread runs the classic group protocol itself — FindCoordinator, JoinGroup, SyncGroup
(the leader computes everyone's assignment), Heartbeat, LeaveGroup and OffsetCommit with its
member id and generation — and drives its librdkafka consumer with ``assign()``.

Heartbeats go from a daemon thread on a connection of their own every
``session_timeout_ms / 5``; one that says the group is rebalancing (or that this member is no
longer known) sets :attr:`GroupMembership.rejoin_needed`, which the stream thread checks at every
poll: it commits, then joins again (Kafka Streams' eager protocol). Everything else runs on the
stream thread's connection to the coordinator.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.leave_group.v3.request import MemberIdentity
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from sluice import wire
from sluice.streams.errors import StreamsError

__all__ = ["CommitFailedError", "GroupMembership", "LeaderAssignor"]

log = logging.getLogger("sluice.streams")

JOIN_GROUP = wire.Api(11, "JoinGroup", 5, 5)
SYNC_GROUP = wire.Api(14, "SyncGroup", 3, 3)
HEARTBEAT = wire.Api(12, "Heartbeat", 3, 3)
LEAVE_GROUP = wire.Api(13, "LeaveGroup", 3, 3)
OFFSET_COMMIT = wire.Api(8, "OffsetCommit", 8, 8)

_COORDINATOR_MOVED = {
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress,
}
_MEMBER_GONE = {ErrorCode.unknown_member_id, ErrorCode.illegal_generation}

LeaderAssignor = Callable[[list[tuple[str, bytes]]], Mapping[str, bytes]]
"""The leader's work: every member's (id, subscription) → every member's assignment."""


class CommitFailedError(StreamsError):
    """The group moved on (a rebalance, or this member was dropped): the offsets were not
    committed, and the tasks must be joined for again."""


class GroupMembership:
    """One member of a classic group run by hand (see the module docstring)."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        *,
        client_id: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        security: wire.Security = wire.PLAINTEXT,
        timeout_s: float = 30.0,
    ) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.client_id = client_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.security = security
        self.timeout_s = timeout_s
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.rejoin_needed = threading.Event()
        self.lost = threading.Event()
        """Set when the group answered that this member is gone (UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION: its session expired, a pause, say) — its partitions may have been
        processed elsewhere since, so its tasks must be closed, not resumed (Kafka's
        ``onPartitionsLost``); the stream thread clears it once it has."""
        self._coordinator: wire.Node | None = None
        self._conn: wire.Connection | None = None
        self._closed = threading.Event()
        self._joining = threading.Event()
        self._heartbeats: threading.Thread | None = None

    # -- connections ----------------------------------------------------------------------
    def _find_coordinator(self) -> wire.Node:
        with wire.connect(
            self.bootstrap, timeout=self.timeout_s, client_id=self.client_id, security=self.security
        ) as conn:
            answer = conn.call(wire.FIND_COORDINATOR, key=self.group_id, key_type=0)
        if answer.error_code != ErrorCode.none:
            raise _RetryError(f"no coordinator for {self.group_id}: {answer.error_code.name}")
        return wire.Node(int(answer.node_id), answer.host, int(answer.port))

    def _call(self, api: wire.Api, **values: Any) -> Any:
        """``api`` on the stream thread's connection to the coordinator (made when missing)."""
        if self._conn is None:
            self._coordinator = self._find_coordinator()
            timeout = max(self.timeout_s, self.rebalance_timeout_ms / 1000 + 10)
            self._conn = wire.connect_node(
                self._coordinator, timeout=timeout, client_id=self.client_id, security=self.security
            )
        try:
            return self._conn.call(api, **values)
        except wire.WireError:
            self._drop_connection()
            raise

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- joining ---------------------------------------------------------------------------
    def join(self, subscription: bytes, assignor: LeaderAssignor) -> bytes:
        """Join (again) and return this member's assignment; the leader runs ``assignor``."""
        self.rejoin_needed.clear()
        self._joining.set()  # no heartbeats meanwhile: their answers would be about the old round
        try:
            deadline = time.monotonic() + max(60.0, 3 * self.rebalance_timeout_ms / 1000)
            while True:
                if time.monotonic() > deadline:
                    raise StreamsError(f"could not join the group {self.group_id}")
                try:
                    return self._join_once(subscription, assignor)
                except (_RetryError, wire.WireError) as error:
                    log.info("joining %s again: %s", self.group_id, error)
                    time.sleep(0.2)
        finally:
            self._joining.clear()

    def _join_once(self, subscription: bytes, assignor: LeaderAssignor) -> bytes:
        answer = self._call(
            JOIN_GROUP,
            group_id=self.group_id,
            session_timeout=timedelta(milliseconds=self.session_timeout_ms),
            rebalance_timeout=timedelta(milliseconds=self.rebalance_timeout_ms),
            member_id=self.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="stream", metadata=subscription),),
        )
        error = answer.error_code
        if error == ErrorCode.member_id_required:
            self.member_id = answer.member_id
            raise _RetryError("the coordinator gave a member id")
        if error in _MEMBER_GONE:
            self.member_id = ""
            self.lost.set()
            raise _RetryError(error.name)
        self._raise_unless_ok(error, "JoinGroup")
        self.member_id = answer.member_id
        self.generation = int(answer.generation_id)
        self.leader = answer.leader == answer.member_id
        assignments: tuple[SyncGroupRequestAssignment, ...] = ()
        if self.leader:
            members = [(m.member_id, bytes(m.metadata)) for m in answer.members]
            assignments = tuple(
                SyncGroupRequestAssignment(member_id=member, assignment=data)
                for member, data in assignor(members).items()
            )
        synced = self._call(
            SYNC_GROUP,
            group_id=self.group_id,
            generation_id=i32(self.generation),
            member_id=self.member_id,
            group_instance_id=None,
            assignments=assignments,
        )
        if synced.error_code in _MEMBER_GONE:
            self.member_id = ""
            self.lost.set()
            raise _RetryError(synced.error_code.name)
        self._raise_unless_ok(synced.error_code, "SyncGroup")
        log.info(
            "joined %s: generation %d as %s%s",
            self.group_id,
            self.generation,
            self.member_id,
            " (leader)" if self.leader else "",
        )
        self._start_heartbeats()
        return bytes(synced.assignment)

    def _raise_unless_ok(self, error: ErrorCode, what: str) -> None:
        if error == ErrorCode.none:
            return
        if error in _COORDINATOR_MOVED:
            self._drop_connection()
            raise _RetryError(f"{what}: {error.name}")
        if error == ErrorCode.rebalance_in_progress:
            raise _RetryError(f"{what}: {error.name}")
        raise StreamsError(f"{what} for the group {self.group_id} failed: {error.name}")

    def request_rejoin(self) -> None:
        """Ask for a rebalance at the next poll (a probing rebalance)."""
        self.rejoin_needed.set()

    # -- heartbeats ------------------------------------------------------------------------
    def _start_heartbeats(self) -> None:
        if self._heartbeats is None or not self._heartbeats.is_alive():
            self._heartbeats = threading.Thread(
                target=self._heartbeat_loop, name="sluice-streams-heartbeat", daemon=True
            )
            self._heartbeats.start()

    def _heartbeat_loop(self) -> None:
        interval = max(0.1, self.session_timeout_ms / 5000)
        conn: wire.Connection | None = None
        while not self._closed.wait(interval):
            generation = self.generation
            if self.rejoin_needed.is_set() or self._joining.is_set() or generation < 0:
                continue
            try:
                if conn is None:  # found again: the coordinator may have moved
                    conn = wire.connect_node(
                        self._find_coordinator(),
                        timeout=self.timeout_s,
                        client_id=self.client_id,
                        security=self.security,
                    )
                answer = conn.call(
                    HEARTBEAT,
                    group_id=self.group_id,
                    generation_id=i32(generation),
                    member_id=self.member_id,
                    group_instance_id=None,
                )
            except (wire.WireError, _RetryError) as error:
                log.info("heartbeat of %s: %s", self.group_id, error)
                if conn is not None:
                    conn.close()
                conn = None
                continue
            code = answer.error_code
            if self._joining.is_set() or generation != self.generation:
                continue  # answered about a round that a join has since replaced
            if code in _COORDINATOR_MOVED:
                conn.close()
                conn = None
            elif code != ErrorCode.none:
                log.info("group %s: %s, joining again", self.group_id, code.name)
                if code == ErrorCode.unknown_member_id:
                    self.member_id = ""
                if code in _MEMBER_GONE:
                    self.lost.set()
                self.rejoin_needed.set()
        if conn is not None:
            conn.close()

    # -- offsets ---------------------------------------------------------------------------
    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """OffsetCommit with this member's id and generation; :class:`CommitFailedError` when
        the group has moved on."""
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, number), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=i32(number),
                    committed_offset=i64(offset),
                    committed_leader_epoch=i32(-1),
                    committed_metadata=None,
                )
            )
        topics = tuple(
            OffsetCommitRequestTopic(name=TopicName(topic), partitions=tuple(parts))
            for topic, parts in by_topic.items()
        )
        deadline = time.monotonic() + self.timeout_s
        while True:  # a coordinator that moved (its broker died) is found again
            try:
                self._commit_once(topics)
                return
            except (_RetryError, wire.WireError) as error:
                if time.monotonic() > deadline:
                    raise StreamsError(f"cannot commit the offsets: {error}") from None
                log.info("committing to %s again: %s", self.group_id, error)
                time.sleep(0.2)

    def _commit_once(self, topics: tuple[OffsetCommitRequestTopic, ...]) -> None:
        answer = self._call(
            OFFSET_COMMIT,
            group_id=self.group_id,
            generation_id_or_member_epoch=i32(self.generation),
            member_id=self.member_id,
            group_instance_id=None,
            topics=topics,
        )
        for topic in answer.topics:
            for partition in topic.partitions:
                error = partition.error_code
                if error == ErrorCode.none:
                    continue
                if error in _MEMBER_GONE or error == ErrorCode.rebalance_in_progress:
                    if error in _MEMBER_GONE:
                        self.lost.set()
                    self.rejoin_needed.set()
                    raise CommitFailedError(f"offsets not committed: {error.name}")
                if error in _COORDINATOR_MOVED:
                    self._drop_connection()
                    raise _RetryError(f"OffsetCommit: {error.name}")
                raise StreamsError(
                    f"cannot commit {topic.name}[{partition.partition_index}]: {error.name}"
                )

    # -- leaving ---------------------------------------------------------------------------
    def close(self, *, leave: bool) -> None:
        """Stop heartbeating; with ``leave``, LeaveGroup first (a clean stop: the others
        rebalance at once instead of after the session timeout)."""
        self._closed.set()
        if leave and self.member_id:
            try:
                self._call(
                    LEAVE_GROUP,
                    group_id=self.group_id,
                    members=(MemberIdentity(member_id=self.member_id, group_instance_id=None),),
                )
            except (wire.WireError, _RetryError) as error:
                log.info("leaving %s: %s", self.group_id, error)
        if self._heartbeats is not None:
            self._heartbeats.join(5)
        self._drop_connection()


class _RetryError(Exception):
    """A step that is worth trying again (a coordinator that moved, a rebalance under way)."""
