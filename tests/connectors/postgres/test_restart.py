"""Offsets and the slot: confirm only what Connect committed; resume from it with no loss."""

from __future__ import annotations

from tests.connect.worker_helpers import wait
from tests.connectors.postgres.fixtures import CaptureFactory, Database


def _ids(records: list) -> list[int]:  # type: ignore[type-arg]
    return [r.key.get("id") for r in records if r.value is not None]


def test_the_slot_is_confirmed_only_after_the_runtime_committed(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY)")
    cdc = capture(snapshot_mode="never", status_update_interval_ms="1000")
    db.execute("INSERT INTO items VALUES (1)", "INSERT INTO items VALUES (2)")
    written = db.current_lsn()
    records = cdc.poll_changes(2)
    for _ in range(15):  # more polls (status updates go out meanwhile): still not confirmed
        assert not cdc.task.poll()
    assert db.confirmed_flush() < records[0].source_offset["lsn_commit"]
    cdc.commit(records)
    # the slot moves when PostgreSQL has read the status update the commit sent: wait for it
    wait(lambda: db.confirmed_flush() >= written, "the slot confirmed after the commit")


def test_a_restart_resumes_from_the_committed_offset_without_loss(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY)")
    first = capture(snapshot_mode="never")
    db.execute(*(f"INSERT INTO items VALUES ({i})" for i in range(1, 6)))
    records = first.poll_changes(5)
    first.commit(records[:3])  # 1..3 committed; 4 and 5 were polled, not committed
    first.task.stop()  # the worker dies: no commit of the rest
    db.execute("INSERT INTO items VALUES (6)", "DELETE FROM items WHERE id = 2")
    second = capture(offsets=first.offsets, snapshot_mode="never")
    again = second.poll_changes(5)
    assert [(r.value and r.value.get("op"), r.key.get("id")) for r in again] == [
        ("c", 4),
        ("c", 5),
        ("c", 6),
        ("d", 2),
        (None, 2),
    ]
    assert not second.task.poll()  # nothing more: 1..3 are not sent again


def test_a_transaction_committed_halfway_resumes_at_its_next_change(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(
        "CREATE TABLE items (id int PRIMARY KEY)",
        "INSERT INTO items VALUES (0)",
    )
    first = capture(snapshot_mode="never", max_batch_size=3)
    db.execute(
        "BEGIN; INSERT INTO items SELECT generate_series(1, 10); "
        "UPDATE items SET id = 100 WHERE id = 0; COMMIT"
    )
    part = first.poll_until(lambda came: len(came) >= 3)
    done = len(part)
    assert _ids(part) == list(range(1, done + 1)) and done < 10
    first.offsets.commit(part)
    first.task.commit()  # the transaction is not complete: nothing confirmed past it
    assert db.confirmed_flush() <= part[0].source_offset["lsn_commit"]
    first.task.stop()
    second = capture(offsets=first.offsets, snapshot_mode="never")
    rest = second.poll_changes(13 - done)  # the rest, then the key change: d, tombstone, c
    assert [(r.value and r.value.get("op"), r.key.get("id")) for r in rest] == [
        *(("c", i) for i in range(done + 1, 11)),
        ("d", 0),
        (None, 0),
        ("c", 100),
    ]
    second.commit()
    last = rest[-1].source_offset["lsn_commit"]
    wait(lambda: db.confirmed_flush() > last, "the slot confirmed after the commit")
    second.task.stop()
    third = capture(offsets=second.offsets, snapshot_mode="never")
    assert not third.task.poll()
