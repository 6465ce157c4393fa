"""Suppression buffers: until a time limit, bounded by records or bytes, emitting early or
shutting down when full (Kafka's Suppressed / BufferConfig), through the test driver."""

from __future__ import annotations

from typing import Any

import pytest

from sluice.dsl import App, BufferConfig, TimeWindows
from sluice.streams.errors import StreamsError, TopologyError


def _counts(buffer: BufferConfig | None = None, limit: str | int = 10) -> App:
    app = App("sup", stores="memory")
    (
        app.stream("clicks")
        .group_by_key()
        .count(name="counts")
        .suppress_until_time_limit(limit, buffer=buffer, name="buffer")
        .to_stream()
        .to("out")
    )
    return app


def _out(d: Any) -> list[tuple[Any, Any, int]]:
    return [(r.key, r.value, r.timestamp) for r in d.read_output("out")]


def test_time_limit_emits_each_keys_latest_once_it_waited() -> None:
    with _counts().test_driver() as d:
        d.pipe("clicks", "a", {}, timestamp=0)
        d.pipe("clicks", "a", {}, timestamp=4)
        d.pipe("clicks", "b", {}, timestamp=6)
        assert _out(d) == []  # a waits until stream time 10
        d.pipe("clicks", "c", {}, timestamp=10)
        assert _out(d) == [("a", 2, 4)]
        d.pipe("clicks", "a", {}, timestamp=12)  # a buffered again, from 12
        d.pipe("clicks", "c", {}, timestamp=16)
        assert _out(d) == [("b", 1, 6)]
        d.pipe("clicks", "z", {}, timestamp=30)
        assert _out(d) == [("c", 2, 16), ("a", 3, 12)]


def test_time_limit_carries_the_value_downstream_saw_before() -> None:
    app = App("sup", stores="memory")
    counts = app.stream("clicks").group_by_key().count(name="counts")
    limited = counts.suppress_until_time_limit("10ms")
    # a re-grouped table subtracts the old value: it must be the one emitted before
    limited.group_by(lambda k, n: ("all", n)).aggregate(
        lambda: 0, lambda k, n, t: t + n, lambda k, n, t: t - n, name="total"
    ).to_stream().to("total")
    with app.test_driver() as d:
        for ts in (0, 1, 2, 20, 21, 40, 41, 42, 60):
            d.pipe("clicks", "a", {}, timestamp=ts)
        totals = [r.value for r in d.read_output("total")]
    # the record that makes a key due is in what it emits: 4 at 20 (buffered from 0), 6 at 40
    # (from 21), 9 at 60 (from 41); the total is each, so no old value was subtracted twice
    assert totals == [4, 6, 9]


def test_a_full_buffer_emits_its_oldest_keys_early() -> None:
    with _counts(BufferConfig.max_records(2), limit="1h").test_driver() as d:
        for key, ts in (("a", 1), ("b", 2), ("a", 3), ("c", 4), ("d", 5)):
            d.pipe("clicks", key, {}, timestamp=ts)
        # c pushes a (buffered first, at 1) out; d pushes b out
        assert _out(d) == [("a", 2, 3), ("b", 1, 2)]
        assert sorted(k for k, _ in d.store("buffer").all()) == ["c", "d"]


def test_a_byte_bound_emits_early_too() -> None:
    # each entry: key (1 byte) + 8-byte time + change of a JSON count (1 + 4 + 1 bytes)
    with _counts(BufferConfig.max_bytes(40), limit="1h").test_driver() as d:
        for key, ts in (("a", 1), ("b", 2), ("c", 3)):
            d.pipe("clicks", key, {}, timestamp=ts)
        assert _out(d) == [("a", 1, 1)]  # 3 x 15 bytes > 40


def test_a_full_strict_buffer_shuts_the_application_down() -> None:
    buffer = BufferConfig.max_records(2).shut_down_when_full()
    with _counts(buffer, limit="1h").test_driver() as d:
        d.pipe("clicks", "a", {}, timestamp=1)
        d.pipe("clicks", "b", {}, timestamp=2)
        d.pipe("clicks", "a", {}, timestamp=3)  # updates a key it holds: still 2
        with pytest.raises(StreamsError, match="exceeded its max capacity: 3/2 records"):
            d.pipe("clicks", "c", {}, timestamp=4)


def _windowed(buffer: BufferConfig | None) -> App:
    app = App("win", stores="memory")
    (
        app.stream("clicks")
        .group_by_key()
        .windowed_by(TimeWindows.of(10).grace(5))
        .count()
        .suppress_until_window_closes(buffer=buffer)
        .to_stream()
        .to("out")
    )
    return app


def test_final_results_with_a_bounded_strict_buffer() -> None:
    buffer = BufferConfig.max_records(3).shut_down_when_full()
    with _windowed(buffer).test_driver() as d:
        for key, ts in (("a", 1), ("b", 2), ("a", 3), ("c", 14), ("a", 16)):
            d.pipe("clicks", key, {}, timestamp=ts)
        assert [(r.key.key, r.key.start, r.value) for r in d.read_output("out")] == [
            ("a", 0, 2),
            ("b", 0, 1),
        ]
        d.pipe("clicks", "d", {}, timestamp=17)  # c, a and d wait in window 10
        with pytest.raises(StreamsError, match="max capacity: 4/3 records"):
            d.pipe("clicks", "e", {}, timestamp=18)


def test_final_results_refuse_a_buffer_that_emits_early() -> None:
    with pytest.raises(TopologyError, match="strict buffer"):
        _windowed(BufferConfig.max_records(3))
    with pytest.raises(TopologyError, match="strict buffer"):
        _windowed(BufferConfig.max_bytes(100).emit_early_when_full())
    _windowed(BufferConfig.unbounded())
    _windowed(BufferConfig.max_bytes(100).shut_down_when_full())


def test_buffer_configs_are_checked() -> None:
    with pytest.raises(StreamsError, match="max_records must be 1 or more"):
        BufferConfig.max_records(0)
    with pytest.raises(StreamsError, match="max_bytes must be 1 or more"):
        BufferConfig.unbounded().with_max_bytes(-5)
    assert BufferConfig.max_records(5).with_no_bound() == BufferConfig.unbounded()
    assert not BufferConfig.max_records(5).strict
    assert BufferConfig.max_records(5).shut_down_when_full().strict


def test_time_limited_buffer_survives_a_restore() -> None:
    """The buffer's changelog holds the buffer time and the old value: a new driver restored
    from it emits at the same stream time as the first would have."""
    app = _counts(limit=10)
    with app.test_driver() as d:
        d.pipe("clicks", "a", {}, timestamp=0)
        d.pipe("clicks", "a", {}, timestamp=5)
        logged = d.read_raw("sup-buffer-changelog")
    with app.test_driver() as d:
        store = d.store("buffer")
        for key, value, ts, _ in logged:
            store.restore(key, value, ts)  # type: ignore[attr-defined]
        d.pipe("clicks", "b", {}, timestamp=9)
        assert _out(d) == []
        d.pipe("clicks", "b", {}, timestamp=10)
        assert _out(d) == [("a", 2, 5)]


def test_time_limit_on_a_windowed_table() -> None:
    app = App("win", stores="memory")
    (
        app.stream("clicks")
        .group_by_key()
        .windowed_by(TimeWindows.of(100))
        .count()
        .suppress_until_time_limit(10)
        .to_stream()
        .to("out")
    )
    with app.test_driver() as d:
        for ts in (1, 2, 3, 13):
            d.pipe("clicks", "a", {}, timestamp=ts)
        assert [(r.key.start, r.value) for r in d.read_output("out")] == [(0, 4)]
