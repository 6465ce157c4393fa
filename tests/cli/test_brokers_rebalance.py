"""``sluice brokers rebalance``'s plan (:func:`sluice.cli.brokers.balanced`): a broker added to
a cluster gets its share of replicas and preferred leaderships, with the fewest moves, racks
kept apart; a balanced cluster moves nothing. The command itself runs against a real cluster
in ``tests/platform/test_up_cluster.py`` (``rebalance_on_add``)."""

from __future__ import annotations

from collections import Counter

import pytest

from sluice.cli.brokers import balanced
from sluice.cli.partitions import Plan

THREE_ON_THREE: Plan = {("t", p): [1 + (p + i) % 3 for i in range(3)] for p in range(6)}
"""Six partitions, RF 3, on brokers 1-3: each holds six replicas and leads two."""


def applied(current: Plan, plan: Plan) -> Plan:
    return {**current, **plan}


def counts(plan: Plan) -> tuple[Counter[int], Counter[int]]:
    held = Counter(r for replicas in plan.values() for r in replicas)
    led = Counter(replicas[0] for replicas in plan.values())
    return held, led


def test_a_balanced_cluster_moves_nothing() -> None:
    assert balanced(THREE_ON_THREE, [1, 2, 3], {}) == {}


def test_an_added_broker_gets_its_share_of_replicas_and_leaders() -> None:
    plan = balanced(THREE_ON_THREE, [1, 2, 3, 4], {})
    after = applied(THREE_ON_THREE, plan)
    held, led = counts(after)
    assert sorted(held.values()) == [4, 4, 5, 5]  # 18 replicas over 4 brokers
    assert max(led.values()) - min(led[b] for b in (1, 2, 3, 4)) <= 1
    assert all(len(set(r)) == 3 for r in after.values())  # still three distinct replicas
    # the fewest moves: exactly the replicas broker 4 takes (4 or 5) change brokers
    moved = sum(len(set(after[tp]) - set(THREE_ON_THREE[tp])) for tp in after)
    assert moved == held[4]


def test_a_move_never_narrows_a_partition_s_racks() -> None:
    current: Plan = {("t", p): [1, 2] for p in range(4)}
    racks = {1: "a", 2: "b", 3: "a"}  # 3 shares a rack with 1
    plan = balanced(current, [1, 2, 3], racks)
    after = applied(current, plan)
    assert all({racks[r] for r in replicas} == {"a", "b"} for replicas in after.values())
    held, _ = counts(after)
    assert held[3] > 0  # it took 1's place, not 2's


def test_brokers_left_out_keep_their_replicas() -> None:
    current: Plan = {("t", 0): [5, 1], ("t", 1): [1, 5], ("t", 2): [1, 2]}
    after = applied(current, balanced(current, [1, 2], {}))
    assert [r for replicas in after.values() for r in replicas].count(5) == 2


@pytest.mark.parametrize("brokers", [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6, 7]])
def test_more_brokers_than_a_partition_s_replicas(brokers: list[int]) -> None:
    after = applied(THREE_ON_THREE, balanced(THREE_ON_THREE, brokers, {}))
    held, _ = counts(after)
    full = Counter(dict.fromkeys(brokers, 0)) + held
    assert max(full[b] for b in brokers) - min(full[b] for b in brokers) <= 1
