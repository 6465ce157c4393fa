"""The quota manager on an injected clock: Kafka's sampled rate, its throttle time
``(rate - bound) / bound * span`` capped at the windows' length, the groups sharing a rate,
the file store's round trip, and the replication throttles' rate being the same class."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.broker.quotas.config import (
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    Entity,
)
from sluice.broker.quotas.manager import ClientQuotaManager
from sluice.broker.quotas.rate import SampledRate
from sluice.broker.quotas.store import FILE_NAME, FileQuotaStore
from sluice.broker.replication.quota import ReplicationQuota


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def manager(clock: Clock, configs: dict[Entity, dict[str, float]]) -> ClientQuotaManager:
    quotas = ClientQuotaManager(samples=11, window_s=1.0, clock=clock)
    quotas.configure(configs)
    return quotas


def test_throttle_time_is_kafkas_formula() -> None:
    clock = Clock()
    quotas = manager(clock, {Entity(None, "app"): {PRODUCER_BYTE_RATE: 1000.0}})
    assert quotas.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "app", 10_000) == 0  # 1000 B/s
    # 15000 B over 10 s: 1500 B/s, (1500 - 1000) / 1000 * 10 s = 5 s
    assert quotas.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "app", 5_000) == 5000
    assert quotas.throttled[PRODUCER_BYTE_RATE] == 1


def test_throttle_time_is_capped_at_the_windows() -> None:
    clock = Clock()
    quotas = manager(clock, {Entity(None, DEFAULT): {CONSUMER_BYTE_RATE: 10.0}})
    assert quotas.record(CONSUMER_BYTE_RATE, "u", "c", 10**9) == 11_000


def test_connections_of_a_group_share_its_rate_and_others_have_their_own() -> None:
    clock = Clock()
    quotas = manager(clock, {Entity(DEFAULT, None): {PRODUCER_BYTE_RATE: 100.0}})
    assert quotas.record(PRODUCER_BYTE_RATE, "alice", "one", 1000) == 0
    assert quotas.record(PRODUCER_BYTE_RATE, "alice", "two", 1000) > 0  # same user
    assert quotas.record(PRODUCER_BYTE_RATE, "bob", "one", 1000) == 0  # a user of its own
    assert quotas.rate(PRODUCER_BYTE_RATE, "alice", "x") == pytest.approx(200.0)


def test_the_rate_forgets_windows_older_than_the_samples() -> None:
    clock = Clock()
    quotas = manager(clock, {Entity(None, "app"): {REQUEST_PERCENTAGE: 50.0}})
    assert quotas.record(REQUEST_PERCENTAGE, "u", "app", 1000.0) > 0
    clock.now += 11.0
    assert quotas.rate(REQUEST_PERCENTAGE, "u", "app") == 0.0
    assert quotas.record(REQUEST_PERCENTAGE, "u", "app", 1.0) == 0


def test_unconfigured_is_disabled_and_reconfiguring_applies() -> None:
    clock = Clock()
    quotas = manager(clock, {})
    assert not quotas.enabled
    assert quotas.record(PRODUCER_BYTE_RATE, "u", "c", 10**9) == 0
    quotas.configure({Entity("u", None): {PRODUCER_BYTE_RATE: 1.0}})
    assert quotas.enabled
    assert quotas.record(PRODUCER_BYTE_RATE, "u", "c", 10**3) > 0
    quotas.configure({})
    assert not quotas.enabled


def test_a_steady_sender_is_held_to_the_bound() -> None:
    """A client that waits out each throttle time sends, on average, the bound."""
    clock = Clock()
    quotas = manager(clock, {Entity(None, "app"): {PRODUCER_BYTE_RATE: 10_000.0}})
    start, sent = clock.now, 0
    while clock.now < start + 110:
        sent += 2_000
        clock.now += max(quotas.record(PRODUCER_BYTE_RATE, "u", "app", 2_000), 1) / 1000
    assert sent / (clock.now - start) == pytest.approx(10_000, rel=0.15)


def test_the_replication_throttles_measure_with_the_same_rate() -> None:
    assert issubclass(ReplicationQuota, SampledRate)


def test_file_store_round_trip(tmp_path: Path) -> None:
    store = FileQuotaStore(tmp_path)
    assert store.load() == {}
    store.alter(Entity("alice", DEFAULT), {PRODUCER_BYTE_RATE: 1024.0}, set())
    store.alter(Entity(None, "app"), {REQUEST_PERCENTAGE: 12.5, CONSUMER_BYTE_RATE: 5.0}, set())
    store.alter(Entity(None, "app"), {}, {CONSUMER_BYTE_RATE})
    assert store.load() == {
        Entity("alice", DEFAULT): {PRODUCER_BYTE_RATE: 1024.0},
        Entity(None, "app"): {REQUEST_PERCENTAGE: 12.5},
    }
    store.alter(Entity("alice", DEFAULT), {}, {PRODUCER_BYTE_RATE})
    assert list(store.load()) == [Entity(None, "app")]


def test_file_store_refuses_a_bad_file(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("{not json")
    with pytest.raises(ValueError, match=FILE_NAME):
        FileQuotaStore(tmp_path).load()


def test_idle_groups_are_forgotten() -> None:
    clock = Clock()
    quotas = manager(clock, {Entity(None, DEFAULT): {PRODUCER_BYTE_RATE: 100.0}})
    for i in range(1024):
        quotas.record(PRODUCER_BYTE_RATE, "u", f"client-{i}", 10)
    clock.now += 12.0  # every window expired
    quotas.record(PRODUCER_BYTE_RATE, "u", "late", 10)
    assert quotas.rate(PRODUCER_BYTE_RATE, "u", "late") > 0
    assert quotas.measured == 1
