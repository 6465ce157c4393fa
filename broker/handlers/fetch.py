"""Fetch: whole record batches straight from the segments, with long polling.

Segment bytes are passed to the response as they are on disk — never parsed or re-encoded, and
not even read here: each partition's answer holds a :class:`~sluice.broker.log.region.FileRegion`
of its segment file, which the connection sends with ``os.sendfile`` on a plaintext socket (or
reads once and writes otherwise; :meth:`sluice.broker.framing.FrameProtocol.send_frame`). The
response around them is written by :mod:`sluice.broker.protocol.fetch_response`. Each partition is
looked up once per read, and its range found from batch headers only; the regions are taken after
the last read with no ``await`` in between, so no append, roll or deletion can move them first.
Limits are honoured at batch boundaries: ``partition_max_bytes`` per partition and
``max_bytes`` for the response, except that the first batch of the first non-empty partition is
returned whole even when larger (KIP-74), so a consumer always makes progress. A consumer with
a ``consumer_byte_rate`` quota has ``max_bytes`` capped to what the quota lets through in its
windows (Kafka's; :mod:`sluice.broker.quotas`), and the time spent waiting is reported in the
answer so that its ``request_percentage`` counts handling only.

If fewer than ``min_bytes`` are available the request waits, up to ``max_wait_ms``, for an
append to any of its partitions. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` up to the last stable offset (the first offset of the oldest open
transaction), and the response lists the aborted transactions in the range read so that the
client drops their records.

Fetch sessions (KIP-227) are kept in the broker's
:class:`~sluice.broker.fetch_session.FetchSessionCache`, which also decides what a request
reads (:func:`~sluice.broker.fetch_session.new_context`): a full request reads the partitions
it names and may open a session of them; an incremental one updates its session and reads every
partition of it — so a waiting fetch wakes when any partition of the session gets data, not
only those the request named — and its response lists only the partitions with records or news
(high watermark, last stable offset, log start offset, an error, a diverging epoch). A session
error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR)
is answered at once, at the top level, with no partitions. Records still go as regions of the
segment files: the session only chooses which partitions are written.

From v13 topics are named by their topic id (KIP-516), in the request and the response: the id is
resolved once per topic with a dict lookup, and an unknown id (a deleted topic, or one deleted
and re-created, which has a new id) is answered UNKNOWN_TOPIC_ID for each of its partitions, so
that the client refreshes its metadata. Version 16 adds only fields of leader changes, which
are not written.

The leader of a partition serves it; a follower serves only consumers that may read from it
(KIP-392): a consumer's Fetch v11+, in a cluster, while this broker is in the partition's ISR
(:func:`follower_read_epoch`), up to this broker's own high watermark (or last stable offset),
never beyond; ``current_leader_epoch`` is checked against the epoch of the leader it follows.
Every other fetch of a partition this broker follows (a replica fetch, an older version, a
follower out of the ISR) is answered NOT_LEADER_OR_FOLLOWER. A leader with a
``replica.selector.class`` sends a consumer that names its rack (``rack_id``, the client's
``client.rack``) to a follower of that rack when the leader is in another one: the partition is
answered with no records and ``preferred_read_replica`` (Kafka's ``findPreferredReadReplica``,
checked on every fetch; :mod:`sluice.broker.replication.replica_selector`), at once.

A request with ``replica_id >= 0`` (the top-level field up to v14, ``replica_state.replica_id``
from v15) is a follower's replica fetch (Kafka's ``Partition.fetchRecords``): it reads up to the
log end offset instead of the high watermark, and when it names the epoch of the last batch it
holds (``last_fetched_epoch``, v12+) its log is first checked against the leader's: if the leader's
log ends that epoch before ``fetch_offset``, or knows only an older epoch at or below it, the
answer holds no records and ``diverging_epoch = (epoch, end offset)`` from the leader's
leader-epoch cache, so that the follower truncates (KIP-279, truncation on fetch). A
``last_fetched_epoch`` newer than every epoch the leader knows, or a ``fetch_offset`` below the log
start, is OFFSET_OUT_OF_RANGE (as Kafka answers). As in Kafka, a response with a diverging epoch or
a partition error is sent at once instead of waiting for ``min_bytes``. A follower caught up with
the leader (its ``fetch_offset`` is the log end and its ``last_fetched_epoch`` the leader's latest
epoch, which cannot diverge) is acknowledged and waited on without looking its log up: most
partitions of a follower's session, at every wake-up. A replica fetch leaves out the records of a
partition whose leader is throttled for it while the leader's replication quota is exceeded and the
follower is out of the ISR (:mod:`sluice.broker.replication.quota`); the bytes sent to followers
count as replication bytes, not as bytes out.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.fetch_session import ToRead, new_context
from sluice.broker.log import Log, OffsetOutOfRangeError
from sluice.broker.log.epochs import check_current_leader_epoch
from sluice.broker.log.segment import LogSegment
from sluice.broker.protocol.api_keys import FETCH
from sluice.broker.protocol.codec import millis
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.fetch_response import (
    FetchAnswer,
    PartitionAnswer,
    TopicAnswer,
)
from sluice.broker.quotas.requests import fetch_max_bytes
from sluice.broker.replication.replica_selector import ReplicaView, preferred_read_replica
from sluice.broker.security.access import allowed, denied
from sluice.broker.security.acls import ResourceType
from sluice.broker.topics import Partition, Topic
from sluice.errors import StorageError

TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import FetchRequest

READ_COMMITTED = 1
TOPIC_IDS_FROM = 13
"""The first version that names topics by id."""
RACK_ID_FROM = 11
"""The first version with the consumer's ``rack_id`` and ``preferred_read_replica`` (KIP-392)."""
REPLICA_STATE_FROM = 15
"""The first version that carries the follower's id in ``replica_state`` (KIP-903)."""

# where a partition's records are: its answer, the partition (metrics), the segment, [start, end)
_Span = tuple[PartitionAnswer, Partition, LogSegment, int, int]


async def handle(broker: Broker, request: FetchRequest, client: Connection) -> FetchAnswer:
    committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    max_bytes = getattr(request, "max_bytes", 2**31 - 1)
    follower = replica_id(request) >= 0
    if broker.client_quotas.enabled and not follower:  # a consumer_byte_rate caps max_bytes
        max_bytes = fetch_max_bytes(
            broker.client_quotas, client.principal, client.client_id, max_bytes
        )
    refused: set[str] = set()
    authorizer = broker.authorizer
    if authorizer is not None and follower:  # noqa: SIM102 (the None check alone, first)
        if not allowed(authorizer, client, FETCH, CLUSTER, when="follower"):
            return FetchAnswer(
                request.__version__, [], error_code=ErrorCode.cluster_authorization_failed
            )
    context = new_context(broker.fetch_sessions, request, follower, broker.clock())
    if context.error:
        return FetchAnswer(request.__version__, [], error_code=context.error)
    if authorizer is not None and not follower:
        refused = denied(authorizer, client, FETCH, TOPIC, _names(broker, context.to_read))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + millis(request.max_wait) / 1000
    waited = 0.0

    while True:
        topics, spans, total, waitable, urgent = _read_all(
            broker, request, context.to_read, max_bytes, committed, follower, refused
        )
        remaining = deadline - loop.time()
        if total >= request.min_bytes or remaining <= 0 or not waitable or urgent:
            break
        waiter: asyncio.Future[None] = loop.create_future()
        for partition in waitable:
            partition.waiters.add(waiter)
        waited -= loop.time()
        try:
            await asyncio.wait_for(waiter, remaining)
        except TimeoutError:
            pass
        finally:
            waited += loop.time()
            for partition in waitable:
                partition.waiters.discard(waiter)

    # No await since the last read: every span still points at live bytes of its segment.
    answer = FetchAnswer(request.__version__, topics, waited_s=waited)
    try:
        for entry, partition, segment, start, end in spans:
            entry.records = segment.region(start, end)
            if follower:  # metrics and the leader's replication quota
                broker.replication_throttles.sent(partition, end - start)
            else:
                partition.bytes_out += end - start  # metrics: bytes out, once per partition
        answer.topics, answer.session_id = context.respond(topics, broker.clock())
    except BaseException:
        answer.close()
        raise
    return answer


def _names(broker: Broker, to_read: ToRead) -> list[str]:
    """The names of the topics to read (those named by an id the broker knows)."""
    names = []
    for name, topic_id, _ in to_read:
        if name is not None:
            names.append(name)
        elif topic_id is not None and (found := broker.topics.by_id(topic_id)) is not None:
            names.append(found.name)
    return names


def replica_id(request: Any) -> int:
    """The follower's broker id in a replica fetch; -1 for a consumer (-2: Kafka's debug
    consumer, treated as one)."""
    if request.__version__ >= REPLICA_STATE_FROM:
        return int(request.replica_state.replica_id)
    return int(request.replica_id)


def _read_all(
    broker: Broker,
    request: Any,
    to_read: ToRead,
    max_bytes: int,
    committed: bool,
    follower: bool,
    refused: set[str],
) -> tuple[list[TopicAnswer], list[_Span], int, list[Partition], bool]:
    """Every partition's answer but its records (one topic answer per topic of ``to_read``,
    one partition answer per partition, in order), where those records are, their total size,
    the partitions that had nothing to give (to wait on), and whether an answer must go at
    once (an error or a diverging epoch)."""
    total = 0
    topics: list[TopicAnswer] = []
    spans: list[_Span] = []
    waitable: list[Partition] = []
    urgent = False
    by_id = request.__version__ >= TOPIC_IDS_FROM
    client_rack = "" if follower else getattr(request, "rack_id", "")  # v11+ (KIP-392)
    for name, topic_id, wanted_partitions in to_read:
        found: Topic | None
        if by_id:
            found = broker.topics.by_id(topic_id) if topic_id is not None else None
            missing = ErrorCode.unknown_topic_id
            answer = TopicAnswer(None, topic_id)
        else:
            found = broker.topics.get(name) if name is not None else None
            missing = ErrorCode.unknown_topic_or_partition
            answer = TopicAnswer(name, None)
        topics.append(answer)
        if refused and (found.name if found is not None else name) in refused:
            answer.partitions += [
                PartitionAnswer(w.partition, error_code=ErrorCode.topic_authorization_failed)
                for w in wanted_partitions
            ]
            urgent = True
            continue
        partitions = found.partitions if found is not None else {}
        for wanted in wanted_partitions:
            entry = PartitionAnswer(
                wanted.partition, aborted_transactions=[] if committed else None
            )
            answer.partitions.append(entry)
            partition = partitions.get(wanted.partition)
            if partition is None:
                entry.error_code = (
                    ErrorCode.not_leader_or_follower  # e.g. a follower no longer a replica
                    if _hosted_elsewhere(broker, name, topic_id, wanted.partition)
                    else missing
                    if found is None
                    else ErrorCode.unknown_topic_or_partition
                )
                urgent = True
                continue
            if partition.offline:  # its log directory failed (sluice.broker.log_dirs)
                entry.error_code = ErrorCode.kafka_storage_error
                urgent = True
                continue
            plog = partition.log
            leader_epoch = (
                plog.leader_epoch
                if partition.is_leader
                else follower_read_epoch(broker, partition, request.__version__, follower)
            )
            if leader_epoch is None:
                entry.error_code = ErrorCode.not_leader_or_follower
                urgent = True
                continue
            fenced = check_current_leader_epoch(  # the field is there from v9 (KIP-320)
                getattr(wanted, "current_leader_epoch", -1), leader_epoch
            )
            if fenced:
                entry.error_code = ErrorCode(fenced)
                urgent = True
                continue
            hwm, lso = plog.high_watermark, plog.last_stable_offset
            entry.high_watermark, entry.last_stable_offset = hwm, lso
            entry.log_start_offset = plog.log_start_offset
            if client_rack and partition.leadership is not None:  # KIP-392, on the leader
                preferred = _preferred_read_replica(broker, partition, client_rack, wanted)
                if preferred is not None:  # no records: the consumer goes there
                    entry.preferred_read_replica = preferred
                    urgent = True
                    continue
            upper_bound = lso if committed else hwm
            if follower:
                upper_bound = plog.log_end_offset
                caught_up = (
                    wanted.fetch_offset == upper_bound
                    and getattr(wanted, "last_fetched_epoch", -1) == plog.leader_epochs.latest_epoch
                )
                if not caught_up:  # (caught up: no divergence, nothing to read)
                    diverging = _divergence(plog, wanted)
                    if diverging is not None:
                        if diverging == OUT_OF_RANGE:
                            entry.error_code = ErrorCode.offset_out_of_range
                        else:
                            entry.diverging_epoch = diverging
                        urgent = True
                        continue
                if partition.leadership is not None:  # a follower acknowledges by fetching
                    fetched = (replica_id(request), wanted.fetch_offset, broker.clock())
                    partition.leadership.follower_fetched(
                        *fetched,
                        getattr(wanted, "log_start_offset", -1),  # (v5+; KIP-392)
                    )
                if caught_up or broker.replication_throttles.leader_holds_back(
                    partition, replica_id(request)
                ):  # (held back: a throttled follower out of the ISR, the quota exceeded)
                    waitable.append(partition)
                    continue
            budget = min(wanted.partition_max_bytes, max_bytes - total)
            try:
                span = plog.locate(
                    wanted.fetch_offset,
                    max(budget, 0),
                    upper_bound=upper_bound,
                    min_one_batch=total == 0,
                )
            except OffsetOutOfRangeError:
                entry.error_code = ErrorCode.offset_out_of_range
                urgent = True
                continue
            except StorageError:
                entry.error_code = ErrorCode.kafka_storage_error
                urgent = True
                continue
            if span is None:
                waitable.append(partition)
                continue
            segment, start, end = span
            spans.append((entry, partition, segment, start, end))
            total += end - start
            if committed:
                entry.aborted_transactions = plog.aborted_transactions(wanted.fetch_offset, lso)
    return topics, spans, total, waitable, urgent


def follower_read_epoch(
    broker: Broker, partition: Partition, version: int, replica_fetch: bool
) -> int | None:
    """The leader epoch a partition this broker follows is read in by a consumer (KIP-392,
    Kafka's follower fetching), or None to answer NOT_LEADER_OR_FOLLOWER: only a consumer's
    Fetch v11+ (older versions and replica fetches need the leader), only in a cluster, and
    only while this broker is an in-sync replica of the partition in the state it last heard
    (a follower out of the ISR sends its consumers back to the leader). The consumer then
    reads up to this broker's high watermark (or last stable offset), never beyond."""
    if replica_fetch or version < RACK_ID_FROM or broker.cluster is None:
        return None
    known = broker.cluster.cache.states.get((partition.topic, partition.index))
    if known is None:
        return None
    state = known.value
    if state.leader == broker.node_id or broker.node_id not in state.isr:
        return None
    return int(state.leader_epoch)


def _hosted_elsewhere(broker: Broker, name: str | None, topic_id: Any, index: int) -> bool:
    """Whether the cluster has the partition while this broker hosts no replica of it: Kafka
    answers NOT_LEADER_OR_FOLLOWER then (the client asks its metadata again), not UNKNOWN_*."""
    if broker.cluster is None:
        return False
    cache = broker.cluster.cache
    if name is None and topic_id is not None:
        info = cache.topic_by_id(topic_id)
        name = None if info is None else info.name
    assignment = cache.assignments.get(name) if name is not None else None
    return assignment is not None and index in assignment.value.partitions


def _preferred_read_replica(
    broker: Broker, partition: Partition, client_rack: str, wanted: Any
) -> int | None:
    """The follower a consumer in ``client_rack`` should fetch ``partition`` from, by the
    leader's ``replica.selector.class`` (:mod:`sluice.broker.replication.replica_selector`);
    None: from here."""
    selector: str | None = broker.config["replica.selector.class"]
    if not selector or partition.leadership is None or broker.cluster is None:
        return None
    live = broker.cluster.cache.brokers

    def rack(node_id: int) -> str | None:  # a broker not registered has no rack (no node)
        found = live.get(node_id)
        return None if found is None else found.registration.rack

    leader = ReplicaView(broker.node_id, rack(broker.node_id), partition.log.log_end_offset)
    candidates = [
        ReplicaView(replica, rack(replica), leo, since)
        for replica, leo, since in partition.leadership.read_replicas(
            wanted.fetch_offset, broker.clock()
        )
    ]
    return preferred_read_replica(selector, client_rack, leader, candidates)


OUT_OF_RANGE = (-1, -1)
""":func:`_divergence`'s answer for a follower to refuse with OFFSET_OUT_OF_RANGE."""


def _divergence(plog: Log, wanted: Any) -> tuple[int, int] | None:
    """Where a follower's log diverges from this leader's log (Kafka's
    ``Partition.validateFetchOffsetAndMaybeGetDivergingEpoch``): None when it does not (or the
    request names no ``last_fetched_epoch``), ``(epoch, end_offset)`` to answer as
    ``diverging_epoch``, or :data:`OUT_OF_RANGE`."""
    last_fetched = getattr(wanted, "last_fetched_epoch", -1)  # the field is there from v12
    if last_fetched < 0:
        return None
    epoch, end = plog.end_offset_for_epoch(last_fetched)
    if end < 0 or wanted.fetch_offset < plog.log_start_offset:
        return OUT_OF_RANGE  # an epoch newer than any the leader knows
    if epoch < last_fetched or end < wanted.fetch_offset:
        return epoch, end
    return None
