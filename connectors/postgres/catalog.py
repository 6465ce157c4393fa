"""What the connector asks PostgreSQL's catalog: tables, columns, the publication, the slot.

Everything here runs SQL on a normal connection (a cursor is passed in); nothing is cached.
Slot creation is in :mod:`.replication` (it needs the replication protocol).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psycopg2 import sql
from psycopg2.extensions import cursor as Cursor  # noqa: N812 - the type's name

from sluice.connect import ConnectError
from sluice.connectors.postgres.pgoutput import parse_lsn

__all__ = [
    "CatalogColumn",
    "SlotState",
    "captured_tables",
    "check_server",
    "check_slot",
    "drop_slot",
    "ensure_publication",
    "slot_state",
    "table_columns",
    "wait_released",
]

log = logging.getLogger("sluice.connectors.postgres")


@dataclass(frozen=True)
class CatalogColumn:
    """A column as the catalog describes it."""

    name: str
    type_oid: int
    modifier: int
    not_null: bool
    key_position: int | None  # 1-based position in the primary key, or None


@dataclass(frozen=True)
class SlotState:
    """A replication slot of ``pg_replication_slots``."""

    name: str
    plugin: str | None
    database: str | None
    active_pid: int | None
    confirmed_flush_lsn: int | None


_COLUMNS = """
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull,
       (SELECT k.n FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
        WHERE k.attnum = a.attnum)
FROM pg_attribute a
LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attnum
"""


def table_columns(cursor: Cursor, oid: int) -> list[CatalogColumn]:
    """The published columns of relation ``oid`` in order (generated columns are not)."""
    cursor.execute(_COLUMNS, (oid,))
    return [CatalogColumn(*row) for row in cursor.fetchall()]


def captured_tables(
    cursor: Cursor, captures: Callable[[str, str], bool]
) -> list[tuple[int, str, str, float]]:
    """``(oid, schema, table, estimated rows)`` of every ordinary table ``captures`` accepts."""
    cursor.execute(
        """
        SELECT c.oid, n.nspname, c.relname, c.reltuples
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'r' AND NOT c.relispartition
          AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND n.nspname NOT LIKE 'pg\\_%%'
        ORDER BY n.nspname, c.relname
        """
    )
    return [(oid, s, t, float(rows)) for oid, s, t, rows in cursor.fetchall() if captures(s, t)]


def check_server(cursor: Cursor, where: str) -> None:
    """Fail clearly when logical decoding is off."""
    cursor.execute("SHOW wal_level")
    row = cursor.fetchone()
    level = row[0] if row else "?"
    if level != "logical":
        raise ConnectError(
            f"PostgreSQL at {where} has wal_level={level}: set wal_level=logical "
            "(postgresql.conf) and restart the server"
        )


def slot_state(cursor: Cursor, slot: str) -> SlotState | None:
    """The slot called ``slot``, or None."""
    cursor.execute(
        "SELECT slot_name, plugin, database, active_pid, confirmed_flush_lsn::text "
        "FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    )
    row = cursor.fetchone()
    if row is None:
        return None
    name, plugin, database, pid, flushed = row
    return SlotState(name, plugin, database, pid, None if flushed is None else parse_lsn(flushed))


def check_slot(cursor: Cursor, slot: str, database: str) -> SlotState | None:
    """The slot (None: none yet); a clear error when someone else uses it or it cannot serve."""
    state = slot_state(cursor, slot)
    if state is None:
        return None
    if state.active_pid is not None:
        raise ConnectError(
            f"replication slot {slot!r} is active (in use by server process {state.active_pid}, "
            "another connector or client): stop that consumer or set a different slot.name"
        )
    if state.plugin != "pgoutput" or state.database != database:
        raise ConnectError(
            f"replication slot {slot!r} exists for plugin {state.plugin} on database "
            f"{state.database}, not pgoutput on {database}: set a different slot.name"
        )
    return state


def wait_released(cursor: Cursor, slot: str, timeout_s: float = 10.0) -> SlotState | None:
    """The slot once no process uses it (None: there is none); waits at most ``timeout_s``
    (a closed replication connection's server process exits shortly after)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = slot_state(cursor, slot)
        if state is None or state.active_pid is None:
            return state
        if time.monotonic() > deadline:
            raise ConnectError(f"replication slot {slot!r} is still in use")
        time.sleep(0.05)


def drop_slot(cursor: Cursor, slot: str, timeout_s: float = 10.0) -> None:
    """Drop the slot, waiting (bounded) for its last user to let go."""
    if wait_released(cursor, slot, timeout_s) is not None:
        cursor.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        log.info("dropped replication slot %s", slot)


def _published(cursor: Cursor, publication: str) -> tuple[bool, set[tuple[str, str]]] | None:
    cursor.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (publication,))
    row = cursor.fetchone()
    if row is None:
        return None
    cursor.execute(
        "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s",
        (publication,),
    )
    return bool(row[0]), {(s, t) for s, t in cursor.fetchall()}


def _table_list(tables: list[tuple[Any, str, str, Any]]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(s, t) for _, s, t, _ in tables)


def ensure_publication(
    cursor: Cursor, publication: str, mode: str, tables: list[tuple[int, str, str, float]]
) -> None:
    """Create the publication (or bring a ``filtered`` one in line) as ``mode`` says."""
    found = _published(cursor, publication)
    name = sql.Identifier(publication)
    wanted = {(s, t) for _, s, t, _ in tables}
    if found is None:
        if mode == "disabled":
            raise ConnectError(
                f"publication {publication!r} does not exist and publication.autocreate.mode is "
                f"disabled: CREATE PUBLICATION {publication} FOR TABLE ... first"
            )
        if mode == "all_tables":
            cursor.execute(sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES").format(name))
        elif tables:
            statement = sql.SQL("CREATE PUBLICATION {} FOR TABLE {}")
            cursor.execute(statement.format(name, _table_list(tables)))
        else:
            raise ConnectError("no table matches table.include.list: nothing to publish")
        log.info("created publication %s (%s)", publication, mode)
        return
    all_tables, published = found
    if mode == "filtered" and not all_tables and published != wanted and tables:
        cursor.execute(
            sql.SQL("ALTER PUBLICATION {} SET TABLE {}").format(name, _table_list(tables))
        )
        log.info("publication %s now publishes %d tables", publication, len(tables))
    missing = wanted - published
    if missing and not all_tables and mode != "filtered":
        log.warning(
            "publication %s does not publish %s: their changes are not streamed",
            publication,
            ", ".join(sorted(f"{s}.{t}" for s, t in missing)),
        )
