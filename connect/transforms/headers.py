"""Header transformations under Kafka's names: ``HeaderFrom``, ``InsertHeader``, ``DropHeaders``.

- ``HeaderFrom$Key`` / ``HeaderFrom$Value``: copy (``operation=copy``) or move (``move``) the
  ``fields`` of the key or value into the ``headers`` named at the same positions;
- ``InsertHeader``: add ``header`` with ``value.literal`` (``true``/``false`` become booleans,
  integers and decimals numbers, anything else text);
- ``DropHeaders``: remove every header whose key is in ``headers``.

Added headers go after the existing ones; headers are ``(key, value)`` pairs.

>>> from sluice.connect.api.data import ConnectRecord
>>> move = HeaderFromValue()
>>> move.configure({"fields": "id", "headers": "x-id", "operation": "move"})
>>> moved = move.apply(ConnectRecord("t", 0, None, None, None, {"id": 7, "name": "Ada"}))
>>> moved.value, moved.headers
({'name': 'Ada'}, [('x-id', 7)])
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from sluice.connect.api.data import Schema, Struct
from sluice.connect.api.errors import TransformError
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
    require_struct,
    struct_value,
)
from sluice.errors import ConfigError

__all__ = [
    "DropHeaders",
    "HeaderFrom",
    "HeaderFromKey",
    "HeaderFromValue",
    "InsertHeader",
    "parse_literal",
]


class HeaderFrom(KeyOrValueTransformation):
    """Copy or move fields of the key or value into headers (Kafka's ``HeaderFrom``)."""

    CONFIG = (
        ConfigKey(
            "fields", "list", "Field names in the record whose values are to be copied or moved."
        ),
        ConfigKey(
            "headers",
            "list",
            "Header names, in the same order as the field names listed in the fields "
            "configuration property.",
        ),
        ConfigKey(
            "operation",
            "string",
            "Either move if the fields are to be moved to the headers (removed from the key/value),"
            " or copy if the fields are to be copied to the headers (retained in the key/value).",
            choices=("move", "copy"),
        ),
        REPLACE_NULL,
    )
    PURPOSE = "header from"

    def setup(self, settings: Settings) -> None:
        self.fields = settings.list("fields")
        self.headers = settings.list("headers")
        if not self.fields:
            raise ConfigError("Empty list", key="fields")
        if len(self.fields) != len(self.headers):
            raise ConfigError(
                "'fields' config must have the same number of elements as 'headers' config.",
                key="headers",
            )
        self.move = settings.string("operation") == "move"
        self.replace_null_with_default = settings.boolean("replace.null.with.default")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        headers = list(record.headers)
        if self.operating_schema(record) is None:
            original = require_map(value, self.PURPOSE)
            headers.extend(
                (h, original.get(f)) for f, h in zip(self.fields, self.headers, strict=True)
            )
            if not self.move:
                return record.new_record(headers=headers)  # type: ignore[no-any-return]
            moved = set(self.fields)
            kept = {k: v for k, v in original.items() if k not in moved}
            return self.updated(record, None, kept, headers=headers)
        struct = require_struct(value, self.PURPOSE)
        for name, header in zip(self.fields, self.headers, strict=True):
            found = struct.schema.field(name)
            if found is None:
                raise TransformError(f"{name} is not a valid field name")
            headers.append((header, struct_value(struct, found, self.replace_null_with_default)))
        if not self.move:
            return record.new_record(headers=headers)  # type: ignore[no-any-return]
        schema = self._schemas.get(struct.schema) or self._schemas.put(
            struct.schema, self._without(struct.schema)
        )
        kept = {f.name: struct.values.get(f.name) for f in schema.fields}
        return self.updated(record, schema, Struct(schema, kept), headers=headers)

    def _without(self, schema: Schema) -> Schema:
        moved = set(self.fields)
        updated = copy_schema_basics(
            schema, fields=[f for f in schema.fields if f.name not in moved]
        )
        return dataclasses.replace(updated, optional=schema.optional)


class HeaderFromKey(HeaderFrom):
    """``HeaderFrom$Key``: headers from fields of the record key."""

    SIDE = "key"


class HeaderFromValue(HeaderFrom):
    """``HeaderFrom$Value``: headers from fields of the record value."""

    SIDE = "value"


_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


def parse_literal(text: str) -> Any:
    """A header value from text, a simplified Kafka ``Values.parseString``:
    ``true``/``false`` → bool, integers → int, decimals → float, anything else → the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INTEGER.fullmatch(text.strip()):
        return int(text)
    if _DECIMAL.fullmatch(text.strip()):
        return float(text)
    return text


class InsertHeader(Transformation):
    """Add a header with a literal value to every record (Kafka's ``InsertHeader``)."""

    CONFIG = (
        ConfigKey("header", "string", "The name of the header."),
        ConfigKey(
            "value.literal", "string", "The literal value that is to be set as the header value."
        ),
    )

    def setup(self, settings: Settings) -> None:
        self.header = settings.string("header")
        self.value = parse_literal(settings.string("value.literal"))

    def apply(self, record: R) -> R:
        headers = [*record.headers, (self.header, self.value)]
        return record.new_record(headers=headers)  # type: ignore[no-any-return]


class DropHeaders(Transformation):
    """Remove the headers with the given keys (Kafka's ``DropHeaders``)."""

    CONFIG = (ConfigKey("headers", "list", "The name of the headers to be removed."),)

    def setup(self, settings: Settings) -> None:
        self.headers = frozenset(settings.list("headers"))
        if not self.headers:
            raise ConfigError("Empty list", key="headers")

    def apply(self, record: R) -> R:
        headers = [(k, v) for k, v in record.headers if k not in self.headers]
        return record.new_record(headers=headers)  # type: ignore[no-any-return]
