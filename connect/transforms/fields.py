"""Transformations that add, drop, rename and mask fields, under Kafka's names and settings.

Each works on schemaless data (a dict) and on schema'd data (a :class:`~sluice.connect.Struct`,
whose schema is rewritten to match), in a ``$Key`` and a ``$Value`` variant:

- ``InsertField``: add fields from the record's metadata (``topic.field``, ``partition.field``,
  ``offset.field``, ``timestamp.field``) or a constant (``static.field``, ``static.value``); a
  trailing ``!`` makes the added field required, ``?`` (the default) optional;
- ``ReplaceField``: keep (``include``), drop (``exclude``) and rename (``renames=old:new,...``);
- ``MaskField``: replace ``fields`` with the empty value of their type, or with ``replacement``;
- ``ValueToKey`` (no variants): a new key made of value ``fields``.

ExtractField, HoistField and Flatten, which change how deep data is nested, are in
:mod:`~sluice.connect.transforms.nesting`. A null key or value (a tombstone) passes through
InsertField, ReplaceField and MaskField unchanged. Where a struct field is null and its schema has
a default, the default is used unless ``replace.null.with.default=false`` (Kafka's KIP-1040).

>>> from sluice.connect.api.data import ConnectRecord
>>> insert = InsertFieldValue()
>>> insert.configure({"topic.field": "source", "static.field": "env", "static.value": "prod"})
>>> insert.apply(ConnectRecord("orders", 0, None, None, None, {"id": 7})).value
{'id': 7, 'source': 'orders', 'env': 'prod'}
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import TransformError
from sluice.connect.api.logical import EPOCH, EPOCH_DATE, millis_to_datetime, timestamp_schema
from sluice.connect.api.transform import (
    REPLACE_NULL,
    ConfigKey,
    KeyOrValueTransformation,
    R,
    SchemaCache,
    Settings,
    Transformation,
    copy_schema_basics,
    require_map,
    require_sink_record,
    require_struct,
    struct_value,
    type_name,
)
from sluice.errors import ConfigError

__all__ = [
    "InsertField",
    "InsertFieldKey",
    "InsertFieldValue",
    "MaskField",
    "MaskFieldKey",
    "MaskFieldValue",
    "ReplaceField",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "ValueToKey",
]

_OPTIONALITY = (
    " Suffix with ! to make this a required field, or ? to keep it optional (the default)."
)


class InsertField(KeyOrValueTransformation):
    """Insert record metadata or a static value as fields (Kafka's ``InsertField``)."""

    CONFIG = (
        ConfigKey("topic.field", "string", "Field name for Kafka topic." + _OPTIONALITY, None),
        ConfigKey(
            "partition.field", "string", "Field name for Kafka partition." + _OPTIONALITY, None
        ),
        ConfigKey(
            "offset.field",
            "string",
            "Field name for Kafka offset - only applicable to sink connectors." + _OPTIONALITY,
            None,
        ),
        ConfigKey(
            "timestamp.field", "string", "Field name for record timestamp." + _OPTIONALITY, None
        ),
        ConfigKey(
            "static.field", "string", "Field name for static data field." + _OPTIONALITY, None
        ),
        ConfigKey("static.value", "string", "Static field value, if field name configured.", None),
        REPLACE_NULL,
    )
    PURPOSE = "field insertion"

    def setup(self, settings: Settings) -> None:
        def spec(key: str) -> tuple[str, bool] | None:
            text = settings.optional_string(key)
            if text is None:
                return None
            if text.endswith(("?", "!")):
                return text[:-1], text.endswith("?")
            return text, True

        self.topic_field = spec("topic.field")
        self.partition_field = spec("partition.field")
        self.offset_field = spec("offset.field")
        self.timestamp_field = spec("timestamp.field")
        self.static_field = spec("static.field")
        self.static_value = settings.optional_string("static.value")
        self.replace_null_with_default = settings.boolean("replace.null.with.default")
        specs = (self.topic_field, self.partition_field, self.offset_field, self.timestamp_field)
        if all(s is None for s in specs) and self.static_field is None:
            raise ConfigError("No field insertion configured")
        if self.static_field is not None and self.static_value is None:
            raise ConfigError(
                f"No value specified for static field: {self.static_field[0]}", key="static.value"
            )
        self._schemas = SchemaCache()

    def _insertions(self, record: R, with_schema: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.topic_field:
            out[self.topic_field[0]] = record.topic
        if self.partition_field and record.kafka_partition is not None:
            out[self.partition_field[0]] = record.kafka_partition
        if self.offset_field:
            out[self.offset_field[0]] = require_sink_record(record, self.PURPOSE).kafka_offset
        if self.timestamp_field and record.timestamp is not None:
            ts = record.timestamp
            out[self.timestamp_field[0]] = millis_to_datetime(ts) if with_schema else ts
        if self.static_field and self.static_value is not None:
            out[self.static_field[0]] = self.static_value
        return out

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            updated = dict(require_map(value, self.PURPOSE))
            updated.update(self._insertions(record, with_schema=False))
            return self.updated(record, None, updated)
        struct = require_struct(value, self.PURPOSE)
        schema = self._schemas.get(struct.schema) or self._schemas.put(
            struct.schema, self._updated_schema(struct.schema)
        )
        replace = self.replace_null_with_default
        values = {f.name: struct_value(struct, f, replace) for f in struct.schema.fields}
        values.update(self._insertions(record, with_schema=True))
        return self.updated(
            record, schema, Struct(schema, {f.name: values.get(f.name) for f in schema.fields})
        )

    def _updated_schema(self, schema: Schema) -> Schema:
        fields = list(schema.fields)
        for spec, kind in (
            (self.topic_field, Schema("string")),
            (self.partition_field, Schema("int32")),
            (self.offset_field, Schema("int64")),
            (self.timestamp_field, timestamp_schema()),
            (self.static_field, Schema("string")),
        ):
            if spec is not None:
                name, optional = spec
                fields.append(Field(name, dataclasses.replace(kind, optional=optional)))
        return copy_schema_basics(schema, fields=fields)


class InsertFieldKey(InsertField):
    """``InsertField$Key``: insert fields into the record key."""

    SIDE = "key"


class InsertFieldValue(InsertField):
    """``InsertField$Value``: insert fields into the record value."""

    SIDE = "value"


class ReplaceField(KeyOrValueTransformation):
    """Filter or rename fields (Kafka's ``ReplaceField``)."""

    CONFIG = (
        ConfigKey("exclude", "list", "Fields to exclude. This takes precedence over include.", []),
        ConfigKey("include", "list", "Fields to include. If specified, only these are used.", []),
        ConfigKey("renames", "list", "Field rename mappings, e.g. foo:bar,abc:xyz.", []),
        REPLACE_NULL,
    )
    PURPOSE = "field replacement"

    def setup(self, settings: Settings) -> None:
        self.exclude = set(settings.list("exclude"))
        self.include = set(settings.list("include"))
        self.renames: dict[str, str] = {}
        for mapping in settings.list("renames"):
            parts = mapping.split(":")
            if len(parts) != 2:
                raise ConfigError(f"Invalid rename mapping: {mapping}", key="renames")
            self.renames[parts[0]] = parts[1]
        self.replace_null_with_default = settings.boolean("replace.null.with.default")
        self._schemas = SchemaCache()

    def _keep(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            updated = {
                self.renames.get(k, k): v
                for k, v in require_map(value, self.PURPOSE).items()
                if self._keep(k)
            }
            return self.updated(record, None, updated)
        struct = require_struct(value, self.PURPOSE)
        kept = [f for f in struct.schema.fields if self._keep(f.name)]
        schema = self._schemas.get(struct.schema) or self._schemas.put(
            struct.schema,
            copy_schema_basics(
                struct.schema,
                fields=[Field(self.renames.get(f.name, f.name), f.schema) for f in kept],
            ),
        )
        values = {
            self.renames.get(f.name, f.name): struct_value(
                struct, f, self.replace_null_with_default
            )
            for f in kept
        }
        return self.updated(record, schema, Struct(schema, values))


class ReplaceFieldKey(ReplaceField):
    """``ReplaceField$Key``: filter or rename the fields of the record key."""

    SIDE = "key"


class ReplaceFieldValue(ReplaceField):
    """``ReplaceField$Value``: filter or rename the fields of the record value."""

    SIDE = "value"


def _empty(value: Any) -> Any:
    """The value MaskField puts in place of ``value`` without a replacement."""
    for kinds, empty in (
        (bool, False),
        (int, 0),
        (float, 0.0),
        (str, ""),
        (Decimal, Decimal(0)),
        (dt.datetime, EPOCH),
        (dt.date, EPOCH_DATE),
        (dt.time, dt.time(0)),
        (list, []),
        (dict, {}),
    ):
        if isinstance(value, kinds):
            return empty
    raise TransformError(f"Cannot mask value of type: {type_name(value)}")


def _replacement(value: Any, replacement: str) -> Any:
    """``replacement`` converted to the type of ``value`` (numbers and strings only)."""
    converters: tuple[tuple[type, Any], ...] = ((int, int), (float, float), (Decimal, Decimal))
    if isinstance(value, str):
        return replacement
    if not isinstance(value, bool):
        for kind, convert in converters:
            if isinstance(value, kind):
                try:
                    return convert(replacement)
                except (ValueError, ArithmeticError):
                    raise TransformError(f"Unable to convert {replacement} to number") from None
    raise TransformError(f"Cannot mask value of type {type_name(value)} with custom replacement.")


class MaskField(KeyOrValueTransformation):
    """Mask fields with the empty value of their type or a replacement (Kafka's ``MaskField``).

    Empty values: ``False``, ``0``, ``0.0``, ``""``, ``Decimal(0)``, the epoch for dates and
    times, ``[]``, ``{}``. A ``replacement`` applies to numbers and strings only.
    """

    CONFIG = (
        ConfigKey("fields", "list", "Names of fields to mask."),
        ConfigKey(
            "replacement",
            "string",
            "Custom value replacement, applied to all 'fields' values (numeric or non-empty "
            "string values only).",
            None,
        ),
        REPLACE_NULL,
    )
    PURPOSE = "mask fields"

    def setup(self, settings: Settings) -> None:
        self.fields = settings.list("fields")
        if not self.fields:
            raise ConfigError("Empty list", key="fields")
        self.replacement = settings.optional_string("replacement")
        if self.replacement == "":
            raise ConfigError("String may not be empty", key="replacement")
        self.replace_null_with_default = settings.boolean("replace.null.with.default")

    def _masked(self, value: Any) -> Any:
        if value is None:
            return None
        if self.replacement is None:
            return _empty(value)
        return _replacement(value, self.replacement)

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            original = require_map(value, self.PURPOSE)
            updated = dict(original)
            for name in self.fields:
                updated[name] = self._masked(original.get(name))
            return self.updated(record, None, updated)
        struct = require_struct(value, self.PURPOSE)
        masked = set(self.fields)
        values = {}
        for f in struct.schema.fields:
            field_value = struct_value(struct, f, self.replace_null_with_default)
            values[f.name] = self._masked(field_value) if f.name in masked else field_value
        return self.updated(record, schema, Struct(struct.schema, values))


class MaskFieldKey(MaskField):
    """``MaskField$Key``: mask fields of the record key."""

    SIDE = "key"


class MaskFieldValue(MaskField):
    """``MaskField$Value``: mask fields of the record value."""

    SIDE = "value"


class ValueToKey(Transformation):
    """Replace the key with a key made of ``fields`` of the value (Kafka's ``ValueToKey``)."""

    CONFIG = (
        ConfigKey(
            "fields", "list", "Field names on the record value to extract as the record key."
        ),
        REPLACE_NULL,
    )
    PURPOSE = "copying fields from value to key"

    def setup(self, settings: Settings) -> None:
        self.fields = settings.list("fields")
        if not self.fields:
            raise ConfigError("Empty list", key="fields")
        if len(set(self.fields)) != len(self.fields):
            raise ConfigError("Duplicate fields are not allowed", key="fields")
        self.replace_null_with_default = settings.boolean("replace.null.with.default")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        if record.value_schema is None:
            value = require_map(record.value, self.PURPOSE)
            key = {name: value.get(name) for name in self.fields}
            return record.new_record(key_schema=None, key=key)  # type: ignore[no-any-return]
        struct = require_struct(record.value, self.PURPOSE)
        schema = self._schemas.get(struct.schema)
        if schema is None:
            fields = []
            for name in self.fields:
                found = struct.schema.field(name)
                if found is None:
                    raise TransformError(f"Field does not exist: {name}")
                fields.append(found)
            schema = self._schemas.put(struct.schema, Schema.struct(fields))
        values = {
            f.name: struct_value(struct, f, self.replace_null_with_default) for f in schema.fields
        }
        return record.new_record(  # type: ignore[no-any-return]
            key_schema=schema, key=Struct(schema, values)
        )
