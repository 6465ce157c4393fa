"""Transformations that change how deeply a key or value is nested, under Kafka's names.

Each works on schemaless data (a dict) and on schema'd data (a :class:`~sluice.connect.Struct`,
whose schema is rewritten to match), in a ``$Key`` and a ``$Value`` variant:

- ``ExtractField``: the value of one ``field`` becomes the whole key or value;
- ``HoistField``: the whole key or value becomes one ``field`` of a new struct or dict;
- ``Flatten``: nested structs and dicts become top-level fields joined by ``delimiter`` (``.``);
  a null key or value passes unchanged.

>>> from sluice.connect.api.data import ConnectRecord
>>> flatten = FlattenValue()
>>> flatten.configure({"delimiter": "_"})
>>> flatten.apply(ConnectRecord("t", 0, None, None, None, {"a": {"b": 1, "c": [2]}})).value
{'a_b': 1, 'a_c': [2]}
>>> hoist = HoistFieldKey()
>>> hoist.configure({"field": "id"})
>>> hoist.apply(ConnectRecord("t", 0, None, 7, None, "v")).key
{'id': 7}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import TransformError
from sluice.connect.api.transform import (
    REPLACE_NULL,
    ConfigKey,
    KeyOrValueTransformation,
    R,
    SchemaCache,
    Settings,
    copy_schema_basics,
    require_map,
    require_struct,
    struct_value,
    type_name,
)

__all__ = [
    "ExtractField",
    "ExtractFieldKey",
    "ExtractFieldValue",
    "Flatten",
    "FlattenKey",
    "FlattenValue",
    "HoistField",
    "HoistFieldKey",
    "HoistFieldValue",
]


class ExtractField(KeyOrValueTransformation):
    """Replace the key or value with one of its fields (Kafka's ``ExtractField``).

    A null key or value gives null; with a schema, a field the schema lacks is an error.
    """

    CONFIG = (
        ConfigKey("field", "string", "Field name to extract."),
        REPLACE_NULL,
    )
    PURPOSE = "field extraction"

    def setup(self, settings: Settings) -> None:
        self.field = settings.string("field")
        self.replace_null_with_default = settings.boolean("replace.null.with.default")

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        if schema is None:
            if value is None:
                return self.updated(record, None, None)
            return self.updated(record, None, require_map(value, self.PURPOSE).get(self.field))
        found = schema.field(self.field)
        if found is None:
            raise TransformError(f"Unknown field: {self.field}")
        if value is None:
            return self.updated(record, found.schema, None)
        struct = require_struct(value, self.PURPOSE)
        return self.updated(
            record, found.schema, struct_value(struct, found, self.replace_null_with_default)
        )


class ExtractFieldKey(ExtractField):
    """``ExtractField$Key``: the key becomes one of its fields."""

    SIDE = "key"


class ExtractFieldValue(ExtractField):
    """``ExtractField$Value``: the value becomes one of its fields."""

    SIDE = "value"


class HoistField(KeyOrValueTransformation):
    """Wrap the key or value in a struct (with schema) or dict with one ``field`` (Kafka's
    ``HoistField``)."""

    CONFIG = (
        ConfigKey(
            "field",
            "string",
            "Field name for the single field that will be created in the resulting Struct or Map.",
        ),
    )

    def setup(self, settings: Settings) -> None:
        self.field = settings.string("field")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        if schema is None:
            return self.updated(record, None, {self.field: value})
        hoisted = self._schemas.get(schema) or self._schemas.put(
            schema, Schema.struct([Field(self.field, schema)])
        )
        return self.updated(record, hoisted, Struct(hoisted, {self.field: value}))


class HoistFieldKey(HoistField):
    """``HoistField$Key``: wrap the key."""

    SIDE = "key"


class HoistFieldValue(HoistField):
    """``HoistField$Value``: wrap the value."""

    SIDE = "value"


class Flatten(KeyOrValueTransformation):
    """Flatten nested structs and dicts into top-level fields (Kafka's ``Flatten``).

    Names join with ``delimiter``; arrays and maps inside a struct are kept as they are. With a
    schema, the fields of an optional struct become optional.
    """

    CONFIG = (
        ConfigKey(
            "delimiter",
            "string",
            "Delimiter to insert between field names from the input record when generating field "
            "names for the output record",
            ".",
        ),
    )
    PURPOSE = "flattening"

    def setup(self, settings: Settings) -> None:
        self.delimiter = settings.string("delimiter")
        self._schemas = SchemaCache()

    def _name(self, prefix: str, name: str) -> str:
        return f"{prefix}{self.delimiter}{name}" if prefix else name

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, self.PURPOSE), "", flat)
            return self.updated(record, None, flat)
        struct = require_struct(value, self.PURPOSE)
        schema = self._schemas.get(struct.schema)
        if schema is None:
            fields: list[Field] = []
            top = struct.schema
            self._flatten_schema(top, "", fields, top.optional, top.default)
            schema = self._schemas.put(top, copy_schema_basics(top, fields=fields))
        values: dict[str, Any] = {}
        self._flatten_struct(struct.schema, struct, "", values)
        return self.updated(record, schema, Struct(schema, values))

    def _flatten_map(self, value: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            name = self._name(prefix, key)
            if isinstance(item, dict):
                self._flatten_map(item, name, out)
            elif item is None or isinstance(item, bool | int | float | str | bytes | list):
                out[name] = item
            else:
                raise TransformError(
                    f"Flatten transformation does not support {type_name(item)} for record "
                    f"without schemas (for field {name})."
                )

    def _flatten_schema(
        self, schema: Schema, prefix: str, out: list[Field], optional: bool, default: Any
    ) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            field_optional = optional or f.schema.optional
            field_default = f.schema.default
            if field_default is None and isinstance(default, Struct):
                field_default = default.values.get(f.name)
            if f.schema.type == "struct":
                self._flatten_schema(f.schema, name, out, field_optional, field_default)
            else:
                flat = dataclasses.replace(f.schema, optional=field_optional, default=field_default)
                out.append(Field(name, flat))

    def _flatten_struct(
        self, schema: Schema, struct: Struct | None, prefix: str, out: dict[str, Any]
    ) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            item = None if struct is None else struct.values.get(f.name)
            if f.schema.type == "struct":
                nested = None if item is None else require_struct(item, self.PURPOSE)
                self._flatten_struct(f.schema, nested, name, out)
            else:
                out[name] = item


class FlattenKey(Flatten):
    """``Flatten$Key``: flatten the record key."""

    SIDE = "key"


class FlattenValue(Flatten):
    """``Flatten$Value``: flatten the record value."""

    SIDE = "value"
