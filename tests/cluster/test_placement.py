"""Kafka's replica assignment (AdminUtils' examples and properties), as pure functions."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from kio.schema.errors import ErrorCode

from sluice.broker.cluster.placement import Broker, assign_replicas, rack_alternated
from sluice.broker.errors import KafkaError


def test_kafkas_rack_unaware_example() -> None:
    # AdminUtils' doc: 5 brokers, 10 partitions, 3 replicas, start 0
    got = assign_replicas([Broker(b) for b in range(5)], 10, 3, start=0)
    assert [got[p] for p in range(10)] == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
        [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2],
    ]  # fmt: skip


def test_kafkas_rack_aware_example() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(racks) == [0, 3, 1, 5, 4, 2]
    got = assign_replicas([Broker(b, r) for b, r in racks.items()], 7, 3, start=0)
    assert [got[p] for p in range(7)] == [
        [0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3], [0, 4, 2],
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_every_partition_has_distinct_replicas_spread_evenly(seed: int) -> None:
    rng = random.Random(seed)
    brokers = [Broker(b) for b in rng.sample(range(100), rng.randint(3, 7))]
    partitions = len(brokers) * rng.randint(1, 4)
    got = assign_replicas(brokers, partitions, 3, rng=rng)
    assert sorted(got) == list(range(partitions))
    assert all(len(set(replicas)) == 3 for replicas in got.values())
    leaders = Counter(replicas[0] for replicas in got.values())
    assert set(leaders.values()) == {partitions // len(brokers)}  # leaders spread evenly


@pytest.mark.parametrize("seed", range(20))
def test_with_racks_each_partition_spans_min_rf_racks(seed: int) -> None:
    rng = random.Random(seed)
    rack_count = rng.randint(2, 4)
    brokers = [Broker(b, f"r{b % rack_count}") for b in range(rng.randint(rack_count, 9))]
    rf = rng.randint(2, min(3, len(brokers)))
    got = assign_replicas(brokers, rng.randint(1, 20), rf, rng=rng)
    racks = {b.id: b.rack for b in brokers}
    for replicas in got.values():
        assert len(set(replicas)) == rf
        assert len({racks[r] for r in replicas}) == min(rf, rack_count)


def test_partitions_added_later_continue_the_leaders_round_robin() -> None:
    brokers = [Broker(b) for b in range(5)]
    whole = assign_replicas(brokers, 10, 3, start=0)
    later = assign_replicas(brokers, 4, 3, start=0, first_partition=6)
    assert sorted(later) == [6, 7, 8, 9]
    assert [later[p][0] for p in later] == [whole[p][0] for p in range(6, 10)]


@pytest.mark.parametrize(
    ("brokers", "partitions", "rf", "code", "message"),
    [
        ([Broker(1), Broker(2)], 1, 3, ErrorCode.invalid_replication_factor, "larger than"),
        ([Broker(1)], 1, 0, ErrorCode.invalid_replication_factor, "larger than 0"),
        ([Broker(1)], 0, 1, ErrorCode.invalid_partitions, "larger than 0"),
        ([Broker(1, "a"), Broker(2)], 1, 1, ErrorCode.invalid_replication_factor, "rack"),
    ],
)
def test_impossible_assignments_are_refused_with_kafkas_errors(
    brokers: list[Broker], partitions: int, rf: int, code: ErrorCode, message: str
) -> None:
    with pytest.raises(KafkaError, match=message) as caught:
        assign_replicas(brokers, partitions, rf)
    assert caught.value.code == code
