"""Fixtures of the postgres-cdc tests: a database per test on the shared server, CDC tasks
driven directly, a fake offset store playing the runtime's committed offsets.

A task is driven as the Connect runtime drives it: ``poll()`` until records come, then
``offsets.commit(records)`` (the runtime stores the last offset per source partition once the
broker acknowledged) and ``task.commit()``. ``Capture`` bundles that. Every task, slot and
connection a test makes is closed or dropped at teardown.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg2
import pytest

from sluice.connect.api.data import SourceRecord, Struct
from sluice.connectors.postgres import PostgresCdcTask
from tests.connectors.source_offsets import FakeContext, FakeOffsets
from tests.pg import PASSWORD, USER, PostgresServer

TIMEOUT = 20.0


@dataclass
class Database:
    """A database of its own on the shared server."""

    server: PostgresServer
    name: str
    slot: str
    connections: list[Any] = field(default_factory=list)

    def connect(self, autocommit: bool = True) -> Any:
        connection = psycopg2.connect(self.server.dsn(self.name))
        connection.autocommit = autocommit
        self.connections.append(connection)
        return connection

    def execute(self, *statements: str) -> None:
        """Run statements, each in its own transaction."""
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            connection.close()

    def query(self, statement: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement, args)
                return list(cursor.fetchall())
        finally:
            connection.close()

    def confirmed_flush(self) -> int:
        rows = self.query(
            "SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (self.slot,),
        )
        return int(rows[0][0])

    def current_lsn(self) -> int:
        return int(self.query("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")[0][0])

    def config(self, **extra: Any) -> dict[str, Any]:
        """A connector config for this database (keywords: underscores become dots)."""
        config = {
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": USER,
            "database.password": PASSWORD,
            "database.dbname": self.name,
            "topic.prefix": "shop",
            "slot.name": self.slot,
            "publication.name": f"pub_{self.name}",
            "poll.interval.ms": "100",
        }
        config.update({k.replace("_", "."): str(v) for k, v in extra.items()})
        return config


@pytest.fixture
def db(shared_postgres: PostgresServer) -> Iterator[Database]:
    """A fresh database (and a slot name of its own, dropped at teardown)."""
    name = f"cdc_{uuid.uuid4().hex[:10]}"
    shared_postgres.create_database(name)
    database = Database(shared_postgres, name, slot=f"slot_{name}")
    yield database
    for connection in database.connections:
        connection.close()
    admin = psycopg2.connect(shared_postgres.dsn())
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                cursor.execute(
                    "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
                    (database.slot,),
                )
                row = cursor.fetchone()
                if row is None:
                    break
                if row[0] is None:
                    cursor.execute("SELECT pg_drop_replication_slot(%s)", (database.slot,))
                    break
                time.sleep(0.05)
            cursor.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        admin.close()


@dataclass
class Capture:
    """A started task, the offsets it commits into, and what it emitted."""

    task: PostgresCdcTask
    offsets: FakeOffsets
    records: list[SourceRecord] = field(default_factory=list)

    def poll_until(
        self, condition: Callable[[list[SourceRecord]], bool], timeout: float = TIMEOUT
    ) -> list[SourceRecord]:
        """Poll (without committing) until ``condition(new records)``; returns the new ones."""
        came: list[SourceRecord] = []
        deadline = time.monotonic() + timeout
        while not condition(came):
            if time.monotonic() > deadline:
                summary = [(r.topic, describe(r)) for r in came]
                raise AssertionError(f"condition not met within {timeout}s; came: {summary}")
            came.extend(self.task.poll() or [])
        self.records.extend(came)
        return came

    def poll_changes(self, count: int, timeout: float = TIMEOUT) -> list[SourceRecord]:
        """Poll until ``count`` records (heartbeats excluded) came."""
        return [
            r
            for r in self.poll_until(lambda came: len(_changes(came)) >= count, timeout)
            if not r.topic.startswith("__debezium-heartbeat")
        ]

    def commit(self, records: list[SourceRecord] | None = None) -> None:
        """What the runtime does once ``records`` (default: all so far) are acknowledged."""
        self.offsets.commit(self.records if records is None else records)
        self.task.commit()


def _changes(records: list[SourceRecord]) -> list[SourceRecord]:
    return [r for r in records if not r.topic.startswith("__debezium-heartbeat")]


CaptureFactory = Callable[..., Capture]


@pytest.fixture
def capture(db: Database) -> Iterator[CaptureFactory]:
    """``capture(offsets=None, **config)``: a started PostgresCdcTask on ``db`` (stopped at
    teardown); pass the ``offsets`` of an earlier capture to restart from them."""
    started: list[PostgresCdcTask] = []

    def make(offsets: FakeOffsets | None = None, **config: Any) -> Capture:
        offsets = offsets if offsets is not None else FakeOffsets()
        task = PostgresCdcTask()
        task.initialize(FakeContext(offsets))
        started.append(task)
        task.start(db.config(**config))
        return Capture(task, offsets)

    yield make
    for task in started:
        task.stop()


def value_of(struct: Any) -> Any:
    """A Struct as nested dicts (for comparisons)."""
    if isinstance(struct, Struct):
        return {k: value_of(v) for k, v in struct.values.items()}
    return struct


def describe(record: SourceRecord) -> Any:
    """``(op, key, before, after)`` of a change event, or ``("tombstone", key)``."""
    if record.value is None:
        return ("tombstone", value_of(record.key))
    value = record.value.values
    if "op" not in value:
        return ("heartbeat", value_of(record.key))
    return (value["op"], value_of(record.key), value_of(value["before"]), value_of(value["after"]))
