"""What the schema registry converter tests share besides their fixtures (``conftest.py``: one
``sluice schema-registry start`` per module, converters closed at each test's teardown):
converters made from their Confluent class names, and a few schemas."""

from __future__ import annotations

import pytest

from sluice.connect.api.data import Schema
from sluice.connect.converters import converter_from
from sluice.connect.converters.schema_registry.avro_converter import AvroConverter
from sluice.connect.converters.schema_registry.registry_converter import SchemaRegistryConverter

AVRO = "io.confluent.connect.avro.AvroConverter"
JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
FORMATS = pytest.mark.parametrize("kind", [AVRO, JSON_SCHEMA], ids=["avro", "json-schema"])


MADE: list[SchemaRegistryConverter] = []
"""The converters tests made, closed at each test's teardown (conftest)."""


def avro_converter(
    url: str, settings: dict[str, str] | None = None, *, is_key: bool = False
) -> AvroConverter:
    converter = make_converter(AVRO, url, settings, is_key=is_key)
    assert isinstance(converter, AvroConverter)
    return converter


def make_converter(
    name: str, url: str, settings: dict[str, str] | None = None, *, is_key: bool = False
) -> SchemaRegistryConverter:
    converter = converter_from(name, {"schema.registry.url": url, **(settings or {})}, is_key)
    assert isinstance(converter, SchemaRegistryConverter)
    MADE.append(converter)
    return converter


PRICE_10_2 = Schema(
    "bytes",
    name="org.apache.kafka.connect.data.Decimal",
    version=1,
    parameters=(("scale", "2"), ("connect.decimal.precision", "10")),
)
"""A ``numeric(10,2)`` column's Decimal schema, as ``postgres-cdc`` writes it."""
