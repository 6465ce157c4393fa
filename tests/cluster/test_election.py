"""Kafka's leader election rules, as pure functions."""

from __future__ import annotations

from sluice.broker.cluster.election import (
    NO_LEADER,
    LeaderAndIsr,
    elect_controlled_shutdown,
    elect_offline,
    elect_preferred,
    elect_reassigned,
    remove_from_isr,
)

ASSIGNMENT = (1, 2, 3)


def test_offline_election_takes_the_first_live_in_sync_replica_in_assignment_order() -> None:
    state = LeaderAndIsr(1, 7, (3, 1, 2))
    assert elect_offline(ASSIGNMENT, state, {2, 3}, unclean=False) == LeaderAndIsr(2, 8, (3, 2))


def test_offline_election_never_picks_an_out_of_sync_replica_unless_unclean() -> None:
    state = LeaderAndIsr(1, 7, (1,))
    assert elect_offline(ASSIGNMENT, state, {2, 3}, unclean=False) is None
    assert elect_offline(ASSIGNMENT, state, {3}, unclean=True) == LeaderAndIsr(3, 8, (3,))
    assert elect_offline(ASSIGNMENT, state, set(), unclean=True) is None


def test_controlled_shutdown_moves_leadership_and_shrinks_the_isr() -> None:
    state = LeaderAndIsr(1, 2, (1, 2, 3))
    moved = elect_controlled_shutdown(ASSIGNMENT, state, {1, 2, 3}, shutting_down={1})
    assert moved == LeaderAndIsr(2, 3, (2, 3))
    alone = LeaderAndIsr(1, 2, (1,))
    assert elect_controlled_shutdown(ASSIGNMENT, alone, {1, 2, 3}, shutting_down={1}) is None


def test_preferred_election_needs_the_first_replica_live_and_in_sync() -> None:
    state = LeaderAndIsr(2, 5, (2, 3))
    assert elect_preferred(ASSIGNMENT, state, {1, 2, 3}) is None  # 1 not in sync yet
    caught_up = LeaderAndIsr(2, 5, (2, 3, 1))
    assert elect_preferred(ASSIGNMENT, caught_up, {1, 2, 3}) == LeaderAndIsr(1, 6, (2, 3, 1))
    assert elect_preferred(ASSIGNMENT, caught_up, {2, 3}) is None


def test_reassignment_elects_among_the_target_replicas() -> None:
    state = LeaderAndIsr(1, 5, (1, 2, 4))
    assert elect_reassigned((4, 2), state, {1, 2, 4}) == LeaderAndIsr(4, 6, (1, 2, 4))
    assert elect_reassigned((5,), state, {1, 2, 4, 5}) is None


def test_a_dead_follower_leaves_the_isr_and_a_dead_leader_leaves_the_partition_leaderless() -> None:
    state = LeaderAndIsr(1, 5, (1, 2))
    assert remove_from_isr(state, 2) == LeaderAndIsr(1, 6, (1,))
    assert remove_from_isr(state, 1) == LeaderAndIsr(NO_LEADER, 6, (2,))
    assert remove_from_isr(state, 3) == state
    last = LeaderAndIsr(1, 5, (1,))
    assert remove_from_isr(last, 1) == LeaderAndIsr(NO_LEADER, 6, (1,))  # the last one stays
