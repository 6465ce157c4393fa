"""The initial snapshot and its handover to streaming: nothing missed, nothing doubled."""

from __future__ import annotations

import logging
import random
import threading
from typing import Any

import pytest

from sluice.connect.api.data import SourceRecord
from tests.connectors.postgres.fixtures import CaptureFactory, Database, describe, value_of

Row = tuple[int, int]  # (id, version)


class Writer(threading.Thread):
    """Inserts, updates and deletes rows of ``items`` (one statement per transaction) and
    remembers every state each id went through; versions are unique across the run.

    It writes at least ``operations``, and goes on until ``after`` more were written since
    :meth:`capture_started` (at most 4x ``operations`` in all): however late the slot comes,
    some writes are streamed after its snapshot."""

    def __init__(self, db: Database, first_id: int, operations: int, after: int = 300) -> None:
        super().__init__(name="writer", daemon=True)
        self.connection = db.connect()
        self.random = random.Random(7)
        self.operations = operations
        self.after = after
        self._started_at: int | None = None
        self.written = 0
        self.next_id = first_id
        self.version = 10_000
        self.live: list[int] = list(range(first_id))
        self.history: dict[int, list[int | None]] = {i: [0] for i in range(first_id)}
        self.error: BaseException | None = None
        self.started_writing = threading.Event()

    def run(self) -> None:
        try:
            with self.connection.cursor() as cursor:
                while self.written < 4 * self.operations and not self._done():
                    self._one(cursor)
                    self.written += 1
                    self.started_writing.set()
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            self.started_writing.set()
            self.connection.close()

    def capture_started(self) -> None:
        """The slot exists: from now on ``after`` more writes are streamed."""
        self._started_at = self.written

    def _done(self) -> bool:
        started = self._started_at
        return (
            self.written >= self.operations
            and started is not None
            and self.written - started >= self.after
        )

    def _one(self, cursor: Any) -> None:
        self.version += 1
        choice = self.random.random()
        if choice < 0.3 or not self.live:
            key, self.next_id = self.next_id, self.next_id + 1
            cursor.execute("INSERT INTO items VALUES (%s, %s)", (key, self.version))
            self.live.append(key)
            self.history.setdefault(key, [None]).append(self.version)
        elif choice < 0.85:
            key = self.random.choice(self.live)
            cursor.execute("UPDATE items SET version = %s WHERE id = %s", (self.version, key))
            self.history[key].append(self.version)
        else:
            key = self.live.pop(self.random.randrange(len(self.live)))
            cursor.execute("DELETE FROM items WHERE id = %s", (key,))
            self.history[key].append(None)


def _per_key(records: list[SourceRecord]) -> dict[int, tuple[int | None, list[int | None]]]:
    """Per id: (version read by the snapshot or None, versions streamed after; None: deleted)."""
    found: dict[int, tuple[int | None, list[int | None]]] = {}
    for record in records:
        if record.value is None:
            continue
        op = record.value.get("op")
        key = record.key.get("id")
        read, streamed = found.setdefault(key, (None, []))
        if op == "r":
            assert read is None and not streamed, f"id {key} read twice or after a change"
            found[key] = (value_of(record.value.get("after"))["version"], streamed)
        elif op in ("c", "u"):
            streamed.append(value_of(record.value.get("after"))["version"])
        elif op == "d":
            streamed.append(None)
    return found


def test_snapshot_and_stream_under_concurrent_writes_miss_and_double_nothing(
    db: Database, capture: CaptureFactory
) -> None:
    rows = 3000
    db.execute(
        "CREATE TABLE items (id int PRIMARY KEY, version int NOT NULL)",
        f"INSERT INTO items SELECT g, 0 FROM generate_series(0, {rows - 1}) g",
        "CREATE TABLE markers (id int PRIMARY KEY)",
    )
    writer = Writer(db, rows, operations=1500)
    writer.start()
    try:
        assert writer.started_writing.wait(10)
        cdc = capture(snapshot_fetch_size=100, max_batch_size=50)
        writer.capture_started()
        # the whole snapshot (~3,500 rows, 50 a poll) comes first: on a loaded machine that
        # took longer than the default 20 s once
        cdc.poll_until(
            lambda came: any(r.value.get("op") != "r" for r in came if r.value), timeout=90
        )
        writer.join(60)
        assert not writer.is_alive() and writer.error is None, writer.error
    finally:
        writer.join(60)
    db.execute("INSERT INTO markers VALUES (1)")
    cdc.poll_until(lambda came: any(r.topic.endswith(".markers") for r in came))
    events = [r for r in cdc.records if r.topic == "shop.public.items"]
    reads = [r for r in events if r.value is not None and r.value.get("op") == "r"]
    assert reads, "the snapshot read nothing"
    assert reads[-1].value.get("source").get("snapshot") == "last"

    per_key = _per_key(events)
    streamed_count = sum(len(streamed) for _, streamed in per_key.values())
    seen_by_snapshot = sum(1 for read, _ in per_key.values() if read not in (None, 0))
    assert streamed_count and seen_by_snapshot, "the writes did not straddle the snapshot"
    # Every id's events are its writer history from the snapshot's state on, exactly.
    for key, (read, streamed) in per_key.items():
        history = writer.history[key]
        assert any(
            state == read and history[k + 1 :] == streamed for k, state in enumerate(history)
        ), f"id {key}: read {read}, then streamed {streamed}; written: {history}"
    table = dict(db.query("SELECT id, version FROM items"))
    rebuilt: dict[int, int] = {}
    for key, (read, streamed) in per_key.items():
        state = ([read, *streamed])[-1]
        if state is not None:
            rebuilt[key] = state
    assert rebuilt == table


def test_snapshot_reads_every_row_marks_the_last_and_logs_progress(
    db: Database, capture: CaptureFactory, caplog: pytest.LogCaptureFixture
) -> None:
    db.execute(
        "CREATE TABLE a (id int PRIMARY KEY, name text)",
        "CREATE TABLE b (id int PRIMARY KEY)",
        "CREATE TABLE c (id int PRIMARY KEY)",  # empty, last: the marker is on b's last row
        "INSERT INTO a SELECT g, 'n' || g FROM generate_series(1, 25) g",
        "INSERT INTO b VALUES (1), (2)",
        "ANALYZE",
    )
    with caplog.at_level(logging.INFO, logger="sluice.connectors.postgres"):
        cdc = capture(snapshot_fetch_size=10, max_batch_size=7)
        records = cdc.poll_changes(27)
    assert [r.topic for r in records] == ["shop.public.a"] * 25 + ["shop.public.b"] * 2
    assert {describe(r)[0] for r in records} == {"r"}
    flags = [r.value.get("source").get("snapshot") for r in records]
    assert flags == ["true"] * 26 + ["last"]
    assert [r.source_offset["last_snapshot_record"] for r in records] == [False] * 26 + [True]
    assert all(r.source_offset["snapshot"] is True for r in records)
    assert "snapshot a.a" not in caplog.text
    assert "snapshot public.a: 10 of about 25 rows" in caplog.text
    assert "snapshot done: 27 rows" in caplog.text


def test_a_snapshot_interrupted_by_a_crash_starts_again(
    db: Database, capture: CaptureFactory
) -> None:
    """The slot is kept: after the new snapshot, the changes made since the first one are
    streamed — the delete of a row the first snapshot already sent included."""
    db.execute(
        "CREATE TABLE items (id int PRIMARY KEY)",
        "INSERT INTO items SELECT generate_series(1, 30)",
    )
    first = capture(max_batch_size=10)
    part = first.poll_changes(10)
    first.commit(part)  # the runtime stored the first 10 reads…
    first.task.stop()  # …then the worker died
    assert first.offsets.committed and not part[-1].source_offset["last_snapshot_record"]
    db.execute("INSERT INTO items VALUES (31)", "DELETE FROM items WHERE id = 1")
    second = capture(offsets=first.offsets, max_batch_size=10)
    again = second.poll_changes(30)
    assert sorted(r.key.get("id") for r in again) == list(range(2, 32))
    assert {describe(r)[0] for r in again} == {"r"}
    second.commit()
    db.execute("INSERT INTO items VALUES (40)")
    assert [describe(r) for r in second.poll_changes(4)] == [
        ("c", {"id": 31}, None, {"id": 31}),  # replayed: already in the new snapshot
        ("d", {"id": 1}, {"id": 1}, None),  # replayed: id 1 went out in the first snapshot
        ("tombstone", {"id": 1}),
        ("c", {"id": 40}, None, {"id": 40}),
    ]


def test_snapshot_modes(db: Database, capture: CaptureFactory) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    only = capture(snapshot_mode="initial_only")
    assert [describe(r)[0] for r in only.poll_changes(1)] == ["r"]
    only.commit()
    db.execute("INSERT INTO items VALUES (2)")
    assert only.task.poll() is None  # initial_only: no streaming
    only.task.stop()
    again = capture(offsets=only.offsets, snapshot_mode="initial_only", slot_drop_on_stop="true")
    assert again.task.poll() is None  # the snapshot is done: not taken again
    again.task.stop()
    never = capture(snapshot_mode="never", slot_drop_on_stop="true")
    db.execute("INSERT INTO items VALUES (3)")
    assert [describe(r) for r in never.poll_changes(1)] == [("c", {"id": 3}, None, {"id": 3})]
