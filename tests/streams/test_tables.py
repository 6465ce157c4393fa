"""Tables: sources with tombstones, filter, map_values, to_stream, and re-grouped aggregations
whose subtractor takes a row's old value out of its old group (Kafka's KGroupedTable)."""

from __future__ import annotations


def test_a_table_keeps_the_latest_row_and_to_stream_shows_every_change(make_app, backend, out):
    app = make_app(stores=backend)
    app.table("users", name="users").to_stream().to("changes")
    with app.test_driver() as d:
        d.pipe("users", "u1", {"v": 1}, timestamp=10)
        d.pipe("users", "u2", {"v": 2}, timestamp=11)
        d.pipe("users", "u1", {"v": 3}, timestamp=5)  # an older timestamp still replaces the row
        d.pipe("users", "u2", None, timestamp=12)
        d.pipe("users", "u9", None, timestamp=13)  # tombstone of a missing row: no change
        d.pipe("users", None, {"v": 0}, timestamp=14)  # a row needs a key: skipped
        assert out(d, "changes") == [
            ("u1", {"v": 1}, 10),
            ("u2", {"v": 2}, 11),
            ("u1", {"v": 3}, 5),
            ("u2", None, 12),
        ]
        users = d.store("users")
        assert list(users.all()) == [("u1", {"v": 3})]
        assert users.get_with_timestamp("u1") == ({"v": 3}, 5)
        assert len(users) == 1


def test_the_source_topic_is_the_table_changelog(make_app):
    app = make_app()
    app.table("users", name="users")
    assert app.topology.source_changelogs == {"users": "users"}
    with app.test_driver() as d:
        d.pipe("users", "u1", {"v": 1}, timestamp=1)
        assert d.read_raw("app-users-changelog") == []


def test_table_filter_deletes_rows_that_stop_matching(make_app, out):
    app = make_app()
    active = app.table("users").filter(lambda k, u: u["active"], name="active")
    active.to_stream().to("active-users")
    with app.test_driver() as d:
        got = []
        for key, value, ts in [
            ("u1", {"active": True}, 1),
            ("u2", {"active": False}, 2),  # never matched: nothing
            ("u1", {"active": False}, 3),  # stops matching: deleted
            ("u1", {"active": False}, 4),  # still not matching: nothing
            ("u2", {"active": True}, 5),
            ("u2", None, 6),
            ("u3", None, 7),
            ("u4", {"active": True}, 8),
        ]:
            d.pipe("users", key, value, timestamp=ts)
            got.append(out(d, "active-users"))
        assert got == [
            [("u1", {"active": True}, 1)],
            [],
            [("u1", None, 3)],
            [],
            [("u2", {"active": True}, 5)],
            [("u2", None, 6)],
            [],
            [("u4", {"active": True}, 8)],
        ]
        assert list(d.store("active").all()) == [("u4", {"active": True})]


def test_table_filter_not(make_app, out):
    app = make_app()
    app.table("t").filter_not(lambda k, v: v > 10).to_stream().to("small")
    with app.test_driver() as d:
        d.pipe_many("t", [("a", 5, 1), ("b", 50, 2), ("a", 20, 3), ("b", 1, 4)])
        assert out(d, "small") == [("a", 5, 1), ("a", None, 3), ("b", 1, 4)]


def test_table_map_values_maps_rows_and_passes_deletes(make_app, out):
    app = make_app()
    app.table("prices").map_values(lambda p: p * 2, name="doubled").to_stream().to("doubled-out")
    with app.test_driver() as d:
        d.pipe_many("prices", [("a", 1, 1), ("b", 2, 2), ("a", 5, 3), ("b", None, 4)])
        assert out(d, "doubled-out") == [("a", 2, 1), ("b", 4, 2), ("a", 10, 3), ("b", None, 4)]
        assert list(d.store("doubled").all()) == [("a", 10)]


REGROUP_STEPS = [
    ("u1", {"region": "eu", "score": 3}, 1),
    ("u2", {"region": "eu", "score": 4}, 2),
    ("u1", {"region": "eu", "score": 5}, 3),  # same group: one update (subtract, then add)
    ("u1", {"region": "us", "score": 5}, 4),  # moves: leaves eu, joins us
    ("u2", None, 5),  # deleted: leaves eu
    ("u3", None, 6),  # deleting a missing row: nothing
]


def test_table_group_by_count_reduce_and_aggregate(make_app, backend, out):
    app = make_app(stores=backend)
    grouped = app.table("users").group_by(lambda k, u: (u["region"], u["score"]))
    grouped.count(name="count").to_stream().to("count-out")
    grouped.reduce(lambda a, v: a + v, lambda a, v: a - v, name="sum").to_stream().to("sum-out")
    grouped.aggregate(
        lambda: [],
        lambda k, v, agg: sorted([*agg, v]),
        lambda k, v, agg: [x for x in agg if x != v],
        name="scores",
    ).to_stream().to("scores-out")
    with app.test_driver() as d:
        got = []
        for key, value, ts in REGROUP_STEPS:
            d.pipe("users", key, value, timestamp=ts)
            got.append((out(d, "count-out"), out(d, "sum-out"), out(d, "scores-out")))
        assert got == [
            ([("eu", 1, 1)], [("eu", 3, 1)], [("eu", [3], 1)]),
            ([("eu", 2, 2)], [("eu", 7, 2)], [("eu", [3, 4], 2)]),
            ([("eu", 2, 3)], [("eu", 9, 3)], [("eu", [4, 5], 3)]),
            (
                [("eu", 1, 4), ("us", 1, 4)],
                [("eu", 4, 4), ("us", 5, 4)],
                [("eu", [4], 4), ("us", [5], 4)],
            ),
            ([("eu", 0, 5)], [("eu", 0, 5)], [("eu", [], 5)]),
            ([], [], []),
        ]
        assert list(d.store("count").all()) == [("eu", 0), ("us", 1)]
        assert list(d.store("sum").all()) == [("eu", 0), ("us", 5)]


def test_table_group_by_skips_rows_mapped_to_a_none_key(make_app, out):
    app = make_app()
    app.table("t").group_by(lambda k, v: (v.get("g"), 1)).count(name="n").to_stream().to("n-out")
    with app.test_driver() as d:
        d.pipe("t", "a", {"g": "x"}, timestamp=1)
        d.pipe("t", "b", {}, timestamp=2)  # no group
        d.pipe("t", "a", {}, timestamp=3)  # leaves x, joins no group
        assert out(d, "n-out") == [("x", 1, 1), ("x", 0, 3)]


def test_a_table_group_by_goes_through_a_repartition_topic_of_changes(make_app):
    app = make_app()
    app.table("t").group_by(lambda k, v: (v, k), name="by-value").count()
    assert list(app.topology.repartition_topics) == ["app-by-value-repartition"]
    with app.test_driver() as d:
        d.pipe("t", "a", "x", timestamp=1)
        d.pipe("t", "a", "y", timestamp=2)
        # flags byte (1: new value present, 2: old value present), then length-prefixed values
        assert d.read_raw("app-by-value-repartition") == [
            (b"x", b'\x01\x00\x00\x00\x03"a"', 1, ()),
            (b"x", b'\x02\x00\x00\x00\x03"a"', 2, ()),
            (b"y", b'\x01\x00\x00\x00\x03"a"', 2, ()),
        ]
