"""Debezium-shaped change events: key and value schemas per table, the envelope, the source block.

For table ``<schema>.<table>`` and ``topic.prefix`` ``<prefix>`` the topic is
``<prefix>.<schema>.<table>``; the key is a struct ``<prefix>.<schema>.<table>.Key`` of the
primary key columns (no primary key: no key); the value is the envelope
``<prefix>.<schema>.<table>.Envelope``::

    before       <prefix>.<schema>.<table>.Value (optional)  the row before (updates, deletes)
    after        <prefix>.<schema>.<table>.Value (optional)  the row after (reads, creates, updates)
    source       io.debezium.connector.postgresql.Source     where the change came from
    transaction  event.block (optional)                      always null here
    op           string                                      r read (snapshot), c create,
                                                             u update, d delete, t truncate
    ts_ms, ts_us, ts_ns  int64 (optional)                    when the connector made the event

The source block: ``version``, ``connector`` (``postgresql``), ``name`` (the prefix), ``ts_ms``
(commit time, or the read time in a snapshot), ``snapshot`` (``true``, ``last`` or ``false``),
``db``, ``sequence`` (JSON ``[last commit LSN, LSN]``), ``ts_us``, ``ts_ns``, ``schema``,
``table``, ``txId``, ``lsn``, ``xmin`` (null).

>>> from sluice.connectors.postgres.types import column_type
>>> table = TableSchema("shop", "public", "items", [
...     ColumnSpec("id", column_type(23, -1, optional=False)),
...     ColumnSpec("name", column_type(25, -1, optional=True))], key=["id"])
>>> table.topic, table.key_schema.name, table.envelope_schema.name
('shop.public.items', 'shop.public.items.Key', 'shop.public.items.Envelope')
>>> row = table.row(["7", "pen"])
>>> row.values, table.key_of(row).values
({'id': 7, 'name': 'pen'}, {'id': 7})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NamedTuple

from sluice.connect import ConnectError, Field, Schema, SourceBatch, SourceRecord, Struct
from sluice.connectors.postgres.pgoutput import UNCHANGED, TupleValue
from sluice.connectors.postgres.types import ColumnType

__all__ = [
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "SOURCE_SCHEMA",
    "ColumnSpec",
    "Event",
    "EventBuilder",
    "Position",
    "TableSchema",
]

try:
    VERSION = version("sluice")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    VERSION = "0.0.0"

_OPT_STRING = Schema("string", optional=True)
_OPT_INT64 = Schema("int64", optional=True)

SOURCE_SCHEMA = Schema.struct(
    [
        Field("version", Schema("string")),
        Field("connector", Schema("string")),
        Field("name", Schema("string")),
        Field("ts_ms", Schema("int64")),
        Field(
            "snapshot",
            Schema(
                "string",
                optional=True,
                name="io.debezium.data.Enum",
                version=1,
                parameters=(("allowed", "true,last,false,incremental"),),
                default="false",
            ),
        ),
        Field("db", Schema("string")),
        Field("sequence", _OPT_STRING),
        Field("ts_us", _OPT_INT64),
        Field("ts_ns", _OPT_INT64),
        Field("schema", Schema("string")),
        Field("table", Schema("string")),
        Field("txId", _OPT_INT64),
        Field("lsn", _OPT_INT64),
        Field("xmin", _OPT_INT64),
    ],
    name="io.debezium.connector.postgresql.Source",
)
"""Debezium's PostgreSQL source block."""

TRANSACTION_SCHEMA = Schema.struct(
    [
        Field("id", Schema("string")),
        Field("total_order", Schema("int64")),
        Field("data_collection_order", Schema("int64")),
    ],
    name="event.block",
    optional=True,
)

HEARTBEAT_KEY_SCHEMA = Schema.struct(
    [Field("serverName", Schema("string"))], name="io.debezium.connector.common.ServerNameKey"
)
HEARTBEAT_VALUE_SCHEMA = Schema.struct(
    [Field("ts_ms", Schema("int64"))], name="io.debezium.connector.common.Heartbeat"
)


@dataclass(frozen=True)
class ColumnSpec:
    """A captured column: its name and type; whether its values are in the events' values
    (``kept``), and what they become there (``mapper``, with the schema ``parameters`` it
    adds: :mod:`~sluice.connectors.postgres.columns`). The key always has the plain values."""

    name: str
    type: ColumnType
    kept: bool = True
    mapper: Callable[[Any], Any] | None = None
    parameters: tuple[tuple[str, str], ...] = ()

    @property
    def value_schema(self) -> Schema:
        """The column's schema in the events' values."""
        schema = self.type.schema
        if not self.parameters:
            return schema
        return dataclasses.replace(schema, parameters=(*schema.parameters, *self.parameters))


class TableSchema:
    """The schemas and topic of one captured table, and its rows as structs."""

    def __init__(
        self,
        prefix: str,
        schema: str,
        table: str,
        columns: Sequence[ColumnSpec],
        key: Sequence[str],
    ) -> None:
        self.schema_name = schema
        self.table = table
        self.columns = tuple(columns)
        self.topic = f"{prefix}.{schema}.{table}"
        self.value_schema = Schema.struct(
            [Field(c.name, c.value_schema) for c in self.columns if c.kept],
            name=f"{self.topic}.Value",
            optional=True,
        )
        by_name = {c.name: c for c in self.columns}
        self.key_columns = tuple(name for name in key if name in by_name)
        # Filtered or mapped columns: the value differs from the parsed row (None: it does not).
        self._shown: tuple[tuple[str, Callable[[Any], Any] | None], ...] | None = None
        if any(not c.kept or c.mapper is not None for c in self.columns):
            self._shown = tuple((c.name, c.mapper) for c in self.columns if c.kept)
        self.key_schema: Schema | None = None
        if self.key_columns:
            fields = [Field(n, _required(by_name[n].type.schema)) for n in self.key_columns]
            self.key_schema = Schema.struct(fields, name=f"{self.topic}.Key")
        self.envelope_schema = Schema.struct(
            [
                Field("before", self.value_schema),
                Field("after", self.value_schema),
                Field("source", SOURCE_SCHEMA),
                Field("transaction", TRANSACTION_SCHEMA),
                Field("op", Schema("string")),
                Field("ts_ms", _OPT_INT64),
                Field("ts_us", _OPT_INT64),
                Field("ts_ns", _OPT_INT64),
            ],
            name=f"{self.topic}.Envelope",
        )
        self.envelope_schema = dataclasses.replace(self.envelope_schema, version=1)
        # What row() needs of each column, looked up once (it runs for every change).
        self._readers = [
            (c.name, c.type.parse, c.type.schema.optional, c.type.fallback, c.type.unavailable)
            for c in self.columns
        ]

    def row(self, values: Sequence[TupleValue], present: Collection[int] | None = None) -> Struct:
        """A ``Value`` struct of text ``values`` in column order (see :meth:`image`)."""
        return self.image(values, present)[0]

    def image(
        self, values: Sequence[TupleValue], present: Collection[int] | None = None
    ) -> tuple[Struct, Struct | None]:
        """The ``Value`` struct of text ``values`` in column order, and its ``Key`` (None: the
        table has no primary key).

        Columns not in ``present`` (all when None) are missing (a key-only before image): None,
        or Debezium's fallback when the column is NOT NULL. :data:`UNCHANGED` becomes the
        TOAST placeholder. Columns left out by the column filters are not in the value, and
        masked ones are masked there; the key has the primary key's plain values.
        """
        data: dict[str, Any] = {}
        count = len(values)
        for index, (name, parse, optional, fallback, unavailable) in enumerate(self._readers):
            raw = values[index] if index < count else None
            if present is not None and index not in present:
                value = None if optional else fallback
            elif type(raw) is str:
                try:
                    value = parse(raw)
                except ValueError as error:
                    raise self._unreadable(name, raw, error) from None
            elif raw is UNCHANGED:
                value = unavailable
            elif isinstance(raw, str | bytes):
                text = raw if isinstance(raw, str) else raw.decode()
                try:
                    value = parse(text)
                except ValueError as error:
                    raise self._unreadable(name, text, error) from None
            else:
                value = None
            if value is None and not optional:
                value = fallback
            data[name] = value
        key = None
        if self.key_schema is not None:
            key = Struct(self.key_schema, {name: data[name] for name in self.key_columns})
        if self._shown is None:
            return Struct(self.value_schema, data), key
        shown = {}
        for name, mapper in self._shown:
            value = data[name]
            shown[name] = value if mapper is None or value is None else mapper(value)
        return Struct(self.value_schema, shown), key

    def _unreadable(self, column: str, text: str, error: ValueError) -> ConnectError:
        return ConnectError(f"{self.topic}: column {column}: cannot read {text[:60]!r}: {error}")

    def key_of(self, row: Struct) -> Struct | None:
        """The ``Key`` struct of a row (None: the table has no primary key); only for tables
        without column filters or masks on the key (use :meth:`image`)."""
        if self.key_schema is None:
            return None
        return Struct(self.key_schema, {name: row.values.get(name) for name in self.key_columns})


def _required(schema: Schema) -> Schema:
    return Schema(
        schema.type,
        name=schema.name,
        version=schema.version,
        parameters=schema.parameters,
        fields=schema.fields,
        value_schema=schema.value_schema,
    )


class Position(NamedTuple):
    """Where an event is in the source: what the source block and the source offset say.

    A named tuple (not a dataclass): one is made per change, and a tuple is made fastest.
    """

    lsn: int
    lsn_commit: int
    tx_id: int | None
    ts_usec: int  # commit time (stream) or read time (snapshot), µs since the epoch
    event: int = -1  # index of the change message within its transaction
    snapshot: str | None = None  # "true" or "last" for snapshot reads
    last_commit: int | None = None  # commit LSN of the transaction before

    def offset(self) -> dict[str, Any]:
        """The source offset (see the connector's documentation)."""
        offset: dict[str, Any] = {
            "lsn": self.lsn,
            "lsn_commit": self.lsn_commit,
            "txId": self.tx_id,
            "ts_usec": self.ts_usec,
            "event": self.event,
        }
        if self.snapshot is not None:
            offset["snapshot"] = True
            offset["last_snapshot_record"] = self.snapshot == "last"
        return offset


class Event(NamedTuple):
    """A change event before it is a record: the envelope ``value`` (None: a tombstone), the
    ``key`` (None: the table has no primary key, or a truncate) and where it came from."""

    table: TableSchema
    value: Struct | None
    key: Struct | None
    position: Position


class EventBuilder:
    """Makes the records of one connector: change events, tombstones, heartbeats.

    Change events are made as :class:`Event` tuples; :meth:`record` turns one into a
    :class:`SourceRecord` (``SourceTask.poll``) and :meth:`batches` many into the runtime's
    column form (``SourceTask.poll_batch``), which saves a record object, an offset and the
    runtime's per-record work for each change.
    """

    def __init__(
        self,
        prefix: str,
        database: str,
        heartbeat_topic: str,
        clock_ns: Callable[[], int],
    ) -> None:
        self.prefix = prefix
        self.database = database
        self.partition = {"server": prefix}
        self.heartbeat_topic = heartbeat_topic
        self.clock_ns = clock_ns

    def source(self, table: TableSchema, position: Position) -> Struct:
        """The ``source`` block of an event at ``position``."""
        # what json.dumps([last commit LSN as text or None, LSN as text]) writes, by hand
        last, lsn = position.last_commit, position.lsn
        sequence = f'[null, "{lsn}"]' if last is None else f'["{last}", "{lsn}"]'
        return Struct(
            SOURCE_SCHEMA,
            {
                "version": VERSION,
                "connector": "postgresql",
                "name": self.prefix,
                "ts_ms": position.ts_usec // 1000,
                "snapshot": position.snapshot or "false",
                "db": self.database,
                "sequence": sequence,
                "ts_us": position.ts_usec,
                "ts_ns": position.ts_usec * 1000,
                "schema": table.schema_name,
                "table": table.table,
                "txId": position.tx_id,
                "lsn": position.lsn,
                "xmin": None,
            },
        )

    def event(
        self,
        table: TableSchema,
        op: str,
        position: Position,
        *,
        before: Struct | None = None,
        after: Struct | None = None,
        key: Struct | None = None,
    ) -> Event:
        """A change event (``op`` r, c, u, d or t) on the table's topic."""
        now = self.clock_ns()
        value = Struct(
            table.envelope_schema,
            {
                "before": before,
                "after": after,
                "source": self.source(table, position),
                "transaction": None,
                "op": op,
                "ts_ms": now // 1_000_000,
                "ts_us": now // 1000,
                "ts_ns": now,
            },
        )
        return Event(table, value, key, position)

    def change(
        self,
        table: TableSchema,
        op: str,
        position: Position,
        *,
        before: Struct | None = None,
        after: Struct | None = None,
        key: Struct | None = None,
    ) -> SourceRecord:
        """A change event (``op`` r, c, u, d or t) on the table's topic, as a record."""
        return self.record(self.event(table, op, position, before=before, after=after, key=key))

    def record(self, event: Event) -> SourceRecord:
        """The record of a change event or a tombstone."""
        table, value, key, position = event
        return SourceRecord(
            self.partition,
            position.offset(),
            table.topic,
            None,
            None if value is None else table.envelope_schema,
            value,
            key_schema=None if key is None else table.key_schema,
            key=key,
        )

    def batches(self, events: list[Event]) -> list[SourceRecord | SourceBatch]:
        """``events`` as the runtime's column form, in order: each run of change events of one
        table (with keys, or without) as a :class:`SourceBatch`, tombstones as records."""
        out: list[SourceRecord | SourceBatch] = []
        start, count = 0, len(events)
        while start < count:
            first = events[start]
            table, keyed = first.table, first.key is not None
            if first.value is None:  # a tombstone
                out.append(self.record(first))
                start += 1
                continue
            end = start + 1
            while end < count:
                event = events[end]
                if event.table is not table or event.value is None:
                    break
                if (event.key is not None) is not keyed:
                    break
                end += 1
            run = events[start:end]
            out.append(
                SourceBatch(
                    self.partition,
                    table.topic,
                    table.envelope_schema,
                    [e.value for e in run],
                    run[-1].position.offset(),
                    lambda run=run: [e.position.offset() for e in run],  # type: ignore[misc]
                    key_schema=table.key_schema if keyed else None,
                    keys=[e.key for e in run] if keyed else None,
                )
            )
            start = end
        return out

    def tombstone(self, event: Event) -> Event:
        """The tombstone that follows a delete (same key, null value)."""
        return Event(event.table, None, event.key, event.position)

    def heartbeat(self, position: Position) -> SourceRecord:
        """A heartbeat on ``__debezium-heartbeat.<prefix>`` carrying ``position``'s offset."""
        key = Struct(HEARTBEAT_KEY_SCHEMA, {"serverName": self.prefix})
        value = Struct(HEARTBEAT_VALUE_SCHEMA, {"ts_ms": self.clock_ns() // 1_000_000})
        return SourceRecord(
            self.partition,
            position.offset(),
            self.heartbeat_topic,
            None,
            HEARTBEAT_VALUE_SCHEMA,
            value,
            key_schema=HEARTBEAT_KEY_SCHEMA,
            key=key,
        )
