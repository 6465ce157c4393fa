"""WriteTxnMarkers: a transaction coordinator on another broker asks this one to end a
transaction on the partitions it leads (Kafka's inter-broker API, ``KafkaApis
.handleWriteTxnMarkersRequest``).

Each marker is appended with the coordinator epoch it carries
(:func:`~sluice.broker.txn.markers.write_marker`); a partition this broker does not lead
answers NOT_LEADER_OR_FOLLOWER (the coordinator sends it to the new leader). A marker on a
``__consumer_offsets`` partition also ends the transaction's pending offsets in this broker's
group coordinator. As Kafka appends markers with ``acks=-1``, a partition is answered once its
in-sync replicas have the marker (``offsets.commit.timeout.ms``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.api_keys import WRITE_TXN_MARKERS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import refuses_cluster
from sluice.broker.txn.markers import TxnMarker, write_marker

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse


async def handle(
    broker: Broker, request: WriteTxnMarkersRequest, client: Connection
) -> WriteTxnMarkersResponse:
    schema = response_schema(WRITE_TXN_MARKERS, request.__version__)
    result_cls = nested(schema, "markers")
    topic_cls = nested(schema, "markers", "topics")
    partition_cls = nested(schema, "markers", "topics", "partitions")
    timeout_ms = int(broker.config["offsets.commit.timeout.ms"])
    results = []
    denied = refuses_cluster(broker.authorizer, client, WRITE_TXN_MARKERS)
    for m in request.markers:
        marker = TxnMarker(
            m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch
        )
        topics = []
        for t in m.topics:
            partitions = []
            for index in t.partition_indexes:
                if denied:
                    partitions.append(
                        make(
                            partition_cls,
                            partition_index=index,
                            error_code=ErrorCode.cluster_authorization_failed,
                        )
                    )
                    continue
                code = write_marker(
                    broker.topics,
                    t.name,
                    index,
                    marker,
                    broker.clock(),
                    broker.groups.complete_transaction,
                )
                if code is ErrorCode.none:
                    code = await _replicated(broker, t.name, index, timeout_ms)
                partitions.append(make(partition_cls, partition_index=index, error_code=code))
            topics.append(make(topic_cls, name=t.name, partitions=tuple(partitions)))
        results.append(make(result_cls, producer_id=m.producer_id, topics=tuple(topics)))
    return make(schema, markers=tuple(results))


async def _replicated(broker: Broker, topic: str, index: int, timeout_ms: int) -> ErrorCode:
    partition = broker.topics.partition(topic, index)
    leadership = None if partition is None else partition.leadership
    if partition is None or leadership is None:
        return ErrorCode.none
    return await leadership.wait_for_replication(partition.log.log_end_offset, timeout_ms)
