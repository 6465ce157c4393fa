"""From sink records to row operations: what ``jdbc-sink`` writes, before any SQL.

Each :class:`~sluice.connect.SinkRecord` becomes one :class:`Operation` on one table: its
kind (``insert``, ``upsert``, ``update`` from ``insert.mode``, or ``delete`` for a tombstone
with ``delete.enabled``), the primary key columns (from ``pk.mode`` / ``pk.fields``), the row
(column → value) and the columns' Connect schemas (for auto.create/evolve). Values are structs
(with schema) or dicts (schemaless: column schemas are inferred from the Python values, see
:func:`~sluice.connectors.jdbc._sink_types.infer_schema`); keys are primitives, structs or dicts.

A record that cannot become a row (no key where the key is the primary key, a value that is
not a struct or a dict, a field whose type has no column type) raises :class:`BadRecordError`
naming topic, partition, offset, field and type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.connect import PRIMITIVES, ConnectError, Schema, SinkRecord, Struct
from sluice.connectors.jdbc._sink_config import SinkSettings
from sluice.connectors.jdbc._sink_types import (
    UnmappableTypeError,
    infer_schema,
    no_column_type,
    type_name,
)

__all__ = [
    "BadRecordError",
    "ColumnSpec",
    "Operation",
    "RecordPlanner",
    "TableName",
    "table_name",
]

_TOPIC = Schema("string")
_PARTITION = Schema("int32")
_OFFSET = Schema("int64")


class BadRecordError(ConnectError):
    """A record ``jdbc-sink`` cannot write (Kafka's ``DataException``); ``errors.tolerance``
    decides whether it is skipped or fails the task."""

    def __init__(self, record: SinkRecord, message: str) -> None:
        self.record = record
        where = f"{record.topic}[{record.kafka_partition}]@{record.kafka_offset}"
        super().__init__(f"record {where}: {message}")


@dataclass(frozen=True)
class TableName:
    """A table, optionally in a schema."""

    name: str
    schema: str | None = None

    def __str__(self) -> str:
        return self.name if self.schema is None else f"{self.schema}.{self.name}"


def table_name(format: str, topic: str) -> TableName:
    """The table of ``topic`` by ``table.name.format``: dots outside ``${topic}`` separate a
    schema name; a dotted topic name stays one table name.

    >>> str(table_name("${topic}", "db.public.orders")), table_name("archive.${topic}", "t")
    ('db.public.orders', TableName(name='t', schema='archive'))
    """
    placeholder = "\0"
    parts = format.replace("${topic}", placeholder).rsplit(".", 1)
    if len(parts) == 2 and parts[0] and parts[1]:
        schema, name = (part.replace(placeholder, topic) for part in parts)
        return TableName(name, schema)
    return TableName(format.replace("${topic}", topic))


@dataclass(frozen=True)
class ColumnSpec:
    """A column as the record describes it: name, Connect schema, part of the key or not."""

    name: str
    schema: Schema
    key: bool = False

    @property
    def inferred_from_null(self) -> bool:
        """Whether the schema was only guessed from a null (schemaless) value."""
        return self.schema is _NULL


_NULL = infer_schema(None)


@dataclass
class Operation:
    """One row to write (or delete) in one table; see the module docstring."""

    kind: str
    table: TableName
    pk: tuple[str, ...]
    row: dict[str, Any]
    columns: tuple[ColumnSpec, ...]
    record: SinkRecord

    def key(self) -> tuple[Any, ...]:
        """The primary key's values (rows of one key coalesce)."""
        return tuple(self.row[name] for name in self.pk)


def _is_truncate(value: Any) -> bool:
    """Whether ``value`` is a Debezium truncate event (an envelope with ``op`` ``t``)."""
    if isinstance(value, Struct):
        fields = value.values
    elif isinstance(value, dict):
        fields = value
    else:
        return False
    return fields.get("op") == "t" and "source" in fields


def _field_schema(record: SinkRecord, field: str, schema: Schema | None, value: Any) -> Schema:
    """The schema of a column, checked to have a SQL type."""
    if schema is None:
        try:
            return infer_schema(value)
        except UnmappableTypeError as error:
            raise BadRecordError(record, f"field {field!r}: {error}") from None
    if schema.type not in PRIMITIVES:
        raise BadRecordError(record, f"field {field!r}: {no_column_type(type_name(schema))}")
    return schema


Keys = tuple[tuple[ColumnSpec, ...], list[Any]]
"""Primary key columns and their values."""

_CACHE_SIZE = 10_000


class RecordPlanner:
    """Turns records into :class:`Operation` objects by the connector's settings.

    Column specs of struct schemas are worked out once per schema object (converters reuse
    them), so that a batch of structs costs a dict per record. Not thread-safe.
    """

    def __init__(self, settings: SinkSettings) -> None:
        self.settings = settings
        self._tables: dict[str, TableName] = {}
        self._shapes: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        names = settings.pk_fields
        self._kafka_specs: tuple[ColumnSpec, ...] = ()
        if settings.pk_mode == "kafka":
            self._kafka_specs = (
                ColumnSpec(names[0], _TOPIC, True),
                ColumnSpec(names[1], _PARTITION, True),
                ColumnSpec(names[2], _OFFSET, True),
            )

    def table(self, topic: str) -> TableName:
        """The table of ``topic``."""
        found = self._tables.get(topic)
        if found is None:
            found = self._tables[topic] = table_name(self.settings.table_format, topic)
        return found

    def operation(self, record: SinkRecord) -> Operation | None:
        """The operation of ``record``; None for a tombstone when deletes are off."""
        settings = self.settings
        table = self.table(record.topic)
        value = record.value
        if _is_truncate(value):
            if not settings.truncate_enabled:
                return None
            return Operation("truncate", table, (), {}, (), record)
        if value is None:
            if not settings.delete_enabled:
                return None
            specs, values = self._keys(record)
            pk = tuple(spec.name for spec in specs)
            return Operation("delete", table, pk, dict(zip(pk, values, strict=True)), specs, record)
        if settings.pk_mode == "record_value":
            specs, values = self._picked(record, value, "value")
        elif settings.pk_mode == "none":
            specs, values = (), []
        else:
            specs, values = self._keys(record)
        pk = tuple(spec.name for spec in specs)
        row = dict(zip(pk, values, strict=True))
        if isinstance(value, Struct):
            columns, names = self._struct_columns(record, value.schema, specs)
            fields = value.values
            for name in names:
                row[name] = fields.get(name)
            return Operation(settings.insert_mode, table, pk, row, columns, record)
        if not isinstance(value, dict):
            raise BadRecordError(
                record, f"the value must be a struct or a map, not {type(value).__name__}"
            )
        column_specs = list(specs)
        whitelist = settings.whitelist
        for raw, item in value.items():
            name = str(raw)
            if name in row or (whitelist and name not in whitelist):
                continue
            column_specs.append(ColumnSpec(name, _field_schema(record, name, None, item)))
            row[name] = item
        return Operation(settings.insert_mode, table, pk, row, tuple(column_specs), record)

    def _cached(self, key: tuple[Any, ...], make: Callable[[], tuple[Any, ...]]) -> Any:
        found = self._shapes.get(key)
        if found is None:
            if len(self._shapes) >= _CACHE_SIZE:
                self._shapes.clear()
            found = self._shapes[key] = make()
        return found

    def _struct_columns(
        self, record: SinkRecord, schema: Schema, keys: tuple[ColumnSpec, ...]
    ) -> tuple[tuple[ColumnSpec, ...], tuple[str, ...]]:
        """Every column of a struct value (after ``keys``) and the value fields to read."""

        def make() -> tuple[Any, ...]:
            taken = {spec.name for spec in keys}
            whitelist = self.settings.whitelist
            specs = list(keys)
            for field in schema.fields:
                if field.name in taken or (whitelist and field.name not in whitelist):
                    continue
                if field.schema.type not in PRIMITIVES:
                    problem = f"field {field.name!r}: {no_column_type(type_name(field.schema))}"
                    return schema, keys, problem
                specs.append(ColumnSpec(field.name, field.schema))
            names = tuple(spec.name for spec in specs[len(keys) :])
            return schema, keys, (tuple(specs), names)

        identity = tuple((spec.name, id(spec.schema)) for spec in keys)
        _, _, shape = self._cached(("value", id(schema), identity), make)
        if isinstance(shape, str):
            raise BadRecordError(record, shape)
        columns: tuple[tuple[ColumnSpec, ...], tuple[str, ...]] = shape
        return columns

    def _keys(self, record: SinkRecord) -> Keys:
        """The primary key columns of ``record`` (pk.mode kafka or record_key)."""
        settings = self.settings
        if settings.pk_mode == "kafka":
            return self._kafka_specs, [record.topic, record.kafka_partition, record.kafka_offset]
        key = record.key
        if key is None:
            raise BadRecordError(record, f"pk.mode={settings.pk_mode} needs a key; it has none")
        if isinstance(key, Struct | dict):
            return self._picked(record, key, "key")
        if len(settings.pk_fields) != 1:
            raise ConnectError(
                "pk.mode=record_key with a primitive key needs exactly one pk.fields name "
                f"(the key's column), not {list(settings.pk_fields)}"
            )
        name = settings.pk_fields[0]
        schema = _field_schema(record, name, record.key_schema, key)
        return (ColumnSpec(name, schema, True),), [key]

    def _picked(self, record: SinkRecord, data: Any, what: str) -> Keys:
        """The primary key columns among the fields of the key or value (pk.fields)."""
        if isinstance(data, Struct):
            specs = self._struct_keys(record, data.schema, what)
            fields = data.values
            values = [fields.get(spec.name) for spec in specs]
        elif isinstance(data, dict):
            wanted = self.settings.pk_fields or tuple(str(name) for name in data)
            missing = [name for name in wanted if name not in data]
            if missing:
                raise BadRecordError(record, f"the {what} has no field {missing[0]!r} (pk.fields)")
            values = [data[name] for name in wanted]
            specs = tuple(
                ColumnSpec(name, _field_schema(record, name, None, value), True)
                for name, value in zip(wanted, values, strict=True)
            )
        else:
            raise BadRecordError(
                record, f"the {what} must be a struct or a map, not {type(data).__name__}"
            )
        if not specs:
            raise BadRecordError(record, f"the {what} has no fields for the primary key")
        for spec, value in zip(specs, values, strict=True):
            if value is None:
                raise BadRecordError(record, f"primary key field {spec.name!r} is null")
        return specs, values

    def _struct_keys(self, record: SinkRecord, schema: Schema, what: str) -> tuple[ColumnSpec, ...]:
        """The primary key columns of a struct schema (pk.fields, or every field)."""

        def make() -> tuple[Any, ...]:
            wanted = self.settings.pk_fields or tuple(field.name for field in schema.fields)
            specs = []
            for name in wanted:
                field = schema.field(name)
                if field is None:
                    return schema, f"the {what} has no field {name!r} (pk.fields)"
                if field.schema.type not in PRIMITIVES:
                    return schema, f"field {name!r}: {no_column_type(type_name(field.schema))}"
                specs.append(ColumnSpec(name, field.schema, True))
            return schema, tuple(specs)

        _, specs = self._cached((what, id(schema)), make)
        if isinstance(specs, str):
            raise BadRecordError(record, specs)
        found: tuple[ColumnSpec, ...] = specs
        return found
