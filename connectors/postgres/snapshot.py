"""The initial snapshot: every captured table read in one transaction on the slot's snapshot.

The transaction is ``REPEATABLE READ, READ ONLY`` and imports the snapshot the replication
slot exported when it was created (``SET TRANSACTION SNAPSHOT``): it sees exactly the
transactions committed before the slot's consistent point, and streaming from that point
delivers exactly the ones after, so no change is missed or doubled at the handover. Tables
are read one after another through a server-side cursor, ``snapshot.fetch.size`` rows per
round trip. Values are taken in PostgreSQL's text form (the types' output functions, as
pgoutput sends them: no Python type conversion), so rows take the same parsers as streamed
changes. Progress (rows read of the estimate ``pg_class.reltuples``) is logged per page.

The transaction lives until :meth:`SnapshotReader.close`; a crash in between leaves nothing
behind on the server (the transaction is rolled back) and the snapshot starts again — then
from a fresh repeatable-read snapshot, as the exported one is gone, and the slot's changes are
streamed after it (see :mod:`sluice.connectors.postgres.source`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from psycopg2 import sql
from psycopg2.extensions import ISOLATION_LEVEL_REPEATABLE_READ, new_type, register_type
from psycopg2.extensions import cursor as Cursor  # noqa: N812 - the type's name

from sluice.connect import ConnectError
from sluice.connectors.postgres.catalog import captured_tables
from sluice.connectors.postgres.config import Settings, connect
from sluice.connectors.postgres.events import TableSchema

__all__ = ["SnapshotReader", "TableFactory"]

log = logging.getLogger("sluice.connectors.postgres")

TableFactory = Callable[[Cursor, int, str, str], TableSchema]
"""Makes a table's schema from the catalog: ``(cursor, oid, schema, table)``."""

Row = tuple[str | None, ...]


def _text(value: str | bytes | None, cursor: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class SnapshotReader:
    """Reads the captured tables as of an exported snapshot; see the module docstring."""

    def __init__(
        self, settings: Settings, snapshot_name: str | None, make_table: TableFactory
    ) -> None:
        """Read as of the exported ``snapshot_name`` (None: a fresh repeatable-read snapshot,
        for a slot that already exists; its changes since are streamed after the rows)."""
        self.settings = settings
        self.connection = connect(settings)
        self.rows_read = 0
        try:
            self.connection.autocommit = False
            self.connection.set_session(
                isolation_level=ISOLATION_LEVEL_REPEATABLE_READ, readonly=True
            )
            cursor = self.connection.cursor()
            try:
                if snapshot_name is not None:
                    cursor.execute("SET TRANSACTION SNAPSHOT %s", (snapshot_name,))
            except Exception as error:
                raise ConnectError(f"cannot import snapshot {snapshot_name}: {error}") from None
            found = captured_tables(cursor, settings.captures)
            self.tables = [(make_table(cursor, oid, s, t), rows) for oid, s, t, rows in found]
            cursor.execute("SELECT oid FROM pg_type")  # from now on, every value stays text
            as_text = new_type(tuple(oid for (oid,) in cursor.fetchall()), "TEXT_FORM", _text)
            register_type(as_text, self.connection)
            cursor.close()
        except BaseException:
            self.connection.close()
            raise
        self.estimate = int(sum(max(rows, 0) for _, rows in self.tables))
        log.info(
            "snapshot of %d tables (about %d rows): %s",
            len(self.tables),
            self.estimate,
            ", ".join(f"{t.schema_name}.{t.table}" for t, _ in self.tables) or "none",
        )

    def rows(self) -> Iterator[tuple[TableSchema, Row]]:
        """Every row of every captured table, as text, table by table."""
        size = self.settings.fetch_size
        for number, (table, estimate) in enumerate(self.tables):
            columns = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns)
            query = sql.SQL("SELECT {} FROM ONLY {}").format(
                columns, sql.Identifier(table.schema_name, table.table)
            )
            done = 0
            with self.connection.cursor(name=f"sluice_snapshot_{number}") as cursor:
                cursor.itersize = size
                cursor.execute(query)
                while True:
                    page = cursor.fetchmany(size)
                    if not page:
                        break
                    done += len(page)
                    self.rows_read += len(page)
                    log.info(
                        "snapshot %s.%s: %d of about %d rows (%d of about %d in all)",
                        table.schema_name,
                        table.table,
                        done,
                        max(int(estimate), done),
                        self.rows_read,
                        max(self.estimate, self.rows_read),
                    )
                    for row in page:
                        yield table, tuple(row)
            log.info("snapshot %s.%s done: %d rows", table.schema_name, table.table, done)

    def close(self) -> None:
        """End the snapshot transaction and close its connection."""
        if not self.connection.closed:
            try:
                self.connection.rollback()
            finally:
                self.connection.close()
