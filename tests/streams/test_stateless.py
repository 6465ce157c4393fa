"""Stateless stream operators through the test driver: each against results written by hand."""

from __future__ import annotations

import pytest

from sluice.serde import INT64, STRING
from sluice.streams import StreamsError, TopologyError


def test_filter_and_filter_not_split_the_stream_by_the_predicate(make_app, out):
    app = make_app()
    numbers = app.stream("numbers")
    numbers.filter(lambda k, v: v % 2 == 0).to("even")
    numbers.filter_not(lambda k, v: v % 2 == 0).to("odd")
    with app.test_driver() as d:
        for n, ts in [(1, 10), (2, 20), (3, 30), (4, 40)]:
            d.pipe("numbers", f"k{n}", n, timestamp=ts)
        assert out(d, "even") == [("k2", 2, 20), ("k4", 4, 40)]
        assert out(d, "odd") == [("k1", 1, 10), ("k3", 3, 30)]


def test_map_and_map_values_replace_key_and_value_keeping_timestamp_and_headers(make_app, out):
    app = make_app()
    s = app.stream("in")
    s.map(lambda k, v: (v["user"], k)).to("by-user")
    s.map_values(lambda v: v["n"] * 10).to("tens")
    s.map_values(lambda k, v: f"{k}:{v['n']}", with_key=True).to("labelled")
    with app.test_driver() as d:
        d.pipe("in", "e1", {"user": "ann", "n": 1}, timestamp=5, headers=(("trace", b"t1"),))
        d.pipe("in", "e2", {"user": "bob", "n": 2}, timestamp=3)
        assert out(d, "by-user") == [("ann", "e1", 5), ("bob", "e2", 3)]
        assert out(d, "tens") == [("e1", 10, 5), ("e2", 20, 3)]
        assert out(d, "labelled") == [("e1", "e1:1", 5), ("e2", "e2:2", 3)]
        d.pipe("in", "e3", {"user": "cy", "n": 3}, timestamp=9, headers=(("trace", b"t3"),))
        assert [r.headers for r in d.read_output("tens")] == [(("trace", b"t3"),)]


def test_flat_map_and_flat_map_values_emit_zero_or_more_records(make_app, out):
    app = make_app()
    lines = app.stream("lines")
    lines.flat_map_values(str.split).to("words")
    lines.flat_map(lambda k, line: [(w, len(w)) for w in line.split() if len(w) > 2]).to("long")
    with app.test_driver() as d:
        d.pipe("lines", "l1", "the cat sat", timestamp=1)
        d.pipe("lines", "l2", "", timestamp=2)  # nothing comes out of an empty line
        d.pipe("lines", "l3", "a zebra", timestamp=3)
        assert out(d, "words") == [
            ("l1", "the", 1),
            ("l1", "cat", 1),
            ("l1", "sat", 1),
            ("l3", "a", 3),
            ("l3", "zebra", 3),
        ]
        assert out(d, "long") == [("the", 3, 1), ("cat", 3, 1), ("sat", 3, 1), ("zebra", 5, 3)]


def test_select_key_rekeys_and_peek_and_foreach_see_every_record(make_app, out):
    seen_by_peek: list[tuple[str, int]] = []
    seen_by_foreach: list[tuple[str, int]] = []
    app = make_app()
    s = app.stream("in").peek(lambda k, v: seen_by_peek.append((k, v)))
    s.select_key(lambda k, v: f"{k}-{v}").to("rekeyed")
    s.foreach(lambda k, v: seen_by_foreach.append((k, v)))
    with app.test_driver() as d:
        d.pipe("in", "a", 1, timestamp=1)
        d.pipe("in", "b", 2, timestamp=2)
        assert out(d, "rekeyed") == [("a-1", 1, 1), ("b-2", 2, 2)]
    assert seen_by_peek == [("a", 1), ("b", 2)]
    assert seen_by_foreach == [("a", 1), ("b", 2)]


def test_split_sends_each_record_to_the_first_matching_branch(make_app, out):
    app = make_app()
    branches = (
        app.stream("orders")
        .split(prefix="orders-")
        .branch("big", lambda k, v: v >= 100)
        .branch("medium", lambda k, v: v >= 10)  # 150 matches both: only "big" gets it
        .default_branch("small")
    )
    assert sorted(branches) == ["orders-big", "orders-medium", "orders-small"]
    for name, branch in branches.items():
        branch.to(name)
    with app.test_driver() as d:
        d.pipe_many("orders", [("o1", 150, 1), ("o2", 5, 2), ("o3", 50, 3), ("o4", 100, 4)])
        assert out(d, "orders-big") == [("o1", 150, 1), ("o4", 100, 4)]
        assert out(d, "orders-medium") == [("o3", 50, 3)]
        assert out(d, "orders-small") == [("o2", 5, 2)]


def test_split_without_default_branch_drops_what_no_predicate_takes(make_app, out):
    app = make_app()
    branches = app.stream("in").split().branch("neg", lambda k, v: v < 0).branches()
    branches["neg"].to("negative")
    with app.test_driver() as d:
        d.pipe_many("in", [("a", -1, 1), ("b", 1, 2), ("c", -2, 3)])
        assert out(d, "negative") == [("a", -1, 1), ("c", -2, 3)]


def test_merge_interleaves_both_streams_in_arrival_order(make_app, out):
    app = make_app()
    app.stream("left").merge(app.stream("right")).map_values(str.upper).to("merged")
    with app.test_driver() as d:
        d.pipe("left", "l", "a", timestamp=3)
        d.pipe("right", "r", "b", timestamp=1)
        d.pipe("left", "l", "c", timestamp=2)
        assert out(d, "merged") == [("l", "A", 3), ("r", "B", 1), ("l", "C", 2)]


def test_to_with_a_topic_function_routes_each_record(make_app, out):
    app = make_app()
    app.stream("events").to(lambda record: f"events-{record.value['kind']}")
    with app.test_driver() as d:
        d.pipe("events", "e1", {"kind": "click"}, timestamp=1)
        d.pipe("events", "e2", {"kind": "view"}, timestamp=2)
        d.pipe("events", "e3", {"kind": "click"}, timestamp=3)
        assert out(d, "events-click") == [
            ("e1", {"kind": "click"}, 1),
            ("e3", {"kind": "click"}, 3),
        ]
        assert out(d, "events-view") == [("e2", {"kind": "view"}, 2)]


def test_source_and_sink_serdes_are_used_on_the_wire(make_app, out):
    app = make_app()
    s = app.stream("amounts", key_serde=INT64, value_serde=STRING)
    s.map_values(lambda v: int(v) * 2, value_serde=INT64).to("doubled")
    with app.test_driver() as d:
        d.pipe("amounts", 7, "21", timestamp=1)
        assert d.read_raw("doubled") == [(b"\x00" * 7 + b"\x07", b"\x00" * 7 + b"\x2a", 1, ())]
        assert out(d, "doubled") == [(7, 42, 1)]


def test_timestamp_defaults_to_the_driver_wall_clock(make_app, out):
    app = make_app()
    app.stream("in").to("out")
    with app.test_driver(wall_clock_ms=1_000) as d:
        d.pipe("in", "a", 1)
        d.advance_wall_clock(500)
        d.pipe("in", "b", 2)
        assert out(d, "out") == [("a", 1, 1_000), ("b", 2, 1_500)]


def test_repartition_goes_through_an_internal_topic_keyed_by_the_new_key(make_app, out):
    app = make_app()
    app.stream("in").select_key(lambda k, v: v["user"]).repartition(name="by-user").to("out")
    assert list(app.topology.repartition_topics) == ["app-by-user-repartition"]
    with app.test_driver() as d:
        d.pipe("in", "e1", {"user": "ann"}, timestamp=4)
        assert out(d, "app-by-user-repartition") == [("ann", {"user": "ann"}, 4)]
        assert out(d, "out") == [("ann", {"user": "ann"}, 4)]


def test_grouping_after_a_key_change_repartitions_but_group_by_key_alone_does_not(make_app):
    app = make_app()
    app.stream("a").group_by_key().count(name="c1")
    assert app.topology.repartition_topics == {}
    app.stream("b").map(lambda k, v: (v, k)).group_by_key(name="flipped").count(name="c2")
    assert list(app.topology.repartition_topics) == ["app-flipped-repartition"]


def test_describe_names_nodes_as_kafka_streams_does(make_app):
    app = make_app()
    app.stream("in").filter(lambda k, v: True).to("out")
    assert app.describe() == (
        "Sub-topology 0 (topics: in)\n"
        "  source KSTREAM-SOURCE-0000000001 <- in\n"
        "  processor KSTREAM-FILTER-0000000002 <- KSTREAM-SOURCE-0000000001\n"
        "  sink KSTREAM-SINK-0000000003 -> out <- KSTREAM-FILTER-0000000002"
    )


def test_a_topic_may_be_read_by_one_source_only(make_app):
    app = make_app()
    app.stream("in")
    with pytest.raises(TopologyError, match="'in' is already read"):
        app.stream("in")


def test_piping_to_a_topic_nobody_reads_is_an_error(make_app):
    app = make_app()
    app.stream("in").to("out")
    with app.test_driver() as d, pytest.raises(StreamsError, match="no source reads topic 'nope'"):
        d.pipe("nope", "k", 1)
