"""The fetch-session cache's rules as pure logic (:mod:`sluice.broker.fetch_session`): Kafka's
eviction order, the epochs, and what an incremental response lists. The protocol itself is
tested against a real broker in ``test_fetch_sessions.py``."""

from __future__ import annotations

import random

from kio.schema.errors import ErrorCode

from sluice.broker.fetch_session import (
    CachedPartition,
    FetchSessionCache,
    next_epoch,
)
from sluice.broker.protocol.fetch_response import PartitionAnswer

EVICTION_MS = 1000


def parts(n: int) -> dict[tuple[str | None, int], CachedPartition]:
    return {("t", i): CachedPartition("t", None) for i in range(n)}


def cache(slots: int) -> FetchSessionCache:
    return FetchSessionCache(slots, EVICTION_MS, rng=random.Random(7))


def test_a_full_cache_evicts_the_least_recently_used_session_once_stale() -> None:
    c = cache(2)
    a = c.maybe_create(0, False, False, parts(5))
    b = c.maybe_create(10, False, False, parts(5))
    assert a is not None and b is not None
    assert c.maybe_create(500, False, False, parts(9)) is None, "nothing stale, nothing aged"
    c.touch(a, 600)
    fresh = c.maybe_create(1011, False, False, parts(1))  # b unused for 1001 ms
    assert fresh is not None
    assert c.get(b.id) is None and c.get(a.id) is a
    assert c.evictions == 1


def test_a_consumer_may_evict_only_aged_sessions_worth_no_more_than_its_own() -> None:
    c = cache(2)
    small = c.maybe_create(0, False, False, parts(2))
    big = c.maybe_create(0, False, False, parts(8))
    assert small is not None and big is not None
    c.touch(small, 999)
    c.touch(big, 999)
    assert c.maybe_create(999, False, False, parts(3)) is None, "both still young"
    c.touch(small, 1500)  # lived 1500 ms now: evictable by all
    c.touch(big, 1500)
    assert c.maybe_create(1500, False, False, parts(1)) is None, "worth less than the smallest"
    third = c.maybe_create(1500, False, False, parts(3))
    assert third is not None and c.get(small.id) is None and c.get(big.id) is big


def test_a_follower_evicts_a_young_consumer_session_but_not_a_young_followers() -> None:
    c = cache(1)
    consumer = c.maybe_create(0, False, False, parts(50))
    assert consumer is not None
    follower = c.maybe_create(1, True, False, parts(1))
    assert follower is not None and c.get(consumer.id) is None
    assert c.maybe_create(2, True, False, parts(100)) is None, "a young follower's stays"
    assert c.maybe_create(3, False, False, parts(100)) is None


def test_no_slots_no_sessions_and_ids_are_unique_and_not_zero() -> None:
    assert cache(0).maybe_create(0, True, False, parts(1)) is None
    c = cache(100)
    ids = {s.id for s in (c.maybe_create(0, False, False, parts(1)) for _ in range(100)) if s}
    assert len(ids) == 100 and 0 not in ids


def test_epochs_wrap_to_one_and_final_stays_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1


def test_an_incremental_response_lists_a_partition_only_when_something_is_new() -> None:
    cached = CachedPartition("t", None)
    answer = PartitionAnswer(0, high_watermark=5, last_stable_offset=5, log_start_offset=0)
    assert cached.must_respond(answer), "first sight: -1 cached"
    assert not cached.must_respond(answer)
    for change in (
        PartitionAnswer(0, high_watermark=6, last_stable_offset=5, log_start_offset=0),
        PartitionAnswer(0, high_watermark=6, last_stable_offset=6, log_start_offset=0),
        PartitionAnswer(0, high_watermark=6, last_stable_offset=6, log_start_offset=2),
    ):
        assert cached.must_respond(change)
        assert not cached.must_respond(change)
    same = PartitionAnswer(0, high_watermark=6, last_stable_offset=6, log_start_offset=2)
    same.records = b"batch"
    assert cached.must_respond(same), "records are always answered"
    same.records = b""
    same.diverging_epoch = (3, 10)
    assert cached.must_respond(same), "a diverging epoch is always answered"
    error = PartitionAnswer(0, error_code=ErrorCode.not_leader_or_follower)
    assert cached.must_respond(error)
    assert cached.must_respond(error), "an error is always answered"
    back = PartitionAnswer(0, high_watermark=6, last_stable_offset=6, log_start_offset=2)
    assert cached.must_respond(back), "once the error is gone, the partition is sent again"
    assert not cached.must_respond(back)
