"""The Processor API: processors, their context (forward, stores, schedule, metadata), headers
and timestamp extractors, in DSL apps and in hand-built topologies."""

from __future__ import annotations

from typing import Any

import pytest

from sluice.serde import INT64, STRING
from sluice.streams import (
    STREAM_TIME,
    WALL_CLOCK,
    KeyValueStore,
    Processor,
    ProcessorContext,
    Record,
    StreamsError,
    TestDriver,
    Topology,
)


class Recorder(Processor):
    """Logs its life (init, each record with its metadata, close) and forwards records."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.log.append(("init", context.application_id, context.task_id))

    def process(self, record: Record) -> None:
        metadata = self.context.record_metadata
        assert metadata is not None
        self.log.append(
            (record.key, record.value, record.timestamp, repr(metadata), self.context.stream_time)
        )
        self.context.forward(record)

    def close(self) -> None:
        self.log.append("close")


def test_processor_life_and_record_metadata(make_app, out):
    log: list[Any] = []
    app = make_app()
    app.stream("in").process(lambda: Recorder(log)).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", 1, timestamp=7)
        d.pipe("in", "b", 2, timestamp=3)
        assert out(d, "out") == [("a", 1, 7), ("b", 2, 3)]
    assert log == [
        ("init", "app", "0_0"),
        ("a", 1, 7, "in[0]@0", 7),
        ("b", 2, 3, "in[0]@1", 7),  # stream time stays at the largest timestamp seen
        "close",
    ]


class Counter(Processor):
    """Counts records per key in the store ``seen`` and forwards the running count."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store("seen")
        assert isinstance(store, KeyValueStore)
        self.store = store

    def process(self, record: Record) -> None:
        count = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, count, record.timestamp)
        self.context.forward(record.with_value(count))


def test_a_processor_uses_a_store_given_by_name(make_app, backend, out):
    app = make_app(stores=backend)
    app.state_store("seen", value_serde=INT64)
    app.stream("in").process(Counter, stores=["seen"]).map_values(lambda n: n * 100).to("out")
    with app.test_driver() as d:
        d.pipe_many("in", [("a", "x", 1), ("b", "x", 2), ("a", "x", 3)])
        assert out(d, "out") == [("a", 100, 1), ("b", 100, 2), ("a", 200, 3)]
        assert list(d.store("seen").all()) == [("a", 2), ("b", 1)]
        assert d.read_raw("app-seen-changelog") == [
            (b"a", INT64.serialize(1), 1, ()),
            (b"b", INT64.serialize(1), 2, ()),
            (b"a", INT64.serialize(2), 3, ()),
        ]


def test_a_processor_cannot_reach_a_store_it_is_not_connected_to(make_app):
    app = make_app()
    app.state_store("seen")
    app.stream("in").process(Counter)
    with pytest.raises(StreamsError, match="not connected to store 'seen'"):
        app.test_driver()


class Punctuating(Processor):
    def __init__(self, log: list[Any], interval: int, kind: Any) -> None:
        self.log = log
        self.interval = interval
        self.kind = kind

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.schedule = context.schedule(self.interval, self.kind, self.punctuate)

    def punctuate(self, timestamp: int) -> None:
        self.log.append(("punctuate", timestamp, self.context.record_metadata))
        self.context.forward(Record("tick", timestamp, timestamp))

    def process(self, record: Record) -> None:
        self.log.append(("process", record.timestamp))
        if record.value == "stop":
            self.schedule.cancel()


def test_stream_time_punctuation_fires_once_per_due_interval_after_the_record(make_app, out):
    log: list[Any] = []
    app = make_app()
    app.stream("in").process(lambda: Punctuating(log, 10, STREAM_TIME)).to("out")
    with app.test_driver() as d:
        for ts in (12, 15, 27, 61, 62):
            d.pipe("in", "k", "x", timestamp=ts)
        d.pipe("in", "k", "x", timestamp=5)  # stream time does not go back
        d.advance_wall_clock(1_000)  # the wall clock does not drive stream-time punctuation
        assert out(d, "out") == [("tick", 12, 12), ("tick", 27, 27), ("tick", 61, 61)]
    assert log == [
        ("process", 12),
        ("punctuate", 12, None),
        ("process", 15),
        ("process", 27),
        ("punctuate", 27, None),
        ("process", 61),  # 30..60 were skipped: one call, then the next one is due at 70
        ("punctuate", 61, None),
        ("process", 62),
        ("process", 5),
    ]


def test_stream_time_punctuation_first_fires_with_the_first_record_as_in_kafka(make_app, out):
    app = make_app()
    app.stream("in").process(lambda: Punctuating([], 10, STREAM_TIME)).to("out")
    with app.test_driver() as d:
        for ts in (3, 7, 12):
            d.pipe("in", "k", "x", timestamp=ts)
        assert out(d, "out") == [("tick", 3, 3), ("tick", 12, 12)]


def test_wall_clock_punctuation_follows_the_driver_clock_and_can_be_cancelled(make_app, out):
    log: list[Any] = []
    app = make_app()
    app.stream("in").process(lambda: Punctuating(log, 50, WALL_CLOCK)).to("out")
    with app.test_driver(wall_clock_ms=1_000) as d:
        ticks = []
        for step in (30, 30, 250, 10):
            d.advance_wall_clock(step)
            ticks.append(out(d, "out"))
        d.pipe("in", "k", "stop", timestamp=0)
        d.advance_wall_clock(500)
        ticks.append(out(d, "out"))
    assert ticks == [
        [],
        [("tick", 1_060, 1_060)],  # due at 1 050
        [("tick", 1_310, 1_310)],  # 1 100 .. 1 300 missed: one call, next due at 1 350
        [],  # 1 320 < 1 350: not due
        [],  # cancelled
    ]
    assert [entry[0] for entry in log] == ["punctuate", "punctuate", "process"]


def test_headers_reach_processors_and_can_be_replaced(make_app):
    class Tag(Processor):
        def process(self, record: Record) -> None:
            names = [name for name, _ in record.headers]
            headers = (*record.headers, ("seen", ",".join(names).encode()))
            self.context.forward(record.with_headers(headers))

    app = make_app()
    app.stream("in").process(Tag).filter(lambda k, v: True).to("out")
    with app.test_driver() as d:
        d.pipe("in", "k", 1, timestamp=1, headers=(("a", b"1"), ("a", b"2"), ("b", None)))
        d.pipe("in", "k", 2, timestamp=2)
        assert [r.headers for r in d.read_output("out")] == [
            (("a", b"1"), ("a", b"2"), ("b", None), ("seen", b"a,a,b")),
            (("seen", b""),),
        ]


def test_timestamp_extractor_sets_event_time_and_negative_results_drop(make_app, out):
    seen_partition_time: list[int] = []

    def from_value(record: Record, partition_time: int) -> int:
        seen_partition_time.append(partition_time)
        return int(record.value.get("at", -1))

    app = make_app()
    app.stream("in", timestamp_extractor=from_value).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"at": 500}, timestamp=1)
        d.pipe("in", "b", {}, timestamp=2)  # -1: dropped
        d.pipe("in", "c", {"at": 300}, timestamp=3)
        assert out(d, "out") == [("a", {"at": 500}, 500), ("c", {"at": 300}, 300)]
        assert d.tasks[0].dropped_records == 1
    assert seen_partition_time == [-1, 500, 500]


def test_timestamp_extractor_drives_windows(make_app, out):
    from sluice.dsl import TimeWindows, Windowed

    app = make_app()
    events = app.stream("in", timestamp_extractor=lambda r, pt: r.value["at"])
    events.group_by_key().windowed_by(TimeWindows.of(100)).count().to_stream().to("out")
    with app.test_driver() as d:
        d.pipe("in", "k", {"at": 150}, timestamp=0)
        d.pipe("in", "k", {"at": 40}, timestamp=0)  # window [0,100) closed at 150
        assert out(d, "out") == [(Windowed("k", 100, 200), 1, 150)]


class Router(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record, to="evens" if record.value % 2 == 0 else "odds")


def test_a_hand_built_topology_with_forward_to_a_named_child(out):
    t = Topology()
    t.add_source("src", ["numbers"], key_serde=STRING, value_serde=INT64)
    t.add_processor("router", Router, "src")
    t.add_processor("evens", lambda: Recorder([]), "router")
    t.add_processor("odds", lambda: Recorder([]), "router")
    t.add_sink("even-sink", "even", "evens", value_serde=INT64)
    t.add_sink("odd-sink", "odd", "odds", value_serde=INT64)
    assert t.describe() == (
        "Sub-topology 0 (topics: numbers)\n"
        "  source src <- numbers\n"
        "  processor router <- src\n"
        "  processor evens <- router\n"
        "  processor odds <- router\n"
        "  sink even-sink -> even <- evens\n"
        "  sink odd-sink -> odd <- odds"
    )
    with TestDriver(t) as d:
        d.pipe_many("numbers", [("a", 1, 1), ("b", 2, 2), ("c", 4, 3)])
        assert out(d, "even") == [("b", 2, 2), ("c", 4, 3)]
        assert out(d, "odd") == [("a", 1, 1)]
