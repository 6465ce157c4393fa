"""Connect → JSON Schema and JSON, Confluent's ``JsonSchemaData`` rules in that direction
(listed in :mod:`sluice.connect.converters.schema_registry.json_schema_data`): a Connect schema
becomes a JSON Schema document, a Connect value the JSON value (dicts, lists, numbers…) of it,
which :func:`dumps_exact` writes with ``Decimal`` numbers exact (``decimal.format=NUMERIC``).

>>> from sluice.connect.api.data import Schema
>>> writing = JsonSchemaFromConnect(decimal_numeric=False, generalized_sum_type_support=False)
>>> writing.schema(Schema("bytes"))
{'type': 'string', 'connect.type': 'bytes'}
>>> writing.data(Schema("bytes"), b"hi")
'aGk='
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import DECIMAL, LOGICAL_NAMES, logical_to_raw
from sluice.connect.converters.json_converter import dumps_exact
from sluice.connect.converters.schema_registry.json_schema_names import (
    CONNECT_INDEX_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    GENERALIZED_TYPE_ENUM,
    INTEGERS,
    JSON_TYPE_ENUM,
    NAMESPACE,
    NULL_MARKER,
    NUMBERS,
    is_union,
)

__all__ = ["JsonSchemaFromConnect", "dumps_exact"]


class JsonSchemaFromConnect:
    """Connect schemas and values → JSON Schema and JSON; the documents are cached by Connect
    schema object (cleared when the cache reaches ``cache_size``)."""

    def __init__(
        self,
        *,
        decimal_numeric: bool,
        generalized_sum_type_support: bool,
        cache_size: int = 1000,
    ) -> None:
        self.decimal_numeric = decimal_numeric
        self.cache_size = cache_size
        self.generalized_sum_type_support = generalized_sum_type_support
        self._to_json: dict[int, tuple[Schema, dict[str, Any]]] = {}

    # -- Connect schema → JSON Schema

    def schema(self, schema: Schema) -> dict[str, Any]:
        """The JSON Schema document of a Connect schema."""
        cached = self._to_json.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        node = self._json_schema(schema, None)
        if len(self._to_json) >= self.cache_size:
            self._to_json.clear()
        self._to_json[id(schema)] = (schema, node)
        return node

    def _json_schema(
        self, schema: Schema, index: int | None, *, ignore_optional: bool = False
    ) -> dict[str, Any]:
        kind = schema.type
        params = dict(schema.parameters)
        node: dict[str, Any]
        extra: dict[str, Any] = {}
        if kind == "struct" and is_union(schema):
            # Confluent writes a union back as oneOf: null first when optional, then each
            # alternative (not optional itself) with its connect.index; no title or parameters.
            alternatives = [{"type": "null"}] if schema.optional else []
            alternatives += [
                self._json_schema(_required(f.schema), i, ignore_optional=True)
                for i, f in enumerate(schema.fields)
            ]
            node = {"oneOf": alternatives}
            if index is not None:
                node[CONNECT_INDEX_PROP] = index
            return node
        if kind in INTEGERS:
            node, extra[CONNECT_TYPE_PROP] = {"type": "integer"}, kind
        elif kind in NUMBERS:
            node, extra[CONNECT_TYPE_PROP] = {"type": "number"}, kind
        elif kind == "boolean":
            node = {"type": "boolean"}
        elif kind == "string":
            if JSON_TYPE_ENUM in params or GENERALIZED_TYPE_ENUM in params:
                generalized = GENERALIZED_TYPE_ENUM in params and (
                    self.generalized_sum_type_support or JSON_TYPE_ENUM not in params
                )
                marker = GENERALIZED_TYPE_ENUM if generalized else JSON_TYPE_ENUM
                prefix = marker + "."
                symbols: list[str | None] = [
                    None if k[len(prefix) :] == NULL_MARKER else k[len(prefix) :]
                    for k in params
                    if k.startswith(prefix)
                ]
                node = {"enum": symbols} if None in symbols else {"type": "string", "enum": symbols}
            else:
                node = {"type": "string"}
        elif kind == "bytes":
            node = {"type": "number" if schema.name == DECIMAL else "string"}
            extra[CONNECT_TYPE_PROP] = "bytes"
        elif kind == "array":
            assert schema.value_schema is not None
            node = {"type": "array", "items": self._json_schema(schema.value_schema, None)}
        elif kind == "map":
            key, value = schema.key_schema, schema.value_schema
            assert key is not None and value is not None
            if key.type == "string" and not key.optional:
                node = {"type": "object", "additionalProperties": self._json_schema(value, None)}
            else:
                entry = {
                    "type": "object",
                    "properties": {
                        "key": self._json_schema(key, 0),
                        "value": self._json_schema(value, 1),
                    },
                }
                node = {"type": "array", "items": entry}
            extra[CONNECT_TYPE_PROP] = "map"
        else:  # struct
            node = {
                "type": "object",
                "properties": {
                    f.name: self._json_schema(f.schema, i) for i, f in enumerate(schema.fields)
                },
            }
        if schema.name is not None:
            node["title"] = schema.name
        if schema.version is not None:
            extra[CONNECT_VERSION_PROP] = schema.version
        if schema.doc is not None:
            node["description"] = schema.doc
        parameters = {k: v for k, v in params.items() if not k.startswith(NAMESPACE)}
        if parameters:
            extra[CONNECT_PARAMETERS_PROP] = parameters
        if schema.default is not None:
            node["default"] = self._value(schema, schema.default, use_default=False)
        node.update(extra)
        if schema.optional and not ignore_optional:
            node = {"oneOf": [{"type": "null"}, node]}
        if index is not None:
            node[CONNECT_INDEX_PROP] = index
        return node

    # -- Connect value → JSON

    def data(self, schema: Schema, value: Any) -> Any:
        """The JSON value (dicts, lists, numbers…) of a Connect value of ``schema``."""
        return self._value(schema, value, use_default=True)

    def _value(self, schema: Schema, value: Any, *, use_default: bool) -> Any:
        if value is None:
            if use_default and schema.default is not None:
                return self._value(schema, schema.default, use_default=False)
            if schema.optional or not use_default:
                return None
            raise ConverterError(
                "Conversion error: null value for field that is required and has no default value"
            )
        if schema.name in LOGICAL_NAMES and not isinstance(value, int | bytes):
            if schema.name == DECIMAL and self.decimal_numeric:
                if not isinstance(value, Decimal):
                    raise ConverterError(f"Invalid type for Decimal: {type(value).__name__}")
                return value
            try:
                value = logical_to_raw(schema, value)
            except ValueError as error:
                raise ConverterError(str(error)) from error
        kind = schema.type
        if kind == "bytes":
            if not isinstance(value, bytes | bytearray | memoryview):
                raise ConverterError(f"Invalid type for bytes type: {type(value).__name__}")
            return base64.b64encode(bytes(value)).decode("ascii")
        if kind == "struct":
            values: Mapping[str, Any]
            if isinstance(value, Struct):
                values = value.values
            elif isinstance(value, Mapping):
                values = value
            else:
                raise ConverterError(f"Expected a Struct, got {type(value).__name__}")
            if is_union(schema):  # the one alternative set
                for f in schema.fields:
                    if values.get(f.name) is not None:
                        return self._value(f.schema, values[f.name], use_default=use_default)
                return self._value(schema, None, use_default=use_default)
            out = {}
            for f in schema.fields:
                try:
                    out[f.name] = self._value(f.schema, values.get(f.name), use_default=use_default)
                except ConverterError as error:
                    raise ConverterError(f"{f.name}: {error}") from error
            return out
        if kind == "array":
            assert schema.value_schema is not None
            items = schema.value_schema
            return [self._value(items, v, use_default=use_default) for v in value]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if key.type == "string" and not key.optional:
                return {k: self._value(item, v, use_default=use_default) for k, v in value.items()}
            return [
                {
                    "key": self._value(key, k, use_default=use_default),
                    "value": self._value(item, v, use_default=use_default),
                }
                for k, v in value.items()
            ]
        return value


def _required(schema: Schema) -> Schema:
    return dataclasses.replace(schema, optional=False) if schema.optional else schema
