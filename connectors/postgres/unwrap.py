"""``ExtractNewRecordState``: Debezium's transform that turns a change event into the row.

A Debezium envelope (``before``, ``after``, ``source``, ``op``…) becomes its ``after`` row, so
that a sink (the JDBC sink with ``pk.mode=record_key``, a file, a table) receives plain rows
keyed by the primary key. Settings, as Debezium's:

- ``drop.tombstones`` (default true): drop tombstones (null values);
- ``delete.handling.mode``: ``drop`` (default: deletes are dropped), ``none`` (a delete becomes
  a record with the key and a null value, which sinks apply as a delete), ``rewrite`` (a delete
  becomes its ``before`` row; every row gets a field ``__deleted``, ``"true"`` or ``"false"``);
- ``add.fields``: envelope fields copied into the row as ``__<name>`` (``op``, ``ts_ms``;
  ``table``, ``lsn``, ``txId``… of the source block; ``source.ts_ms`` → ``__source_ts_ms``);
  ``add.fields.prefix`` (default ``__``);
- ``add.headers``: the same fields as headers ``__<name>``.

- ``truncate.handling.mode`` (Sluice's): ``drop`` (default) or ``keep`` — a truncate event (no
  row) passes unchanged, for a sink that empties its table (``jdbc-sink``'s
  ``truncate.enabled``).

Records that are not envelopes (heartbeats, schema-less data without ``op``) pass unchanged.
Works on Structs and on schemaless dicts.

Use it as ``type: unwrap``, ``io.debezium.transforms.ExtractNewRecordState`` or its dotted path.

>>> from sluice.connect import ConnectRecord
>>> unwrap = ExtractNewRecordState()
>>> unwrap.configure({"add.fields": "op,table"})
>>> event = {"before": None, "after": {"id": 1}, "op": "c", "source": {"table": "items"}}
>>> unwrap.apply(ConnectRecord("t", None, None, {"id": 1}, None, event)).value
{'id': 1, '__op': 'c', '__table': 'items'}
"""

from __future__ import annotations

from typing import Any

from sluice.connect import ConnectRecordT as R
from sluice.connect import Field, Schema, SchemaCache, Struct, Transformation
from sluice.connect import TransformConfigKey as ConfigKey
from sluice.connect import TransformSettings as Settings

__all__ = ["ExtractNewRecordState"]

_DELETED = Field("__deleted", Schema("string", optional=True))


class ExtractNewRecordState(Transformation):
    """Debezium's ``io.debezium.transforms.ExtractNewRecordState``; see the module docstring.

    Settings: ``drop.tombstones``, ``delete.handling.mode`` (drop|rewrite|none),
    ``truncate.handling.mode`` (drop|keep),
    ``add.fields``, ``add.fields.prefix``, ``add.headers``, ``add.headers.prefix``.
    """

    CONFIG = (
        ConfigKey("drop.tombstones", "boolean", "Drop tombstone records.", default=True),
        ConfigKey(
            "delete.handling.mode",
            "string",
            "What deletes become: drop, rewrite (before row with __deleted) or none (null).",
            default="drop",
            choices=("drop", "rewrite", "none"),
        ),
        ConfigKey(
            "truncate.handling.mode",
            "string",
            "What truncate events become: drop, or keep (the event as is, for a sink that "
            "empties its table: jdbc-sink's truncate.enabled).",
            default="drop",
            choices=("drop", "keep"),
        ),
        ConfigKey("add.fields", "list", "Envelope fields to add to the row.", default=[]),
        ConfigKey("add.fields.prefix", "string", "Prefix of added field names.", default="__"),
        ConfigKey("add.headers", "list", "Envelope fields to add as headers.", default=[]),
        ConfigKey("add.headers.prefix", "string", "Prefix of added header names.", default="__"),
    )

    def setup(self, settings: Settings) -> None:
        self.drop_tombstones = settings.boolean("drop.tombstones")
        self.deletes = settings.string("delete.handling.mode")
        self.keep_truncates = settings.string("truncate.handling.mode") == "keep"
        prefix = settings.string("add.fields.prefix")
        self.fields = [
            (name, prefix + name.replace(".", "_")) for name in settings.list("add.fields")
        ]
        prefix = settings.string("add.headers.prefix")
        self.headers = [
            (name, prefix + name.replace(".", "_")) for name in settings.list("add.headers")
        ]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        value = record.value
        if value is None:
            return None if self.drop_tombstones else record
        envelope = _fields(value)
        if envelope is None or "op" not in envelope or "after" not in envelope:
            return record
        op = envelope["op"]
        row = envelope["after"]
        deleted = op == "d"
        if op == "t":
            return record if self.keep_truncates else None
        if deleted:
            if self.deletes == "drop":
                return None
            if self.deletes == "none":
                tombstone: R = record.new_record(value_schema=None, value=None)
                return tombstone
            row = envelope["before"]
        if row is None:
            return None
        headers = list(record.headers)
        headers.extend((header, _lookup(envelope, name)) for name, header in self.headers)
        added = [(field, _lookup(envelope, name)) for name, field in self.fields]
        if self.deletes == "rewrite":
            added.append(("__deleted", "true" if deleted else "false"))
        if isinstance(row, Struct):
            schema = self._schema(row.schema, envelope, record.value_schema)
            data = dict(row.values)
            data.update(added)
            unwrapped: R = record.new_record(
                value_schema=schema, value=Struct(schema, data), headers=headers
            )
            return unwrapped
        plain: R = record.new_record(
            value_schema=None, value={**row, **dict(added)}, headers=headers
        )
        return plain

    def _schema(self, row: Schema, envelope: dict[str, Any], outer: Schema | None) -> Schema:
        cached = self._schemas.get(row)
        if cached is not None:
            return cached
        fields = list(row.fields)
        for name, field in self.fields:
            fields.append(Field(field, _optional(_field_schema(outer, name))))
        if self.deletes == "rewrite":
            fields.append(_DELETED)
        schema = Schema.struct(fields, name=row.name, optional=row.optional)
        return self._schemas.put(row, schema)


def _fields(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Struct):
        return value.values
    return value if isinstance(value, dict) else None


def _lookup(envelope: dict[str, Any], name: str) -> Any:
    """An envelope field: ``source.x``, a top-level field, else the source block's."""
    source = _fields(envelope.get("source")) or {}
    if name.startswith("source."):
        return source.get(name[7:])
    if name in envelope:
        return envelope[name]
    return source.get(name)


def _field_schema(envelope: Schema | None, name: str) -> Schema:
    if envelope is None:
        return Schema("string", optional=True)
    source = envelope.field("source")
    source_schema = source.schema if source is not None else None
    if name.startswith("source.") and source_schema is not None:
        found = source_schema.field(name[7:])
    else:
        found = envelope.field(name)
        if found is None and source_schema is not None:
            found = source_schema.field(name)
    return found.schema if found is not None else Schema("string", optional=True)


def _optional(schema: Schema) -> Schema:
    if schema.optional:
        return schema
    return Schema(
        schema.type,
        optional=True,
        name=schema.name,
        version=schema.version,
        parameters=schema.parameters,
        fields=schema.fields,
        value_schema=schema.value_schema,
    )
