"""The query of each ``jdbc-source`` mode, and the offsets it resumes from (Confluent's).

Per mode, over a table or a custom query (wrapped as a subquery), with ``ts`` the timestamp
column or the COALESCE of several, ``end`` the database's clock minus
``timestamp.delay.interval.ms``:

- ``bulk``: ``SELECT * FROM t`` (every poll copies the whole table; no offset);
- ``incrementing``: ``WHERE inc > :inc ORDER BY inc``;
- ``timestamp``: ``WHERE ts > :ts AND ts < :end ORDER BY ts``;
- ``timestamp+incrementing``: ``WHERE ts < :end AND ((ts = :ts AND inc > :inc) OR ts > :ts)
  ORDER BY ts, inc``.

Offsets are Confluent's: ``{"incrementing": N}``, ``{"timestamp": ms, "timestamp_nanos": n}``
(milliseconds since the epoch, and the nanoseconds within that second), or both. Without an
offset, reading starts after incrementing value -1 and timestamp ``timestamp.initial`` (the
epoch by default).

On SQLite, whose timestamps are text in several formats, timestamps are compared as
``strftime('%Y-%m-%d %H:%M:%f', ts)``: to the millisecond.

On PostgreSQL, tables in the incremental modes get the *in-flight guard* (see
:func:`xmin_guard`).

>>> offset = Offset.of({"timestamp": 1_700_000_000_123, "timestamp_nanos": 123_456_000})
>>> offset.timestamp.isoformat(), offset.to_dict()["timestamp_nanos"]
('2023-11-14T22:13:20.123456+00:00', 123456000)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from sluice.connect import EPOCH, datetime_to_millis
from sluice.connectors.jdbc._source_types import TypeContext

__all__ = ["Criteria", "Offset", "xmin_guard"]

_SQLITE_FORMAT = "%Y-%m-%d %H:%M:%f"


@dataclass(frozen=True)
class Offset:
    """How far a table (or query) was read: the last row's incrementing value and timestamp."""

    incrementing: int | None = None
    timestamp: dt.datetime | None = None  # aware, UTC, to the microsecond

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> Offset:
        """The offset of a committed offset dict (None: none yet)."""
        if not stored:
            return cls()
        incrementing = stored.get("incrementing")
        timestamp = None
        if stored.get("timestamp") is not None:
            millis = int(stored["timestamp"])
            nanos = int(stored.get("timestamp_nanos") or (millis % 1000) * 1_000_000)
            seconds = EPOCH + dt.timedelta(seconds=millis // 1000)
            timestamp = seconds + dt.timedelta(microseconds=nanos // 1000)
        return cls(None if incrementing is None else int(incrementing), timestamp)

    def to_dict(self) -> dict[str, Any]:
        """The offset as stored (Confluent's keys)."""
        stored: dict[str, Any] = {}
        if self.timestamp is not None:
            stored["timestamp"] = datetime_to_millis(self.timestamp)
            stored["timestamp_nanos"] = self.timestamp.microsecond * 1000
        if self.incrementing is not None:
            stored["incrementing"] = self.incrementing
        return stored


def xmin_guard(table_sql: str, server_version: tuple[int, ...]) -> sa.TextClause:
    """PostgreSQL's in-flight guard: only rows whose writing transaction ended.

    A row may be read only if its ``xmin`` (the transaction that wrote this version) precedes
    the oldest transaction still running when the statement's snapshot was taken
    (``pg_snapshot_xmin(pg_current_snapshot())``): then no transaction that wrote before it can
    still commit a row that sorts lower. ``xmin`` is a 32-bit xid that wraps around, the
    snapshot's xmin a 64-bit one with an epoch; the comparison is PostgreSQL's own
    (``TransactionIdPrecedes``): the distance from the row's xid up to the snapshot's low 32
    bits, modulo 2³², must be in 1..2³¹, which holds because PostgreSQL keeps every live xid
    within 2³¹ of the current one. The special xids below 3 (frozen rows) always precede.
    """
    snapshot = (
        "pg_snapshot_xmin(pg_current_snapshot())"
        if server_version >= (13,)
        else "txid_snapshot_xmin(txid_current_snapshot())"
    )
    row = f"{table_sql}.xmin::text::bigint"
    oldest = f"(SELECT {snapshot}::text::bigint % 4294967296)"
    return sa.text(
        f"({row} < 3 OR ({oldest} - {row} + 4294967296) % 4294967296 BETWEEN 1 AND 2147483648)"
    )


@dataclass
class Criteria:
    """Builds a mode's SELECT over ``source`` and reads the offset of each row it returns."""

    mode: str
    source: sa.FromClause
    incrementing: str | None
    timestamps: Sequence[str]
    types: TypeContext
    aware: bool = False  # timestamp columns carry a time zone (bind aware datetimes)
    guard: sa.TextClause | None = None

    def _column(self, name: str) -> sa.ColumnElement[Any]:
        try:
            return self.source.c[name]
        except KeyError:
            names = ", ".join(self.source.c.keys())
            raise ValueError(f"no column {name!r} (columns: {names})") from None

    def _timestamp(self) -> sa.ColumnElement[Any]:
        columns = [self._column(name) for name in self.timestamps]
        if self.types.dialect == "sqlite":
            columns = [sa.func.strftime(_SQLITE_FORMAT, column) for column in columns]
        return columns[0] if len(columns) == 1 else sa.func.coalesce(*columns)

    def _bind(self, instant: dt.datetime) -> sa.ColumnElement[Any]:
        if self.types.dialect == "sqlite":
            local = instant.astimezone(self.types.zone)
            text = local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d}"
            return sa.literal(text, sa.String())
        if not self.aware:
            naive = instant.astimezone(self.types.zone).replace(tzinfo=None)
            return sa.literal(naive, sa.DateTime())
        return sa.literal(instant, sa.DateTime(timezone=True))

    def check(self) -> None:
        """Raise ValueError when a configured column is missing."""
        if self.incrementing:
            self._column(self.incrementing)
        for name in self.timestamps:
            self._column(name)

    def select(
        self, offset: Offset, initial: dt.datetime | None, end: dt.datetime | None
    ) -> sa.Select[Any]:
        """The statement reading what follows ``offset`` (``end``: the timestamp bound)."""
        statement = sa.select(self.source)
        mode = self.mode
        if mode == "bulk":
            return statement
        order: list[sa.ColumnElement[Any]] = []
        if "timestamp" in mode:
            assert end is not None
            ts = self._timestamp()
            last = offset.timestamp or initial or EPOCH
            statement = statement.where(ts < self._bind(end))
            if mode == "timestamp":
                statement = statement.where(ts > self._bind(last))
            else:
                inc = self._column(self.incrementing or "")
                after = sa.literal(-1 if offset.incrementing is None else offset.incrementing)
                statement = statement.where(
                    sa.or_(sa.and_(ts == self._bind(last), inc > after), ts > self._bind(last))
                )
            order.append(ts)
        if "incrementing" in mode:
            inc = self._column(self.incrementing or "")
            if mode == "incrementing":
                after = sa.literal(-1 if offset.incrementing is None else offset.incrementing)
                statement = statement.where(inc > after)
            order.append(inc)
        if self.guard is not None:
            statement = statement.where(self.guard)
        return statement.order_by(*[column.asc() for column in order])

    def advance(self, offset: Offset, row: Mapping[str, Any]) -> Offset:
        """The offset after ``row`` (a mapping of column name → database value)."""
        if self.mode == "bulk":
            return offset
        incrementing, timestamp = offset.incrementing, offset.timestamp
        if "incrementing" in self.mode:
            value = row[self.incrementing or ""]
            if value is None:
                raise ValueError(f"incrementing column {self.incrementing} is NULL")
            incrementing = int(value)
        if "timestamp" in self.mode:
            value = next((row[n] for n in self.timestamps if row[n] is not None), None)
            if value is not None:
                timestamp = self.types.instant(value)
                if self.types.dialect == "sqlite":  # compared to the millisecond
                    timestamp = timestamp.replace(microsecond=timestamp.microsecond // 1000 * 1000)
        return Offset(incrementing, timestamp)
