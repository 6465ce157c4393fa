"""The follower side of replication: Kafka's replica fetcher (``ReplicaFetcherManager``,
``AbstractFetcherThread``, ``ReplicaFetcherThread``) on the broker's event loop.

The cluster member tells the manager which hosted partitions to copy from which leader
(:meth:`ReplicaFetcherManager.follow`, :meth:`~ReplicaFetcherManager.unfollow`). As in Kafka
with ``num.replica.fetchers=1``, there is one fetcher per source broker — an asyncio task with
one connection (:class:`~.client.BrokerClient`) — carrying every partition that broker leads
for us. Each round is one Fetch v12 (topics by name) with ``replica_id`` = our broker id and,
per partition, our log end offset as ``fetch_offset`` (which *is* the follower's
acknowledgement), the leader epoch we follow in as ``current_leader_epoch``, the latest epoch
of our leader-epoch cache as ``last_fetched_epoch`` and our log start offset. Keys:
``replica.fetch.wait.max.ms`` (max_wait), ``replica.fetch.min.bytes``,
``replica.fetch.response.max.bytes`` (max_bytes), ``replica.fetch.max.bytes`` (per partition)
and ``replica.fetch.backoff.ms``.

What an answer does to a partition:

- **records**: appended as they are (:meth:`Log.append_as_follower
  <sluice.broker.log.log.Log.append_as_follower>`: the leader's offsets and epochs), then the
  high watermark becomes ``min(leader's, our log end)`` and the log start offset follows the
  leader's (retention, DeleteRecords), up to that high watermark. An empty log whose start
  falls inside the leader's first batch (a log start moved into a batch by DeleteRecords)
  first starts over at that batch;
- **diverging_epoch** ``(E, X)`` (KIP-279): truncate to ``min(X, our end offset for E)`` when
  our log knows ``E``; when it does not, to the end of our largest epoch below ``E`` (the next
  round asks again, as Kafka's ``getOffsetTruncationState``); a target below our log start
  starts the log over there;
- **OFFSET_OUT_OF_RANGE**: ListOffsets (latest) to the leader: a leader ending below our log
  end → truncate to its end; else ListOffsets (earliest): our log ending below the leader's
  start → start our log over at it (:meth:`Log.truncate_fully_and_start_at
  <sluice.broker.log.log.Log.truncate_fully_and_start_at>`, Kafka's
  ``truncateFullyAndStartAt``); else retry after the backoff;
- **FENCED_LEADER_EPOCH**: we follow an old epoch; the partition is not fetched until
  :meth:`~ReplicaFetcherManager.follow` re-points it (the member learns the new epoch);
- UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER and any other error: retried after
  ``replica.fetch.backoff.ms``; a batch that fails its CRC too (Kafka's fetcher goes on);
- a disk error (:class:`~sluice.errors.StorageError`): the partition stops, as Kafka marks it
  failed, until it is re-pointed.

A failed connection is retried after the backoff, forever (each wait bounded, all
cancellable). Every change of a partition's state (and of the connection's) is logged once at
INFO (WARNING for failures), not at every round. An answer for a partition that was re-pointed,
unfollowed or changed while the Fetch was in flight is dropped, as Kafka's fetcher drops it.

Appends are ``pwrite``\\s; truncations (rare) fsync, on the loop as Kafka does them on its
fetcher thread. Not thread-safe: every method is called from the broker's event loop.
"""

from __future__ import annotations

import logging

from sluice.broker.config import BrokerConfig
from sluice.broker.replication.leader_fetcher import (
    REQUEST_TIMEOUT_S,
    Clock,
    FetchState,
    LeaderFetcher,
    PartitionKey,
)
from sluice.broker.topics import Partition

__all__ = ["FetchState", "ReplicaFetcherManager"]

log = logging.getLogger(__name__)


class ReplicaFetcherManager:
    """Every partition this broker follows, fetched by one task per leader (module docs).

    ``config`` may be replaced (dynamic broker configs): each round reads the fetch keys
    anew."""

    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        clock: Clock,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.clock = clock
        self.request_timeout_s = request_timeout_s
        self._fetchers: dict[int, LeaderFetcher] = {}
        self._leader_of: dict[PartitionKey, int] = {}

    def follow(
        self, partition: Partition, leader_id: int, leader: tuple[str, int], leader_epoch: int
    ) -> None:
        """Fetch ``partition`` (hosted here) from broker ``leader_id`` at ``leader`` (host,
        port) in ``leader_epoch``: start, or re-point it (a new leader, address or epoch, or
        again after it was fenced or failed). Call from the running event loop."""
        key = (partition.topic, partition.index)
        previous = self._leader_of.get(key)
        if previous is not None and previous != leader_id:
            self._remove(key)
        fetcher = self._fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self._fetchers[leader_id] = LeaderFetcher(self, leader_id, leader)
        elif fetcher.address != leader:
            fetcher.repoint(leader)
        self._leader_of[key] = leader_id
        fetcher.add(partition, leader_epoch)

    def unfollow(self, partition: Partition) -> None:
        """Stop fetching ``partition`` (it is led here now, or no longer hosted); an answer in
        flight for it is dropped. A fetcher left with no partition stops."""
        self._remove((partition.topic, partition.index))

    def state(self, partition: Partition) -> FetchState | None:
        """Where the fetching of ``partition`` stands (None: not followed)."""
        key = (partition.topic, partition.index)
        leader_id = self._leader_of.get(key)
        if leader_id is None:
            return None
        return self._fetchers[leader_id].partitions[key].state

    async def close(self) -> None:
        """Stop every fetcher and close its connection."""
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        self._leader_of.clear()
        for fetcher in fetchers:
            fetcher.stop()
        for fetcher in fetchers:
            await fetcher.wait_stopped()

    def _remove(self, key: PartitionKey) -> None:
        leader_id = self._leader_of.pop(key, None)
        if leader_id is None:
            return
        fetcher = self._fetchers[leader_id]
        fetcher.remove(key)
        if not fetcher.partitions:
            del self._fetchers[leader_id]
            fetcher.stop()
