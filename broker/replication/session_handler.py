"""The follower's side of a fetch session (KIP-227; Kafka's client ``FetchSessionHandler``): which
partitions each replica Fetch names, and the session id and epoch it carries.

The first request is full (epoch 0: every partition, no session named); if the leader answers
with a session id, the following requests are incremental (that id, epochs 1, 2, ...) and name
only the partitions added to the fetch or whose fetch position changed (fetch offset, leader
epoch, last fetched epoch, log start offset, bytes asked for), with the partitions no longer
fetched in ``forgotten_topics_data``; the leader's answer lists only the partitions with records
or news. A session error answered by the leader (FETCH_SESSION_ID_NOT_FOUND: evicted, or the
leader restarted; INVALID_FETCH_SESSION_EPOCH; FETCH_SESSION_TOPIC_ID_ERROR) starts over with a
full request, which closes the old session (when the leader still has it) and asks for a new
one; so does a lost connection (:meth:`FetchSessionHandler.reset`). A full response without a
session id (the leader's cache is full) leaves the fetcher on full requests, each asking again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

__all__ = ["FetchPosition", "FetchSessionHandler", "SessionRequest"]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0

Key = tuple[str, int]
FetchPosition = tuple[int, int, int, int, int]
"""What a replica Fetch says of one partition: ``(current_leader_epoch, fetch_offset,
last_fetched_epoch, log_start_offset, partition_max_bytes)``."""


@dataclass(frozen=True)
class SessionRequest:
    """What the next Fetch carries: its session fields, the partitions it names (all of them
    when full) and the partitions it forgets."""

    session_id: int
    epoch: int
    send: dict[Key, FetchPosition]
    forget: list[Key]

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


@dataclass
class FetchSessionHandler:
    """One fetcher's session with one leader."""

    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH
    """The next request's epoch: 0 (full) until the leader gave a session."""
    partitions: dict[Key, FetchPosition] = field(default_factory=dict)
    """The session's partitions as the leader knows them (after the last request built)."""
    full_requests: int = 0
    incremental_requests: int = 0

    def build(self, wanted: dict[Key, FetchPosition]) -> SessionRequest:
        """The next request for the partitions of ``wanted`` (Kafka's
        ``FetchSessionHandler.Builder.build``)."""
        if self.epoch == INITIAL_EPOCH:
            self.partitions = dict(wanted)
            self.full_requests += 1
            return SessionRequest(self.session_id, INITIAL_EPOCH, self.partitions, [])
        send: dict[Key, FetchPosition] = {}
        forget: list[Key] = []
        for key in list(self.partitions):
            position = wanted.get(key)
            if position is None:
                del self.partitions[key]
                forget.append(key)
            elif position != self.partitions[key]:
                self.partitions[key] = send[key] = position
        for key, position in wanted.items():
            if key not in self.partitions:
                self.partitions[key] = send[key] = position
        self.incremental_requests += 1
        return SessionRequest(self.session_id, self.epoch, send, forget)

    def handle_response(self, request: SessionRequest, error: int, session_id: int) -> bool:
        """Take in the leader's answer to ``request``: False for a session error (nothing in
        the answer; the next request is full)."""
        if error != ErrorCode.none:
            if error == ErrorCode.fetch_session_id_not_found:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH  # a full request (closing the session, if any, named)
            return False
        if session_id == INVALID_SESSION_ID:  # none made, or the leader closed it
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif request.full:
            self.session_id, self.epoch = session_id, 1
        else:
            self.epoch = 1 if self.epoch == 2**31 - 1 else self.epoch + 1
        return True

    def reset(self) -> None:
        """The connection was lost, or the answer is unknown: the next request is full (and
        names the old session, so that the leader closes it)."""
        self.epoch = INITIAL_EPOCH
