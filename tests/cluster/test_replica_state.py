"""A leader's high watermark, ISR shrink/expand and acks=all rules (Kafka's Partition.scala)."""

from __future__ import annotations

from sluice.broker.cluster.replica_state import AckState, ReplicaState

LAG = 30_000
LIVE = {1, 2, 3}


def _state(isr: set[int] | None = None) -> ReplicaState:
    return ReplicaState(leader=1, replicas=(1, 2, 3), isr=isr or {1, 2, 3}, now_ms=0)


def _hw(state: ReplicaState, leo: int, now: int = 0, min_isr: int = 1) -> int:
    return state.high_watermark(
        leader_leo=leo, min_isr=min_isr, now_ms=now, lag_max_ms=LAG, live=LIVE
    )


def test_the_high_watermark_is_the_slowest_in_sync_replica_and_never_goes_back() -> None:
    state = _state()
    state.fetched(2, 10, now_ms=5, leader_leo=10)
    state.fetched(3, 4, now_ms=5, leader_leo=10)
    assert _hw(state, 10, now=5) == 4
    state.fetched(3, 10, now_ms=6, leader_leo=12)
    assert _hw(state, 12, now=6) == 10
    state.isr = {1}  # the followers were dropped; a new follower restarts from 0
    state.followers[2].leo = 0
    assert _hw(state, 12, now=LAG + 100) == 12
    state.isr = {1, 2}
    assert _hw(state, 12, now=LAG + 100) == 12  # never backwards


def test_below_the_minimum_isr_the_high_watermark_stands_still() -> None:
    state = _state({1})
    assert _hw(state, 10, now=LAG + 1, min_isr=2) == 0
    assert _hw(state, 10, now=LAG + 1, min_isr=1) == 10
    single = ReplicaState(leader=1, replicas=(1,), isr={1}, now_ms=0)
    # the effective minimum is min(min.insync.replicas, replication factor)
    assert single.high_watermark(leader_leo=5, min_isr=2, now_ms=0, lag_max_ms=LAG, live={1}) == 5


def test_a_caught_up_follower_outside_the_isr_holds_the_high_watermark_back() -> None:
    state = _state({1, 2})
    state.fetched(2, 10, now_ms=1, leader_leo=10)
    state.fetched(3, 8, now_ms=1, leader_leo=8)  # caught up at 1, then the leader wrote more
    assert _hw(state, 10, now=1) == 8
    assert _hw(state, 10, now=LAG + 2) == 10  # no longer caught up recently: left behind


def test_a_follower_falls_out_of_sync_after_the_lag_time_without_catching_up() -> None:
    state = _state()
    state.fetched(2, 10, now_ms=1_000, leader_leo=10)
    state.fetched(3, 10, now_ms=1_000, leader_leo=10)
    # 2 keeps fetching but never reaches the LEO of the fetch before: stuck
    for now in range(2_000, 40_000, 1_000):
        state.fetched(2, 10, now_ms=now, leader_leo=10 + now)
    assert state.out_of_sync(now_ms=31_001, leader_leo=40_000, lag_max_ms=LAG) == [2, 3]
    assert state.out_of_sync(now_ms=30_999, leader_leo=40_000, lag_max_ms=LAG) == []


def test_a_follower_that_keeps_up_with_a_moving_leader_stays_in_sync() -> None:
    state = _state({1, 2})
    leo = 0
    for now in range(0, 100_000, 500):
        state.fetched(2, leo, now_ms=now, leader_leo=leo + 7)  # always reaches the last LEO
        leo += 7
    assert state.out_of_sync(now_ms=100_000, leader_leo=leo, lag_max_ms=LAG) == []


def test_a_follower_joins_once_at_the_high_watermark_and_the_epoch_start() -> None:
    state = _state({1, 2})
    state.fetched(2, 20, now_ms=0, leader_leo=20)
    state.fetched(3, 5, now_ms=0, leader_leo=20)
    assert _hw(state, 20, now=LAG + 1) == 20  # 3 is too far behind to wait for
    assert not state.may_join(3, epoch_start_offset=0, live=LIVE)
    state.fetched(3, 20, now_ms=LAG + 2, leader_leo=20)
    assert state.may_join(3, epoch_start_offset=20, live=LIVE)
    assert not state.may_join(3, epoch_start_offset=21, live=LIVE)
    assert not state.may_join(3, epoch_start_offset=0, live={1, 2})  # its broker is gone
    assert not state.may_join(2, epoch_start_offset=0, live=LIVE)  # already in


def test_acks_all_waits_for_the_high_watermark_then_checks_the_isr() -> None:
    state = _state()
    assert state.ack_state(5, min_isr=2) is AckState.WAITING
    state.fetched(2, 5, now_ms=0, leader_leo=5)
    state.fetched(3, 5, now_ms=0, leader_leo=5)
    _hw(state, 5)
    assert state.ack_state(5, min_isr=2) is AckState.DONE
    state.isr = {1}
    assert state.ack_state(5, min_isr=2) is AckState.NOT_ENOUGH_REPLICAS_AFTER_APPEND
