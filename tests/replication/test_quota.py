"""The replication quota (Kafka's ``ReplicationQuotaManager``) with an injected clock: its rate
over sampled windows, when it is exceeded, how long until it is not, and the throttle rules of
both sides (throttled replicas, the ISR, the bytes recorded)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from sluice.broker.replication.quota import (
    UNLIMITED,
    ReplicationQuota,
    ReplicationThrottles,
    lists_replica,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_unlimited_quota_is_never_exceeded() -> None:
    clock = Clock()
    quota = ReplicationQuota(clock=clock)
    quota.record(10**12)
    assert not quota.exceeded()
    assert quota.delay_s() == 0.0


def test_rate_counts_at_least_samples_minus_one_windows() -> None:
    clock = Clock()
    quota = ReplicationQuota(1000, samples=11, window_s=1.0, clock=clock)
    quota.record(5000)
    assert quota.rate() == pytest.approx(500.0), "5000 bytes over the 10 s a new rate assumes"
    clock.now += 20
    quota.record(1000)
    assert quota.rate() == pytest.approx(100.0), "the first window expired after 11 windows"


def test_exceeded_while_above_the_bound_then_released_by_time() -> None:
    clock = Clock()
    quota = ReplicationQuota(1000, samples=3, window_s=1.0, clock=clock)
    quota.record(2000)
    assert not quota.exceeded(), "2000 bytes in 2 s is the bound itself"
    quota.record(100)
    assert quota.exceeded()
    delay = quota.delay_s()
    assert 0 < delay <= 2.0
    clock.now += 0.001
    assert quota.exceeded(), "still above the bound a moment later"
    clock.now += 3.0  # every window with the bytes has expired
    assert not quota.exceeded()
    assert quota.delay_s() == 0.0


@pytest.mark.parametrize("samples", [11, 3])
def test_steady_flow_is_held_to_the_bound(samples: int) -> None:
    """A sender that sends 16 KiB every 10 ms whenever the quota allows moves, over five
    minutes, the bound (the first burst, and the bursts of each cycle of ``samples`` windows,
    averaged out)."""
    clock = Clock()
    bound = 200_000
    quota = ReplicationQuota(bound, samples=samples, window_s=1.0, clock=clock)
    sent = 0
    for _ in range(30_000):
        if not quota.exceeded():
            quota.record(16_384)
            sent += 16_384
        clock.now += 0.01
    assert sent / 300 == pytest.approx(bound, rel=0.05), f"rate {sent / 300:.0f} for {bound}"


def test_configure_changes_bound_and_restarts_on_new_windows() -> None:
    clock = Clock()
    quota = ReplicationQuota(1000, samples=3, window_s=1.0, clock=clock)
    quota.record(5000)
    assert quota.exceeded()
    quota.configure(10_000, 3, 1.0)
    assert not quota.exceeded(), "a higher bound"
    quota.configure(1000, 5, 2.0)
    assert quota.rate() == 0.0, "new windows: measured anew"
    quota.configure(UNLIMITED, 5, 2.0)
    assert not quota.limited


@pytest.mark.parametrize(
    ("entries", "partition", "broker", "expected"),
    [
        ([], 0, 1, False),
        (["*"], 3, 7, True),
        (["0:1", "1:2"], 0, 1, True),
        (["0:1", "1:2"], 0, 2, False),
        (["0:1", "1:2"], 1, 2, True),
        (["10:1"], 1, 1, False),
    ],
)
def test_lists_replica(entries: list[str], partition: int, broker: int, expected: bool) -> None:
    assert lists_replica(entries, partition, broker) is expected


# -- the rules of both sides, on stand-ins of a partition ------------------------------------


@dataclass
class FakeLog:
    config: dict[str, Any]


@dataclass
class FakeLeadership:
    isr: tuple[int, ...]


@dataclass
class FakePartition:
    index: int
    log: FakeLog
    leadership: FakeLeadership | None = None
    adding_replicas: tuple[int, ...] = ()
    replication_bytes_in: int = 0
    replication_bytes_out: int = 0
    reassignment_bytes_in: int = 0
    reassignment_bytes_out: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _config(leader: int = UNLIMITED, follower: int = UNLIMITED) -> dict[str, Any]:
    return {
        "leader.replication.throttled.rate": leader,
        "follower.replication.throttled.rate": follower,
        "replication.quota.window.num": 3,
        "replication.quota.window.size.seconds": 1,
    }


def _partition(leader: list[str], follower: list[str], **kwargs: Any) -> Any:
    config = {
        "leader.replication.throttled.replicas": leader,
        "follower.replication.throttled.replicas": follower,
    }
    return FakePartition(0, FakeLog(config), **kwargs)


def test_leader_holds_back_only_throttled_out_of_isr_followers_over_quota() -> None:
    clock = Clock()
    throttles = ReplicationThrottles(1, _config(leader=1000), clock=clock)
    throttled = _partition(["0:1"], [], leadership=FakeLeadership((1, 2)))
    free = _partition(["0:2"], [], leadership=FakeLeadership((1, 2)))
    assert not throttles.leader_holds_back(throttled, 3), "quota not exceeded yet"
    throttles.sent(throttled, 5000)
    assert throttles.leader.exceeded()
    assert throttles.leader_holds_back(throttled, 3), "follower 3 is out of the ISR"
    assert not throttles.leader_holds_back(throttled, 2), "an in-sync follower is never held"
    assert not throttles.leader_holds_back(free, 3), "the list names another leader"
    throttles.sent(free, 10**6)
    assert throttles.leader.rate() == pytest.approx(2500.0), "only throttled bytes recorded"
    assert (throttled.replication_bytes_out, free.replication_bytes_out) == (5000, 10**6)


def test_reassignment_bytes_count_while_replicas_are_added() -> None:
    throttles = ReplicationThrottles(2, _config())
    moving = _partition([], [], adding_replicas=(2,))
    other = _partition([], [], adding_replicas=(3,))
    throttles.sent(moving, 100)
    throttles.received(moving, 40)
    throttles.received(other, 7)
    assert (moving.reassignment_bytes_out, moving.reassignment_bytes_in) == (100, 40)
    assert other.reassignment_bytes_in == 0, "broker 2 is not the replica being added"
    assert other.replication_bytes_in == 7


def test_follower_holds_back_throttled_partitions_not_in_sync() -> None:
    clock = Clock()
    throttles = ReplicationThrottles(3, _config(follower=1000), clock=clock)
    throttled = _partition([], ["0:3"])
    free = _partition([], ["0:4"])
    throttles.received(throttled, 3000)
    throttles.received(free, 10**6)
    assert throttles.follower.rate() == pytest.approx(1500.0)
    assert throttles.follower_holds_back(throttled, in_sync=False)
    assert not throttles.follower_holds_back(throttled, in_sync=True)
    assert not throttles.follower_holds_back(free, in_sync=False)
    clock.now += 10
    assert not throttles.follower_holds_back(throttled, in_sync=False), "the windows expired"
