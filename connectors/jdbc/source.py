"""``jdbc-source``: copies tables (or a query's rows) of any SQLAlchemy database into topics.

Confluent's JDBC source connector, configured by its keys, with a SQLAlchemy URL in
``connection.url``. Each table is a source partition ``{"table": <name>}`` (``{"query":
"query"}`` for a custom query) written to topic ``topic.prefix`` + table name; each row is a
record with no key and a Struct value named after the table (see :mod:`._source_types` for the
type mapping). The ``mode`` decides what each poll reads (see :mod:`._source_query`):

- ``bulk``: the whole table, every ``poll.interval.ms``;
- ``incrementing``: rows whose ``incrementing.column.name`` is above the offset (new rows);
- ``timestamp``: rows whose ``timestamp.column.name`` is after the offset and older than the
  database's clock minus ``timestamp.delay.interval.ms`` (new and updated rows);
- ``timestamp+incrementing``: both, ordered by (timestamp, id) — updates without losing rows
  that share a timestamp.

After a restart a task resumes after its committed offsets (at-least-once). Deletes are never
seen. A transaction that commits a lower id (or an earlier timestamp) after a higher one was
read is missed — except on PostgreSQL tables, where the in-flight guard
(``postgres.xmin.guard``) holds rows back until every transaction older than theirs has ended.

Errors: a database that cannot be reached is tried ``connection.attempts`` times,
``connection.backoff.ms`` apart (logged), then the task fails; a missing table, a column that
is not there or a query that fails makes the connector or task fail at once with a message
naming it (the password is never shown).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL

from sluice.connect import (
    ConfigValue,
    ConnectError,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    millis_to_datetime,
)
from sluice.connectors.jdbc._source_config import (
    CONFIG,
    connection_url,
    masked,
    parse,
    problems,
)
from sluice.connectors.jdbc._source_querier import Querier, Settings, split_name
from sluice.connectors.jdbc._source_query import Offset
from sluice.connectors.jdbc._source_types import TypeContext

__all__ = ["JdbcSourceConnector", "JdbcSourceTask"]

log = logging.getLogger("sluice.connectors.jdbc")

MAX_BLOCK_S = 1.0  # the longest a poll waits when nothing is due
T = TypeVar("T")


class _UnreachableError(Exception):
    """The database could not be reached (worth another attempt)."""


def _engine(url: URL) -> sa.Engine:
    return sa.create_engine(url, pool_pre_ping=True)


def _reason(error: BaseException, url: URL) -> str:
    orig = getattr(error, "orig", None)
    text = str(orig if orig is not None else error).strip()
    return masked(text.splitlines()[0] if text else type(error).__name__, url)


def _connect(engine: sa.Engine, url: URL) -> sa.Connection:
    """A connection; failing to get one (database away, or refusing us) is _UnreachableError."""
    try:
        return engine.connect()
    except sa.exc.SQLAlchemyError as error:
        raise _UnreachableError(_reason(error, url)) from None


def _attempt(engine: sa.Engine, url: URL, work: Callable[[sa.Connection], T]) -> T:
    """``work`` on a new connection; a connection lost on the way is _UnreachableError too."""
    with _connect(engine, url) as connection:
        try:
            return work(connection)
        except sa.exc.DBAPIError as error:
            if error.connection_invalidated:
                raise _UnreachableError(_reason(error, url)) from None
            raise


def _with_attempts(
    values: Mapping[str, Any],
    engine: sa.Engine,
    url: URL,
    work: Callable[[sa.Connection], T],
    stop: threading.Event,
) -> T:
    """``work`` with up to ``connection.attempts`` tries while the database is unreachable."""
    attempts, backoff = values["connection.attempts"], values["connection.backoff.ms"] / 1000
    where = url.render_as_string(hide_password=True)
    for attempt in range(1, attempts + 1):
        try:
            return _attempt(engine, url, work)
        except _UnreachableError as error:
            if attempt == attempts or stop.is_set():
                raise ConnectError(
                    f"cannot reach the database {where} after {attempt} attempt(s): {error}"
                ) from None
            log.warning("cannot reach %s (attempt %d of %d): %s", where, attempt, attempts, error)
            stop.wait(backoff)
    raise AssertionError("unreachable")


def _list_tables(connection: sa.Connection, values: Mapping[str, Any]) -> list[str]:
    """The tables to copy: the whitelist (checked), or every table minus the blacklist."""
    inspector = sa.inspect(connection)
    kinds = {kind.upper() for kind in values["table.types"]}
    whitelist: list[str] = values["table.whitelist"]
    if whitelist:
        missing = []
        for name in whitelist:
            schema, table = split_name(name)
            if not inspector.has_table(table, schema=schema):
                missing.append(name)
        if missing:
            raise ConnectError(
                f"table.whitelist: no such table(s) in the database: {', '.join(missing)}"
            )
        return list(dict.fromkeys(whitelist))
    names: list[str] = []
    if "TABLE" in kinds:
        names += inspector.get_table_names()
    if "VIEW" in kinds:
        names += inspector.get_view_names()
    blacklist = set(values["table.blacklist"])
    schema = inspector.default_schema_name
    return sorted(n for n in set(names) if n not in blacklist and f"{schema}.{n}" not in blacklist)


class JdbcSourceConnector(SourceConnector):
    """Copies database tables into topics (``jdbc-source``); see the module docstring.

    Settings (Confluent's names): ``connection.url`` (SQLAlchemy URL), ``connection.user``,
    ``connection.password``, ``connection.attempts`` (3), ``connection.backoff.ms`` (10000),
    ``mode`` (bulk, incrementing, timestamp, timestamp+incrementing), ``incrementing.column.name``,
    ``timestamp.column.name`` (a list: COALESCEd), ``timestamp.initial``,
    ``timestamp.delay.interval.ms`` (0), ``validate.non.null`` (true), ``table.whitelist``,
    ``table.blacklist``, ``table.types`` (TABLE), ``query``, ``topic.prefix``,
    ``poll.interval.ms`` (5000), ``batch.max.rows`` (100), ``table.poll.interval.ms`` (60000),
    ``numeric.mapping`` (none), ``db.timezone`` (UTC), and Sluice's ``postgres.xmin.guard``
    (true).

    The tables are split over at most ``tasks.max`` tasks (contiguous groups, as Confluent);
    without a whitelist the connector looks for new or dropped tables every
    ``table.poll.interval.ms`` and asks for its tasks to be reconfigured when they change.
    """

    CONFIG = CONFIG

    def __init__(self) -> None:
        self._config: dict[str, Any] = {}
        self._values: dict[str, Any] = {}
        self._tables: list[str] = []
        self._engine: sa.Engine | None = None
        self._url: URL | None = None
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None

    def start(self, config: dict[str, Any]) -> None:
        self._values = values = parse(config)
        self._config = dict(config)
        self._url = url = connection_url(values)
        self._engine = engine = _engine(url)
        self._stop.clear()
        if values["query"]:
            _with_attempts(values, engine, url, lambda connection: None, self._stop)
            return
        self._tables = _with_attempts(
            values, engine, url, lambda connection: _list_tables(connection, values), self._stop
        )
        if not values["table.whitelist"] and values["table.poll.interval.ms"] > 0:
            self._monitor = threading.Thread(
                target=self._watch_tables, name="jdbc-source-tables", daemon=True
            )
            self._monitor.start()

    def _watch_tables(self) -> None:
        assert self._engine is not None and self._url is not None
        interval = self._values["table.poll.interval.ms"] / 1000
        while not self._stop.wait(interval):
            try:
                with self._engine.connect() as connection:
                    tables = _list_tables(connection, self._values)
            except (sa.exc.SQLAlchemyError, ConnectError) as error:
                log.warning("cannot list the tables: %s", _reason(error, self._url))
                continue
            if tables != self._tables and hasattr(self, "context"):
                log.info(
                    "tables changed (%s → %s): reconfiguring the tasks",
                    ", ".join(self._tables),
                    ", ".join(tables),
                )
                self._tables = tables
                self.context.request_task_reconfiguration()

    def task_class(self) -> type[Task]:
        return JdbcSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        if self._values["query"]:
            return [dict(self._config)]
        tables = self._tables
        if not tables:
            return []
        count = max(1, min(max_tasks, len(tables)))
        size, extra = divmod(len(tables), count)
        groups, start = [], 0
        for index in range(count):
            end = start + size + (1 if index < extra else 0)
            groups.append(tables[start:end])
            start = end
        return [{**self._config, "tables": json.dumps(group)} for group in groups]

    def stop(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=5.0)
            self._monitor = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        results = super().validate(config)
        if any(result.errors for result in results):
            return results
        by_name = {result.name: result for result in results}
        for key, message in problems({r.name: r.value for r in results}):
            by_name[key].errors.append(message)
        return results


class JdbcSourceTask(SourceTask):
    """Reads its share of the tables (config key ``tables``: a JSON list) or the query.

    :meth:`poll` runs each table's query when it is due (every ``poll.interval.ms``), returns at
    most ``batch.max.rows`` records of one table, and returns None once every due table came
    back empty (waiting at most a second when none is due). :meth:`stop` may be called from any
    thread; it makes a waiting :meth:`poll` return.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._queriers: list[Querier] = []
        self._engine: sa.Engine | None = None

    def start(self, config: dict[str, Any]) -> None:
        self._values = values = parse(config)
        self._url = url = connection_url(values)
        self._stopping.clear()
        dialect = url.get_backend_name()
        types = TypeContext(
            dialect, values["numeric.mapping"], zoneinfo.ZoneInfo(values["db.timezone"])
        )
        initial = None
        if values["timestamp.initial"] is not None:
            millis = values["timestamp.initial"]
            initial = dt.datetime.now(dt.UTC) if millis == -1 else millis_to_datetime(millis)
        settings = Settings(
            mode=values["mode"],
            incrementing=values["incrementing.column.name"],
            timestamps=tuple(values["timestamp.column.name"]),
            topic_prefix=values["topic.prefix"],
            validate_non_null=values["validate.non.null"],
            delay=dt.timedelta(milliseconds=values["timestamp.delay.interval.ms"]),
            initial=initial,
            guard=values["postgres.xmin.guard"],
            types=types,
        )
        if values["query"]:
            self._queriers = [Querier(settings, query=values["query"])]
        else:
            tables = config.get("tables")
            names = json.loads(tables) if isinstance(tables, str) else list(tables or [])
            if not names:
                names = values["table.whitelist"]
            self._queriers = [Querier(settings, table=str(name)) for name in names]
        self._batch: int = values["batch.max.rows"]
        self._interval = values["poll.interval.ms"] / 1000
        self._engine = _engine(url)
        reader = getattr(getattr(self, "context", None), "offset_storage_reader", None)
        for querier in self._queriers:
            stored = reader.offset(querier.partition) if reader is not None else None
            if stored and values["mode"] != "bulk":
                querier.offset = Offset.of(stored)
                log.info("%s: resuming after %s", querier.describe(), stored)
        self._failures = 0

    def poll(self) -> list[SourceRecord] | None:
        deadline = self.clock() + MAX_BLOCK_S
        if not self._queriers:  # nothing to read: do not make the runner spin
            self._stopping.wait(MAX_BLOCK_S)
            return None
        tried: set[int] = set()
        while not self._stopping.is_set():
            querier = min(self._queriers, key=lambda q: q.next_run)
            now = self.clock()
            if querier.next_run > now:
                wait = min(querier.next_run, deadline) - now
                if wait <= 0:
                    return None
                self._stopping.wait(wait)
                continue
            records = self._run(querier)
            if records:
                return records
            tried.add(id(querier))
            if len(tried) >= len(self._queriers):
                return None
        return None

    def _run(self, querier: Querier) -> list[SourceRecord]:
        """One fetch of ``querier`` (running its query first when no result is open)."""
        url = self._url
        with self._lock:
            if self._stopping.is_set() or self._engine is None:
                return []
            try:
                if not querier.open:
                    querier.execute(_connect(self._engine, url), self._batch)
                records, done = querier.fetch(self._batch)
            except _UnreachableError as error:
                querier.close()
                self._unreachable(querier, str(error))
                return []
            except sa.exc.DBAPIError as error:
                querier.close()
                if error.connection_invalidated:
                    self._unreachable(querier, _reason(error, url))
                    return []
                raise ConnectError(
                    f"jdbc-source: reading {querier.describe()} failed: {_reason(error, url)}"
                ) from None
            except sa.exc.SQLAlchemyError as error:
                querier.close()
                raise ConnectError(
                    f"jdbc-source: reading {querier.describe()} failed: {_reason(error, url)}"
                ) from None
            except (LookupError, ValueError) as error:
                querier.close()
                raise ConnectError(f"jdbc-source: {masked(str(error), url)}") from None
        self._failures = 0
        if done:
            querier.next_run = self.clock() + self._interval
        return records

    def _unreachable(self, querier: Querier, reason: str) -> None:
        """Count a failed attempt: fail the task after ``connection.attempts``, else back off."""
        self._failures += 1
        attempts = self._values["connection.attempts"]
        where = self._url.render_as_string(hide_password=True)
        if self._failures >= attempts:
            raise ConnectError(
                f"jdbc-source: cannot reach the database {where} after {self._failures} "
                f"attempt(s): {reason}"
            )
        backoff = self._values["connection.backoff.ms"] / 1000
        log.warning(
            "jdbc-source: cannot reach %s while reading %s (attempt %d of %d, next in %.1f s): %s",
            where,
            querier.describe(),
            self._failures,
            attempts,
            backoff,
            reason,
        )
        querier.next_run = self.clock() + backoff

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for querier in self._queriers:
                querier.close()
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None
