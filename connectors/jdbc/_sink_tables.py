"""The tables ``jdbc-sink`` writes: reflected once, created (auto.create) and evolved (auto.evolve).

:class:`TableCatalog` keeps each table's reflected shape (:class:`KnownTable`). Before a batch
is written, :meth:`TableCatalog.prepare` makes sure every table of the batch exists and has a
column for every field of the batch:

- a missing table is created from the columns of the batch's records (primary key columns
  first, ``NOT NULL``, the ``PRIMARY KEY``; a field of a non-optional schema is ``NOT NULL``;
  schemaless fields are nullable) when ``auto.create`` is on, else :class:`MissingTableError`;
- a missing column is added, nullable, with ``ALTER TABLE … ADD COLUMN`` when ``auto.evolve``
  is on, else :class:`MissingColumnsError`. Columns are never dropped or changed.

Field names match columns exactly, else case-insensitively (a column made unquoted, ``NAME``,
is ``name`` in PostgreSQL). DDL runs in its own transactions, before the batch's; another
task creating the same table at the same time is tolerated. Not thread-safe: one per task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateColumn

from sluice.connect import ConnectError
from sluice.connectors.jdbc._sink_records import ColumnSpec, Operation, TableName
from sluice.connectors.jdbc._sink_types import UnmappableTypeError, column_type

__all__ = ["KnownTable", "MissingColumnsError", "MissingTableError", "TableCatalog"]


class MissingTableError(ConnectError):
    """A table does not exist and ``auto.create`` is off."""


class MissingColumnsError(ConnectError):
    """A table lacks columns for fields and ``auto.evolve`` is off."""


@dataclass
class KnownTable:
    """A reflected table and its columns by name (exact and case-folded)."""

    table: sa.Table
    exact: dict[str, sa.Column[object]] = field(default_factory=dict)
    folded: dict[str, sa.Column[object] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for column in self.table.columns:
            self.exact[column.name] = column
            lower = column.name.lower()
            self.folded[lower] = None if lower in self.folded else column  # None: ambiguous

    def column(self, name: str) -> sa.Column[object] | None:
        """The column of field ``name`` (None: there is none)."""
        found = self.exact.get(name)
        return found if found is not None else self.folded.get(name.lower())


def _merged_specs(operations: Iterable[Operation]) -> list[ColumnSpec]:
    """Every column of ``operations`` once, in order of appearance; a schema guessed from a
    null gives way to a real one."""
    specs: dict[str, ColumnSpec] = {}
    seen: set[int] = set()
    for operation in operations:
        columns = operation.columns
        if id(columns) in seen:  # records of one struct schema share their columns
            continue
        seen.add(id(columns))
        for spec in columns:
            known = specs.get(spec.name)
            if known is None or (known.inferred_from_null and not spec.inferred_from_null):
                specs[spec.name] = spec
    return list(specs.values())


class TableCatalog:
    """The tables of one database; see the module docstring."""

    def __init__(self, engine: Engine, *, auto_create: bool, auto_evolve: bool) -> None:
        self.engine = engine
        self.auto_create = auto_create
        self.auto_evolve = auto_evolve
        self._known: dict[TableName, KnownTable] = {}

    @property
    def dialect(self) -> str:
        """The database's dialect name (``postgresql``, ``sqlite``, ``mysql``…)."""
        return self.engine.dialect.name

    def forget(self) -> None:
        """Reflect every table again on next use (after an error that may mean a change)."""
        self._known.clear()

    def exists(self, name: TableName) -> bool:
        """Whether the table exists (reflected if so)."""
        if name in self._known:
            return True
        with self.engine.connect() as connection:
            return self._reflect(connection, name) is not None

    def prepare(self, operations: list[Operation]) -> dict[TableName, KnownTable | None]:
        """Every table of ``operations``, created and evolved as needed (None: a table that
        does not exist and only receives deletes, which then have nothing to delete)."""
        by_table: dict[TableName, list[Operation]] = {}
        for operation in operations:
            by_table.setdefault(operation.table, []).append(operation)
        prepared: dict[TableName, KnownTable | None] = {}
        for name, ops in by_table.items():
            known = self._known.get(name)
            if known is None:
                known = self._open(name, ops)
            if known is not None:
                known = self._evolve(known, name, ops)
            prepared[name] = known
        return prepared

    def _reflect(self, connection: Connection, name: TableName) -> KnownTable | None:
        if not sa.inspect(connection).has_table(name.name, schema=name.schema):
            return None
        table = sa.Table(name.name, sa.MetaData(), schema=name.schema, autoload_with=connection)
        known = self._known[name] = KnownTable(table)
        return known

    def _open(self, name: TableName, ops: list[Operation]) -> KnownTable | None:
        with self.engine.connect() as connection:
            known = self._reflect(connection, name)
        if known is not None:
            return known
        writes = [op for op in ops if op.kind not in ("delete", "truncate")]
        if not self.auto_create:
            first = ops[0].record
            raise MissingTableError(
                f"table {name} does not exist (records of topic {first.topic}) and "
                "auto.create is false: create it, or set auto.create=true"
            )
        if not writes:
            return None
        return self._create(name, writes)

    def _column(self, spec: ColumnSpec, *, nullable: bool) -> sa.Column[object]:
        try:
            kind = column_type(spec.schema, self.dialect, key=spec.key)
        except UnmappableTypeError as error:  # the records were checked: only a bug gets here
            raise ConnectError(f"column {spec.name!r}: {error}") from None
        return sa.Column(spec.name, kind, primary_key=spec.key, nullable=nullable)

    def _create(self, name: TableName, ops: list[Operation]) -> KnownTable:
        specs = _merged_specs(ops)
        keys = [spec for spec in specs if spec.key]
        columns = [self._column(spec, nullable=False) for spec in keys] + [
            self._column(spec, nullable=spec.schema.optional) for spec in specs if not spec.key
        ]
        table = sa.Table(name.name, sa.MetaData(), *columns, schema=name.schema)
        try:
            with self.engine.begin() as connection:
                table.create(connection, checkfirst=True)
        except DBAPIError:
            # Another task may have created it meanwhile: then use theirs.
            with self.engine.connect() as connection:
                known = self._reflect(connection, name)
            if known is None:
                raise
            return known
        with self.engine.connect() as connection:
            created = self._reflect(connection, name)
        assert created is not None, f"table {name} vanished after CREATE TABLE"
        return created

    def _evolve(self, known: KnownTable, name: TableName, ops: list[Operation]) -> KnownTable:
        missing = [spec for spec in _merged_specs(ops) if known.column(spec.name) is None]
        if not missing:
            return known
        if not self.auto_evolve:
            fields = ", ".join(spec.name for spec in missing)
            first = next(op for op in ops if any(s in missing for s in op.columns)).record
            raise MissingColumnsError(
                f"table {name} has no column for field(s) {fields} (record "
                f"{first.topic}[{first.kafka_partition}]@{first.kafka_offset}) and auto.evolve "
                "is false: add the columns, or set auto.evolve=true"
            )
        preparer = self.engine.dialect.identifier_preparer
        target = preparer.format_table(known.table)
        add = "ADD" if self.dialect == "mssql" else "ADD COLUMN"
        for spec in missing:
            column = self._column(spec, nullable=True)
            definition = CreateColumn(column).compile(dialect=self.engine.dialect)
            try:
                with self.engine.begin() as connection:
                    connection.exec_driver_sql(f"ALTER TABLE {target} {add} {definition}")
            except DBAPIError:
                with self.engine.connect() as connection:  # added by another task meanwhile?
                    again = self._reflect(connection, name)
                if again is None or again.column(spec.name) is None:
                    raise
        with self.engine.connect() as connection:
            evolved = self._reflect(connection, name)
        assert evolved is not None, f"table {name} vanished after ALTER TABLE"
        return evolved
