"""Fetch sessions (KIP-227): the broker's cache of what each fetcher fetches, so that a fetch
request names only the partitions whose fetch position changed and the answer only the
partitions with something new (Kafka's ``FetchSession``, ``FetchSessionCache`` and
``FetchManager.newContext``).

A Fetch request (v7+) carries ``session_id`` and ``session_epoch``:

* epoch -1 (final): no session; a ``session_id`` named is closed. The request is read as it is
  (:class:`SessionlessContext`).
* epoch 0 (initial): a *full* request. A ``session_id`` named is closed; a new session holding
  every partition of the request is created if the cache has a slot or may evict one
  (:class:`FullContext`); the response's ``session_id`` is the new session's, or 0 (none).
* epoch > 0: an *incremental* request of session ``session_id`` at that epoch. Its partitions
  are added to the session or update the cached fetch position; ``forgotten_topics_data`` are
  removed; the fetch then reads **every** partition of the session (so a waiting fetch wakes
  when any of them gets data), and the response lists only the partitions with records, a new
  high watermark, last stable offset or log start offset, an error, a diverging epoch or a
  preferred read replica (:class:`IncrementalContext`, Kafka's ``IncrementalFetchContext``,
  which also moves the partitions that returned records to the end of the session, so that
  ``max_bytes`` is shared round-robin). A session emptied by its request is closed (the
  response's session id is 0).
  Errors, answered at the top level with no partitions (:class:`SessionErrorContext`):
  FETCH_SESSION_ID_NOT_FOUND (no such session: never made, evicted, or closed),
  INVALID_FETCH_SESSION_EPOCH (not the session's next epoch, e.g. a response was lost), and
  FETCH_SESSION_TOPIC_ID_ERROR (a session made by a request naming topics by id, v13+, used by
  one naming them by name, or the other way round). Each incremental request moves the session
  to its next epoch (after ``2**31 - 1`` comes 1).

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions. When it is
full, a new session takes the place of one (Kafka's ``FetchSessionCache.tryEvict``): the least
recently used session if it went unused for ``min.incremental.fetch.session.eviction.ms``;
else the least valuable evictable session — fewest partitions first, followers' sessions
(*privileged*) above consumers' — if the new one is worth at least as much. A session is
evictable by a consumer's new session once it has lived the eviction time (between its
creation and its last use), and by a follower's new session also when it is a consumer's at any
age: the followers' sessions, on which replication depends, are kept apart from the consumers'
and cannot be pushed out by them while young. Sessions live in memory only: a restarted broker
answers FETCH_SESSION_ID_NOT_FOUND and the fetcher starts over with a full request.
"""

from __future__ import annotations

import abc
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.protocol.fetch_response import NO_DIVERGING_EPOCH, PartitionAnswer, TopicAnswer

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "CachedPartition",
    "FetchContext",
    "FetchSession",
    "FetchSessionCache",
    "FullContext",
    "IncrementalContext",
    "SessionErrorContext",
    "SessionlessContext",
    "ToRead",
    "new_context",
    "next_epoch",
]

INVALID_SESSION_ID = 0
"""The session id of no session."""
INITIAL_EPOCH = 0
"""The epoch of a full request that asks for a new session."""
FINAL_EPOCH = -1
"""The epoch of a request that wants no session (and closes the one it names)."""
SESSIONS_FROM = 7
"""The first Fetch version with session fields."""
TOPIC_IDS_FROM = 13
"""The first Fetch version that names topics by id."""

TopicKey = str | uuid.UUID | None
"""A topic as a session names it: its id (v13+) or its name (None: a null id or name)."""
PartitionKey = tuple[TopicKey, int]
ToRead = list[tuple[str | None, uuid.UUID | None, list[Any]]]
"""The partitions a fetch reads, by topic, in order: ``(name, topic_id, partitions)``, each
partition a request's ``FetchPartition`` (``partition``, ``fetch_offset``,
``partition_max_bytes``, and by version ``current_leader_epoch``, ``last_fetched_epoch``,
``log_start_offset``)."""


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Kafka's ``FetchMetadata.nextEpoch``): -1 stays -1, the
    largest int32 wraps to 1 (0 is only ever a full request's)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


@dataclass(slots=True, eq=False)
class CachedPartition:
    """One partition of a session: the fetch position last sent for it and what the last
    response told of it (-1: not told yet, so the next response includes it)."""

    topic: TopicKey
    wanted: Any
    """The request's ``FetchPartition`` last sent for it."""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1

    def must_respond(self, answer: PartitionAnswer) -> bool:
        """Whether an incremental response lists this partition (Kafka's
        ``CachedPartition.maybeUpdateResponseData``), remembering what it tells."""
        respond = (
            len(answer.records) > 0
            or answer.diverging_epoch != NO_DIVERGING_EPOCH
            or answer.preferred_read_replica >= 0  # (KIP-392: always told)
        )
        if self.high_watermark != answer.high_watermark:
            self.high_watermark = answer.high_watermark
            respond = True
        if self.last_stable_offset != answer.last_stable_offset:
            self.last_stable_offset = answer.last_stable_offset
            respond = True
        if self.log_start_offset != answer.log_start_offset:
            self.log_start_offset = answer.log_start_offset
            respond = True
        if answer.error_code != ErrorCode.none:
            self.high_watermark = -1  # re-sent once the error is gone
            respond = True
        return respond

    def remember(self, answer: PartitionAnswer) -> None:
        """What a full response told of the partition."""
        self.high_watermark = -1 if answer.error_code else answer.high_watermark
        self.last_stable_offset = answer.last_stable_offset
        self.log_start_offset = answer.log_start_offset


@dataclass(eq=False)
class FetchSession:
    """One fetcher's session: its partitions in fetch order and its next expected epoch."""

    id: int
    privileged: bool
    """A follower's session (a replica fetch), kept apart from consumers' (eviction)."""
    uses_topic_ids: bool
    created_ms: int
    last_used_ms: int
    epoch: int = 1
    """The epoch the session's next incremental request must carry."""
    partitions: dict[PartitionKey, CachedPartition] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.partitions)

    def update(self, request: Any, by_id: bool) -> None:
        """An incremental request's partitions added or updated, its forgotten ones removed
        (Kafka's ``FetchSession.update``)."""
        for topic in request.topics:
            key: TopicKey = topic.topic_id if by_id else topic.topic
            for wanted in topic.partitions:
                cached = self.partitions.get((key, wanted.partition))
                if cached is None:
                    self.partitions[(key, wanted.partition)] = CachedPartition(key, wanted)
                else:
                    cached.wanted = wanted
        for topic in request.forgotten_topics_data:
            key = topic.topic_id if by_id else topic.topic
            for index in topic.partitions:
                self.partitions.pop((key, index), None)


class FetchSessionCache:
    """The broker's fetch sessions, at most ``max_slots`` (Kafka's ``FetchSessionCache``).
    Single-threaded: used from the event loop."""

    def __init__(self, max_slots: int, eviction_ms: int, *, rng: random.Random | None = None):
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        """Sessions evicted to make room, in total (a metric)."""
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self.sessions)

    def partitions_cached(self) -> int:
        """How many partitions the sessions hold together (a metric)."""
        return sum(s.size for s in self.sessions.values())

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        """Close a session (None: there was none of that id)."""
        return self.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms

    def maybe_create(
        self,
        now_ms: int,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[PartitionKey, CachedPartition],
    ) -> FetchSession | None:
        """A new session holding ``partitions``, if there is a free slot or one may be
        evicted for it (:meth:`_try_evict`); None otherwise."""
        if len(self.sessions) >= self.max_slots and not self._try_evict(
            privileged, len(partitions), now_ms
        ):
            return None
        session_id = INVALID_SESSION_ID
        while session_id == INVALID_SESSION_ID or session_id in self.sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = FetchSession(
            session_id, privileged, uses_topic_ids, now_ms, now_ms, partitions=partitions
        )
        self.sessions[session_id] = session
        return session

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's ``tryEvict``: the least recently used session if stale, else the least
        valuable session the new one may evict if the new one is worth at least as much."""
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            self._evict(oldest)
            return True
        candidates = [s for s in self.sessions.values() if self._evictable(s, privileged)]
        if not candidates:
            return False
        cheapest = min(candidates, key=_value)
        if (privileged, size, 0) < _value(cheapest):
            return False
        self._evict(cheapest)
        return True

    def _evictable(self, session: FetchSession, by_privileged: bool) -> bool:
        aged = session.last_used_ms - session.created_ms > self.eviction_ms
        return aged or (by_privileged and not session.privileged)

    def _evict(self, session: FetchSession) -> None:
        del self.sessions[session.id]
        self.evictions += 1


def _value(session: FetchSession) -> tuple[bool, int, int]:
    """Kafka's ``EvictableKey``: followers' sessions above consumers', then by size, then id."""
    return (session.privileged, session.size, session.id)


# -- contexts: what a Fetch request reads and how its response is cut ------------------------


class FetchContext(abc.ABC):
    """How one Fetch request uses sessions (Kafka's ``FetchContext``): what it reads
    (:attr:`to_read`), and :meth:`respond`, which cuts the answer and gives the response's
    session id. :attr:`error` (not 0): answer only that error, at the top level."""

    error: int = 0
    to_read: ToRead

    @abc.abstractmethod
    def respond(self, topics: list[TopicAnswer], now_ms: int) -> tuple[list[TopicAnswer], int]:
        """The topics to answer (their records set) and the response's session id."""


def _request_to_read(request: Any, by_id: bool) -> ToRead:
    if by_id:
        return [(None, t.topic_id, list(t.partitions)) for t in request.topics]
    return [(t.topic, None, list(t.partitions)) for t in request.topics]


class SessionlessContext(FetchContext):
    """No session: the request is read as it is, and the whole answer is sent."""

    def __init__(self, request: Any, by_id: bool) -> None:
        self.to_read = _request_to_read(request, by_id)

    def respond(self, topics: list[TopicAnswer], now_ms: int) -> tuple[list[TopicAnswer], int]:
        return topics, INVALID_SESSION_ID


class SessionErrorContext(FetchContext):
    """A session error: nothing is read; the response carries the error and session id 0."""

    def __init__(self, error: ErrorCode) -> None:
        self.error = int(error)
        self.to_read = []

    def respond(self, topics: list[TopicAnswer], now_ms: int) -> tuple[list[TopicAnswer], int]:
        return [], INVALID_SESSION_ID


class FullContext(FetchContext):
    """A full request asking for a session: the whole answer is sent, and a session holding
    its partitions is made if the cache has room."""

    def __init__(
        self, cache: FetchSessionCache, request: Any, by_id: bool, privileged: bool
    ) -> None:
        self.cache = cache
        self.by_id = by_id
        self.privileged = privileged
        self.to_read = _request_to_read(request, by_id)

    def respond(self, topics: list[TopicAnswer], now_ms: int) -> tuple[list[TopicAnswer], int]:
        partitions: dict[PartitionKey, CachedPartition] = {}
        for (name, topic_id, wanted), answer in zip(self.to_read, topics, strict=True):
            key: TopicKey = topic_id if self.by_id else name
            for w, entry in zip(wanted, answer.partitions, strict=True):
                cached = partitions[(key, w.partition)] = CachedPartition(key, w)
                cached.remember(entry)
        session = self.cache.maybe_create(now_ms, self.privileged, self.by_id, partitions)
        return topics, INVALID_SESSION_ID if session is None else session.id


class IncrementalContext(FetchContext):
    """An incremental request of a session: every partition of the session is read, and only
    those with something new are answered."""

    def __init__(self, session: FetchSession) -> None:
        self.session = session
        self.by_id = session.uses_topic_ids
        self.cached: list[CachedPartition] = []
        self.to_read = []
        last: TopicKey | None = None
        for cached in session.partitions.values():  # runs of one topic, in session order
            if cached.topic != last or not self.to_read:
                last = cached.topic
                topic = cached.topic
                self.to_read.append(
                    (
                        topic if isinstance(topic, str) else None,
                        topic if isinstance(topic, uuid.UUID) else None,
                        [],
                    )
                )
            self.to_read[-1][2].append(cached.wanted)
            self.cached.append(cached)

    def respond(self, topics: list[TopicAnswer], now_ms: int) -> tuple[list[TopicAnswer], int]:
        cached = iter(self.cached)
        kept: list[TopicAnswer] = []
        moved: list[CachedPartition] = []
        for answer in topics:
            chosen = []
            for entry in answer.partitions:
                part = next(cached)
                if part.must_respond(entry):
                    chosen.append(entry)
                    if len(entry.records) > 0:
                        moved.append(part)
            if chosen:
                answer.partitions = chosen
                kept.append(answer)
        partitions = self.session.partitions
        for part in moved:  # to the end: the next fetches start with the others (fairness)
            key = (part.topic, part.wanted.partition)
            partitions[key] = partitions.pop(key)
        return kept, self.session.id


def new_context(
    cache: FetchSessionCache, request: Any, privileged: bool, now_ms: int
) -> FetchContext:
    """The context of a Fetch request (Kafka's ``FetchManager.newContext``)."""
    version = request.__version__
    by_id = version >= TOPIC_IDS_FROM
    if version < SESSIONS_FROM:
        return SessionlessContext(request, by_id)
    session_id, epoch = int(request.session_id), int(request.session_epoch)
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)  # a full request closes the session it names
        if epoch == FINAL_EPOCH:
            return SessionlessContext(request, by_id)
        return FullContext(cache, request, by_id, privileged)
    session = cache.get(session_id)
    if session is None:
        return SessionErrorContext(ErrorCode.fetch_session_id_not_found)
    if session.epoch != epoch:
        return SessionErrorContext(ErrorCode.invalid_fetch_session_epoch)
    if session.uses_topic_ids != by_id:
        return SessionErrorContext(ErrorCode.fetch_session_topic_id_error)
    session.update(request, by_id)
    if not session.partitions:
        cache.remove(session.id)
        return SessionlessContext(request, by_id)
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)
    return IncrementalContext(session)
