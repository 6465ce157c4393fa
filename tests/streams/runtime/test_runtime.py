"""The runtime against the real broker: processing, internal topics, interactive queries."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sluice.dsl import App, TimeWindows
from sluice.streams import TopologyError
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import produce, read, wait_for


def _app_id() -> str:
    return f"app-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("stores", ["memory", "rocksdb"])
def test_word_count_over_two_partitions(
    shared_broker: BrokerProcess, tmp_path: Path, stores: str
) -> None:
    bootstrap = shared_broker.bootstrap
    lines = create_topic(bootstrap, 2)
    out = create_topic(bootstrap, 2)
    app = App(
        _app_id(),
        bootstrap,
        stores=stores,  # type: ignore[arg-type]
        state_dir=tmp_path,
        commit_interval_ms=200,
        statestore_cache_max_bytes=0,  # every update is read below
    )
    counts = (
        app.stream(lines)
        .flat_map_values(str.split)
        .group_by(lambda key, word: word)
        .count(name="counts")
    )
    counts.to_stream().to(out)
    produce(bootstrap, lines, [(f"l{i}", "a b a" if i % 2 else "c", i) for i in range(10)])
    app.start()
    try:
        final = read(bootstrap, out, until=lambda rs: len(rs) >= 20)
        latest = {key: value for key, value, _ in final}
        assert latest == {"a": 10, "b": 5, "c": 5}, latest
        wait_for(lambda: app.store("counts").get("a") == 10, "the store to show a=10")
        assert sorted(app.store("counts").range("a", "b")) == [("a", 10), ("b", 5)]
    finally:
        app.close()


def test_windowed_count_with_suppression(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = shared_broker.bootstrap
    clicks = create_topic(bootstrap, 1)
    out = create_topic(bootstrap, 1)
    app = App(_app_id(), bootstrap, stores="memory", state_dir=tmp_path, commit_interval_ms=200)
    (
        app.stream(clicks)
        .group_by_key()
        .windowed_by(TimeWindows.of("1m").grace("10s"))
        .count(name="clicks")
        .suppress_until_window_closes()
        .to_stream()
        .to(out)
    )
    # u1: 3 clicks in [0, 1m), 1 in [1m, 2m); a record at 2m15s closes both windows
    produce(
        bootstrap,
        clicks,
        [
            ("u1", {}, 1_000),
            ("u1", {}, 20_000),
            ("u2", {}, 30_000),
            ("u1", {}, 59_000),
            ("u1", {}, 61_000),
            ("u1", {}, 65_000),
            ("u2", {}, 135_000),
        ],
    )
    app.start()
    try:
        records = read(bootstrap, out, until=lambda rs: len(rs) >= 3)
        got = sorted((k["key"], k["window"]["start"], v) for k, v, _ in records)
        assert got == [("u1", 0, 3), ("u1", 60_000, 2), ("u2", 0, 1)], got
        # interactive query of the window store; the window at 0 expired (size + grace)
        assert app.store("clicks").fetch("u1", 0, 120_000) == [(60_000, 2)]
        assert app.store("clicks").fetch("u2") == [(120_000, 1)]
    finally:
        app.close()


def test_join_of_topics_with_different_partition_counts_is_refused(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    orders = create_topic(bootstrap, 2)
    customers = create_topic(bootstrap, 3)
    app = App(_app_id(), bootstrap, state_dir=tmp_path)
    app.stream(orders).join(app.table(customers), lambda o, c: o).to(create_topic(bootstrap))
    with pytest.raises(TopologyError, match="co-partitioning") as error:
        app.start()
    assert orders in str(error.value) and customers in str(error.value)
