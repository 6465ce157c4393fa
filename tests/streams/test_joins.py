"""Every join kind through the test driver, with expected results written by hand.

Stream–stream joins follow Kafka 3.1+ (KIP-633): a left record at ``t`` meets right records in
``[t - before, t + after]``; a result carries the larger timestamp; a record without partner is
emitted alone (left/outer joins) only once its window has closed, at ``t + after + grace`` for a
left record and ``t + before + grace`` for a right one, before the results of the record that
closed it. Sluice drops a record arriving after its own window closed (Kafka may still join it
with what the other side buffers).
"""

from __future__ import annotations

import pytest

from sluice.dsl import JoinWindows
from sluice.streams import TopologyError


def joined(left, right):
    return f"{left}+{right}"


def pipe_each(d, out, topic_out, steps):
    """Pipe ``(topic, key, value, ts)`` steps; the output of each step, in step order."""
    got = []
    for topic, key, value, ts in steps:
        d.pipe(topic, key, value, timestamp=ts)
        got.append((topic, key, value, ts, out(d, topic_out)))
    return got


# -- stream-stream --------------------------------------------------------------------------------


def test_stream_stream_inner_join_with_out_of_order_and_late_records(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("L").join(app.stream("R"), joined, JoinWindows.of(10)).to("out")
    with app.test_driver() as d:
        got = pipe_each(
            d,
            out,
            "out",
            [
                ("L", "a", "l1", 0),
                ("R", "a", "r1", 5),
                ("L", "a", "l2", 12),  # meets r1: 5 is in [2, 22]
                ("R", "b", "r2", 30),
                ("L", "a", "l3", 8),  # 8 + 10 < 30: its window closed, dropped
                ("R", "a", "r3", 25),  # out of order, in time; no left record in [15, 35]
                ("L", "a", "l4", 33),  # meets r3
                ("L", "b", "l5", 40),  # meets r2
            ],
        )
    assert got == [
        ("L", "a", "l1", 0, []),
        ("R", "a", "r1", 5, [("a", "l1+r1", 5)]),
        ("L", "a", "l2", 12, [("a", "l2+r1", 12)]),
        ("R", "b", "r2", 30, []),
        ("L", "a", "l3", 8, []),
        ("R", "a", "r3", 25, []),
        ("L", "a", "l4", 33, [("a", "l4+r3", 33)]),
        ("L", "b", "l5", 40, [("b", "l5+r2", 40)]),
    ]


def test_stream_stream_join_with_asymmetric_windows(make_app, backend, out):
    app = make_app(stores=backend)
    windows = JoinWindows.of(10).after(2)  # right records from 10 before to 2 after the left
    app.stream("L").join(app.stream("R"), joined, windows).to("out")
    with app.test_driver() as d:
        got = pipe_each(
            d,
            out,
            "out",
            [
                ("L", "a", "x", 10),
                ("R", "a", "y", 12),  # left records in [10, 22]: x
                ("R", "a", "z", 13),  # left records in [11, 23]: none
                ("L", "a", "w", 20),  # right records in [10, 22]: y and z, oldest first
            ],
        )
    assert got == [
        ("L", "a", "x", 10, []),
        ("R", "a", "y", 12, [("a", "x+y", 12)]),
        ("R", "a", "z", 13, []),
        ("L", "a", "w", 20, [("a", "w+y", 20), ("a", "w+z", 20)]),
    ]


def test_stream_stream_left_join_emits_unmatched_left_records_when_their_window_closes(
    make_app, backend, out
):
    app = make_app(stores=backend)
    app.stream("L").left_join(app.stream("R"), joined, JoinWindows.of(10).grace(5)).to("out")
    with app.test_driver() as d:
        got = pipe_each(
            d,
            out,
            "out",
            [
                ("L", "a", "l1", 0),
                ("R", "a", "r1", 7),  # l1 has its partner: never emitted alone
                ("L", "b", "l2", 10),  # waits: its window closes after 10 + 10 + 5
                ("L", "a", "l3", 20),
                ("R", "c", "r2", 26),  # stream time 26 > 25: l2 goes out alone
                ("R", "a", "r3", 22),  # out of order within grace: meets l3
                ("L", "a", "l4", 14),  # out of order within grace: meets r1 and r3
                ("L", "d", "l5", 30),
                ("L", "a", "l6", 3),  # 3 + 15 < 30: dropped
                ("R", "e", "r4", 50),  # l5's window closed at 45
            ],
        )
    assert got == [
        ("L", "a", "l1", 0, []),
        ("R", "a", "r1", 7, [("a", "l1+r1", 7)]),
        ("L", "b", "l2", 10, []),
        ("L", "a", "l3", 20, []),
        ("R", "c", "r2", 26, [("b", "l2+None", 10)]),
        ("R", "a", "r3", 22, [("a", "l3+r3", 22)]),
        ("L", "a", "l4", 14, [("a", "l4+r1", 14), ("a", "l4+r3", 22)]),
        ("L", "d", "l5", 30, []),
        ("L", "a", "l6", 3, []),
        ("R", "e", "r4", 50, [("d", "l5+None", 30)]),
    ]


def test_stream_stream_outer_join_emits_both_sides_alone(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("L").outer_join(app.stream("R"), joined, JoinWindows.of(5)).to("out")
    with app.test_driver() as d:
        got = pipe_each(
            d,
            out,
            "out",
            [
                ("L", "a", "l1", 0),
                ("R", "b", "r1", 2),
                ("R", "a", "r2", 4),  # meets l1
                ("L", "c", "l2", 6),
                ("L", "x", "lx", 20),  # r1 (closed at 7) and l2 (closed at 11) go out
                ("R", "x", "rx", 30),  # lx closed at 25; rx has no partner in [25, 35]
                ("L", "x", "ly", 33),  # meets rx
            ],
        )
    assert got == [
        ("L", "a", "l1", 0, []),
        ("R", "b", "r1", 2, []),
        ("R", "a", "r2", 4, [("a", "l1+r2", 4)]),
        ("L", "c", "l2", 6, []),
        ("L", "x", "lx", 20, [("b", "None+r1", 2), ("c", "l2+None", 6)]),
        ("R", "x", "rx", 30, [("x", "lx+None", 20)]),
        ("L", "x", "ly", 33, [("x", "ly+rx", 33)]),
    ]


def test_records_left_alone_go_out_before_the_results_of_the_record_that_closed_them(
    make_app, backend, out
):
    app = make_app(stores=backend)
    app.stream("L").left_join(app.stream("R"), joined, JoinWindows.of(10)).to("out")
    with app.test_driver() as d:
        d.pipe("L", "b", "x", timestamp=0)
        d.pipe("R", "a", "r", timestamp=5)
        d.pipe("L", "a", "l", timestamp=11)  # closes x's window (0 + 10 < 11) and meets r
        assert out(d, "out") == [("b", "x+None", 0), ("a", "l+r", 11)]


def test_records_left_alone_survive_a_jump_in_stream_time(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("L").outer_join(app.stream("R"), joined, JoinWindows.of(5)).to("out")
    with app.test_driver() as d:
        d.pipe("L", "a", "l1", timestamp=0)
        d.pipe("R", "b", "r1", timestamp=1)
        d.pipe("L", "c", "l2", timestamp=1_000)  # far past every buffered record's retention
        assert out(d, "out") == [("a", "l1+None", 0), ("b", "None+r1", 1)]


def test_a_restored_outer_join_buffer_does_not_emit_records_that_found_a_partner(
    make_app, backend, out
):
    app = make_app(stores=backend)
    app.stream("L").outer_join(app.stream("R"), joined, JoinWindows.of(5), name="j").to("out")
    with app.test_driver() as first:
        first.pipe("L", "a", "l1", timestamp=0)  # waits in the outer buffer
        first.pipe("R", "a", "r1", timestamp=2)  # its partner: l1 leaves the buffer
        first.pipe("L", "b", "l2", timestamp=3)  # waits
        assert out(first, "out") == [("a", "l1+r1", 2)]
        changelogs = {
            store: first.read_raw(f"app-{store}-changelog")
            for store in ("j-this-store", "j-other-store", "j-outer-store")
        }
    with app.test_driver() as second:  # a new instance of the task, restored from changelogs
        for store, records in changelogs.items():
            for key, value, timestamp, _ in records:
                second.store(store).restore(key, value, timestamp)
        second.pipe("L", "c", "l3", timestamp=100)
        assert out(second, "out") == [("b", "l2+None", 3)]


def test_stream_stream_join_skips_records_without_key_or_value(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("L").left_join(app.stream("R"), joined, JoinWindows.of(10)).to("out")
    with app.test_driver() as d:
        d.pipe("R", "a", "r", timestamp=1)
        d.pipe("L", None, "no-key", timestamp=2)
        d.pipe("L", "a", None, timestamp=3)
        d.pipe("R", "z", "far", timestamp=100)
        assert out(d, "out") == []


def test_stream_stream_join_needs_windows(make_app):
    app = make_app()
    with pytest.raises(TopologyError, match="needs JoinWindows"):
        app.stream("L").join(app.stream("R"), joined)


# -- stream-table and stream-global-table -----------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "join",
            [
                ("c1", "ink@ann", 3),
                ("c2", "pad@bob", 50),
            ],
        ),
        (
            "left_join",
            [
                ("c1", "pen@None", 1),
                ("c1", "ink@ann", 3),
                ("c1", "cap@None", 5),
                ("c2", "pad@bob", 50),
            ],
        ),
    ],
)
def test_stream_table_join_looks_up_the_latest_row(make_app, backend, out, kind, expected):
    app = make_app(stores=backend)
    customers = app.table("customers", name="customers")
    orders = app.stream("orders")
    getattr(orders, kind)(
        customers, lambda o, c: f"{o['item']}@{None if c is None else c['name']}"
    ).to("enriched")
    with app.test_driver() as d:
        d.pipe("orders", "c1", {"item": "pen"}, timestamp=1)  # no customer yet
        d.pipe("customers", "c1", {"name": "ann"}, timestamp=2)  # table updates emit nothing
        d.pipe("orders", "c1", {"item": "ink"}, timestamp=3)
        d.pipe("customers", "c1", None, timestamp=4)  # tombstone
        d.pipe("orders", "c1", {"item": "cap"}, timestamp=5)
        d.pipe("orders", None, {"item": "nokey"}, timestamp=6)  # dropped: no key to look up
        d.pipe("orders", "c1", None, timestamp=7)  # dropped: nothing to join
        d.pipe("customers", "c2", {"name": "bob"}, timestamp=100)
        d.pipe("orders", "c2", {"item": "pad"}, timestamp=50)  # latest row, whatever its time
        assert out(d, "enriched") == expected


def test_stream_table_join_repartitions_a_rekeyed_stream(make_app, out):
    app = make_app()
    customers = app.table("customers")
    orders = app.stream("orders").select_key(lambda k, o: o["customer"])
    orders.join(customers, lambda o, c: [o["id"], c["name"]]).to("enriched")
    assert len(app.topology.repartition_topics) == 1
    with app.test_driver() as d:
        d.pipe("customers", "c1", {"name": "ann"}, timestamp=1)
        d.pipe("orders", "o9", {"id": "o9", "customer": "c1"}, timestamp=2)
        assert out(d, "enriched") == [("c1", ["o9", "ann"], 2)]


def test_stream_table_outer_join_is_refused(make_app):
    app = make_app()
    with pytest.raises(TopologyError, match="inner or left"):
        app.stream("s").outer_join(app.table("t"), joined, JoinWindows.of(1))


def test_stream_global_table_join_with_a_key_selector(make_app, backend, out):
    app = make_app(stores=backend)
    products = app.global_table("products", name="products")
    orders = app.stream("orders")
    orders.join(
        products, lambda o, p: f"{o['qty']}x{p['name']}", key_selector=lambda k, o: o.get("sku")
    ).to("inner")
    orders.left_join(
        products, lambda o, p: [o["qty"], p], key_selector=lambda k, o: o.get("sku")
    ).to("left")
    with app.test_driver() as d:
        d.pipe("products", "p1", {"name": "pen"}, timestamp=0)
        d.pipe("orders", "o1", {"sku": "p1", "qty": 2}, timestamp=5)
        d.pipe("orders", "o2", {"sku": "p2", "qty": 1}, timestamp=6)  # unknown product
        d.pipe("orders", None, {"sku": "p1", "qty": 4}, timestamp=7)  # no key needed
        d.pipe("orders", "o4", {"qty": 3}, timestamp=8)  # the selector gives None
        d.pipe("products", "p1", None, timestamp=9)
        d.pipe("orders", "o5", {"sku": "p1", "qty": 5}, timestamp=10)
        assert out(d, "inner") == [("o1", "2xpen", 5), (None, "4xpen", 7)]
        assert out(d, "left") == [
            ("o1", [2, {"name": "pen"}], 5),
            ("o2", [1, None], 6),
            (None, [4, {"name": "pen"}], 7),
            ("o4", [3, None], 8),
            ("o5", [5, None], 10),
        ]
        assert d.store("products").get("p1") is None


def test_a_global_table_join_needs_a_key_selector(make_app):
    app = make_app()
    with pytest.raises(TopologyError, match="key_selector"):
        app.stream("s").join(app.global_table("g"), joined)


# -- table-table ----------------------------------------------------------------------------------

TABLE_STEPS = [
    ("A", "k", "a1", 1),
    ("B", "k", "b1", 2),
    ("A", "k", "a2", 3),
    ("B", "k", None, 4),
    ("A", "k", None, 5),
    ("B", "k", "b2", 6),
    ("B", "j", "bj", 7),
    ("A", "j", "aj", 8),
    ("A", "z", None, 9),  # deleting a row that never existed
]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "join",
            [
                [],
                [("k", "a1/b1", 2)],
                [("k", "a2/b1", 3)],
                [("k", None, 4)],
                [],
                [],
                [],
                [("j", "aj/bj", 8)],
                [],
            ],
        ),
        (
            "left_join",
            [
                [("k", "a1/None", 1)],
                [("k", "a1/b1", 2)],
                [("k", "a2/b1", 3)],
                [("k", "a2/None", 4)],
                [("k", None, 5)],
                [],
                [],
                [("j", "aj/bj", 8)],
                [],
            ],
        ),
        (
            "outer_join",
            [
                [("k", "a1/None", 1)],
                [("k", "a1/b1", 2)],
                [("k", "a2/b1", 3)],
                [("k", "a2/None", 4)],
                [("k", None, 5)],
                [("k", "None/b2", 6)],
                [("j", "None/bj", 7)],
                [("j", "aj/bj", 8)],
                [],
            ],
        ),
    ],
)
def test_table_table_joins_with_tombstones(make_app, out, kind, expected):
    app = make_app()
    a, b = app.table("A"), app.table("B")
    getattr(a, kind)(b, lambda x, y: f"{x}/{y}").to_stream().to("out")
    with app.test_driver() as d:
        got = []
        for topic, key, value, ts in TABLE_STEPS:
            d.pipe(topic, key, value, timestamp=ts)
            got.append(out(d, "out"))
        assert got == expected


def test_a_named_table_table_join_is_queryable(make_app, backend):
    app = make_app(stores=backend)
    app.table("A").join(app.table("B"), lambda x, y: x + y, name="joined")
    with app.test_driver() as d:
        d.pipe("A", "k", 1, timestamp=1)
        d.pipe("B", "k", 10, timestamp=2)
        d.pipe("A", "j", 2, timestamp=3)
        d.pipe("B", "j", 20, timestamp=4)
        d.pipe("B", "k", 30, timestamp=5)
        assert list(d.store("joined").all()) == [("j", 22), ("k", 31)]
        assert d.store("joined").get_with_timestamp("k") == (31, 5)


# -- foreign key ----------------------------------------------------------------------------------

FK_STEPS = [
    ("customers", "c1", {"name": "ann"}, 1),
    ("orders", "o1", {"item": "pen", "cust": "c1"}, 2),
    ("orders", "o2", {"item": "ink", "cust": "c2"}, 3),  # c2 does not exist yet
    ("customers", "c2", {"name": "bob"}, 4),  # right insert: o2 joins
    ("customers", "c1", {"name": "ANN"}, 5),  # right update: o1 follows
    ("orders", "o1", {"item": "pen", "cust": "c2"}, 6),  # foreign key changes c1 -> c2
    ("customers", "c1", {"name": "x"}, 7),  # o1 no longer listens to c1
    ("orders", "o3", {"item": "cap"}, 8),  # no foreign key
    ("customers", "c2", None, 9),  # right delete: o1 and o2 lose their partner
    ("orders", "o2", None, 10),  # left delete
    ("orders", "o1", {"item": "pen"}, 11),  # foreign key becomes None
    ("orders", "o3", None, 12),  # left delete of a row without foreign key
    ("orders", "o4", {"item": "nib", "cust": "c9"}, 13),  # no such customer
    ("orders", "o4", {"item": "NIB", "cust": "c9"}, 14),  # still none
    ("customers", "c9", {"name": "cy"}, 15),
]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "join",
            [
                [],
                [("o1", "pen@ann", 2)],
                [],
                [("o2", "ink@bob", 4)],
                [("o1", "pen@ANN", 5)],
                [("o1", "pen@bob", 6)],
                [],
                [],
                [("o1", None, 9), ("o2", None, 9)],  # subscribers in key order
                [],  # o2's result is already deleted
                [],
                [],
                [],
                [],
                [("o4", "NIB@cy", 15)],
            ],
        ),
        (
            "left_join",
            [
                [],
                [("o1", "pen@ann", 2)],
                [("o2", "ink@None", 3)],
                [("o2", "ink@bob", 4)],
                [("o1", "pen@ANN", 5)],
                [("o1", "pen@bob", 6)],
                [],
                [("o3", "cap@None", 8)],
                [("o1", "pen@None", 9), ("o2", "ink@None", 9)],
                [("o2", None, 10)],
                [("o1", "pen@None", 11)],
                [("o3", None, 12)],
                [("o4", "nib@None", 13)],
                [("o4", "NIB@None", 14)],
                [("o4", "NIB@cy", 15)],
            ],
        ),
    ],
)
def test_foreign_key_join_updates_on_both_sides(make_app, backend, out, kind, expected):
    app = make_app(stores=backend)
    orders = app.table("orders", name="orders")
    customers = app.table("customers", name="customers")
    getattr(orders, kind)(
        customers,
        lambda o, c: f"{o['item']}@{None if c is None else c['name']}",
        foreign_key=lambda o: o.get("cust"),
    ).to_stream().to("out")
    with app.test_driver() as d:
        got = []
        for topic, key, value, ts in FK_STEPS:
            d.pipe(topic, key, value, timestamp=ts)
            got.append(out(d, "out"))
        assert got == expected


def test_foreign_key_join_result_feeds_a_regrouped_count(make_app):
    """The result table knows its old rows, so an aggregation downstream subtracts them."""
    app = make_app()
    orders = app.table("orders")
    customers = app.table("customers")
    per_city = orders.join(customers, lambda o, c: c["city"], foreign_key=lambda o: o["cust"])
    per_city.group_by(lambda k, city: (city, k)).count(name="orders-per-city")
    with app.test_driver() as d:
        d.pipe("customers", "c1", {"city": "oslo"}, timestamp=1)
        d.pipe("customers", "c2", {"city": "rome"}, timestamp=2)
        d.pipe("orders", "o1", {"cust": "c1"}, timestamp=3)
        d.pipe("orders", "o2", {"cust": "c1"}, timestamp=4)
        d.pipe("orders", "o1", {"cust": "c2"}, timestamp=5)
        d.pipe("customers", "c1", {"city": "rome"}, timestamp=6)
        assert list(d.store("orders-per-city").all()) == [("oslo", 0), ("rome", 2)]
