"""OffsetForLeaderEpoch: where a leader epoch's log ends (KIP-101 followers, KIP-320 consumers).

For each partition the request names an epoch (``leader_epoch``) and the answer is
``(epoch, end offset)`` by Kafka's rules (:meth:`.epochs.LeaderEpochFileCache.end_offset_for`):
for the partition's current epoch, that epoch and the log end offset; for an older one, the
largest epoch the log knows at or below it and the start offset of the next (where its records
end); for one older than every epoch the log still holds, itself and the start of the first; for
one it cannot place (newer than all, or -1), ``-1/-1`` with no error. A consumer whose position
lies past the end offset it gets back knows its log was truncated there.

``current_leader_epoch`` (-1: no check) is checked first against the partition's leader epoch:
older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (both retried by clients after a
metadata refresh). An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION.

Only the partition's leader answers, consumers (``replica_id`` -1, v3+) and followers (their
broker id) alike, as Kafka's ``fetchOnlyFromLeader``: in a cluster another replica answers
NOT_LEADER_OR_FOLLOWER, checked before the epoch (a follower's log need not know the current
epoch yet, so its epoch check would mislead); both get the same answer from the leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.log.epochs import check_current_leader_epoch
from sluice.broker.protocol.api_keys import OFFSET_FOR_LEADER_EPOCH
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import denied, refuses_cluster
from sluice.broker.security.acls import ResourceType

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochResponse,
    )


async def handle(
    broker: Broker, request: OffsetForLeaderEpochRequest, client: Connection
) -> OffsetForLeaderEpochResponse:
    schema = response_schema(OFFSET_FOR_LEADER_EPOCH, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        if getattr(request, "replica_id", -1) >= 0:  # a follower: the whole cluster's
            if refuses_cluster(authorizer, client, OFFSET_FOR_LEADER_EPOCH, "follower"):
                refused = {t.topic for t in request.topics}
        else:
            refused = denied(
                authorizer,
                client,
                OFFSET_FOR_LEADER_EPOCH,
                ResourceType.TOPIC,
                (t.topic for t in request.topics),
            )
    topics = []
    for topic in request.topics:
        entries: list[Any] = []
        for wanted in topic.partitions:
            code, epoch, end_offset = ErrorCode.none, -1, -1
            partition = broker.topics.partition(topic.topic, wanted.partition)
            if topic.topic in refused:
                code = ErrorCode.topic_authorization_failed
            elif partition is None:
                code = ErrorCode.unknown_topic_or_partition
            elif partition.offline:  # its log directory failed
                code = ErrorCode.kafka_storage_error
            elif not partition.is_leader:
                code = ErrorCode.not_leader_or_follower
            else:
                plog = partition.log
                fenced = check_current_leader_epoch(wanted.current_leader_epoch, plog.leader_epoch)
                if fenced:
                    code = ErrorCode(fenced)
                else:
                    epoch, end_offset = plog.end_offset_for_epoch(wanted.leader_epoch)
            entries.append(
                make(
                    partition_cls,
                    error_code=code,
                    partition=wanted.partition,
                    leader_epoch=epoch,
                    end_offset=end_offset,
                )
            )
        topics.append(make(topic_cls, topic=topic.topic, partitions=tuple(entries)))
    return make(schema, throttle_time=0, topics=tuple(topics))
