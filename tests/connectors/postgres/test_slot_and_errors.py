"""Heartbeats advance an idle slot; a slot in use, a wrong password, bad settings: clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.connect.api.errors import ConnectError
from sluice.connectors.postgres import PostgresCdcConnector, PostgresCdcTask
from tests.connect.worker_helpers import in_process_herder, wait
from tests.connectors.postgres.fixtures import (
    CaptureFactory,
    Database,
    FakeContext,
    FakeOffsets,
    value_of,
)


def test_heartbeats_advance_the_slot_while_captured_tables_are_idle(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY)", "CREATE TABLE noise (n int)")
    cdc = capture(
        snapshot_mode="never",
        heartbeat_interval_ms=100,
        table_include_list="public\\.items",
        publication_autocreate_mode="filtered",
    )
    db.execute("INSERT INTO noise SELECT generate_series(1, 1000)")  # WAL the slot need not keep
    written = db.current_lsn()
    beats = cdc.poll_until(
        lambda came: any(r.source_offset["lsn"] >= written for r in came), timeout=30
    )
    assert {r.topic for r in beats} == {"__debezium-heartbeat.shop"}
    beat = beats[-1]
    assert value_of(beat.key) == {"serverName": "shop"}
    assert beat.key_schema is not None
    assert beat.key_schema.name == "io.debezium.connector.common.ServerNameKey"
    assert beat.value_schema is not None
    assert beat.value_schema.name == "io.debezium.connector.common.Heartbeat"
    assert isinstance(beat.value.get("ts_ms"), int)
    assert db.confirmed_flush() < written  # not before the runtime committed the heartbeat
    cdc.commit()
    wait(lambda: db.confirmed_flush() >= written, "the slot confirmed after the commit")


def test_a_slot_in_use_is_a_clear_error_and_nothing_is_changed(
    db: Database, capture: CaptureFactory, tmp_path: Path
) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY)")
    running = capture(snapshot_mode="never")
    other = db.config(**{"publication.name": "other_publication"})
    with pytest.raises(ConnectError, match=f"replication slot '{db.slot}' is active"):
        PostgresCdcConnector().start(other)
    task = PostgresCdcTask()
    task.initialize(FakeContext(FakeOffsets()))
    with pytest.raises(ConnectError, match="is active"):
        task.start(other)
    task.stop()
    assert db.query("SELECT pubname FROM pg_publication WHERE pubname = 'other_publication'") == []
    herder = in_process_herder("127.0.0.1:1", tmp_path)
    try:
        herder.create_connector("cdc", {"connector.class": "postgres-cdc", **other})
        state = herder.runtime.connectors["cdc"]
        assert state.state == "FAILED"
        assert state.trace is not None and "is active" in state.trace
        assert not herder.runtime.worker.tasks_of("cdc")
    finally:
        herder.runtime.stop()
    db.execute("INSERT INTO items VALUES (1)")  # the running capture is undisturbed
    assert [r.key.get("id") for r in running.poll_changes(1)] == [1]


def test_a_wrong_password_is_a_clear_error(db: Database) -> None:
    config = db.config(**{"database.password": "wrong"})
    with pytest.raises(ConnectError, match="password authentication failed") as caught:
        PostgresCdcConnector().start(config)
    assert "wrong" not in str(caught.value)  # secrets are never shown
    task = PostgresCdcTask()
    task.initialize(FakeContext(FakeOffsets()))
    with pytest.raises(ConnectError, match=f"as sluice@127.0.0.1:{db.server.port}/{db.name}"):
        task.start(config)
    task.stop()


def test_settings_are_validated(db: Database) -> None:
    connector = PostgresCdcConnector()
    problems = {
        v.name: v.errors
        for v in connector.validate(
            {
                **db.config(),
                "tasks.max": "2",
                "snapshot.mode": "sometimes",
                "slot.name": "Bad-Name",
                "table.include.list": "public.(",
            }
        )
        if v.errors
    }
    assert set(problems) == {"tasks.max", "snapshot.mode", "slot.name", "table.include.list"}
    assert problems["tasks.max"] == ["the PostgreSQL connector runs exactly one task"]


def test_the_slot_is_dropped_on_stop_when_asked(db: Database, capture: CaptureFactory) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY)")
    cdc = capture(snapshot_mode="never", slot_drop_on_stop="true")
    assert db.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (db.slot,))
    cdc.task.stop()
    assert not db.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (db.slot,))
