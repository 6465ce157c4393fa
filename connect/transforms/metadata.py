"""``SetSchemaMetadata``: set the name and/or version of the key or value schema (Kafka's).

The schema keeps everything else (type, fields, optionality, default, doc); a struct value is
rebuilt on the renamed schema. Schemaless data raises
:class:`~sluice.connect.TransformError`: there is no schema to rename.

>>> from sluice.connect.api.data import ConnectRecord, Schema
>>> rename = SetSchemaMetadataValue()
>>> rename.configure({"schema.name": "com.example.Count", "schema.version": "2"})
>>> out = rename.apply(ConnectRecord("t", 0, None, None, Schema("int64"), 5))
>>> out.value_schema.name, out.value_schema.version, out.value
('com.example.Count', 2, 5)
"""

from __future__ import annotations

import dataclasses

from sluice.connect.api.data import Struct
from sluice.connect.api.errors import TransformError
from sluice.connect.api.transform import (
    REPLACE_NULL,
    ConfigKey,
    KeyOrValueTransformation,
    R,
    Settings,
    struct_value,
)
from sluice.errors import ConfigError

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]


class SetSchemaMetadata(KeyOrValueTransformation):
    """Set the schema name, version or both (Kafka's ``SetSchemaMetadata``)."""

    CONFIG = (
        ConfigKey("schema.name", "string", "Schema name to set.", None),
        ConfigKey("schema.version", "int", "Schema version to set.", None),
        REPLACE_NULL,
    )

    def setup(self, settings: Settings) -> None:
        self.name = settings.optional_string("schema.name")
        version = settings.values["schema.version"]
        self.version: int | None = None if version is None else int(version)
        if self.name is None and self.version is None:
            raise ConfigError("Neither schema name nor version configured")
        self.replace_null_with_default = settings.boolean("replace.null.with.default")

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        if schema is None:
            raise TransformError("Schema required for [updating schema metadata]")
        updated = dataclasses.replace(
            schema,
            name=self.name if self.name is not None else schema.name,
            version=self.version if self.version is not None else schema.version,
        )
        value = self.operating_value(record)
        if isinstance(value, Struct):
            replace = self.replace_null_with_default
            values = {f.name: struct_value(value, f, replace) for f in value.schema.fields}
            value = Struct(updated, values)
        return self.updated(record, updated, value)


class SetSchemaMetadataKey(SetSchemaMetadata):
    """``SetSchemaMetadata$Key``: rename the key schema."""

    SIDE = "key"


class SetSchemaMetadataValue(SetSchemaMetadata):
    """``SetSchemaMetadata$Value``: rename the value schema."""

    SIDE = "value"
