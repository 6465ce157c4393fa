"""``postgres-cdc``: log-based change data capture from PostgreSQL, Debezium-shaped.

The connector (``io.debezium.connector.postgresql.PostgresConnector`` is an alias) runs one
task. The task:

1. connects (a clear error for a wrong password or ``wal_level`` other than ``logical``),
   checks that the replication slot is not in use by another consumer (a clear error, and
   nothing has been changed), and creates the publication if ``publication.autocreate.mode``
   says so;
2. when a snapshot is due (``snapshot.mode`` ``initial`` or ``initial_only``, and no
   completed snapshot in the committed offsets), (re)creates the slot exporting its snapshot,
   reads every captured table in that snapshot (op ``r``) and then streams from the slot's
   consistent point: no change is missed or doubled at the handover. A snapshot interrupted
   by a crash starts again from scratch, on a new slot (as Debezium restarts it);
3. streams changes (:mod:`.changes`) from the committed position, and confirms a position to
   the slot (``flush_lsn``) only in :meth:`PostgresCdcTask.commit`, which the Connect runtime
   calls once the records before it are in Kafka and their offsets are stored. WAL after it is
   kept by the server: after a crash the changes since are sent again (at-least-once);
4. every ``heartbeat.interval.ms`` emits a heartbeat to ``__debezium-heartbeat.<prefix>``
   carrying the current position, so that an idle (or uncaptured-only) database still
   advances the slot once the heartbeat is committed.

Source partition: ``{"server": <topic.prefix>}``. Source offset: ``{"lsn": <LSN of the change>,
"lsn_commit": <commit LSN of its transaction>, "event": <index of the change in it>, "txId",
"ts_usec"}`` plus ``"snapshot": true, "last_snapshot_record": <bool>`` during a snapshot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from psycopg2.extensions import cursor as Cursor  # noqa: N812 - the type's name

from sluice.connect import ConfigValue, SourceBatch, SourceConnector, SourceRecord, SourceTask, Task
from sluice.connectors.postgres.catalog import (
    captured_tables,
    check_server,
    check_slot,
    drop_slot,
    ensure_publication,
    table_columns,
    wait_released,
)
from sluice.connectors.postgres.changes import ChangeStream, table_schema
from sluice.connectors.postgres.columns import column_problems
from sluice.connectors.postgres.config import CONFIG, Settings, connect
from sluice.connectors.postgres.events import Event, EventBuilder, Position, TableSchema
from sluice.connectors.postgres.pgoutput import format_lsn
from sluice.connectors.postgres.replication import ReplicationStream
from sluice.connectors.postgres.snapshot import SnapshotReader

__all__ = ["PostgresCdcConnector", "PostgresCdcTask"]

log = logging.getLogger("sluice.connectors.postgres")

Row = tuple[TableSchema, tuple[str | None, ...]]


class PostgresCdcConnector(SourceConnector):
    """Captures a PostgreSQL database's changes (``postgres-cdc``); one task.

    Settings (Debezium's names): ``database.hostname``, ``database.port``, ``database.user``,
    ``database.password``, ``database.dbname``, ``topic.prefix``, ``table.include.list``,
    ``table.exclude.list``, ``slot.name``, ``publication.name``,
    ``publication.autocreate.mode``, ``snapshot.mode``, ``snapshot.fetch.size``,
    ``max.batch.size``, ``poll.interval.ms``, ``heartbeat.interval.ms``,
    ``topic.heartbeat.prefix``, ``tombstones.on.delete``, ``decimal.handling.mode``,
    ``skipped.operations``, ``slot.drop.on.stop``, ``status.update.interval.ms``,
    ``schema.include.list``, ``schema.exclude.list``, ``database.ssl*``,
    ``database.tcpKeepAlive``, and the column filters and masks of
    :mod:`~sluice.connectors.postgres.columns`. Debezium's other keys are refused (see
    :data:`~sluice.connectors.postgres.config.CONFIG`). See ``docs/connectors.md``.

    :meth:`start` connects and checks the server and the slot, so that a wrong password or a
    slot in use shows in the connector's status before any task starts.
    """

    CONFIG = CONFIG

    def __init__(self) -> None:
        self._config: dict[str, Any] = {}

    def start(self, config: dict[str, Any]) -> None:
        settings = Settings.parse(config)
        connection = connect(settings)
        try:
            with connection.cursor() as cursor:
                check_server(cursor, settings.where)
                check_slot(cursor, settings.slot, settings.database)
        finally:
            connection.close()
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return PostgresCdcTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [dict(self._config)]

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        results = super().validate(config)
        by_name = {value.name: value for value in results}
        problems = column_problems(config)
        if (
            str(config.get("schema.include.list", "")).strip()
            and str(config.get("schema.exclude.list", "")).strip()
        ):
            message = "schema.include.list and schema.exclude.list cannot both be set"
            problems.append(("schema.exclude.list", message))
        for key, message in problems:
            if key not in by_name:
                by_name[key] = ConfigValue(key, config.get(key))
                results.append(by_name[key])
            if message not in by_name[key].errors:
                by_name[key].errors.append(message)
        if str(config.get("tasks.max", "1")).strip() not in ("1", ""):
            results.append(
                ConfigValue(
                    "tasks.max",
                    config.get("tasks.max"),
                    ["the PostgreSQL connector runs exactly one task"],
                )
            )
        return results


class PostgresCdcTask(SourceTask):
    """Snapshots, then streams, one database; see the module docstring.

    ``clock_ns`` (wall time, for event timestamps) and ``monotonic`` (for heartbeats) can be
    injected. :meth:`poll` waits at most ``poll.interval.ms``; :meth:`stop` may come from
    another thread.
    """

    def __init__(
        self,
        clock_ns: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock_ns = clock_ns
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._meta: Any = None
        self._meta_cursor: Cursor | None = None
        self._replication: ReplicationStream | None = None
        self._snapshot: SnapshotReader | None = None
        self._rows: Iterator[Row] | None = None
        self._next_row: Row | None = None
        self._snapshot_point = 0
        self._snapshot_time_us = 0
        self._stream: ChangeStream | None = None
        self._last_heartbeat = 0.0
        self._owns_slot = False

    # -- start

    def start(self, config: dict[str, Any]) -> None:
        settings = self.settings = Settings.parse(config)
        self.events = EventBuilder(
            settings.prefix, settings.database, settings.heartbeat_topic, self.clock_ns
        )
        self._stopping.clear()
        self._last_heartbeat = self.monotonic()
        offset = self._committed_offset()
        try:
            self._open(settings, offset)
        except BaseException:
            self._close()
            raise

    def _committed_offset(self) -> dict[str, Any] | None:
        context = getattr(self, "context", None)
        if context is None:
            return None
        offset: dict[str, Any] | None = context.offset_storage_reader.offset(self.events.partition)
        return offset

    def _open(self, settings: Settings, offset: dict[str, Any] | None) -> None:
        self._meta = connect(settings)
        cursor = self._meta_cursor = self._meta.cursor()
        check_server(cursor, settings.where)
        slot = check_slot(cursor, settings.slot, settings.database)
        self._owns_slot = True  # nobody else uses it: ours to create, drop or stream
        ensure_publication(
            cursor,
            settings.publication,
            settings.autocreate,
            captured_tables(cursor, settings.captures),
        )
        snapshotting = settings.snapshot_mode in ("initial", "initial_only")
        unfinished = offset is not None and offset.get("snapshot") is True
        unfinished = unfinished and not offset.get("last_snapshot_record")  # type: ignore[union-attr]
        self._replication = ReplicationStream(settings)
        if snapshotting and (offset is None or unfinished):
            snapshot_name: str | None = None
            if slot is not None:
                # An earlier snapshot did not finish (or was never stored), and its rows may
                # have reached the sinks. Keep the slot: nothing was confirmed, so it holds every
                # change since that snapshot's point. Take a fresh snapshot, then stream from the
                # slot's position: the changes made meanwhile — deletes of rows already sent
                # included — come after the rows, and the copies converge (at-least-once).
                log.info(
                    "slot %s exists but no snapshot completed: snapshot again, then stream "
                    "from the slot's position",
                    settings.slot,
                )
                self._snapshot_point = slot.confirmed_flush_lsn or 0
            else:
                created = self._replication.create_slot(export_snapshot=True)
                assert created.snapshot_name is not None
                self._snapshot_point = created.consistent_point
                snapshot_name = created.snapshot_name
            self._snapshot_time_us = self.clock_ns() // 1000
            self._snapshot = SnapshotReader(settings, snapshot_name, self._catalog_table)
            self._rows = self._snapshot.rows()
            self._next_row = next(self._rows, None)
            return
        if slot is None:
            created = self._replication.create_slot(export_snapshot=False)
            if offset is not None:
                log.warning(
                    "replication slot %s was missing and is created again at %s: changes "
                    "between the committed offset and now are lost",
                    settings.slot,
                    format_lsn(created.consistent_point),
                )
                offset = None
        if settings.snapshot_mode == "initial_only":
            log.info("snapshot.mode=initial_only and the snapshot is done: nothing to stream")
            return
        resume = None
        start = 0
        if offset is not None:
            start = int(offset["lsn_commit"])
            resume = (start, int(offset.get("event", -1)))
        self._start_streaming(start, resume)

    def _catalog_table(self, cursor: Cursor, oid: int, schema: str, table: str) -> TableSchema:
        catalog = table_columns(cursor, oid)
        columns = [(c.name, c.type_oid, c.modifier) for c in catalog]
        return table_schema(self.settings, schema, table, columns, catalog)

    def _describe(self, oid: int) -> Any:
        assert self._meta_cursor is not None
        return table_columns(self._meta_cursor, oid)

    def _start_streaming(self, start: int, resume: tuple[int, int] | None) -> None:
        assert self._replication is not None
        self._replication.start(start)
        self._stream = ChangeStream(self.settings, self.events, self._describe, start, resume)

    # -- poll

    def poll(self) -> list[SourceRecord] | None:
        events, heartbeat = self._poll()
        records = [self.events.record(event) for event in events]
        if heartbeat is not None:
            records.append(heartbeat)
        return records or None

    def poll_batch(self) -> Sequence[SourceRecord | SourceBatch] | None:
        """What the runtime calls: :meth:`poll`'s records, each run of one table's changes as
        a :class:`SourceBatch` (converted and produced in bulk, no record object per change)."""
        events, heartbeat = self._poll()
        out = self.events.batches(events)
        if heartbeat is not None:
            out.append(heartbeat)
        return out or None

    def _poll(self) -> tuple[list[Event], SourceRecord | None]:
        """The change events of one poll, and a heartbeat when one is due."""
        with self._lock:
            if self._stopping.is_set():
                return [], None
            if self._snapshot is not None:
                return self._poll_snapshot(), None
            if self._stream is None:  # initial_only, done
                self._stopping.wait(self.settings.poll_interval_s)
                return [], None
            return self._poll_stream(self._stream)

    def _poll_snapshot(self) -> list[Event]:
        records: list[Event] = []
        assert self._rows is not None
        while self._next_row is not None and len(records) < self.settings.batch_size:
            table, values = self._next_row
            self._next_row = next(self._rows, None)
            last = self._next_row is None
            position = Position(
                self._snapshot_point,
                self._snapshot_point,
                None,
                self._snapshot_time_us,
                snapshot="last" if last else "true",
            )
            row, key = table.image(values)
            records.append(self.events.event(table, "r", position, after=row, key=key))
        if self._next_row is None:
            self._finish_snapshot()
        return records

    def _finish_snapshot(self) -> None:
        assert self._snapshot is not None
        log.info("snapshot done: %d rows", self._snapshot.rows_read)
        self._snapshot.close()
        self._snapshot = None
        self._rows = None
        if self.settings.snapshot_mode == "initial_only":
            return
        self._start_streaming(self._snapshot_point, (self._snapshot_point, -1))

    def _poll_stream(self, stream: ChangeStream) -> tuple[list[Event], SourceRecord | None]:
        assert self._replication is not None
        records: list[Event] = []
        deadline = self.monotonic() + self.settings.poll_interval_s
        while len(records) < self.settings.batch_size and not self._stopping.is_set():
            wait = 0.0 if records else deadline - self.monotonic()
            message = self._replication.read(max(wait, 0.0))
            if message is None:
                stream.idle_at(self._replication.wal_end)
                if wait <= 0:
                    break
                continue
            stream.handle(message.data_start, message.payload, records)
        interval = self.settings.heartbeat_interval_s
        now = self.monotonic()
        if interval > 0 and now - self._last_heartbeat >= interval and not stream.in_transaction:
            self._last_heartbeat = now
            position = stream.heartbeat_position(self.clock_ns() // 1000)
            return records, self.events.heartbeat(position)
        return records, None

    # -- commit, stop

    def commit(self) -> None:
        """The runtime stored the offsets: confirm the committed position to the slot."""
        with self._lock:
            if self._replication is None or self._stream is None:
                return
            offset = self._committed_offset()
            if offset is None or offset.get("snapshot") or "lsn_commit" not in offset:
                return
            lsn = self._stream.confirmable(int(offset["lsn_commit"]), int(offset.get("event", -1)))
            self._replication.confirm(lsn)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._close()

    def _close(self) -> None:
        for resource in (self._snapshot, self._replication):
            if resource is not None:
                try:
                    resource.close()
                except Exception as error:  # closing: report, go on
                    log.warning("closing %s: %s", type(resource).__name__, error)
        self._snapshot = self._replication = None
        self._stream = None
        meta, self._meta = self._meta, None
        if meta is None:
            return
        try:
            if self._owns_slot:  # let the next task (a restart) find the slot free
                with meta.cursor() as cursor:
                    if self.settings.drop_slot_on_stop:
                        drop_slot(cursor, self.settings.slot)
                    else:
                        wait_released(cursor, self.settings.slot)
        except Exception as error:  # stopping: report, never fail the stop
            log.warning("stopping: replication slot %s: %s", self.settings.slot, error)
        finally:
            self._owns_slot = False
            meta.close()
