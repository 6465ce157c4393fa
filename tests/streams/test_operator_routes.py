"""Each built-in stateless operator is written once (``fuse``) and reached three ways: fused from
the source, through ``process`` after a processor that is not fused (fused from there on), and
record by record (a subclass that does not define ``fuse`` runs ``process`` with a forward of
Records). Every test here runs over the three routes: the same records, timestamps, headers,
errors and offsets must come out of each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sluice.serde import INT64, STRING
from sluice.streams import (
    ProcessingError,
    Processor,
    Record,
    TestDriver,
    Topology,
)
from sluice.streams.operators.stateless import (
    Filter,
    FlatMap,
    FlatMapValues,
    Foreach,
    Map,
    MapValues,
    Passthrough,
    Peek,
    SelectKey,
)

ROUTES = ["fused", "after-a-processor", "record-by-record"]


class Relay(Processor):
    """A processor that is not fused: forwards each record through its context."""

    def process(self, record: Record) -> None:
        self.context.forward(record)


def _topology(route: str, operators: list[Processor]) -> Topology:
    """``in`` → (a Relay, for ``after-a-processor``) → each operator in turn → sink ``out``."""
    t = Topology()
    t.add_source("src", ["in"], key_serde=STRING, value_serde=INT64)
    parent = "src"
    if route == "after-a-processor":
        t.add_processor("relay", Relay, parent)
        parent = "relay"
    for n, operator in enumerate(operators):
        if route == "record-by-record":
            # a subclass that defines no fuse of its own is called through process()
            operator.__class__ = type(f"Plain{type(operator).__name__}", (type(operator),), {})
        t.add_processor(f"op{n}", lambda operator=operator: operator, parent)
        parent = f"op{n}"
    t.add_sink("sink", "out", parent, key_serde=STRING, value_serde=INT64)
    return t


def _run(route: str, operators: list[Processor]) -> list[Any]:
    with TestDriver(_topology(route, operators)) as d:
        d.pipe("in", "a", 1, timestamp=10, headers=(("h", b"1"),))
        d.pipe("in", "b", 2, timestamp=5)
        d.pipe("in", None, 3, timestamp=7, headers=(("h", b"3"), ("h", None)))
        return [(r.key, r.value, r.timestamp, r.headers) for r in d.read_output("out")]


@pytest.fixture(params=ROUTES)
def route(request: pytest.FixtureRequest) -> str:
    return str(request.param)


H1 = (("h", b"1"),)
H3 = (("h", b"3"), ("h", None))

CASES: dict[str, tuple[Callable[[], list[Processor]], list[Any]]] = {
    "filter": (
        lambda: [Filter(lambda k, v: v != 2)],
        [("a", 1, 10, H1), (None, 3, 7, H3)],
    ),
    "filter-not": (
        lambda: [Filter(lambda k, v: v != 2, negate=True)],
        [("b", 2, 5, ())],
    ),
    "map": (
        lambda: [Map(lambda k, v: (f"{k}{v}", v * 10))],
        [("a1", 10, 10, H1), ("b2", 20, 5, ()), ("None3", 30, 7, H3)],
    ),
    "map-values": (
        lambda: [MapValues(lambda v: v + 100)],
        [("a", 101, 10, H1), ("b", 102, 5, ()), (None, 103, 7, H3)],
    ),
    "map-values-with-key": (
        lambda: [MapValues(lambda k, v: v * 2 if k else -v, with_key=True)],
        [("a", 2, 10, H1), ("b", 4, 5, ()), (None, -3, 7, H3)],
    ),
    "flat-map": (
        lambda: [FlatMap(lambda k, v: [(f"{k}.{i}", i) for i in range(v - 1)])],
        [("b.0", 0, 5, ()), ("None.0", 0, 7, H3), ("None.1", 1, 7, H3)],
    ),
    "flat-map-values": (
        lambda: [FlatMapValues(lambda v: [v] * (v % 3))],
        [("a", 1, 10, H1), ("b", 2, 5, ()), ("b", 2, 5, ())],
    ),
    "select-key": (
        lambda: [SelectKey(lambda k, v: str(v % 2))],
        [("1", 1, 10, H1), ("0", 2, 5, ()), ("1", 3, 7, H3)],
    ),
    "passthrough-and-a-chain": (
        lambda: [Passthrough(), MapValues(lambda v: v * 3), Filter(lambda k, v: v > 3)],
        [("b", 6, 5, ()), (None, 9, 7, H3)],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_operator_gives_the_same_records_timestamps_and_headers_on_every_route(route, case):
    make, expected = CASES[case]
    assert _run(route, make()) == expected


def test_peek_and_foreach_see_every_record_on_every_route(route):
    peeked: list[tuple[Any, Any]] = []
    each: list[tuple[Any, Any]] = []
    t = _topology(route, [Peek(lambda k, v: peeked.append((k, v)))])
    t.add_processor("each", lambda: Foreach(lambda k, v: each.append((k, v))), "op0")
    with TestDriver(t) as d:
        d.pipe("in", "a", 1, timestamp=10)
        d.pipe("in", "b", 2, timestamp=5)
        assert [(r.key, r.value) for r in d.read_output("out")] == [("a", 1), ("b", 2)]
    assert peeked == [("a", 1), ("b", 2)]
    assert each == [("a", 1), ("b", 2)]


def test_an_operator_that_raises_is_a_processing_error_naming_the_input_record(route):
    def mapper(value: int) -> int:
        if value == 2:
            raise ValueError("two")
        return value

    with TestDriver(_topology(route, [MapValues(mapper)])) as d:
        d.pipe("in", "a", 1, timestamp=10)
        with pytest.raises(ProcessingError) as caught:
            d.pipe("in", "b", 2, timestamp=5, headers=(("h", b"2"),))
    error = caught.value
    assert (error.topic, error.partition, error.offset) == ("in", 0, 1)
    assert (error.raw_key, error.raw_value, error.timestamp) == (b"b", INT64.serialize(2), 5)
    assert error.headers == (("h", b"2"),)
    assert isinstance(error.exception, ValueError)


def test_a_skipped_failure_drops_only_that_record_on_every_route(route):
    operator = Map(lambda k, v: (k, 10 // (v - 2)))
    t = _topology(route, [operator])
    with TestDriver(t, processing_exception_handler="log_and_continue") as d:
        for n in (1, 2, 3):
            d.pipe("in", "k", n, timestamp=n)
        assert [(r.key, r.value, r.timestamp) for r in d.read_output("out")] == [
            ("k", -10, 1),
            ("k", 10, 3),
        ]
        assert d.tasks[0].dropped == 1


def test_the_routes_are_what_they_say(route):
    operator = MapValues(lambda v: v)
    with TestDriver(_topology(route, [operator])) as d:
        # fused from the source: the task needs no record metadata on the way
        assert d.tasks[0].sources["in"].fused is (route == "fused")
        # reached through process(): fused with what is below it by the task, or made on the
        # first record with a forward of Records
        assert (operator.fused is None) is (route == "record-by-record")
        d.pipe("in", "a", 1, timestamp=1)
        assert operator.fused is not None
        assert [r.value for r in d.read_output("out")] == [1]
