"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): move partitions'
replicas between brokers, and see the moves in progress.

Any broker takes the requests (as in Kafka's ZooKeeper era, the controller does the work). An
alter writes each partition's target into its topic's assignment — the replicas become the
target followed by the original replicas not in it, with ``adding`` and ``removing`` — through
:meth:`~sluice.broker.cluster.admin.ClusterAdmin.alter_reassignments`; the brokers of the new
replicas start following the partition, and once they are all in the ISR the controller makes
the target the assignment (electing a leader from it if the current one leaves), after which
the removed replicas' brokers delete their copies. The answer comes when the reassignment is
*started*, as Kafka's; ListPartitionReassignments shows it until it is done. ``replicas``
null cancels one in progress (the partition goes back to its original replicas; the added
ones drop what they copied). From version 1, ``allow_replication_factor_change`` false
refuses a target of another size (INVALID_REPLICATION_FACTOR, KIP-860).

On one node every partition has its one replica there: a target of exactly that replica is
accepted and changes nothing, any other is INVALID_REPLICA_ASSIGNMENT, and nothing is ever in
progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.api_keys import (
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
)
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import CLUSTER_DENIED, refuses_cluster

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    )

_Answer = tuple[ErrorCode, str | None]


async def alter(
    broker: Broker, request: AlterPartitionReassignmentsRequest, client: Connection
) -> AlterPartitionReassignmentsResponse:
    schema = response_schema(ALTER_PARTITION_REASSIGNMENTS, request.__version__)
    if refuses_cluster(broker.authorizer, client, ALTER_PARTITION_REASSIGNMENTS):
        return make(
            schema,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=CLUSTER_DENIED,
            responses=(),
        )
    may_resize = getattr(request, "allow_replication_factor_change", True)
    answers: list[tuple[str, dict[int, _Answer]]] = []
    for topic in request.topics:
        targets = {
            int(p.partition_index): None if p.replicas is None else [int(r) for r in p.replicas]
            for p in topic.partitions
        }
        answers.append((topic.name, await _alter_topic(broker, topic.name, targets, may_resize)))
    topic_cls = nested(schema, "responses")
    partition_cls = nested(schema, "responses", "partitions")
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        error_message=None,
        responses=tuple(
            make(
                topic_cls,
                name=name,
                partitions=tuple(
                    make(partition_cls, partition_index=i, error_code=code, error_message=text)
                    for i, (code, text) in sorted(result.items())
                ),
            )
            for name, result in answers
        ),
    )


async def _alter_topic(
    broker: Broker, topic: str, targets: dict[int, list[int] | None], may_resize: bool
) -> dict[int, _Answer]:
    info = broker.describe_topic(topic)
    if info is None:
        return {i: (ErrorCode.unknown_topic_or_partition, None) for i in targets}
    refused: dict[int, _Answer] = {}
    for index, target in targets.items():
        replicas = info.partitions[index].replicas if index in info.partitions else None
        if replicas is None:
            refused[index] = (ErrorCode.unknown_topic_or_partition, None)
        elif target is not None and not may_resize and len(target) != len(replicas):
            message = f"the replication factor would change from {len(replicas)} to {len(target)}"
            refused[index] = (ErrorCode.invalid_replication_factor, message)
    wanted = {i: t for i, t in targets.items() if i not in refused}
    if broker.cluster is None:
        return {**refused, **{i: _one_node(broker, t) for i, t in wanted.items()}}
    return {**refused, **await broker.cluster.admin.alter_reassignments(topic, wanted)}


def _one_node(broker: Broker, target: list[int] | None) -> _Answer:
    if target is None:
        return ErrorCode.no_reassignment_in_progress, None
    if target != [broker.node_id]:
        return ErrorCode.invalid_replica_assignment, f"the only broker is {broker.node_id}"
    return ErrorCode.none, None


async def list_(
    broker: Broker, request: ListPartitionReassignmentsRequest, client: Connection
) -> ListPartitionReassignmentsResponse:
    schema = response_schema(LIST_PARTITION_REASSIGNMENTS, request.__version__)
    if refuses_cluster(broker.authorizer, client, LIST_PARTITION_REASSIGNMENTS):
        return make(
            schema,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=CLUSTER_DENIED,
            topics=(),
        )
    ongoing = broker.cluster.admin.reassignments() if broker.cluster is not None else {}
    wanted = (
        None
        if request.topics is None
        else {(t.name, int(i)) for t in request.topics for i in t.partition_indexes}
    )
    by_topic: dict[str, list[object]] = {}
    partition_cls = nested(schema, "topics", "partitions")
    for tp, replicas in ongoing.items():
        if wanted is not None and (tp.topic, tp.partition) not in wanted:
            continue
        by_topic.setdefault(tp.topic, []).append(
            make(
                partition_cls,
                partition_index=tp.partition,
                replicas=replicas.replicas,
                adding_replicas=replicas.adding,
                removing_replicas=replicas.removing,
            )
        )
    topic_cls = nested(schema, "topics")
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        error_message=None,
        topics=tuple(make(topic_cls, name=n, partitions=tuple(p)) for n, p in by_topic.items()),
    )
