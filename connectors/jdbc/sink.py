"""``jdbc-sink``: writes topics into tables of any SQLAlchemy database (Confluent's JDBC sink).

Settings (Confluent's names; ``connection.url`` is a SQLAlchemy URL):

========================  ============  ===================================================
key                       default
========================  ============  ===================================================
``connection.url``        (required)    ``postgresql+psycopg2://host/db``,
                                        ``sqlite:///path``, ``mysql+pymysql://host/db``
                                        (``jdbc:`` URLs of PostgreSQL, MySQL, MariaDB and
                                        SQLite are translated)
``connection.user``                     overrides the URL's user
``connection.password``                 overrides the URL's password (never shown)
``topics``                              the topics to read (or ``topics.regex``)
``table.name.format``     ``${topic}``  table of each record; ``archive.${topic}``: in
                                        schema ``archive``
``insert.mode``           ``insert``    ``insert``, ``upsert`` (by primary key), ``update``
``pk.mode``               ``none``      ``none``, ``kafka`` (topic, partition, offset
                                        columns), ``record_key``, ``record_value``
``pk.fields``                           the primary key's columns (see below)
``fields.whitelist``                    value fields written (empty: all)
``delete.enabled``        false         a tombstone deletes the row of its key (requires
                                        ``pk.mode=record_key``); otherwise it is skipped
``truncate.enabled``      false         a Debezium truncate event (``op`` ``t``) empties
                                        the table (``DELETE FROM``, in batch order)
``auto.create``           false         ``CREATE TABLE`` from the records' schema
``auto.evolve``           false         ``ALTER TABLE … ADD COLUMN`` (nullable) for new
                                        fields
``batch.size``            3000          most rows per ``executemany``
``max.retries``           10            retries of a write that lost the database
``retry.backoff.ms``      3000          wait between them
``connection.attempts``   3             tries to connect when the connector starts
``connection.backoff.ms`` 10000         wait between them
========================  ============  ===================================================

``pk.fields``: for ``kafka``, three column names (default ``__connect_topic``,
``__connect_partition``, ``__connect_offset``); for ``record_key``, fields of a struct or map
key (empty: all) or the one column of a primitive key; for ``record_value``, fields of the value
(empty: all). Confluent's other keys are refused naming the key (see
:data:`~sluice.connectors.jdbc._sink_config.CONFIG`).

Values are structs (a converter with schemas) or maps (schemaless: column types for auto.create
are inferred from the Python values, see :mod:`sluice.connectors.jdbc._sink_types`); keys are
primitives, structs or maps. Every ``put`` is one database transaction, applied in record order
with consecutive rows of one kind batched (:mod:`sluice.connectors.jdbc._sink_sql`): once
``put`` returns the rows are committed, so ``flush`` has nothing left to do and the runtime
commits the consumer offsets after it (at-least-once; upserts make redelivery harmless).

Errors:

- the database unreachable or gone mid-batch (SQLAlchemy ``OperationalError``,
  ``InterfaceError``, ``DisconnectionError``): the transaction is rolled back and the batch
  written again after ``retry.backoff.ms``, up to ``max.retries`` times; then the task fails
  with the database's message;
- a record that cannot be a row (:class:`~sluice.connectors.jdbc._sink_records.BadRecordError`:
  no key for ``record_key``, a nested struct, array or map field…) or that the database refuses
  (a constraint, a value out of range): the task fails naming topic, partition, offset, field
  and type; with ``errors.tolerance=all`` the record is handed to the runtime's errant-record
  reporter (KIP-610, as Confluent's sink does since 10.x: the dead-letter topic with Kafka's
  ``__connect.errors.*`` headers when ``errors.deadletterqueue.topic.name`` is set, the error
  log with ``errors.log.enable``; logged as a warning when neither) and the rest is written;
- a missing table with ``auto.create=false``, a missing column with ``auto.evolve=false``,
  wrong credentials: the task (or, found at start, the connector) fails saying so.

>>> import tempfile, sqlalchemy
>>> from sluice.connect import SinkRecord
>>> url = f"sqlite:///{tempfile.mkdtemp()}/shop.db"
>>> task = JdbcSinkTask()
>>> task.start({"connection.url": url, "auto.create": "true", "insert.mode": "upsert",
...             "pk.mode": "record_key", "pk.fields": "id"})
>>> task.put([SinkRecord("orders", 0, None, 1, None, {"item": "tea"}, kafka_offset=0),
...           SinkRecord("orders", 0, None, 1, None, {"item": "cake"}, kafka_offset=1)])
>>> with sqlalchemy.create_engine(url).connect() as db:
...     db.exec_driver_sql("SELECT id, item FROM orders").all()
[(1, 'cake')]
>>> task.stop()
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    DisconnectionError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    SQLAlchemyError,
)
from sqlalchemy.pool import ConnectionPoolEntry

from sluice.connect import (
    ConfigValue,
    ConnectError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)
from sluice.connectors.jdbc._sink_config import CONFIG, SinkSettings, cross_problems
from sluice.connectors.jdbc._sink_records import (
    BadRecordError,
    Operation,
    RecordPlanner,
    table_name,
)
from sluice.connectors.jdbc._sink_sql import write
from sluice.connectors.jdbc._sink_tables import TableCatalog

__all__ = ["BadRecordError", "JdbcSinkConnector", "JdbcSinkTask"]

log = logging.getLogger("sluice.connectors.jdbc")

_REJECTED = (IntegrityError, DataError, ProgrammingError)
"""What a database answers to data it refuses (as opposed to losing the connection)."""


def _lost_connection(error: BaseException) -> bool:
    if isinstance(error, OperationalError | InterfaceError | DisconnectionError):
        return True
    return isinstance(error, DBAPIError) and error.connection_invalidated


def _reason(error: BaseException, settings: SinkSettings) -> str:
    """The database's own message, the password masked."""
    text = str(error.orig) if isinstance(error, DBAPIError) else str(error)
    text = text.strip()
    password = settings.url.password
    if password:
        text = text.replace(str(password), "***")
    return text


def _where(settings: SinkSettings) -> str:
    return settings.url.render_as_string(hide_password=True)


def _sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, begin SQLite's transactions (savepoints work then)."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None

    @sa.event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN")


def create_engine(settings: SinkSettings) -> Engine:
    """The task's engine: connections checked before use (the database may have restarted)."""
    engine = sa.create_engine(settings.url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        _sqlite_transactions(engine)
    return engine


def check_database(settings: SinkSettings, topics: list[str]) -> None:
    """Connect (up to ``connection.attempts`` times, ``connection.backoff.ms`` apart); without
    auto.create, check the tables of ``topics`` exist.

    Raises ConnectError with the database's message (password masked).
    """
    engine = create_engine(settings)
    try:
        for attempt in range(1, settings.connection_attempts + 1):
            try:
                with engine.connect() as connection:
                    connection.exec_driver_sql("SELECT 1")
                break
            except SQLAlchemyError as error:
                reason = _reason(error, settings)
                if attempt == settings.connection_attempts:
                    raise ConnectError(
                        f"cannot connect to {_where(settings)} "
                        f"({attempt} attempt(s), connection.attempts): {reason}"
                    ) from None
                log.warning(
                    "jdbc-sink: cannot connect to %s (attempt %d of %d, next in %.1f s): %s",
                    _where(settings),
                    attempt,
                    settings.connection_attempts,
                    settings.connection_backoff_s,
                    reason,
                )
                time.sleep(settings.connection_backoff_s)
        if settings.auto_create:
            return
        catalog = TableCatalog(engine, auto_create=False, auto_evolve=False)
        for topic in topics:
            table = table_name(settings.table_format, topic)
            if not catalog.exists(table):
                raise ConnectError(
                    f"table {table} (of topic {topic}) does not exist in {_where(settings)} "
                    "and auto.create is false: create it, or set auto.create=true"
                )
    finally:
        engine.dispose()


class JdbcSinkConnector(SinkConnector):
    """Writes records into database tables (``jdbc-sink``); settings in the module docstring.

    Starting checks the database: wrong credentials or an unreachable server, and (without
    ``auto.create``) a missing table of a listed topic, fail the connector with the database's
    message. Every task gets the same config; the topics' partitions are shared among them.
    """

    CONFIG = CONFIG

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        values = super().validate(config)
        if all(not value.errors for value in values):
            by_name = {value.name: value for value in values}
            parsed = {value.name: value.value for value in values}
            for key, message in cross_problems(parsed):
                by_name[key].errors.append(message)
        return values

    def start(self, config: dict[str, Any]) -> None:
        settings = SinkSettings.parse(config)
        topics = [t.strip() for t in str(config.get("topics") or "").split(",") if t.strip()]
        check_database(settings, topics)
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [dict(self._config) for _ in range(max_tasks)]


class JdbcSinkTask(SinkTask):
    """Writes the records of ``put`` in one transaction each; see the module docstring.

    Not thread-safe (the runtime calls a task from one thread).
    """

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._engine: Engine | None = None

    def start(self, config: dict[str, Any]) -> None:
        self.settings = settings = SinkSettings.parse(config)
        self._engine = create_engine(settings)
        self._planner = RecordPlanner(settings)
        self._catalog = TableCatalog(
            self._engine, auto_create=settings.auto_create, auto_evolve=settings.auto_evolve
        )

    def put(self, records: list[SinkRecord]) -> None:
        operations = []
        for record in records:
            try:
                operation = self._planner.operation(record)
            except BadRecordError as error:
                self._reject(record, error)
                continue
            if operation is not None:
                operations.append(operation)
        if operations:
            self._write(operations)

    def _reject(self, record: SinkRecord, error: Exception) -> None:
        """Under ``errors.tolerance=all``, hand a record that cannot be written to the
        runtime's errant-record reporter (the dead-letter topic, the error log) — or, without
        one, log it — and go on; otherwise fail."""
        if not self.settings.tolerate_all:
            raise error
        context = getattr(self, "context", None)
        reporter = context.errant_record_reporter() if context is not None else None
        if reporter is not None:
            reporter.report(record, error)
        else:
            log.warning("jdbc-sink: skipping %s", error)

    def _write(self, operations: list[Operation]) -> None:
        """Write with retries while the database is away."""
        settings = self.settings
        attempt = 0
        while True:
            try:
                self._write_once(operations)
                return
            except SQLAlchemyError as error:
                reason = _reason(error, settings)
                if not _lost_connection(error):
                    raise ConnectError(
                        f"jdbc-sink: writing {len(operations)} records to {_where(settings)} "
                        f"failed: {reason}"
                    ) from error
                if attempt >= settings.max_retries:
                    raise ConnectError(
                        f"jdbc-sink: writing {len(operations)} records to {_where(settings)} "
                        f"failed after {settings.max_retries} retries: {reason}"
                    ) from None
                attempt += 1
                log.warning(
                    "jdbc-sink: writing %d records failed (%s); retry %d of %d in %.1f s",
                    len(operations),
                    reason,
                    attempt,
                    settings.max_retries,
                    settings.retry_backoff_s,
                )
                self._sleep(settings.retry_backoff_s)

    def _write_once(self, operations: list[Operation]) -> None:
        assert self._engine is not None, "start() first"
        tables = self._catalog.prepare(operations)
        try:
            with self._engine.begin() as connection:
                write(connection, tables, operations, self.settings.batch_size)
        except _REJECTED as error:
            self._catalog.forget()  # the table may have changed under us
            if not self.settings.tolerate_all:
                raise ConnectError(self._refused(operations, error)) from None
            self._write_each(operations)

    def _refused(self, operations: list[Operation], error: DBAPIError) -> str:
        tables = sorted({str(op.table) for op in operations})
        first, last = operations[0].record, operations[-1].record
        return (
            f"jdbc-sink: the database refused a batch of {len(operations)} records "
            f"({first.topic}[{first.kafka_partition}]@{first.kafka_offset} to "
            f"{last.topic}[{last.kafka_partition}]@{last.kafka_offset}) for table(s) "
            f"{', '.join(tables)}: {_reason(error, self.settings)}"
        )

    def _write_each(self, operations: list[Operation]) -> None:
        """``errors.tolerance=all``: each record in a savepoint of one transaction; skip those
        the database refuses."""
        assert self._engine is not None
        tables = self._catalog.prepare(operations)
        with self._engine.begin() as connection:
            for operation in operations:
                try:
                    with connection.begin_nested():
                        write(connection, tables, [operation], 1)
                except _REJECTED as error:
                    record = operation.record
                    where = f"{record.topic}[{record.kafka_partition}]@{record.kafka_offset}"
                    refused = ConnectError(
                        f"jdbc-sink: record {where} refused by table {operation.table}: "
                        f"{_reason(error, self.settings)}"
                    )
                    self._reject(record, refused)

    def flush(self, offsets: dict[TopicPartition, int]) -> None:
        """Nothing to do: every ``put`` committed its transaction."""

    def stop(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
