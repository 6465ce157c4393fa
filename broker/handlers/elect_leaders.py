"""ElectLeaders (KIP-183, KIP-460): move partitions' leadership to their preferred replica, or
give a leaderless partition a leader from outside its ISR.

Any broker takes the request (as in Kafka's ZooKeeper era, the controller does the work) and
checks each partition against its metadata cache first, with Kafka's answers:

- unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION;
- PREFERRED (0): already led by its first replica → ELECTION_NOT_NEEDED; the first replica not
  alive or not in the ISR → PREFERRED_LEADER_NOT_AVAILABLE;
- UNCLEAN (1): a live leader already → ELECTION_NOT_NEEDED; no live replica →
  ELIGIBLE_LEADERS_NOT_AVAILABLE.

The others go to the controller in one request (``/admin/preferred_replica_election``, or
Sluice's ``/admin/unclean_leader_election``), and the answer waits until the cache shows each
elected (at most the request's timeout: REQUEST_TIMED_OUT, the election may still happen).
No ``topic_partitions`` means every partition (PREFERRED). On one node every partition is led
by its only replica: ELECTION_NOT_NEEDED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.model import TopicPartition
from sluice.broker.protocol.api_keys import ELECT_LEADERS
from sluice.broker.protocol.codec import make, millis, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import refuses_cluster

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import ElectLeadersRequest, ElectLeadersResponse

PREFERRED, UNCLEAN = 0, 1


async def handle(
    broker: Broker, request: ElectLeadersRequest, client: Connection
) -> ElectLeadersResponse:
    schema = response_schema(ELECT_LEADERS, request.__version__)
    unclean = getattr(request, "election_type", PREFERRED) == UNCLEAN
    if request.topic_partitions is None:
        wanted = [
            TopicPartition(name, index)
            for name in broker.topic_names()
            if (topic := broker.describe_topic(name)) is not None
            for index in topic.partitions
        ]
    else:
        wanted = [
            TopicPartition(t.topic, index)
            for t in request.topic_partitions
            for index in t.partitions
        ]
    codes: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
    asked: list[TopicPartition] = []
    denied = refuses_cluster(broker.authorizer, client, ELECT_LEADERS)
    for tp in wanted:
        code = (
            ErrorCode.cluster_authorization_failed
            if denied
            else _check(broker, tp, unclean=unclean)
        )
        if code is None:
            asked.append(tp)
            codes[tp] = (ErrorCode.none, None)
        else:
            codes[tp] = (code, None)
    if asked and broker.cluster is not None:
        timeout_s = millis(request.timeout) / 1000
        done = await broker.cluster.admin.elect_leaders(asked, unclean=unclean, timeout_s=timeout_s)
        for tp in asked:
            if tp not in done:
                codes[tp] = (
                    ErrorCode.request_timed_out,
                    "the election was requested; it is not done yet",
                )
    by_topic: dict[str, list[tuple[int, ErrorCode, str | None]]] = {}
    for tp, (code, message) in codes.items():
        by_topic.setdefault(tp.topic, []).append((tp.partition, code, message))
    topic_cls = nested(schema, "replica_election_results")
    partition_cls = nested(schema, "replica_election_results", "partition_result")
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        replica_election_results=tuple(
            make(
                topic_cls,
                topic=name,
                partition_result=tuple(
                    make(partition_cls, partition_id=p, error_code=c, error_message=m)
                    for p, c, m in sorted(results, key=lambda r: r[0])
                ),
            )
            for name, results in by_topic.items()
        ),
    )


def _check(broker: Broker, tp: TopicPartition, *, unclean: bool) -> ErrorCode | None:
    """Kafka's answer for a partition that needs no election or cannot have one; None when
    the controller should elect."""
    topic = broker.describe_topic(tp.topic)
    info = None if topic is None else topic.partitions.get(tp.partition)
    if info is None:
        return ErrorCode.unknown_topic_or_partition
    live = {b.node_id for b in broker.live_brokers()}
    if unclean:
        if info.leader >= 0:
            return ErrorCode.election_not_needed
        if not live & set(info.replicas):
            return ErrorCode.eligible_leaders_not_available
        return None
    preferred = info.replicas[0] if info.replicas else -1
    if info.leader == preferred:
        return ErrorCode.election_not_needed
    if preferred not in live or preferred not in info.isr:
        return ErrorCode.preferred_leader_not_available
    return None
