"""State stores: one contract suite for every key-value backend, then window and session stores.

The key-value contract runs against ``MemoryBackend`` and ``RocksDBBackend`` with string keys
(RocksDB orders keys by their serialized bytes; for UTF-8 strings that is Python's order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sluice.dsl import SessionWindows, TimeWindows
from sluice.serde import INT64, JSON, STRING
from sluice.streams.state.base import StoreContext
from sluice.streams.state.keyvalue import KeyValueBackend, KeyValueStore, MemoryBackend
from sluice.streams.state.rocksdb import RocksDBBackend
from sluice.streams.state.rocksdb_session import RocksDBSessionBackend
from sluice.streams.state.rocksdb_window import RocksDBWindowBackend
from sluice.streams.state.session import MemorySessionBackend, SessionBackend, SessionStore
from sluice.streams.state.window import MemoryWindowBackend, WindowBackend, WindowStore

CHANGELOG = "app-store-changelog"
Sent = list[tuple[str, int, bytes, bytes | None, int]]

BACKENDS: dict[str, Callable[[], KeyValueBackend]] = {
    "memory": MemoryBackend,
    "rocksdb": lambda: RocksDBBackend(STRING, JSON),
}


@pytest.fixture(params=sorted(BACKENDS))
def open_store(
    request: pytest.FixtureRequest,
) -> Iterator[Callable[..., tuple[KeyValueStore, Sent]]]:
    """``open_store(directory=None)``: a fresh store on the backend under test, logging to a
    list of ``(topic, partition, key, value, timestamp)``; closed after the test."""
    opened: list[KeyValueStore] = []

    def open_(directory: Path | None = None) -> tuple[KeyValueStore, Sent]:
        sent: Sent = []
        store = KeyValueStore(STRING, JSON, BACKENDS[request.param]())
        store.init(StoreContext(CHANGELOG, 3, lambda *r: sent.append(r), directory))
        opened.append(store)
        return store, sent

    yield open_
    for store in opened:
        store.close()


# -- key-value contract ---------------------------------------------------------------------------


def test_get_put_delete(open_store):
    store, _ = open_store()
    assert store.get("a") is None
    store.put("a", {"n": 1}, 10)
    store.put("b", [1, 2], 11)
    assert store.get("a") == {"n": 1}
    assert store.get_with_timestamp("b") == ([1, 2], 11)
    store.put("a", {"n": 2}, 12)
    assert store.get_with_timestamp("a") == ({"n": 2}, 12)
    assert store.delete("a", 13) == {"n": 2}
    assert store.get("a") is None
    assert store.get_with_timestamp("a") is None
    assert store.delete("never", 14) is None
    store.put("b", None, 15)  # a None value deletes
    assert store.get("b") is None


def test_range_and_all_in_key_order_with_inclusive_bounds(open_store):
    store, _ = open_store()
    for key in ["d", "b", "a", "e", "c"]:
        store.put(key, key.upper(), 1)
    store.flush()
    store.put("bb", "BB", 2)  # not flushed yet: still seen
    store.delete("e", 3)
    assert list(store.all()) == [("a", "A"), ("b", "B"), ("bb", "BB"), ("c", "C"), ("d", "D")]
    assert list(store.range("b", "c")) == [("b", "B"), ("bb", "BB"), ("c", "C")]
    assert list(store.range("bz", "zz")) == [("c", "C"), ("d", "D")]
    assert list(store.range(None, "b")) == [("a", "A"), ("b", "B")]
    assert list(store.range("c")) == [("c", "C"), ("d", "D")]
    assert list(store.range("x", "z")) == []


def test_len_counts_live_keys_across_flushes(open_store):
    store, _ = open_store()
    assert len(store) == 0
    store.put("a", 1, 1)
    store.flush()
    store.put("a", 2, 2)
    store.flush()
    store.put("b", 3, 3)
    assert len(store) == 2
    store.delete("b", 4)
    store.flush()
    store.delete("missing", 5)
    store.flush()
    assert len(store) == 1


def test_flush_logs_each_dirty_key_once_with_its_last_value(open_store):
    store, sent = open_store()
    store.put("a", 1, 10)
    store.put("b", 2, 11)
    store.put("a", 3, 12)
    store.delete("b", 13)
    store.put("c", 4, 14)
    assert sent == []  # nothing is logged before the flush
    store.flush()
    assert sent == [
        (CHANGELOG, 3, b"a", b"3", 12),
        (CHANGELOG, 3, b"b", None, 13),
        (CHANGELOG, 3, b"c", b"4", 14),
    ]
    store.flush()
    assert len(sent) == 3  # nothing dirty: nothing logged


def test_an_unlogged_store_sends_nothing(open_store):
    store, sent = open_store()
    store.logged = False
    store.put("a", 1, 1)
    store.flush()
    assert sent == []
    assert store.get("a") == 1


def test_restore_applies_changelog_records_without_logging_them(open_store):
    store, sent = open_store()
    for key, value, ts in [
        (b"a", b'{"n":1}', 5),
        (b"b", b"2", 6),
        (b"a", None, 7),
        (b"c", b"[3]", 8),
        (b"c", b"[4]", 9),
    ]:
        store.restore(key, value, ts)
    store.flush()
    assert sent == []
    assert list(store.all()) == [("b", 2), ("c", [4])]
    assert store.get_with_timestamp("c") == ([4], 9)
    assert len(store) == 2


def test_a_store_restored_from_its_own_changelog_holds_the_same_entries(open_store):
    store, sent = open_store()
    store.put("x", "one", 1)
    store.put("y", "two", 2)
    store.flush()
    store.delete("x", 3)
    store.put("z", "three", 4)
    store.flush()
    copy, _ = open_store()
    for _, _, key, value, ts in sent:
        copy.restore(key, value, ts)
    assert list(copy.all()) == list(store.all()) == [("y", "two"), ("z", "three")]
    assert copy.get_with_timestamp("z") == store.get_with_timestamp("z") == ("three", 4)


def test_wipe_forgets_everything(open_store):
    store, sent = open_store()
    store.put("a", 1, 1)
    store.flush()
    store.put("b", 2, 2)
    store.wipe()
    store.flush()
    assert list(store.all()) == []
    assert len(sent) == 1  # the dirty "b" was forgotten, not logged


def test_rocksdb_keeps_flushed_entries_across_reopen(tmp_path):
    directory = tmp_path / "0_0" / "counts"

    def open_() -> KeyValueStore:
        store = KeyValueStore(STRING, INT64, RocksDBBackend(STRING, INT64))
        store.init(StoreContext(None, 0, lambda *r: None, directory))
        return store

    store = open_()
    store.put("a", 1, 10)
    store.put("b", 2, 20)
    store.flush()
    store.put("a", 5, 30)
    store.close()  # close writes what is pending
    reopened = open_()
    assert list(reopened.all()) == [("a", 5), ("b", 2)]
    assert reopened.get_with_timestamp("a") == (5, 30)
    reopened.close()
    assert directory.is_dir()


def test_the_app_picks_the_backend_of_its_key_value_stores(make_app):
    for kind, backend_type in [("memory", MemoryBackend), ("rocksdb", RocksDBBackend)]:
        app = make_app(stores=kind)
        app.stream("in").group_by_key().count(name="counts")
        with app.test_driver() as d:
            store = d.store("counts")
            assert isinstance(store, KeyValueStore)
            assert isinstance(store.backend, backend_type)


def test_the_app_picks_the_backend_of_its_window_and_session_stores(make_app):
    kinds = [
        ("memory", MemoryWindowBackend, MemorySessionBackend),
        ("rocksdb", RocksDBWindowBackend, RocksDBSessionBackend),
    ]
    for kind, window_type, session_type in kinds:
        app = make_app(stores=kind)
        grouped = app.stream("in").group_by_key()
        grouped.windowed_by(TimeWindows.of(10)).count(name="windows")
        grouped.windowed_by(SessionWindows.of(10)).count(name="sessions")
        with app.test_driver() as d:
            windows, sessions = d.store("windows"), d.store("sessions")
            assert isinstance(windows, WindowStore) and isinstance(sessions, SessionStore)
            assert isinstance(windows.backend, window_type)
            assert isinstance(sessions.backend, session_type)
            assert windows.persistent is sessions.persistent is (kind == "rocksdb")


# -- window store ---------------------------------------------------------------------------------


WindowStoreFactory = Callable[..., tuple[WindowStore, Sent]]


def _window_backend(kind: str, retention: int, duplicates: bool) -> WindowBackend:
    if kind == "memory":
        return MemoryWindowBackend(duplicates)
    return RocksDBWindowBackend(STRING, INT64, retention, retain_duplicates=duplicates)


@pytest.fixture(params=["memory", "rocksdb"])
def window_store(request: pytest.FixtureRequest) -> Iterator[WindowStoreFactory]:
    """``window_store(retention, duplicates=False)``: a fresh window store on the backend under
    test and the list its changelog records go to; closed after the test."""
    opened: list[WindowStore] = []

    def open_(retention: int, *, duplicates: bool = False) -> tuple[WindowStore, Sent]:
        sent: Sent = []
        backend = _window_backend(request.param, retention, duplicates)
        store = WindowStore(STRING, INT64, retention, retain_duplicates=duplicates, backend=backend)
        store.init(StoreContext("app-w-changelog", 0, lambda *r: sent.append(r)))
        opened.append(store)
        return store, sent

    yield open_
    for store in opened:
        store.close()


def test_window_store_fetches_by_key_and_window_start(window_store: WindowStoreFactory) -> None:
    store, _ = window_store(100)
    store.put("a", 1, 0, 5)
    store.put("a", 2, 50, 55)
    store.put("b", 7, 50, 51)
    store.put("a", 3, 0, 8)  # replaces
    assert store.fetch("a", 0) == 3
    assert store.fetch_with_timestamp("a", 0) == (3, 8)
    assert store.fetch("a", 10) is None
    assert list(store.fetch_range("a", 0, 50)) == [(0, 3), (50, 2)]
    assert list(store.fetch_range("a", 1, 49)) == []
    assert list(store.fetch_all(0, 60)) == [(("a", 0), 3), (("a", 50), 2), (("b", 50), 7)]
    assert list(store.all()) == [(("a", 0), 3), (("a", 50), 2), (("b", 50), 7)]
    store.put("b", None, 50, 60)  # deletes
    assert store.fetch("b", 50) is None


def test_window_store_expires_windows_as_observed_time_moves_on(
    window_store: WindowStoreFactory,
) -> None:
    store, _ = window_store(100)
    store.put("a", 1, 0, 0)
    store.put("a", 2, 50, 50)
    store.put("a", 3, 100, 100)  # observed 100: the window at 0 is gone (0 <= 100 - 100)
    assert list(store.fetch_range("a", 0, 200)) == [(50, 2), (100, 3)]
    store.put("a", 4, 0, 0)  # already expired: ignored
    assert store.fetch("a", 0) is None
    store.put("a", 5, 1, 1)  # 1 > 100 - 100: kept
    assert store.fetch("a", 1) == 5
    store.put("b", 6, 151, 151)  # observed 151: the windows at 1 and 50 are gone too
    assert list(store.all()) == [(("a", 100), 3), (("b", 151), 6)]


def test_window_store_changelog_round_trip(window_store: WindowStoreFactory) -> None:
    store, sent = window_store(1_000)
    store.put("a", 1, 0, 3)
    store.put("a", 2, 0, 4)  # logged once
    store.put("b", 3, 60, 61)
    store.put("c", 9, 60, 62)
    store.put("c", None, 60, 63)  # a tombstone, logged with the window start as timestamp
    store.flush()
    assert sent == [
        ("app-w-changelog", 0, b"a" + (0).to_bytes(8, "big"), INT64.serialize(2), 4),
        ("app-w-changelog", 0, b"b" + (60).to_bytes(8, "big"), INT64.serialize(3), 61),
        ("app-w-changelog", 0, b"c" + (60).to_bytes(8, "big"), None, 60),
    ]
    copy, copy_sent = window_store(1_000)
    for _, _, key, value, ts in sent:
        copy.restore(key, value, ts)
    copy.flush()
    assert copy_sent == []
    assert list(copy.all()) == [(("a", 0), 2), (("b", 60), 3)]
    assert copy.fetch_with_timestamp("a", 0) == (2, 4)


def test_window_store_with_duplicates_keeps_every_put_and_logs_removals(
    window_store: WindowStoreFactory,
) -> None:
    store, sent = window_store(1_000, duplicates=True)
    store.put("k", 1, 10, 10)
    store.put("k", 2, 10, 11)
    store.put("k", 3, 20, 20)
    store.flush()
    assert list(store.fetch_range("k", 0, 100)) == [(10, 1), (10, 2), (20, 3)]
    assert store.fetch("k", 10) == 2  # the last one put
    assert sent == [
        ("app-w-changelog", 0, b"k" + _start_seq(10, 1), INT64.serialize(1), 10),
        ("app-w-changelog", 0, b"k" + _start_seq(10, 2), INT64.serialize(2), 11),
        ("app-w-changelog", 0, b"k" + _start_seq(20, 3), INT64.serialize(3), 20),
    ]
    first = next(entry for _, entry in store.fetch_entries("k", 10, 10))
    store.remove_entry("k", 10, first)
    store.flush()
    assert list(store.fetch_range("k", 0, 100)) == [(10, 2), (20, 3)]
    assert sent[3:] == [("app-w-changelog", 0, b"k" + _start_seq(10, 1), None, 10)]
    copy, copy_sent = window_store(1_000, duplicates=True)
    for _, _, key, value, ts in sent:
        copy.restore(key, value, ts)
    assert list(copy.fetch_range("k", 0, 100)) == [(10, 2), (20, 3)]
    restored = next(entry for _, entry in copy.fetch_entries("k", 20, 20))
    copy.remove_entry("k", 20, restored)  # a restored duplicate is removed under its number
    copy.put("k", 4, 20, 21)  # numbering goes on after the restored sequence
    copy.flush()
    assert copy_sent == [
        ("app-w-changelog", 0, b"k" + _start_seq(20, 3), None, 20),
        ("app-w-changelog", 0, b"k" + _start_seq(20, 4), INT64.serialize(4), 21),
    ]


def _start_seq(start: int, seq: int) -> bytes:
    return start.to_bytes(8, "big") + seq.to_bytes(4, "big")


# -- session store --------------------------------------------------------------------------------


SessionStoreFactory = Callable[[int], tuple[SessionStore, Sent]]


@pytest.fixture(params=["memory", "rocksdb"])
def session_store(request: pytest.FixtureRequest) -> Iterator[SessionStoreFactory]:
    """``session_store(retention)``: a fresh session store on the backend under test and the
    list its changelog records go to; closed after the test."""
    opened: list[SessionStore] = []

    def open_(retention: int) -> tuple[SessionStore, Sent]:
        sent: Sent = []
        backend: SessionBackend = MemorySessionBackend()
        if request.param == "rocksdb":
            backend = RocksDBSessionBackend(STRING, INT64, retention)
        store = SessionStore(STRING, INT64, retention, backend=backend)
        store.init(StoreContext("app-s-changelog", 0, lambda *r: sent.append(r)))
        opened.append(store)
        return store, sent

    yield open_
    for store in opened:
        store.close()


def test_session_store_finds_overlapping_sessions(session_store: SessionStoreFactory) -> None:
    store, _ = session_store(1_000)
    store.put("a", 0, 10, 2, 10)
    store.put("a", 100, 130, 5, 130)
    store.put("b", 0, 0, 1, 0)
    assert store.find_sessions("a", earliest_end=5, latest_start=105) == [
        (0, 10, 2),
        (100, 130, 5),
    ]
    assert store.find_sessions("a", earliest_end=11, latest_start=99) == []
    assert store.find_sessions("a", earliest_end=10, latest_start=100) == [
        (0, 10, 2),
        (100, 130, 5),
    ]
    store.remove("a", 0, 10)
    assert list(store.fetch("a")) == [(100, 130, 5)]
    assert list(store.all()) == [(("a", 100, 130), 5), (("b", 0, 0), 1)]


def test_session_store_expires_sessions_by_their_end(session_store: SessionStoreFactory) -> None:
    store, _ = session_store(20)
    store.put("a", 0, 10, 1, 10)
    store.put("b", 5, 25, 1, 25)
    store.put("c", 30, 30, 1, 30)  # observed 30: sessions ending at or before 10 are gone
    assert list(store.all()) == [(("b", 5, 25), 1), (("c", 30, 30), 1)]
    store.put("a", 0, 9, 1, 9)  # already expired: ignored
    assert list(store.fetch("a")) == []


def test_session_store_changelog_round_trip_with_a_merge(
    session_store: SessionStoreFactory,
) -> None:
    store, sent = session_store(1_000)
    store.put("k", 0, 0, 1, 0)
    store.flush()
    store.remove("k", 0, 0)  # merged into [0, 5]
    store.put("k", 0, 5, 2, 5)
    store.flush()
    bounds = [
        (int.from_bytes(k[-16:-8], "big"), int.from_bytes(k[-8:], "big")) for _, _, k, _, _ in sent
    ]
    assert bounds == [(0, 0), (0, 0), (0, 5)]
    assert [(value, ts) for _, _, _, value, ts in sent] == [
        (INT64.serialize(1), 0),
        (None, 0),
        (INT64.serialize(2), 5),
    ]
    copy, copy_sent = session_store(1_000)
    for _, _, key, value, ts in sent:
        copy.restore(key, value, ts)
    copy.flush()
    assert copy_sent == []
    assert list(copy.all()) == [(("k", 0, 5), 2)]


# -- RocksDB segments -----------------------------------------------------------------------------


def _rocksdb_window_store(directory: Path, *, duplicates: bool = False) -> WindowStore:
    backend = RocksDBWindowBackend(
        STRING, INT64, 30, retain_duplicates=duplicates, segment_interval_ms=10
    )
    store = WindowStore(STRING, INT64, 30, retain_duplicates=duplicates, backend=backend)
    store.init(StoreContext("app-w-changelog", 0, lambda *r: None, directory))
    return store


def test_rocksdb_window_segments_are_dropped_whole_and_survive_a_clean_reopen(tmp_path):
    directory = tmp_path / "w"
    store = _rocksdb_window_store(directory)
    for start in range(0, 40, 5):
        store.put("a", start, start, start)
        store.flush()  # a commit each time: every segment is written
    # keys whose bytes start with "a" stay apart from it
    store.put("ab", 1, 35, 35)
    store.put("a\x00", 2, 35, 35)
    store.flush()
    # observed 35, retention 30: starts <= 5 are gone; segment [0, 10) still holds 5 on disk
    assert list(store.fetch_range("a", 0, 100)) == [(s, s) for s in range(10, 40, 5)]
    assert sorted(p.name for p in directory.iterdir()) == [
        ".position",
        "w.0",
        "w.10",
        "w.20",
        "w.30",
    ]
    store.put("b", 1, 40, 40)  # observed 40: [0, 10) has passed retention as a whole
    store.flush()
    assert sorted(p.name for p in directory.iterdir()) == [
        ".position",
        "w.10",
        "w.20",
        "w.30",
        "w.40",
    ]
    store.close()
    reopened = _rocksdb_window_store(directory)
    assert reopened.observed_time == 40
    assert list(reopened.fetch_range("a", 0, 100)) == [(s, s) for s in range(15, 40, 5)]
    assert reopened.fetch("ab", 35) == 1 and reopened.fetch("a\x00", 35) == 2
    assert list(reopened.fetch_all(35, 40)) == [
        (("a", 35), 35),
        (("a\x00", 35), 2),
        (("ab", 35), 1),
        (("b", 40), 1),
    ]
    reopened.put("a", 9, 10, 10)  # expired: 10 <= 40 - 30
    assert reopened.fetch("a", 10) is None
    reopened.close()


def test_rocksdb_duplicates_keep_numbering_across_a_clean_reopen(tmp_path):
    store = _rocksdb_window_store(tmp_path / "j", duplicates=True)
    store.put("k", 1, 20, 20)
    store.put("k", 2, 20, 21)
    store.close()
    reopened = _rocksdb_window_store(tmp_path / "j", duplicates=True)
    reopened.put("k", 3, 20, 22)  # number 3: does not overwrite the first duplicate
    assert [entry for _, entry in reopened.fetch_entries("k", 20, 20)] == [
        (1, 20, 1),
        (2, 21, 2),
        (3, 22, 3),
    ]
    reopened.close()


def test_rocksdb_sessions_are_segmented_by_end(tmp_path):
    backend = RocksDBSessionBackend(STRING, INT64, 30, segment_interval_ms=10)
    store = SessionStore(STRING, INT64, 30, backend=backend)
    directory = tmp_path / "s"
    store.init(StoreContext("app-s-changelog", 0, lambda *r: None, directory))
    store.put("a", 0, 4, 1, 4)
    store.put("a", 8, 25, 2, 25)
    store.put("ab", 8, 25, 3, 25)
    store.flush()
    assert store.find_sessions("a", 0, 100) == [(0, 4, 1), (8, 25, 2)]
    assert sorted(p.name for p in directory.iterdir()) == [".position", "s.0", "s.20"]
    store.put("b", 40, 40, 1, 40)  # observed 40: sessions ending at or before 10 are gone
    store.flush()
    assert store.find_sessions("a", 0, 100) == [(8, 25, 2)]
    assert sorted(p.name for p in directory.iterdir()) == [".position", "s.20", "s.40"]
    store.close()
