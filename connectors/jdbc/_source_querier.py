"""One table (or the custom query) of a ``jdbc-source`` task: query, fetch, build records.

A :class:`Querier` runs its mode's query (:mod:`._source_query`) when it is due, keeps the
result open (streamed: a server-side cursor on PostgreSQL) and hands out at most
``batch.max.rows`` rows per poll until the result is exhausted; then it closes it and is due
again ``poll.interval.ms`` later. Each run first reads the table's columns again, so columns
added or changed are picked up. Not thread-safe: one task thread drives it.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from sluice.connect import SourceRecord
from sluice.connectors.jdbc._source_query import Criteria, Offset, xmin_guard
from sluice.connectors.jdbc._source_types import RowMapper, TypeContext, map_column, type_from_oid

__all__ = ["Querier", "Settings", "split_name"]

log = logging.getLogger("sluice.connectors.jdbc")

QUERY_ALIAS = "sluice_query"


def split_name(name: str) -> tuple[str | None, str]:
    """``schema.table`` → ``("schema", "table")``; ``table`` → ``(None, "table")``."""
    schema, dot, table = name.rpartition(".")
    return (schema, table) if dot else (None, name)


def _aware(kind: Any) -> bool:
    """Whether a column type is a timestamp with a time zone."""
    return isinstance(kind, sa.DateTime) and bool(kind.timezone)


@dataclass(frozen=True)
class Settings:
    """What every querier of a task shares (parsed from the task config)."""

    mode: str
    incrementing: str
    timestamps: tuple[str, ...]
    topic_prefix: str
    validate_non_null: bool
    delay: dt.timedelta
    initial: dt.datetime | None
    guard: bool
    types: TypeContext


@dataclass
class Querier:
    """Reads one table (``table`` set) or the custom query (``query`` set)."""

    settings: Settings
    table: str | None = None
    query: str | None = None
    offset: Offset = field(default_factory=Offset)
    next_run: float = 0.0
    _connection: sa.Connection | None = field(default=None, init=False, repr=False)
    _result: sa.CursorResult[Any] | None = field(default=None, init=False, repr=False)
    _criteria: Criteria | None = field(default=None, init=False, repr=False)
    _mapper: RowMapper | None = field(default=None, init=False, repr=False)

    @property
    def partition(self) -> dict[str, Any]:
        """The source partition: ``{"table": name}`` or ``{"query": "query"}`` (Confluent's)."""
        return {"table": self.table} if self.table is not None else {"query": "query"}

    @property
    def topic(self) -> str:
        """Topic prefix + table name (without its schema); the prefix alone for a query."""
        if self.table is None:
            return self.settings.topic_prefix
        return self.settings.topic_prefix + split_name(self.table)[1]

    def describe(self) -> str:
        """How errors name this querier."""
        return f"table {self.table}" if self.table is not None else "the query"

    @property
    def open(self) -> bool:
        """Whether a result is being read."""
        return self._result is not None

    # -- preparing the statement ------------------------------------------------------------

    def _table_source(self, connection: sa.Connection) -> tuple[Criteria, RowMapper]:
        assert self.table is not None
        settings = self.settings
        schema, name = split_name(self.table)
        try:
            table = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=connection)
        except sa.exc.NoSuchTableError:
            raise LookupError(f"table {self.table} does not exist") from None
        types = settings.types
        incrementing = settings.incrementing
        if "incrementing" in settings.mode and not incrementing:
            auto = table.autoincrement_column
            if auto is None:
                raise ValueError("no autoincrement column: set incrementing.column.name")
            incrementing = auto.name
        guard = None
        if settings.guard and types.dialect == "postgresql" and settings.mode != "bulk":
            quoted = connection.dialect.identifier_preparer.format_table(table)
            is_view = name in sa.inspect(connection).get_view_names(schema=schema)
            if not is_view:
                version = connection.dialect.server_version_info or (0,)
                guard = xmin_guard(quoted, tuple(int(part) for part in version[:2]))
        aware = any(_aware(table.c[n].type) for n in settings.timestamps if n in table.c)
        criteria = Criteria(
            settings.mode, table, incrementing, settings.timestamps, types, aware, guard
        )
        criteria.check()
        if settings.validate_non_null:
            self._check_non_null(table, criteria)
        columns = [
            map_column(c.name, c.type, bool(c.nullable) and not c.primary_key, types)
            for c in table.columns
        ]
        return criteria, RowMapper(name, columns, types)

    def _check_non_null(self, table: sa.Table, criteria: Criteria) -> None:
        def nullable(name: str) -> bool:
            column = table.c[name]
            return bool(column.nullable) and not column.primary_key

        incrementing = criteria.incrementing if "incrementing" in criteria.mode else None
        if incrementing and nullable(incrementing):
            raise ValueError(
                f"cannot read incrementally by column {incrementing}: it is nullable (set "
                "validate.non.null=false to allow it)"
            )
        if "timestamp" in criteria.mode and all(nullable(n) for n in criteria.timestamps):
            raise ValueError(
                "cannot read by timestamp columns "
                f"{', '.join(criteria.timestamps)}: all are nullable (set validate.non.null="
                "false to allow it)"
            )

    def _query_source(self, connection: sa.Connection) -> tuple[Criteria, RowMapper]:
        assert self.query is not None
        settings = self.settings
        probe = connection.execute(sa.text(f"SELECT * FROM ({self.query}) {QUERY_ALIAS} WHERE 1=0"))
        description = probe.cursor.description or []
        probe.close()
        types = settings.types
        columns, column_types = [], {}
        for column in description:
            name = column[0]
            precision = getattr(column, "precision", None)
            scale = getattr(column, "scale", None)
            kind = type_from_oid(column[1], precision, scale)
            column_types[name] = kind
            columns.append(map_column(name, kind, True, types))
        source = (
            sa.text(self.query)
            .columns(*[sa.column(column[0]) for column in description])
            .subquery(QUERY_ALIAS)
        )
        aware = any(_aware(column_types.get(n)) for n in settings.timestamps)
        criteria = Criteria(
            settings.mode, source, settings.incrementing, settings.timestamps, types, aware
        )
        criteria.check()
        return criteria, RowMapper(None, columns, types)

    # -- reading ----------------------------------------------------------------------------

    def _end(self, connection: sa.Connection) -> dt.datetime | None:
        """The database's clock minus the delay: the timestamp bound of this run."""
        if "timestamp" not in self.settings.mode:
            return None
        types = self.settings.types
        if types.dialect == "sqlite":
            now = connection.exec_driver_sql("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")
            clock = dt.datetime.fromisoformat(now.scalar_one()).replace(tzinfo=dt.UTC)
        else:
            clock = types.instant(
                connection.execute(sa.select(sa.func.current_timestamp())).scalar_one()
            )
        return clock - self.settings.delay

    def execute(self, connection: sa.Connection, batch: int) -> None:
        """Run the query on ``connection`` (which it keeps until :meth:`close`), reading the
        columns again first; the result stays open."""
        self.close()
        try:
            try:
                if self.table is not None:
                    criteria, mapper = self._table_source(connection)
                else:
                    criteria, mapper = self._query_source(connection)
            except ValueError as error:
                raise ValueError(f"{self.describe()}: {error}") from None
            if self._mapper is not None and self._mapper.schema.fields == mapper.schema.fields:
                mapper = self._mapper  # keeps what inferred columns learnt
            end = self._end(connection)
            statement = criteria.select(self.offset, self.settings.initial, end)
            streamed = connection.execution_options(stream_results=True, max_row_buffer=batch)
            self._result = streamed.execute(statement)
        except BaseException:
            connection.close()
            raise
        self._connection, self._criteria, self._mapper = connection, criteria, mapper

    def fetch(self, batch: int) -> tuple[list[SourceRecord], bool]:
        """At most ``batch`` records of the open result, and whether the result is exhausted."""
        assert self._result is not None and self._criteria is not None
        assert self._mapper is not None
        rows = self._result.fetchmany(batch)
        mapper, criteria = self._mapper, self._criteria
        mapper.refine(rows)
        records = []
        partition, topic, offset = self.partition, self.topic, self.offset
        for row in rows:
            try:
                offset = criteria.advance(offset, dict(row._mapping))
                value = mapper.struct(row)
            except ValueError as error:
                raise ValueError(f"{self.describe()}: {error}") from None
            records.append(
                SourceRecord(partition, offset.to_dict(), topic, None, mapper.schema, value)
            )
        self.offset = offset
        done = len(rows) < batch
        if done:
            self.close()
        return records, done

    def close(self) -> None:
        """Close the open result and give its connection back (ending its transaction)."""
        result, connection = self._result, self._connection
        self._result = self._connection = None
        try:
            if result is not None:
                result.close()
        except sa.exc.SQLAlchemyError as error:
            log.debug("closing the result of %s: %s", self.describe(), error)
        try:
            if connection is not None:
                connection.close()
        except sa.exc.SQLAlchemyError as error:
            log.debug("closing the connection of %s: %s", self.describe(), error)
