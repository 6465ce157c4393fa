"""The JSON converter's schemas: Connect :class:`~sluice.connect.Schema` ↔ Kafka's JSON form.

Kafka's JSON form of a schema (the envelope's ``"schema"``), keys in the order they are written;
reading needs only ``type`` (and what its type requires)::

    key          present              value
    type         always               boolean, int8, int16, int32, int64, float32, float64,
                                      string, bytes, array, map or struct
    items        array                the element schema
    keys         map                  the key schema
    values       map                  the value schema
    fields       struct               the field schemas in order, each with "field": its name
    optional     always               true or false (read: anything but true is false)
    name         when set             text, e.g. "org.apache.kafka.connect.data.Decimal"
    version      when set             an integer
    doc          when set             text
    parameters   when any             an object of strings
    default      when set             the default value, in the payload's JSON form

A default is written and read by the value walk
(:class:`~sluice.connect.converters.json_values.JsonValues`) that :class:`JsonSchemas` extends;
:class:`~sluice.connect.converters.json_converter.JsonConverter` caches the results per schema.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice.connect.api.data import Field, Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.json_values import JsonValues, _child

__all__ = ["JsonSchemas"]


class JsonSchemas(JsonValues):
    """Connect schemas ↔ Kafka's JSON form, a default written and read as a value of its schema."""

    def _schema_to_json(self, schema: Schema) -> dict[str, Any]:
        node: dict[str, Any] = {"type": schema.type}
        if schema.type == "array":
            node["items"] = self._schema_to_json(_child(schema.value_schema, "array items"))
        elif schema.type == "map":
            node["keys"] = self._schema_to_json(_child(schema.key_schema, "map keys"))
            node["values"] = self._schema_to_json(_child(schema.value_schema, "map values"))
        elif schema.type == "struct":
            node["fields"] = [
                {**self._schema_to_json(f.schema), "field": f.name} for f in schema.fields
            ]
        node["optional"] = schema.optional
        if schema.name is not None:
            node["name"] = schema.name
        if schema.version is not None:
            node["version"] = schema.version
        if schema.doc is not None:
            node["doc"] = schema.doc
        if schema.parameters:
            node["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            node["default"] = self._to_json(schema, schema.default)
        return node

    def schema_from_json(self, node: Any) -> Schema:
        """A :class:`Schema` from Kafka's JSON form; :class:`ConverterError` when malformed."""
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise ConverterError("Schema must contain 'type' field")
        kind = node["type"]
        fields: list[Field] = []
        key_schema = value_schema = None
        if kind == "array":
            if "items" not in node:
                raise ConverterError("Array schema did not specify the element type")
            value_schema = self.schema_from_json(node["items"])
        elif kind == "map":
            if "keys" not in node:
                raise ConverterError("Map schema did not specify the key type")
            if "values" not in node:
                raise ConverterError("Map schema did not specify the value type")
            key_schema = self.schema_from_json(node["keys"])
            value_schema = self.schema_from_json(node["values"])
        elif kind == "struct":
            if not isinstance(node.get("fields"), list):
                raise ConverterError('Struct schema\'s "fields" argument is not an array.')
            for field in node["fields"]:
                if not isinstance(field, dict) or not isinstance(field.get("field"), str):
                    raise ConverterError("Struct schema's field name not specified properly")
                fields.append(Field(field["field"], self.schema_from_json(field)))
        version = node.get("version")
        parameters = node.get("parameters") or {}
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise ConverterError(f"Schema version must be an integer, not {version!r}")
        if not isinstance(parameters, dict) or not all(
            isinstance(v, str) for v in parameters.values()
        ):
            raise ConverterError("Schema parameters must be an object of strings")
        try:
            schema = Schema(
                kind,
                optional=node.get("optional") is True,
                name=_text(node, "name"),
                version=version,
                doc=_text(node, "doc"),
                parameters=tuple(parameters.items()),
                fields=tuple(fields),
                key_schema=key_schema,
                value_schema=value_schema,
            )
        except ValueError as error:
            raise ConverterError(f"Unknown schema type: {kind}") from error
        if node.get("default") is not None:
            default = self._to_connect(schema, node["default"])
            schema = dataclasses.replace(schema, default=default)
        return schema


def _text(node: dict[str, Any], key: str) -> str | None:
    value = node.get(key)
    if value is not None and not isinstance(value, str):
        raise ConverterError(f"Schema {key} must be a string, not {value!r}")
    return value
