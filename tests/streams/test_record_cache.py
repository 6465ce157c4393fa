"""Record caches (statestore.cache.max.bytes): updates of a key between commits go downstream
and to the changelog once; evictions under a small budget forward early and stay correct."""

from __future__ import annotations

import collections
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.dsl import App, SessionWindows, TimeWindows
from sluice.streams.config import StreamsConfig
from sluice.streams.driver import TestDriver
from sluice.streams.errors import StreamsError
from sluice.streams.state.cache import ThreadCache
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import produce, read, wait_for

WORDS = ["a", "b", "c", "d", "e", "f"]


def _lines(n: int, seed: int = 7) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    return [
        (f"k{rng.randrange(4)}", " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6))), t)
        for t in range(n)
    ]


def _commit_batch(driver: TestDriver, topic: str, records: list[tuple[Any, Any, int]]) -> None:
    """Process ``records`` as one commit interval of the runtime: many records, one commit."""
    task = driver._task_by_topic[topic]
    source = task.sources[topic]
    node = driver.topology.nodes[source.name]
    for offset, (key, value, timestamp) in enumerate(records):
        task.process(
            topic,
            0,
            offset,
            node.key_serde.serialize(key),  # type: ignore[union-attr]
            node.value_serde.serialize(value),  # type: ignore[union-attr]
            timestamp,
            (),
        )
    driver._commit()


def _word_counts(cache_bytes: int, *, caching: bool = True) -> App:
    app = App("cache", stores="memory", statestore_cache_max_bytes=cache_bytes)
    counts = (
        app.stream("lines")
        .flat_map_values(str.split)
        .group_by_key()
        .count(name="counts", caching=caching)
    )
    counts.to_stream().to("counts-out")
    return app


def _changes(driver: TestDriver, topic: str) -> list[tuple[Any, Any, int]]:
    return [(r.key, r.value, r.timestamp) for r in driver.read_output(topic)]


def _per_key(records: list[tuple[Any, Any, int]]) -> collections.Counter[Any]:
    return collections.Counter(key for key, _, _ in records)


def _latest(records: list[tuple[Any, Any, int]]) -> dict[Any, Any]:
    return {key: value for key, value, _ in records}


def _live(records: list[tuple[Any, Any, int]]) -> dict[Any, Any]:
    return {key: value for key, value in _latest(records).items() if value is not None}


def test_one_record_updating_a_key_many_times_forwards_it_once() -> None:
    with _word_counts(10_000).test_driver() as cached, _word_counts(0).test_driver() as plain:
        for d in (cached, plain):
            d.pipe("lines", "k", "a b a", timestamp=5)
            d.pipe("lines", "k", "c", timestamp=6)
        assert _changes(cached, "counts-out") == [("k", 3, 5), ("k", 4, 6)]
        assert _changes(plain, "counts-out") == [("k", 1, 5), ("k", 2, 5), ("k", 3, 5), ("k", 4, 6)]


def test_caching_false_on_the_store_forwards_every_update() -> None:
    with _word_counts(10_000, caching=False).test_driver() as d:
        d.pipe("lines", "k", "a b a", timestamp=5)
        assert _changes(d, "counts-out") == [("k", 1, 5), ("k", 2, 5), ("k", 3, 5)]


def test_per_commit_at_most_one_downstream_and_one_changelog_record_per_key() -> None:
    records = _lines(400)
    with _word_counts(1_000_000).test_driver() as cached, _word_counts(0).test_driver() as plain:
        for start in range(0, len(records), 50):  # eight commits of fifty records
            batch = records[start : start + 50]
            for d in (cached, plain):
                before = len(d.read_raw("cache-counts-changelog"))
                _commit_batch(d, "lines", batch)
                logged = d.read_raw("cache-counts-changelog")[before:]
                assert max(collections.Counter(k for k, *_ in logged).values()) == 1, logged
            out = _changes(cached, "counts-out")
            assert max(_per_key(out).values()) == 1, out
            assert len(_changes(plain, "counts-out")) > len(out)  # every word of the batch
        assert cached.store("counts").get("k1") == plain.store("counts").get("k1")
        assert dict(cached.store("counts").all()) == dict(plain.store("counts").all())


def test_a_tiny_budget_evicts_early_and_the_results_stay_exact() -> None:
    """Under a budget of a few entries the cache forwards before the commit; every forwarded
    change carries, as old value, the new value forwarded before it (KTable semantics)."""
    records = [(f"k{i % 25}", "a b", i) for i in range(300)]
    app = App("tiny", stores="memory", statestore_cache_max_bytes=300)
    table = app.stream("lines").flat_map_values(str.split).group_by_key().count(name="counts")
    table.to_stream().to("counts-out")
    with app.test_driver() as d:
        _commit_batch(d, "lines", records)  # one commit interval
        assert d.thread_cache.evictions > 0
        out = _changes(d, "counts-out")
    assert 25 < len(out) < 600  # forwarded early, yet folded
    assert _latest(out) == {f"k{i}": 24 for i in range(25)}


def test_old_values_chain_through_evictions() -> None:
    app = App("chain", stores="memory", statestore_cache_max_bytes=200)
    counts = app.stream("lines").flat_map_values(str.split).group_by_key().count(name="counts")
    # a re-grouped table sees Change(new, old): count its rows per group through a subtractor
    regrouped = counts.group_by(lambda k, n: ("all", n)).aggregate(
        lambda: 0, lambda k, n, total: total + n, lambda k, n, total: total - n, name="total"
    )
    regrouped.to_stream().to("total-out")
    records = [(f"k{i % 9}", "x y z", i) for i in range(90)]
    with app.test_driver() as d:
        _commit_batch(d, "lines", records)
        assert d.thread_cache.evictions > 0
        total = _latest(_changes(d, "total-out"))
    assert total == {"all": 270}  # each old value was subtracted exactly once


def test_windowed_and_session_results_match_without_cache() -> None:
    def build(cache_bytes: int) -> App:
        app = App("w", stores="memory", statestore_cache_max_bytes=cache_bytes)
        clicks = app.stream("clicks").flat_map_values(lambda v: [v] * 3).group_by_key()
        clicks.windowed_by(TimeWindows.of(10)).count(name="w").to_stream().to("w-out")
        clicks.windowed_by(SessionWindows.with_inactivity_gap(5)).count(name="s").to_stream().to(
            "s-out"
        )
        return app

    records = [("u", {}, t) for t in (1, 3, 12, 8, 30, 33, 20, 26)]
    with build(1_000_000).test_driver() as cached, build(0).test_driver() as plain:
        for d in (cached, plain):
            for start in range(0, len(records), 3):
                _commit_batch(d, "clicks", records[start : start + 3])
        for topic in ("w-out", "s-out"):
            got, want = _changes(cached, topic), _changes(plain, topic)
            # sessions merged away before a commit were never forwarded, so not retracted
            assert _live(got) == _live(want), (topic, got, want)
            assert len(got) < len(want)


def test_a_session_merged_within_one_commit_is_never_forwarded() -> None:
    app = App("s", stores="memory")
    counts = (
        app.stream("clicks")
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(5).grace(100))
        .count()
    )
    counts.to_stream().to("s-out")
    with app.test_driver() as d:
        _commit_batch(d, "clicks", [("u", {}, 1), ("u", {}, 10), ("u", {}, 5)])
        out = [(r.key.start, r.key.end, r.value) for r in d.read_output("s-out")]
    assert out == [(1, 10, 3)]  # [1,1], [10,10] and [5,5] merged before anyone saw them


def test_the_budget_is_a_setting_under_kafka_names() -> None:
    assert StreamsConfig("a").statestore_cache_max_bytes == 10 * 1024 * 1024
    config = StreamsConfig.of({"application.id": "a", "statestore.cache.max.bytes": 0})
    assert config.statestore_cache_max_bytes == 0
    old = StreamsConfig.of({"application.id": "a", "cache.max.bytes.buffering": 5})
    assert old.statestore_cache_max_bytes == 5
    with pytest.raises(StreamsError, match="statestore_cache_max_bytes"):
        StreamsConfig("a", statestore_cache_max_bytes=-1)
    with pytest.raises(ValueError, match="0 or more"):
        ThreadCache(-1)


def test_cache_on_and_off_give_the_same_results_through_a_broker(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    lines = create_topic(bootstrap, 1)
    out = create_topic(bootstrap, 1)
    app_id = f"cache-{uuid.uuid4().hex[:8]}"
    app = App(app_id, bootstrap, stores="memory", state_dir=tmp_path, commit_interval_ms=300)
    app.stream(lines).flat_map_values(str.split).group_by_key().count(name="counts").to_stream().to(
        out
    )
    records = _lines(200, seed=3)
    with _word_counts(0).test_driver() as plain:
        plain.pipe_many("lines", records)
        expected = _latest(_changes(plain, "counts-out"))
        updates = len(plain.read_raw("counts-out"))
    produce(bootstrap, lines, [(k, v, t + 1) for k, v, t in records])
    app.start()
    try:
        got = read(bootstrap, out, until=lambda rs: _latest(rs) == expected)
        wait_for(lambda: app.store("counts").get("k0") == expected["k0"], "the store to catch up")
    finally:
        app.close()
    assert len(got) < updates  # folded: fewer records than updates
    changelog = read(
        bootstrap,
        f"{app_id}-counts-changelog",
        until=lambda rs: _latest(rs) == expected,
    )
    assert _latest(changelog) == expected


@pytest.mark.parametrize("caching", [True, False])
def test_a_source_table_forwards_its_latest_row_per_commit(caching: bool) -> None:
    app = App("t", stores="memory")
    app.table("users", name="users", caching=caching).to_stream().to("users-out")
    with app.test_driver() as d:
        _commit_batch(d, "users", [("u1", {"v": 1}, 1), ("u1", {"v": 2}, 2), ("u2", {"v": 1}, 3)])
        got = _changes(d, "users-out")
    if caching:
        assert got == [("u1", {"v": 2}, 2), ("u2", {"v": 1}, 3)]
    else:
        assert got == [("u1", {"v": 1}, 1), ("u1", {"v": 2}, 2), ("u2", {"v": 1}, 3)]
