"""Streamed pgoutput messages → Debezium change events, with the positions to resume from.

:class:`ChangeStream` keeps what the stream needs between messages: the relations seen (a
``Relation`` message replaces a table's schema: columns added, dropped or retyped), the open
transaction, and :attr:`ChangeStream.position` — the LSN before which every change has been
turned into records (the end of the last complete transaction, or the server's position when
idle). That is what may be confirmed to the slot once the records are committed.

Events (Debezium's): insert → ``c``; update → ``u`` (``before`` only with REPLICA IDENTITY
FULL); an update that changes the primary key → ``d`` for the old key, a tombstone, ``c`` for
the new one; delete → ``d`` (``before`` = the old key, or the old row with REPLICA IDENTITY
FULL) and a tombstone when ``tombstones.on.delete``; truncate → ``t`` on each table's topic,
without key.

Each change message of a transaction has an index (``event``); a record's source offset
holds its transaction's commit LSN (``lsn_commit``) and that index. Resuming from an offset,
transactions that committed before ``lsn_commit`` and the messages up to ``event`` of the one
that committed at it are skipped (PostgreSQL sends them again when they were not confirmed).
The position confirmed to the slot after a commit derives from the committed offset
(:meth:`ChangeStream.confirmable`): never past a change whose record is not committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sluice.connect import ConnectError, Struct
from sluice.connectors.postgres.catalog import CatalogColumn
from sluice.connectors.postgres.columns import CHARACTER_TYPES
from sluice.connectors.postgres.config import Settings
from sluice.connectors.postgres.events import ColumnSpec, Event, EventBuilder, Position, TableSchema
from sluice.connectors.postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Relation,
    Truncate,
    Update,
    decode,
)
from sluice.connectors.postgres.types import column_type

__all__ = ["ChangeStream", "table_schema"]

log = logging.getLogger("sluice.connectors.postgres")

Describe = Callable[[int], list[CatalogColumn]]
"""The catalog's columns of a relation OID (nullability and primary key)."""


def table_schema(
    settings: Settings,
    schema: str,
    table: str,
    columns: list[tuple[str, int, int]],
    catalog: list[CatalogColumn],
) -> TableSchema:
    """The :class:`TableSchema` of ``columns`` (name, type OID, modifier) with the catalog's
    nullability and primary key."""
    known = {c.name: c for c in catalog}
    rules = settings.columns
    specs = []
    for name, type_oid, modifier in columns:
        info = known.get(name)
        optional = info is None or not info.not_null
        kind = column_type(
            type_oid,
            modifier,
            optional=optional,
            decimal_mode=settings.decimal_mode,
            time_mode=settings.time_mode,
        )
        if rules.empty:
            specs.append(ColumnSpec(name, kind))
            continue
        kept = rules.keeps(schema, table, name)
        rule = rules.rule(schema, table, name) if kept else None
        if rule is None:
            specs.append(ColumnSpec(name, kind, kept))
            continue
        length = modifier - 4 if type_oid in (1043, 1042) and modifier >= 4 else -1
        if rule.kind != "truncate" and type_oid not in CHARACTER_TYPES:
            raise ConnectError(
                f"{rule.key}: column {schema}.{table}.{name} is not a character column "
                f"(text, varchar, char): it cannot be masked (Debezium would emit it "
                "unmasked); leave it out with column.exclude.list or narrow the expression"
            )
        parameters = rule.parameters
        if rule.kind == "truncate" and 0 < length <= rule.length:
            parameters = ()  # never longer than the limit: Debezium leaves it alone
        specs.append(ColumnSpec(name, kind, True, rule.mapper(length), parameters))
    keyed = sorted((c for c in catalog if c.key_position), key=lambda c: c.key_position or 0)
    return TableSchema(settings.prefix, schema, table, specs, [c.name for c in keyed])


class ChangeStream:
    """Turns decoded messages into records; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        events: EventBuilder,
        describe: Describe,
        start: int,
        resume: tuple[int, int] | None = None,
    ) -> None:
        self.settings = settings
        self.events = events
        self.describe = describe
        self.position = start
        self.resume = resume
        self.tables: dict[int, tuple[TableSchema, frozenset[int]] | None] = {}
        # commit LSN → (end LSN, index of its last change that made records), until confirmed
        self.completed: dict[int, tuple[int, int]] = {}
        self._emitted = -1
        self.transaction: Begin | None = None
        self.last_xid: int | None = None
        self.last_commit: int | None = None
        self.last_commit_time = 0
        self._event = -1
        self._skip_through = -1

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction's Begin came and its Commit not yet."""
        return self.transaction is not None

    def idle_at(self, wal_end: int) -> None:
        """The server has nothing more before ``wal_end`` (no transaction is open)."""
        if self.transaction is None and wal_end > self.position:
            self.position = wal_end

    def confirmable(self, lsn_commit: int, event: int) -> int:
        """The LSN to confirm once the record at (``lsn_commit``, ``event``) is committed.

        Everything before ``lsn_commit`` is done; past it only when that transaction is known
        complete and its last record is the one committed (then: the commit's end).
        """
        done = self.completed.get(lsn_commit)
        for commit in [c for c in self.completed if c <= lsn_commit]:
            del self.completed[commit]
        if done is not None and event >= done[1]:
            return done[0]
        return lsn_commit

    def heartbeat_position(self, now_us: int) -> Position:
        """Where the stream is, for a heartbeat (never behind the offset it resumed from)."""
        if self.resume is not None and self.position <= self.resume[0]:
            commit, event = self.resume
            return Position(commit, commit, self.last_xid, now_us, event, last_commit=None)
        return Position(
            self.position,
            self.position,
            self.last_xid,
            self.last_commit_time or now_us,
            last_commit=self.last_commit,
        )

    def handle(self, data_start: int, payload: bytes, out: list[Event]) -> None:
        """Decode one message and append its events (records to be) to ``out``."""
        message = decode(payload)
        if isinstance(message, Insert | Update | Delete | Truncate):  # the most frequent first
            self._event += 1
            tx = self.transaction
            if tx is None:
                raise ValueError(f"a change outside a transaction at {data_start}")
            if self._event <= self._skip_through:
                return
            # lsn, lsn_commit, tx_id, ts_usec, event, snapshot, last_commit (by position: faster)
            position = Position(
                data_start,
                tx.final_lsn,
                tx.xid,
                tx.commit_time,
                self._event,
                None,
                self.last_commit,
            )
            before = len(out)
            self._change(message, position, out)
            if len(out) > before:
                self._emitted = self._event
        elif isinstance(message, Begin):
            self._begin(message)
        elif isinstance(message, Commit):
            if self._emitted >= 0:
                self.completed[message.commit_lsn] = (message.end_lsn, self._emitted)
            self.transaction = None
            self.last_commit = message.commit_lsn
            self.last_commit_time = message.commit_time
            self.position = max(self.position, message.end_lsn)
        elif isinstance(message, Relation):
            self.tables[message.oid] = self._relation(message)
        # Origin, Type and logical messages carry nothing to emit.

    def _begin(self, begin: Begin) -> None:
        self.transaction = begin
        self.last_xid = begin.xid
        self._event = -1
        self._emitted = -1
        self._skip_through = -1
        if self.resume is not None:
            commit_lsn, event = self.resume
            if begin.final_lsn < commit_lsn:
                self._skip_through = 1 << 62  # committed before the resume point: all done
            elif begin.final_lsn == commit_lsn:
                self._skip_through = event
            else:
                self.resume = None

    def _relation(self, relation: Relation) -> tuple[TableSchema, frozenset[int]] | None:
        if not self.settings.captures(relation.namespace, relation.name):
            return None
        columns = [(c.name, c.type_oid, c.type_modifier) for c in relation.columns]
        table = table_schema(
            self.settings,
            relation.namespace,
            relation.name,
            columns,
            self.describe(relation.oid),
        )
        identity = frozenset(i for i, c in enumerate(relation.columns) if c.key)
        log.info("schema of %s.%s: %d columns", relation.namespace, relation.name, len(columns))
        return table, identity

    def _emit(self, op: str) -> bool:
        return op not in self.settings.skipped

    def _change(
        self,
        message: Insert | Update | Delete | Truncate,
        position: Position,
        out: list[Event],
    ) -> None:
        events = self.events
        if isinstance(message, Truncate):
            for oid in message.relations:
                found = self.tables.get(oid)
                if found is not None and self._emit("t"):
                    out.append(events.event(found[0], "t", position))
            return
        found = self.tables.get(message.relation)
        if found is None:
            return
        table, identity = found
        if isinstance(message, Insert):
            after, key = table.image(message.new)
            if self._emit("c"):
                out.append(events.event(table, "c", position, after=after, key=key))
        elif isinstance(message, Update):
            after, key = table.image(message.new)
            before = None
            if message.old is not None:
                present = identity if message.old_kind == "K" else None
                before, old_key = table.image(message.old, present)
                if old_key is not None and key is not None and old_key.values != key.values:
                    self._delete(table, position, before, old_key, out)
                    if self._emit("c"):
                        out.append(events.event(table, "c", position, after=after, key=key))
                    return
            if self._emit("u"):
                out.append(events.event(table, "u", position, before=before, after=after, key=key))
        else:
            present = identity if message.old_kind == "K" else None
            before, old_key = table.image(message.old, present)
            self._delete(table, position, before, old_key, out)

    def _delete(
        self,
        table: TableSchema,
        position: Position,
        before: Struct,
        key: Struct | None,
        out: list[Event],
    ) -> None:
        if not self._emit("d"):
            return
        event = self.events.event(table, "d", position, before=before, key=key)
        out.append(event)
        if self.settings.tombstones and key is not None:
            out.append(self.events.tombstone(event))
