"""Writing row operations with dialect-correct SQL: insert, upsert, update, delete, truncate.

Operations are applied in record order. Consecutive operations of one kind on one table with the
same columns form a *run*, written with one ``executemany`` per ``batch.size`` rows; within a
run of upserts, updates or deletes only the last operation of each primary key is kept (last
write wins — and a single multi-row ``INSERT … ON CONFLICT`` may not touch a row twice). An
insert, a delete and an insert of one key are three runs, so the row ends up present.

Upserts, by dialect:

- PostgreSQL and SQLite: ``INSERT … ON CONFLICT (pk) DO UPDATE SET c = excluded.c`` (``DO
  NOTHING`` when every column is in the key);
- MySQL and MariaDB: ``INSERT … ON DUPLICATE KEY UPDATE c = VALUES(c)``;
- any other dialect: per row, ``UPDATE`` by key, then ``INSERT`` when no row was updated (in the
  batch's transaction; slower, and racy if another writer inserts the same key concurrently).

Timestamps are written as UTC (see :func:`~sluice.connectors.jdbc._sink_types.timestamp_adapter`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Delete, Insert, Update

from sluice.connectors.jdbc._sink_records import Operation, TableName
from sluice.connectors.jdbc._sink_tables import KnownTable
from sluice.connectors.jdbc._sink_types import timestamp_adapter

__all__ = ["Run", "runs", "upsert_statement", "write"]

_MAX_PARAMETERS = 30_000
"""Bound parameters per statement: below PostgreSQL's 65,535 and SQLite's 32,766."""

_KEY = "_sluice_k{}"
_VALUE = "_sluice_v{}"


class Run:
    """Consecutive operations of one kind on one table with the same columns."""

    def __init__(self, first: Operation) -> None:
        self.kind = first.kind
        self.table = first.table
        self.pk = first.pk
        self.names = tuple(first.row)
        self.rows: list[dict[str, Any]] = [first.row]
        self._by_key: dict[tuple[Any, ...], int] | None = (
            {first.key(): 0} if first.pk and first.kind != "insert" else None
        )

    def accepts(self, operation: Operation) -> bool:
        """Whether ``operation`` continues this run."""
        return (
            operation.kind == self.kind
            and operation.table == self.table
            and operation.pk == self.pk
            and tuple(operation.row) == self.names
        )

    def add(self, operation: Operation) -> None:
        """Append ``operation`` (replacing an earlier one of the same key)."""
        if self._by_key is None:
            self.rows.append(operation.row)
            return
        key = operation.key()
        index = self._by_key.get(key)
        if index is None:
            self._by_key[key] = len(self.rows)
            self.rows.append(operation.row)
        else:
            self.rows[index] = operation.row


def runs(operations: list[Operation]) -> list[Run]:
    """``operations`` grouped into runs, in order."""
    grouped: list[Run] = []
    for operation in operations:
        if grouped and grouped[-1].accepts(operation):
            grouped[-1].add(operation)
        else:
            grouped.append(Run(operation))
    return grouped


def write(
    connection: Connection,
    tables: dict[TableName, KnownTable | None],
    operations: list[Operation],
    batch_size: int,
    *,
    dialect: str | None = None,
) -> int:
    """Apply ``operations`` on ``connection`` (in the caller's transaction); returns the number
    of rows sent (after coalescing). ``dialect`` names whose upsert to use (default: the
    connection's; any unknown name picks the generic UPDATE-then-INSERT)."""
    sent = 0
    for run in runs(operations):
        known = tables[run.table]
        if known is None:  # deletes from a table that does not exist: nothing to delete
            continue
        writer = _RunWriter(connection, known, run, dialect or connection.dialect.name)
        sent += writer.write(batch_size)
    return sent


def _chunks(rows: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


class _RunWriter:
    def __init__(self, connection: Connection, known: KnownTable, run: Run, dialect: str) -> None:
        self.connection = connection
        self.run = run
        self.table = known.table
        self.dialect = dialect
        columns = []
        for name in run.names:
            column = known.column(name)
            assert column is not None, f"column {name} of {run.table} was not prepared"
            columns.append(column)
        self.columns = columns
        pk = set(run.pk)
        self.keys = [c for name, c in zip(run.names, columns, strict=True) if name in pk]
        self.values = [c for name, c in zip(run.names, columns, strict=True) if name not in pk]
        self.adapters: list[tuple[str, Callable[[Any], Any]]] = [
            (name, adapter)
            for name, column in zip(run.names, columns, strict=True)
            if (adapter := timestamp_adapter(column.type)) is not None
        ]

    def write(self, batch_size: int) -> int:
        run = self.run
        if run.kind == "truncate":  # DELETE: transactional on every dialect, ordered in the batch
            self.connection.execute(sa.delete(self.table))
            return 0
        rows = self._adapted(run.rows)
        if run.kind == "insert":
            self._many(sa.insert(self.table), self._by_column(rows), batch_size)
        elif run.kind == "upsert":
            self._upsert(rows, batch_size)
        elif run.kind == "update":
            if not self.values:
                return 0  # nothing but the key: nothing to set
            self._many(self._update(), self._keyed(rows, values=True), batch_size)
        else:
            self._many(self._delete(), self._keyed(rows, values=False), batch_size)
        return len(rows)

    def _adapted(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not self.adapters:
            return rows
        adapted = [dict(row) for row in rows]
        for row in adapted:
            for name, adapter in self.adapters:
                row[name] = adapter(row[name])
        return adapted

    def _many(self, statement: Any, params: list[dict[str, Any]], batch_size: int) -> None:
        for chunk in _chunks(params, batch_size):
            self.connection.execute(statement, chunk)

    def _by_column(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows keyed by the columns' keys (a field may match a column of another case)."""
        pairs = list(zip(self.run.names, (c.key for c in self.columns), strict=True))
        if all(name == key for name, key in pairs):
            return rows
        return [{key: row[name] for name, key in pairs} for row in rows]

    def _keyed(self, rows: list[dict[str, Any]], *, values: bool) -> list[dict[str, Any]]:
        """Rows as the bound parameters of :meth:`_update` / :meth:`_delete`."""
        pk = set(self.run.pk)
        keys = [name for name in self.run.names if name in pk]
        others = [name for name in self.run.names if name not in pk] if values else []
        return [
            {
                **{_KEY.format(i): row[name] for i, name in enumerate(keys)},
                **{_VALUE.format(i): row[name] for i, name in enumerate(others)},
            }
            for row in rows
        ]

    def _where(self) -> sa.ColumnElement[bool]:
        return sa.and_(*(c == sa.bindparam(_KEY.format(i)) for i, c in enumerate(self.keys)))

    def _update(self) -> Update:
        assignments: dict[sa.Column[Any], Any] = {
            c: sa.bindparam(_VALUE.format(i)) for i, c in enumerate(self.values)
        }
        return sa.update(self.table).where(self._where()).values(assignments)

    def _delete(self) -> Delete:
        return sa.delete(self.table).where(self._where())

    def _upsert(self, rows: list[dict[str, Any]], batch_size: int) -> None:
        statement = upsert_statement(self.dialect, self.table, self.keys, self.values)
        if statement is not None:
            # One multi-row statement per chunk: an executemany of an upsert is one round trip
            # per row (SQLAlchemy batches only plain INSERTs), 3-4x slower.
            size = max(1, min(batch_size, _MAX_PARAMETERS // max(1, len(self.columns))))
            for chunk in _chunks(self._by_column(rows), size):
                if len(chunk) == 1:
                    self.connection.execute(statement, chunk)
                    continue
                multi = upsert_statement(self.dialect, self.table, self.keys, self.values, chunk)
                assert multi is not None  # the dialect has an upsert: statement is not None
                self.connection.execute(multi)
            return
        # Other dialects: UPDATE by key, INSERT what was not there.
        insert = sa.insert(self.table)
        update = self._update() if self.values else None
        for keyed, whole in zip(self._keyed(rows, values=True), self._by_column(rows), strict=True):
            if update is not None:
                if self.connection.execute(update, keyed).rowcount:
                    continue
            elif self.connection.execute(
                sa.select(sa.literal(1)).where(self._where()), keyed
            ).first():
                continue
            self.connection.execute(insert, whole)


def upsert_statement(
    dialect: str,
    table: sa.Table,
    keys: list[sa.Column[Any]],
    values: list[sa.Column[Any]],
    rows: list[dict[str, Any]] | None = None,
) -> Insert | None:
    """The dialect's single-statement upsert of rows of ``keys`` + ``values`` columns (None:
    the dialect has none; see the module docstring); with ``rows``, of those rows in one
    multi-row ``VALUES`` (else of the parameters it is executed with).

    >>> t = sa.Table("t", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
    ...              sa.Column("v", sa.Text))
    >>> print(upsert_statement("mysql", t, [t.c.id], [t.c.v]).compile(dialect=mysql.dialect()))
    INSERT INTO t (id, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)
    """
    if dialect in ("postgresql", "sqlite"):
        module: Any = postgresql if dialect == "postgresql" else sqlite
        insert = module.insert(table) if rows is None else module.insert(table).values(rows)
        if not values:
            return insert.on_conflict_do_nothing(index_elements=keys)  # type: ignore[no-any-return]
        return insert.on_conflict_do_update(  # type: ignore[no-any-return]
            index_elements=keys, set_={c.name: insert.excluded[c.key] for c in values}
        )
    if dialect in ("mysql", "mariadb"):
        insert = mysql.insert(table) if rows is None else mysql.insert(table).values(rows)
        assigned = values or keys[:1]  # all key: set a key column to itself
        return insert.on_duplicate_key_update({c.name: insert.inserted[c.key] for c in assigned})
    return None
