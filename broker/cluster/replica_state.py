"""A partition leader's view of its followers: Kafka's high watermark, ISR and ``acks=all``
rules (``Partition.scala``), with the clock passed in.

A follower acknowledges by fetching: its fetch offset *is* its log end offset (LEO). From the
followers' LEOs the leader derives:

- **the high watermark** — the smallest LEO of the leader and every in-sync replica (and of a
  live follower caught up within the lag time but not yet added, so that it is not left
  behind); it never moves
  back, and it does not move while the ISR is smaller than the effective
  ``min.insync.replicas`` (``min(min.insync.replicas, replication factor)``: Kafka 3.7's rule,
  KAFKA-15583), so records written with ``acks=1`` then stay invisible until the ISR recovers;
- **who falls out of sync** — a follower whose LEO is not the leader's and that has not been
  caught up for ``replica.lag.time.max.ms``. "Caught up" is Kafka's ``lastCaughtUpTimeMs``: a
  fetch at the leader's LEO counts at its own time, a fetch at the LEO the leader had at the
  follower's previous fetch counts at that previous fetch's time;
- **who may join** — a follower whose LEO reached the high watermark and the start offset of
  the leader's current epoch;
- **when ``acks=all`` is done** — the high watermark passed the batch and the ISR still has
  the minimum (else ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``: the batch is in the log).

>>> state = ReplicaState(leader=1, replicas=(1, 2, 3), isr={1, 2, 3}, now_ms=0)
>>> state.fetched(2, 10, now_ms=100, leader_leo=10)
>>> state.fetched(3, 7, now_ms=100, leader_leo=10)
>>> state.high_watermark(leader_leo=10, min_isr=2, now_ms=100, lag_max_ms=30_000, live={1, 2, 3})
7
>>> state.out_of_sync(now_ms=30_100, leader_leo=10, lag_max_ms=30_000)
[3]
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum

__all__ = ["AckState", "FollowerState", "ReplicaState"]


@dataclass
class FollowerState:
    """What the leader knows of one follower (Kafka's ``Replica``)."""

    leo: int = -1
    """Its log end offset: the offset of its last fetch (-1: none yet)."""
    last_fetch_ms: int = -1
    leader_leo_at_last_fetch: int = -1
    last_caught_up_ms: int = 0
    log_start: int = -1
    """Its log start offset, as its last fetch told (-1: not told)."""


class AckState(Enum):
    """Where an ``acks=all`` write stands."""

    WAITING = "waiting"
    DONE = "done"
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = "not_enough_replicas_after_append"


class ReplicaState:
    """The leader's record of its followers and its high watermark; see the module docstring.

    ``isr`` is the committed ISR (what the controller's state holds); ``now_ms`` counts as the
    moment each follower was last caught up (a new leader gives its followers a full lag
    interval, as Kafka does on becoming leader).
    """

    def __init__(
        self, leader: int, replicas: Sequence[int], isr: Collection[int], now_ms: int
    ) -> None:
        self.leader = leader
        self.replicas = tuple(replicas)
        self.isr = set(isr)
        self.followers = {
            replica: FollowerState(last_caught_up_ms=now_ms)
            for replica in self.replicas
            if replica != leader
        }
        self.hw = 0

    def set_replicas(self, replicas: Sequence[int]) -> None:
        """The partition's replicas changed (a reassignment): a new follower starts unknown and
        not caught up (so that it holds nothing back until it is), a removed one is forgotten.

        >>> state = ReplicaState(leader=1, replicas=(1, 2), isr={1, 2}, now_ms=0)
        >>> state.set_replicas((1, 2, 3))
        >>> state.followers[3]
        FollowerState(leo=-1, last_fetch_ms=-1, leader_leo_at_last_fetch=-1, last_caught_up_ms=0,
                      log_start=-1)
        >>> state.set_replicas((1, 3))
        >>> sorted(state.followers)
        [3]
        """
        self.replicas = tuple(replicas)
        for replica in self.replicas:
            if replica != self.leader and replica not in self.followers:
                self.followers[replica] = FollowerState()
        for gone in [r for r in self.followers if r not in self.replicas]:
            del self.followers[gone]

    def fetched(
        self, replica: int, fetch_offset: int, *, now_ms: int, leader_leo: int, log_start: int = -1
    ) -> None:
        """A fetch from ``replica`` at ``fetch_offset`` while the leader's LEO was
        ``leader_leo``: its LEO, and when it was last caught up (Kafka's rule); ``log_start``
        is the log start offset the fetch told (-1: none)."""
        follower = self.followers[replica]
        follower.log_start = log_start
        if fetch_offset >= leader_leo:
            follower.last_caught_up_ms = now_ms
        elif fetch_offset >= follower.leader_leo_at_last_fetch >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.leo = fetch_offset
        follower.last_fetch_ms = now_ms
        follower.leader_leo_at_last_fetch = leader_leo

    def high_watermark(
        self, *, leader_leo: int, min_isr: int, now_ms: int, lag_max_ms: int, live: Collection[int]
    ) -> int:
        """Advance the high watermark as far as the in-sync replicas allow and return it.

        A live follower outside the ISR that was caught up within ``lag_max_ms`` counts too (it
        is about to join: the high watermark waits for it rather than leave it behind)."""
        if len(self.isr) < min(min_isr, len(self.replicas)):
            return self.hw
        ends = [leader_leo]
        for replica, follower in self.followers.items():
            joining = replica in live and now_ms - follower.last_caught_up_ms <= lag_max_ms
            if replica in self.isr or (joining and follower.leo >= 0):
                ends.append(max(follower.leo, 0))
        self.hw = max(self.hw, min(ends))
        return self.hw

    def out_of_sync(self, *, now_ms: int, leader_leo: int, lag_max_ms: int) -> list[int]:
        """The in-sync followers to drop: behind the leader and not caught up for
        ``lag_max_ms``."""
        return sorted(
            replica
            for replica, follower in self.followers.items()
            if replica in self.isr
            and follower.leo != leader_leo
            and now_ms - follower.last_caught_up_ms > lag_max_ms
        )

    def may_join(self, replica: int, *, epoch_start_offset: int, live: Collection[int]) -> bool:
        """Whether an out-of-sync follower has caught up enough to enter the ISR."""
        follower = self.followers.get(replica)
        return (
            follower is not None
            and replica not in self.isr
            and replica in live
            and follower.leo >= self.hw
            and follower.leo >= epoch_start_offset
        )

    def ack_state(self, required_offset: int, *, min_isr: int) -> AckState:
        """Where an ``acks=all`` batch ending before ``required_offset`` stands."""
        if self.hw < required_offset:
            return AckState.WAITING
        if len(self.isr) < min(min_isr, len(self.replicas)):
            return AckState.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return AckState.DONE
