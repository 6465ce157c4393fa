"""Transaction markers: writing one to a partition led here (:func:`write_marker`, which the
coordinator and the WriteTxnMarkers handler share) and sending them to the leaders on other
brokers (:class:`MarkerChannel`, Kafka's ``TransactionMarkerChannelManager``).

A marker carries the coordinator epoch (the leader epoch of the ``__transaction_state``
partition when its coordinator loaded it). The channel sends one WriteTxnMarkers request per
leader, over one :class:`~sluice.broker.replication.client.BrokerClient` connection per
broker, and sends again what was refused with a retriable error (the leader moved, the
connection failed) to the partition's leader of the moment, every :data:`RETRY_BACKOFF_S`,
for at most :data:`SEND_DEADLINE_S`; then it gives up and the coordinator's periodic job
starts over (the transaction stays prepared meanwhile, and its producer is answered
CONCURRENT_TRANSACTIONS). A partition deleted meanwhile needs no marker. When every partition
has its marker, the coordinator's ``on_done`` records the transaction complete. Unloading the
coordinator's partition cancels its sends (the next coordinator sends them again).
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1 import request as wtm
from kio.static.primitive import i16, i32, i64

from sluice.broker.log.errors import InvalidProducerEpochError
from sluice.broker.replication.client import BrokerClient, BrokerConnectionError
from sluice.broker.security.inter_broker import PLAINTEXT, InterBrokerSecurity
from sluice.broker.topics import TopicManager
from sluice.errors import StorageError

if TYPE_CHECKING:
    from sluice.broker.cluster.member import ClusterMember

__all__ = ["ClusterRoutes", "MarkerChannel", "MarkerRoutes", "TxnMarker", "write_marker"]

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
SEND_DEADLINE_S = 30.0
REQUEST_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """The marker of one transaction's end."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


class MarkerRoutes(Protocol):
    """Where a partition's leader is (the cluster's metadata)."""

    def leader(self, topic: str, index: int) -> tuple[int, str, int] | None:
        """The live leader's node id, host and port (None: no live leader now)."""
        ...

    def exists(self, topic: str, index: int) -> bool:
        """Whether the partition exists in the cluster."""
        ...


class ClusterRoutes:
    """:class:`MarkerRoutes` read from a cluster member's metadata cache."""

    def __init__(self, member: ClusterMember) -> None:
        self.member = member

    def leader(self, topic: str, index: int) -> tuple[int, str, int] | None:
        node_id = self.member.cache.leader_of(topic, index)
        endpoint = None if node_id < 0 else self.member.cache.endpoint(node_id)
        return None if endpoint is None else (node_id, endpoint[0], endpoint[1])

    def exists(self, topic: str, index: int) -> bool:
        assignment = self.member.cache.assignments.get(topic)
        return assignment is not None and index in assignment.value.partitions


def write_marker(
    topics: TopicManager,
    topic: str,
    index: int,
    marker: TxnMarker,
    now_ms: int,
    completed: Callable[[int, bool], None],
) -> ErrorCode:
    """Append ``marker`` to partition ``topic``-``index`` if this broker leads it (else
    NOT_LEADER_OR_FOLLOWER); ``completed(producer_id, commit)`` is told when the partition is
    one of ``__consumer_offsets`` (its group coordinator applies or drops the offsets)."""
    partition = topics.partition(topic, index)
    if partition is None or not partition.is_leader:
        return ErrorCode.not_leader_or_follower
    try:
        partition.log.append_marker(
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            commit=marker.commit,
            coordinator_epoch=marker.coordinator_epoch,
            now_ms=now_ms,
        )
    except InvalidProducerEpochError:
        return ErrorCode.invalid_producer_epoch
    except StorageError as exc:
        log.error("marker for %s-%d not written: %s", topic, index, exc)
        return ErrorCode.kafka_storage_error
    partition.appended(now_ms)
    if partition.topic == "__consumer_offsets":
        completed(marker.producer_id, marker.commit)
    return ErrorCode.none


class MarkerChannel:
    """Sends markers to the leaders on other brokers; see the module docstring."""

    def __init__(self, broker_id: int, routes: MarkerRoutes | None = None) -> None:
        self.broker_id = broker_id
        self.routes = routes
        self.security: InterBrokerSecurity = PLAINTEXT
        """How connections to the other brokers are secured (the inter-broker listener's;
        set by the cluster member)."""
        self._sends: dict[str, asyncio.Task[None]] = {}
        self._clients: dict[int, BrokerClient] = {}

    def pending(self, txn_id: str) -> bool:
        """Whether markers of ``txn_id``'s transaction are still being sent."""
        return txn_id in self._sends

    def send(
        self,
        txn_id: str,
        marker: TxnMarker,
        partitions: Iterable[tuple[str, int]],
        on_done: Callable[[], None],
    ) -> None:
        """Send ``marker`` to the leaders of ``partitions``, then call ``on_done`` (not
        called when the send is cancelled or gives up)."""
        task = asyncio.get_running_loop().create_task(
            self._send(txn_id, marker, set(partitions), on_done), name=f"txn-markers-{txn_id}"
        )
        self._sends[txn_id] = task
        task.add_done_callback(lambda t: self._finished(txn_id, t))

    def _finished(self, txn_id: str, task: asyncio.Task[None]) -> None:
        if self._sends.get(txn_id) is task:
            del self._sends[txn_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("markers of %s: %s", txn_id, task.exception(), exc_info=task.exception())

    def cancel(self, which: Callable[[str], bool]) -> None:
        """Stop the sends of the transactional ids ``which`` selects."""
        for txn_id in [t for t in self._sends if which(t)]:
            self._sends.pop(txn_id).cancel()

    def close(self) -> None:
        """Stop every send and close the connections."""
        self.cancel(lambda _: True)
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    async def _send(
        self,
        txn_id: str,
        marker: TxnMarker,
        left: set[tuple[str, int]],
        on_done: Callable[[], None],
    ) -> None:
        assert self.routes is not None, "markers are sent in a cluster only"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SEND_DEADLINE_S
        while left:
            by_leader: dict[tuple[int, str, int], list[tuple[str, int]]] = {}
            for topic, index in sorted(left):
                if not self.routes.exists(topic, index):
                    left.discard((topic, index))  # deleted: nothing to mark
                    continue
                leader = self.routes.leader(topic, index)
                if leader is not None:
                    by_leader.setdefault(leader, []).append((topic, index))
            for leader, partitions in by_leader.items():
                for tp, code in (await self._request(leader, marker, partitions)).items():
                    if code is ErrorCode.none:
                        left.discard(tp)
                    elif code not in _RETRIABLE:
                        log.error(
                            "marker of %s for %s-%d refused: %s", txn_id, tp[0], tp[1], code.name
                        )
                        left.discard(tp)  # Kafka's channel drops a partition it cannot mark
            if not left:
                break
            if loop.time() >= deadline:
                log.warning(
                    "markers of %s not written to %s within %gs: retried later",
                    txn_id,
                    sorted(left),
                    SEND_DEADLINE_S,
                )
                return
            await asyncio.sleep(RETRY_BACKOFF_S)
        on_done()

    async def _request(
        self, leader: tuple[int, str, int], marker: TxnMarker, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        node_id, host, port = leader
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        request = wtm.WriteTxnMarkersRequest(
            markers=(
                wtm.WritableTxnMarker(
                    producer_id=ProducerId(i64(marker.producer_id)),
                    producer_epoch=i16(marker.producer_epoch),
                    transaction_result=marker.commit,
                    topics=tuple(
                        wtm.WritableTxnMarkerTopic(
                            name=TopicName(name), partition_indexes=tuple(i32(i) for i in indexes)
                        )
                        for name, indexes in by_topic.items()
                    ),
                    coordinator_epoch=i32(marker.coordinator_epoch),
                ),
            )
        )
        try:
            client = self._clients.get(node_id)
            if client is None or client.closed:
                client = await BrokerClient.connect(
                    host,
                    port,
                    client_id=f"broker-{self.broker_id}-txn-markers",
                    timeout_s=REQUEST_TIMEOUT_S,
                    security=self.security,
                )
                self._clients[node_id] = client
            response = await client.call(request, timeout_s=REQUEST_TIMEOUT_S)
        except BrokerConnectionError as exc:
            log.info("markers to broker %d: %s", node_id, exc)
            with contextlib.suppress(KeyError):
                del self._clients[node_id]
            return dict.fromkeys(partitions, ErrorCode.network_exception)
        codes = {
            (t.name, p.partition_index): p.error_code
            for result in response.markers
            for t in result.topics
            for p in t.partitions
        }
        return {tp: codes.get(tp, ErrorCode.unknown_server_error) for tp in partitions}


_RETRIABLE = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
        ErrorCode.request_timed_out,
        ErrorCode.network_exception,
        ErrorCode.kafka_storage_error,
        ErrorCode.unknown_server_error,
    }
)
