"""The schema formats by Confluent's ``schemaType`` name: ``AVRO``, ``JSON``, ``PROTOBUF``.

Each format lives in its own module (``avro``, ``json_schema``, ``protobuf``) exposing ``FORMAT``;
a module is imported the first time its format is asked for, so a registry that stores only Avro
never loads protoc.
"""

from __future__ import annotations

import importlib

from sluice.schemas.formats.base import (
    Incompatibility,
    InvalidSchemaError,
    ParsedSchema,
    SchemaFormat,
)

__all__ = [
    "SCHEMA_TYPES",
    "Incompatibility",
    "InvalidSchemaError",
    "ParsedSchema",
    "SchemaFormat",
    "format_named",
]

_MODULES = {"AVRO": "avro", "JSON": "json_schema", "PROTOBUF": "protobuf"}

#: What ``GET /schemas/types`` answers.
SCHEMA_TYPES = tuple(_MODULES)


def format_named(schema_type: str) -> SchemaFormat:
    """The format of Confluent's *schema_type* (``AVRO`` when a client sends none).

    >>> format_named("AVRO").name
    'AVRO'
    """
    module = _MODULES.get(schema_type.upper())
    if module is None:
        raise InvalidSchemaError(
            f"unknown schema type {schema_type!r}; known: {', '.join(SCHEMA_TYPES)}"
        )
    found: SchemaFormat = importlib.import_module(f"sluice.schemas.formats.{module}").FORMAT
    return found
