"""Protobuf enums ↔ Connect, as Confluent's ``ProtobufData`` maps them: an ``enum`` field is
an optional ``string`` (the symbol) named by the enum, with the parameters
``io.confluent.connect.protobuf.Enum`` = the enum's name and
``io.confluent.connect.protobuf.Enum.<SYMBOL>`` = its number (``org.apache.kafka.connect.data.Enum``
with ``generalized.sum.type.support``); written back as an enum defined in the message using it,
its values in number order (proto3 needs the 0 first). A number the enum does not define reads as
``UNKNOWN_ENUM_VALUE_<Enum>_<n>``, as Java's does.

>>> from sluice.connect.api.data import Schema
>>> color = Schema("string", name="shop.Color", parameters=(
...     (PROTOBUF_TYPE_ENUM, "Color"), (f"{PROTOBUF_TYPE_ENUM}.RED", "0"),
...     (f"{PROTOBUF_TYPE_ENUM}.BLUE", "1")))
>>> enum_symbol(color, 1), enum_symbol(color, 7), enum_number(color, PROTOBUF_TYPE_ENUM, "BLUE")
('BLUE', 'UNKNOWN_ENUM_VALUE_Color_7', 1)
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import EnumDescriptor

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.schema_registry.protobuf_names import (
    GENERALIZED_TYPE_ENUM,
    PROTOBUF_TYPE_ENUM,
    split_name,
)

__all__ = [
    "add_enum",
    "enum_marker",
    "enum_number",
    "enum_schema",
    "enum_symbol",
    "enum_values",
]


def enum_marker(schema: Schema, generalized: bool) -> str | None:
    """The enum parameter of a Connect string schema (Confluent's or the generalized one)."""
    if schema.type != "string":
        return None
    keys = {k for k, _ in schema.parameters}
    if GENERALIZED_TYPE_ENUM in keys and (generalized or PROTOBUF_TYPE_ENUM not in keys):
        return GENERALIZED_TYPE_ENUM
    return PROTOBUF_TYPE_ENUM if PROTOBUF_TYPE_ENUM in keys else None


def enum_values(schema: Schema, marker: str) -> list[tuple[str, int]]:
    """The symbols of a Connect enum schema and their numbers, in number order."""
    prefix = marker + "."
    try:
        return sorted(
            ((k[len(prefix) :], int(v)) for k, v in schema.parameters if k.startswith(prefix)),
            key=lambda item: item[1],
        )
    except ValueError as error:
        raise ConverterError(f"enum {schema.name}: a value that is not a number: {error}") from None


def add_enum(message: descriptor_pb2.DescriptorProto, schema: Schema, marker: str) -> str:
    """Define the enum of a Connect enum schema in ``message`` (once); its type name."""
    name = dict(schema.parameters)[marker] or split_name(schema.name or "")[1]
    if not name:
        raise ConverterError("an enum schema needs a name (the enum parameter or the schema's)")
    if any(e.name == name for e in message.enum_type):
        return name
    values = enum_values(schema, marker)
    if not values or values[0][1] != 0:
        raise ConverterError(f"enum {name} has no value numbered 0, which proto3 needs first")
    enum = message.enum_type.add(name=name)
    for symbol, number in values:
        enum.value.add(name=symbol, number=number)
    return name


def enum_symbol(schema: Schema, number: int) -> str:
    """The symbol of an enum number read for a Connect enum schema."""
    marker = enum_marker(schema, False)
    if marker is None:
        raise ConverterError(f"Invalid class for string type: int {number}")
    for symbol, value in enum_values(schema, marker):
        if value == number:
            return symbol
    return f"UNKNOWN_ENUM_VALUE_{dict(schema.parameters)[marker]}_{number}"


def enum_schema(enum: EnumDescriptor, generalized: bool) -> Schema:
    """The Connect schema of a protobuf enum: an optional string named by the enum, with the
    enum's name and its symbols' numbers as parameters."""
    marker = GENERALIZED_TYPE_ENUM if generalized else PROTOBUF_TYPE_ENUM
    symbols = [(f"{marker}.{v.name}", str(v.number)) for v in enum.values]
    return Schema(
        "string",
        optional=True,
        name=enum.full_name,
        parameters=((marker, enum.name), *symbols),
    )


def enum_number(schema: Schema, marker: str, value: Any) -> int:
    """The number of the symbol ``value`` of a Connect enum schema."""
    for symbol, number in enum_values(schema, marker):
        if symbol == value:
            return number
    symbols = ", ".join(s for s, _ in enum_values(schema, marker))
    raise ConverterError(f"{value!r} is not a symbol of enum {schema.name} ({symbols})")
