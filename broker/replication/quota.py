"""Replication throttles (KIP-73): Kafka's ``ReplicationQuotaManager``, one for each side of
replication on this broker, and the rule that decides which partitions they hold back.

Two rates, in bytes per second, set as dynamic broker configs on each broker (AlterConfigs on
the BROKER resource named by its id, or at the ``""`` default level of that broker):
``leader.replication.throttled.rate`` caps what this broker, as a leader, sends to
followers of its *throttled* partitions; ``follower.replication.throttled.rate`` caps what it
fetches, as a follower, of its throttled partitions. Which partitions are throttled is a topic
config: ``leader.replication.throttled.replicas`` lists ``partition:broker`` pairs (or ``*``, all
of them) whose broker, while leading the partition, is throttled; likewise
``follower.replication.throttled.replicas`` for the broker copying it. Both default to nothing
and the rates to unlimited (``Long.MAX_VALUE``): without configs nothing is ever held back.

The rules, as Kafka's ``ReplicaManager.shouldLeaderThrottle`` and
``ReplicaFetcherThread.shouldFollowerThrottle``:

- a leader answering a replica Fetch leaves out the records of a partition that is throttled
  for it and whose fetching follower is not in the ISR, while its leader quota is exceeded; it
  records the bytes it does send of throttled partitions (in-sync followers included);
- a follower leaves out of its Fetch the throttled partitions it is not in sync with (its log
  did not reach the leader's high watermark at the last answer) while its follower quota is
  exceeded, and records the bytes it receives of throttled partitions;
- an in-sync replica is never held back, so a throttle cannot make a partition under-replicated.

:class:`ReplicationQuota` is Kafka's quota sensor: a rate over ``samples`` windows of ``window_s``
seconds (``replication.quota.window.num`` × ``replication.quota.window.size.seconds``, 11 × 1 s by
default), exceeded while the measured rate is above the bound. The windows are aligned on the
clock; the rate is the bytes of the current window and the ``samples - 1`` before it over the time
they span (``samples - 1`` windows and the elapsed part of the current one), so that, as Kafka's
``Rate``, a new throttle lets about ``(samples - 1) × window × rate`` bytes through at once, and
then holds the average over each cycle of ``samples`` windows to the bound (sending in bursts
of that cycle). The clock is injected (seconds, monotonic). Not thread-safe: the broker's event
loop only; nothing is written to disk.

>>> now = [0.0]
>>> quota = ReplicationQuota(1000, samples=3, window_s=1.0, clock=lambda: now[0])
>>> quota.record(1500); quota.exceeded()   # 1500 bytes over the 2 s a new rate assumes
False
>>> quota.record(1000); quota.exceeded()
True
>>> now[0] = 3.5; quota.exceeded()         # the first window has expired
False
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sluice.broker.quotas.rate import SampledRate, throttle_s

if TYPE_CHECKING:
    from sluice.broker.topics import Partition

__all__ = [
    "FOLLOWER_RATE",
    "FOLLOWER_REPLICAS",
    "LEADER_RATE",
    "LEADER_REPLICAS",
    "UNLIMITED",
    "ReplicationQuota",
    "ReplicationThrottles",
    "Settings",
    "lists_replica",
]

UNLIMITED = 2**63 - 1
"""The rate of a side without throttle (Kafka's ``QuotaConfig.QUOTA_BYTES_PER_SECOND_DEFAULT``)."""
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
WINDOW_NUM = "replication.quota.window.num"
WINDOW_SIZE = "replication.quota.window.size.seconds"


def lists_replica(entries: Sequence[str], partition: int, broker_id: int) -> bool:
    """Whether a throttled-replicas list (``["0:1", "1:2"]`` or ``["*"]``) names the replica of
    ``partition`` on ``broker_id`` (Kafka's ``TopicConfigHandler.parseThrottledPartitions``).

    >>> lists_replica(["0:1", "1:2"], 1, 2), lists_replica(["0:1"], 0, 2)
    (True, False)
    >>> lists_replica(["*"], 5, 9)
    True
    """
    if not entries:
        return False
    return entries[0] == "*" or f"{partition}:{broker_id}" in entries


class Settings(Protocol):
    """Where the rates and windows are read: the effective broker config (a mapping will do)."""

    def __getitem__(self, key: str, /) -> Any: ...


class ReplicationQuota(SampledRate):
    """A byte rate bounded by ``rate`` bytes/s, measured over ``samples`` windows of
    ``window_s`` seconds (:class:`~sluice.broker.quotas.rate.SampledRate`, the client quotas'
    too). ``rate`` :data:`UNLIMITED`: never exceeded."""

    def __init__(
        self,
        rate: int = UNLIMITED,
        *,
        samples: int = 11,
        window_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(samples=samples, window_s=window_s, clock=clock)
        self.bound = rate

    @property
    def limited(self) -> bool:
        """Whether a bound is set (the rate is not :data:`UNLIMITED`)."""
        return self.bound < UNLIMITED

    def exceeded(self) -> bool:
        """Whether the measured rate is above the bound (never, unlimited)."""
        return self.bound < UNLIMITED and self.rate() > self.bound

    def delay_s(self) -> float:
        """How long, with nothing more recorded, until the quota is no longer exceeded
        (Kafka's ``QuotaUtils.throttleTime``: (rate - bound) / bound × window); 0 when it
        is not exceeded."""
        if self.bound >= UNLIMITED:
            return 0.0
        return throttle_s(self.rate(), max(self.bound, 1), max(self.samples - 1, 1) * self.window_s)

    def configure(self, rate: int, samples: int, window_s: float) -> None:
        """New bound and windows (dynamic broker configs); a new window size starts the
        measurement over."""
        self.reconfigure(samples, window_s)
        self.bound = rate


class ReplicationThrottles:
    """This broker's two replication quotas (:attr:`leader`, :attr:`follower`) and the rules
    of the module docs, read from the broker config (:meth:`configure`) and from each
    partition's topic config (its log's)."""

    def __init__(
        self,
        broker_id: int,
        config: Settings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.broker_id = broker_id
        self.leader = ReplicationQuota(clock=clock)
        self.follower = ReplicationQuota(clock=clock)
        if config is not None:
            self.configure(config)

    def configure(self, config: Settings) -> None:
        """Put the rates and windows of a (new) effective broker config in force."""
        samples = int(config[WINDOW_NUM])
        window_s = float(config[WINDOW_SIZE])
        self.leader.configure(int(config[LEADER_RATE]), samples, window_s)
        self.follower.configure(int(config[FOLLOWER_RATE]), samples, window_s)

    # -- the leader's side ----------------------------------------------------------------------

    def leader_throttled(self, partition: Partition) -> bool:
        """Whether ``partition``'s topic throttles this broker's replica as a leader."""
        entries = partition.log.config.get(LEADER_REPLICAS, ())
        return lists_replica(entries, partition.index, self.broker_id)

    def leader_holds_back(self, partition: Partition, replica_id: int) -> bool:
        """Whether a replica Fetch from ``replica_id`` leaves out ``partition``'s records:
        the leader quota exceeded, the follower not in the ISR, the partition throttled."""
        leadership = partition.leadership
        return (
            self.leader.exceeded()
            and leadership is not None
            and replica_id not in leadership.isr
            and self.leader_throttled(partition)
        )

    def sent(self, partition: Partition, size: int) -> None:
        """The leader sends ``size`` bytes of ``partition`` to a follower: the replication (and
        reassignment) bytes out, and the leader quota when the partition is throttled."""
        partition.replication_bytes_out += size
        if partition.adding_replicas:
            partition.reassignment_bytes_out += size
        if self.leader.limited and self.leader_throttled(partition):
            self.leader.record(size)

    # -- the follower's side --------------------------------------------------------------------

    def follower_throttled(self, partition: Partition) -> bool:
        """Whether ``partition``'s topic throttles this broker's replica as a follower."""
        entries = partition.log.config.get(FOLLOWER_REPLICAS, ())
        return lists_replica(entries, partition.index, self.broker_id)

    def follower_holds_back(self, partition: Partition, in_sync: bool) -> bool:
        """Whether this follower leaves ``partition`` out of its next Fetch: the follower
        quota exceeded, the replica not in sync, the partition throttled."""
        return not in_sync and self.follower.exceeded() and self.follower_throttled(partition)

    def received(self, partition: Partition, size: int) -> None:
        """The follower received ``size`` bytes of ``partition``: the replication (and
        reassignment, when this replica is being added) bytes in, and the follower quota when
        the partition is throttled."""
        partition.replication_bytes_in += size
        if self.broker_id in partition.adding_replicas:
            partition.reassignment_bytes_in += size
        if self.follower.limited and self.follower_throttled(partition):
            self.follower.record(size)
