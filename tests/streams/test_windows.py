"""Windowed aggregations: tumbling, hopping, sliding and session windows, grace, late records,
out-of-order input and suppression of intermediate results.

Results are written by hand from Kafka Streams' rules:

* time windows ``[start, end)`` close when stream time reaches ``end + grace``; a record whose
  windows are all closed is dropped;
* sliding windows ``[t - size, t]`` (both ends inclusive) exist where records define them (each
  record's left window, and the right window ``[t + 1, t + 1 + size]`` of a record when a later
  one falls in it); they close when stream time passes ``end + grace``. Sluice deviates from
  Kafka for early records (``t < size``): their left window is ``[0, t]``, not ``[0, size]``;
* sessions ``[first, last]`` merge records at most ``gap`` apart; a record is dropped when its
  (merged) session ends before ``stream time - grace - gap``; results carry the session end as
  timestamp.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.dsl import SessionWindows, SlidingWindows, TimeWindows, Windowed
from sluice.serde import STRING
from sluice.streams.errors import TopologyError
from sluice.streams.operators.serdes import windowed_json


def W(key: str, start: int, end: int) -> Windowed:  # noqa: N802 - reads like the type
    return Windowed(key, start, end)


# -- tumbling and hopping --------------------------------------------------------------------


def test_tumbling_windows_accept_out_of_order_records_within_grace(make_app, backend, out):
    app = make_app(stores=backend)
    counts = (
        app.stream("clicks")
        .group_by_key()
        .windowed_by(TimeWindows.of(10).grace(5))
        .count(name="clicks-per-10")
    )
    counts.to_stream().to("out")
    with app.test_driver() as d:
        for key, ts in [("k", 1), ("k", 5), ("k", 12), ("k", 3), ("k", 16), ("k", 4), ("j", 2)]:
            d.pipe("clicks", key, "x", timestamp=ts)
        # k@3 at stream time 12: [0,10) closes at 15, still open. k@4 and j@2 at stream time 16:
        # [0,10) closed, dropped.
        assert out(d, "out") == [
            (W("k", 0, 10), 1, 1),
            (W("k", 0, 10), 2, 5),
            (W("k", 10, 20), 1, 12),
            (W("k", 0, 10), 3, 5),
            (W("k", 10, 20), 2, 16),
        ]
        store = d.store("clicks-per-10")
        assert list(store.fetch_range("k", 0, 100)) == [(0, 3), (10, 2)]
        assert store.fetch("j", 0) is None


def test_a_longer_retention_keeps_closed_windows_queryable(make_app, backend):
    app = make_app(stores=backend)
    windows = TimeWindows.of(10).grace(5)
    grouped = app.stream("clicks").group_by_key().windowed_by(windows)
    grouped.count(name="kept", retention=100)  # Kafka's Materialized.withRetention
    grouped.count(name="default")  # retention: size + grace = 15
    with app.test_driver() as d:
        for ts in (1, 12, 50):
            d.pipe("clicks", "k", "x", timestamp=ts)
        # observed time 50: [0, 10) and [10, 20) have passed 15 ms of retention, not 100
        assert list(d.store("kept").fetch_range("k", 0, 100)) == [(0, 1), (10, 1), (50, 1)]
        assert list(d.store("default").fetch_range("k", 0, 100)) == [(50, 1)]
    with pytest.raises(TopologyError, match=r"no smaller than its window size plus the grace"):
        grouped.count(name="short", retention=14)
    sessions = make_app().stream("s").group_by_key().windowed_by(SessionWindows.of(10))
    with pytest.raises(TopologyError, match=r"window gap plus the grace period: at least 11 ms"):
        sessions.count(name="short-sessions", retention="5ms")


def test_without_grace_a_window_closes_at_its_end(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("in").group_by_key().windowed_by(TimeWindows.of(10)).count().to_stream().to("out")
    with app.test_driver() as d:
        for ts in (1, 9, 10, 9, 19):
            d.pipe("in", "k", "x", timestamp=ts)
        # at stream time 10 the window [0,10) is closed: the second k@9 is dropped
        assert out(d, "out") == [
            (W("k", 0, 10), 1, 1),
            (W("k", 0, 10), 2, 9),
            (W("k", 10, 20), 1, 10),
            (W("k", 10, 20), 2, 19),
        ]


def test_hopping_windows_update_every_window_holding_the_record(make_app, backend, out):
    app = make_app(stores=backend)
    hopping = TimeWindows.of(10).advance_by(5)
    app.stream("in").group_by_key().windowed_by(hopping).count().to_stream().to("out")
    with app.test_driver() as d:
        for ts in (3, 7, 12):
            d.pipe("in", "k", "x", timestamp=ts)
        assert out(d, "out") == [
            (W("k", 0, 10), 1, 3),
            (W("k", 0, 10), 2, 7),
            (W("k", 5, 15), 1, 7),
            (W("k", 5, 15), 2, 12),
            (W("k", 10, 20), 1, 12),
        ]


def test_hopping_window_starts_are_multiples_of_the_advance(make_app, backend, out):
    app = make_app(stores=backend)
    hopping = TimeWindows.of(10).advance_by(4)
    app.stream("in").group_by_key().windowed_by(hopping).count().to_stream().to("out")
    with app.test_driver() as d:
        d.pipe("in", "k", "x", timestamp=12)
        assert out(d, "out") == [
            (W("k", 4, 14), 1, 12),
            (W("k", 8, 18), 1, 12),
            (W("k", 12, 22), 1, 12),
        ]


def test_windowed_reduce_and_aggregate(make_app, backend, out):
    app = make_app(stores=backend)
    grouped = app.stream("in").group_by_key().windowed_by(TimeWindows.of(100))
    grouped.reduce(lambda a, v: a + v).to_stream().to("sums")
    grouped.aggregate(lambda: [], lambda k, v, agg: [*agg, v]).to_stream().to("lists")
    with app.test_driver() as d:
        d.pipe_many("in", [("k", 1, 10), ("k", 2, 20), ("k", 4, 110)])
        assert out(d, "sums") == [
            (W("k", 0, 100), 1, 10),
            (W("k", 0, 100), 3, 20),
            (W("k", 100, 200), 4, 110),
        ]
        assert out(d, "lists") == [
            (W("k", 0, 100), [1], 10),
            (W("k", 0, 100), [1, 2], 20),
            (W("k", 100, 200), [4], 110),
        ]


# -- sliding ------------------------------------------------------------------------------------


def test_sliding_windows_in_order_and_out_of_order(make_app, backend, out):
    app = make_app(stores=backend)
    app.stream("in").group_by_key().windowed_by(SlidingWindows.of(10)).count().to_stream().to("out")
    with app.test_driver() as d:
        got = []
        for ts in (2, 5, 8, 20, 15, 12, 40, 29, 30):
            d.pipe("in", "k", "x", timestamp=ts)
            got.append((ts, out(d, "out")))
    assert got == [
        # early records: left windows [0, t] (Sluice; Kafka puts them all in [0, 10])
        (2, [(W("k", 0, 2), 1, 2)]),
        (5, [(W("k", 0, 5), 2, 5), (W("k", 3, 13), 1, 5)]),
        (8, [(W("k", 0, 8), 3, 8), (W("k", 3, 13), 2, 8), (W("k", 6, 16), 1, 8)]),
        (20, [(W("k", 10, 20), 1, 20)]),
        # 15 at stream time 20: its left window [5,15] has closed; [10,20] gets it and its
        # right window [16,26] (holding 20) is created
        (15, [(W("k", 10, 20), 2, 20), (W("k", 16, 26), 1, 20)]),
        (12, [(W("k", 10, 20), 3, 20), (W("k", 13, 23), 2, 20)]),
        (40, [(W("k", 30, 40), 1, 40)]),
        # 29 + 10 < 40: even its right window is closed, dropped
        (29, []),
        # [30,40] ends at stream time 40: still open (bounds are inclusive)
        (30, [(W("k", 30, 40), 2, 40), (W("k", 31, 41), 1, 40)]),
    ]


def test_sliding_windows_with_grace(make_app, backend, out):
    app = make_app(stores=backend)
    sliding = SlidingWindows.of(10).grace(5)
    app.stream("in").group_by_key().windowed_by(sliding).count().to_stream().to("out")
    with app.test_driver() as d:
        got = []
        for ts in (10, 20, 13, 4):
            d.pipe("in", "k", "x", timestamp=ts)
            got.append((ts, out(d, "out")))
    assert got == [
        (10, [(W("k", 0, 10), 1, 10)]),
        (20, [(W("k", 10, 20), 2, 20), (W("k", 11, 21), 1, 20)]),
        # close time 15: 13's left window [3,13] is closed, the windows holding it are not
        (13, [(W("k", 10, 20), 3, 20), (W("k", 11, 21), 2, 20), (W("k", 14, 24), 1, 20)]),
        (4, []),  # 4 + 10 < 15: dropped
    ]


def test_sliding_aggregate_sees_records_in_time_order(make_app, backend, out):
    app = make_app(stores=backend)
    (
        app.stream("in")
        .group_by_key()
        .windowed_by(SlidingWindows.of(10).grace(100))
        .aggregate(lambda: "", lambda k, v, agg: agg + v)
        .to_stream()
        .to("out")
    )
    with app.test_driver() as d:
        d.pipe_many("in", [("k", "b", 20), ("k", "a", 15)])
        assert out(d, "out") == [
            (W("k", 10, 20), "b", 20),
            (W("k", 5, 15), "a", 15),
            (W("k", 10, 20), "ab", 20),
            (W("k", 16, 26), "b", 20),
        ]


# -- sessions -----------------------------------------------------------------------------------


def test_sessions_merge_extend_and_drop_late_records(make_app, backend, out):
    app = make_app(stores=backend)
    sessions = SessionWindows.with_inactivity_gap(10).grace(20)
    app.stream("in").group_by_key().windowed_by(sessions).count(name="s").to_stream().to("out")
    with app.test_driver() as d:
        got = []
        for key, ts in [
            ("k", 0),
            ("k", 20),
            ("k", 10),  # bridges [0,0] and [20,20]
            ("j", 5),
            ("k", 45),  # stream time 45: close time 45 - 20 - 10 = 15
            ("k", 21),  # extends [0,20], which ends after 15
            ("k", 3),  # inside [0,21]
            ("j", 4),  # would make [4,5], ending before 15: dropped
            ("k", 60),  # close time 30
            ("k", 22),  # would make [0,22]: dropped
        ]:
            d.pipe("in", key, "x", timestamp=ts)
            got.append((key, ts, out(d, "out")))
        assert got == [
            ("k", 0, [(W("k", 0, 0), 1, 0)]),
            ("k", 20, [(W("k", 20, 20), 1, 20)]),
            (
                "k",
                10,
                [(W("k", 0, 0), None, 0), (W("k", 20, 20), None, 20), (W("k", 0, 20), 3, 20)],
            ),
            ("j", 5, [(W("j", 5, 5), 1, 5)]),
            ("k", 45, [(W("k", 45, 45), 1, 45)]),
            ("k", 21, [(W("k", 0, 20), None, 20), (W("k", 0, 21), 4, 21)]),
            ("k", 3, [(W("k", 0, 21), 5, 21)]),
            ("j", 4, []),
            ("k", 60, [(W("k", 60, 60), 1, 60)]),
            ("k", 22, []),
        ]
        # sessions ending at or before 60 - (gap + grace + 1) are gone from the store
        assert list(d.store("s").fetch("k")) == [(45, 45, 1), (60, 60, 1)]


def test_a_session_still_merges_a_record_gap_after_it_while_open(make_app, backend, out):
    app = make_app(stores=backend)
    sessions = SessionWindows.with_inactivity_gap(10)
    app.stream("in").group_by_key().windowed_by(sessions).count().to_stream().to("out")
    with app.test_driver() as d:
        d.pipe_many("in", [("k", "x", 0), ("j", "x", 10), ("k", "x", 10), ("k", "x", 25)])
        assert out(d, "out") == [
            (W("k", 0, 0), 1, 0),
            (W("j", 10, 10), 1, 10),
            (W("k", 0, 0), None, 0),
            (W("k", 0, 10), 2, 10),
            (W("k", 25, 25), 1, 25),  # 15 after [0,10]: a new session
        ]


def test_session_merger_runs_before_the_aggregator(make_app, backend, out):
    app = make_app(stores=backend)
    grouped = app.stream("in").group_by_key().windowed_by(SessionWindows.of(10).grace(20))
    grouped.reduce(lambda a, v: a + v).to_stream().to("joined")
    grouped.aggregate(
        lambda: [], lambda k, v, agg: [*agg, v], merger=lambda k, a, b: a + b
    ).to_stream().to("lists")
    with app.test_driver() as d:
        d.pipe_many("in", [("k", "a", 0), ("k", "b", 20), ("k", "c", 10)])
        assert out(d, "joined") == [
            (W("k", 0, 0), "a", 0),
            (W("k", 20, 20), "b", 20),
            (W("k", 0, 0), None, 0),
            (W("k", 20, 20), None, 20),
            (W("k", 0, 20), "abc", 20),
        ]
        assert out(d, "lists")[-1] == (W("k", 0, 20), ["a", "b", "c"], 20)


# -- suppression ----------------------------------------------------------------------------------


def test_suppress_emits_one_final_result_per_time_window(make_app, backend, out):
    app = make_app(stores=backend)
    (
        app.stream("in")
        .group_by_key()
        .windowed_by(TimeWindows.of(10).grace(5))
        .count()
        .suppress_until_window_closes()
        .to_stream()
        .to("final")
    )
    with app.test_driver() as d:
        got = []
        for key, ts in [
            ("k", 1),
            ("k", 5),
            ("j", 8),
            ("k", 12),
            ("k", 3),
            ("j", 14),
            ("k", 16),  # stream time 16: [0,10) closed (10 + 5 <= 16)
            ("k", 4),  # late, dropped: nothing reaches the buffer
            ("x", 25),  # [10,20) closed
            ("k", 31),
        ]:
            d.pipe("in", key, "x", timestamp=ts)
            got.append((key, ts, out(d, "final")))
        assert got == [
            ("k", 1, []),
            ("k", 5, []),
            ("j", 8, []),
            ("k", 12, []),
            ("k", 3, []),
            ("j", 14, []),
            ("k", 16, [(W("k", 0, 10), 3, 5), (W("j", 0, 10), 1, 8)]),
            ("k", 4, []),
            ("x", 25, [(W("k", 10, 20), 2, 16), (W("j", 10, 20), 1, 14)]),
            ("k", 31, []),
        ]


def test_suppress_waits_for_a_session_to_close(make_app, backend, out):
    app = make_app(stores=backend)
    (
        app.stream("in")
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(10))
        .count()
        .suppress_until_window_closes()
        .to_stream()
        .to("final")
    )
    with app.test_driver() as d:
        got = []
        for key, ts in [("k", 0), ("k", 5), ("j", 10), ("k", 16), ("j", 21), ("k", 20), ("x", 40)]:
            d.pipe("in", key, "x", timestamp=ts)
            got.append((key, ts, out(d, "final")))
        assert got == [
            ("k", 0, []),
            ("k", 5, []),  # [0,0] merged into [0,5]: the buffer drops [0,0]
            ("j", 10, []),
            ("k", 16, [(W("k", 0, 5), 2, 5)]),  # 5 < 16 - 10: closed
            ("j", 21, [(W("j", 10, 10), 1, 10)]),
            ("k", 20, []),  # [16,16] merged into [16,20]
            ("x", 40, [(W("k", 16, 20), 2, 20), (W("j", 21, 21), 1, 21)]),
        ]


def test_suppress_waits_until_a_sliding_window_end_is_passed(make_app, backend, out):
    app = make_app(stores=backend)
    (
        app.stream("in")
        .group_by_key()
        .windowed_by(SlidingWindows.of(10))
        .count()
        .suppress_until_window_closes()
        .to_stream()
        .to("final")
    )
    with app.test_driver() as d:
        got = []
        for ts in (10, 10, 15, 30):
            d.pipe("in", "k", "x", timestamp=ts)
            got.append((ts, out(d, "final")))
        assert got == [
            (10, []),
            (10, []),  # [0,10] still open at stream time 10: it counts the second record
            (15, [(W("k", 0, 10), 2, 10)]),
            (30, [(W("k", 5, 15), 3, 15), (W("k", 11, 21), 1, 15)]),
        ]


def test_a_restored_suppression_buffer_still_emits_its_windows(make_app, backend, out):
    app = make_app(stores=backend)
    (
        app.stream("in")
        .group_by_key()
        .windowed_by(TimeWindows.of(10))
        .count(name="counts")
        .suppress_until_window_closes(name="buffer")
        .to_stream()
        .to("final")
    )
    with app.test_driver() as first:
        first.pipe_many("in", [("k", "x", 1), ("k", "x", 5)])
        assert out(first, "final") == []
        changelogs = {
            store: first.read_raw(f"app-{store}-changelog") for store in ("counts", "buffer")
        }
    with app.test_driver() as second:  # a new instance of the task, restored from changelogs
        for store, records in changelogs.items():
            for key, value, timestamp, _ in records:
                second.store(store).restore(key, value, timestamp)
        second.pipe("in", "j", "x", timestamp=12)
        assert out(second, "final") == [(W("k", 0, 10), 2, 5)]


# -- the hand-made fast paths agree with the general code -------------------------------------

_JSON_KEYS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@given(key=_JSON_KEYS, start=st.integers(-(2**62), 2**62), size=st.integers(1, 2**40))
def test_windowed_json_writes_what_orjson_writes_for_the_dict(key, start, size):
    serde = windowed_json(STRING)
    data = serde.serialize(Windowed(key, start, start + size))
    assert data == orjson.dumps({"key": key, "window": {"start": start, "end": start + size}})
    assert serde.deserialize(data) == Windowed(key, start, start + size)


@given(timestamp=st.integers(0, 10**6), size=st.integers(1, 500), data=st.data())
def test_windows_for_are_the_windows_holding_the_timestamp(timestamp, size, data):
    advance = data.draw(st.sampled_from([size, data.draw(st.integers(1, size))]))
    windows = TimeWindows.of(size).advance_by(advance)
    every = [
        (start, start + size)
        for start in range(max(0, timestamp - size) // advance * advance, timestamp + 1, advance)
        if start <= timestamp < start + size
    ]
    assert windows.windows_for(timestamp) == every
