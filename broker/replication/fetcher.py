"""The follower side of replication: Kafka's replica fetcher (``ReplicaFetcherManager``,
``AbstractFetcherThread``, ``ReplicaFetcherThread``) on the broker's event loop.

The cluster member tells the manager which hosted partitions to copy from which leader
(:meth:`ReplicaFetcherManager.follow`, :meth:`~ReplicaFetcherManager.unfollow`). As in Kafka,
there are ``num.replica.fetchers`` fetchers per source broker — each an asyncio task with one
connection (:class:`~.client.BrokerClient`), Kafka's ``ReplicaFetcherThread-<id>-<leader>`` —
and a partition goes to fetcher ``abs(31 * hashCode(topic) + partition) % num.replica.fetchers``
(Kafka's ``getFetcherId``); a dynamic change of the key moves the partitions at once
(:meth:`ReplicaFetcherManager.reconfigure`, Kafka's ``resizeThreadPool``). They all run on the
broker's one event loop: more fetchers are more Fetch requests in flight, not more cores.
Each round is one Fetch v12 (topics by name) with ``replica_id`` = our broker id and,
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

**Throttles** (:mod:`.quota`): a partition this broker is throttled for as a follower
(``follower.replication.throttled.replicas``) and not in sync with (its log did not reach the
leader's high watermark at the last answer) is left out of the Fetch while the follower quota
(``follower.replication.throttled.rate``) is exceeded — the fetch session forgets it and names it
again later, as Kafka's; the bytes received of throttled partitions are recorded in the quota.

Appends are ``pwrite``\\s; truncations (rare) fsync, on the loop as Kafka does them on its
fetcher thread. Not thread-safe: every method is called from the broker's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sluice.broker.config import BrokerConfig
from sluice.broker.kafka_hash import java_string_hash, kafka_abs
from sluice.broker.replication.leader_fetcher import (
    REQUEST_TIMEOUT_S,
    Clock,
    FetchState,
    LeaderFetcher,
    PartitionKey,
)
from sluice.broker.replication.quota import ReplicationThrottles
from sluice.broker.security.inter_broker import PLAINTEXT, InterBrokerSecurity
from sluice.broker.topics import Partition

__all__ = ["FetchState", "ReplicaFetcherManager", "fetcher_id"]

log = logging.getLogger(__name__)


FetcherKey = tuple[int, int]
"""A fetcher: (the leader's broker id, fetcher id)."""


def fetcher_id(topic: str, partition: int, fetchers: int) -> int:
    """The fetcher of a partition among ``fetchers`` per leader (Kafka's ``getFetcherId``:
    ``Utils.abs(31 * topic.hashCode + partition) % numFetchers``, in 32-bit arithmetic).

    >>> fetcher_id("orders", 0, 1), fetcher_id("orders", 0, 4), fetcher_id("orders", 1, 4)
    (0, 1, 0)
    """
    mixed = (31 * java_string_hash(topic) + partition) & 0xFFFFFFFF
    return kafka_abs(mixed - 2**32 if mixed >= 2**31 else mixed) % fetchers


class ReplicaFetcherManager:
    """Every partition this broker follows, fetched by ``num.replica.fetchers`` tasks per
    leader (module docs). :meth:`reconfigure` puts a new broker config in force (dynamic
    broker configs); each round reads the fetch keys anew."""

    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        clock: Clock,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        throttles: ReplicationThrottles | None = None,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.broker_id = broker_id
        self.security = security
        """How the connections to the leaders are secured (the inter-broker listener's)."""
        self.config = config
        self.clock = clock
        self.request_timeout_s = request_timeout_s
        self.throttles = throttles or ReplicationThrottles(broker_id, config)
        """The follower replication quota and its rules (the broker's, shared with its
        leader side)."""
        self._fetchers: dict[FetcherKey, LeaderFetcher] = {}
        self._fetcher_of: dict[PartitionKey, FetcherKey] = {}
        self.on_storage_error: Callable[[Partition, str], None] | None = None
        """Told of a disk error on a followed partition (its log directory goes offline:
        :meth:`Broker.storage_failed <sluice.broker.broker.Broker.storage_failed>`)."""

    def follow(
        self, partition: Partition, leader_id: int, leader: tuple[str, int], leader_epoch: int
    ) -> None:
        """Fetch ``partition`` (hosted here) from broker ``leader_id`` at ``leader`` (host,
        port) in ``leader_epoch``: start, or re-point it (a new leader, address or epoch, or
        again after it was fenced or failed). Call from the running event loop."""
        key = (partition.topic, partition.index)
        count = int(self.config["num.replica.fetchers"])
        wanted = (leader_id, fetcher_id(partition.topic, partition.index, count))
        previous = self._fetcher_of.get(key)
        if previous is not None and previous != wanted:
            self._remove(key)
        fetcher = self._fetchers.get(wanted)
        if fetcher is None:
            fetcher = self._fetchers[wanted] = LeaderFetcher(self, leader_id, leader, wanted[1])
        for other in self._fetchers.values():  # the leader's other fetchers too
            if other.leader_id == leader_id and other.address != leader:
                other.repoint(leader)
        self._fetcher_of[key] = wanted
        fetcher.add(partition, leader_epoch)

    def reconfigure(self, config: BrokerConfig) -> None:
        """Put a new broker config in force; a new ``num.replica.fetchers`` moves every
        partition to its fetcher at once (fetchers left with none stop)."""
        before = int(self.config["num.replica.fetchers"])
        self.config = config
        if int(config["num.replica.fetchers"]) == before:
            return
        log.info(
            "num.replica.fetchers: %d -> %d fetchers per leader",
            before,
            int(config["num.replica.fetchers"]),
        )
        for key, (leader_id, _) in list(self._fetcher_of.items()):
            current = self._fetchers[self._fetcher_of[key]]
            followed = current.partitions[key]
            self.follow(followed.partition, leader_id, current.address, followed.leader_epoch)

    def unfollow(self, partition: Partition) -> None:
        """Stop fetching ``partition`` (it is led here now, or no longer hosted); an answer in
        flight for it is dropped. A fetcher left with no partition stops."""
        self._remove((partition.topic, partition.index))

    def state(self, partition: Partition) -> FetchState | None:
        """Where the fetching of ``partition`` stands (None: not followed)."""
        key = (partition.topic, partition.index)
        fetcher = self._fetcher_of.get(key)
        if fetcher is None:
            return None
        return self._fetchers[fetcher].partitions[key].state

    async def close(self) -> None:
        """Stop every fetcher and close its connection."""
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        self._fetcher_of.clear()
        for fetcher in fetchers:
            fetcher.stop()
        for fetcher in fetchers:
            await fetcher.wait_stopped()

    def _remove(self, key: PartitionKey) -> None:
        where = self._fetcher_of.pop(key, None)
        if where is None:
            return
        fetcher = self._fetchers[where]
        fetcher.remove(key)
        if not fetcher.partitions:
            del self._fetchers[where]
            fetcher.stop()
