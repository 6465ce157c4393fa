"""Choosing the next record of a task that reads several partitions."""

from __future__ import annotations

from sluice.streams.runtime.partition_group import PartitionGroup


def test_smallest_timestamp_first_across_partitions() -> None:
    group = PartitionGroup([("orders", 0), ("customers", 0)], max_idle_ms=100)
    group.add(("orders", 0), ["o@10", "o@30"], [10, 30])
    group.add(("customers", 0), ["c@20"], [20])
    taken = [group.next(lambda p: False, now=0) for _ in range(4)]
    assert taken == ["o@10", "c@20", "o@30", None]


def test_waits_for_a_lagging_partition_once_then_processes_everything() -> None:
    group = PartitionGroup([("orders", 0), ("customers", 0)], max_idle_ms=100)
    group.add(("orders", 0), ["o1", "o2", "o3"], [1, 2, 3])

    def lagging(partition: tuple[str, int]) -> bool:
        return partition == ("customers", 0)

    assert group.next(lagging, now=1_000) is None  # the customers partition may hold older data
    assert group.next(lagging, now=1_050) is None
    # idle time is over: everything buffered goes, not one record per wait
    assert [group.next(lagging, now=1_100) for _ in range(4)] == ["o1", "o2", "o3", None]


def test_a_partition_that_catches_up_ends_the_wait() -> None:
    group = PartitionGroup([("a", 0), ("b", 0)], max_idle_ms=100)
    group.add(("a", 0), ["a1"], [5])
    assert group.next(lambda p: p == ("b", 0), now=0) is None
    group.add(("b", 0), ["b1"], [3])
    assert [group.next(lambda p: False, now=10) for _ in range(3)] == ["b1", "a1", None]
