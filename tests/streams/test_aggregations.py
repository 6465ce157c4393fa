"""Aggregations of grouped streams (count, reduce, aggregate) and ``to_table``.

Each update carries the largest timestamp that went into the aggregate (Kafka's rule), so an
out-of-order record does not move a result back in time.
"""

from __future__ import annotations

from sluice.serde import INT64


def test_word_count_through_a_repartition_topic(make_app, backend, out):
    app = make_app(stores=backend)
    (
        app.stream("lines")
        .flat_map_values(str.split)
        .group_by(lambda k, word: word, name="by-word")
        .count(name="counts")
        .to_stream()
        .to("word-counts")
    )
    with app.test_driver() as d:
        d.pipe("lines", "l1", "a b a", timestamp=10)
        d.pipe("lines", "l2", "b", timestamp=5)  # out of order: the count keeps timestamp 10
        d.pipe("lines", "l3", "c", timestamp=20)
        assert out(d, "word-counts") == [
            ("a", 1, 10),
            ("b", 1, 10),
            ("a", 2, 10),
            ("b", 2, 10),
            ("c", 1, 20),
        ]
        assert out(d, "app-by-word-repartition") == [
            ("a", "a", 10),
            ("b", "b", 10),
            ("a", "a", 10),
            ("b", "b", 5),
            ("c", "c", 20),
        ]
        counts = d.store("counts")
        assert list(counts.all()) == [("a", 2), ("b", 2), ("c", 1)]
        assert counts.get_with_timestamp("b") == (2, 10)


def test_the_changelog_gets_one_record_per_key_and_commit(make_app):
    app = make_app()
    app.stream("lines").flat_map_values(str.split).group_by_key().count(name="counts")
    with app.test_driver() as d:  # it commits after each record, as Kafka's test driver
        d.pipe("lines", "a", "x y z", timestamp=10)  # a changes three times: logged once
        d.pipe("lines", "b", "x", timestamp=12)
        d.pipe("lines", "a", "x", timestamp=13)
        assert d.read_raw("app-counts-changelog") == [
            (b"a", b"3", 10, ()),
            (b"b", b"1", 12, ()),
            (b"a", b"4", 13, ()),
        ]


def test_reduce_starts_from_the_first_value(make_app, out):
    app = make_app()
    totals = app.stream("sales").group_by_key().reduce(lambda a, v: a + v, name="totals")
    totals.to_stream().to("totals-out")
    with app.test_driver() as d:
        d.pipe_many("sales", [("s1", 5, 10), ("s2", 1, 11), ("s1", 3, 4), ("s1", 2, 12)])
        assert out(d, "totals-out") == [("s1", 5, 10), ("s2", 1, 11), ("s1", 8, 10), ("s1", 10, 12)]
        assert d.store("totals").get("s1") == 10


def test_aggregate_with_initializer_and_aggregator(make_app, out):
    app = make_app()
    stats = (
        app.stream("temps")
        .group_by_key()
        .aggregate(
            lambda: {"n": 0, "max": None},
            lambda k, v, agg: {
                "n": agg["n"] + 1,
                "max": v if agg["max"] is None else max(v, agg["max"]),
            },
            name="stats",
        )
    )
    stats.to_stream().to("stats-out")
    with app.test_driver() as d:
        d.pipe_many(
            "temps", [("paris", 12, 1), ("oslo", -3, 2), ("paris", 19, 3), ("paris", 15, 4)]
        )
        assert out(d, "stats-out") == [
            ("paris", {"n": 1, "max": 12}, 1),
            ("oslo", {"n": 1, "max": -3}, 2),
            ("paris", {"n": 2, "max": 19}, 3),
            ("paris", {"n": 3, "max": 19}, 4),
        ]


def test_aggregate_with_a_value_serde_of_its_own(make_app, out):
    app = make_app()
    app.stream("clicks").group_by_key().aggregate(
        lambda: 0, lambda k, v, n: n + v, name="sums", value_serde=INT64
    ).to_stream().to("sums-out")
    with app.test_driver() as d:
        d.pipe("clicks", "u1", 2, timestamp=1)
        d.pipe("clicks", "u1", 3, timestamp=2)
        assert d.read_raw("sums-out") == [
            (b"u1", b"\0" * 7 + b"\2", 1, ()),
            (b"u1", b"\0" * 7 + b"\5", 2, ()),
        ]
        assert d.read_raw("app-sums-changelog")[-1] == (b"u1", b"\0" * 7 + b"\5", 2, ())


def test_records_without_key_or_value_are_not_aggregated(make_app, out):
    app = make_app()
    app.stream("in").group_by_key().count(name="n").to_stream().to("counts")
    with app.test_driver() as d:
        d.pipe("in", None, "x", timestamp=1)
        d.pipe("in", "k", None, timestamp=2)
        d.pipe("in", "k", "y", timestamp=3)
        assert out(d, "counts") == [("k", 1, 3)]


def test_to_table_keeps_the_latest_value_and_tombstones_delete(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("in").to_table(name="latest").to_stream().to("changes")
    with app.test_driver() as d:
        d.pipe("in", "a", 1, timestamp=1)
        d.pipe("in", "b", 2, timestamp=2)
        d.pipe("in", "a", 3, timestamp=3)
        d.pipe("in", "a", None, timestamp=4)
        d.pipe("in", "zz", None, timestamp=5)  # deleting a missing key changes nothing
        assert out(d, "changes") == [("a", 1, 1), ("b", 2, 2), ("a", 3, 3), ("a", None, 4)]
        latest = d.store("latest")
        assert list(latest.all()) == [("b", 2)]
        assert latest.get("a") is None
        assert latest.get_with_timestamp("b") == (2, 2)
