"""The JSON converter's value walk: Connect values ↔ the JSON nodes of a payload.

:class:`JsonValues` is the part of
:class:`~sluice.connect.converters.json_converter.JsonConverter` that turns
a value of a :class:`~sluice.connect.Schema` (or a schemaless value) into what ``json.dumps``
writes (``_to_json``), and a parsed payload back into Connect data (``_to_connect``), as Kafka's
converter does: integer ranges and types checked, bytes as base64 text, a map whose keys are not
strings as an array of ``[key, value]`` pairs, NaN and infinities as the strings ``"NaN"``,
``"Infinity"``, ``"-Infinity"``, and the logical types of :mod:`sluice.connect.api.logical`. The
settings it reads (``decimal_numeric``, ``replace_null_with_default``) are the converter's.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import (
    DECIMAL,
    LOGICAL_NAMES,
    decimal_scaled,
    logical_to_raw,
    raw_to_logical,
)

__all__ = ["JsonValues"]

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class JsonValues:
    """Connect values ↔ JSON nodes; the converter's settings say how decimals and nulls go."""

    decimal_numeric: bool
    replace_null_with_default: bool

    def _to_json(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            if schema is None:
                return None
            if schema.default is not None and self.replace_null_with_default:
                return self._to_json(schema, schema.default)
            if schema.optional:
                return None
            raise ConverterError(
                "Conversion error: null value for field that is required and has no default value"
            )
        if schema is None:
            kind = _infer_type(value)
            if kind == "struct":
                schema = value.schema
        else:
            kind = schema.type
            if schema.name in LOGICAL_NAMES:
                try:
                    numeric = schema.name == DECIMAL and self.decimal_numeric
                    if numeric and isinstance(value, Decimal):
                        return decimal_scaled(schema, value)
                    value = logical_to_raw(schema, value)
                except ValueError as error:
                    raise ConverterError(str(error)) from error
        if kind in _INTS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConverterError(f"Invalid type for {kind.upper()}: {type(value).__name__}")
            bits = _INTS[kind]
            if schema is not None and not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
                raise ConverterError(f"Value {value} is out of range for {kind.upper()}")
            return value
        if kind in ("float32", "float64"):
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConverterError(f"Invalid type for {kind.upper()}: {type(value).__name__}")
            number = float(value)
            if math.isfinite(number):
                return number
            return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        if kind == "boolean" and isinstance(value, bool):
            return value
        if kind == "string" and isinstance(value, str):
            return value
        if kind == "bytes" and isinstance(value, bytes | bytearray | memoryview):
            return base64.b64encode(value).decode("ascii")
        if kind == "array" and isinstance(value, list | tuple):
            items = None if schema is None else schema.value_schema
            return [self._to_json(items, item) for item in value]
        if kind == "map" and isinstance(value, Mapping):
            return self._map_to_json(schema, value)
        if kind == "struct" and isinstance(value, Struct):
            assert schema is not None
            if value.schema is not schema and value.schema != schema:
                raise ConverterError("Mismatching schema.")
            return {
                field.name: self._to_json(field.schema, value.values.get(field.name))
                for field in schema.fields
            }
        raise ConverterError(f"Invalid type for {kind.upper()}: {type(value).__name__}")

    def _map_to_json(self, schema: Schema | None, value: Mapping[Any, Any]) -> Any:
        keys = None if schema is None else schema.key_schema
        values = None if schema is None else schema.value_schema
        if schema is None:
            object_mode = all(isinstance(key, str) for key in value)
        else:
            object_mode = keys is not None and keys.type == "string"
        if object_mode:
            return {str(self._to_json(keys, k)): self._to_json(values, v) for k, v in value.items()}
        return [[self._to_json(keys, k), self._to_json(values, v)] for k, v in value.items()]

    def _to_connect(self, schema: Schema | None, node: Any) -> Any:
        if schema is None:
            return _schemaless(node)
        if node is None:
            if schema.default is not None:
                return schema.default
            if schema.optional:
                return None
            raise ConverterError(f"Invalid null value for required {schema.type.upper()} field")
        kind = schema.type
        numeric = isinstance(node, int | Decimal) and not isinstance(node, bool)
        try:
            if schema.name == DECIMAL and numeric:
                return decimal_scaled(schema, Decimal(node))
            value = self._typed(schema, kind, node)
            return raw_to_logical(schema, value) if schema.name in LOGICAL_NAMES else value
        except ValueError as error:
            raise ConverterError(str(error)) from error

    def _typed(self, schema: Schema, kind: str, node: Any) -> Any:
        if kind in _INTS and isinstance(node, int) and not isinstance(node, bool):
            return node
        if kind in ("float32", "float64"):
            if isinstance(node, int | Decimal | float) and not isinstance(node, bool):
                return float(node)
            if node in _NON_FINITE:
                return _NON_FINITE[node]
        if kind == "boolean" and isinstance(node, bool):
            return node
        if kind == "string" and isinstance(node, str):
            return node
        if kind == "bytes" and isinstance(node, str):
            try:
                return base64.b64decode(node, validate=True)
            except binascii.Error as error:
                raise ConverterError(f"Invalid base64 for BYTES: {node[:40]!r}") from error
        if kind == "array" and isinstance(node, list):
            items = _child(schema.value_schema, "array items")
            return [self._to_connect(items, item) for item in node]
        if kind == "map":
            return self._map_to_connect(schema, node)
        if kind == "struct":
            if not isinstance(node, dict):
                raise ConverterError(
                    f"Structs should be encoded as JSON objects, but found {_json_type(node)}"
                )
            values = {f.name: self._to_connect(f.schema, node.get(f.name)) for f in schema.fields}
            return Struct(schema, values)
        raise ConverterError(f"Invalid JSON for {kind.upper()}: found {_json_type(node)}")

    def _map_to_connect(self, schema: Schema, node: Any) -> dict[Any, Any]:
        keys = _child(schema.key_schema, "map keys")
        values = _child(schema.value_schema, "map values")
        if keys.type == "string":
            if not isinstance(node, dict):
                raise ConverterError(
                    f"Maps with string fields should be encoded as JSON objects, but found "
                    f"{_json_type(node)}"
                )
            return {k: self._to_connect(values, v) for k, v in node.items()}
        if not isinstance(node, list):
            raise ConverterError(
                "Maps with non-string fields should be encoded as JSON array of tuples, but found "
                f"{_json_type(node)}"
            )
        result: dict[Any, Any] = {}
        for entry in node:
            if not isinstance(entry, list) or len(entry) != 2:
                raise ConverterError(f"Found invalid map entry instead of array tuple: {entry!r}")
            key = self._to_connect(keys, entry[0])
            try:
                result[key] = self._to_connect(values, entry[1])
            except TypeError as error:
                raise ConverterError(f"Map key {key!r} cannot be a Python dict key") from error
        return result


def _child(schema: Schema | None, what: str) -> Schema:
    if schema is None:
        raise ConverterError(f"Schema has no schema for its {what}")
    return schema


def _infer_type(value: Any) -> str:
    """Kafka's ``ConnectSchema.schemaType`` for a schemaless value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, Struct):
        return "struct"
    raise ConverterError(f"Python type {type(value).__name__} has no corresponding schema type")


def _schemaless(node: Any) -> Any:
    if isinstance(node, Decimal):
        return float(node)
    if isinstance(node, list):
        return [_schemaless(item) for item in node]
    if isinstance(node, dict):
        return {k: _schemaless(v) for k, v in node.items()}
    return node


def _json_type(node: Any) -> str:
    for kinds, name in (
        (bool, "BOOLEAN"),
        (int | float | Decimal, "NUMBER"),
        (str, "STRING"),
        (list, "ARRAY"),
        (dict, "OBJECT"),
    ):
        if isinstance(node, kinds):
            return name
    return "NULL"
